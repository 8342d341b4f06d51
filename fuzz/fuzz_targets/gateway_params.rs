//! `plugin_tool` parameters.
//!
//! The input is the `params` JSON. A parsed action is the one its `action` field names; a
//! describe's `project` is an absolute path of some platform within its bound, a call's
//! `project_target` a target id; a rejection is always `invalid_arguments` / `not_started`, with
//! a short message free of control characters.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use webcodex_plugin_host::valid_project_target;
use webcodex_plugin_host::Action;
use webcodex_plugin_host::MAX_PROJECT_BYTES;
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
            if let Action::Call {
                arguments,
                project_target,
                ..
            } = &action
            {
                assert!(arguments.is_object(), "call arguments are an object");
                if let Some(target) = project_target {
                    assert!(valid_project_target(target), "a target id: {target:?}");
                }
            }
            if let Action::Describe {
                project: Some(project),
                ..
            } = &action
            {
                assert!(!project.is_empty() && project.len() <= MAX_PROJECT_BYTES);
                assert!(!project.chars().any(char::is_control), "clean: {project:?}");
                let bytes = project.as_bytes();
                assert!(
                    bytes[0] == b'/'
                        || bytes.starts_with(b"\\\\")
                        || (bytes.len() > 2 && bytes[1] == b':'),
                    "absolute somewhere: {project:?}"
                );
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
