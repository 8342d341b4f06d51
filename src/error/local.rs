//! The words of [`Error::local_detail`](super::Error::local_detail): what happened, for the
//! operator of this host only (its log and the in-process CLI), never for a `plugin_tool`
//! output.

use std::process::ExitStatus;
use std::time::Duration;

use super::{Error, ErrorCode};

impl Error {
    /// A `plugin_timeout` with the detail of its `timeout` ([`timeout_detail`]); any other
    /// error as it is.
    pub(crate) fn timed_out_after(self, timeout: Duration, configured: bool) -> Error {
        if self.code() == ErrorCode::Timeout {
            self.with_local_detail(timeout_detail(timeout, configured))
        } else {
            self
        }
    }
}

/// How a plugin's process ended: `the plugin exited with status 3`, `the plugin was killed by
/// signal 9 (SIGKILL)`.
pub(crate) fn exit_detail(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            let core = if status.core_dumped() {
                ", core dumped"
            } else {
                ""
            };
            return match signal_name(signal) {
                Some(name) => format!("the plugin was killed by signal {signal} ({name}{core})"),
                None => format!("the plugin was killed by signal {signal}{core}"),
            };
        }
    }
    match status.code() {
        Some(code) => format!("the plugin exited with status {code}"),
        None => format!("the plugin ended ({status})"),
    }
}

/// The name of a common signal.
#[cfg(unix)]
fn signal_name(signal: i32) -> Option<&'static str> {
    use crate::sys::unix::Signal;
    let names = [
        (Signal::HUP, "SIGHUP"),
        (Signal::INT, "SIGINT"),
        (Signal::QUIT, "SIGQUIT"),
        (Signal::ILL, "SIGILL"),
        (Signal::ABORT, "SIGABRT"),
        (Signal::BUS, "SIGBUS"),
        (Signal::FPE, "SIGFPE"),
        (Signal::KILL, "SIGKILL"),
        (Signal::SEGV, "SIGSEGV"),
        (Signal::PIPE, "SIGPIPE"),
        (Signal::ALARM, "SIGALRM"),
        (Signal::TERM, "SIGTERM"),
        (Signal::USR1, "SIGUSR1"),
        (Signal::USR2, "SIGUSR2"),
    ];
    names
        .iter()
        .find(|(number, _)| number.as_raw() == signal)
        .map(|(_, name)| *name)
}

/// What a request's deadline was and where it is set: the provider's `timeout_secs` in
/// runner.toml, else `[plugins] request_timeout_secs`; `configured` is false for a timeout
/// an embedder passed with the call.
pub(crate) fn timeout_detail(timeout: Duration, configured: bool) -> String {
    let value = if timeout.subsec_millis() == 0 {
        format!("{} s", timeout.as_secs())
    } else {
        format!("{} ms", timeout.as_millis())
    };
    if configured {
        format!(
            "the plugin did not answer within {value}, the timeout set by the provider's \
             `timeout_secs` in runner.toml, else by `request_timeout_secs` under [plugins] \
             (default 30, 1..=120); raise it if the plugin needs longer"
        )
    } else {
        format!("the plugin did not answer within {value}, the timeout this call was given")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn exit_details_name_the_status_or_the_signal() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            exit_detail(ExitStatus::from_raw(3 << 8)),
            "the plugin exited with status 3"
        );
        assert_eq!(
            exit_detail(ExitStatus::from_raw(9)),
            "the plugin was killed by signal 9 (SIGKILL)"
        );
        assert_eq!(
            exit_detail(ExitStatus::from_raw(11 | 0x80)),
            "the plugin was killed by signal 11 (SIGSEGV, core dumped)"
        );
    }

    #[test]
    fn timeout_details_name_the_value_and_the_keys() {
        let text = timeout_detail(Duration::from_secs(2), true);
        assert!(text.contains("within 2 s"), "{text}");
        assert!(text.contains("timeout_secs") && text.contains("request_timeout_secs"));
        let text = timeout_detail(Duration::from_millis(1500), false);
        assert!(
            text.contains("1500 ms") && !text.contains("timeout_secs"),
            "{text}"
        );
    }
}
