//! The `--landlock` part of the command line: what the launcher enforces
//! on the host without namespaces, and how its options are read and checked.

use super::checks::{check_arg, preview};
use super::{InvocationProblem, NameGuardInvocation};
use crate::Error;
use std::ffi::OsString;

/// What the launcher enforces when it runs on the host with no namespaces
/// around it (the Landlock mechanism). Every path is absolute.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostConfinement {
    /// Trees the command may write (`--write PATH`): the writable roots and
    /// runner state directories. Nothing else is writable but the
    /// terminal and null devices.
    pub writable: Vec<OsString>,
    /// Paths the command may not read (`--read-deny PATH`): the secret set
    /// and the host's extra denies. Everything else is readable.
    pub read_deny: Vec<OsString>,
    /// Paths inside a read deny that are readable again
    /// (`--read-again PATH`).
    pub read_again: Vec<OsString>,
    /// Paths inside writable trees that stay unwritable, unremovable and
    /// unmovable, with everything below them (`--protect PATH`).
    pub protect: Vec<OsString>,
    /// The ports on 127.0.0.1 the command may connect to
    /// (`--connect-tcp PORT`): the session's two proxies. No other TCP
    /// address is reachable.
    pub tcp_ports: Vec<u16>,
}

impl HostConfinement {
    /// The options that take a value after `--landlock`.
    pub(super) const OPTIONS: [&'static str; 5] = [
        "--write",
        "--read-deny",
        "--read-again",
        "--protect",
        "--connect-tcp",
    ];

    /// Each path option with its paths, in command-line order.
    pub(super) fn path_lists(&self) -> [(&'static str, &Vec<OsString>); 4] {
        [
            ("--write", &self.writable),
            ("--read-deny", &self.read_deny),
            ("--read-again", &self.read_again),
            ("--protect", &self.protect),
        ]
    }

    pub(super) fn push(&mut self, option: &'static str, v: OsString) -> Result<(), Error> {
        let too_many = || -> Error {
            InvocationProblem::TooManyValues {
                option,
                limit: NameGuardInvocation::MAX_HOST_VALUES,
            }
            .into()
        };
        if option == "--connect-tcp" {
            if self.tcp_ports.len() >= NameGuardInvocation::MAX_HOST_VALUES {
                return Err(too_many());
            }
            let b = v.as_encoded_bytes();
            let port = (!b.is_empty() && b.len() <= 5 && b.iter().all(u8::is_ascii_digit))
                .then(|| v.to_str().and_then(|s| s.parse::<u16>().ok()))
                .flatten()
                .filter(|p| *p != 0)
                .ok_or_else(|| InvocationProblem::BadPort {
                    value: preview(&v, 32),
                })?;
            self.tcp_ports.push(port);
            return Ok(());
        }
        let list = match option {
            "--write" => &mut self.writable,
            "--read-deny" => &mut self.read_deny,
            "--read-again" => &mut self.read_again,
            _ => &mut self.protect,
        };
        if list.len() >= NameGuardInvocation::MAX_HOST_VALUES {
            return Err(too_many());
        }
        list.push(v);
        Ok(())
    }

    pub(super) fn check(&self) -> Result<(), Error> {
        for (option, paths) in self.path_lists() {
            if paths.len() > NameGuardInvocation::MAX_HOST_VALUES {
                return Err(InvocationProblem::TooManyValues {
                    option,
                    limit: NameGuardInvocation::MAX_HOST_VALUES,
                }
                .into());
            }
            for p in paths {
                check_arg(p)?;
                if !p.as_encoded_bytes().starts_with(b"/") {
                    return Err(InvocationProblem::RelativePath {
                        option,
                        path: preview(p, 64),
                    }
                    .into());
                }
            }
        }
        if self.tcp_ports.len() > NameGuardInvocation::MAX_HOST_VALUES {
            return Err(InvocationProblem::TooManyValues {
                option: "--connect-tcp",
                limit: NameGuardInvocation::MAX_HOST_VALUES,
            }
            .into());
        }
        if self.tcp_ports.contains(&0) {
            return Err(InvocationProblem::BadPort { value: "0".into() }.into());
        }
        Ok(())
    }
}
