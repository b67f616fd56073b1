//! A local HTTPS git server for tests: `git http-backend` run as CGI for
//! each request behind a recording [`Origin`] with its own test CA. It
//! serves every repository under a root directory, answers `401` to any
//! request that does not carry exactly the expected credential, and
//! records each request line with the `Authorization` it carried, so a
//! test can show which credential reached the server.
//!
//! ```no_run
//! use test_support::git_origin::{GitServer, basic};
//! use test_support::tls_origin::TestPki;
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let pki = TestPki::new(&["git.test"]);
//! // Serves the bare repositories under /tmp/server (for example
//! // /tmp/server/repo.git, with `http.receivepack` set to allow pushes)
//! // to clients that send the git-basic form of "real-secret".
//! let server = GitServer::start("/tmp/server".into(), &pki, "real-secret").await;
//! let url = format!("https://git.test:{}/repo.git", server.addr().port());
//! # let _ = url;
//! // ... git clone / push through whatever is under test ...
//! for r in server.seen() {
//!     assert_eq!(r.auth.as_deref(), Some(basic("real-secret").as_str()));
//! }
//! # });
//! ```
//!
//! The CGI runs with a clean environment (no system or global git
//! configuration, `HOME` at the root) and `REMOTE_USER` set, so
//! `git-receive-pack` is served when the repository enables it.

use crate::tls_origin::{Message, Origin, Reply, TestPki};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use tokio::io::AsyncWriteExt;

/// The user name of the git-basic credential form.
pub const GIT_BASIC_USER: &str = "x-access-token";

/// Standard base64 (with `=` padding) of `bytes`.
pub fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for c in bytes.chunks(3) {
        let at = |i: usize| u32::from(c.get(i).copied().unwrap_or(0));
        let n = (at(0) << 16) | (at(1) << 8) | at(2);
        for i in 0..4 {
            if i <= c.len() {
                out.push(char::from(A[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The `Authorization` value of the git-basic form for `token`:
/// `Basic base64(x-access-token:TOKEN)`.
pub fn basic(token: &str) -> String {
    format!(
        "Basic {}",
        base64(format!("{GIT_BASIC_USER}:{token}").as_bytes())
    )
}

/// What the git server saw of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The request line.
    pub line: String,
    /// Its `Authorization` (several joined by ` | `), if any.
    pub auth: Option<String>,
}

/// The local HTTPS git server: a recording origin running `git
/// http-backend` for each request that carries the expected credential.
#[derive(Debug, Clone)]
pub struct GitServer {
    origin: Origin,
}

impl GitServer {
    /// Starts a server for the repositories under `root`, serving the
    /// leaf of `pki`, that runs `git http-backend` for requests whose only
    /// `Authorization` is [`basic`]`(secret)` and answers any other `401`
    /// with a `Basic` challenge. Every request is recorded.
    pub async fn start(root: PathBuf, pki: &TestPki, secret: &str) -> GitServer {
        let want = basic(secret);
        let origin = Origin::start(pki, move |m| {
            let (root, want) = (root.clone(), want.clone());
            async move {
                if m.headers("authorization") == [want.as_str()] {
                    let headers = fields(&m);
                    Reply::new(cgi(&root, m.request_line(), &headers, m.body.clone()).await)
                } else {
                    Reply::new(
                        b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\nContent-Length: 0\r\n\r\n"
                            .to_vec(),
                    )
                }
            }
        })
        .await;
        GitServer { origin }
    }

    /// Where it listens (on `127.0.0.1`).
    pub fn addr(&self) -> SocketAddr {
        self.origin.addr()
    }

    /// Each request line and its `Authorization`, in order.
    pub fn seen(&self) -> Vec<Seen> {
        self.origin
            .seen()
            .iter()
            .map(|m| {
                let auths = m.headers("authorization");
                Seen {
                    line: m.request_line().to_owned(),
                    auth: match auths.as_slice() {
                        [one] => Some((*one).to_owned()),
                        _ => Some(auths.join(" | ")).filter(|s| !s.is_empty()),
                    },
                }
            })
            .collect()
    }

    /// How many `POST .../git-receive-pack` requests reached it.
    pub fn receive_pack_posts(&self) -> usize {
        self.seen()
            .iter()
            .filter(|r| r.line.starts_with("POST ") && r.line.contains("/git-receive-pack "))
            .count()
    }
}

/// A request's fields: names in lower case, values trimmed.
fn fields(m: &Message) -> Vec<(String, String)> {
    m.head
        .split("\r\n")
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect()
}

/// Runs `git http-backend` for one request; the CGI answer as HTTP.
#[allow(
    clippy::unwrap_used,
    reason = "test support: a git that cannot run fails the test"
)]
async fn cgi(root: &Path, line: &str, headers: &[(String, String)], body: Vec<u8>) -> Vec<u8> {
    let mut parts = line.split(' ');
    let method = parts.next().unwrap_or("");
    let target = parts.next().unwrap_or("");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut cmd = tokio::process::Command::new("git");
    cmd.arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("REMOTE_USER", GIT_BASIC_USER)
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (name, var) in [
        ("content-type", "CONTENT_TYPE"),
        ("content-encoding", "HTTP_CONTENT_ENCODING"),
        ("git-protocol", "HTTP_GIT_PROTOCOL"),
    ] {
        if let Some(v) = header(name) {
            cmd.env(var, v);
        }
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&body).await;
    });
    let out = child.wait_with_output().await.unwrap();
    let _ = writer.await;
    cgi_to_http(&out.stdout)
}

/// A CGI answer (fields, an empty line, the body) as an HTTP/1.1
/// response: its `Status` field as the status line (`200 OK` without
/// one), the other fields kept, a `Content-Length` of the body.
fn cgi_to_http(raw: &[u8]) -> Vec<u8> {
    let (split, skip) = match raw.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(i) => (i, 4),
        None => match raw.windows(2).position(|w| w == b"\n\n") {
            Some(i) => (i, 2),
            None => (raw.len(), 0),
        },
    };
    let cgi_head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let cgi_body = &raw[(split + skip).min(raw.len())..];
    let mut status = "200 OK".to_owned();
    let mut fields = String::new();
    for l in cgi_head.lines() {
        let Some((n, v)) = l.split_once(':') else {
            continue;
        };
        if n.eq_ignore_ascii_case("status") {
            status = v.trim().to_owned();
        } else {
            fields.push_str(&format!("{}: {}\r\n", n.trim(), v.trim()));
        }
    }
    let mut resp = format!(
        "HTTP/1.1 {status}\r\n{fields}Content-Length: {}\r\n\r\n",
        cgi_body.len()
    )
    .into_bytes();
    resp.extend_from_slice(cgi_body);
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_known_values() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(basic("t"), format!("Basic {}", base64(b"x-access-token:t")));
    }

    #[test]
    fn a_cgi_answer_becomes_a_response_with_its_status_and_length() {
        let http = cgi_to_http(b"Status: 404 Not Found\r\nContent-Type: text/plain\r\n\r\nno");
        assert_eq!(
            String::from_utf8_lossy(&http),
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nno"
        );
        let http = cgi_to_http(b"Content-Type: x\n\nbody");
        assert!(http.starts_with(b"HTTP/1.1 200 OK\r\n"), "{http:?}");
        assert!(http.ends_with(b"Content-Length: 4\r\n\r\nbody"), "{http:?}");
    }
}
