//! How agent-run writes its lines on stderr (`--log-format`): `text`, one
//! `agent-run: ...` (or `violation: ...`) line each, as a person reads
//! them; or `json`, one JSON object per line through a `tracing`
//! subscriber, for a log shipper: the time (RFC 3339, microseconds, UTC),
//! the level, the target (`agent_run` for ours, `agent_sandbox` for the
//! manager's), the message, the event's fields, and the spans it was
//! logged in, outermost first, each with its fields (the launch's and the
//! command's carry the session id and the backend). The facade puts
//! nothing secret in a field; the command's own output is not logged.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::OnceLock;
use tracing::field::{Field, Visit};
use tracing::{Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// The choice of `--log-format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// One line per message, for a person.
    #[default]
    Text,
    /// One JSON object per line, through a `tracing` subscriber.
    Json,
}

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

/// Chooses the format for the rest of the run; `json` installs the
/// subscriber (once).
pub(crate) fn init(format: LogFormat) {
    if FORMAT.set(format).is_ok() && format == LogFormat::Json {
        let _ =
            tracing::subscriber::set_global_default(tracing_subscriber::registry().with(JsonLines));
    }
}

/// Whether the manager's lines go through `tracing` only (its log sink
/// then writes nothing itself).
pub(crate) fn is_json() -> bool {
    FORMAT.get() == Some(&LogFormat::Json)
}

/// Writes one of agent-run's lines (`line` as the text format shows it,
/// `agent-run: ` prefix included), ending it with `eol` in the text format
/// (a raw terminal needs `\r\n`).
pub(crate) fn say(level: Level, line: &str, eol: &str) {
    if !is_json() {
        eprint!("{line}{eol}");
        return;
    }
    let message = line.strip_prefix("agent-run: ").unwrap_or(line);
    match level {
        Level::ERROR => tracing::error!(target: "agent_run", "{message}"),
        Level::WARN => tracing::warn!(target: "agent_run", "{message}"),
        _ => tracing::info!(target: "agent_run", "{message}"),
    }
}

/// [`say`] at `info`, ending with a newline.
pub(crate) fn info(line: &str) {
    say(Level::INFO, line, "\n");
}

/// [`say`] at `error`, ending with a newline.
pub(crate) fn error(line: &str) {
    say(Level::ERROR, line, "\n");
}

/// A span's or an event's fields, as text.
#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

/// The layer that writes each event as a JSON line on stderr.
struct JsonLines;

impl<S> tracing_subscriber::Layer<S> for JsonLines
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        id: &tracing::span::Id,
        ctx: Context<'_, S>,
    ) {
        let mut f = Fields::default();
        attrs.record(&mut f);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(f);
        }
    }

    fn on_record(
        &self,
        id: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        ctx: Context<'_, S>,
    ) {
        if let Some(span) = ctx.span(id) {
            let mut ext = span.extensions_mut();
            if let Some(f) = ext.get_mut::<Fields>() {
                values.record(f);
            }
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: Context<'_, S>) {
        let mut f = Fields::default();
        event.record(&mut f);
        let message = f.0.remove("message").unwrap_or_default();
        let mut spans = Vec::new();
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                let mut obj = serde_json::Map::new();
                obj.insert("name".into(), span.name().into());
                if let Some(fields) = span.extensions().get::<Fields>() {
                    for (k, v) in &fields.0 {
                        obj.insert(k.clone(), v.clone().into());
                    }
                }
                spans.push(serde_json::Value::Object(obj));
            }
        }
        let meta = event.metadata();
        let line = serde_json::json!({
            "time": now_rfc3339(),
            "level": meta.level().as_str(),
            "target": meta.target(),
            "message": message,
            "fields": f.0,
            "spans": spans,
        });
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{line}");
    }
}

/// The current time as RFC 3339 in UTC with microseconds.
fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    rfc3339(now.as_secs(), now.subsec_micros())
}

/// `secs` since the epoch and `micros` as `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
fn rfc3339(secs: u64, micros: u32) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let mut s = String::with_capacity(27);
    let _ = write!(
        s,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    );
    s
}

#[cfg(test)]
mod tests {
    use super::rfc3339;

    #[test]
    fn times_are_rfc3339_in_utc() {
        assert_eq!(rfc3339(0, 0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(rfc3339(951_782_400, 5), "2000-02-29T00:00:00.000005Z");
        assert_eq!(
            rfc3339(1_796_688_000 + 3_661, 123_456),
            "2026-12-08T01:01:01.123456Z"
        );
    }
}
