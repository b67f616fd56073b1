//! `k8s-render` end to end: the default profile with no flags, agent-run's
//! flags meaning the same, and a refusal instead of a weaker render.

use serde_json::Value;
use std::process::{Command, Stdio};

fn k8s_render(args: &[&str]) -> (Option<i32>, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_k8s-render"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

fn items(out: &str) -> Vec<Value> {
    let list: Value = serde_json::from_str(out).unwrap();
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["kind"], "List");
    list["items"].as_array().unwrap().clone()
}

#[test]
fn no_flags_render_the_default_profile() {
    let (code, out, err) = k8s_render(&[]);
    assert_eq!(code, Some(0), "{err}");
    let items = items(&out);
    let kinds: Vec<&str> = items.iter().map(|i| i["kind"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "Secret",
            "Service",
            "NetworkPolicy",
            "NetworkPolicy",
            "Pod",
            "Pod"
        ]
    );
    let agent = &items[5];
    let session = agent["metadata"]["labels"]["agent-sandbox-session"]
        .as_str()
        .unwrap();
    assert!(session.starts_with("sbx-s-"), "{session}");
    let spec = &agent["spec"];
    assert_eq!(spec["runtimeClassName"], "gvisor");
    assert_eq!(spec["containers"][0]["image"], "agent-sandbox/agent:latest");
    assert_eq!(
        items[4]["spec"]["containers"][0]["image"],
        "agent-sandbox/egress:latest"
    );
    assert_eq!(
        spec["volumes"][2]["persistentVolumeClaim"]["claimName"],
        format!("{session}-workspace")
    );
    assert_eq!(
        spec["containers"][0]["volumeMounts"][2]["mountPath"],
        "/workspace"
    );
    assert_eq!(spec["containers"][0]["volumeMounts"][2]["readOnly"], true);
    assert_eq!(spec["containers"][0]["workingDir"], "/workspace");
    assert_eq!(
        spec["containers"][0]["command"],
        serde_json::json!(["sleep", "infinity"])
    );
    // A fresh secret per run, in the Secret only.
    let secret = items[0]["stringData"]["proxy-secret"].as_str().unwrap();
    assert_eq!(secret.len(), 64);
    let (_, again, _) = k8s_render(&[]);
    assert!(!again.contains(secret));
    assert_eq!(out.matches(secret).count(), 1);
}

#[test]
fn agent_run_flags_mean_the_same_and_the_cluster_flags_place_the_run() {
    let (code, out, err) = k8s_render(&[
        "--session",
        "t1",
        "--namespace",
        "agents",
        "--runtime",
        "kata",
        "--mode",
        "chat",
        "--mount",
        "/srv/wt",
        "--mount",
        "/srv/ref:ro",
        "--claim",
        "/srv/ref=shared-ref",
        "--protect",
        "/srv/wt/orig",
        "--allow",
        "api.example.com",
        "--deny",
        "bad.example.com",
        "--network",
        "on",
        "--memory",
        "512M",
        "--cpus",
        "1.5",
        "--placement",
        "sandbox",
        "--proxy-secret",
        "abc",
        "--",
        "make",
        "test",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let items = items(&out);
    assert!(items.iter().all(|i| i["metadata"]["namespace"] == "agents"));
    let sandbox = &items[5];
    assert_eq!(sandbox["kind"], "Sandbox");
    assert_eq!(sandbox["spec"]["operatingMode"], "Running");
    let pod = &sandbox["spec"]["podTemplate"]["spec"];
    assert_eq!(pod["runtimeClassName"], "kata");
    let c = &pod["containers"][0];
    assert_eq!(
        c["command"],
        serde_json::json!([
            "/usr/local/bin/name-guard-exec",
            "--deny",
            ".env",
            "--deny",
            "*.key",
            "--deny",
            "*.pem",
            "--",
            "make",
            "test"
        ])
    );
    assert_eq!(
        c["resources"]["limits"],
        serde_json::json!({"memory": "536870912", "cpu": "1500m"})
    );
    assert_eq!(
        pod["volumes"][2]["persistentVolumeClaim"]["claimName"],
        "sbx-t1-workspace"
    );
    assert_eq!(
        pod["volumes"][3]["persistentVolumeClaim"],
        serde_json::json!({"claimName": "shared-ref", "readOnly": true})
    );
    assert!(c["volumeMounts"].as_array().unwrap().contains(&serde_json::json!(
        {"name": "mount-0", "mountPath": "/srv/wt/orig", "subPath": "orig", "readOnly": true}
    )));
    let egress = items[4]["spec"]["containers"][0]["command"]
        .as_array()
        .unwrap();
    for want in ["--allow=api.example.com", "--deny=bad.example.com"] {
        assert!(egress.contains(&want.into()), "{want}");
    }
    assert_eq!(items[0]["stringData"]["proxy-secret"], "abc");
}

#[test]
fn what_cannot_hold_its_meaning_is_refused_with_exit_2() {
    for (args, why) in [
        (&["--mode", "chat"][..], "the gvisor runtime cannot do it"),
        (&["--runtime", "runc"][..], "share the node's kernel"),
        (&["--pids", "64"][..], "podPidsLimit"),
        (&["--suspended"][..], "suspended run needs"),
        (&["--session", "Bad_Id"][..], "session id"),
        (&["--claim", "/elsewhere=c"][..], "is not a --mount"),
    ] {
        let (code, out, err) = k8s_render(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}");
        assert!(
            err.starts_with("k8s-render: ") && err.contains(why),
            "{args:?}: {err}"
        );
    }
    // The explicit opt-outs render.
    let (code, _, err) = k8s_render(&["--mode", "chat", "--no-filename-rules"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, out, err) = k8s_render(&[
        "--runtime",
        "runc",
        "--shared-host-kernel",
        "--mode",
        "chat",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert!(items(&out)[5]["spec"]["runtimeClassName"].is_null());
}

/// `kubernetes-validate` (the Python package: the Kubernetes schemas it
/// bundles, offline) over `files`, strict (unknown fields refused), for
/// Kubernetes 1.33: its status and output.
fn kubernetes_validate(
    validator: &std::path::Path,
    files: &[std::path::PathBuf],
) -> (bool, String) {
    let o = Command::new(validator)
        .args(["--strict", "-k", "1.33.0"])
        .args(files)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.success(), text)
}

#[test]
fn every_rendered_core_object_passes_the_kubernetes_schemas() {
    let Some(validator) = test_support::tool(
        "kubernetes-validate",
        "pip3 install kubernetes-validate (scripts/test does)",
    ) else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("k8s-validate-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let runs: [&[&str]; 6] = [
        &[],
        &["--placement", "sandbox", "--suspended"],
        &["--placement", "template"],
        &[
            "--mode",
            "chat",
            "--runtime",
            "kata",
            "--mount",
            "/w",
            "--mount",
            "/data:ro",
            "--memory",
            "1073741824",
            "--pids",
            "100",
            "--node-pids-limit",
            "100",
            "--cpus",
            "2",
            "--allow",
            "example.com",
            "--workdir",
            "/w",
            "--",
            "sh",
            "-c",
            "echo hi",
        ],
        &["--network", "off", "--namespace", "agents"],
        &[
            "--mode",
            "chat",
            "--no-filename-rules",
            "--mount",
            "/w",
            "--claim",
            "/w=shared",
        ],
    ];
    let mut files = Vec::new();
    let mut core = 0;
    for (r, args) in runs.iter().enumerate() {
        let (code, out, err) = k8s_render(args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        for (i, item) in items(&out).iter().enumerate() {
            let api = item["apiVersion"].as_str().unwrap();
            if !api.contains("agents.x-k8s.io") {
                core += 1;
            }
            let f = dir.join(format!("run{r}-{i}.json"));
            std::fs::write(&f, serde_json::to_vec(item).unwrap()).unwrap();
            files.push(f);
        }
    }
    let (ok, text) = kubernetes_validate(&validator, &files);
    assert!(ok, "{text}");
    // Every core object was checked and passed; only agent-sandbox's own
    // kinds have no schema there (its CRD schemas check them in k8s-spec).
    assert_eq!(
        text.matches(" passed for resource ").count(),
        core,
        "{text}"
    );
    for line in text.lines().filter(|l| l.contains("Couldn't find schema")) {
        assert!(line.contains("agents.x-k8s.io"), "{line}");
    }
    // The check is real: a pod with a field the schema does not have fails.
    let bad = dir.join("bad.json");
    let mut pod = items(&k8s_render(&[]).1)[5].clone();
    pod["spec"]["containers"][0]["notAField"] = Value::Bool(true);
    std::fs::write(&bad, serde_json::to_vec(&pod).unwrap()).unwrap();
    let (ok, text) = kubernetes_validate(&validator, &[bad]);
    assert!(!ok, "an unknown field passed: {text}");
    std::fs::remove_dir_all(&dir).unwrap();
}
