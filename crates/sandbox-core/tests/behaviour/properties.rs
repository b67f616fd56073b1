//! Properties of path resolution (R-PATHS-1) and the probe.

use proptest::prelude::*;
use sandbox_core::*;
use std::path::Path;

fn component() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("tmp".to_string()),
        Just(".ssh".to_string()),
        "[a-z]{1,3}"
    ]
}

fn abs_path() -> impl Strategy<Value = String> {
    prop::collection::vec(component(), 1..5).prop_map(|parts| format!("/{}", parts.join("/")))
}

/// A host with random symlinks (absolute targets, never to an ancestor so
/// that resolution does not widen) and files.
fn host() -> impl Strategy<Value = FakeHost> {
    (
        prop::collection::vec((abs_path(), abs_path()), 0..4),
        prop::collection::vec(abs_path(), 0..6),
    )
        .prop_map(|(links, files)| {
            let mut h = FakeHost::new(Os::Linux);
            for (link, target) in links {
                h.symlink(link, target);
            }
            for f in files {
                h.file(f);
            }
            h
        })
}

fn entry() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => abs_path(),
        1 => abs_path().prop_map(|p| format!("~{p}")),
        1 => abs_path().prop_map(|p| format!("{p}/*.pem")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn literal_kept_outputs_absolute_and_idempotent(h in host(), entries in prop::collection::vec(entry(), 1..6)) {
        let home = Path::new("/home/u");
        let Ok(set) = PathSet::resolve(&entries, home, &h) else {
            // Only scope widening may fail for these well-formed entries.
            let err = PathSet::resolve(&entries, home, &h).unwrap_err();
            prop_assert!(matches!(err.kind(), ErrorKind::WidensScope { .. }), "{err}");
            return Ok(());
        };
        let spellings = set.spellings();
        for e in &entries {
            let lit = expand_tilde(e, home).unwrap();
            prop_assert!(spellings.contains(&lit), "literal {lit} kept in {spellings:?}");
        }
        for s in &spellings {
            prop_assert!(s.starts_with('/'), "{s} absolute");
        }
        let again = PathSet::resolve(&spellings, home, &h).unwrap();
        let mut a = again.spellings();
        let mut b = spellings.clone();
        a.sort();
        b.sort();
        prop_assert_eq!(a, b, "resolving twice changes nothing");
    }

    #[test]
    fn arbitrary_text_never_panics(entries in prop::collection::vec(".{0,40}", 0..5)) {
        let mut h = FakeHost::new(Os::MacOs);
        h.symlink("/tmp", "/private/tmp").symlink("/loop", "/loop");
        let _ = PathSet::resolve(&entries, Path::new("/Users/u"), &h);
    }

    #[test]
    fn probe_hint_names_exactly_the_missing_packages(
        bwrap: bool,
        socat: bool,
        empty_entry: bool,
        landlock: bool,
    ) {
        let mut h = FakeHost::new(Os::Linux);
        h.env("PATH", if empty_entry { ":/usr/bin" } else { "/usr/bin" });
        h.contents("/proc/sys/kernel/osrelease", "6.12.0-1-amd64".to_string());
        if bwrap { h.executable("/usr/bin/bwrap"); } else { h.executable("/cwd/bwrap"); }
        if socat { h.executable("/usr/bin/socat"); } else { h.executable("/cwd/socat"); }
        if landlock { h.landlock_works(); }
        let r = ProbeReport::probe(&h);
        // bubblewrap where it is, else Landlock where it works; socat never
        // decides.
        prop_assert_eq!(r.native.available, bwrap || landlock);
        let hint = r.native.hint.clone().unwrap_or_default();
        let install = hint
            .split("apt-get install")
            .nth(1)
            .and_then(|rest| rest.split(';').next())
            .unwrap_or("");
        let named: Vec<&str> = install.split_whitespace().collect();
        prop_assert_eq!(named.contains(&"bubblewrap"), !bwrap);
        prop_assert!(!named.contains(&"socat"));
    }
}

proptest! {
    /// Any output, UTF-8 or not, comes back byte for byte from its JSON
    /// form, and is text exactly when it is valid UTF-8.
    #[test]
    fn output_events_round_trip_any_bytes(data in prop::collection::vec(any::<u8>(), 0..256), err in any::<bool>()) {
        let ev = if err {
            SandboxEvent::Stderr { data: data.clone() }
        } else {
            SandboxEvent::Stdout { data: data.clone() }
        };
        let json = serde_json::to_value(&ev).unwrap();
        prop_assert_eq!(json.get("text").is_some(), std::str::from_utf8(&data).is_ok());
        prop_assert_eq!(json.get("base64").is_some(), std::str::from_utf8(&data).is_err());
        let back: SandboxEvent = serde_json::from_value(json).unwrap();
        prop_assert_eq!(back, ev);
    }

    /// Mostly-text output (the usual case, with a stray byte now and then)
    /// round-trips too.
    #[test]
    fn output_events_round_trip_mostly_text(s in "\\PC{0,40}", stray in prop::option::of(any::<u8>())) {
        let mut data = s.into_bytes();
        if let Some(b) = stray {
            data.insert(data.len() / 2, b);
        }
        let ev = SandboxEvent::Stdout { data };
        let back: SandboxEvent = serde_json::from_str(&serde_json::to_string(&ev).unwrap()).unwrap();
        prop_assert_eq!(back, ev);
    }
}

/// An update whose path the format carries: absolute, no NUL or newline.
fn guard_update() -> impl Strategy<Value = GuardUpdate> {
    let path = prop::collection::vec(
        any::<u8>().prop_filter("no NUL or newline", |b| *b != 0 && *b != b'\n'),
        0..40,
    )
    .prop_map(|mut p| {
        p.insert(0, b'/');
        p
    });
    prop_oneof![
        path.clone().prop_map(GuardUpdate::Protect),
        path.prop_map(GuardUpdate::Deny)
    ]
}

proptest! {
    /// Updates written as lines read back the same, however the stream is
    /// cut into pieces.
    #[test]
    fn guard_updates_round_trip_in_any_pieces(
        updates in prop::collection::vec(guard_update(), 0..8),
        cuts in prop::collection::vec(1usize..20, 0..10),
    ) {
        let stream: Vec<u8> = updates.iter().flat_map(|u| u.to_line().unwrap()).collect();
        let mut reader = UpdateReader::new();
        let mut got = Vec::new();
        let mut rest = stream.as_slice();
        for c in cuts {
            let (a, b) = rest.split_at(c.min(rest.len()));
            got.extend(reader.feed(a));
            rest = b;
        }
        got.extend(reader.feed(rest));
        prop_assert_eq!(got, updates.into_iter().map(Ok).collect::<Vec<_>>());
    }

    /// Any bytes: no panic, and no line is kept past the limit.
    #[test]
    fn guard_update_reader_takes_any_bytes(data in prop::collection::vec(any::<u8>(), 0..9000)) {
        let mut reader = UpdateReader::new();
        for u in reader.feed(&data).into_iter().flatten() {
            prop_assert!(u.to_line().is_some_and(|l| l.len() <= MAX_UPDATE_LINE + 1));
        }
    }
}

mod vm_wire_props {
    use proptest::prelude::*;
    use sandbox_core::vm_wire::*;

    fn string() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(1u8.., 0..12)
    }

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(any::<u8>(), 0..64)
    }

    fn to_guest() -> impl Strategy<Value = ToGuest> {
        let stdio = prop_oneof![
            Just(VmStdio::Pipes),
            (any::<u16>(), any::<u16>()).prop_map(|(rows, cols)| VmStdio::Terminal { rows, cols }),
        ];
        prop_oneof![
            (
                any::<u64>(),
                prop::collection::vec(string(), 1..4),
                prop::collection::vec(string(), 0..4),
                string(),
                stdio,
                (
                    any::<Option<u64>>(),
                    any::<Option<u32>>(),
                    any::<Option<u32>>()
                )
            )
                .prop_map(
                    |(id, argv, env, cwd, stdio, (memory_bytes, max_processes, cpu_millis))| {
                        ToGuest::Exec(VmExec {
                            id,
                            argv,
                            env,
                            cwd,
                            stdio,
                            limits: VmLimits {
                                memory_bytes,
                                max_processes,
                                cpu_millis,
                            },
                        })
                    }
                ),
            (any::<u64>(), bytes()).prop_map(|(id, data)| ToGuest::Stdin { id, data }),
            (any::<u64>(), any::<u16>(), any::<u16>())
                .prop_map(|(id, rows, cols)| ToGuest::Resize { id, rows, cols }),
            (any::<u64>(), any::<i32>()).prop_map(|(id, signal)| ToGuest::Signal { id, signal }),
            (any::<u64>(), bytes()).prop_map(|(conn, data)| ToGuest::TcpData { conn, data }),
            any::<u64>().prop_map(|conn| ToGuest::TcpClose { conn }),
            Just(ToGuest::PowerOff),
            any::<u16>().prop_map(|port| ToGuest::Listen { port }),
            any::<u64>().prop_map(|n| ToGuest::Sync { n }),
        ]
    }

    fn from_guest() -> impl Strategy<Value = FromGuest> {
        prop_oneof![
            (any::<u32>(), bytes())
                .prop_map(|(version, kernel)| FromGuest::Hello { version, kernel }),
            (any::<u64>(), any::<u32>()).prop_map(|(id, pid)| FromGuest::Started { id, pid }),
            (any::<u64>(), any::<i32>()).prop_map(|(id, errno)| FromGuest::Failed { id, errno }),
            (any::<u64>(), bytes()).prop_map(|(id, data)| FromGuest::Stdout { id, data }),
            (any::<u64>(), bytes()).prop_map(|(id, data)| FromGuest::Stderr { id, data }),
            (any::<u64>(), any::<i32>())
                .prop_map(|(id, wait_status)| FromGuest::Ended { id, wait_status }),
            (any::<u64>(), any::<u16>()).prop_map(|(conn, port)| FromGuest::TcpOpen { conn, port }),
            (any::<u64>(), bytes()).prop_map(|(conn, data)| FromGuest::TcpData { conn, data }),
            any::<u64>().prop_map(|conn| FromGuest::TcpClose { conn }),
            any::<u64>().prop_map(|n| FromGuest::Synced { n }),
            any::<u64>().prop_map(|id| FromGuest::OutOfMemory { id }),
        ]
    }

    proptest! {
        /// Every message decodes to itself, through a stream cut anywhere.
        #[test]
        fn vm_messages_round_trip_through_a_cut_stream(
            msgs in prop::collection::vec(from_guest(), 0..6),
            cmds in prop::collection::vec(to_guest(), 0..6),
            cut in 1usize..40,
        ) {
            let stream: Vec<u8> = msgs.iter().flat_map(FromGuest::encode).collect();
            let mut frames = FrameReader::new(MAX_FROM_GUEST_LEN);
            let mut got = Vec::new();
            for chunk in stream.chunks(cut) {
                frames.push(chunk);
                while let Some(body) = frames.next_body().unwrap() {
                    got.push(FromGuest::decode(&body).unwrap());
                }
            }
            prop_assert_eq!(got, msgs);
            for c in cmds {
                let e = c.encode();
                prop_assert_eq!(ToGuest::decode(&e[4..]).unwrap(), c);
            }
        }

        /// Any bytes from a guest: no panic, and what decodes encodes back
        /// to the same bytes.
        #[test]
        fn any_guest_bytes_decode_or_are_refused(data in prop::collection::vec(any::<u8>(), 0..200)) {
            if let Ok(m) = FromGuest::decode(&data) {
                prop_assert_eq!(&m.encode()[4..], &data[..]);
            }
            if let Ok(m) = ToGuest::decode(&data) {
                prop_assert_eq!(&m.encode()[4..], &data[..]);
            }
        }
    }
}
