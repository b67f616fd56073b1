//! Checks for the names and values written into objects: DNS labels,
//! image references, argv elements, environment variables.

use crate::{Error, ErrorKind};

/// Longest session id accepted, in bytes: `sbx-ID-egress` stays within a
/// 63-byte DNS label.
pub const MAX_SESSION_NAME: usize = 40;

/// Longest image reference accepted, in bytes.
pub const MAX_IMAGE_LEN: usize = 512;

/// Longest single argument or environment value, in bytes.
pub const MAX_VALUE_LEN: usize = 128 * 1024;

fn invalid(what: &'static str, value: &str, reason: &'static str) -> Error {
    ErrorKind::InvalidValue {
        what,
        value: value.chars().take(256).collect(),
        reason,
    }
    .into()
}

/// An RFC 1123 label: 1 to `max` bytes of `[a-z0-9-]`, starting and ending
/// with a letter or digit.
pub(crate) fn dns_label(what: &'static str, value: &str, max: usize) -> Result<(), Error> {
    let ok = !value.is_empty()
        && value.len() <= max
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(invalid(
            what,
            value,
            "use lower-case letters, digits and '-', starting and ending with a letter or digit \
             (at most 63 bytes; a session id at most 40)",
        ))
    }
}

/// An RFC 1123 subdomain: dot-separated labels, at most 253 bytes.
pub(crate) fn dns_subdomain(what: &'static str, value: &str) -> Result<(), Error> {
    if value.is_empty() || value.len() > 253 {
        return Err(invalid(what, value, "must be 1 to 253 bytes"));
    }
    for label in value.split('.') {
        dns_label(what, label, 63)?;
    }
    Ok(())
}

/// An image reference: 1 to [`MAX_IMAGE_LEN`] bytes of `[A-Za-z0-9._/:@-]`,
/// starting with a letter or digit.
pub(crate) fn image(what: &'static str, value: &str) -> Result<(), Error> {
    let ok = !value.is_empty()
        && value.len() <= MAX_IMAGE_LEN
        && value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._/:@-".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(invalid(
            what,
            value,
            "use 1 to 512 bytes of letters, digits and . _ / : @ -, starting with a letter or digit",
        ))
    }
}

/// A value passed as one argument or environment value: at most
/// [`MAX_VALUE_LEN`] bytes, no NUL.
pub(crate) fn plain_value(what: &'static str, value: &str) -> Result<(), Error> {
    if value.len() > MAX_VALUE_LEN {
        return Err(invalid(what, value, "longer than 131072 bytes"));
    }
    if value.contains('\0') {
        return Err(invalid(what, value, "contains a NUL byte"));
    }
    Ok(())
}

/// An environment variable name: `[A-Za-z_][A-Za-z0-9_]*`, at most 1024
/// bytes.
pub(crate) fn env_name(name: &str) -> Result<(), Error> {
    let ok = name.len() <= 1024
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(invalid(
            "environment variable name",
            name,
            "use [A-Za-z_][A-Za-z0-9_]*",
        ))
    }
}

/// The kubelet expands `$(NAME)` in commands, arguments and environment
/// values; `$$` stands for one `$`. Doubling every `$` keeps a value as
/// written.
pub(crate) fn literal(value: &str) -> String {
    value.replace('$', "$$")
}

/// A host pattern for the egress proxy: 1 to 261 bytes, no whitespace or
/// control characters, not starting with `-` (the proxy checks the rest).
pub(crate) fn host_entry(what: &'static str, value: &str) -> Result<(), Error> {
    let ok = !value.is_empty()
        && value.len() <= 261
        && !value.starts_with('-')
        && !value.chars().any(|c| c.is_whitespace() || c.is_control());
    if ok {
        Ok(())
    } else {
        Err(invalid(
            what,
            value,
            "give a host or pattern such as api.example.com or *.example.com",
        ))
    }
}

/// A CIDR for the egress proxy: an address, `/`, a prefix length.
pub(crate) fn cidr(value: &str) -> Result<(), Error> {
    let ok = value.split_once('/').is_some_and(|(addr, len)| {
        let max = match addr.parse::<std::net::IpAddr>() {
            Ok(std::net::IpAddr::V4(_)) => 32,
            Ok(std::net::IpAddr::V6(_)) => 128,
            Err(_) => return false,
        };
        !len.is_empty()
            && len.len() <= 3
            && len.bytes().all(|b| b.is_ascii_digit())
            && len.parse::<u8>().is_ok_and(|l| l <= max)
    });
    if ok {
        Ok(())
    } else {
        Err(invalid(
            "address block",
            value,
            "give an address range such as 10.0.0.0/8 or fd00::/8",
        ))
    }
}

/// The name of the session's service-link variable for the egress
/// Service: upper case, `-` as `_`, then `_SERVICE_HOST`.
pub(crate) fn service_host_var(service: &str) -> String {
    let mut s: String = service
        .chars()
        .map(|c| {
            if c == '-' {
                '_'
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect();
    s.push_str("_SERVICE_HOST");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_literals() {
        assert!(dns_label("x", "s-1", 63).is_ok());
        for bad in ["", "-a", "a-", "A", "a_b", "a.b", &"a".repeat(64)] {
            assert!(dns_label("x", bad, 63).is_err(), "{bad}");
        }
        assert!(dns_subdomain("x", "a.b-c").is_ok());
        assert!(dns_subdomain("x", "a..b").is_err());
        assert_eq!(literal("$(HOME) $$"), "$$(HOME) $$$$");
        assert_eq!(
            service_host_var("sbx-s1-egress"),
            "SBX_S1_EGRESS_SERVICE_HOST"
        );
        assert!(cidr("10.0.0.0/8").is_ok() && cidr("fd00::/8").is_ok());
        for bad in ["10.0.0.0", "10.0.0.0/33", "x/8", "10.0.0.0/-1", "::/129"] {
            assert!(cidr(bad).is_err(), "{bad}");
        }
    }
}
