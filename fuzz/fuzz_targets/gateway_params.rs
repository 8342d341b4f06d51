//! `plugin_tool` parameters.
//!
//! The input is the `params` JSON. A parsed action is the one its `action` field names; a
//! rejection is always `invalid_arguments` / `not_started`, with a short message free of
//! control characters.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use webcodex_plugin_host::__private::Action;
use webcodex_plugin_host::{Dispatch, ErrorCode};

fuzz_target!(|data: &[u8]| {
    let Ok(params) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    match Action::parse(&params) {
        Ok(action) => {
            assert_eq!(
                params["action"].as_str(),
                Some(action.kind().as_str()),
                "the action parsed is the one named"
            );
            if let Some(id) = action.recording_session_id() {
                assert!(!id.is_empty() && !id.chars().any(char::is_control));
            }
            if let Action::Call { arguments, .. } = &action {
                assert!(arguments.is_object(), "call arguments are an object");
            }
        }
        Err(error) => {
            assert_eq!(error.code(), ErrorCode::InvalidArguments);
            assert_eq!(error.dispatch(), Dispatch::NotStarted);
            let message = error.message();
            assert!(!message.chars().any(char::is_control), "clean message");
            assert!(message.len() <= 512, "bounded message");
        }
    }
});
