//! runner.toml: the plugin part of a runner configuration.
//!
//! The input is the file's text. Parsing never panics; a rejection is
//! `plugin_config_parse_failed` or `plugin_config_invalid` in the config phase; an accepted
//! configuration respects the bounds (8 providers, timeouts 1..=120 s, absolute cwd,
//! `restart_max` 1..=100).
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use webcodex_plugin_host::ErrorCode;
use webcodex_plugin_host::{parse_runner_config, DEFAULT_MAX_PROVIDERS, RESTART_MAX_RANGE};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match parse_runner_config(text, DEFAULT_MAX_PROVIDERS) {
        Ok(config) => {
            assert!(config.plugins.providers.len() <= DEFAULT_MAX_PROVIDERS);
            for provider in &config.plugins.providers {
                assert!(
                    (Duration::from_secs(1)..=Duration::from_secs(120)).contains(&provider.timeout)
                );
                assert!(RESTART_MAX_RANGE.contains(&provider.restart.max));
                if let Some(cwd) = &provider.cwd {
                    assert!(cwd.is_absolute(), "cwd is absolute");
                }
                assert!(config.provider(&provider.id).is_some());
            }
        }
        Err(error) => {
            assert!(
                matches!(
                    error.code(),
                    ErrorCode::ConfigParseFailed | ErrorCode::ConfigInvalid
                ),
                "unexpected code {:?}",
                error.code()
            );
        }
    }
});
