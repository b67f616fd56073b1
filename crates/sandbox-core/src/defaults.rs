//! The curated default sets (R-PATHS-2, R-PATHS-3, R-SEATBELT-5), each entry
//! with one line saying why it is there.
//!
//! Entries starting with `~/` are anchored at the run's home directory.
//! Entries of [`MANDATORY_WRITE_DENY`] are relative: they are anchored at the
//! home directory *and* at every writable root (see
//! [`mandatory_write_deny_paths`]).

use std::path::Path;

/// A curated entry and the reason it is in its set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Curated {
    /// The path, glob or binary.
    pub entry: &'static str,
    /// Why it is in the set.
    pub reason: &'static str,
}

const fn c(entry: &'static str, reason: &'static str) -> Curated {
    Curated { entry, reason }
}

/// The secret directories a sandboxed terminal cannot read (R-SEATBELT-8,
/// R-TERMINAL-1): the terminal profile is fixed and smaller than the
/// dispatch one.
pub const TERMINAL_SECRET_DIRS: &[&str] = &[
    "~/.ssh",
    "~/.aws",
    "~/.gnupg",
    "~/.config/gh",
    "~/Library/Keychains",
];

/// Secrets the sandbox may not read (R-PATHS-2).
pub const SECRET_READ_DENY: &[Curated] = &[
    c("~/.ssh", "SSH private keys, agent sockets and known hosts"),
    c("~/.aws", "AWS access keys and SSO caches"),
    c("~/.gnupg", "GnuPG private keys"),
    c("~/.config/gh", "GitHub CLI OAuth tokens"),
    c("~/Library/Keychains", "macOS keychains"),
    c(
        "~/.config/gcloud",
        "Google Cloud credentials and access tokens",
    ),
    c("~/.azure", "Azure CLI tokens"),
    c("~/.kube", "Kubernetes cluster credentials"),
    c("~/.docker/config.json", "Docker registry credentials"),
    c("~/.netrc", "plain-text logins for curl, git and ftp"),
    c("~/.git-credentials", "git's plain-text credential store"),
    c(
        "~/.config/git/credentials",
        "git's credential store (XDG location)",
    ),
    c("~/.npmrc", "npm registry tokens"),
    c("~/.yarnrc.yml", "yarn registry tokens"),
    c("~/.pypirc", "Python package index upload tokens"),
    c(
        "~/.cargo/credentials*",
        "Rust registry tokens (credentials and credentials.toml)",
    ),
    c("~/.gem/credentials", "RubyGems API key"),
    c("~/.m2/settings.xml", "Maven repository passwords"),
    c(
        "~/.gradle/gradle.properties",
        "Gradle repository and signing passwords",
    ),
    c("~/.nuget/NuGet/NuGet.Config", "NuGet feed credentials"),
    c(
        "~/.terraform.d/credentials.tfrc.json",
        "Terraform Cloud tokens",
    ),
    c("~/.vault-token", "HashiCorp Vault token"),
    c("~/.password-store", "pass password store"),
    c("~/.config/op", "1Password CLI session"),
    c("~/.local/share/keyrings", "GNOME keyrings"),
    c("~/.pgpass", "PostgreSQL passwords"),
    c("~/.my.cnf", "MySQL client passwords"),
    c("~/.config/hub", "hub OAuth token"),
    c("~/.config/glab-cli", "GitLab CLI tokens"),
    c("~/.config/doctl", "DigitalOcean tokens"),
    c("~/.oci", "Oracle Cloud API keys"),
    c("~/.config/heroku", "Heroku API key"),
    c("~/.netlify", "Netlify tokens"),
    c("~/.config/rclone", "rclone remote credentials"),
];

/// Files and directories never writable, even inside a writable root
/// (R-PATHS-3). Relative: anchored at the home directory and every writable
/// root. A rule holds for files that do not exist yet.
pub const MANDATORY_WRITE_DENY: &[Curated] = &[
    c(".bashrc", "bash runs it in every interactive shell"),
    c(".bash_profile", "bash runs it at login"),
    c(".bash_login", "bash runs it at login"),
    c(".bash_logout", "bash runs it at logout"),
    c(".profile", "sh and bash run it at login"),
    c(".zshrc", "zsh runs it in every interactive shell"),
    c(".zshenv", "zsh runs it for every shell, scripts included"),
    c(".zprofile", "zsh runs it at login"),
    c(".zlogin", "zsh runs it at login"),
    c(".zlogout", "zsh runs it at logout"),
    c(".config/fish", "fish runs config.fish and conf.d at start"),
    c(".inputrc", "readline key bindings can run commands"),
    c(
        ".bash_aliases",
        "the default .bashrc of Debian and Ubuntu sources it",
    ),
    c(
        ".config/git",
        "git's XDG global config, attributes and ignore files",
    ),
    c(
        ".local/bin",
        "on PATH before the system directories in default sessions",
    ),
    c(
        ".config/autostart",
        "desktop sessions start what it lists at login",
    ),
    c(".config/systemd", "user units systemd starts on the host"),
    c(
        ".config/environment.d",
        "environment for the user's systemd services",
    ),
    c(".pam_environment", "environment set at login"),
    c(
        ".gitconfig",
        "aliases, hooksPath and credential helpers run commands",
    ),
    c(".gitmodules", "submodule URLs and update commands"),
    c(
        ".git/hooks",
        "git runs hooks on the host at the next commit or checkout",
    ),
    c(
        ".git/config",
        "core.hooksPath, fsmonitor and aliases run commands",
    ),
    c(
        ".git/commondir",
        "git takes config and hooks from the directory it names, in any repository",
    ),
    c(
        ".git/config.worktree",
        "per-worktree config: the same commands as .git/config",
    ),
    c(
        ".claude/settings.json",
        "the agent's own permissions and hooks",
    ),
    c(
        ".claude/settings.local.json",
        "the agent's own permissions and hooks",
    ),
    c(".claude/commands", "the agent's own slash commands"),
    c(".claude/agents", "the agent's own sub-agent definitions"),
    c(".mcp.json", "MCP servers the agent starts on the host"),
    c(
        ".vscode",
        "editor tasks and settings that run commands on open",
    ),
    c(".idea", "IDE run configurations"),
    c(".envrc", "direnv runs it on cd"),
    c(
        ".ripgreprc",
        "search tool options the agent's own tools read",
    ),
];

/// Home-anchored configuration of the agent itself, never writable.
pub const AGENT_CONFIG_WRITE_DENY: &[Curated] = &[c(
    "~/.claude",
    "the agent's own configuration, hooks and credentials",
)];

/// Names that may not be created inside a writable root (R-PATHS-3). These
/// need creation-time enforcement: bubblewrap alone cannot refuse a new name.
pub const FILENAME_GLOB_DENY: &[Curated] = &[
    c(
        ".env",
        "dotenv files hold secrets other tools load automatically",
    ),
    c("*.key", "private keys"),
    c("*.pem", "certificates and private keys"),
];

/// Directories package managers own, by name: below a directory of one of
/// these names the filename globs ([`FILENAME_GLOB_DENY`]) do not hold,
/// since what is installed there carries such names of its own (certifi's
/// `cacert.pem`, a test fixture's `server.key`) and nothing loads a
/// `.env` from there. The path rules (the mandatory write-deny set,
/// protected paths) still hold, and a rename into or out of one is
/// answered `EXDEV`, so such a file leaves only by a copy made under the
/// rules. A host replaces the list (or empties it) with the builder's
/// `tool_owned_dirs`.
pub const TOOL_OWNED_DIRS: &[Curated] = &[
    c(
        "site-packages",
        "Python's installed packages (a virtualenv's, pip's --prefix or --user)",
    ),
    c(
        "dist-packages",
        "Python's installed packages on Debian and Ubuntu",
    ),
    c(
        "node_modules",
        "npm's, yarn's and pnpm's installed packages",
    ),
];

/// Binaries a sandboxed run may never execute (R-SEATBELT-5).
pub const DANGEROUS_BINARIES: &[Curated] = &[
    c("/usr/bin/sudo", "gains root"),
    c("/bin/su", "switches user"),
    c("/usr/bin/su", "switches user"),
    c("/usr/bin/doas", "gains root"),
    c("/usr/bin/pkexec", "gains root through polkit"),
    c("/usr/bin/login", "starts a login session"),
    c("/usr/bin/security", "reads and edits macOS keychains"),
    c(
        "/usr/bin/osascript",
        "drives other applications outside the sandbox",
    ),
    c("/bin/launchctl", "starts services outside the sandbox"),
    c("/usr/bin/dscl", "edits the macOS directory service"),
    c("/usr/sbin/chroot", "changes the root directory"),
    c("/usr/bin/chsh", "changes the login shell"),
    c("/usr/bin/passwd", "changes passwords"),
    c("/usr/bin/crontab", "schedules commands outside the sandbox"),
    c("/usr/bin/at", "schedules commands outside the sandbox"),
];

/// The mandatory write-deny entries anchored at `home` and at each writable
/// root, plus the agent's home configuration, as absolute paths in a stable
/// order without duplicates.
pub fn mandatory_write_deny_paths<'a, I>(home: &Path, writable_roots: I) -> Vec<String>
where
    I: IntoIterator<Item = &'a str>,
{
    let home = home.to_string_lossy();
    let home = home.trim_end_matches('/');
    let mut out: Vec<String> = Vec::new();
    let mut push = |p: String| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    for entry in AGENT_CONFIG_WRITE_DENY {
        push(entry.entry.replacen('~', home, 1));
    }
    let anchors = std::iter::once(home.to_string()).chain(
        writable_roots
            .into_iter()
            .map(|r| r.trim_end_matches('/').to_string()),
    );
    for anchor in anchors {
        for entry in MANDATORY_WRITE_DENY {
            push(format!("{anchor}/{}", entry.entry));
        }
    }
    out
}

/// The secret read-deny entries as written (`~/...`), for
/// [`crate::PathSet::resolve`].
pub fn secret_read_deny_entries() -> impl Iterator<Item = &'static str> {
    SECRET_READ_DENY.iter().map(|c| c.entry)
}
