//! Where a credential's secret comes from: a [`SecretSource`] reads it when
//! the host program asks, straight into the wiped [`Secret`] buffer. The
//! sources here: a variable of the host process's own environment
//! ([`AmbientEnvSecret`], named for the ambient authority it uses) and, on
//! macOS, a generic-password item of the Keychain ([`KeychainSecret`], the
//! kind of item where `gh` keeps its token). A host program may bring its
//! own (a vault client, a file descriptor from its supervisor).

use crate::error::{Error, ErrorKind};
use crate::secret::Secret;
use std::ffi::OsString;
use std::fmt;

/// A place a credential's secret is read from.
pub trait SecretSource: fmt::Debug + Send + Sync {
    /// Reads the secret now. A missing or unusable secret is an error that
    /// names the source, never the value.
    fn read_secret(&self) -> Result<Secret, Error>;
}

/// A variable of this process's environment (the host program's, never the
/// sandbox's), read when [`SecretSource::read_secret`] is called.
#[derive(Debug, Clone)]
pub struct AmbientEnvSecret {
    name: OsString,
}

impl AmbientEnvSecret {
    /// The variable `name`.
    pub fn new(name: impl Into<OsString>) -> AmbientEnvSecret {
        AmbientEnvSecret { name: name.into() }
    }
}

impl SecretSource for AmbientEnvSecret {
    fn read_secret(&self) -> Result<Secret, Error> {
        let unavailable = |why: &'static str| {
            Error::from(ErrorKind::SecretUnavailable {
                from: format!("environment variable {}", self.name.to_string_lossy()),
                reason: why.to_owned(),
            })
        };
        let value = std::env::var_os(&self.name).ok_or_else(|| unavailable("it is not set"))?;
        let bytes = value
            .into_string()
            .map_err(|_| unavailable("its value is not UTF-8"))?;
        Secret::from_string(bytes)
    }
}

/// A generic-password item of the macOS Keychain, by service and account
/// (for instance where a command-line tool keeps its token). Reading it
/// may make macOS ask the user to allow this program once.
#[cfg(target_os = "macos")]
#[derive(Debug, Clone)]
pub struct KeychainSecret {
    service: String,
    account: String,
}

#[cfg(target_os = "macos")]
impl KeychainSecret {
    /// The item of `service` and `account`.
    pub fn new(service: impl Into<String>, account: impl Into<String>) -> KeychainSecret {
        KeychainSecret {
            service: service.into(),
            account: account.into(),
        }
    }
}

#[cfg(target_os = "macos")]
impl SecretSource for KeychainSecret {
    fn read_secret(&self) -> Result<Secret, Error> {
        let value =
            security_framework::passwords::get_generic_password(&self.service, &self.account)
                .map_err(|e| {
                    Error::from(ErrorKind::SecretUnavailable {
                        from: format!(
                            "Keychain item service {:?} account {:?}",
                            self.service, self.account
                        ),
                        reason: e.to_string(),
                    })
                })?;
        Secret::new(value)
    }
}
