//! The launcher on the host with `--landlock`, no bubblewrap: the TCP
//! connect race (the address is decided and used once, by the supervisor).

use crate::support::{GUARD, attack};
use std::io::Read;
use std::net::TcpListener;
use std::process::Command;

fn landlock_available() -> bool {
    use sandbox_core::HostView;
    let tried = sandbox_core::AmbientHost::from_ambient_untimed().try_landlock();
    test_support::require(
        tried.is_ok(),
        &format!("Landlock ABI 6 or later ({tried:?})"),
        "run the tests on Linux 6.12 or later with Landlock among the active LSMs",
    )
}

#[test]
fn a_thread_rewriting_the_tcp_address_never_reaches_the_rewritten_port() {
    if !landlock_available() {
        return;
    }
    let good = TcpListener::bind("127.0.0.1:0").unwrap();
    let bad = TcpListener::bind("127.0.0.1:0").unwrap();
    bad.set_nonblocking(true).unwrap();
    let (gp, bp) = (
        good.local_addr().unwrap().port(),
        bad.local_addr().unwrap().port(),
    );
    // Keep the allowed listener's backlog empty.
    std::thread::spawn(move || {
        for s in good.incoming() {
            drop(s);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(GUARD)
        .arg("--landlock")
        .arg("--write")
        .arg(dir.path())
        .args(["--connect-tcp", &gp.to_string(), "--"])
        .arg(attack())
        .args(["tcp_race", &gp.to_string(), &bp.to_string(), "100000"])
        .env("NAME_GUARD_STATS", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let nums: Vec<u32> = stdout
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .map(|w| w.parse().unwrap())
        .collect();
    let (connected, refused) = (nums[0], nums[1]);
    assert_eq!(connected + refused, 100_000, "{stdout}");
    // Both ports were seen, and no connection reached the rewritten one.
    assert!(connected > 0 && refused > 0, "{stdout}");
    let mut reached = 0;
    while let Ok((mut s, _)) = bad.accept() {
        let mut b = [0u8; 1];
        let _ = s.read(&mut b);
        reached += 1;
    }
    assert_eq!(reached, 0, "{stdout}");
}
