//! UTS #46 (Unicode IDNA Compatibility Processing) for host names in
//! configuration entries, through the `idna` crate.
//!
//! A configuration entry that is not pure ASCII, or that has an ASCII label
//! starting with `xn--` (in any case), goes through UTS #46 _ToASCII_ as a
//! whole name, with these flags:
//!
//! - _Transitional_Processing_ = false (non-transitional, as browsers and
//!   the WHATWG URL Standard do): the deviation characters `ß`, `ς`, ZWJ
//!   and ZWNJ are kept, so `faß.de` is `xn--fa-hia.de`, not `fass.de`;
//! - _CheckHyphens_ = true: no `-` at the start or end of a label, nor in
//!   both the third and fourth positions (IDNA2008 forbids them in
//!   U-labels);
//! - _CheckBidi_ and _CheckJoiners_ = true;
//! - _UseSTD3ASCIIRules_ = false: the host grammar in `host.rs` checks every
//!   label of the result afterwards (letters, digits, `-`, `_`), so `_`
//!   stays accepted while a mapping that produces any other ASCII symbol
//!   (`⑴` is `(1)`) is refused there;
//! - _VerifyDnsLength_ = false: the host grammar checks the label and name
//!   lengths of the result.
//!
//! The mapping step applies the UTS #46 table: case folding, NFC
//! normalisation, compatibility mappings (full-width `ｅｘａｍｐｌｅ` is
//! `example`, `。`, `．` and `｡` separate labels), and refuses disallowed
//! code points. An `xn--` label must decode, hold at least one non-ASCII
//! character, be valid as a U-label, and re-encode to itself: the name is
//! converted to Unicode and back, and the result must be the same A-labels
//! (so a non-canonical Punycode spelling is refused, not normalised).
//!
//! Any failure is reported as [`crate::HostProblem::Idna`]. Names from the
//! wire never come here: non-ASCII is refused there, and `xn--` labels are
//! compared byte for byte after lower-casing.

use idna::uts46::{AsciiDenyList, DnsLength, Hyphens, Uts46};

/// The characters UTS #46 maps to the label separator `.` on their own.
const SEPARATORS: [char; 4] = ['.', '\u{3002}', '\u{FF0E}', '\u{FF61}'];

/// True when a configuration entry needs UTS #46 processing: it has
/// non-ASCII characters, or an ASCII label starting with `xn--`.
pub(crate) fn needs_processing(name: &str) -> bool {
    !name.is_ascii()
        || name.split('.').any(|label| {
            label
                .as_bytes()
                .get(..4)
                .is_some_and(|prefix| prefix.eq_ignore_ascii_case(b"xn--"))
        })
}

/// Removes one trailing label separator (`.` or one of the characters
/// UTS #46 maps to it), the root of a fully qualified name.
pub(crate) fn strip_root(name: &str) -> &str {
    name.strip_suffix(SEPARATORS).unwrap_or(name)
}

/// UTS #46 _ToASCII_ of a whole name (flags in the module docs), followed by
/// the round-trip check of its A-labels. `None` on any error.
pub(crate) fn to_ascii(name: &str) -> Option<String> {
    let uts46 = Uts46::new();
    let ascii = ascii_of(&uts46, name)?;
    let (unicode, result) =
        uts46.to_unicode(ascii.as_bytes(), AsciiDenyList::EMPTY, Hyphens::Check);
    result.ok()?;
    if ascii_of(&uts46, &unicode)? != ascii {
        return None;
    }
    Some(ascii)
}

fn ascii_of(uts46: &Uts46, name: &str) -> Option<String> {
    uts46
        .to_ascii(
            name.as_bytes(),
            AsciiDenyList::EMPTY,
            Hyphens::Check,
            DnsLength::Ignore,
        )
        .ok()
        .map(|ascii| ascii.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        assert_eq!(to_ascii("bücher").unwrap(), "xn--bcher-kva");
        assert_eq!(to_ascii("MÜNCHEN").unwrap(), "xn--mnchen-3ya");
        assert_eq!(to_ascii("例え。テスト").unwrap(), "xn--r8jz45g.xn--zckzah");
        assert_eq!(to_ascii("ｅｘａｍｐｌｅ．ｃｏｍ").unwrap(), "example.com");
        assert_eq!(to_ascii("bu\u{308}cher").unwrap(), "xn--bcher-kva");
        assert_eq!(to_ascii("faß.de").unwrap(), "xn--fa-hia.de");
        assert_eq!(to_ascii("XN--BCHER-KVA").unwrap(), "xn--bcher-kva");
        // Not valid Punycode, or only ASCII once decoded.
        assert!(to_ascii("xn--").is_none());
        assert!(to_ascii("xn--a-").is_none());
        assert!(to_ascii("xn--abc").is_none());
        assert!(to_ascii("xn--zz-").is_none());
        // Disallowed code points, a leading combining mark, a hyphen in
        // the third and fourth positions.
        assert!(to_ascii("a\u{FFFD}b").is_none());
        assert!(to_ascii("\u{308}a").is_none());
        assert!(to_ascii("ab--ü").is_none());
    }

    #[test]
    fn a_labels_must_round_trip() {
        // `ü` encodes as `xn--tda`; a delimiter before an empty basic part
        // is not a spelling the encoder produces.
        assert_eq!(to_ascii("xn--tda").unwrap(), "xn--tda");
        assert!(to_ascii("xn---tda").is_none());
        assert!(to_ascii("xn---bcher-kva").is_none());
        // Upper case is folded, not refused.
        assert_eq!(to_ascii("Xn--Bcher-Kva").unwrap(), "xn--bcher-kva");
    }

    #[test]
    fn which_names_are_processed() {
        assert!(needs_processing("bücher.example"));
        assert!(needs_processing("XN--bcher-kva.example"));
        assert!(needs_processing("a.xn--"));
        assert!(!needs_processing("example.com"));
        assert!(!needs_processing("axn--b.example"));
        assert_eq!(strip_root("a.b。"), "a.b");
        assert_eq!(strip_root("a.b.."), "a.b.");
        assert_eq!(strip_root("a.b"), "a.b");
    }
}
