//! An ACP-shaped session: a program speaking newline-delimited JSON-RPC
//! 2.0 over stdio runs inside the sandbox for the whole conversation and
//! is driven from the host. It writes a file in the worktree, is refused
//! one outside it and one by name, and shuts down; the responses come back
//! in order and the name guard's refusal arrives as a `violation` event
//! between them.

use super::native::{Tree, guarded_manager, native_available};
use agent_sandbox::InnerBridge;
use sandbox_core::{RunningCommand, SandboxCommand, SandboxEvent, Stdin};

/// The agent: `initialize`, `fs/write {path, text}`, `shutdown`.
const AGENT: &str = r#"
import json, sys
for line in sys.stdin:
    req = json.loads(line)
    method, rid, params = req["method"], req["id"], req.get("params", {})
    if method == "initialize":
        res = {"result": {"protocolVersion": 1, "agentInfo": {"name": "probe-agent"}}}
    elif method == "fs/write":
        try:
            with open(params["path"], "w") as f:
                f.write(params["text"])
            res = {"result": {"written": params["path"]}}
        except OSError as e:
            res = {"error": {"code": -32000, "message": e.strerror or str(e)}}
    elif method == "shutdown":
        res = {"result": None}
    else:
        res = {"error": {"code": -32601, "message": "no such method"}}
    res.update({"jsonrpc": "2.0", "id": rid})
    print(json.dumps(res), flush=True)
    if method == "shutdown":
        break
"#;

/// What the host saw, in order: responses (by id) and violations.
#[derive(Debug, PartialEq)]
enum Seen {
    Response(u64, serde_json::Value),
    Violation(String),
}

async fn call(
    running: &mut RunningCommand,
    seen: &mut Vec<Seen>,
    pending: &mut Vec<u8>,
    id: u64,
    method: &str,
    params: serde_json::Value,
) -> serde_json::Value {
    let req = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    running
        .write_stdin(format!("{req}\n").as_bytes())
        .await
        .unwrap();
    loop {
        if let Some(end) = pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let v: serde_json::Value = serde_json::from_slice(&line).unwrap();
            let got = v["id"].as_u64().unwrap();
            assert_eq!(got, id, "responses come back in order");
            seen.push(Seen::Response(got, v.clone()));
            return v;
        }
        match running.next_event().await {
            Some(SandboxEvent::Stdout { data }) => pending.extend_from_slice(&data),
            Some(SandboxEvent::Violation { violation }) => {
                seen.push(Seen::Violation(violation.to_string()))
            }
            Some(SandboxEvent::Stderr { data }) => {
                eprintln!("agent: {}", String::from_utf8_lossy(&data))
            }
            Some(e @ (SandboxEvent::Exit { .. } | SandboxEvent::Killed { .. })) => {
                panic!("the agent ended early: {e:?}")
            }
            Some(_) => {}
            None => panic!("the stream ended"),
        }
    }
}

#[tokio::test]
async fn a_json_rpc_agent_writes_in_its_worktree_and_its_refusals_arrive_in_order() {
    if !native_available() {
        return;
    }
    let t = Tree::new("acp");
    let m = guarded_manager(
        &t,
        InnerBridge::HostSideListeners,
        sandbox_core::probe_ambient().clone(),
    );
    let mut h = m.launch(t.spec("acp")).await.unwrap();
    let mut cmd = SandboxCommand::new("python3");
    cmd.arg("-c").arg(AGENT).stdin(Stdin::Piped);
    let mut running = m.exec(&h, cmd).await.unwrap();
    let (mut seen, mut pending) = (Vec::new(), Vec::new());

    let init = call(
        &mut running,
        &mut seen,
        &mut pending,
        1,
        "initialize",
        serde_json::json!({"protocolVersion": 1}),
    )
    .await;
    assert_eq!(init["result"]["agentInfo"]["name"], "probe-agent");

    let inside = t.p("ws/notes.md");
    let r = call(
        &mut running,
        &mut seen,
        &mut pending,
        2,
        "fs/write",
        serde_json::json!({"path": inside, "text": "hello"}),
    )
    .await;
    assert_eq!(r["result"]["written"], inside.as_str(), "{r}");
    assert_eq!(
        std::fs::read_to_string(&inside).unwrap(),
        "hello",
        "the write reached the worktree"
    );

    let outside = "/usr/agent-was-here";
    let r = call(
        &mut running,
        &mut seen,
        &mut pending,
        3,
        "fs/write",
        serde_json::json!({"path": outside, "text": "x"}),
    )
    .await;
    assert!(
        r["error"]["message"].as_str().is_some(),
        "refused outside the worktree: {r}"
    );
    assert!(!std::path::Path::new(outside).exists());

    let key = t.p("ws/deploy.key");
    let r = call(
        &mut running,
        &mut seen,
        &mut pending,
        4,
        "fs/write",
        serde_json::json!({"path": key, "text": "secret"}),
    )
    .await;
    assert!(
        r["error"]["message"].as_str().is_some(),
        "a *.key name is refused at creation: {r}"
    );
    assert!(!std::path::Path::new(&key).exists());

    call(
        &mut running,
        &mut seen,
        &mut pending,
        5,
        "shutdown",
        serde_json::json!({}),
    )
    .await;
    running.close_stdin().await.unwrap();
    let mut last = None;
    while let Some(ev) = running.next_event().await {
        match ev {
            SandboxEvent::Violation { violation } => {
                seen.push(Seen::Violation(violation.to_string()))
            }
            e @ (SandboxEvent::Exit { .. } | SandboxEvent::Killed { .. }) => last = Some(e),
            _ => {}
        }
    }
    assert_eq!(last, Some(SandboxEvent::Exit { exit_code: 0 }));
    let at = |f: &dyn Fn(&Seen) -> bool| seen.iter().position(f).unwrap();
    let violation = at(
        &|s| matches!(s, Seen::Violation(v) if v.contains("file-write-create") && v.contains("deploy.key")),
    );
    let second = at(&|s| matches!(s, Seen::Response(2, _)));
    let shutdown = at(&|s| matches!(s, Seen::Response(5, _)));
    assert!(
        second < violation && violation < shutdown,
        "the refusal arrives between the responses: {seen:?}"
    );
    m.destroy(&mut h).await.unwrap();
}
