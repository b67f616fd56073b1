//! Any path rendered into `--mount` parses back to exactly the same fields.

use crate::csv::{key_values, read_record};
use docker_spec::BindMount;
use proptest::prelude::*;
use sandbox_core::Access;

/// Absolute paths over an alphabet rich in CSV and docker metacharacters.
fn path() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        proptest::collection::vec(
            prop_oneof![
                Just(','),
                Just('"'),
                Just(' '),
                Just('='),
                Just(':'),
                Just('\''),
                Just('\\'),
                Just('\t'),
                Just('.'),
                Just('é'),
                proptest::char::range('a', 'e'),
                any::<char>(),
            ],
            0..6,
        )
        .prop_map(|chars| chars.into_iter().collect::<String>()),
        1..5,
    )
    .prop_map(|segs| format!("/{}", segs.join("/")))
    .prop_filter("mount paths refuse NUL, CR, LF and ..", |p| {
        !p.contains(['\0', '\n', '\r']) && !p.split('/').any(|s| s == "..")
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn mount_value_round_trips(source in path(), target in path(), ro in any::<bool>()) {
        let access = if ro { Access::ReadOnly } else { Access::ReadWrite };
        let mount = match BindMount::new(source.clone(), target.clone(), access) {
            Ok(m) => m,
            // Only engine-socket sources and a target of `/` are refused here.
            Err(_) => return Ok(()),
        };
        let fields = read_record(&mount.mount_value()).unwrap();
        prop_assert_eq!(&fields, &mount.fields());
        let kv = key_values(&fields);
        prop_assert_eq!(&kv[0], &("type".to_owned(), Some("bind".to_owned())));
        prop_assert_eq!(&kv[1], &("source".to_owned(), Some(source)));
        prop_assert_eq!(&kv[2], &("target".to_owned(), Some(target)));
        prop_assert_eq!(kv.len(), if ro { 6 } else { 3 });
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_sandbox_spec_renders_hardened_argv(
        paths in proptest::collection::vec((path(), any::<bool>()), 0..4),
        mode in proptest::sample::select(sandbox_core::Mode::ALL.to_vec()),
        network_enabled in any::<bool>(),
    ) {
        let mut sandbox = sandbox_core::SandboxSpec::new("s", "w");
        sandbox.mode = mode;
        sandbox.network_enabled = network_enabled;
        for (p, ro) in &paths {
            sandbox.bind_mounts.push(sandbox_core::SandboxBindMount {
                host_path: p.clone(),
                guest_path: p.clone(),
                read_only: *ro,
            });
        }
        let image = docker_spec::ImageRef::new("alpine:3").unwrap();
        let Ok(builder) =
            docker_spec::ContainerSpec::from_sandbox(&sandbox, image, docker_spec::Network::None)
        else {
            return Ok(());
        };
        let Ok(spec) = builder.build() else {
            return Ok(());
        };
        let argv: Vec<String> =
            spec.run_argv().unwrap().into_iter().map(|a| a.into_string().unwrap()).collect();
        prop_assert_eq!(
            &argv[..6],
            ["run", "--rm", "--init", "--read-only", "--cap-drop=ALL",
             "--security-opt=no-new-privileges"]
        );
        prop_assert!(argv.contains(&"--network=none".to_owned()));
        let mounts: Vec<_> = argv.iter().filter_map(|a| a.strip_prefix("--mount=")).collect();
        prop_assert_eq!(mounts.len(), spec.mounts().len());
        for (value, mount) in mounts.iter().zip(spec.mounts()) {
            let fields = read_record(value).unwrap();
            prop_assert_eq!(&fields, &mount.fields());
            let read_only = fields.iter().any(|f| f == "readonly");
            if mode != sandbox_core::Mode::Chat {
                prop_assert!(read_only, "{} writable in {}", value, mode);
            }
        }
    }
}
