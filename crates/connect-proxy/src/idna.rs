//! Unicode labels to IDNA A-labels: lower-casing plus Punycode (RFC 3492).
//!
//! This covers what configuration entries need: a Unicode name such as
//! `bücher.example` becomes `xn--bcher-kva.example`. It does not apply the
//! full UTS #46 mapping table (no NFC normalisation, no compatibility
//! mappings beyond the ideographic full stops); give such names in their
//! A-label form.

const BASE: u32 = 36;
const T_MIN: u32 = 1;
const T_MAX: u32 = 26;
const SKEW: u32 = 38;
const DAMP: u32 = 700;
const INITIAL_BIAS: u32 = 72;
const INITIAL_N: u32 = 128;

/// Replaces the dots UTS #46 maps to `.` (ideographic and full-width).
pub(crate) fn map_dots(input: &str) -> String {
    input
        .chars()
        .map(|c| match c {
            '\u{3002}' | '\u{FF0E}' | '\u{FF61}' => '.',
            other => other,
        })
        .collect()
}

/// Converts one label with non-ASCII characters to its `xn--` form.
/// Returns `None` when the label holds ASCII outside the host grammar or
/// characters that cannot be part of a name.
pub(crate) fn to_a_label(label: &str) -> Option<String> {
    let mut chars = Vec::with_capacity(label.len());
    for c in label.chars() {
        for lower in c.to_lowercase() {
            if lower.is_ascii() {
                if !(lower.is_ascii_alphanumeric() || lower == '-' || lower == '_') {
                    return None;
                }
            } else if lower.is_control() || lower.is_whitespace() {
                return None;
            }
            chars.push(lower);
        }
    }
    if chars.iter().all(char::is_ascii) {
        return Some(chars.into_iter().collect());
    }
    let encoded = punycode_encode(&chars)?;
    Some(format!("xn--{encoded}"))
}

fn adapt(mut delta: u32, points: u32, first: bool) -> u32 {
    delta = if first { delta / DAMP } else { delta / 2 };
    delta += delta / points;
    let mut k = 0;
    while delta > ((BASE - T_MIN) * T_MAX) / 2 {
        delta /= BASE - T_MIN;
        k += BASE;
    }
    k + (((BASE - T_MIN + 1) * delta) / (delta + SKEW))
}

fn digit(d: u32) -> char {
    // d < 36 always holds at the call sites.
    let byte = if d < 26 {
        b'a' + d as u8
    } else {
        b'0' + (d - 26) as u8
    };
    byte as char
}

/// RFC 3492 section 6.3, with overflow checks.
fn punycode_encode(input: &[char]) -> Option<String> {
    let mut out: String = input.iter().filter(|c| c.is_ascii()).collect();
    let basic = u32::try_from(out.len()).ok()?;
    let total = u32::try_from(input.len()).ok()?;
    if basic > 0 {
        out.push('-');
    }
    let mut n = INITIAL_N;
    let mut delta: u32 = 0;
    let mut bias = INITIAL_BIAS;
    let mut handled = basic;
    while handled < total {
        let m = input.iter().map(|&c| c as u32).filter(|&c| c >= n).min()?;
        delta = delta.checked_add((m - n).checked_mul(handled + 1)?)?;
        n = m;
        for &c in input {
            let c = c as u32;
            if c < n {
                delta = delta.checked_add(1)?;
            }
            if c == n {
                let mut q = delta;
                let mut k = BASE;
                loop {
                    let t = if k <= bias {
                        T_MIN
                    } else if k >= bias + T_MAX {
                        T_MAX
                    } else {
                        k - bias
                    };
                    if q < t {
                        break;
                    }
                    out.push(digit(t + (q - t) % (BASE - t)));
                    q = (q - t) / (BASE - t);
                    k += BASE;
                }
                out.push(digit(q));
                bias = adapt(delta, handled + 1, handled == basic);
                delta = 0;
                handled += 1;
            }
        }
        delta = delta.checked_add(1)?;
        n = n.checked_add(1)?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vectors() {
        assert_eq!(to_a_label("bücher").unwrap(), "xn--bcher-kva");
        assert_eq!(to_a_label("MÜNCHEN").unwrap(), "xn--mnchen-3ya");
        assert_eq!(to_a_label("例え").unwrap(), "xn--r8jz45g");
        assert_eq!(to_a_label("plain").unwrap(), "plain");
        assert!(to_a_label("a b").is_none());
        assert_eq!(map_dots("a。b"), "a.b");
    }
}
