//! Containment: a unique canary placed in a provider's args, cwd, environment and stderr (and a
//! command path) never appears in any plugin_tool output, success or failure.
//!
//! Excluded by design: the fixture's `env` and `cwd` tools, whose *own result* is the value of a
//! variable or the working directory: what a plugin chooses to return is its output.

mod gateway_support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use webcodex_plugin_host::env::ProviderConfig;
use webcodex_plugin_host::gateway::{Caller, Gateway};
use webcodex_plugin_host::transport::serve_lines;

use gateway_support::*;

struct Audit {
    canary: String,
    fixture: String,
    seen: usize,
}

impl Audit {
    fn check(&mut self, what: &str, output: &Value) {
        let text = output.to_string();
        assert!(
            !text.contains(&self.canary),
            "{what} leaked the canary: {text}"
        );
        assert!(
            !text.contains(&self.fixture),
            "{what} leaked the command: {text}"
        );
        assert!(!text.contains("fixture_plugin"), "{what}: {text}");
        self.seen += 1;
    }

    /// Runs a request and audits its output, whatever the outcome.
    fn run(&mut self, gw: &Gateway, params: Value) -> Value {
        let out = run(gw, params.clone());
        self.check(&params.to_string(), &out.output);
        out.output
    }
}

fn with_canary(id: &str, mode: &str, canary: &str, cwd: &std::path::Path) -> ProviderConfig {
    let mut p = provider(id, &[mode, &format!("--token={canary}"), canary]);
    p.cwd = Some(cwd.to_path_buf());
    p.timeout = Duration::from_secs(2);
    p
}

#[test]
fn the_canary_never_appears_in_any_output() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let canary = format!("wcCANARY{}x{nanos}", std::process::id());
    let cwd = temp_dir(&canary);
    let env = [
        ("FIXTURE_STDERR", format!("stderr says {canary}")),
        ("CANARY_SECRET", canary.clone()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();

    let mut missing = with_canary("missing", "normal", &canary, &cwd);
    missing.command = format!("/nonexistent/{canary}/plugin");
    let mixed = config(
        vec![
            with_canary("good", "normal", &canary, &cwd),
            with_canary("bad", "bad-tools", &canary, &cwd),
            with_canary("stray", "stray-stdout", &canary, &cwd),
            with_canary("exit", "exit-at-start", &canary, &cwd),
            with_canary("version", "bad-version", &canary, &cwd),
            with_canary("silent", "silent-init", &canary, &cwd),
            missing,
        ],
        &env,
    );
    let clean = config(vec![with_canary("good", "normal", &canary, &cwd)], &env);
    let gw = Arc::new(Gateway::new([
        ("local".to_string(), host(mixed)),
        ("clean".to_string(), host(clean)),
    ]));
    let mut audit = Audit {
        canary: canary.clone(),
        fixture: fixture().display().to_string(),
        seen: 0,
    };

    // list, in every form.
    audit.run(&gw, json!({"action":"list"}));
    for runner in ["local", "clean"] {
        let out = audit.run(&gw, json!({"action":"list","runner":runner}));
        assert!(out["plugins"].is_array());
    }
    for plugin in [
        "good", "bad", "stray", "exit", "version", "silent", "missing", "nope",
    ] {
        audit.run(
            &gw,
            json!({"action":"list","runner":"local","plugin":plugin}),
        );
    }

    // describe every tool, plus failures.
    let tools = audit.run(
        &gw,
        json!({"action":"list","runner":"clean","plugin":"good"}),
    );
    for tool in tools["tools"].as_array().unwrap() {
        audit.run(
            &gw,
            json!({"action":"describe","runner":"clean","plugin":"good","tool":tool["name"]}),
        );
    }
    for plugin in ["bad", "missing", "nope"] {
        audit.run(
            &gw,
            json!({"action":"describe","runner":"local","plugin":plugin,"tool":"echo"}),
        );
    }

    let describe = |audit: &mut Audit, tool: &str| -> String {
        let out = audit.run(
            &gw,
            json!({"action":"describe","runner":"clean","plugin":"good","tool":tool}),
        );
        out["binding"]
            .as_str()
            .unwrap_or_else(|| panic!("describe {tool}: {out}"))
            .to_string()
    };
    let call = |audit: &mut Audit, binding: &str, arguments: Value| -> Value {
        audit.run(
            &gw,
            json!({"action":"call","binding":binding,"arguments":arguments}),
        )
    };

    // Calls that succeed (the plugin writes the canary to stderr before each).
    let echo = describe(&mut audit, "echo");
    call(&mut audit, &echo, json!({"text":"hello"}));
    let stderr = describe(&mut audit, "stderr");
    let out = call(&mut audit, &stderr, json!({"bytes": 70000}));
    assert_eq!(out["content"][0]["text"], "wrote stderr");
    for (tool, args) in [
        ("is_error", json!({})),
        ("rpc_error", json!({})),
        ("add", json!({"a":"x","b":1})),
        ("sleep", json!({"ms":1})),
    ] {
        let b = describe(&mut audit, tool);
        call(&mut audit, &b, args);
    }
    call(&mut audit, "wc_pbind_AAAAAAAAAAAAAAAAAAAAAA", json!({}));

    // Calls that retire the provider: one per fresh instance, then an old binding.
    for (tool, args) in [
        ("crash", json!({})),
        ("garbage", json!({})),
        ("huge_line", json!({})),
        ("wrong_id", json!({"delta": 1})),
        ("bad_error", json!({})),
        ("invalid_result", json!({})),
        ("bad_output", json!({})),
        ("then_unsolicited", json!({})),
        ("hang", json!({})),
        ("exit_keep_stdout", json!({})),
    ] {
        let reload = audit.run(&gw, json!({"action":"reload","runner":"clean"}));
        assert_eq!(reload["failures"], json!([]));
        let b = describe(&mut audit, tool);
        let echo = describe(&mut audit, "echo");
        let out = call(&mut audit, &b, args);
        if tool == "then_unsolicited" {
            // The stray message fails the next request.
            call(&mut audit, &echo, json!({"text":"x"}));
        }
        assert!(out.get("content").is_some() || out.get("error").is_some());
        call(&mut audit, &echo, json!({"text":"x"}));
        audit.run(&gw, json!({"action":"list","runner":"clean"}));
        audit.run(
            &gw,
            json!({"action":"list","runner":"clean","plugin":"good"}),
        );
    }
    // A binding from before a reload.
    audit.run(&gw, json!({"action":"reload","runner":"clean"}));
    let old = describe(&mut audit, "echo");
    audit.run(&gw, json!({"action":"reload","runner":"clean"}));
    call(&mut audit, &old, json!({"text":"x"}));

    // check: ready and every kind of not ready.
    for plugin in [
        "good", "bad", "stray", "exit", "version", "silent", "missing", "nope",
    ] {
        audit.run(
            &gw,
            json!({"action":"check","runner":"local","plugin":plugin}),
        );
    }
    // reload with failures.
    let out = audit.run(&gw, json!({"action":"reload","runner":"local"}));
    assert!(!out["failures"].as_array().unwrap().is_empty());

    // catalog of the canary project (the caller names the path; the output must not echo it).
    let out = audit.run(
        &gw,
        json!({"action":"catalog","runner":"clean","project":cwd.display().to_string()}),
    );
    assert!(out["total_count"].as_u64().unwrap() > 0);
    audit.run(
        &gw,
        json!({"action":"catalog","runner":"local","project":cwd.display().to_string()}),
    );

    // The stdio transport's envelopes, including invalid lines.
    let (tx, rx) = crossbeam_channel::unbounded::<Vec<u8>>();
    struct Sink(crossbeam_channel::Sender<Vec<u8>>);
    impl std::io::Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let _ = self.0.send(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let input = [
        json!({"id":1,"tool":"plugin_tool","params":{"action":"list","runner":"local"}})
            .to_string(),
        json!({"id":2,"tool":"plugin_tool","params":{"action":"check","runner":"local","plugin":"stray"}})
            .to_string(),
        "garbage".to_string(),
    ]
    .join("\n");
    serve_lines(
        gw.clone(),
        Caller::trusted(),
        std::io::Cursor::new(input.into_bytes()),
        Sink(tx),
    )
    .unwrap();
    let written: Vec<u8> = rx.try_iter().flatten().collect();
    let text = String::from_utf8(written).unwrap();
    assert_eq!(text.lines().count(), 3);
    assert!(!text.contains(&canary), "{text}");

    // Positive controls: the canary really is in the plugin's environment, cwd and stderr.
    audit.run(&gw, json!({"action":"reload","runner":"clean"}));
    let env_tool = describe(&mut audit, "env");
    let out = run(
        &gw,
        json!({"action":"call","binding":env_tool,"arguments":{"name":"CANARY_SECRET"}}),
    );
    assert_eq!(out.output["content"][0]["text"], canary.as_str());
    let cwd_tool = describe(&mut audit, "cwd");
    let out = run(
        &gw,
        json!({"action":"call","binding":cwd_tool,"arguments":{}}),
    );
    assert!(out.output.to_string().contains(&canary));
    let provider = gw.runner("clean").unwrap().provider("good").unwrap();
    assert!(provider
        .stderr_lines()
        .iter()
        .any(|l| l.text.contains(&canary)));

    assert!(audit.seen > 80, "audited {} outputs", audit.seen);
    gw.shutdown();
}
