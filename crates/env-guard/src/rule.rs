//! The rules that drop a variable, one per reason.

use std::fmt;

/// Why a variable was dropped. Reported with the name only, never the value.
///
/// The [`Display`](fmt::Display) form is a short kebab-case label
/// (`not-inherited`, `loader`, `secret`, ...) fit for a log line; it is also
/// what [`Rule::label`] returns and what the behaviour tables name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rule {
    /// Stage 1: not in the inherit set ([`crate::Inherit`]) and not included.
    NotInherited,
    /// Stage 2: the name is not `[A-Za-z_][A-Za-z0-9_]*`, is not UTF-8, or is
    /// longer than [`crate::MAX_NAME_LEN`].
    InvalidName,
    /// Stage 2: a later record with a name already seen (the first one wins).
    Duplicate,
    /// Stage 2: the value contains a NUL byte or is longer than
    /// [`crate::MAX_VALUE_LEN`].
    InvalidValue,
    /// Stage 2: an exported shell function, by name (`BASH_FUNC_*`) or by a
    /// value starting with `() {`.
    ShellFunction,
    /// Stage 2: a dynamic loader or libc variable (`LD_*`, `DYLD_*`,
    /// `GLIBC_TUNABLES`, `GCONV_PATH`, `LOCPATH`, `NLSPATH`, `RES_OPTIONS`, ...).
    Loader,
    /// Stage 2: a shell start-up or parsing hook (`BASH_ENV`, `ENV`, `IFS`,
    /// `CDPATH`, `PROMPT_COMMAND`, `PS4`, `SHELLOPTS`, `ZDOTDIR`, ...).
    ShellHook,
    /// Stage 2: an interpreter or runtime hook (Python, Node, Perl, Ruby,
    /// Java, .NET, ...).
    InterpreterHook,
    /// Stage 2: a git or ssh hook that runs a program or rewrites config
    /// (`GIT_CONFIG_*`, `GIT_SSH`, `GIT_ASKPASS`, `SSH_ASKPASS`, ...).
    ToolHook,
    /// Stage 2: a terminal database override (`TERMINFO`, `TERMCAP`, ...).
    TerminalDatabase,
    /// Stage 3: the name looks like a secret or a credential pointer.
    Secret,
    /// Stage 4: a locale, terminal or time zone value with `/`, `%`, `..`
    /// or bytes that are not printable ASCII.
    UnsafeValue,
    /// Stage 5: replaced by an explicit `set`.
    ReplacedBySet,
    /// Stage 6: a proxy variable replaced or removed because a proxy is
    /// configured.
    ReplacedByProxy,
    /// Stage 7: a CA trust variable replaced or removed because a CA bundle
    /// is configured.
    ReplacedByCa,
}

impl Rule {
    /// The short kebab-case label.
    pub fn label(self) -> &'static str {
        match self {
            Rule::NotInherited => "not-inherited",
            Rule::InvalidName => "invalid-name",
            Rule::Duplicate => "duplicate",
            Rule::InvalidValue => "invalid-value",
            Rule::ShellFunction => "shell-function",
            Rule::Loader => "loader",
            Rule::ShellHook => "shell-hook",
            Rule::InterpreterHook => "interpreter-hook",
            Rule::ToolHook => "tool-hook",
            Rule::TerminalDatabase => "terminal-database",
            Rule::Secret => "secret",
            Rule::UnsafeValue => "unsafe-value",
            Rule::ReplacedBySet => "replaced-by-set",
            Rule::ReplacedByProxy => "replaced-by-proxy",
            Rule::ReplacedByCa => "replaced-by-ca",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}
