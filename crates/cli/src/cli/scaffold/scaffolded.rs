//! Tests of `init` scaffolds: target rules, ids, the provider block and a real run of the
//! Python plugin.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{create, Lang, ScaffoldError};
use serde_json::{json, Value};
use webcodex_plugin_host::admit_tools_list;

/// A fresh, not yet existing path under the system temp dir.
fn temp_path(tag: &str) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    std::env::temp_dir().join(format!("wc-scaffold-{tag}-{}-{nanos}", std::process::id()))
}

/// Removes a temp tree on drop, also when the test fails.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn provider(block: &str) -> toml::Table {
    let parsed: toml::Table = toml::from_str(block).expect("provider block is valid TOML");
    let providers = parsed["plugins"]["providers"].as_array().unwrap();
    assert_eq!(providers.len(), 1, "{block}");
    providers[0].as_table().unwrap().clone()
}

#[test]
fn refuses_a_non_empty_directory_and_writes_nothing() {
    let root = temp_path("nonempty");
    let _cleanup = Cleanup(root.clone());
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("keep.txt"), "mine").unwrap();

    let err = create(&root, Some("x"), Lang::Python).unwrap_err();
    assert!(matches!(err, ScaffoldError::NotEmpty { .. }), "{err:?}");
    assert!(err.to_string().contains("not empty"), "{err}");
    let names: Vec<_> = std::fs::read_dir(&root).unwrap().collect();
    assert_eq!(names.len(), 1);
}

#[test]
fn refuses_a_path_that_is_a_file() {
    let root = temp_path("file");
    let _cleanup = Cleanup(root.clone());
    std::fs::create_dir_all(&root).unwrap();
    let file = root.join("plugin");
    std::fs::write(&file, "").unwrap();

    let err = create(&file, Some("x"), Lang::Rust).unwrap_err();
    assert!(
        matches!(err, ScaffoldError::NotADirectory { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("not a directory"), "{err}");
}

#[test]
fn creates_a_missing_directory_and_its_parents() {
    let root = temp_path("missing");
    let _cleanup = Cleanup(root.clone());
    let dir = root.join("deep").join("My Plugin");

    let scaffold = create(&dir, None, Lang::Python).unwrap();
    assert!(dir.is_dir());
    // The scaffold gives the ordinary `C:\…` form of a Windows path, not the verbatim `\\?\C:\…`.
    let canonical = std::fs::canonicalize(&dir).unwrap();
    let canonical = PathBuf::from(canonical.to_str().unwrap().trim_start_matches(r"\\?\"));
    let expected: Vec<PathBuf> = ["plugin.py", "README.md", ".gitignore"]
        .iter()
        .map(|name| canonical.join(name))
        .collect();
    assert_eq!(scaffold.files, expected);
    assert!(expected.iter().all(|f| f.is_file()));
    let readme = std::fs::read_to_string(canonical.join("README.md")).unwrap();
    assert!(readme.contains("webcodex-plugin check"), "{readme}");
    // The id was derived from "My Plugin".
    assert_eq!(
        provider(&scaffold.provider_block)["id"].as_str(),
        Some("my-plugin")
    );
}

#[test]
fn accepts_an_existing_empty_directory() {
    let root = temp_path("empty");
    let _cleanup = Cleanup(root.clone());
    std::fs::create_dir_all(&root).unwrap();
    let scaffold = create(&root, Some("empty-ok"), Lang::Rust).unwrap();
    // Cargo.toml, src/main.rs, README.md, .gitignore, and the plugin SDK's copy: its manifest
    // and its sources.
    assert_eq!(
        scaffold.files.len(),
        5 + webcodex_plugin_sdk::source::FILES.len()
    );
}

#[test]
fn derived_id_is_lowercased_replaced_and_cut_to_64() {
    let root = temp_path("derive");
    let _cleanup = Cleanup(root.clone());
    let long = format!("Über Tool.{}", "X".repeat(80));
    let scaffold = create(&root.join(&long), None, Lang::Python).unwrap();
    let id = provider(&scaffold.provider_block)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(id.len(), 64);
    assert!(id.starts_with("-ber-tool.xxx"), "{id}");
}

#[test]
fn invalid_explicit_id_is_refused_before_touching_the_disk() {
    let dir = temp_path("badid");
    let _cleanup = Cleanup(dir.clone());
    for bad in ["", "Upper", "has space", "a/b", &"x".repeat(65)] {
        let err = create(&dir, Some(bad), Lang::Python).unwrap_err();
        assert!(
            matches!(err, ScaffoldError::InvalidId { .. }),
            "{bad}: {err:?}"
        );
        assert!(err.to_string().contains("a-z, 0-9"), "{err}");
    }
    assert!(!dir.exists());
}

#[test]
fn explicit_id_overrides_the_directory_name() {
    let root = temp_path("explicit");
    let _cleanup = Cleanup(root.clone());
    let scaffold = create(&root.join("Whatever Name"), Some("tools.v2"), Lang::Python).unwrap();
    assert_eq!(
        provider(&scaffold.provider_block)["id"].as_str(),
        Some("tools.v2")
    );
}

#[cfg(unix)]
#[test]
fn provider_block_round_trips_a_path_with_spaces_quotes_and_a_backslash() {
    let root = temp_path("escape");
    let _cleanup = Cleanup(root.clone());
    let dir = root.join("my \"odd\" dir\\with 'quotes'");

    let scaffold = create(&dir, Some("odd"), Lang::Python).unwrap();
    let entry = provider(&scaffold.provider_block);
    let canonical = std::fs::canonicalize(&dir).unwrap();
    assert_eq!(entry["cwd"].as_str(), canonical.to_str());
    assert!(Path::new(entry["cwd"].as_str().unwrap()).is_absolute());
    assert_eq!(entry["id"].as_str(), Some("odd"));
    assert_eq!(entry["name"].as_str(), Some("odd"));
    assert_eq!(entry["command"].as_str(), Some("python3"));
    assert_eq!(entry["args"], toml::Value::Array(vec!["plugin.py".into()]));
    assert_eq!(
        entry.keys().collect::<Vec<_>>(),
        ["args", "command", "cwd", "id", "name"]
    );
}

#[cfg(unix)]
#[test]
fn rust_provider_runs_the_release_binary_by_absolute_path() {
    let root = temp_path("rustcmd");
    let _cleanup = Cleanup(root.clone());
    let dir = root.join("with space");
    let scaffold = create(&dir, Some("1.fast"), Lang::Rust).unwrap();
    let entry = provider(&scaffold.provider_block);
    let canonical = std::fs::canonicalize(&dir).unwrap();
    // Where the build puts it: target/release, unless this test's environment sets a target
    // directory (release_dir's own test covers that).
    let binary =
        super::release_dir(&canonical, &|name| std::env::var_os(name)).join("plugin-1-fast");
    if [
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "CARGO_BUILD_TARGET",
    ]
    .iter()
    .all(|name| std::env::var_os(name).is_none())
    {
        assert_eq!(binary, canonical.join("target/release/plugin-1-fast"));
    }
    assert_eq!(entry["command"].as_str(), binary.to_str());
    assert_eq!(entry["args"], toml::Value::Array(vec![]));
    let manifest = std::fs::read_to_string(canonical.join("Cargo.toml")).unwrap();
    let manifest: toml::Table = toml::from_str(&manifest).unwrap();
    assert_eq!(manifest["package"]["name"].as_str(), Some("plugin-1-fast"));
    let deps = manifest["dependencies"].as_table().unwrap();
    assert_eq!(
        deps.keys().collect::<Vec<_>>(),
        ["serde_json", "webcodex-plugin-sdk"]
    );
    assert_eq!(deps["serde_json"].as_str(), Some("1"));
    // The plugin SDK is a local path crate beside the plugin, written as the SDK crate holds it.
    assert_eq!(
        deps["webcodex-plugin-sdk"]["path"].as_str(),
        Some("webcodex-plugin-sdk")
    );
    for (path, text) in webcodex_plugin_sdk::source::FILES {
        let copy = std::fs::read_to_string(canonical.join("webcodex-plugin-sdk").join(path));
        assert_eq!(copy.unwrap(), *text, "{path}");
    }
    assert!(canonical.join("webcodex-plugin-sdk/Cargo.toml").is_file());
    assert!(canonical.join("src/main.rs").is_file());
}

#[test]
fn typescript_scaffold_carries_its_sdk_and_pins_only_build_tools() {
    let root = temp_path("ts");
    let _cleanup = Cleanup(root.clone());
    let scaffold = create(&root, Some("ts-echo"), Lang::TypeScript).unwrap();
    let canonical = std::fs::canonicalize(&root).unwrap();
    let canonical = PathBuf::from(canonical.to_str().unwrap().trim_start_matches(r"\\?\"));
    for name in [
        "package.json",
        "tsconfig.json",
        "src/plugin.ts",
        "src/sdk.ts",
        "README.md",
    ] {
        assert!(scaffold.files.contains(&canonical.join(name)), "{name}");
    }
    let package: Value =
        serde_json::from_str(&std::fs::read_to_string(canonical.join("package.json")).unwrap())
            .unwrap();
    // No runtime dependency: the SDK is the local module src/sdk.ts.
    assert!(package.get("dependencies").is_none(), "{package}");
    assert_eq!(package["type"], json!("module"));
    assert_eq!(package["scripts"]["build"], json!("tsc"));
    let dev = package["devDependencies"].as_object().unwrap();
    assert_eq!(
        dev.keys().collect::<Vec<_>>(),
        ["@types/node", "typescript"]
    );
    // Exact versions only, so a fresh `npm install` resolves the same packages.
    for version in dev.values() {
        let version = version.as_str().unwrap();
        assert!(
            version.split('.').count() == 3 && version.split('.').all(|p| p.parse::<u32>().is_ok()),
            "{version}"
        );
    }
    let _: Value =
        serde_json::from_str(&std::fs::read_to_string(canonical.join("tsconfig.json")).unwrap())
            .unwrap();
    let source = std::fs::read_to_string(canonical.join("src/plugin.ts")).unwrap();
    assert!(source.contains("from \"./sdk.js\""), "{source}");
    let sdk = std::fs::read_to_string(canonical.join("src/sdk.ts")).unwrap();
    for export in [
        "export const schema",
        "export function defineTool",
        "export function definePlugin",
        "export function textResult",
        "export function errorResult",
        "export function runPlugin",
    ] {
        assert!(sdk.contains(export), "{export}");
    }

    let entry = provider(&scaffold.provider_block);
    assert_eq!(entry["command"].as_str(), Some("node"));
    assert_eq!(
        entry["args"],
        toml::Value::Array(vec!["dist/plugin.js".into()])
    );
}

/// Sends `requests` to `python3 plugin.py` in `dir` and returns one parsed response per line.
fn run_python(dir: &Path, requests: &[Value]) -> (Vec<Value>, String) {
    let mut child = Command::new("python3")
        .arg("plugin.py")
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 is on PATH");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut responses = Vec::new();
    for request in requests {
        // One request at a time: the plugin must answer (and flush) each before the next.
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        if request.get("id").is_none() {
            continue;
        }
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "plugin closed stdout"
        );
        assert!(line.ends_with('\n'));
        responses.push(serde_json::from_str(&line).expect("one JSON value per line"));
    }
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(rest, "", "nothing else on stdout");
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{:?}", output.status);
    (
        responses,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn python_scaffold_speaks_the_protocol() {
    let root = temp_path("py run");
    let _cleanup = Cleanup(root.clone());
    let scaffold = create(&root, Some("py-echo"), Lang::Python).unwrap();
    let cwd = provider(&scaffold.provider_block)["cwd"]
        .as_str()
        .unwrap()
        .to_owned();

    let requests = [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"webcodex-plugin-v1"}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}),
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hé \"there\"\n"}}}),
        json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"nope","arguments":{}}}),
        json!({"jsonrpc":"2.0","id":5,"method":"resources/list","params":{}}),
    ];
    let (responses, _stderr) = run_python(Path::new(&cwd), &requests);
    assert_eq!(responses.len(), 5);

    assert_eq!(
        responses[0],
        json!({"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"webcodex-plugin-v1"}})
    );

    assert_eq!(responses[1]["jsonrpc"], "2.0");
    assert_eq!(responses[1]["id"], 2);
    let list = &responses[1]["result"];
    let tools = list["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["name"], "echo");
    assert!(tools[0]["title"].is_string() && tools[0]["description"].is_string());
    assert_eq!(
        tools[0]["inputSchema"],
        json!({"type":"object","properties":{"text":{"type":"string","description":"The text to send back."}},"required":["text"],"additionalProperties":false})
    );
    assert!(tools[0]["outputSchema"].is_object());
    let catalog = admit_tools_list(list).expect("the host admits the scaffold's tools");
    assert_eq!(catalog.len(), 1);
    assert!(catalog.get("echo").unwrap().output_schema().is_some());

    let text = "hé \"there\"\n";
    assert_eq!(
        responses[2],
        json!({"jsonrpc":"2.0","id":3,"result":{
            "content":[{"type":"text","text":text}],
            "structuredContent":{"text":text}
        }})
    );
    let output_schema = catalog.get("echo").unwrap().output_schema().unwrap();
    output_schema
        .check(&responses[2]["result"]["structuredContent"])
        .unwrap();

    for (response, id) in [(&responses[3], 4), (&responses[4], 5)] {
        assert_eq!(response["id"], id);
        assert!(response.get("result").is_none(), "{response}");
        assert!(response["error"]["code"].is_i64(), "{response}");
        let message = response["error"]["message"].as_str().unwrap();
        assert!((1..=512).contains(&message.len()), "{message}");
    }
}

#[test]
#[cfg_attr(windows, ignore = "needs python3 (Wine has none; docs/PLATFORMS.md)")]
fn python_scaffold_ignores_non_requests_and_logs_to_stderr() {
    let root = temp_path("py noise");
    let _cleanup = Cleanup(root.clone());
    create(&root, Some("noise"), Lang::Python).unwrap();
    let requests = [
        json!("not a request"),
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}),
    ];
    let (responses, stderr) = run_python(&root, &requests);
    assert_eq!(responses.len(), 1);
    assert_eq!(responses[0]["id"], 1);
    assert!(stderr.contains("[noise]"), "{stderr}");
}

#[test]
fn the_release_dir_follows_the_cargo_target_dir_variables() {
    use std::ffi::OsString;
    let cwd = Path::new("/work/plugin");
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    };
    let dir = |pairs: &'static [(&'static str, &'static str)]| super::release_dir(cwd, &env(pairs));
    assert_eq!(dir(&[]), Path::new("/work/plugin/target/release"));
    assert_eq!(
        dir(&[("CARGO_TARGET_DIR", "")]),
        Path::new("/work/plugin/target/release")
    );
    assert_eq!(
        dir(&[("CARGO_TARGET_DIR", "/cache/t")]),
        Path::new("/cache/t/release")
    );
    assert_eq!(
        dir(&[("CARGO_TARGET_DIR", "out")]),
        Path::new("/work/plugin/out/release")
    );
    assert_eq!(
        dir(&[("CARGO_BUILD_TARGET_DIR", "/b"), ("CARGO_TARGET_DIR", "/a")]),
        Path::new("/a/release")
    );
    assert_eq!(
        dir(&[("CARGO_BUILD_TARGET_DIR", "/b")]),
        Path::new("/b/release")
    );
    assert_eq!(
        dir(&[("CARGO_BUILD_TARGET", "x86_64-unknown-linux-musl")]),
        Path::new("/work/plugin/target/x86_64-unknown-linux-musl/release")
    );
    assert_eq!(
        dir(&[
            ("CARGO_TARGET_DIR", "/a"),
            ("CARGO_BUILD_TARGET", "specs/my-target.json")
        ]),
        Path::new("/a/my-target/release")
    );
}
