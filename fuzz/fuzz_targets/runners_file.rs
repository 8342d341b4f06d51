//! The runners file of a front gateway (`--runners F`): `[[runners]]` entries in TOML.
//!
//! The input is the file's text. Parsing never panics; an accepted file lists 1 to 64 runners
//! with valid, unique ids (never `local` beside a local runner), names of 1 to 128 bytes
//! without control characters, http(s) URLs and absolute paths; a rejection is one line of
//! bounded length.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use webcodex_plugin_host::{
    parse_runners, valid_runner_id, TokenSource, LOCAL_RUNNER, MAX_RUNNERS, MAX_RUNNER_NAME_BYTES,
};

fuzz_target!(|data: &[u8]| {
    let Some((&flag, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let with_local = flag & 1 == 1;
    match parse_runners(text, Path::new("/base"), with_local) {
        Ok(entries) => {
            assert!((1..=MAX_RUNNERS).contains(&entries.len()));
            for (i, entry) in entries.iter().enumerate() {
                assert!(valid_runner_id(&entry.id));
                assert!(!(with_local && entry.id == LOCAL_RUNNER));
                assert!(entries[..i].iter().all(|e| e.id != entry.id));
                assert!(!entry.name.trim().is_empty());
                assert!(entry.name.len() <= MAX_RUNNER_NAME_BYTES);
                assert!(!entry.name.chars().any(char::is_control));
                assert!(entry.url.starts_with("http://") || entry.url.starts_with("https://"));
                match &entry.token {
                    TokenSource::File(path) => assert!(path.is_absolute()),
                    TokenSource::Env(name) => {
                        assert!(!name.is_empty() && !name.contains(['=', '\0']))
                    }
                    other => panic!("a token source this target does not check: {other:?}"),
                }
                if let Some(ca) = &entry.ca_file {
                    assert!(ca.is_absolute());
                }
            }
        }
        Err(error) => {
            let message = error.to_string();
            assert!(!message.is_empty());
            assert!(!message.contains(['\n', '\r']), "one line: {message:?}");
            assert!(message.len() <= 1024, "bounded: {} bytes", message.len());
        }
    }
});
