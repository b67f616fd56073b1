//! Unix sockets under the guard: by path, the guarded tree reaches only the
//! sockets it bound itself. A socket a host process makes in the writable
//! directory (the worktree) is refused, through any name for it; the
//! tree's own sockets and TCP work as before.

use crate::support::*;
use std::io::ErrorKind;
use std::os::unix::fs::symlink;
use std::os::unix::net::UnixListener;

/// Every connection `l` has waiting, accepted and counted.
fn accepted(l: &UnixListener) -> usize {
    let mut n = 0;
    loop {
        match l.accept() {
            Ok(_) => n += 1,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return n,
            Err(e) => panic!("accept: {e}"),
        }
    }
}

fn get(got: &[(String, String)], k: &str) -> String {
    got.iter()
        .find(|(a, _)| a == k)
        .map(|(_, b)| b.clone())
        .unwrap_or_default()
}

#[test]
fn a_host_socket_in_the_writable_directory_is_unreachable_and_the_trees_own_work() {
    let Some(sb) = Sandbox::new() else { return };
    let d = sb.path();
    let host = UnixListener::bind(d.join("host.sock")).unwrap();
    host.set_nonblocking(true).unwrap();
    symlink("host.sock", d.join("link.sock")).unwrap();
    std::fs::create_dir(d.join("sub")).unwrap();
    let abs = d.join("host.sock");
    let abs = abs.to_str().unwrap();
    let mut cases = Vec::new();
    for op in ["connect_unix", "connect_unix_nonblock"] {
        for p in ["host.sock", "./link.sock", "sub/../host.sock", abs] {
            cases.push((format!("{op} {p}"), format!("{op} '{p}'")));
        }
    }
    cases.push(("own".to_string(), "serve_connect own.sock".to_string()));
    cases.push((
        "missing".to_string(),
        "connect_unix nothing.sock".to_string(),
    ));
    cases.push(("not a socket".to_string(), "connect_unix sub".to_string()));
    let out = sb.sh(&script_of(&cases));
    let got = results(&out);
    for (label, _) in &cases[..8] {
        assert_eq!(get(&got, label), "err EACCES", "{label}: {got:?}");
    }
    assert_eq!(get(&got, "own"), "ok", "{got:?}");
    assert_eq!(get(&got, "missing"), "err ENOENT", "{got:?}");
    assert_eq!(get(&got, "not a socket"), "err ECONNREFUSED", "{got:?}");
    assert_eq!(
        accepted(&host),
        0,
        "a refused connect reached the host socket"
    );
    // Eight refusals, counted by the supervisor.
    assert!(guard_stats(&out).1 >= 8, "{:?}", guard_stats(&out));

    // Without the guard the same socket is reachable: what the guard closes.
    let out = sb.sh_with(false, "printf 'bare: '; \"$ATTACK\" connect_unix host.sock");
    assert_eq!(get(&results(&out), "bare"), "ok");
    assert_eq!(accepted(&host), 1);
}

#[test]
fn tcp_connects_go_through_the_guard_unchanged() {
    let Some(sb) = Sandbox::new() else { return };
    // These test sandboxes share the host's network: a loopback listener
    // stands for whatever the sandbox's own network offers.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let out = sb.sh(&format!("printf 'tcp: '; \"$ATTACK\" connect_tcp {port}"));
    assert_eq!(get(&results(&out), "tcp"), "ok");
    l.set_nonblocking(true).unwrap();
    assert!(l.accept().is_ok());
}

#[test]
fn a_thread_rewriting_the_address_never_reaches_the_host_socket() {
    let Some(sb) = Sandbox::new() else { return };
    let host = UnixListener::bind(sb.path().join("host.sock")).unwrap();
    host.set_nonblocking(true).unwrap();
    let out = sb.sh("printf 'race: '; \"$ATTACK\" connect_race own.sock host.sock 100000");
    let race = get(&results(&out), "race");
    let mut nums = race
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| !w.is_empty())
        .map(|w| w.parse::<u32>().unwrap());
    let (connected, refused) = (nums.next().unwrap_or(0), nums.next().unwrap_or(0));
    assert_eq!(connected + refused, 100_000, "{race}");
    // Both addresses were seen (the race was run), and none of the
    // connections that went through reached the host socket.
    assert!(connected > 0 && refused > 0, "{race}");
    assert_eq!(accepted(&host), 0, "{race}");
}

#[test]
fn a_granted_socket_is_reachable_and_its_neighbour_is_not() {
    let Some(sb) = Sandbox::new() else { return };
    let d = sb.path();
    let granted = UnixListener::bind(d.join("granted.sock")).unwrap();
    let neighbour = UnixListener::bind(d.join("neighbour.sock")).unwrap();
    granted.set_nonblocking(true).unwrap();
    neighbour.set_nonblocking(true).unwrap();
    let path = d.join("granted.sock");
    let script = "printf 'granted: '; \"$ATTACK\" connect_unix granted.sock; \
                  printf 'neighbour: '; \"$ATTACK\" connect_unix neighbour.sock";
    let c = sb.command(
        Some(&DENY),
        &["--allow-unix-socket", path.to_str().unwrap()],
        script,
    );
    let got = results(&sb.output(c, script));
    assert_eq!(get(&got, "granted"), "ok", "{got:?}");
    assert_eq!(get(&got, "neighbour"), "err EACCES", "{got:?}");
    assert_eq!(accepted(&granted), 1);
    assert_eq!(accepted(&neighbour), 0);
}
