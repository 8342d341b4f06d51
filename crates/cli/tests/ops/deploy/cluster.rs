//! The cluster recipe in `deploy/kubernetes/cluster/`: three replicas of `serve
//! --cluster-keys` with the probes on the admin port, the clients' Service, the headless
//! Service the runners link through, the PodDisruptionBudget, the keys and tokens Secrets, and
//! a `connect` runner. Checked as the single-replica manifests are: parsed, their flags the
//! CLI's own, their selectors and mounts consistent, and their files run by the real binary
//! with the Deployments' arguments (the keys Secret's placeholder refused, a key from `token
//! new --cluster-key` taken).

use super::*;

/// The long flags of `webcodex-plugin connect`, from its own `--help`.
fn connect_flags() -> Vec<String> {
    let mut cmd = common::cli_command(BIN);
    cmd.args(["connect", "--help"]);
    let run = common::run_to_end(cmd, LIMIT);
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    run.stdout
        .split_whitespace()
        .filter_map(|word| word.strip_prefix("--"))
        .map(|flag| flag.trim_end_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-'))
        .map(|flag| format!("--{flag}"))
        .collect()
}

/// The one container of a Deployment and its args.
fn container(deployment: &Value) -> (Value, Vec<String>) {
    let containers = deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers");
    assert_eq!(containers.len(), 1);
    let container = containers[0].clone();
    let args = serde_json::from_value(container["args"].clone()).expect("args");
    (container, args)
}

/// The mount path of volume `name` in `container`, and the volume itself.
fn mounted<'a>(deployment: &'a Value, container: &Value, name: &str) -> (String, &'a Value) {
    let mount = container["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no mount of {name}"));
    let volume = deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == name)
        .unwrap_or_else(|| panic!("no volume {name}"));
    (mount["mountPath"].as_str().unwrap().to_string(), volume)
}

/// The key of `secret`'s `stringData` that `path` names under a Secret volume mounted at
/// `dir`, and its text.
fn secret_file<'a>(secret: &'a Value, dir: &str, path: &str) -> &'a str {
    let key = path
        .strip_prefix(&format!("{dir}/"))
        .unwrap_or_else(|| panic!("{path} is not in the Secret mounted at {dir}"));
    secret["stringData"][key]
        .as_str()
        .unwrap_or_else(|| panic!("the Secret has no {key}"))
}

#[test]
fn the_cluster_recipe_runs_three_replicas_behind_two_services_with_a_disruption_budget() {
    let dir_of = "kubernetes/cluster";
    let deployment = one_manifest(&format!("{dir_of}/deployment.yaml"), "Deployment");
    let service = one_manifest(&format!("{dir_of}/service.yaml"), "Service");
    let links = one_manifest(&format!("{dir_of}/service-links.yaml"), "Service");
    let pdb = one_manifest(&format!("{dir_of}/pdb.yaml"), "PodDisruptionBudget");
    let keys_secret = one_manifest(&format!("{dir_of}/secret-keys.yaml"), "Secret");
    let tokens_secret = one_manifest(&format!("{dir_of}/secret-tokens.yaml"), "Secret");
    let configmap = one_manifest("kubernetes/configmap.yaml", "ConfigMap");
    let runner_docs = manifests(&format!("{dir_of}/runner.yaml"));
    let runner_secret = runner_docs.iter().find(|d| d["kind"] == "Secret").unwrap();
    let runner = runner_docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .unwrap();

    // Three replicas, one selector everywhere, and a budget that keeps two.
    let labels = &deployment["spec"]["template"]["metadata"]["labels"];
    assert_eq!(deployment["spec"]["replicas"], 3);
    assert_eq!(&deployment["spec"]["selector"]["matchLabels"], labels);
    for svc in [&service, &links] {
        assert_eq!(
            &svc["spec"]["selector"], labels,
            "{}",
            svc["metadata"]["name"]
        );
        let ports: Vec<&Value> = svc["spec"]["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| &p["targetPort"])
            .collect();
        assert_eq!(ports, [&json!("http")], "only plugin_tool is published");
    }
    assert_eq!(
        links["spec"]["clusterIP"], "None",
        "the runners' Service is headless"
    );
    assert_eq!(links["spec"]["publishNotReadyAddresses"], true);
    assert_ne!(service["spec"]["clusterIP"], "None");
    assert_eq!(service["spec"]["sessionAffinity"], "None");
    assert_eq!(&pdb["spec"]["selector"]["matchLabels"], labels);
    let min = pdb["spec"]["minAvailable"].as_u64().expect("minAvailable");
    assert!(
        (1..3).contains(&min),
        "the budget lets one replica go at a time: {min}"
    );
    let single = one_manifest("kubernetes/deployment.yaml", "Deployment");
    assert_ne!(
        &single["spec"]["template"]["metadata"]["labels"], labels,
        "the cluster's pods are not the single front's"
    );

    // The replicas: serve's real flags, cluster mode without --config, the probes.
    let (front, args) = container(&deployment);
    assert_real_flags(&args, "the replicas' args");
    assert_eq!(
        flag_value(&args, "--config"),
        None,
        "cluster mode has no local runner"
    );
    for (probe, path) in [
        ("startupProbe", "/healthz"),
        ("livenessProbe", "/healthz"),
        ("readinessProbe", "/readyz"),
    ] {
        let get = &front[probe]["httpGet"];
        assert_eq!(get["path"], path, "{probe}");
        assert_eq!(get["port"], "admin", "{probe} must use the admin port");
    }
    let admin = flag_value(&args, "--admin-listen").unwrap();
    assert!(admin.starts_with("$(POD_IP):"), "{admin}");
    let (keys_dir, keys_volume) = mounted(&deployment, &front, "keys");
    let (tokens_dir, tokens_volume) = mounted(&deployment, &front, "tokens");
    assert_eq!(
        keys_volume["secret"]["secretName"],
        keys_secret["metadata"]["name"]
    );
    assert_eq!(
        tokens_volume["secret"]["secretName"],
        tokens_secret["metadata"]["name"]
    );
    let keys_path = flag_value(&args, "--cluster-keys").expect("cluster mode");
    let tokens_path = flag_value(&args, "--tokens").unwrap();
    let keys_text = secret_file(&keys_secret, &keys_dir, keys_path);
    let tokens_text = secret_file(&tokens_secret, &tokens_dir, tokens_path);
    let http_port = front["ports"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "http");
    let http_port = http_port.unwrap()["containerPort"].as_u64().unwrap();
    assert!(flag_value(&args, "--listen")
        .unwrap()
        .ends_with(&format!(":{http_port}")));

    // The runner: connect's real flags, linked through the headless Service, the ConfigMap's
    // runner.toml, the token of a runner token of the replicas' tokens file.
    let (runner_container, runner_args) = container(runner);
    assert_eq!(runner_args[0], "connect");
    let known = connect_flags();
    for flag in runner_args.iter().filter(|a| a.starts_with("--")) {
        assert!(known.contains(flag), "{flag} is not a flag of connect");
    }
    let front_url = flag_value(&runner_args, "--front-url").unwrap();
    let links_port = links["spec"]["ports"][0]["port"].as_u64().unwrap();
    assert_eq!(
        front_url,
        format!(
            "http://{}:{links_port}",
            links["metadata"]["name"].as_str().unwrap()
        ),
        "the runner resolves the headless Service: one link per replica"
    );
    let (runner_config, config_volume) = mounted(runner, &runner_container, "runner");
    assert_eq!(
        config_volume["configMap"]["name"],
        configmap["metadata"]["name"]
    );
    assert_eq!(
        flag_value(&runner_args, "--config"),
        Some(runner_config.as_str())
    );
    let (token_dir, token_volume) = mounted(runner, &runner_container, "token");
    assert_eq!(
        token_volume["secret"]["secretName"],
        runner_secret["metadata"]["name"]
    );
    let runner_token = secret_file(
        runner_secret,
        &token_dir,
        flag_value(&runner_args, "--token-file").unwrap(),
    );
    let tokens_value: toml::Value = toml::from_str(tokens_text).unwrap();
    let runner_entry = &tokens_value["runner_tokens"][0];
    assert_eq!(runner_entry["token"].as_str(), Some(runner_token.trim()));
    let runner_id = runner_entry["runner"].as_str().unwrap();

    // Run them. The keys Secret as shipped is refused, saying why.
    let dir = TempDir::new("deploy", "cluster");
    let tokens = dir.write("tokens.toml", tokens_text);
    let placeholder = dir.write("keys.toml", keys_text);
    let local_args = |keys: &Path| -> Vec<String> {
        args.iter()
            .map(|a| match a.as_str() {
                a if a == keys_path => s(keys).to_string(),
                a if a == tokens_path => s(&tokens).to_string(),
                a if a.starts_with("0.0.0.0:") || a.starts_with("$(POD_IP):") => {
                    "127.0.0.1:0".to_string()
                }
                a => a.to_string(),
            })
            .collect()
    };
    let mut cmd = common::cli_command(BIN);
    cmd.args(local_args(&placeholder));
    let refused = common::run_to_end(cmd, LIMIT);
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    assert!(refused.stderr.contains("keys[0]"), "{}", refused.stderr);
    // A key made as the Secret's comment says.
    let mut cmd = common::cli_command(BIN);
    cmd.args(["token", "new", "--cluster-key", "--name", "2026-06"]);
    let made = common::run_to_end(cmd, LIMIT);
    assert_eq!(made.code, Some(0), "{}", made.stderr);
    let keys = dir.write("real-keys.toml", &made.stdout);
    let mut cmd = common::cli_command(BIN);
    cmd.args(local_args(&keys));
    let serve = AdminServe::start(cmd);
    assert_eq!(serve.admin_get("/healthz").0, 200);
    let (status, body) = serve.admin_get("/readyz");
    assert_eq!(status, 503, "not ready before its runner linked: {body}");
    assert!(body.contains(runner_id), "{body}");

    let runner_toml = configmap["data"]["runner.toml"].as_str().unwrap();
    let config = dir.write(
        "runner.toml",
        &runner_toml.replace("/usr/local/bin/webcodex-plugin", BIN),
    );
    let token_file = dir.write("token", runner_token);
    let connect_args: Vec<String> = runner_args
        .iter()
        .map(|a| match a.as_str() {
            a if a == front_url => format!("http://{}", serve.addr),
            a if Some(a) == flag_value(&runner_args, "--config") => s(&config).to_string(),
            a if Some(a) == flag_value(&runner_args, "--token-file") => s(&token_file).to_string(),
            a => a.to_string(),
        })
        .collect();
    let mut cmd = common::cli_command(BIN);
    cmd.args(&connect_args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let mut connect = cmd.spawn().expect("spawn connect");
    let connect_log = common::read_all(connect.stderr.take().unwrap());
    let deadline = std::time::Instant::now() + LIMIT;
    while serve.admin_get("/readyz").0 != 200 {
        assert!(std::time::Instant::now() < deadline, "never ready");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let listed = |params: Value| {
        let body = json!({"tool": "plugin_tool", "params": params}).to_string();
        let user = tokens_value["tokens"][0]["token"].as_str().unwrap();
        let raw = format!(
            "POST /api/tools/call HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {user}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        ops_support::exchange(serve.addr, raw.as_bytes())
    };
    let runners = listed(json!({"action": "list"}));
    assert_eq!(runners.status, 200, "{}", runners.text());
    assert_eq!(runners.json()["output"]["runners"][0]["runner"], runner_id);
    let plugins = listed(json!({"action": "list", "runner": runner_id}));
    assert_eq!(
        plugins.json()["output"]["plugins"][0]["status"],
        "ready",
        "{}",
        plugins.text()
    );
    assert!(common::request_stop(connect.id()));
    let status = common::wait_bounded(&mut connect, LIMIT);
    let log = connect_log.join().unwrap();
    assert_eq!(status.code(), Some(0), "{log}");
    let (status, stderr) = serve.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
    common::assert_no_zombie_children_of_self();
}
