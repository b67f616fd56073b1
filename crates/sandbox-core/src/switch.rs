//! The `--sandbox` / `CC_SERVER_SANDBOX` switch (R-PROBE-2).

use crate::{Error, ErrorKind};
use std::ffi::OsStr;
use std::fmt;
use std::str::FromStr;

/// The name of the environment variable that carries the switch.
pub const SANDBOX_SWITCH_ENV: &str = "CC_SERVER_SANDBOX";

/// Whether the host program wraps runs when the host offers a backend.
///
/// It is an opt-out: [`SandboxSwitch::On`] (the default) means "wrap when a
/// backend exists", never "require one"; [`SandboxSwitch::Off`] runs
/// everything unsandboxed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SandboxSwitch {
    /// Wrap runs when the host offers a backend.
    #[default]
    On,
    /// Explicit opt-out: nothing is wrapped.
    Off,
}

impl SandboxSwitch {
    /// Parses `on` or `off`, ASCII case-insensitively, with surrounding
    /// whitespace ignored. Anything else is [`ErrorKind::InvalidSwitch`].
    ///
    /// ```
    /// use sandbox_core::SandboxSwitch;
    /// assert_eq!(SandboxSwitch::parse("OFF").unwrap(), SandboxSwitch::Off);
    /// assert!(SandboxSwitch::parse("yes").is_err());
    /// ```
    pub fn parse(value: &str) -> Result<SandboxSwitch, Error> {
        let trimmed = value.trim();
        if trimmed.eq_ignore_ascii_case("on") {
            Ok(SandboxSwitch::On)
        } else if trimmed.eq_ignore_ascii_case("off") {
            Ok(SandboxSwitch::Off)
        } else {
            Err(ErrorKind::InvalidSwitch {
                value: value.chars().take(64).collect(),
            }
            .into())
        }
    }

    /// Decides the switch from a command-line value and the environment
    /// variable's value, both passed in: the flag wins over the variable,
    /// and neither given means [`SandboxSwitch::On`]. A value that is not
    /// UTF-8 is invalid.
    pub fn from_sources(
        flag: Option<&str>,
        env_value: Option<&OsStr>,
    ) -> Result<SandboxSwitch, Error> {
        if let Some(flag) = flag {
            return SandboxSwitch::parse(flag);
        }
        match env_value {
            None => Ok(SandboxSwitch::On),
            Some(v) => match v.to_str() {
                Some(s) => SandboxSwitch::parse(s),
                None => Err(ErrorKind::InvalidSwitch {
                    value: v.to_string_lossy().into_owned(),
                }
                .into()),
            },
        }
    }

    /// `on` or `off`.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxSwitch::On => "on",
            SandboxSwitch::Off => "off",
        }
    }
}

impl FromStr for SandboxSwitch {
    type Err = Error;
    fn from_str(s: &str) -> Result<SandboxSwitch, Error> {
        SandboxSwitch::parse(s)
    }
}

impl fmt::Display for SandboxSwitch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
