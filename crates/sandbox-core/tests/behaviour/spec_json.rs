//! The JSON shape of the data model (R-SPEC-6): camelCase names, documented
//! defaults, unknown fields ignored, bad mounts refused.

use sandbox_core::*;

const FULL: &str = r#"{
  "sessionId": "surface-42",
  "workspaceId": "ws-7",
  "agentId": "claude",
  "bindMounts": [
    {"hostPath": "/srv/wt/a", "guestPath": "/srv/wt/a", "readOnly": false},
    {"hostPath": "/srv/cache", "guestPath": "/cache", "readOnly": true}
  ],
  "networkEnabled": false,
  "egressAllowlist": ["*.example.com", "bedrock.*.amazonaws.com"],
  "guestWorkdir": "/srv/wt/a",
  "mode": "orchestrate",
  "protectedPaths": ["/srv/repos/a"],
  "runnerStateDirs": ["~/.cc/state"],
  "execGrantRoots": ["/opt/tools"]
}"#;

#[test]
fn full_spec_round_trips_with_camel_case_names() {
    let spec: SandboxSpec = serde_json::from_str(FULL).unwrap();
    spec.validate().unwrap();
    assert_eq!(spec.session_id, "surface-42");
    assert_eq!(spec.agent_id.as_deref(), Some("claude"));
    assert!(!spec.network_enabled);
    assert_eq!(spec.mode, Mode::Orchestrate);
    assert_eq!(spec.bind_mounts[1].guest_path, "/cache");
    assert!(spec.bind_mounts[1].read_only);

    let json = serde_json::to_value(&spec).unwrap();
    let original: serde_json::Value = serde_json::from_str(FULL).unwrap();
    assert_eq!(
        json, original,
        "serialised form uses exactly the note's names"
    );
    let back: SandboxSpec = serde_json::from_value(json).unwrap();
    assert_eq!(back, spec);
}

#[test]
fn missing_optional_fields_take_documented_defaults() {
    let spec: SandboxSpec = serde_json::from_str(r#"{"sessionId":"s"}"#).unwrap();
    assert_eq!(spec.workspace_id, "");
    assert_eq!(spec.agent_id, None);
    assert!(spec.bind_mounts.is_empty());
    assert!(spec.network_enabled, "network defaults to enabled");
    assert!(spec.egress_allowlist.is_empty());
    assert_eq!(spec.guest_workdir, None);
    assert_eq!(spec.mode, Mode::Chat);
    assert!(spec.protected_paths.is_empty());
    assert!(spec.runner_state_dirs.is_empty());
    assert!(spec.exec_grant_roots.is_empty());
    assert_eq!(spec, SandboxSpec::new("s", ""));
}

#[test]
fn unknown_fields_are_ignored() {
    let spec: SandboxSpec = serde_json::from_str(
        r#"{"sessionId":"s","futureField":{"x":[1,2]},"bindMounts":[{"hostPath":"/a","extra":true}]}"#,
    )
    .unwrap();
    assert_eq!(
        spec.bind_mounts[0].guest_path, "/a",
        "guest path defaults to host path"
    );
    assert!(!spec.bind_mounts[0].read_only);
}

#[test]
fn null_optional_fields_are_absent() {
    let spec: SandboxSpec =
        serde_json::from_str(r#"{"sessionId":"s","agentId":null,"guestWorkdir":null}"#).unwrap();
    assert_eq!(spec.agent_id, None);
}

#[test]
fn bad_mounts_are_refused_when_loading() {
    for bad in [
        r#"{"bindMounts":[{"hostPath":""}]}"#,
        r#"{"bindMounts":[{"hostPath":"relative/dir"}]}"#,
        r#"{"bindMounts":[{"hostPath":"/a","guestPath":"rel"}]}"#,
        r#"{"bindMounts":[{"hostPath":"/a/../etc"}]}"#,
        r#"{"bindMounts":[{"hostPath":"/a\u0000b"}]}"#,
        r#"{"bindMounts":[{"guestPath":"/a"}]}"#,
    ] {
        assert!(serde_json::from_str::<SandboxSpec>(bad).is_err(), "{bad}");
    }
}

#[test]
fn unknown_mode_is_an_error_not_a_silent_default() {
    assert!(serde_json::from_str::<SandboxSpec>(r#"{"mode":"yolo"}"#).is_err());
}

#[test]
fn validate_refuses_what_serde_cannot() {
    let mut spec = SandboxSpec::new("", "w");
    assert!(spec.validate().is_err(), "empty session id");
    spec.session_id = "s".into();
    spec.protected_paths = vec!["relative".into()];
    assert!(spec.validate().is_err());
    spec.protected_paths = vec!["~other/x".into()];
    assert!(matches!(
        spec.validate().unwrap_err().kind(),
        ErrorKind::UnsupportedTilde { .. }
    ));
    spec.protected_paths = vec!["~/ok".into(), "/abs".into()];
    spec.validate().unwrap();
}

#[test]
fn mode_decides_mount_access() {
    let mut spec: SandboxSpec = serde_json::from_str(FULL).unwrap();
    for mode in Mode::ALL {
        spec.mode = mode;
        let access: Vec<Access> = spec.mount_accesses().map(|(_, a)| a).collect();
        let want_first = if mode == Mode::Chat {
            Access::ReadWrite
        } else {
            Access::ReadOnly
        };
        assert_eq!(access, vec![want_first, Access::ReadOnly], "{mode}");
    }
}

#[test]
fn events_and_handles_serialise_with_note_names() {
    let v = SandboxEvent::Violation {
        violation: SandboxViolation::new("file-read*", "/Users/x/.ssh/id_rsa").with_raw("raw line"),
    };
    assert_eq!(
        serde_json::to_string(&v).unwrap(),
        r#"{"type":"violation","violation":{"action":"file-read*","target":"/Users/x/.ssh/id_rsa","raw":"raw line"}}"#
    );
    let k = SandboxEvent::Killed {
        reason: Some(KillReason::Timeout),
        signal: Some(9),
    };
    assert_eq!(
        serde_json::to_string(&k).unwrap(),
        r#"{"type":"killed","reason":"timeout","signal":9}"#
    );
    let back: SandboxEvent = serde_json::from_str(r#"{"type":"exit","exitCode":0}"#).unwrap();
    assert_eq!(back, SandboxEvent::Exit { exit_code: 0 });
    let s: SandboxEvent = serde_json::from_str(r#"{"type":"starting"}"#).unwrap();
    assert_eq!(s, SandboxEvent::Starting);

    let mut h = SandboxHandle::new("s", SandboxBackend::Native);
    h.fail("bwrap exited 1").unwrap();
    let json = serde_json::to_value(&h).unwrap();
    assert_eq!(json["sessionId"], "s");
    assert_eq!(json["backend"], "native");
    assert_eq!(json["state"], "error");
    assert_eq!(json["error"], "bwrap exited 1");
    assert!(h.transition(SandboxState::Warm).is_err());
}

#[test]
fn stored_backend_names_are_read_through_from_name() {
    // R-BACKEND-2 holds for stored JSON too: docker is native, unknown,
    // null and missing are none, the three names are themselves.
    for (stored, want) in [
        (r#""docker""#, SandboxBackend::Native),
        (r#""native""#, SandboxBackend::Native),
        (r#""microvm""#, SandboxBackend::Microvm),
        (r#""none""#, SandboxBackend::None),
        (r#""gvisor""#, SandboxBackend::None),
        (r#""Native""#, SandboxBackend::None),
        ("null", SandboxBackend::None),
    ] {
        let b: SandboxBackend = serde_json::from_str(stored).unwrap();
        assert_eq!(b, want, "{stored}");
        let h: SandboxHandle = serde_json::from_str(&format!(
            r#"{{"sessionId":"s","backend":{stored},"state":"warm"}}"#
        ))
        .unwrap();
        assert_eq!(h.backend, want, "{stored}");
    }
    let h: SandboxHandle = serde_json::from_str(r#"{"sessionId":"s","state":"warm"}"#).unwrap();
    assert_eq!(h.backend, SandboxBackend::None);
    // Written back, a handle stores the canonical name.
    let h: SandboxHandle =
        serde_json::from_str(r#"{"sessionId":"s","backend":"docker","state":"warm"}"#).unwrap();
    assert_eq!(serde_json::to_value(&h).unwrap()["backend"], "native");
    // A non-string is still an error, not a silent default.
    assert!(serde_json::from_str::<SandboxBackend>("3").is_err());
}

#[test]
fn network_violation_target_is_host_port() {
    assert_eq!(
        SandboxViolation::network_outbound("evil.test", 443).target,
        "evil.test:443"
    );
    assert_eq!(
        SandboxViolation::network_outbound("::1", 80).target,
        "[::1]:80"
    );
}

#[test]
fn output_events_keep_their_bytes_as_text_or_base64() {
    // (intent, the event's bytes, its JSON)
    let cases: [(&str, &[u8], &str); 4] = [
        (
            "UTF-8 output is text",
            b"hi\n",
            r#"{"type":"stdout","text":"hi\n"}"#,
        ),
        (
            "empty output is empty text",
            b"",
            r#"{"type":"stdout","text":""}"#,
        ),
        (
            "invalid UTF-8 is base64, never replaced",
            &[0x66, 0x6f, 0xff, 0x0a],
            r#"{"type":"stdout","base64":"Zm//Cg=="}"#,
        ),
        (
            "a multi-byte character cut in half is not UTF-8",
            &[0xc3],
            r#"{"type":"stdout","base64":"ww=="}"#,
        ),
    ];
    for (intent, bytes, json) in cases {
        let ev = SandboxEvent::Stdout {
            data: bytes.to_vec(),
        };
        assert_eq!(serde_json::to_string(&ev).unwrap(), json, "{intent}");
        let back: SandboxEvent = serde_json::from_str(json).unwrap();
        assert_eq!(back, ev, "{intent}");
        let err = SandboxEvent::Stderr {
            data: bytes.to_vec(),
        };
        let text = serde_json::to_string(&err).unwrap();
        assert!(text.starts_with(r#"{"type":"stderr","#), "{intent}: {text}");
        assert_eq!(
            serde_json::from_str::<SandboxEvent>(&text).unwrap(),
            err,
            "{intent}"
        );
    }
}

#[test]
fn output_events_read_the_older_array_form_and_refuse_ambiguity() {
    let old: SandboxEvent =
        serde_json::from_str(r#"{"type":"stderr","data":[104,105,10]}"#).unwrap();
    assert_eq!(
        old,
        SandboxEvent::Stderr {
            data: b"hi\n".to_vec()
        }
    );
    // Unknown fields are ignored (R-SPEC-6).
    let extra: SandboxEvent =
        serde_json::from_str(r#"{"type":"stdout","text":"a","seq":4}"#).unwrap();
    assert_eq!(
        extra,
        SandboxEvent::Stdout {
            data: b"a".to_vec()
        }
    );
    for (intent, json, why) in [
        (
            "two forms at once could disagree",
            r#"{"type":"stdout","text":"a","base64":"Yg=="}"#,
            "exactly one of text, base64 or data",
        ),
        (
            "no output at all",
            r#"{"type":"stdout"}"#,
            "exactly one of text, base64 or data",
        ),
        (
            "base64 that does not decode",
            r#"{"type":"stdout","base64":"@@@"}"#,
            "does not decode",
        ),
        (
            "a byte value past 255",
            r#"{"type":"stdout","data":[256]}"#,
            "",
        ),
    ] {
        let e = serde_json::from_str::<SandboxEvent>(json).unwrap_err();
        assert!(e.to_string().contains(why), "{intent}: {e}");
    }
}
