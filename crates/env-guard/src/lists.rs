//! The name lists the pipeline consults, kept in one place so that the
//! tables in `testdata/` and the docs can be checked against them.

use crate::Rule;

/// Names that [`crate::Inherit::Core`] passes (plus every `LC_*`).
pub const CORE_NAMES: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "TZ",
    "NO_COLOR",
    "COLUMNS",
    "LINES",
];

/// Whether `name` is in the core inherit set.
pub(crate) fn is_core(name: &str) -> bool {
    CORE_NAMES.contains(&name) || name.starts_with("LC_")
}

/// `(exact name, rule)` pairs of the always-deleted stage.
const DELETED_EXACT: &[(&str, Rule)] = &[
    // glibc's list of variables it clears for set-user-ID programs, and sudo's.
    ("GLIBC_TUNABLES", Rule::Loader),
    ("GCONV_PATH", Rule::Loader),
    ("GETCONF_DIR", Rule::Loader),
    ("HOSTALIASES", Rule::Loader),
    ("LOCALDOMAIN", Rule::Loader),
    ("LOCPATH", Rule::Loader),
    ("MALLOC_TRACE", Rule::Loader),
    ("MALLOC_CHECK_", Rule::Loader),
    ("NIS_PATH", Rule::Loader),
    ("NLSPATH", Rule::Loader),
    ("PATH_LOCALE", Rule::Loader),
    ("RESOLV_HOST_CONF", Rule::Loader),
    ("RES_OPTIONS", Rule::Loader),
    ("TZDIR", Rule::Loader),
    ("LIBPATH", Rule::Loader),
    ("SHLIB_PATH", Rule::Loader),
    // Shell start-up and parsing hooks.
    ("BASH_ENV", Rule::ShellHook),
    ("ENV", Rule::ShellHook),
    ("IFS", Rule::ShellHook),
    ("CDPATH", Rule::ShellHook),
    ("PROMPT_COMMAND", Rule::ShellHook),
    ("PS0", Rule::ShellHook),
    ("PS1", Rule::ShellHook),
    ("PS2", Rule::ShellHook),
    ("PS3", Rule::ShellHook),
    ("PS4", Rule::ShellHook),
    ("GLOBIGNORE", Rule::ShellHook),
    ("BASHOPTS", Rule::ShellHook),
    ("SHELLOPTS", Rule::ShellHook),
    ("BASH_XTRACEFD", Rule::ShellHook),
    ("BASH_LOADABLES_PATH", Rule::ShellHook),
    ("EXECIGNORE", Rule::ShellHook),
    ("INPUTRC", Rule::ShellHook),
    ("FPATH", Rule::ShellHook),
    ("NULLCMD", Rule::ShellHook),
    ("READNULLCMD", Rule::ShellHook),
    ("ZDOTDIR", Rule::ShellHook),
    ("TMPPREFIX", Rule::ShellHook),
    // Interpreter and runtime hooks.
    ("PYTHONPATH", Rule::InterpreterHook),
    ("PYTHONHOME", Rule::InterpreterHook),
    ("PYTHONSTARTUP", Rule::InterpreterHook),
    ("PYTHONINSPECT", Rule::InterpreterHook),
    ("PYTHONUSERBASE", Rule::InterpreterHook),
    ("PYTHONBREAKPOINT", Rule::InterpreterHook),
    ("PYTHONEXECUTABLE", Rule::InterpreterHook),
    ("PYTHONWARNINGS", Rule::InterpreterHook),
    ("PYTHONPLATLIBDIR", Rule::InterpreterHook),
    ("PYTHONSAFEPATH", Rule::InterpreterHook),
    ("NODE_OPTIONS", Rule::InterpreterHook),
    ("NODE_PATH", Rule::InterpreterHook),
    ("NODE_REPL_EXTERNAL_MODULE", Rule::InterpreterHook),
    ("PERL5LIB", Rule::InterpreterHook),
    ("PERLLIB", Rule::InterpreterHook),
    ("PERL5OPT", Rule::InterpreterHook),
    ("PERL5DB", Rule::InterpreterHook),
    ("PERLIO_DEBUG", Rule::InterpreterHook),
    ("PERL5SHELL", Rule::InterpreterHook),
    ("RUBYLIB", Rule::InterpreterHook),
    ("RUBYOPT", Rule::InterpreterHook),
    ("JAVA_TOOL_OPTIONS", Rule::InterpreterHook),
    ("_JAVA_OPTIONS", Rule::InterpreterHook),
    ("JDK_JAVA_OPTIONS", Rule::InterpreterHook),
    ("CLASSPATH", Rule::InterpreterHook),
    ("DOTNET_STARTUP_HOOKS", Rule::InterpreterHook),
    ("DOTNET_ADDITIONAL_DEPS", Rule::InterpreterHook),
    ("DOTNET_SHARED_STORE", Rule::InterpreterHook),
    ("CORECLR_ENABLE_PROFILING", Rule::InterpreterHook),
    ("COR_ENABLE_PROFILING", Rule::InterpreterHook),
    ("PHPRC", Rule::InterpreterHook),
    ("PHP_INI_SCAN_DIR", Rule::InterpreterHook),
    ("LUA_INIT", Rule::InterpreterHook),
    ("LUA_PATH", Rule::InterpreterHook),
    ("LUA_CPATH", Rule::InterpreterHook),
    ("TCLLIBPATH", Rule::InterpreterHook),
    ("R_PROFILE", Rule::InterpreterHook),
    ("R_PROFILE_USER", Rule::InterpreterHook),
    ("ERL_FLAGS", Rule::InterpreterHook),
    ("ERL_AFLAGS", Rule::InterpreterHook),
    ("ERL_ZFLAGS", Rule::InterpreterHook),
    // Tools that run a program or read config named by the environment.
    ("GIT_CONFIG", Rule::ToolHook),
    ("GIT_CONFIG_PARAMETERS", Rule::ToolHook),
    ("GIT_CONFIG_COUNT", Rule::ToolHook),
    ("GIT_CONFIG_GLOBAL", Rule::ToolHook),
    ("GIT_CONFIG_SYSTEM", Rule::ToolHook),
    ("GIT_EXEC_PATH", Rule::ToolHook),
    ("GIT_SSH", Rule::ToolHook),
    ("GIT_SSH_COMMAND", Rule::ToolHook),
    ("GIT_PROXY_COMMAND", Rule::ToolHook),
    ("GIT_ASKPASS", Rule::ToolHook),
    ("GIT_EXTERNAL_DIFF", Rule::ToolHook),
    ("GIT_TEMPLATE_DIR", Rule::ToolHook),
    ("SSH_ASKPASS", Rule::ToolHook),
    ("SSH_ASKPASS_REQUIRE", Rule::ToolHook),
    ("LESSOPEN", Rule::ToolHook),
    ("LESSCLOSE", Rule::ToolHook),
    ("KRB5_CONFIG", Rule::ToolHook),
    ("KRB5_KTNAME", Rule::ToolHook),
    ("VAR_ACE", Rule::ToolHook),
    ("USR_ACE", Rule::ToolHook),
    ("DLC_ACE", Rule::ToolHook),
    // Terminal databases (a crafted terminfo entry is parsed by every curses program).
    ("TERMINFO", Rule::TerminalDatabase),
    ("TERMINFO_DIRS", Rule::TerminalDatabase),
    ("TERMPATH", Rule::TerminalDatabase),
    ("TERMCAP", Rule::TerminalDatabase),
];

/// `(prefix, rule)` pairs of the always-deleted stage.
const DELETED_PREFIX: &[(&str, Rule)] = &[
    ("LD_", Rule::Loader),
    ("DYLD_", Rule::Loader),
    ("_RLD", Rule::Loader),
    ("LDR_", Rule::Loader),
    ("BASH_FUNC_", Rule::ShellFunction),
    ("CORECLR_PROFILER", Rule::InterpreterHook),
    ("COR_PROFILER", Rule::InterpreterHook),
    ("GIT_CONFIG_KEY_", Rule::ToolHook),
    ("GIT_CONFIG_VALUE_", Rule::ToolHook),
];

/// The always-deleted rule that matches `name` by name alone, if any.
pub(crate) fn always_deleted(name: &str) -> Option<Rule> {
    DELETED_EXACT
        .iter()
        .find(|(n, _)| *n == name)
        .or_else(|| DELETED_PREFIX.iter().find(|(p, _)| name.starts_with(p)))
        .map(|(_, rule)| *rule)
}

/// Names whose segments say "secret" ([`crate::Rule::Secret`]), compared
/// ASCII case-insensitively against each whole segment.
pub const SECRET_SEGMENTS: &[&str] = &[
    "KEY",
    "KEYS",
    "APIKEY",
    "SECRET",
    "SECRETS",
    "TOKEN",
    "TOKENS",
    "PASSWORD",
    "PASSWORDS",
    "PASSWD",
    "PASS",
    "PASSPHRASE",
    "CREDENTIAL",
    "CREDENTIALS",
    "CRED",
    "CREDS",
    "AUTH",
    "PAT",
    "COOKIE",
    "COOKIES",
];

/// Words that mark a segment as secret wherever they appear inside it
/// (`GHTOKEN`, `DBPASSWORD`); short words such as `KEY` are matched only as
/// whole segments so that `MONKEY` passes.
pub const SECRET_INFIXES: &[&str] = &[
    "SECRET",
    "TOKEN",
    "PASSWORD",
    "PASSWD",
    "CREDENTIAL",
    "APIKEY",
    "PRIVATEKEY",
    "ACCESSKEY",
];

/// Credential pointers and cluster or daemon authority, by exact name.
pub const SECRET_NAMES: &[&str] = &[
    "SSH_AUTH_SOCK",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "KUBECONFIG",
    "DOCKER_CONFIG",
    "DOCKER_HOST",
    "DOCKER_CONTEXT",
    "DOCKER_CERT_PATH",
    "DATABASE_URL",
    "REDIS_URL",
    "MONGODB_URI",
    "MONGO_URL",
    "CLOUDSDK_CONFIG",
    "PGPASSFILE",
    "NETRC",
    "XAUTHORITY",
    "GNUPGHOME",
    "GPG_AGENT_INFO",
    "KRB5CCNAME",
];

/// Credential families, by name prefix.
pub const SECRET_PREFIXES: &[&str] =
    &["AWS_", "AZURE_", "ARM_", "OP_SESSION_", "VAULT_", "TF_VAR_"];

/// Variables the proxy stage owns: any case of these names is replaced or
/// removed when a proxy is configured.
pub(crate) const PROXY_NAMES: &[&str] = &[
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "FTP_PROXY",
    "RSYNC_PROXY",
    "SOCKS_PROXY",
    "SOCKS5_PROXY",
    "WS_PROXY",
    "WSS_PROXY",
    "NPM_CONFIG_PROXY",
    "NPM_CONFIG_HTTPS_PROXY",
    "NPM_CONFIG_NOPROXY",
];

/// Whether the proxy stage owns `name`.
pub(crate) fn is_proxy_managed(name: &str) -> bool {
    PROXY_NAMES.iter().any(|p| p.eq_ignore_ascii_case(name))
}

/// CA trust variables written (all pointing at the bundle) when a CA bundle
/// is configured.
pub const CA_NAMES: &[&str] = &[
    "SSL_CERT_FILE",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
    "PIP_CERT",
    "CARGO_HTTP_CAINFO",
    "AWS_CA_BUNDLE",
    "NIX_SSL_CERT_FILE",
    "DENO_CERT",
    "NPM_CONFIG_CAFILE",
    "BUNDLE_SSL_CA_CERT",
    "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
    "HEX_CACERTS_PATH",
];

/// CA trust variables removed (not written) when a CA bundle is configured,
/// because they would add or replace trust directories.
pub(crate) const CA_REMOVED: &[&str] = &["SSL_CERT_DIR", "GIT_SSL_CAPATH", "GIT_SSL_NO_VERIFY"];

/// Whether the CA stage owns `name`.
pub(crate) fn is_ca_managed(name: &str) -> bool {
    CA_NAMES
        .iter()
        .chain(CA_REMOVED)
        .any(|n| n.eq_ignore_ascii_case(name))
}
