//! A writer of the cpio "newc" format, the one a Linux kernel unpacks as
//! its initramfs: per entry a 110-byte ASCII header (magic `070701`,
//! thirteen 8-digit hexadecimal fields), the NUL-terminated name and the
//! data, each padded to 4 bytes; `TRAILER!!!` ends the archive.

/// What an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Dir,
    File,
    /// A symbolic link; its data is the target.
    Symlink,
    /// A character device (major, minor).
    CharDevice(u32, u32),
}

/// An archive being written, in memory.
#[derive(Default)]
pub(crate) struct Cpio {
    out: Vec<u8>,
    ino: u32,
}

fn pad4(out: &mut Vec<u8>) {
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
}

impl Cpio {
    /// Adds `name` (relative, without a leading `/`) with permission bits
    /// `perm` and `data`.
    pub(crate) fn add(&mut self, name: &str, kind: Kind, perm: u32, data: &[u8]) {
        self.ino += 1;
        let (type_bits, (major, minor)) = match kind {
            Kind::Dir => (0o040_000, (0, 0)),
            Kind::File => (0o100_000, (0, 0)),
            Kind::Symlink => (0o120_000, (0, 0)),
            Kind::CharDevice(ma, mi) => (0o020_000, (ma, mi)),
        };
        let nlink = if kind == Kind::Dir { 2 } else { 1 };
        let size = u32::try_from(data.len()).unwrap_or(u32::MAX);
        let name_size = u32::try_from(name.len() + 1).unwrap_or(u32::MAX);
        let fields = [
            self.ino,
            type_bits | (perm & 0o7777),
            0, // uid
            0, // gid
            nlink,
            0, // mtime
            size,
            0, // dev major
            0, // dev minor
            major,
            minor,
            name_size,
            0, // check
        ];
        self.out.extend_from_slice(b"070701");
        for f in fields {
            self.out.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.out.extend_from_slice(name.as_bytes());
        self.out.push(0);
        pad4(&mut self.out);
        self.out.extend_from_slice(data);
        pad4(&mut self.out);
    }

    /// The archive, with its trailer.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        self.ino = 0;
        self.add("TRAILER!!!", Kind::File, 0, &[]);
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_cpio_reads_what_is_written() {
        let Some(cpio) = test_support::tool("cpio", "apt-get install cpio") else {
            return;
        };
        let mut a = Cpio::default();
        a.add("d", Kind::Dir, 0o755, &[]);
        a.add("d/f", Kind::File, 0o644, b"hello");
        a.add("d/l", Kind::Symlink, 0o777, b"f");
        a.add("odd", Kind::File, 0o600, b"abc");
        let bytes = a.finish();
        assert!(bytes.len().is_multiple_of(4));
        let dir = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new(cpio)
            .args(["-i", "-d", "--quiet"])
            .current_dir(dir.path())
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child.stdin.take().unwrap().write_all(&bytes).unwrap();
        assert!(child.wait().unwrap().success());
        assert_eq!(std::fs::read(dir.path().join("d/f")).unwrap(), b"hello");
        assert_eq!(std::fs::read(dir.path().join("odd")).unwrap(), b"abc");
        assert_eq!(
            std::fs::read_link(dir.path().join("d/l")).unwrap(),
            std::path::Path::new("f")
        );
    }
}
