//! Events a running sandbox reports, and policy violations (R-SPEC-5).

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A denied operation: the verb, its target and the raw log line if any.
///
/// `action` uses Seatbelt's verbs where one exists (`file-read*`,
/// `file-write-create`, `network-outbound`); `target` is a path or `host:port`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxViolation {
    /// The verb that was denied.
    pub action: String,
    /// The path or host that was the target.
    pub target: String,
    /// The raw log line, useful for debugging.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
}

impl SandboxViolation {
    /// The action name for a denied outbound connection.
    pub const NETWORK_OUTBOUND: &'static str = "network-outbound";

    /// A violation without a raw line.
    pub fn new(action: impl Into<String>, target: impl Into<String>) -> SandboxViolation {
        SandboxViolation {
            action: action.into(),
            target: target.into(),
            raw: None,
        }
    }

    /// A denied outbound connection to `host:port`.
    pub fn network_outbound(host: &str, port: u16) -> SandboxViolation {
        let target = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        SandboxViolation::new(SandboxViolation::NETWORK_OUTBOUND, target)
    }

    /// Attaches the raw log line.
    pub fn with_raw(mut self, raw: impl Into<String>) -> SandboxViolation {
        self.raw = Some(raw.into());
        self
    }
}

impl fmt::Display for SandboxViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.action, self.target)
    }
}

/// Why the host killed a sandboxed process.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum KillReason {
    /// Out of memory.
    Oom,
    /// A time limit ran out.
    Timeout,
    /// Stopped by a person or the host program.
    Manual,
    /// Ended because its sandbox was destroyed while it ran.
    Destroy,
    /// Killed by a signal the host did not send on purpose.
    Signal,
}

/// One event from a sandbox, tagged by `type` when serialised.
///
/// ```
/// use sandbox_core::SandboxEvent;
/// let json = serde_json::to_string(&SandboxEvent::Exit { exit_code: 3 }).unwrap();
/// assert_eq!(json, r#"{"type":"exit","exitCode":3}"#);
/// ```
///
/// Output keeps its bytes exact in a form a person can read: valid UTF-8
/// is `text`, anything else `base64` (standard alphabet, padded). Reading
/// accepts both, and also the older `data` array of byte values; exactly
/// one of the three must be there.
///
/// ```
/// use sandbox_core::SandboxEvent;
/// let hi = SandboxEvent::Stdout { data: b"hi\n".to_vec() };
/// assert_eq!(serde_json::to_string(&hi).unwrap(), r#"{"type":"stdout","text":"hi\n"}"#);
/// let raw = SandboxEvent::Stderr { data: vec![0xff, 0x00] };
/// let json = serde_json::to_string(&raw).unwrap();
/// assert_eq!(json, r#"{"type":"stderr","base64":"/wA="}"#);
/// assert_eq!(serde_json::from_str::<SandboxEvent>(&json).unwrap(), raw);
/// let old: SandboxEvent = serde_json::from_str(r#"{"type":"stdout","data":[104,105]}"#).unwrap();
/// assert_eq!(old, SandboxEvent::Stdout { data: b"hi".to_vec() });
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SandboxEvent {
    /// Bytes the process wrote to standard output.
    Stdout {
        /// The bytes, as written.
        data: Vec<u8>,
    },
    /// Bytes the process wrote to standard error.
    Stderr {
        /// The bytes, as written.
        data: Vec<u8>,
    },
    /// The process exited.
    Exit {
        /// Its exit status.
        exit_code: i32,
    },
    /// The sandbox is starting.
    Starting,
    /// The sandbox is ready for exec calls.
    Ready,
    /// The host killed the process.
    Killed {
        /// Why, when known.
        reason: Option<KillReason>,
        /// The signal number, when known.
        signal: Option<i32>,
    },
    /// A policy was violated.
    Violation {
        /// What was denied.
        violation: SandboxViolation,
    },
}

/// The serialised form, borrowing from the event.
#[derive(Serialize)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
enum WireOut<'a> {
    Stdout(Output<'a>),
    Stderr(Output<'a>),
    Exit {
        exit_code: i32,
    },
    Starting,
    Ready,
    Killed {
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<KillReason>,
        #[serde(skip_serializing_if = "Option::is_none")]
        signal: Option<i32>,
    },
    Violation {
        violation: &'a SandboxViolation,
    },
}

/// The form read back.
#[derive(Deserialize)]
#[serde(
    tag = "type",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
enum WireIn {
    Stdout(OutputIn),
    Stderr(OutputIn),
    Exit {
        exit_code: i32,
    },
    Starting,
    Ready,
    Killed {
        #[serde(default)]
        reason: Option<KillReason>,
        #[serde(default)]
        signal: Option<i32>,
    },
    Violation {
        violation: SandboxViolation,
    },
}

/// Output bytes as `{"text": ...}` or `{"base64": ...}`.
struct Output<'a>(&'a [u8]);

impl Serialize for Output<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(1))?;
        match std::str::from_utf8(self.0) {
            Ok(text) => map.serialize_entry("text", text)?,
            Err(_) => map.serialize_entry("base64", &BASE64.encode(self.0))?,
        }
        map.end()
    }
}

/// Output bytes read back: one of `text`, `base64` or the older `data`.
#[derive(Deserialize)]
struct OutputIn {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    base64: Option<String>,
    #[serde(default)]
    data: Option<Vec<u8>>,
}

impl OutputIn {
    fn bytes<E: serde::de::Error>(self) -> Result<Vec<u8>, E> {
        match (self.text, self.base64, self.data) {
            (Some(t), None, None) => Ok(t.into_bytes()),
            (None, Some(b), None) => BASE64
                .decode(b.as_bytes())
                .map_err(|e| E::custom(format_args!("output in base64 that does not decode: {e}"))),
            (None, None, Some(d)) => Ok(d),
            _ => Err(E::custom(
                "output needs exactly one of text, base64 or data",
            )),
        }
    }
}

const BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

impl Serialize for SandboxEvent {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let wire = match self {
            SandboxEvent::Stdout { data } => WireOut::Stdout(Output(data)),
            SandboxEvent::Stderr { data } => WireOut::Stderr(Output(data)),
            SandboxEvent::Exit { exit_code } => WireOut::Exit {
                exit_code: *exit_code,
            },
            SandboxEvent::Starting => WireOut::Starting,
            SandboxEvent::Ready => WireOut::Ready,
            SandboxEvent::Killed { reason, signal } => WireOut::Killed {
                reason: *reason,
                signal: *signal,
            },
            SandboxEvent::Violation { violation } => WireOut::Violation { violation },
        };
        wire.serialize(s)
    }
}

impl<'de> Deserialize<'de> for SandboxEvent {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SandboxEvent, D::Error> {
        Ok(match WireIn::deserialize(d)? {
            WireIn::Stdout(o) => SandboxEvent::Stdout { data: o.bytes()? },
            WireIn::Stderr(o) => SandboxEvent::Stderr { data: o.bytes()? },
            WireIn::Exit { exit_code } => SandboxEvent::Exit { exit_code },
            WireIn::Starting => SandboxEvent::Starting,
            WireIn::Ready => SandboxEvent::Ready,
            WireIn::Killed { reason, signal } => SandboxEvent::Killed { reason, signal },
            WireIn::Violation { violation } => SandboxEvent::Violation { violation },
        })
    }
}
