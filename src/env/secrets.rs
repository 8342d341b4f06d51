//! The secret filter: the variable names that never reach a plugin's environment.
//!
//! The fixed names (`WEBCODEX_TOKEN`, `WEBCODEX_PAT`, `WEBCODEX_AGENT_TOKEN`,
//! `WEBCODEX_USER_TOKEN`, `WEBCODEX_RUNNER_TOKEN`, `AUTHORIZATION`) are always removed; a host
//! learns more through [`SecretNames`] (a front passes every `token_env` of its runners file).
//! Every name is compared ASCII case-insensitively on every platform, so `webcodex_pat` or
//! `Edge_1_Token` is removed too.

use std::ffi::OsStr;

/// The names that are always removed.
const SENSITIVE: &[&str] = &[
    "WEBCODEX_TOKEN",
    "WEBCODEX_PAT",
    "WEBCODEX_AGENT_TOKEN",
    "WEBCODEX_USER_TOKEN",
    "WEBCODEX_RUNNER_TOKEN",
    "AUTHORIZATION",
];

/// The most extra names a filter keeps (a runners file names at most 64).
pub const MAX_SECRET_NAMES: usize = 256;

/// The names removed from a plugin's environment: the fixed ones and these extras.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecretNames {
    extra: Vec<String>,
}

impl SecretNames {
    /// The fixed names plus `extra` (empty names are ignored; at most [`MAX_SECRET_NAMES`]
    /// are kept, the rest of a longer list is dropped with a warning).
    pub fn with_extra<S: AsRef<str>>(extra: impl IntoIterator<Item = S>) -> SecretNames {
        let mut names: Vec<String> = extra
            .into_iter()
            .map(|s| s.as_ref().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        if names.len() > MAX_SECRET_NAMES {
            log::warn!(
                "only the first {MAX_SECRET_NAMES} extra secret variable names are filtered"
            );
            names.truncate(MAX_SECRET_NAMES);
        }
        SecretNames { extra: names }
    }

    /// True when `name` is one of the fixed or extra names, in any ASCII case.
    pub fn contains(&self, name: &OsStr) -> bool {
        // A name that is not UTF-8 cannot equal a UTF-8 name in any case.
        let Some(name) = name.to_str() else {
            return false;
        };
        SENSITIVE.iter().any(|s| s.eq_ignore_ascii_case(name))
            || self.extra.iter().any(|s| s.eq_ignore_ascii_case(name))
    }
}

/// True for the variables that are always removed (`WEBCODEX_TOKEN`, `WEBCODEX_PAT`,
/// `WEBCODEX_AGENT_TOKEN`, `WEBCODEX_USER_TOKEN`, `WEBCODEX_RUNNER_TOKEN`, `AUTHORIZATION`),
/// compared ASCII case-insensitively on every platform (`webcodex_pat` or `Authorization` is
/// removed too).
pub fn is_sensitive_variable(name: &OsStr) -> bool {
    SecretNames::default().contains(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_and_extra_names_in_any_case() {
        let names = SecretNames::with_extra(["EDGE_1_TOKEN", ""]);
        for hit in [
            "WEBCODEX_RUNNER_TOKEN",
            "webcodex_runner_token",
            "Authorization",
            "EDGE_1_TOKEN",
            "edge_1_token",
        ] {
            assert!(names.contains(OsStr::new(hit)), "{hit}");
        }
        for miss in ["EDGE_1_TOKENS", "PATH", "", "EDGE_2_TOKEN"] {
            assert!(!names.contains(OsStr::new(miss)), "{miss}");
        }
        assert!(!is_sensitive_variable(OsStr::new("EDGE_1_TOKEN")));
        assert!(is_sensitive_variable(OsStr::new("Webcodex_Runner_Token")));
    }
}
