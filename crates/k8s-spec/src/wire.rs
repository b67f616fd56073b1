//! The fixed names the rendered objects share: the proxy secret's key,
//! where the egress pod sees it, the variable and user name the agent's
//! proxy URLs carry, and the variables a workload may not set.

/// The key of the proxy secret in the session's `Secret`.
pub const SECRET_KEY: &str = "proxy-secret";

/// Where the egress pod sees the proxy secret.
pub const SECRET_DIR: &str = "/run/session-proxy";

/// The variable that carries the session's proxy secret into the agent
/// container (from the session's `Secret`); the proxy URLs refer to it.
pub const PROXY_SECRET_ENV: &str = "SESSION_PROXY_SECRET";

/// The user name the proxies require (with the session's secret).
pub const PROXY_USER: &str = "session";

/// Variables the renderer writes; a workload may not set them.
pub(crate) const RESERVED_ENV: &[&str] = &[
    PROXY_SECRET_ENV,
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "GIT_SSH_COMMAND",
    "HOME",
];
