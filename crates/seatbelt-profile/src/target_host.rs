//! The host a profile is for: macOS. Its fixed firmlinks (`/tmp`, `/var`,
//! `/etc` lead to `/private/...`) are facts about the target, not about the
//! host that renders the profile, so they apply whatever host renders
//! (Linux in CI or a server preparing profiles); the rendering host's own
//! symlinks apply after them (R-PATHS-1). The same spec gives the same
//! profile on any host that shows the same files.

use sandbox_core::{HostView, Os};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// macOS's fixed firmlinks: (path, where the kernel resolves it).
pub const FIRMLINKS: [(&str, &str); 3] = [
    ("/tmp", "/private/tmp"),
    ("/var", "/private/var"),
    ("/etc", "/private/etc"),
];

/// `path` with a leading firmlink replaced by its target.
fn through_firmlinks(path: &Path) -> PathBuf {
    for (from, to) in FIRMLINKS {
        if let Ok(rest) = path.strip_prefix(from) {
            return if rest.as_os_str().is_empty() {
                PathBuf::from(to)
            } else {
                Path::new(to).join(rest)
            };
        }
    }
    path.to_path_buf()
}

/// A host view that sees paths as macOS resolves them: firmlinks first,
/// then the wrapped host.
pub(crate) struct MacTarget<'a, H: ?Sized>(pub(crate) &'a H);

impl<H: HostView + ?Sized> HostView for MacTarget<'_, H> {
    fn os(&self) -> Os {
        self.0.os()
    }
    fn var_os(&self, name: &str) -> Option<OsString> {
        self.0.var_os(name)
    }
    fn read_small_file(&self, path: &Path) -> Option<String> {
        self.0.read_small_file(&through_firmlinks(path))
    }
    fn is_executable_file(&self, path: &Path) -> bool {
        self.0.is_executable_file(&through_firmlinks(path))
    }
    fn exists(&self, path: &Path) -> bool {
        self.0.exists(&through_firmlinks(path))
    }
    fn try_bubblewrap(&self, bwrap: &Path) -> Result<(), String> {
        self.0.try_bubblewrap(bwrap)
    }
    fn canonicalize(&self, path: &Path) -> Option<PathBuf> {
        let firm = through_firmlinks(path);
        // The kernel resolves a firmlink whether or not what lies below it
        // exists yet.
        self.0
            .canonicalize(&firm)
            .or_else(|| (firm != path).then_some(firm))
    }
    fn is_dir(&self, path: &Path) -> bool {
        self.0.is_dir(&through_firmlinks(path))
    }
    fn is_file(&self, path: &Path) -> bool {
        self.0.is_file(&through_firmlinks(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sandbox_core::FakeHost;

    #[test]
    fn firmlinks_apply_on_any_host_and_only_on_whole_components() {
        let linux = FakeHost::new(Os::Linux);
        let t = MacTarget(&linux);
        let canon = |p: &str| {
            t.canonicalize(Path::new(p))
                .map(|p| p.display().to_string())
        };
        assert_eq!(canon("/tmp/h/.ssh").as_deref(), Some("/private/tmp/h/.ssh"));
        assert_eq!(
            canon("/var/folders/zz").as_deref(),
            Some("/private/var/folders/zz")
        );
        assert_eq!(canon("/etc").as_deref(), Some("/private/etc"));
        assert_eq!(canon("/tmpfoo/x"), None, "not a firmlink: another name");
        assert_eq!(canon("/Users/a"), None, "nothing to resolve on this host");
    }
}
