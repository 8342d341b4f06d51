//! The format of the log lines on stderr: plain text (the default) or, with `--log-format json`
//! on the long-running commands (`serve`, `gateway`, `mcp`, `connect`), one JSON object per
//! line with `ts`, `level`, `target` and `msg`. Both carry a UTC timestamp (RFC 3339,
//! milliseconds). A line written while a request runs on its thread also carries that
//! request's fields (`trace_id`, and once known `runner`, `plugin`, `tool`, `action`,
//! `dispatch`, `duration_ms`): JSON keys, or `[key=value …]` after the text message. The code never logs a token, an argument value,
//! an environment value or a path.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use webcodex_plugin_host::{current_trace_fields, RequestFields};

/// True once `--log-format json` was chosen.
static JSON: AtomicBool = AtomicBool::new(false);

/// The value of `--log-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// `TIMESTAMP LEVEL target: message`.
    Text,
    /// `{"ts":…,"level":…,"target":…,"msg":…}`.
    Json,
}

/// `--log-format`, shared by the long-running commands.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct LogArgs {
    /// The format of the log lines on stderr: text, or json (one object per line with ts,
    /// level, target and msg, and a request's trace_id, runner, plugin, tool, action,
    /// dispatch and duration_ms on its lines).
    #[arg(
        long = "log-format",
        value_enum,
        default_value = "text",
        value_name = "FORMAT"
    )]
    log_format: LogFormat,
}

impl LogArgs {
    /// Switches the process's log lines to the chosen format (before the command logs anything).
    pub(crate) fn apply(&self) {
        JSON.store(self.log_format == LogFormat::Json, Ordering::Relaxed);
    }
}

/// Writes one record in the chosen format (the logger's format function).
pub(crate) fn write_record(
    out: &mut env_logger::fmt::Formatter,
    record: &log::Record<'_>,
) -> std::io::Result<()> {
    let ts = rfc3339(SystemTime::now());
    let fields = current_trace_fields();
    if JSON.load(Ordering::Relaxed) {
        let mut line = serde_json::json!({
            "ts": ts,
            "level": record.level().as_str().to_ascii_lowercase(),
            "target": record.target(),
            "msg": record.args().to_string(),
        });
        if let (Some(fields), Some(object)) = (fields, line.as_object_mut()) {
            for (key, value) in field_pairs(&fields) {
                let value = match key {
                    "duration_ms" => value.parse::<u64>().map_or(value.into(), Into::into),
                    _ => value.into(),
                };
                object.insert(key.to_string(), value);
            }
        }
        writeln!(out, "{line}")
    } else {
        write!(
            out,
            "{ts} {:<5} {}: {}",
            record.level(),
            record.target(),
            record.args()
        )?;
        if let Some(fields) = fields {
            let pairs: Vec<String> = field_pairs(&fields)
                .into_iter()
                .map(|(key, value)| format!("{key}={value}"))
                .collect();
            write!(out, " [{}]", pairs.join(" "))?;
        }
        writeln!(out)
    }
}

/// The request's fields that are known, in a fixed order.
fn field_pairs(fields: &RequestFields) -> Vec<(&'static str, String)> {
    let mut pairs = vec![("trace_id", fields.trace_id.clone())];
    let named = [
        ("runner", fields.runner.as_deref()),
        ("plugin", fields.plugin.as_deref()),
        ("tool", fields.tool.as_deref()),
        ("action", fields.action),
        ("dispatch", fields.dispatch),
    ];
    for (key, value) in named {
        if let Some(value) = value {
            pairs.push((key, value.to_string()));
        }
    }
    if let Some(ms) = fields.duration_ms {
        pairs.push(("duration_ms", ms.to_string()));
    }
    pairs
}

/// `2026-12-01T20:10:00.123Z`.
fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_796_155_200_123);
        assert_eq!(rfc3339(t), "2026-12-01T20:00:00.123Z");
        // A leap day.
        let t = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(rfc3339(t), "2000-02-29T00:00:00.000Z");
    }
}
