//! The bubblewrap options as they are assembled.

use std::ffi::{OsStr, OsString};

/// The options so far, in order.
#[derive(Default)]
pub(crate) struct Args(pub(crate) Vec<OsString>);

impl Args {
    /// One flag.
    pub(crate) fn flag(&mut self, f: &str) -> &mut Args {
        self.0.push(f.into());
        self
    }

    /// A flag and its value.
    pub(crate) fn pair(&mut self, f: &str, v: impl AsRef<OsStr>) -> &mut Args {
        self.0.push(f.into());
        self.0.push(v.as_ref().to_owned());
        self
    }

    /// A flag and its two values (source and destination).
    pub(crate) fn triple(
        &mut self,
        f: &str,
        a: impl AsRef<OsStr>,
        b: impl AsRef<OsStr>,
    ) -> &mut Args {
        self.0.push(f.into());
        self.0.push(a.as_ref().to_owned());
        self.0.push(b.as_ref().to_owned());
        self
    }
}
