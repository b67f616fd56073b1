//! Validated image references and network names.

use crate::{Error, ErrorKind};
use std::fmt;

/// Longest image reference accepted, in bytes.
pub const MAX_IMAGE_LEN: usize = 512;

/// An image reference: `[registry/]name[:tag][@sha256:digest]`, checked to
/// be plain ASCII that the CLI cannot read as a flag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageRef(String);

impl ImageRef {
    /// Validates `reference`: 1 to [`MAX_IMAGE_LEN`] bytes of
    /// `[A-Za-z0-9._/:@-]`, starting with a letter or digit.
    pub fn new(reference: impl Into<String>) -> Result<ImageRef, Error> {
        let image = reference.into();
        let bad = |reason| {
            Err(ErrorKind::InvalidImage {
                image: image.clone(),
                reason,
            }
            .into())
        };
        if image.is_empty() || image.len() > MAX_IMAGE_LEN {
            return bad("must be 1 to 512 bytes");
        }
        if !image.starts_with(|c: char| c.is_ascii_alphanumeric()) {
            return bad("must start with a letter or digit");
        }
        if !image
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._/:@-".contains(&b))
        {
            return bad("may only hold letters, digits and . _ / : @ -");
        }
        Ok(ImageRef(image))
    }

    /// The reference.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The container's network.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Network {
    /// `--network=none`: loopback only.
    None,
    /// A user-defined internal network (created with `--internal`) whose
    /// only way out is the session proxy; the env must carry the proxy
    /// variables.
    Internal(NetworkName),
}

/// The name of a user-defined network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetworkName(String);

impl NetworkName {
    /// Validates `name`: `[A-Za-z0-9][A-Za-z0-9_.-]*`, at most 128 bytes,
    /// and not a built-in network (`host`, `bridge`, `none`, `default`).
    pub fn new(name: impl Into<String>) -> Result<NetworkName, Error> {
        let name = name.into();
        let bad = |reason| {
            Err(ErrorKind::InvalidNetwork {
                name: name.clone(),
                reason,
            }
            .into())
        };
        if name.is_empty() || name.len() > 128 {
            return bad("must be 1 to 128 bytes");
        }
        if !name.starts_with(|c: char| c.is_ascii_alphanumeric())
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
        {
            return bad("must match [A-Za-z0-9][A-Za-z0-9_.-]*");
        }
        if ["host", "bridge", "none", "default"].contains(&name.as_str()) {
            return bad("it is a built-in network");
        }
        Ok(NetworkName(name))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}
