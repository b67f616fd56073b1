//! A credential: its secret value, the hosts it may go to, and the header
//! it is sent in.

use crate::error::{Error, ErrorKind, truncate};
use crate::rules::host_pattern;
use crate::secret::Secret;
use net_vocab::{Host, HostPattern, is_token};
use std::fmt;

/// How the secret is written into the one header the upstream gets.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HeaderTemplate {
    /// `Authorization: Bearer <secret>`.
    Bearer,
    /// `Authorization: token <secret>`.
    Token,
    /// `Authorization: Basic base64(<username>:<secret>)`; git over HTTPS
    /// uses the username `x-access-token`.
    Basic {
        /// The username before the colon.
        username: String,
    },
    /// `<name>: <secret>` in a header of its own (such as an API-key header).
    Header {
        /// The header name (a token; not `Host` or a framing header).
        name: String,
    },
}

impl HeaderTemplate {
    /// `Basic` with the username git uses for token access.
    pub fn git_basic() -> HeaderTemplate {
        HeaderTemplate::Basic {
            username: "x-access-token".to_owned(),
        }
    }

    /// The header name this template writes.
    pub fn header_name(&self) -> &str {
        match self {
            HeaderTemplate::Header { name } => name,
            _ => "Authorization",
        }
    }

    fn check(&self) -> Result<(), Error> {
        let bad = |name, value: &str, reason| {
            Err(ErrorKind::InvalidConfig {
                name,
                value: truncate(value),
                reason,
            }
            .into())
        };
        match self {
            HeaderTemplate::Basic { username } => {
                if username.is_empty()
                    || username.contains(':')
                    || !username.bytes().all(|b| (0x21..0x7f).contains(&b))
                {
                    return bad("basic username", username, "give visible ASCII without ':'");
                }
            }
            HeaderTemplate::Header { name } => {
                const RESERVED: &[&str] = &[
                    "host",
                    "content-length",
                    "transfer-encoding",
                    "connection",
                    "te",
                    "trailer",
                    "upgrade",
                    "keep-alive",
                    "proxy-connection",
                ];
                if !is_token(name.as_bytes())
                    || RESERVED.iter().any(|r| name.eq_ignore_ascii_case(r))
                {
                    return bad(
                        "credential header",
                        name,
                        "give a header name (a token) that is not a framing or routing header",
                    );
                }
            }
            HeaderTemplate::Bearer | HeaderTemplate::Token => {}
        }
        Ok(())
    }

    /// The header value's length for a secret of `len` bytes.
    pub(crate) fn value_len(&self, len: usize) -> usize {
        match self {
            HeaderTemplate::Bearer => 7 + len,
            HeaderTemplate::Token => 6 + len,
            HeaderTemplate::Basic { username } => 6 + (username.len() + 1 + len).div_ceil(3) * 4,
            HeaderTemplate::Header { .. } => len,
        }
    }

    /// Writes the header value for `secret` into `out` (sized by
    /// `value_len`); false if it does not fit.
    pub(crate) fn write_value(&self, secret: &[u8], out: &mut crate::secret::WipeBuf) -> bool {
        match self {
            HeaderTemplate::Bearer => out.push(b"Bearer ") && out.push(secret),
            HeaderTemplate::Token => out.push(b"token ") && out.push(secret),
            HeaderTemplate::Header { .. } => out.push(secret),
            HeaderTemplate::Basic { username } => {
                let mut plain =
                    crate::secret::WipeBuf::with_capacity(username.len() + 1 + secret.len());
                let ok = plain.push(username.as_bytes()) && plain.push(b":") && plain.push(secret);
                ok && out.push(b"Basic ") && base64_into(plain.as_slice(), out)
            }
        }
    }
}

/// Standard base64 with padding, written straight into a wiped buffer.
fn base64_into(input: &[u8], out: &mut crate::secret::WipeBuf) -> bool {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let mut quad = [b'='; 4];
        for (i, q) in quad.iter_mut().enumerate().take(chunk.len() + 1) {
            *q = ALPHABET[((n >> (18 - 6 * i)) & 63) as usize];
        }
        if !out.push(&quad) {
            return false;
        }
        crate::secret::wipe(&mut quad);
    }
    true
}

/// A credential the broker injects: a name (for leases and messages), the
/// secret, the hosts it may be sent to and its header template. Build with
/// [`Credential::builder`].
#[derive(Clone)]
pub struct Credential {
    pub(crate) name: String,
    pub(crate) secret: Secret,
    pub(crate) hosts: Vec<HostPattern>,
    pub(crate) template: HeaderTemplate,
}

impl Credential {
    /// A builder for a credential called `name`.
    pub fn builder(name: &str) -> CredentialBuilder {
        CredentialBuilder {
            name: name.to_owned(),
            secret: None,
            hosts: Vec::new(),
            template: HeaderTemplate::Bearer,
        }
    }

    /// The credential's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The header template.
    pub fn template(&self) -> &HeaderTemplate {
        &self.template
    }

    /// Whether the credential may be sent to `host`.
    pub fn allows_host(&self, host: &Host) -> bool {
        self.hosts.iter().any(|p| p.matches(host))
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hosts: Vec<String> = self.hosts.iter().map(ToString::to_string).collect();
        f.debug_struct("Credential")
            .field("name", &self.name)
            .field("secret", &self.secret)
            .field("hosts", &hosts)
            .field("template", &self.template)
            .finish()
    }
}

/// Builds a [`Credential`]; [`CredentialBuilder::build`] checks it.
#[derive(Clone)]
pub struct CredentialBuilder {
    name: String,
    secret: Option<Secret>,
    hosts: Vec<String>,
    template: HeaderTemplate,
}

impl fmt::Debug for CredentialBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CredentialBuilder")
            .field("name", &self.name)
            .field("secret", &self.secret)
            .field("hosts", &self.hosts)
            .field("template", &self.template)
            .finish()
    }
}

impl CredentialBuilder {
    /// Sets the secret value (given by the host program).
    pub fn secret(&mut self, secret: Secret) -> &mut CredentialBuilder {
        self.secret = Some(secret);
        self
    }

    /// Sets the secret to what `source` reads now (an environment
    /// variable, the macOS Keychain, a source of the host program's own).
    pub fn secret_from(
        &mut self,
        source: &dyn crate::SecretSource,
    ) -> Result<&mut CredentialBuilder, Error> {
        self.secret = Some(source.read_secret()?);
        Ok(self)
    }

    /// Adds a host pattern the credential may be sent to (a
    /// [`HostPattern`] without a port; [`CredentialBuilder::build`] checks
    /// it).
    pub fn host(&mut self, pattern: &str) -> &mut CredentialBuilder {
        self.hosts.push(pattern.to_owned());
        self
    }

    /// Sets the header template (default [`HeaderTemplate::Bearer`]).
    pub fn template(&mut self, template: HeaderTemplate) -> &mut CredentialBuilder {
        self.template = template;
        self
    }

    /// Checks and builds the credential.
    pub fn build(&self) -> Result<Credential, Error> {
        let bad = |name, value: &str, reason| {
            Err(Error::from(ErrorKind::InvalidConfig {
                name,
                value: truncate(value),
                reason,
            }))
        };
        if self.name.is_empty()
            || self.name.len() > 128
            || !self.name.bytes().all(|b| (0x21..0x7f).contains(&b))
        {
            return bad(
                "credential name",
                &self.name,
                "give 1 to 128 visible ASCII bytes",
            );
        }
        let Some(secret) = self.secret.clone() else {
            return bad("credential secret", &self.name, "set a secret");
        };
        if self.hosts.is_empty() {
            return bad("credential hosts", &self.name, "name at least one host");
        }
        let hosts = self
            .hosts
            .iter()
            .map(|h| host_pattern(h))
            .collect::<Result<Vec<_>, _>>()?;
        self.template.check()?;
        Ok(Credential {
            name: self.name.clone(),
            secret,
            hosts,
            template: self.template.clone(),
        })
    }
}
