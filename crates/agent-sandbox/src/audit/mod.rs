//! The audit trail: one OCSF JSON object per line for every security
//! decision and lifecycle step a manager's sessions take, written to the
//! sink a host sets with
//! [`ManagerBuilder::audit`](crate::ManagerBuilder::audit).
//!
//! What is recorded, and as which OCSF class ([`OCSF_VERSION`], with the
//! `datetime` profile):
//!
//! | step | class (`class_uid`), activity |
//! | --- | --- |
//! | a session launched, destroyed | Application Lifecycle (6002), Start / Stop |
//! | a command started, ended (its exit status, or why it was killed) | Process Activity (1007), Launch / Terminate |
//! | a file refusal (a name the rules forbid, a write to a protected path, a listing of a secret) | File System Activity (1001), Create / Update / Read, `status_id` 2 |
//! | a connection the proxies allowed (to an address, or handed to the broker) | Network Activity (4001), Open, `status_id` 1 |
//! | a network refusal (by the proxies' policy or the host supervisor), an allowed host whose upstream failed, a refused bind, a brokered connection refused | Network Activity (4001), Refuse / Fail / Listen, `status_id` 2 |
//! | a brokered request refused by a rule (answered 403) | HTTP Activity (4002), `status_id` 2, with the URL's host, port and path |
//! | a brokered request forwarded | HTTP Activity (4002), its method's activity (Get, Post, ...), `status_id` 1, with the method, the URL's host, port and path (never its query), the rule that allowed it and whether the credential was added (`unmapped.rule`, `unmapped.credential_injected`) |
//!
//! Each record is written as the command's event stream receives the
//! event it stands for, before the host reads it, so the trail and the
//! events never disagree. Session id and backend are on every record
//! (`metadata.correlation_uid`, `unmapped`); no record holds a credential,
//! a phantom token or a header value. An allowed connection is recorded
//! as the proxies decide it, and a forwarded request as the broker sends
//! it, beside the command's events. A refusal's reason (the rule's
//! decision among them) is in `status_detail`.

mod ocsf;

pub use ocsf::OCSF_VERSION;
pub(crate) use ocsf::{CommandRef, SessionRef};

use sandbox_core::{KillReason, SandboxEvent};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Where audit records go: called once per record with one line of JSON
/// (no newline). It is called from the tasks that run commands, so it
/// should not block for long.
pub type AuditSink = Arc<dyn Fn(&str) + Send + Sync>;

/// A sink that appends each record, and a newline, to the file at `path`
/// (made if missing, mode 0600 on Unix). A record that cannot be written
/// is dropped; the file is opened now, so a path that cannot be written
/// is an error here.
pub fn audit_to_file(path: &Path) -> std::io::Result<AuditSink> {
    let mut o = std::fs::OpenOptions::new();
    o.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut o, 0o600);
    let file = Mutex::new(o.open(path)?);
    Ok(Arc::new(move |line: &str| {
        if let Ok(mut f) = file.lock() {
            let mut buf = Vec::with_capacity(line.len() + 1);
            buf.extend_from_slice(line.as_bytes());
            buf.push(b'\n');
            let _ = f.write_all(&buf);
        }
    }))
}

/// The sink with the session it writes for.
#[derive(Clone)]
pub(crate) struct SessionAudit {
    sink: AuditSink,
    session: SessionRef,
}

impl SessionAudit {
    pub(crate) fn new(sink: AuditSink, session_id: &str, backend: &str) -> SessionAudit {
        SessionAudit {
            sink,
            session: SessionRef {
                session_id: session_id.to_owned(),
                backend: backend.to_owned(),
            },
        }
    }

    fn write(&self, v: &serde_json::Value) {
        (self.sink)(&v.to_string());
    }

    /// The session launched (`true`) or was destroyed.
    pub(crate) fn lifecycle(&self, started: bool) {
        self.write(&ocsf::session(&self.session, started));
    }

    /// The session's `n`th command starts: its record, and what records
    /// its events.
    pub(crate) fn command(&self, n: u64, program: &str) -> CommandAudit {
        let command = CommandRef {
            uid: format!("{}/{n}", self.session.session_id),
            name: program.to_owned(),
        };
        self.write(&ocsf::command_started(&self.session, &command));
        CommandAudit {
            session: self.clone(),
            command,
        }
    }
}

/// Records each connection the proxies allow (those they refuse come as
/// refusals in the command's events), until the proxies shut down.
pub(crate) fn record_allowed_connections(
    audit: SessionAudit,
    mut decisions: connect_proxy::Subscription<connect_proxy::Decision>,
) {
    tokio::spawn(async move {
        while let Some(d) = decisions.recv().await {
            let via = match &d.outcome {
                connect_proxy::Outcome::Connected(addr) => addr.to_string(),
                connect_proxy::Outcome::Intercepted => "the broker".to_owned(),
                _ => continue,
            };
            audit.write(&ocsf::allowed_connection(
                &audit.session,
                &d.protocol.to_string(),
                &d.target,
                &via,
            ));
        }
    });
}

/// Records each request the broker forwards, until the broker is gone.
pub(crate) fn record_brokered_requests(
    audit: SessionAudit,
    mut requests: tokio::sync::broadcast::Receiver<cred_broker::BrokeredRequest>,
) {
    tokio::spawn(async move {
        loop {
            match requests.recv().await {
                Ok(r) => audit.write(&ocsf::brokered_request(&audit.session, &r)),
                // A writer 1,024 requests behind loses the oldest.
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
            }
        }
    });
}

/// What records one command's events.
pub(crate) struct CommandAudit {
    session: SessionAudit,
    command: CommandRef,
}

impl CommandAudit {
    /// The record an event stands for, if any.
    fn event(&self, ev: &SandboxEvent) {
        let s = &self.session.session;
        let c = &self.command;
        let v = match ev {
            SandboxEvent::Violation { violation } => ocsf::refusal(
                s,
                Some(c),
                &violation.action,
                &violation.target,
                violation.raw.as_deref(),
            ),
            SandboxEvent::Exit { exit_code } => ocsf::command_ended(s, c, Some(*exit_code), None),
            SandboxEvent::Killed { reason, .. } => {
                let why = match reason {
                    Some(KillReason::Timeout) => "timeout",
                    Some(KillReason::Manual) => "killed by the host",
                    Some(KillReason::Destroy) => "the session was destroyed",
                    Some(KillReason::Oom) => "out of memory",
                    Some(KillReason::Signal) => "a signal the host did not send",
                    Some(_) => "a limit or the sandbox",
                    None => "reason not known",
                };
                ocsf::command_ended(s, c, None, Some(why))
            }
            _ => return,
        };
        self.session.write(&v);
    }
}

/// A command's event sender: each event is recorded (when the manager
/// has an audit sink) as it is sent.
#[derive(Clone)]
pub(crate) struct EventTx {
    tx: mpsc::Sender<SandboxEvent>,
    audit: Option<Arc<CommandAudit>>,
}

impl EventTx {
    pub(crate) fn new(tx: mpsc::Sender<SandboxEvent>, audit: Option<CommandAudit>) -> EventTx {
        EventTx {
            tx,
            audit: audit.map(Arc::new),
        }
    }

    /// Records `ev`, then sends it.
    pub(crate) async fn send(
        &self,
        ev: SandboxEvent,
    ) -> Result<(), mpsc::error::SendError<SandboxEvent>> {
        if let Some(a) = &self.audit {
            a.event(&ev);
        }
        self.tx.send(ev).await
    }

    /// The channel itself (what keeps the stream open).
    pub(crate) fn sender(&self) -> mpsc::Sender<SandboxEvent> {
        self.tx.clone()
    }
}
