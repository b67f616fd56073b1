//! Where a credential's secret comes from: the `SecretSource` trait with
//! the environment source and a source of the host program's own (the
//! macOS Keychain source is the same trait, compile-checked for macOS).

use cred_broker::{AmbientEnvSecret, Credential, Error, ErrorKind, Secret, SecretSource};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A host program's own source: counts its reads, fails on demand.
#[derive(Debug, Default)]
struct Vault {
    reads: AtomicUsize,
    locked: bool,
}

impl SecretSource for Vault {
    fn read_secret(&self) -> Result<Secret, Error> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        if self.locked {
            // Its own error, through the same path as a real one.
            return AmbientEnvSecret::new("CRED_BROKER_TEST_NEVER_SET_7d1e").read_secret();
        }
        Secret::new(b"vault-secret-91".to_vec())
    }
}

fn builder() -> cred_broker::CredentialBuilder {
    let mut b = Credential::builder("code-host");
    b.host("api.example.com");
    b
}

#[test]
fn a_credential_takes_its_secret_from_a_source_once_and_names_the_source_on_failure() {
    let vault = Vault::default();
    let mut b = builder();
    b.secret_from(&vault).unwrap();
    let cred = b.build().unwrap();
    assert_eq!(vault.reads.load(Ordering::SeqCst), 1);
    assert!(!format!("{cred:?}").contains("vault-secret-91"));

    let locked = Vault {
        locked: true,
        ..Vault::default()
    };
    let err = builder().secret_from(&locked).map(|_| ()).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::SecretUnavailable { .. }));
    let shown = err.to_string();
    assert!(
        shown.contains("environment variable CRED_BROKER_TEST_NEVER_SET_7d1e")
            && shown.contains("not set"),
        "{shown}"
    );
}

#[test]
fn the_environment_source_reads_this_process_s_variable() {
    // Any variable of this process whose value a header can carry.
    let (name, value) = std::env::vars()
        .find(|(_, v)| !v.is_empty() && v.bytes().all(|b| (0x21..0x7f).contains(&b)))
        .expect("the test process has at least one variable of visible ASCII");
    let secret = AmbientEnvSecret::new(&name).read_secret().unwrap();
    assert_eq!(secret.len(), value.len());
    assert_eq!(format!("{secret:?}"), "Secret(<redacted>)");
}
