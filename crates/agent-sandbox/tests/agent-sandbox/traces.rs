//! What a host's `tracing` subscriber sees of a session: the build,
//! launch, exec, command and destroy spans with their fields, nested below
//! the host's own span, the refusals and the command's end as events in
//! the command's span, the log lines as events, and no secret anywhere.

use agent_sandbox::{KillReason, NameGuardLauncher, SandboxCommand};
use sandbox_core::{Access, NativeMechanism, SandboxBindMount, SandboxSpec};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tracing::Instrument;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

const GUARD: &str = env!("CARGO_BIN_EXE_agent-sandbox-name-guard");
const SECRET: &str = "ghp_tracesecret0123456789abcdefABCDEF0123";

/// A span or an event as the subscriber saw it.
#[derive(Debug, Clone)]
pub(super) struct Seen {
    /// The span's name, or the event's message.
    pub(super) name: String,
    pub(super) fields: BTreeMap<String, String>,
    /// The enclosing span's name.
    parent: Option<String>,
    /// The session id of the span, or of the span the event is in.
    pub(super) session: Option<String>,
    is_span: bool,
}

#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().into(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
}

struct Collect(Arc<Mutex<Vec<Seen>>>);

/// A span's session id, kept with the span for the events inside it.
struct SessionOf(String);

/// The test binary's global subscriber, collecting every span and event
/// (one set for a thread alone misses what another test's thread met
/// first).
pub(super) fn collector() -> Arc<Mutex<Vec<Seen>>> {
    static SEEN: std::sync::OnceLock<Arc<Mutex<Vec<Seen>>>> = std::sync::OnceLock::new();
    SEEN.get_or_init(|| {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let subscriber = tracing_subscriber::registry().with(Collect(seen.clone()));
        tracing::subscriber::set_global_default(subscriber).unwrap();
        seen
    })
    .clone()
}

impl<S> tracing_subscriber::Layer<S> for Collect
where
    S: tracing::Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::Id,
        ctx: Context<'_, S>,
    ) {
        let mut f = Fields::default();
        attrs.record(&mut f);
        let span = ctx.span(id);
        let parent = span
            .as_ref()
            .and_then(|s| s.parent())
            .map(|p| p.name().to_string());
        let session = f.0.get("session_id").cloned();
        if let (Some(span), Some(id)) = (&span, &session) {
            span.extensions_mut().insert(SessionOf(id.clone()));
        }
        self.0.lock().unwrap().push(Seen {
            name: attrs.metadata().name().into(),
            fields: f.0,
            parent,
            session,
            is_span: true,
        });
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        let mut f = Fields::default();
        event.record(&mut f);
        let name = f.0.remove("message").unwrap_or_default();
        let span = ctx.event_span(event);
        let session = span
            .as_ref()
            .and_then(|s| s.extensions().get::<SessionOf>().map(|x| x.0.clone()));
        self.0.lock().unwrap().push(Seen {
            name,
            fields: f.0,
            parent: span.map(|s| s.name().to_string()),
            session,
            is_span: false,
        });
    }
}

#[tokio::test]
async fn a_hosts_subscriber_sees_the_sessions_spans_and_events_and_no_secret() {
    if !super::native::native_available() {
        return;
    }
    let seen = collector();

    let root = std::env::temp_dir().join(format!("facade-traces-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for d in ["ws", "home", "tmp"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let ws = root.join("ws").display().to_string();
    let host_request = tracing::info_span!("host.request", task = "t-1");
    async {
        let mut b = crate::builder();
        b.home(root.join("home").display().to_string())
            .temp_dir(root.join("tmp").display().to_string())
            .native_mechanism(NativeMechanism::Bubblewrap)
            .name_guard_launcher(NameGuardLauncher::new(GUARD))
            .log(Arc::new(|_: &str| {}))
            .base_env(vec![
                ("PATH".into(), "/usr/bin:/bin".into()),
                ("GITHUB_TOKEN".into(), SECRET.into()),
            ]);
        let m = b.build().unwrap();
        let mut spec = SandboxSpec::new("traced", "w");
        spec.bind_mounts
            .push(SandboxBindMount::new(&ws, Access::ReadWrite).unwrap());
        spec.guest_workdir = Some(ws.clone());
        let mut h = m.launch(spec).await.unwrap();
        let mut c = SandboxCommand::new("/bin/sh");
        c.arg("-c").arg(
            "echo hi; echo x > .env; \
             curl -s -m 10 -o /dev/null http://denied.example.invalid/; exit 3",
        );
        let out = m.exec(&h, c).await.unwrap().output().await;
        assert_eq!(out.status.code(), Some(3));
        assert!(
            out.violations.iter().any(|v| v.target.ends_with("/.env")),
            "{:?}",
            out.violations
        );
        let mut slow = SandboxCommand::new("/bin/sleep");
        slow.arg("30").timeout(Duration::from_millis(500));
        let status = m.exec(&h, slow).await.unwrap().wait().await;
        assert_eq!(status.kill_reason(), Some(KillReason::Timeout));
        m.destroy(&mut h).await.unwrap();
    }
    .instrument(host_request)
    .await;
    let _ = std::fs::remove_dir_all(&root);

    // This session's (other tests' sessions reach the subscriber too).
    let seen: Vec<Seen> = seen.lock().unwrap().clone();
    let ours = |s: &&Seen| match &s.session {
        Some(id) => id == "traced",
        None => s.parent.as_deref() == Some("host.request"),
    };
    let span = |name: &str| -> Vec<&Seen> {
        seen.iter()
            .filter(|s| s.is_span && s.name == name)
            .filter(ours)
            .collect()
    };
    let build = span("agent_sandbox.build");
    assert_eq!(build.len(), 1, "{seen:#?}");
    assert_eq!(build[0].parent.as_deref(), Some("host.request"));
    let launch = span("agent_sandbox.launch");
    assert_eq!(launch.len(), 1, "{seen:#?}");
    assert_eq!(launch[0].parent.as_deref(), Some("host.request"));
    assert_eq!(launch[0].fields["session_id"], "traced");
    assert_eq!(launch[0].fields["backend"], "native");
    assert_eq!(launch[0].fields["workspace"], "false");
    let exec = span("agent_sandbox.exec");
    assert_eq!(exec.len(), 2, "{seen:#?}");
    assert_eq!(exec[0].fields["program"], "/bin/sh");
    assert_eq!(exec[1].fields["program"], "/bin/sleep");
    let command = span("agent_sandbox.command");
    assert_eq!(command.len(), 2, "{seen:#?}");
    assert!(
        command
            .iter()
            .all(|c| c.parent.as_deref() == Some("agent_sandbox.exec"))
    );
    assert_eq!(span("agent_sandbox.destroy").len(), 1);
    // Decisions and ends as events, in the command's span.
    let event = |msg: &str| -> Vec<&Seen> {
        seen.iter()
            .filter(|s| !s.is_span && s.name == msg)
            .filter(ours)
            .collect()
    };
    let refused = event("refused");
    assert!(
        refused
            .iter()
            .any(|e| e.fields["action"] == "file-write-create"
                && e.fields["target"].ends_with("/ws/.env")
                && e.parent.as_deref() == Some("agent_sandbox.command")),
        "{seen:#?}"
    );
    // One event per refusal.
    assert_eq!(
        refused
            .iter()
            .filter(|e| e.fields["action"] == "file-write-create")
            .count(),
        1,
        "{refused:#?}"
    );
    // The proxies' decision, in the session's egress span.
    let proxied = event("connection refused");
    assert!(
        proxied
            .iter()
            .any(|e| e.fields["destination"] == "denied.example.invalid:80"
                && e.parent.as_deref() == Some("agent_sandbox.egress")),
        "{seen:#?}"
    );
    let exited = event("the command exited");
    assert_eq!(exited.len(), 1, "{seen:#?}");
    assert_eq!(exited[0].fields["exit_code"], "3");
    let killed = event("the command was killed");
    assert!(killed[0].fields["reason"].contains("Timeout"), "{seen:#?}");
    // The log lines too (the start-up line in the build's span).
    assert!(
        seen.iter().any(|s| !s.is_span
            && s.name.contains("agent sandbox ON")
            && s.parent.as_deref() == Some("agent_sandbox.build")),
        "{seen:#?}"
    );
    // No field and no message holds the credential.
    let all = format!("{seen:?}");
    assert!(!all.contains(SECRET), "a credential reached the trace");
}

#[tokio::test]
async fn a_one_shot_run_gets_its_output_and_a_path_and_leaves_no_session() {
    if !super::native::native_available() {
        return;
    }
    let root = std::env::temp_dir().join(format!("facade-oneshot-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    for d in ["ws", "home", "tmp"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    let ws = root.join("ws").display().to_string();
    // No base environment at all: the commands still get a PATH.
    let mut b = crate::builder();
    b.home(root.join("home").display().to_string())
        .temp_dir(root.join("tmp").display().to_string())
        .native_mechanism(NativeMechanism::Bubblewrap)
        .name_guard_launcher(NameGuardLauncher::new(GUARD))
        .log(Arc::new(|_: &str| {}));
    let m = b.build().unwrap();
    let mut spec = SandboxSpec::new("one-shot", "w");
    spec.bind_mounts
        .push(SandboxBindMount::new(&ws, Access::ReadWrite).unwrap());
    spec.guest_workdir = Some(ws.clone());
    let mut c = SandboxCommand::new("sh");
    c.arg("-c").arg("echo \"$PATH\"; echo k > a.key; exit 4");
    let out = m.output(spec, c).await.unwrap();
    assert_eq!(out.status.code(), Some(4));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        agent_sandbox::DEFAULT_PATH
    );
    assert!(
        out.violations.iter().any(|v| v.target.ends_with("a.key")),
        "{:?}",
        out.violations
    );
    // The session is gone: its id can be launched again.
    let mut again = SandboxSpec::new("one-shot", "w");
    again
        .bind_mounts
        .push(SandboxBindMount::new(&ws, Access::ReadWrite).unwrap());
    let out = m.output(again, SandboxCommand::new("true")).await.unwrap();
    assert!(out.status.success());
    let _ = std::fs::remove_dir_all(&root);
}
