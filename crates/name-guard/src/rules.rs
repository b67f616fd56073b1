//! Denied names: globs on the final path component, or absolute paths.

use crate::{Error, ErrorKind};
use std::collections::HashSet;

/// Most rules a guard accepts (as many as its command line carries,
/// [`sandbox_core::NameGuardInvocation::MAX_DENY_GLOBS`]). Absolute paths
/// without `*` or `?` (the usual case: protected files that do not exist yet
/// in each worktree) are looked up in a set, so a decision costs one lookup
/// for all of them plus one match per glob.
pub const MAX_RULES: usize = sandbox_core::NameGuardInvocation::MAX_DENY_GLOBS;
/// Longest rule, in bytes.
pub const MAX_RULE_LEN: usize = 4096;

/// The set of names no process under the guard may create.
///
/// A rule without `/` is a glob matched against the final component of the
/// name being created (`.env`, `*.key`, `*.pem`); a rule starting with `/`
/// is matched against the whole absolute path of that name. `*` matches any
/// run of bytes except `/`, `?` one byte except `/`; every other byte is
/// literal. Matching ignores ASCII case (`X.PEM`, `.ENV` and `ID.Key` are
/// denied by `*.pem`, `.env` and `*.key`): it fails closed, and a
/// case-insensitive file system would create the same file under either
/// spelling. Bytes outside ASCII are compared exactly.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rules {
    globs: Vec<Vec<u8>>,
    /// Absolute-path rules with a wildcard.
    paths: Vec<Vec<u8>>,
    /// Absolute-path rules with one `**` component (any number of
    /// directories): the components before it and after it.
    deep_paths: Vec<DeepRule>,
    /// Absolute-path rules without a wildcard, ASCII lower-cased.
    literal_paths: HashSet<Vec<u8>>,
    /// The runner's state directories, each without a trailing `/`: the
    /// name rules do not hold inside them.
    state_dirs: Vec<Vec<u8>>,
    /// Names of the directories package managers own, ASCII lower-cased:
    /// the name rules do not hold below one.
    tool_dirs: Vec<Vec<u8>>,
}

impl Rules {
    /// Parse rules, refusing empty ones, relative ones containing `/`, NUL
    /// bytes, `[` (character classes are not supported) and more than
    /// [`MAX_RULES`] rules or [`MAX_RULE_LEN`] bytes each.
    pub fn new<I, S>(rules: I) -> Result<Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut out = Rules::default();
        for (count, r) in rules.into_iter().enumerate() {
            if count >= MAX_RULES {
                return Err(ErrorKind::TooManyRules { limit: MAX_RULES }.into());
            }
            let r = r.as_ref();
            let bad = |reason: &'static str| -> Error {
                ErrorKind::InvalidRule {
                    rule: r.chars().take(256).collect(),
                    reason,
                }
                .into()
            };
            if r.is_empty() {
                return Err(bad("empty"));
            }
            if r.len() > MAX_RULE_LEN {
                return Err(bad("longer than the limit"));
            }
            if r.contains('\0') {
                return Err(bad("contains a NUL byte"));
            }
            if r.contains('[') {
                return Err(bad("character classes are not supported"));
            }
            if r.starts_with('/') {
                if let Some(deep) = DeepRule::new(r) {
                    out.deep_paths.push(deep);
                } else if r.contains(['*', '?']) {
                    out.paths.push(r.as_bytes().to_vec());
                } else {
                    out.literal_paths.insert(r.as_bytes().to_ascii_lowercase());
                }
            } else if r.contains('/') {
                return Err(bad("a relative rule may not contain '/'"));
            } else {
                out.globs.push(r.as_bytes().to_vec());
            }
        }
        Ok(out)
    }

    /// Adds one absolute-path rule to rules already in force (a running
    /// guard's update, [`sandbox_core::GuardUpdate::Deny`]). The path is
    /// taken as given: an update's path has no wildcard meaning, so a `*`
    /// in it is literal. Refused past [`MAX_RULES`] or [`MAX_RULE_LEN`],
    /// or for a relative path or one with a NUL byte.
    pub fn add_path(&mut self, path: &[u8]) -> Result<(), Error> {
        let count =
            self.globs.len() + self.paths.len() + self.deep_paths.len() + self.literal_paths.len();
        if count >= MAX_RULES {
            return Err(ErrorKind::TooManyRules { limit: MAX_RULES }.into());
        }
        if !path.starts_with(b"/") || path.contains(&0) || path.len() > MAX_RULE_LEN {
            return Err(ErrorKind::InvalidRule {
                rule: String::from_utf8_lossy(&path[..path.len().min(256)]).into_owned(),
                reason: "an added rule must be an absolute path within the length limit",
            }
            .into());
        }
        self.literal_paths.insert(path.to_ascii_lowercase());
        Ok(())
    }

    /// Denies every name from now on: what a guard does when it cannot
    /// take on a rule it was sent (it fails closed).
    pub fn deny_every_name(&mut self) {
        self.globs.push(b"*".to_vec());
        self.state_dirs.clear();
        self.tool_dirs.clear();
    }

    /// Marks the names of the directories package managers own (one path
    /// component each, such as `node_modules`): the name rules do not hold
    /// for a name made below a directory of such a name, compared ignoring
    /// ASCII case; the path rules still do. At most
    /// [`sandbox_core::NameGuardInvocation::MAX_TOOL_DIRS`].
    ///
    /// ```
    /// use name_guard::Rules;
    /// let mut rules = Rules::new(["*.pem"])?;
    /// rules.tool_dirs(["site-packages"])?;
    /// assert!(rules.in_tool_dir(b"/w/v/lib/python3/site-packages/certifi/cacert.pem"));
    /// assert!(!rules.in_tool_dir(b"/w/site-packages"));
    /// assert!(rules.at_or_in_tool_dir(b"/w/site-packages"));
    /// assert!(!rules.in_tool_dir(b"/w/my-site-packages/x.pem"));
    /// # Ok::<(), name_guard::Error>(())
    /// ```
    pub fn tool_dirs<I, S>(&mut self, names: I) -> Result<&mut Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        for (count, n) in names.into_iter().enumerate() {
            let n = n.as_ref();
            if count >= sandbox_core::NameGuardInvocation::MAX_TOOL_DIRS
                || n.is_empty()
                || n.len() > sandbox_core::NameGuardInvocation::MAX_TOOL_DIR_LEN
                || n.contains(&b'/')
                || n.contains(&0)
                || n == b"."
                || n == b".."
            {
                return Err(ErrorKind::InvalidRule {
                    rule: String::from_utf8_lossy(&n[..n.len().min(256)]).into_owned(),
                    reason: "a tool directory is one directory name, within the limits",
                }
                .into());
            }
            self.tool_dirs.push(n.to_ascii_lowercase());
        }
        Ok(self)
    }

    /// Whether some tool directory name is set.
    pub fn has_tool_dirs(&self) -> bool {
        !self.tool_dirs.is_empty()
    }

    /// Whether a directory on the way to the absolute path `path` (not its
    /// final component) has a tool directory's name.
    pub fn in_tool_dir(&self, path: &[u8]) -> bool {
        let mut parts: Vec<&[u8]> = path
            .split(|b| *b == b'/')
            .filter(|c| !c.is_empty())
            .collect();
        parts.pop();
        self.any_tool_dir(&parts)
    }

    /// Whether `path` has a tool directory's name or lies below one: the
    /// side of a rename that must not cross.
    pub fn at_or_in_tool_dir(&self, path: &[u8]) -> bool {
        let parts: Vec<&[u8]> = path
            .split(|b| *b == b'/')
            .filter(|c| !c.is_empty())
            .collect();
        self.any_tool_dir(&parts)
    }

    fn any_tool_dir(&self, parts: &[&[u8]]) -> bool {
        parts
            .iter()
            .any(|c| self.tool_dirs.iter().any(|t| c.eq_ignore_ascii_case(t)))
    }

    /// Marks the runner's state directories (absolute paths, as the guard
    /// sees them): the name rules (globs on the final component) do not
    /// hold strictly inside them, so the runner may keep its own keys
    /// there; the path rules still do. At most
    /// [`sandbox_core::NameGuardInvocation::MAX_STATE_DIRS`].
    ///
    /// ```
    /// use name_guard::Rules;
    /// let mut rules = Rules::new(["*.key"])?;
    /// rules.state_dirs(["/home/u/.config/agent"])?;
    /// assert!(rules.in_state_dir(b"/home/u/.config/agent/sessions/1.key"));
    /// assert!(!rules.in_state_dir(b"/home/u/.config/agent"));
    /// assert!(!rules.in_state_dir(b"/home/u/.config/agent2/x.key"));
    /// # Ok::<(), name_guard::Error>(())
    /// ```
    pub fn state_dirs<I, S>(&mut self, dirs: I) -> Result<&mut Self, Error>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        for (count, d) in dirs.into_iter().enumerate() {
            let d = d.as_ref();
            let bad = |reason: &'static str| -> Error {
                ErrorKind::InvalidRule {
                    rule: String::from_utf8_lossy(&d[..d.len().min(256)]).into_owned(),
                    reason,
                }
                .into()
            };
            if count >= sandbox_core::NameGuardInvocation::MAX_STATE_DIRS {
                return Err(bad("more state directories than the limit"));
            }
            if !d.starts_with(b"/") || d.contains(&0) || d.len() > MAX_RULE_LEN {
                return Err(bad(
                    "a state directory must be an absolute path within the length limit",
                ));
            }
            let mut d = d.to_vec();
            while d.len() > 1 && d.last() == Some(&b'/') {
                d.pop();
            }
            self.state_dirs.push(d);
        }
        Ok(self)
    }

    /// Whether some state directory is set.
    pub fn has_state_dirs(&self) -> bool {
        !self.state_dirs.is_empty()
    }

    /// Whether the absolute path `path` lies strictly inside a state
    /// directory, where the name rules do not hold.
    pub fn in_state_dir(&self, path: &[u8]) -> bool {
        self.state_dirs.iter().any(|d| {
            path.len() > d.len()
                && path.starts_with(d)
                && (d.as_slice() == b"/" || path[d.len()] == b'/')
        })
    }

    /// Whether the absolute path `path` is a state directory or lies inside
    /// one: the side of a rename that must not cross.
    pub fn at_or_in_state_dir(&self, path: &[u8]) -> bool {
        self.in_state_dir(path) || self.state_dirs.iter().any(|d| d.as_slice() == path)
    }

    /// Whether no rule is set.
    pub fn is_empty(&self) -> bool {
        self.globs.is_empty() && !self.has_path_rules()
    }

    /// Whether some rule has the form of an absolute path.
    pub fn has_path_rules(&self) -> bool {
        !self.paths.is_empty() || !self.deep_paths.is_empty() || !self.literal_paths.is_empty()
    }

    /// Whether creating the final component `name` is denied by a glob.
    pub fn denies_name(&self, name: &[u8]) -> bool {
        self.globs.iter().any(|g| glob_match(g, name))
    }

    /// Whether some path rule lies strictly below the absolute path `path`
    /// (`/w/.claude` for the rule `/w/.claude/settings.json`): moving a
    /// directory, or a symbolic link, into that name would bring a denied
    /// path into being without creating it. Compared component by
    /// component, wildcards matching as in a rule. A rule with `**` is not
    /// looked at here: like a name rule, it holds where a name is made,
    /// not where a directory holding one is moved.
    pub fn denies_ancestor(&self, path: &[u8]) -> bool {
        let parts = |p: &'_ [u8]| -> Vec<Vec<u8>> {
            p.split(|&c| c == b'/')
                .filter(|c| !c.is_empty())
                .map(<[u8]>::to_vec)
                .collect()
        };
        let pc = parts(path);
        let below = |rule: &Vec<u8>| {
            let rc = parts(rule);
            rc.len() > pc.len() && rc.iter().zip(&pc).all(|(r, p)| glob_match(r, p))
        };
        self.literal_paths.iter().any(below) || self.paths.iter().any(below)
    }

    /// Whether creating the absolute path `path` is denied by a path rule.
    pub fn denies_path(&self, path: &[u8]) -> bool {
        (!self.literal_paths.is_empty() && self.literal_paths.contains(&path.to_ascii_lowercase()))
            || self.paths.iter().any(|g| glob_match(g, path))
            || (!self.deep_paths.is_empty() && {
                let parts: Vec<&[u8]> = path
                    .split(|&c| c == b'/')
                    .filter(|c| !c.is_empty())
                    .collect();
                self.deep_paths.iter().any(|d| d.matches(&parts))
            })
    }
}

/// An absolute-path rule with one `**` component before its last, which
/// stands for any number of directories (none included): `/w/**/*.pem`
/// denies `x.pem` anywhere below `/w`. Elsewhere (inside a name, as the
/// last component, or twice) `**` is two `*`, which match as one.
#[derive(Clone, Debug, PartialEq, Eq)]
struct DeepRule {
    before: Vec<Vec<u8>>,
    after: Vec<Vec<u8>>,
}

impl DeepRule {
    /// The rule, when it has that form.
    fn new(rule: &str) -> Option<DeepRule> {
        let parts: Vec<&str> = rule.split('/').filter(|c| !c.is_empty()).collect();
        let mut deep = parts.iter().enumerate().filter(|(_, c)| **c == "**");
        let (at, _) = deep.next()?;
        if deep.next().is_some() || at + 1 == parts.len() {
            return None;
        }
        let bytes = |s: &[&str]| s.iter().map(|c| c.as_bytes().to_vec()).collect();
        Some(DeepRule {
            before: bytes(&parts[..at]),
            after: bytes(&parts[at + 1..]),
        })
    }

    /// Whether the components of an absolute path match.
    fn matches(&self, parts: &[&[u8]]) -> bool {
        let (b, a) = (self.before.len(), self.after.len());
        parts.len() >= b + a
            && self.before.iter().zip(parts).all(|(r, p)| glob_match(r, p))
            && self
                .after
                .iter()
                .zip(&parts[parts.len() - a..])
                .all(|(r, p)| glob_match(r, p))
    }
}

/// Iterative glob match with `*` and `?`, neither crossing `/`; linear
/// backtracking on the last `*` only, so the cost is O(len(p) * len(s)).
fn glob_match(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(&c) if (c == b'?' && s[si] != b'/') || c.eq_ignore_ascii_case(&s[si]) => {
                pi += 1;
                si += 1;
            }
            _ => match star {
                Some((sp, ss)) if s[ss] != b'/' => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                _ => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curated_globs() {
        let r = Rules::new([".env", "*.key", "*.pem"]).unwrap();
        for n in [
            ".env", "x.pem", "id.key", ".key", "a.b.pem", "x.PEM", ".ENV", "ID.Key", ".Env",
            "a.pEm",
        ] {
            assert!(r.denies_name(n.as_bytes()), "{n}");
        }
        for n in [
            "env",
            ".env.example",
            ".ENV.example",
            "x.pem.bak",
            "key",
            "a.keys",
            "A.KEYS",
            ".",
            // Not ASCII: the Kelvin sign is not `k`.
            "id.\u{212a}ey",
        ] {
            assert!(!r.denies_name(n.as_bytes()), "{n}");
        }
    }

    #[test]
    fn path_rules_and_star_does_not_cross_slash() {
        let r = Rules::new(["/w/.git/hooks/*"]).unwrap();
        assert!(r.denies_path(b"/w/.git/hooks/pre-commit"));
        assert!(!r.denies_path(b"/w/.git/hooks/a/b"));
        assert!(r.denies_path(b"/W/.GIT/Hooks/Pre-Commit"));
        assert!(!r.denies_path(b"/w/.git/hookz/pre-commit"));
        assert!(r.has_path_rules());
    }

    #[test]
    fn a_deep_rule_matches_at_any_depth_below_its_base() {
        let r = Rules::new(["/w/**/*.pem", "/w/x/**/secret/*.key"]).unwrap();
        for (path, want) in [
            ("/w/a.pem", true),
            ("/w/certs/a.PEM", true),
            ("/w/a/b/c/d.pem", true),
            ("/other/a.pem", false),
            ("/w/a.pem.txt", false),
            ("/w", false),
            ("/w/x/secret/k.key", true),
            ("/w/x/1/2/secret/k.key", true),
            ("/w/x/secret.key", false),
            ("/w/y/secret/k.key", false),
        ] {
            assert_eq!(r.denies_path(path.as_bytes()), want, "{path}");
        }
        // Like a name rule, not where a directory holding a match is moved.
        assert!(!r.denies_ancestor(b"/w/certs"));
        // Anywhere else `**` is two `*`: one name.
        let r = Rules::new(["/w/a**/x", "/v/**"]).unwrap();
        assert!(r.denies_path(b"/w/ab/x") && !r.denies_path(b"/w/a/b/x"));
        assert!(r.denies_path(b"/v/k") && !r.denies_path(b"/v/k/l"));
    }

    #[test]
    fn literal_path_rules_are_a_set_lookup() {
        let mut rules: Vec<String> = (0..4000).map(|i| format!("/w/repo{i}/.vscode")).collect();
        rules.push("/w/.claude/settings.json".into());
        let r = Rules::new(&rules).unwrap();
        assert!(r.has_path_rules());
        assert!(r.denies_path(b"/w/repo3999/.vscode"));
        assert!(r.denies_path(b"/W/REPO17/.VSCode"));
        assert!(r.denies_path(b"/w/.claude/settings.json"));
        assert!(!r.denies_path(b"/w/repo4000/.vscode"));
        assert!(!r.denies_path(b"/w/repo1/.vscodex"));
        assert!(!r.denies_path(b"/w/repo1"));
        assert!(!r.denies_name(b".vscode"), "a path rule is not a name rule");
    }

    #[test]
    fn ancestors_of_path_rules() {
        let r = Rules::new(["/w/.claude/settings.json", "/w/.git/hooks/*"]).unwrap();
        for p in [
            "/w/.claude",
            "/W/.Claude/",
            "/w/.git",
            "/w/.git/hooks",
            "/w",
            "/",
        ] {
            assert!(r.denies_ancestor(p.as_bytes()), "{p}");
        }
        for p in [
            "/w/.claude/settings.json",
            "/w/.claudex",
            "/w/.git/hooks/pre-commit",
            "/w/other",
            "/x",
        ] {
            assert!(!r.denies_ancestor(p.as_bytes()), "{p}");
        }
        assert!(!Rules::new([".env"]).unwrap().denies_ancestor(b"/w"));
    }

    #[test]
    fn refusals() {
        assert!(Rules::new([""]).is_err());
        assert!(Rules::new(["a/b"]).is_err());
        assert!(Rules::new(["[ab]"]).is_err());
        assert!(Rules::new(std::iter::repeat_n("a", MAX_RULES + 1)).is_err());
        assert!(Rules::new(Vec::<String>::new()).unwrap().is_empty());
    }
}
