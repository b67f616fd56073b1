//! Properties: non-UTF-8 never panics, secret-looking names never pass by
//! default, output names are unique.

use env_guard::{EnvGuard, Inherit, ProxyEnv, SECRET_SEGMENTS};
use proptest::prelude::*;
use std::collections::HashSet;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

fn os(bytes: Vec<u8>) -> OsString {
    OsString::from_vec(bytes)
}

fn inherit() -> impl Strategy<Value = Inherit> {
    prop_oneof![Just(Inherit::Core), Just(Inherit::All), Just(Inherit::None)]
}

/// A name: either arbitrary bytes or something close to a real name.
fn name() -> impl Strategy<Value = OsString> {
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..12).prop_map(os),
        "[A-Za-z_][A-Za-z0-9_]{0,12}".prop_map(OsString::from),
        prop_oneof![
            Just("PATH"),
            Just("LANG"),
            Just("TZ"),
            Just("LD_PRELOAD"),
            Just("HTTPS_PROXY"),
            Just("SSL_CERT_FILE"),
            Just("GIT_SSH_COMMAND"),
        ]
        .prop_map(OsString::from),
    ]
}

/// A name with a secret segment in upper, lower or title case, between
/// other `_`-separated segments.
fn secret_name() -> impl Strategy<Value = String> {
    (
        proptest::collection::vec("[A-Za-z0-9]{0,6}", 0..3),
        proptest::sample::select(SECRET_SEGMENTS),
        0..3usize,
        proptest::collection::vec("[A-Za-z0-9]{0,6}", 0..3),
    )
        .prop_map(|(before, word, case, after)| {
            let word = match case {
                0 => word.to_owned(),
                1 => word.to_ascii_lowercase(),
                _ => {
                    let lower = word.to_ascii_lowercase();
                    format!("{}{}", &word[..1], &lower[1..])
                }
            };
            let mut parts = before;
            parts.push(word);
            parts.extend(after);
            parts.join("_")
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic_and_every_input_is_accounted_for(
        vars in proptest::collection::vec(
            (name(), proptest::collection::vec(any::<u8>(), 0..24).prop_map(os)), 0..24),
        inherit in inherit(),
        with_proxy in any::<bool>(),
    ) {
        let mut b = EnvGuard::builder();
        b.inherit(inherit);
        if with_proxy {
            b.proxy(ProxyEnv {
                http: "127.0.0.1:3128".parse().unwrap(),
                socks: "127.0.0.1:1080".parse().unwrap(),
            })
            .ca_bundle("/ca.pem");
        }
        let out = b.build().unwrap().apply(vars.clone());
        let names: HashSet<_> = out.vars.iter().map(|(n, _)| n.clone()).collect();
        prop_assert_eq!(names.len(), out.vars.len(), "output names are unique");
        for (n, v) in &out.vars {
            prop_assert!(!n.is_empty());
            prop_assert!(!v.as_encoded_bytes().contains(&0));
        }
        for (n, v) in &vars {
            let kept = out.vars.iter().any(|(kn, kv)| kn == n && kv == v);
            let reported = out.dropped.iter().any(|d| &d.name == n);
            prop_assert!(kept || reported, "{:?} neither kept nor reported", n);
        }
    }

    #[test]
    fn secret_looking_names_never_pass_by_default(
        secret in secret_name(),
        inherit in inherit(),
        value in "[ -~]{0,16}",
    ) {
        let guard = EnvGuard::builder().inherit(inherit).build().unwrap();
        let out = guard.apply([(secret.clone(), value)]);
        prop_assert!(out.vars.is_empty(), "{} passed", secret);
        prop_assert_eq!(out.dropped.len(), 1);
    }

    #[test]
    fn parse_records_never_panics(input in proptest::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(records) = env_guard::parse_records(&input) {
            let again = env_guard::parse_records(&env_guard::write_records(&records)).unwrap();
            prop_assert_eq!(again, records);
        }
    }
}
