//! The restart policy keys of runner.toml: `restart` and `restart_max`, in `[plugins]` (the
//! default of every provider) and in a `[[plugins.providers]]` entry (its own).

use toml::{Table, Value};

use super::{invalid, Result};

/// `restart_max` when absent.
pub const DEFAULT_RESTART_MAX: u32 = 5;
/// The values `restart_max` may take.
pub const RESTART_MAX_RANGE: std::ops::RangeInclusive<u32> = 1..=100;

/// What the host does when a provider's plugin exits, or its instance is retired after a
/// fault, by itself (not by a reload or shutdown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Restart {
    /// It stays down until a reload (the default).
    #[default]
    Never,
    /// A new instance is started after a backoff, at most `restart_max` times in a row.
    OnFailure,
}

impl Restart {
    /// The value as written in runner.toml: `never` or `on-failure`.
    pub fn as_str(self) -> &'static str {
        match self {
            Restart::Never => "never",
            Restart::OnFailure => "on-failure",
        }
    }
}

/// One provider's restart policy (`restart` and `restart_max`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicy {
    /// `restart`: `never` (default) or `on-failure`.
    pub restart: Restart,
    /// `restart_max`: the most restarts in a row (1..=100, default 5); after that many failed
    /// in a row, the provider stays down until a reload.
    pub max: u32,
}

impl Default for RestartPolicy {
    fn default() -> Self {
        RestartPolicy {
            restart: Restart::Never,
            max: DEFAULT_RESTART_MAX,
        }
    }
}

impl RestartPolicy {
    /// The policy `on-failure` with the default `restart_max`.
    pub fn on_failure() -> RestartPolicy {
        RestartPolicy {
            restart: Restart::OnFailure,
            ..RestartPolicy::default()
        }
    }
}

/// The keys of this module, for the strict key lists of both tables.
pub(super) const KEYS: [&str; 2] = ["restart", "restart_max"];

/// Reads `restart` and `restart_max` of table `t` (at `path`), each falling back to `default`.
pub(super) fn policy(t: &Table, path: &str, default: RestartPolicy) -> Result<RestartPolicy> {
    let restart = match t.get("restart") {
        None => default.restart,
        Some(v) => match v.as_str() {
            Some("never") => Restart::Never,
            Some("on-failure") => Restart::OnFailure,
            _ => {
                return Err(invalid(format!(
                    "{path}.restart must be \"never\" or \"on-failure\""
                )))
            }
        },
    };
    let max = match t.get("restart_max") {
        None => default.max,
        Some(v) => max(v, &format!("{path}.restart_max"))?,
    };
    Ok(RestartPolicy { restart, max })
}

fn max(v: &Value, key: &str) -> Result<u32> {
    v.as_integer()
        .and_then(|n| u32::try_from(n).ok())
        .filter(|n| RESTART_MAX_RANGE.contains(n))
        .ok_or_else(|| {
            invalid(format!(
                "{key} must be an integer in {}..={} (the most restarts in a row)",
                RESTART_MAX_RANGE.start(),
                RESTART_MAX_RANGE.end()
            ))
        })
}

#[cfg(test)]
mod tests {
    use crate::env::{parse_runner_config, DEFAULT_MAX_PROVIDERS};
    use crate::error::ErrorCode;

    use super::*;

    fn parse(text: &str) -> crate::error::Result<crate::env::RunnerConfig> {
        parse_runner_config(text, DEFAULT_MAX_PROVIDERS)
    }

    const TWO: &str = "[[plugins.providers]]\nid = \"a\"\nname = \"A\"\ncommand = \"x\"\n\
                       [[plugins.providers]]\nid = \"b\"\nname = \"B\"\ncommand = \"x\"\n";

    #[test]
    fn the_default_is_never_with_five() {
        let config = parse(TWO).unwrap();
        for p in &config.plugins.providers {
            assert_eq!(p.restart, RestartPolicy::default());
            assert_eq!(p.restart.restart, Restart::Never);
            assert_eq!(p.restart.max, 5);
        }
    }

    #[test]
    fn the_plugins_table_sets_the_default_and_a_provider_its_own() {
        let text = "[plugins]\nrestart = \"on-failure\"\nrestart_max = 3\n\
                    [[plugins.providers]]\nid = \"a\"\nname = \"A\"\ncommand = \"x\"\n\
                    [[plugins.providers]]\nid = \"b\"\nname = \"B\"\ncommand = \"x\"\nrestart = \"never\"\n\
                    [[plugins.providers]]\nid = \"c\"\nname = \"C\"\ncommand = \"x\"\nrestart_max = 9\n";
        let config = parse(text).unwrap();
        let policy = |id: &str| config.provider(id).unwrap().restart;
        assert_eq!(
            policy("a"),
            RestartPolicy {
                restart: Restart::OnFailure,
                max: 3
            }
        );
        assert_eq!(
            policy("b"),
            RestartPolicy {
                restart: Restart::Never,
                max: 3
            }
        );
        assert_eq!(
            policy("c"),
            RestartPolicy {
                restart: Restart::OnFailure,
                max: 9
            }
        );
    }

    #[test]
    fn bad_values_name_the_key_and_what_is_allowed() {
        let cases = [
            (
                "[plugins]\nrestart = \"always\"\n",
                "plugins.restart must be \"never\" or \"on-failure\"",
            ),
            (
                "[plugins]\nrestart = true\n",
                "plugins.restart must be \"never\" or \"on-failure\"",
            ),
            (
                "[plugins]\nrestart_max = 0\n",
                "plugins.restart_max must be an integer in 1..=100",
            ),
            (
                "[plugins]\nrestart_max = 101\n",
                "plugins.restart_max must be an integer in 1..=100",
            ),
            (
                "[plugins]\nrestart_max = \"5\"\n",
                "plugins.restart_max must be an integer in 1..=100",
            ),
            (
                "[[plugins.providers]]\nid = \"a\"\nname = \"A\"\ncommand = \"x\"\nrestart = \"On-Failure\"\n",
                "plugins.providers[0].restart must be",
            ),
            (
                "[[plugins.providers]]\nid = \"a\"\nname = \"A\"\ncommand = \"x\"\nrestart_max = -1\n",
                "plugins.providers[0].restart_max must be an integer in 1..=100",
            ),
            (
                "[[plugins.providers]]\nid = \"a\"\nname = \"A\"\ncommand = \"x\"\nrestarts = 1\n",
                "unknown key plugins.providers[0].restarts",
            ),
        ];
        for (text, needle) in cases {
            let error = parse(text).expect_err(text);
            assert_eq!(error.code(), ErrorCode::ConfigInvalid, "{text}");
            assert!(
                error.message().contains(needle),
                "{text}: {:?} should contain {needle:?}",
                error.message()
            );
        }
        // The range's ends are allowed.
        for max in [1, 100] {
            let text = format!("[plugins]\nrestart_max = {max}\n{TWO}");
            assert_eq!(parse(&text).unwrap().plugins.providers[0].restart.max, max);
        }
    }
}
