//! The release in `runsc --version`'s output: read by the probe and by
//! the host's gVisor trial.

/// The `runsc --version` release of gVisor: the date in its first line
/// (`runsc version 0.0~20221219.0` and `runsc version release-20221219.0`
/// both give `20221219`), or `None`.
pub fn gvisor_release(version_output: &str) -> Option<String> {
    let first = version_output.lines().next()?;
    let rest = first.trim().strip_prefix("runsc version ")?;
    // The longest run of eight digits is the date.
    let bytes = rest.as_bytes();
    let mut i = 0;
    while i + 8 <= bytes.len() {
        let run = &bytes[i..i + 8];
        let bounded = (i == 0 || !bytes[i - 1].is_ascii_digit())
            && bytes.get(i + 8).is_none_or(|b| !b.is_ascii_digit());
        if bounded && run.iter().all(u8::is_ascii_digit) {
            return Some(rest[i..i + 8].to_owned());
        }
        i += 1;
    }
    None
}
