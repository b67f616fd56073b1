//! Shared by the test modules: the tables' loader, push bodies from
//! pkt-line notation, and a scratch repository driven by real `git`.

use push_rule::{
    GitLimits, ObjectFormat, ObjectId, PackSpool, Pkt, PushDecision, PushRule, PushRuleSpec,
    parse_receive_pack, write_pkt,
};
use serde::de::DeserializeOwned;
use std::io::Write;
use std::process::Command;

/// The cases of a table under `testdata/`.
pub(crate) fn load<T: DeserializeOwned>(name: &str) -> Vec<T> {
    test_support::cases::load(test_support::testdata_dir!(), name)
}

pub(crate) use test_support::cases::variant;

pub(crate) fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub(crate) fn expand(s: &str) -> String {
    s.replace("{A64}", &"a".repeat(64))
        .replace("{B64}", &"b".repeat(64))
        .replace("{Z64}", &"0".repeat(64))
        .replace("{AH}", &"61".repeat(40))
        .replace("{BH}", &"62".repeat(40))
        .replace("{A}", &"a".repeat(40))
        .replace("{B}", &"b".repeat(40))
        .replace("{C}", &"c".repeat(40))
        .replace("{Z}", &"0".repeat(40))
}

pub(crate) fn body_of(pkts: &[String]) -> Vec<u8> {
    let mut out = Vec::new();
    for p in pkts {
        let p = expand(p);
        if p == "flush" {
            out.extend_from_slice(b"0000");
        } else if p == "delim" {
            out.extend_from_slice(b"0001");
        } else if let Some(raw) = p.strip_prefix("raw:") {
            out.extend_from_slice(raw.as_bytes());
        } else if let Some(h) = p.strip_prefix("rawhex:") {
            out.extend(hex(h));
        } else {
            let data = match p.strip_prefix("hexpkt:") {
                Some(h) => hex(h),
                None => p.into_bytes(),
            };
            write_pkt(&mut out, Pkt::Data(&data)).unwrap();
        }
    }
    out
}

pub(crate) fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

pub(crate) struct Repo {
    pub(crate) dir: tempfile::TempDir,
    format: ObjectFormat,
}

pub(crate) fn git_available() -> bool {
    test_support::tool("git", "apt-get install git").is_some()
}

impl Repo {
    pub(crate) fn new(format: ObjectFormat) -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repo { dir, format };
        let f = match format {
            ObjectFormat::Sha256 => "sha256",
            _ => "sha1",
        };
        repo.git(&[
            "init",
            "-q",
            "-b",
            "main",
            &format!("--object-format={f}"),
            ".",
        ]);
        repo
    }

    pub(crate) fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("git");
        c.args(args)
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .env("GIT_AUTHOR_DATE", "2024-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2024-01-01T00:00:00Z");
        c
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        let out = self.cmd(args).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    /// Commits a file change with a message; returns the commit id.
    pub(crate) fn commit(&self, file: &str, content: &str, message: &str) -> String {
        std::fs::write(self.dir.path().join(file), content).unwrap();
        self.git(&["add", file]);
        self.git(&["commit", "-q", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// `git pack-objects --stdout --revs` of `new` minus `old`.
    pub(crate) fn pack(&self, new: &str, old: Option<&str>, extra: &[&str]) -> Vec<u8> {
        let mut args = vec!["pack-objects", "--stdout", "--revs", "-q"];
        args.extend_from_slice(extra);
        let mut child = self
            .cmd(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut input = format!("{new}\n");
        if let Some(old) = old {
            input.push_str(&format!("^{old}\n"));
        }
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        out.stdout
    }

    pub(crate) fn id(&self, hex: &str) -> ObjectId {
        ObjectId::from_hex(hex.as_bytes(), self.format).unwrap()
    }

    /// Object type and delta depth per commit, from `git verify-pack -v`.
    pub(crate) fn delta_commits(&self, pack: &[u8]) -> usize {
        let path = self.dir.path().join("probe.pack");
        std::fs::write(&path, pack).unwrap();
        self.git(&["index-pack", "probe.pack"]);
        let out = self.git(&["verify-pack", "-v", "probe.idx"]);
        out.lines()
            .filter(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.len() == 7 && cols[1] == "commit"
            })
            .count()
    }
}

pub(crate) fn push_body(
    format: ObjectFormat,
    updates: &[(&str, &str, &str)],
    caps: &str,
) -> Vec<u8> {
    let zero = "0".repeat(format.hex_len());
    let mut pkts = Vec::new();
    for (i, (old, new, name)) in updates.iter().enumerate() {
        let old = if old.is_empty() { zero.as_str() } else { old };
        let new = if new.is_empty() { zero.as_str() } else { new };
        let mut line = format!("{old} {new} {name}");
        if i == 0 {
            line.push('\0');
            line.push_str(caps);
        }
        pkts.push(line);
    }
    pkts.push("flush".to_owned());
    body_of(&pkts)
}

pub(crate) fn rule(spec: &str) -> PushRule {
    PushRule::compile(&PushRuleSpec::from_toml(spec).unwrap(), "s1").unwrap()
}

/// Spools `pack`, parses `body` and checks it with `rule`.
pub(crate) fn judge(rule: &PushRule, body: &[u8], pack: &[u8], limits: &GitLimits) -> PushDecision {
    let rp = parse_receive_pack(body, limits).unwrap();
    let mut spool = PackSpool::new(limits);
    for chunk in pack.chunks(1000) {
        spool.write(chunk).unwrap();
    }
    rule.check_spooled(&rp, &mut spool, limits)
}

pub(crate) const RULE: &str = r#"refs = ["refs/heads/agent/{session}/**"]"#;
