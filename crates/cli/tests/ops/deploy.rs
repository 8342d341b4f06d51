//! The service recipes in `deploy/`: the systemd units (hardening keys always checked;
//! `systemd-analyze verify` where installed), the container recipe, and the Kubernetes manifests
//! (probes on the admin port, the CLI's real flags, and the ConfigMap's runner.toml and the
//! Secret's tokens file run by the real binary with the Deployment's arguments).
#![cfg(unix)]

use crate::common;
use crate::ops_support;
use crate::tempdir;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use ops_support::{s, AdminServe, LIMIT};
use tempdir::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_webcodex-plugin");

fn deploy(path: &str) -> PathBuf {
    Path::new(common::REPO_ROOT).join("deploy").join(path)
}

fn read(path: &str) -> String {
    std::fs::read_to_string(deploy(path)).unwrap_or_else(|e| panic!("deploy/{path}: {e}"))
}

/// The long flags `webcodex-plugin serve` accepts, from its own `--help`.
fn serve_flags() -> Vec<String> {
    let run = common::run_to_end(
        {
            let mut cmd = common::cli_command(BIN);
            cmd.args(["serve", "--help"]);
            cmd
        },
        LIMIT,
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    run.stdout
        .split_whitespace()
        .filter_map(|word| word.strip_prefix("--"))
        .map(|flag| flag.trim_end_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-'))
        .map(|flag| format!("--{flag}"))
        .collect()
}

/// Asserts that every `--flag` of `args` is a flag of `serve`.
fn assert_real_flags(args: &[String], what: &str) {
    let known = serve_flags();
    assert_eq!(
        args.first().map(String::as_str),
        Some("serve"),
        "{what}: {args:?}"
    );
    for arg in args.iter().filter(|a| a.starts_with("--")) {
        let flag = arg.split('=').next().unwrap();
        assert!(
            known.iter().any(|k| k == flag),
            "{what}: {flag} is not a flag of serve ({known:?})"
        );
    }
}

/// The value after `flag` in `args`.
fn flag_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

/// A unit file's `[Section]` → key → values (in order; an empty assignment is kept as "").
fn parse_unit(text: &str) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let mut sections: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    let mut current = String::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = name.to_string();
            continue;
        }
        let (key, value) = line
            .split_once('=')
            .unwrap_or_else(|| panic!("not key=value: {line}"));
        sections
            .entry(current.clone())
            .or_default()
            .entry(key.trim().to_string())
            .or_default()
            .push(value.trim().to_string());
    }
    sections
}

#[test]
fn the_systemd_service_is_hardened_and_runs_serve_with_real_flags() {
    let unit = parse_unit(&read("systemd/webcodex-plugin.service"));
    let service = &unit["Service"];
    let one = |key: &str| -> &str {
        let values = service
            .get(key)
            .unwrap_or_else(|| panic!("[Service] has no {key}="));
        values.last().unwrap()
    };
    for (key, want) in [
        ("Type", "notify"),
        ("NotifyAccess", "main"),
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
        ("PrivateDevices", "yes"),
        ("CapabilityBoundingSet", ""),
        ("AmbientCapabilities", ""),
        ("DynamicUser", "yes"),
        ("KillMode", "mixed"),
        ("RestrictNamespaces", "yes"),
        ("RestrictSUIDSGID", "yes"),
        ("LockPersonality", "yes"),
        ("SystemCallArchitectures", "native"),
    ] {
        assert_eq!(one(key), want, "{key}=");
    }
    let families: Vec<&str> = one("RestrictAddressFamilies").split_whitespace().collect();
    // AF_UNIX for the notify socket; the IP families for the listeners and remote runners.
    assert_eq!(families, ["AF_INET", "AF_INET6", "AF_UNIX"]);
    assert!(one("SystemCallFilter").starts_with("@system-service"));

    let args: Vec<String> = one("ExecStart")
        .split_whitespace()
        .skip(1)
        .map(String::from)
        .collect();
    assert_real_flags(&args, "ExecStart");
    // The listener comes from the socket unit; the credential holds the tokens file.
    assert_eq!(flag_value(&args, "--listen"), None);
    assert_eq!(flag_value(&args, "--tokens"), Some("%d/tokens.toml"));
    assert!(one("LoadCredential").starts_with("tokens.toml:"));
    let admin = flag_value(&args, "--admin-listen").expect("an admin listener");
    assert!(admin.starts_with("127.0.0.1:"), "{admin}");
    assert_eq!(unit["Unit"]["Requires"], ["webcodex-plugin.socket"]);

    let socket = parse_unit(&read("systemd/webcodex-plugin.socket"));
    let listen = &socket["Socket"]["ListenStream"];
    assert_eq!(
        listen.len(),
        1,
        "serve takes exactly one socket: {listen:?}"
    );
    assert!(
        listen[0].parse::<std::net::SocketAddr>().is_ok(),
        "{listen:?}"
    );
}

#[test]
#[ignore = "needs systemd-analyze (Debian package systemd)"]
fn systemd_analyze_verifies_the_units() {
    let dir = TempDir::new("deploy", "units");
    // The unit names the installed path; verify checks that the program exists.
    let service =
        read("systemd/webcodex-plugin.service").replace("/usr/local/bin/webcodex-plugin", BIN);
    let service = dir.write("webcodex-plugin.service", &service);
    let socket = dir.write(
        "webcodex-plugin.socket",
        &read("systemd/webcodex-plugin.socket"),
    );
    let run = common::run_to_end(
        {
            let mut cmd = Command::new("systemd-analyze");
            cmd.args(["verify", s(&socket), s(&service)]);
            cmd
        },
        LIMIT,
    );
    // verify reports unknown keys and bad values on stderr but still exits 0: both must be clean.
    assert_eq!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stderr.trim(), "", "systemd-analyze verify");
    assert_eq!(run.stdout.trim(), "", "systemd-analyze verify");
}

/// Instructions of a Containerfile: (instruction, rest of the line), comments and blank lines
/// dropped.
fn instructions(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (word, rest) = l.split_once(' ').unwrap_or((l, ""));
            (word.to_ascii_uppercase(), rest.trim().to_string())
        })
        .collect()
}

#[test]
fn the_container_recipe_runs_the_static_binary_as_a_non_root_user() {
    let text = read("container/Containerfile");
    let steps = instructions(&text);
    let get = |word: &str| -> Vec<&str> {
        steps
            .iter()
            .filter(|(w, _)| w == word)
            .map(|(_, r)| r.as_str())
            .collect()
    };
    let from = get("FROM");
    assert_eq!(from.len(), 1, "one stage: {from:?}");
    assert!(
        from[0] == "scratch" || from[0].starts_with("gcr.io/distroless/static"),
        "{from:?}"
    );
    let user = get("USER");
    let uid: u32 = user
        .last()
        .expect("a USER")
        .split(':')
        .next()
        .unwrap()
        .parse()
        .expect("a numeric user");
    assert_ne!(uid, 0, "the image must not run as root");
    let copy: Vec<&str> = get("COPY")[0].split_whitespace().collect();
    let entrypoint: Vec<String> =
        serde_json::from_str(get("ENTRYPOINT")[0]).expect("ENTRYPOINT in exec form");
    assert_eq!(entrypoint, [copy[1]]);
    let cmd: Vec<String> = serde_json::from_str(get("CMD")[0]).expect("CMD in exec form");
    assert_real_flags(&cmd, "CMD");
    let exposed: Vec<&str> = get("EXPOSE")
        .iter()
        .flat_map(|e| e.split_whitespace())
        .collect();
    for flag in ["--listen", "--admin-listen"] {
        let addr: std::net::SocketAddr = flag_value(&cmd, flag).unwrap().parse().unwrap();
        assert!(
            exposed.contains(&addr.port().to_string().as_str()),
            "{flag} {addr} not exposed: {exposed:?}"
        );
    }
    // The documented build context is where scripts/build-static.sh puts the binary.
    let script =
        std::fs::read_to_string(Path::new(common::REPO_ROOT).join("scripts/build-static.sh"))
            .unwrap();
    assert!(script.contains("unknown-linux-musl"));
    assert!(
        text.contains("target/x86_64-unknown-linux-musl/release"),
        "the build context"
    );
    assert_eq!(copy[0], "webcodex-plugin");
}

/// Every document of a manifest file, as JSON.
fn manifests(path: &str) -> Vec<Value> {
    use serde::Deserialize;
    serde_yaml_ng::Deserializer::from_str(&read(path))
        .map(|doc| Value::deserialize(doc).unwrap_or_else(|e| panic!("deploy/{path}: {e}")))
        .collect()
}

fn one_manifest(path: &str, kind: &str) -> Value {
    let docs = manifests(path);
    assert_eq!(docs.len(), 1, "deploy/{path}");
    assert_eq!(docs[0]["kind"], kind, "deploy/{path}");
    docs[0].clone()
}

#[test]
fn kubernetes_manifests_probe_the_admin_port_and_their_files_run_with_the_real_cli() {
    let deployment = one_manifest("kubernetes/deployment.yaml", "Deployment");
    let service = one_manifest("kubernetes/service.yaml", "Service");
    let configmap = one_manifest("kubernetes/configmap.yaml", "ConfigMap");
    let secret = one_manifest("kubernetes/secret.yaml", "Secret");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(
        deployment["spec"]["selector"]["matchLabels"],
        deployment["spec"]["template"]["metadata"]["labels"]
    );
    assert_eq!(
        service["spec"]["selector"],
        deployment["spec"]["template"]["metadata"]["labels"]
    );
    let containers = pod["containers"].as_array().expect("containers");
    assert_eq!(containers.len(), 1);
    let container = &containers[0];
    let args: Vec<String> = serde_json::from_value(container["args"].clone()).expect("args");
    assert_real_flags(&args, "the container's args");

    let port = |name: &str| -> u64 {
        container["ports"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap_or_else(|| panic!("no container port {name}"))["containerPort"]
            .as_u64()
            .unwrap()
    };
    let flag_port = |flag: &str| -> u64 {
        let value = flag_value(&args, flag).unwrap();
        // The admin listener's host is the pod's IP, expanded by Kubernetes.
        let addr = value.replace("$(POD_IP)", "10.0.0.1");
        let addr: std::net::SocketAddr = addr.parse().unwrap_or_else(|e| panic!("{value}: {e}"));
        u64::from(addr.port())
    };
    assert_eq!(port("admin"), flag_port("--admin-listen"));
    // The admin listener binds the pod's IP (for the kubelet's probes and Prometheus), never
    // every address; POD_IP comes from the downward API.
    let admin = flag_value(&args, "--admin-listen").unwrap();
    assert!(admin.starts_with("$(POD_IP):"), "{admin}");
    let pod_ip = container["env"]
        .as_array()
        .expect("env")
        .iter()
        .find(|e| e["name"] == "POD_IP")
        .expect("a POD_IP variable");
    assert_eq!(
        pod_ip["valueFrom"]["fieldRef"]["fieldPath"], "status.podIP",
        "{pod_ip}"
    );
    assert_eq!(port("http"), flag_port("--listen"));
    for (probe, path) in [
        ("startupProbe", "/healthz"),
        ("livenessProbe", "/healthz"),
        ("readinessProbe", "/readyz"),
    ] {
        let get = &container[probe]["httpGet"];
        assert_eq!(get["path"], path, "{probe}");
        assert_eq!(get["port"], "admin", "{probe} must use the admin port");
    }
    // The Service publishes plugin_tool, not the admin port.
    let published: Vec<&Value> = service["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["targetPort"])
        .collect();
    assert_eq!(published, [&json!("http")]);
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(
        container["securityContext"]["allowPrivilegeEscalation"],
        false
    );
    assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);

    // The ConfigMap and the Secret are mounted where the args look for them.
    let mount = |volume: &str| -> &Value {
        container["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == volume)
            .unwrap()
    };
    let volume = |name: &str| -> &Value {
        pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == name)
            .unwrap()
    };
    assert_eq!(
        volume("runner")["configMap"]["name"],
        configmap["metadata"]["name"]
    );
    assert_eq!(
        volume("tokens")["secret"]["secretName"],
        secret["metadata"]["name"]
    );
    let runner_mount = mount("runner");
    assert_eq!(
        runner_mount["mountPath"].as_str(),
        flag_value(&args, "--config")
    );
    let runner_key = runner_mount["subPath"].as_str().unwrap();
    let tokens_path = flag_value(&args, "--tokens").unwrap();
    let tokens_dir = mount("tokens")["mountPath"].as_str().unwrap();
    let tokens_key = tokens_path
        .strip_prefix(&format!("{tokens_dir}/"))
        .expect("--tokens is in the Secret's mount");

    // Run them: the ConfigMap's runner.toml (its plugin command pointed at this build), the
    // Secret's tokens file, and the Deployment's arguments with the paths and addresses of this
    // machine. The probes answer 200 and the token is accepted.
    let dir = TempDir::new("deploy", "k8s");
    let runner = configmap["data"][runner_key]
        .as_str()
        .expect("runner.toml in the ConfigMap");
    let image_binary = "/usr/local/bin/webcodex-plugin";
    assert!(
        runner.contains(image_binary),
        "the ConfigMap's plugin is the image's own binary"
    );
    let config = dir.write("runner.toml", &runner.replace(image_binary, BIN));
    let tokens_text = secret["stringData"][tokens_key]
        .as_str()
        .expect("tokens.toml in the Secret");
    let tokens = dir.write("tokens.toml", tokens_text);
    let local: Vec<String> = args
        .iter()
        .map(|a| match a.as_str() {
            a if Some(a) == flag_value(&args, "--config") => s(&config).to_string(),
            a if a == tokens_path => s(&tokens).to_string(),
            a if a.starts_with("0.0.0.0:") || a.starts_with("$(POD_IP):") => {
                "127.0.0.1:0".to_string()
            }
            a => a.to_string(),
        })
        .collect();
    let mut cmd = common::cli_command(BIN);
    cmd.args(&local);
    let serve = AdminServe::start(cmd);
    for path in ["/healthz", "/readyz"] {
        assert_eq!(serve.admin_get(path).0, 200, "{path}");
    }
    let token_value: toml::Value = toml::from_str(tokens_text).unwrap();
    let token = token_value["tokens"][0]["token"]
        .as_str()
        .unwrap()
        .to_string();
    let body =
        json!({"tool": "plugin_tool", "params": {"action": "list", "runner": "local"}}).to_string();
    let raw = format!(
        "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let listed = ops_support::exchange(serve.addr, raw.as_bytes());
    assert_eq!(listed.status, 200, "{}", listed.text());
    assert_eq!(
        listed.json()["output"]["plugins"][0]["status"],
        "ready",
        "{}",
        listed.text()
    );
    let (status, stderr) = serve.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
}

/// The NetworkPolicy selects the Deployment's pods and admits the admin port only from the
/// pods it names (Prometheus), while plugin_tool stays reachable; the ports it names are the
/// container's.
#[test]
fn the_network_policy_admits_only_prometheus_to_the_admin_port() {
    let deployment = one_manifest("kubernetes/deployment.yaml", "Deployment");
    let policy = one_manifest("kubernetes/networkpolicy.yaml", "NetworkPolicy");
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    assert_eq!(&policy["spec"]["podSelector"]["matchLabels"], labels);
    assert_eq!(policy["spec"]["policyTypes"], json!(["Ingress"]));
    let container_ports: Vec<&Value> = deployment["spec"]["template"]["spec"]["containers"][0]
        ["ports"]
        .as_array()
        .expect("container ports")
        .iter()
        .map(|p| &p["name"])
        .collect();
    let rules = policy["spec"]["ingress"].as_array().expect("ingress rules");
    let rules_for = |port: &str| -> Vec<&Value> {
        rules
            .iter()
            .filter(|rule| {
                rule["ports"]
                    .as_array()
                    .is_some_and(|ports| ports.iter().any(|p| p["port"] == port))
            })
            .collect()
    };
    for rule in rules {
        for port in rule["ports"]
            .as_array()
            .expect("every rule names its ports")
        {
            assert!(
                container_ports.contains(&&port["port"]),
                "{port} is not a port of the container ({container_ports:?})"
            );
        }
    }
    // plugin_tool: open (bearer tokens guard it).
    assert_eq!(rules_for("http").len(), 1, "{policy}");
    // The admin port: every rule that names it has sources, each a pod selector (within a
    // namespace), never an open rule or an address block.
    let admin = rules_for("admin");
    assert_eq!(admin.len(), 1, "{policy}");
    let from = admin[0]["from"]
        .as_array()
        .expect("the admin rule names sources");
    assert!(!from.is_empty());
    for source in from {
        assert!(source["podSelector"]["matchLabels"].is_object(), "{source}");
        assert!(source.get("ipBlock").is_none(), "{source}");
    }
    assert_eq!(
        from[0]["podSelector"]["matchLabels"]["app.kubernetes.io/name"],
        "prometheus"
    );
}
