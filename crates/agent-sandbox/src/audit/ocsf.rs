//! The records, in OCSF 1.3.0 (the Open Cybersecurity Schema Framework)
//! with its `datetime` profile: one JSON object per security decision or
//! lifecycle step. Every record carries the session id (as
//! `metadata.correlation_uid`, and with the backend in `unmapped`), the
//! time in milliseconds (`time`) and with microseconds (`time_dt`), and a
//! `message` a person reads. No field holds a credential, a phantom token
//! or a header value: records are made from hosts, ports, paths, program
//! names and exit statuses only.

use serde_json::{Map, Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

/// The OCSF version the records follow.
pub const OCSF_VERSION: &str = "1.3.0";

/// Whose record it is.
#[derive(Clone, Debug)]
pub(crate) struct SessionRef {
    pub(crate) session_id: String,
    pub(crate) backend: String,
}

/// What one record is about: its class and activity (ids and names as the
/// schema gives them).
struct Kind {
    category_uid: u32,
    category_name: &'static str,
    class_uid: u32,
    class_name: &'static str,
    activity_id: u32,
    activity_name: &'static str,
}

const SYSTEM: (u32, &str) = (1, "System Activity");
const NETWORK: (u32, &str) = (4, "Network Activity");
const APPLICATION: (u32, &str) = (6, "Application Activity");

fn kind(
    category: (u32, &'static str),
    class: (u32, &'static str),
    activity: (u32, &'static str),
) -> Kind {
    Kind {
        category_uid: category.0,
        category_name: category.1,
        class_uid: class.0,
        class_name: class.1,
        activity_id: activity.0,
        activity_name: activity.1,
    }
}

/// Success or failure, with what a person reads about it.
enum Status<'a> {
    Success,
    Failure(&'a str),
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ` for `t` (UTC).
pub(crate) fn rfc3339_micros(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60,
        d.subsec_micros()
    )
}

fn record(k: &Kind, s: &SessionRef, status: Status<'_>, message: String) -> Map<String, Value> {
    let now = SystemTime::now();
    let ms = now
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    let (status_id, status_name, severity_id) = match status {
        Status::Success => (1, "Success", 1),
        Status::Failure(_) => (2, "Failure", 2),
    };
    let mut r = Map::new();
    r.insert("activity_id".into(), json!(k.activity_id));
    r.insert("activity_name".into(), json!(k.activity_name));
    r.insert("category_uid".into(), json!(k.category_uid));
    r.insert("category_name".into(), json!(k.category_name));
    r.insert("class_uid".into(), json!(k.class_uid));
    r.insert("class_name".into(), json!(k.class_name));
    r.insert(
        "type_uid".into(),
        json!(u64::from(k.class_uid) * 100 + u64::from(k.activity_id)),
    );
    r.insert("severity_id".into(), json!(severity_id));
    r.insert("status_id".into(), json!(status_id));
    r.insert("status".into(), json!(status_name));
    if let Status::Failure(detail) = status {
        r.insert("status_detail".into(), json!(detail));
    }
    r.insert("time".into(), json!(ms));
    r.insert("time_dt".into(), json!(rfc3339_micros(now)));
    r.insert("message".into(), json!(message));
    r.insert(
        "metadata".into(),
        json!({
            "version": OCSF_VERSION,
            "profiles": ["datetime"],
            "correlation_uid": s.session_id,
            "product": {
                "name": "agent-sandbox",
                "vendor_name": "agent-sandbox",
                "version": env!("CARGO_PKG_VERSION"),
            },
        }),
    );
    r.insert(
        "unmapped".into(),
        json!({ "session_id": s.session_id, "backend": s.backend }),
    );
    r
}

/// The sandbox the activity happened in, as OCSF's `device`.
fn device(s: &SessionRef) -> Value {
    json!({ "type_id": 0, "uid": s.session_id, "name": format!("agent-sandbox {}", s.backend) })
}

/// The session as the actor.
fn actor(s: &SessionRef) -> Value {
    json!({ "session": { "uid": s.session_id } })
}

/// A session launched (`started`) or destroyed: Application Lifecycle.
pub(crate) fn session(s: &SessionRef, started: bool) -> Value {
    let k = if started {
        kind(APPLICATION, (6002, "Application Lifecycle"), (3, "Start"))
    } else {
        kind(APPLICATION, (6002, "Application Lifecycle"), (4, "Stop"))
    };
    let what = if started { "launched" } else { "destroyed" };
    let mut r = record(
        &k,
        s,
        Status::Success,
        format!("session {} {what} ({})", s.session_id, s.backend),
    );
    r.insert(
        "app".into(),
        json!({
            "name": "agent-sandbox session",
            "vendor_name": "agent-sandbox",
            "uid": s.session_id,
            "version": env!("CARGO_PKG_VERSION"),
        }),
    );
    Value::Object(r)
}

/// One command of a session, as OCSF's `process`.
#[derive(Clone, Debug)]
pub(crate) struct CommandRef {
    /// `SESSION/N`, the session's Nth command.
    pub(crate) uid: String,
    /// The program as the host named it.
    pub(crate) name: String,
}

fn process(c: &CommandRef) -> Value {
    json!({ "uid": c.uid, "name": c.name })
}

/// A command started: Process Activity, Launch.
pub(crate) fn command_started(s: &SessionRef, c: &CommandRef) -> Value {
    let k = kind(SYSTEM, (1007, "Process Activity"), (1, "Launch"));
    let mut r = record(
        &k,
        s,
        Status::Success,
        format!("command {} started: {}", c.uid, c.name),
    );
    r.insert("process".into(), process(c));
    r.insert("actor".into(), actor(s));
    r.insert("device".into(), device(s));
    Value::Object(r)
}

/// A command ended: Process Activity, Terminate; `exit_code` when it
/// exited, `killed` (the reason) when the host or a limit ended it.
pub(crate) fn command_ended(
    s: &SessionRef,
    c: &CommandRef,
    exit_code: Option<i32>,
    killed: Option<&str>,
) -> Value {
    let k = kind(SYSTEM, (1007, "Process Activity"), (2, "Terminate"));
    let detail;
    let (status, message) = match (exit_code, killed) {
        (Some(code), _) => (
            Status::Success,
            format!("command {} exited with status {code}", c.uid),
        ),
        (None, why) => {
            detail = format!("killed: {}", why.unwrap_or("reason not known"));
            (
                Status::Failure(&detail),
                format!("command {} {detail}", c.uid),
            )
        }
    };
    let mut r = record(&k, s, status, message);
    r.insert("process".into(), process(c));
    r.insert("actor".into(), actor(s));
    r.insert("device".into(), device(s));
    if let Some(code) = exit_code {
        r.insert("exit_code".into(), json!(code));
    }
    Value::Object(r)
}

/// A connection the proxies allowed: Network Activity, Open. `via` is the
/// address dialled (or the broker, for an intercepted one).
pub(crate) fn allowed_connection(s: &SessionRef, protocol: &str, target: &str, via: &str) -> Value {
    let k = kind(NETWORK, (4001, "Network Activity"), (1, "Open"));
    let mut r = record(
        &k,
        s,
        Status::Success,
        format!("{protocol} {target} allowed via {via}"),
    );
    r.insert("dst_endpoint".into(), endpoint(target));
    r.insert("app_name".into(), json!(protocol));
    Value::Object(r)
}

/// A request the broker forwarded: HTTP Activity, its method's activity,
/// with the URL (host, port, path without its query), the rule that
/// allowed it and whether the credential was added (never its value).
pub(crate) fn brokered_request(s: &SessionRef, r: &cred_broker::BrokeredRequest) -> Value {
    let activity = match r.method.as_str() {
        "CONNECT" => (1, "Connect"),
        "DELETE" => (2, "Delete"),
        "GET" => (3, "Get"),
        "HEAD" => (4, "Head"),
        "OPTIONS" => (5, "Options"),
        "POST" => (6, "Post"),
        "PUT" => (7, "Put"),
        "TRACE" => (8, "Trace"),
        "PATCH" => (9, "Patch"),
        _ => (99, "Other"),
    };
    let k = kind(NETWORK, (4002, "HTTP Activity"), activity);
    let mut r_ = record(
        &k,
        s,
        Status::Success,
        format!(
            "brokered {} {} {} allowed{}",
            r.method,
            r.target,
            r.path,
            match &r.rule {
                Some(rule) => format!(" by rule {rule}"),
                None => String::new(),
            }
        ),
    );
    let mut url = json!({ "path": r.path, "scheme": "https" });
    if let (Some((host, port)), Some(u)) = (host_port(&r.target), url.as_object_mut()) {
        u.insert("hostname".into(), json!(host));
        u.insert("port".into(), json!(port));
    }
    r_.insert("dst_endpoint".into(), endpoint(&r.target));
    r_.insert(
        "http_request".into(),
        json!({ "http_method": r.method, "url": url }),
    );
    r_.insert("http_response".into(), json!({ "code": r.status }));
    // Beside the session id and backend every record has there.
    if let Some(Value::Object(u)) = r_.get_mut("unmapped") {
        u.insert("rule".into(), json!(r.rule));
        u.insert("credential_injected".into(), json!(r.credential_injected));
    }
    Value::Object(r_)
}

/// The endpoint `target` names: an address or a host name with a port,
/// or a Unix socket by its path.
fn endpoint(target: &str) -> Value {
    match host_port(target) {
        Some((host, port)) if host.parse::<std::net::IpAddr>().is_ok() => {
            json!({ "ip": host, "port": port })
        }
        Some((host, port)) => json!({ "hostname": host, "port": port }),
        None => json!({ "name": target }),
    }
}

/// `host:port` or `[v6]:port` split, when `target` has that form.
fn host_port(target: &str) -> Option<(&str, u16)> {
    let (host, port) = target.rsplit_once(':')?;
    let port = port.parse().ok()?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    (!host.is_empty() && !host.contains('/')).then_some((host, port))
}

/// A refusal (a violation) the sandbox reported: File System Activity for
/// file actions, Network Activity for network ones (an allowed host whose
/// upstream failed is a Fail, not a Refuse).
pub(crate) fn refusal(
    s: &SessionRef,
    c: Option<&CommandRef>,
    action: &str,
    target: &str,
    raw: Option<&str>,
) -> Value {
    let reason = raw.unwrap_or("refused by the session's policy");
    // The broker's refusal of a request (`host:port path`): HTTP
    // Activity, answered 403; of a connection (`host:port`): Network
    // Activity.
    if action == cred_broker::BROKER_DENY
        && let Some((authority, path)) = target.split_once(' ')
    {
        let k = kind(NETWORK, (4002, "HTTP Activity"), (0, "Unknown"));
        let mut r = record(
            &k,
            s,
            Status::Failure(reason),
            format!("brokered request to {authority} {path} refused"),
        );
        let mut url = json!({ "path": path });
        if let (Some((host, port)), Some(u)) = (host_port(authority), url.as_object_mut()) {
            u.insert("hostname".into(), json!(host));
            u.insert("port".into(), json!(port));
            u.insert("scheme".into(), json!("https"));
        }
        r.insert("dst_endpoint".into(), endpoint(authority));
        r.insert("http_request".into(), json!({ "url": url }));
        r.insert("http_response".into(), json!({ "code": 403 }));
        if let Some(c) = c {
            r.insert("app_name".into(), json!(c.name));
        }
        return Value::Object(r);
    }
    if action.starts_with("network") || action == cred_broker::BROKER_DENY {
        let upstream = raw.is_some_and(|r| r.contains("upstream failed"));
        let activity = if action == "network-bind" {
            (7, "Listen")
        } else if upstream {
            (4, "Fail")
        } else {
            (5, "Refuse")
        };
        let k = kind(NETWORK, (4001, "Network Activity"), activity);
        let verb = if upstream { "failed" } else { "refused" };
        let mut r = record(
            &k,
            s,
            Status::Failure(reason),
            format!("{action} {target} {verb}"),
        );
        r.insert("dst_endpoint".into(), endpoint(target));
        if let Some(c) = c {
            r.insert("app_name".into(), json!(c.name));
        }
        return Value::Object(r);
    }
    let activity = match action {
        "file-write-create" => (1, "Create"),
        a if a.starts_with("file-read") => (2, "Read"),
        "file-write-unlink" => (4, "Delete"),
        _ => (3, "Update"),
    };
    let k = kind(SYSTEM, (1001, "File System Activity"), activity);
    let mut r = record(
        &k,
        s,
        Status::Failure(reason),
        format!("{action} {target} refused"),
    );
    let name = target.rsplit('/').find(|c| !c.is_empty()).unwrap_or(target);
    r.insert(
        "file".into(),
        json!({ "name": name, "path": target, "type_id": 0 }),
    );
    let mut a = actor(s);
    if let (Some(c), Some(obj)) = (c, a.as_object_mut()) {
        obj.insert("process".into(), process(c));
    }
    r.insert("actor".into(), a);
    r.insert("device".into(), device(s));
    Value::Object(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn times_are_rfc3339_with_microseconds() {
        for (secs, micros, want) in [
            (0, 0, "1970-01-01T00:00:00.000000Z"),
            (951_782_400, 5, "2000-02-29T00:00:00.000005Z"),
            (1_796_657_696, 123_456, "2026-12-07T15:34:56.123456Z"),
            (4_102_444_799, 999_999, "2099-12-31T23:59:59.999999Z"),
        ] {
            let t = UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_micros(micros);
            assert_eq!(rfc3339_micros(t), want);
        }
    }

    #[test]
    fn targets_split_into_endpoints() {
        assert_eq!(host_port("example.com:443"), Some(("example.com", 443)));
        assert_eq!(host_port("[::1]:53"), Some(("::1", 53)));
        assert_eq!(host_port("/run/agent.sock"), None);
        assert_eq!(host_port("unix-peer:uid=5"), None);
    }
}
