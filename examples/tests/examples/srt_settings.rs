//! `agent-run --settings FILE` with sandbox-runtime settings files, each
//! run confined for real: an allowed and a denied host, a denied read and
//! what is read again inside it, an allowed and a denied write.

use std::io::{Read, Write};
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_agent-run");

/// One settings file, and what the run under it must and must not show.
struct Case {
    intent: &'static str,
    settings: &'static str,
    /// The exit status agent-run must end with.
    exit: i32,
    shows: &'static [&'static str],
    never: &'static [&'static str],
    /// Flags given on the command line besides the file.
    args: &'static [&'static str],
    /// A part of stderr.
    says: &'static str,
    /// Whether out/keep and the working directory's top stay as they were.
    host_unchanged: bool,
}

const SCRIPT: &str = "curl -sS -m 10 http://localhost:PORT/; echo; \
    curl -s -m 10 -o /dev/null -w 'code=%{http_code}\\n' http://denied.example.test/; \
    cat secrets/key.txt 2>/dev/null || echo READ-DENIED; \
    cat secrets/pub/readme; echo; \
    echo new > out/new.txt && echo OUT-WRITTEN; \
    echo x > top.txt 2>/dev/null || echo TOP-REFUSED; \
    echo y >> out/keep 2>/dev/null || echo KEEP-REFUSED; true";

const CASES: &[Case] = &[
    Case {
        intent: "hosts, reads and writes as the file lists them (loopback granted on the \
                 command line, which adds to the file)",
        settings: r#"{"network": {"allowedDomains": ["localhost"], "deniedDomains": []},
            "filesystem": {"denyRead": ["secrets"], "allowRead": ["secrets/pub"],
                           "allowWrite": ["out"], "denyWrite": ["out/keep"]}}"#,
        exit: 0,
        shows: &[
            "origin",
            "code=403",
            "READ-DENIED",
            "PUBLIC",
            "OUT-WRITTEN",
            "TOP-REFUSED",
            "KEEP-REFUSED",
        ],
        never: &["TOP-SECRET"],
        args: &["--allow-cidr", "127.0.0.1/32"],
        says: "violation: network-outbound denied.example.test",
        host_unchanged: true,
    },
    Case {
        intent: "an empty allowlist reaches no host, an empty allowWrite writes nowhere",
        settings: r#"{"network": {"allowedDomains": [], "deniedDomains": []},
            "filesystem": {"denyRead": [], "allowWrite": [], "denyWrite": []}}"#,
        exit: 0,
        shows: &["code=403", "TOP-REFUSED", "TOP-SECRET"],
        never: &["origin", "OUT-WRITTEN"],
        args: &[],
        says: "violation: network-outbound localhost",
        host_unchanged: true,
    },
    Case {
        intent: "a denied * is no network at all, whatever is allowed",
        settings: r#"{"network": {"allowedDomains": ["localhost"], "deniedDomains": ["*"]},
            "filesystem": {"denyRead": [], "allowWrite": ["."], "denyWrite": []}}"#,
        exit: 0,
        shows: &["OUT-WRITTEN"],
        never: &["origin"],
        args: &[],
        says: "",
        host_unchanged: false,
    },
    Case {
        intent: "a key we cannot honour stops the run before anything runs",
        settings: r#"{"network": {"allowedDomains": [], "deniedDomains": [], "httpProxyPort": 3128},
            "filesystem": {"denyRead": [], "allowWrite": [], "denyWrite": []}}"#,
        exit: 2,
        shows: &[],
        never: &["code="],
        args: &[],
        says: "network.httpProxyPort/socksProxyPort: the session's own proxies",
        host_unchanged: true,
    },
    Case {
        intent: "an empty settings file is refused, as sandbox-runtime refuses it",
        settings: "",
        exit: 2,
        shows: &[],
        never: &["code="],
        args: &[],
        says: "the settings file is empty",
        host_unchanged: true,
    },
];

#[test]
fn sandbox_runtime_settings_files_hold_in_real_confined_runs() {
    if !test_support::require(
        sandbox_core::probe_ambient().native.mechanism
            == Some(sandbox_core::NativeMechanism::Bubblewrap),
        "bubblewrap (the native sandbox's namespace mechanism)",
        "apt-get install bubblewrap",
    ) || test_support::tool("curl", "apt-get install curl").is_none()
    {
        return;
    }
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut s in l.incoming().flatten() {
            let mut buf = [0u8; 2048];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\norigin",
            );
        }
    });
    let script = SCRIPT.replace("PORT", &port.to_string());
    for (i, c) in CASES.iter().enumerate() {
        let d = std::env::temp_dir().join(format!("agent-run-srt-{i}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("secrets/pub")).unwrap();
        std::fs::create_dir_all(d.join("out")).unwrap();
        std::fs::create_dir_all(d.join("home")).unwrap();
        std::fs::write(d.join("secrets/key.txt"), "TOP-SECRET").unwrap();
        std::fs::write(d.join("secrets/pub/readme"), "PUBLIC").unwrap();
        std::fs::write(d.join("out/keep"), "KEEP").unwrap();
        let file = d.join("home/srt-settings.json");
        std::fs::write(&file, c.settings).unwrap();
        let o = Command::new(BIN)
            .arg("--settings")
            .arg(&file)
            .args(c.args)
            .args(["--", "sh", "-c", &script])
            .current_dir(&d)
            .env("HOME", d.join("home"))
            .env_remove("CC_SERVER_SANDBOX")
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        let err = String::from_utf8_lossy(&o.stderr);
        let intent = c.intent;
        assert_eq!(o.status.code(), Some(c.exit), "{intent}:\n{out}\n{err}");
        for s in c.shows {
            assert!(out.contains(s), "{intent}: {s} missing:\n{out}\n{err}");
        }
        for s in c.never {
            assert!(!out.contains(s), "{intent}: {s} shown:\n{out}\n{err}");
        }
        assert!(
            err.contains(c.says),
            "{intent}: {:?} missing:\n{err}",
            c.says
        );
        // Nothing the sandbox was refused reached the host.
        if c.host_unchanged {
            assert_eq!(std::fs::read_to_string(d.join("out/keep")).unwrap(), "KEEP");
            assert!(!d.join("top.txt").exists(), "{intent}");
        }
        std::fs::remove_dir_all(&d).unwrap();
    }
}

/// Whether the Landlock mechanism runs here (a failing requirement
/// otherwise, with what to run on).
fn landlock() -> bool {
    use sandbox_core::HostView;
    let tried = sandbox_core::AmbientHost::from_ambient_untimed().try_landlock();
    test_support::require(
        tried.is_ok(),
        &format!("Landlock ABI 6 or later ({tried:?})"),
        "run the tests on Linux 6.12 or later with Landlock among the active LSMs (lsm=...,landlock)",
    )
}

/// The native mechanisms this host runs: bubblewrap, and Landlock where
/// the kernel has it.
fn mechanisms() -> Vec<&'static str> {
    let mut m = vec!["bubblewrap"];
    if landlock() {
        m.push("landlock");
    }
    m
}

/// Makes a tree named by `tag` holding `files` (each parent made) and a
/// home with the settings file, runs `script` through `agent-run
/// --settings` under `mechanism` there, and requires exit status 0.
/// Returns the tree (for the caller to look at and remove) and the
/// command's stdout and stderr.
fn run_in_tree(
    tag: &str,
    mechanism: &str,
    settings: &str,
    script: &str,
    files: &[(&str, &str)],
) -> (std::path::PathBuf, String, String) {
    let d = std::env::temp_dir().join(format!("agent-run-srt-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("home")).unwrap();
    for (path, text) in files {
        let path = d.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let file = d.join("home/srt-settings.json");
    std::fs::write(&file, settings).unwrap();
    let o = Command::new(BIN)
        .arg("--settings")
        .arg(&file)
        .args(["--mechanism", mechanism, "--", "sh", "-c", script])
        .current_dir(&d)
        .env("HOME", d.join("home"))
        .env_remove("CC_SERVER_SANDBOX")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{mechanism}:\n{out}\n{err}");
    (d, out, err)
}

/// The settings a migrating user has: `./out/**` writable (the directory
/// itself) and `./certs/*.pem` unreadable, under each mechanism: the match
/// that exists reads as nothing, a new match can be neither created
/// (directly, by a rename, or in a new directory) nor read, other files of
/// the directory stay readable, and `out` is writable while the working
/// directory's top is not.
#[test]
fn a_read_deny_glob_and_a_directory_glob_hold_under_each_mechanism() {
    if !test_support::require(
        sandbox_core::probe_ambient().native.available,
        "a native sandbox (bubblewrap and socat)",
        "apt-get install bubblewrap socat",
    ) {
        return;
    }
    let settings = r#"{"network": {"allowedDomains": [], "deniedDomains": []},
        "filesystem": {"denyRead": ["./certs/*.pem"], "allowWrite": ["./out/**", "./certs"],
                       "denyWrite": []}}"#;
    let script = "cat certs/site.pem 2>/dev/null | grep -q PRIVATE && echo EXISTING-READ; \
        cat certs/UPPER.PEM 2>/dev/null | grep -q PRIVATE && echo UPPER-READ; \
        cat certs/readme.txt; echo; \
        echo new > certs/new.pem 2>/dev/null && echo NEW-CREATED; \
        cat certs/new.pem 2>/dev/null && echo NEW-READ; \
        echo x > certs/plain.txt && mv certs/plain.txt certs/moved.pem 2>/dev/null && echo RENAMED; \
        mkdir -p out/d && echo k > out/d/x.pem 2>/dev/null && mv out/d certs/d.pem 2>/dev/null \
          && echo DIR-MOVED; \
        echo w > out/w.txt && echo OUT-WRITTEN; \
        echo x > top.txt 2>/dev/null || echo TOP-REFUSED; true";
    for mechanism in mechanisms() {
        let (d, out, err) = run_in_tree(
            &format!("glob-{mechanism}"),
            mechanism,
            settings,
            script,
            &[
                ("certs/site.pem", "PRIVATE KEY"),
                ("certs/UPPER.PEM", "PRIVATE KEY"),
                ("certs/readme.txt", "README-SHOWN"),
                ("out/.keep", ""),
            ],
        );
        for s in ["README-SHOWN", "OUT-WRITTEN", "TOP-REFUSED"] {
            assert!(out.contains(s), "{mechanism}: {s} missing:\n{out}\n{err}");
        }
        for s in [
            "EXISTING-READ",
            "UPPER-READ",
            "NEW-CREATED",
            "NEW-READ",
            "RENAMED",
            "DIR-MOVED",
        ] {
            assert!(!out.contains(s), "{mechanism}: {s} shown:\n{out}\n{err}");
        }
        assert!(
            err.contains("violation: file-write-create") && err.contains("new.pem"),
            "{mechanism}: the refused creation is reported:\n{err}"
        );
        // On the host: the existing matches as they were, no new match.
        assert_eq!(
            std::fs::read_to_string(d.join("certs/site.pem")).unwrap(),
            "PRIVATE KEY"
        );
        for gone in ["certs/new.pem", "certs/moved.pem", "certs/d.pem", "top.txt"] {
            assert!(!d.join(gone).exists(), "{mechanism}: {gone} was made");
        }
        assert!(d.join("out/w.txt").exists(), "{mechanism}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}

#[test]
fn a_read_deny_glob_with_double_star_holds_at_every_depth_under_each_mechanism() {
    if !test_support::require(
        sandbox_core::probe_ambient().native.available,
        "a native sandbox (bubblewrap and socat)",
        "apt-get install bubblewrap socat",
    ) {
        return;
    }
    // A name the default filename rules do not cover, so that only the
    // settings file's glob refuses it.
    let settings = r#"{"network": {"allowedDomains": [], "deniedDomains": []},
        "filesystem": {"denyRead": ["**/*.secret"], "allowWrite": ["./out/**"],
                       "denyWrite": []}}"#;
    let script = "cat top.secret 2>/dev/null | grep -q HIDDEN && echo TOP-READ; \
        cat deep/a/b/k.secret 2>/dev/null | grep -q HIDDEN && echo DEEP-READ; \
        cat deep/a/b/notes.txt; echo; \
        mkdir -p out/x/y && echo new > out/x/y/new.secret 2>/dev/null && echo NEW-CREATED; \
        echo x > out/plain.txt && mv out/plain.txt out/moved.secret 2>/dev/null && echo RENAMED; \
        echo w > out/w.txt && echo OUT-WRITTEN; true";
    for mechanism in mechanisms() {
        let (d, out, err) = run_in_tree(
            &format!("deep-{mechanism}"),
            mechanism,
            settings,
            script,
            &[
                ("top.secret", "HIDDEN"),
                ("deep/a/b/k.secret", "HIDDEN"),
                ("deep/a/b/notes.txt", "NOTES-SHOWN"),
                ("out/.keep", ""),
            ],
        );
        for s in ["NOTES-SHOWN", "OUT-WRITTEN"] {
            assert!(out.contains(s), "{mechanism}: {s} missing:\n{out}\n{err}");
        }
        for s in ["TOP-READ", "DEEP-READ", "NEW-CREATED", "RENAMED"] {
            assert!(!out.contains(s), "{mechanism}: {s} shown:\n{out}\n{err}");
        }
        assert!(
            err.contains("violation: file-write-create") && err.contains("new.secret"),
            "{mechanism}: the refused creation is reported:\n{err}"
        );
        for gone in ["out/x/y/new.secret", "out/moved.secret"] {
            assert!(!d.join(gone).exists(), "{mechanism}: {gone} was made");
        }
        assert_eq!(
            std::fs::read_to_string(d.join("deep/a/b/k.secret")).unwrap(),
            "HIDDEN"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
