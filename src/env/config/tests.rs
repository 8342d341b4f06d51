use super::*;

const MINIMAL: &str = r#"
[[plugins.providers]]
id = "repo-tools"
name = "Repo Tools"
command = "node"
"#;

fn parse(text: &str) -> Result<RunnerConfig> {
    parse_runner_config(text, DEFAULT_MAX_PROVIDERS)
}

/// A config with one provider whose extra lines are `provider_lines`.
fn with_provider(provider_lines: &str) -> String {
    format!(
            "[shell.profiles.node]\nprogram = \"bash\"\n\n[[plugins.providers]]\nid = \"p\"\nname = \"P\"\ncommand = \"node\"\n{provider_lines}\n"
        )
}

/// Asserts `plugin_config_invalid` in phase config whose message contains `needle`.
fn assert_invalid(text: &str, needle: &str) -> String {
    let err = parse(text).expect_err("config must be rejected");
    assert_eq!(err.code(), ErrorCode::ConfigInvalid, "{}", err.message());
    assert_eq!(err.phase(), Some(Phase::Config));
    assert!(
        err.message().contains(needle),
        "message {:?} should contain {:?}",
        err.message(),
        needle
    );
    err.message().to_string()
}

#[test]
#[cfg_attr(
    windows,
    ignore = "uses Unix absolute paths in runner.toml (docs/PLATFORMS.md)"
)]
fn full_example_parses() {
    let text = r#"
[shell]
default_profile = "node"
path_prepend = ["/opt/bin"]
env = { FOO = "1" }
[shell.profiles.node]
program = "bash"
args = ["-lc"]
init_script = "source ~/.nvm/nvm.sh\nnvm use 22"
env = { BAR = "2" }
[plugins]
request_timeout_secs = 20
[[plugins.providers]]
id = "repo-tools"
name = "Repo Tools"
command = "node"
args = ["tools/plugin.mjs"]
cwd = "/root/git/example"
profile = "node"
timeout_secs = 45
"#;
    let config = parse(text).unwrap();
    assert_eq!(config.shell.default_profile.as_deref(), Some("node"));
    assert_eq!(config.shell.path_prepend, vec!["/opt/bin"]);
    assert_eq!(config.shell.env["FOO"], "1");
    let node = &config.shell.profiles["node"];
    assert_eq!(node.program, "bash");
    assert_eq!(node.args, vec!["-lc"]);
    assert!(node.init_script.as_deref().unwrap().contains("nvm use 22"));
    assert_eq!(node.env["BAR"], "2");
    assert_eq!(config.plugins.request_timeout, Duration::from_secs(20));
    let p = config.provider("repo-tools").unwrap();
    assert_eq!(p.name, "Repo Tools");
    assert_eq!(p.command, "node");
    assert_eq!(p.args, vec!["tools/plugin.mjs"]);
    assert_eq!(p.cwd.as_deref(), Some(Path::new("/root/git/example")));
    assert_eq!(p.profile.as_deref(), Some("node"));
    assert_eq!(p.timeout, Duration::from_secs(45));
}

#[test]
fn empty_file_gives_defaults() {
    let config = parse("").unwrap();
    assert_eq!(config, RunnerConfig::default());
    assert_eq!(config.plugins.request_timeout, DEFAULT_REQUEST_TIMEOUT);
}

#[test]
fn provider_defaults() {
    let config = parse(MINIMAL).unwrap();
    let p = &config.plugins.providers[0];
    assert!(p.args.is_empty());
    assert_eq!(p.cwd, None);
    assert_eq!(p.profile, None);
    assert_eq!(p.timeout, DEFAULT_REQUEST_TIMEOUT);
}

#[test]
fn provider_timeout_defaults_to_request_timeout() {
    let text = format!("[plugins]\nrequest_timeout_secs = 7\n{MINIMAL}");
    let config = parse(&text).unwrap();
    assert_eq!(config.plugins.providers[0].timeout, Duration::from_secs(7));
}

#[test]
fn providers_keep_file_order() {
    let text = "[[plugins.providers]]\nid = \"b\"\nname = \"B\"\ncommand = \"x\"\n\
                    [[plugins.providers]]\nid = \"a\"\nname = \"A\"\ncommand = \"x\"\n";
    let ids: Vec<_> = parse(text)
        .unwrap()
        .plugins
        .providers
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(ids, vec!["b", "a"]);
}

#[test]
fn other_top_level_tables_are_tolerated() {
    let text = format!("[server]\nport = 8080\n[agent.things]\nx = [1, 2]\n{MINIMAL}");
    assert_eq!(parse(&text).unwrap().plugins.providers.len(), 1);
}

#[test]
fn unknown_shell_keys_are_tolerated() {
    let text = "[shell]\ncolor = true\n[shell.profiles.node]\nprogram = \"bash\"\nlogin = true\n";
    let config = parse(text).unwrap();
    assert_eq!(config.shell.profiles["node"].program, "bash");
}

#[test]
fn syntax_error_is_parse_failed_with_position_and_no_content() {
    let text = "[plugins]\nrequest_timeout_secs = 30\nsecret-command = \"hunter2\n";
    let err = parse(text).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ConfigParseFailed);
    assert_eq!(err.phase(), Some(Phase::Config));
    assert!(err.message().starts_with("runner.toml is not valid TOML"));
    assert!(err.message().contains("line 3"), "{}", err.message());
    assert!(
        err.message().contains("invalid basic string"),
        "{}",
        err.message()
    );
    assert!(!err.message().contains("hunter2"));
}

#[test]
fn syntax_error_reason_is_one_bounded_line_without_values() {
    let err = parse("[plugins]\nrequest_timeout_secs = \"s3cr\\qet\"\n").unwrap_err();
    let message = err.message();
    assert!(message.contains("(line 2, column"), "{message}");
    assert!(
        message.contains("invalid escape sequence; expected"),
        "{message}"
    );
    assert!(
        !message.contains('\n') && !message.contains("s3cr"),
        "{message}"
    );
    assert!(parser_reason(&"x".repeat(1000)).chars().count() <= MAX_REASON_CHARS + 1);
}

#[test]
fn near_miss_tables_get_a_did_you_mean_warning() {
    let root: Table =
        "request_timeout_secs = 5\n[[plugin.providers]]\nid = \"a\"\n[Plugins]\n[shell]\n[other]\n"
            .parse()
            .unwrap();
    let warnings = near_misses(&root);
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    for warning in &warnings {
        assert!(warning.contains("did you mean [plugins]"), "{warning}");
    }
    assert!(
        warnings.iter().any(|w| w.contains("`plugin`")),
        "{warnings:?}"
    );
    assert!(warnings
        .iter()
        .any(|w| w.contains("`request_timeout_secs`")));
    let fine: Table = "[plugins]\n[shell]\n[other]\n".parse().unwrap();
    assert!(near_misses(&fine).is_empty());
}

#[test]
fn line_column_counts_from_one() {
    assert_eq!(line_column("ab\ncd", 0), (1, 1));
    assert_eq!(line_column("ab\ncd", 4), (2, 2));
    assert_eq!(line_column("ab", 99), (1, 3));
}

#[test]
fn unknown_plugins_key_is_invalid() {
    assert_invalid(
        "[plugins]\ntimeout = 3\n",
        "unknown key plugins.timeout (allowed: request_timeout_secs, providers, restart, restart_max)",
    );
}

#[test]
fn unknown_provider_key_is_invalid() {
    assert_invalid(
            "[[plugins.providers]]\nid = \"p\"\nname = \"P\"\ncomand = \"x\"\n",
            "unknown key plugins.providers[0].comand (allowed: id, name, command, args, cwd, profile, timeout_secs, restart, restart_max)",
        );
}

#[test]
fn plugins_must_be_a_table() {
    assert_invalid("plugins = 3\n", "plugins must be a table");
}

#[test]
fn providers_must_be_an_array_of_tables() {
    assert_invalid(
        "[plugins]\nproviders = 3\n",
        "plugins.providers must be an array",
    );
    assert_invalid(
        "[plugins]\nproviders = [1]\n",
        "plugins.providers[0] must be a table",
    );
}

#[test]
fn missing_required_keys_are_invalid() {
    assert_invalid(
        "[[plugins.providers]]\nname = \"P\"\ncommand = \"x\"\n",
        "plugins.providers[0].id is required",
    );
    assert_invalid(
        "[[plugins.providers]]\nid = \"p\"\ncommand = \"x\"\n",
        "plugins.providers[0].name is required",
    );
    assert_invalid(
        "[[plugins.providers]]\nid = \"p\"\nname = \"P\"\n",
        "plugins.providers[0].command is required",
    );
}

#[test]
fn wrong_type_is_invalid() {
    assert_invalid(
        "[[plugins.providers]]\nid = 5\nname = \"P\"\ncommand = \"x\"\n",
        "plugins.providers[0].id must be a string, not an integer",
    );
}

#[test]
fn id_must_match_pattern() {
    for id in ["", "Repo", "a b", "ü", &"a".repeat(65)] {
        let text = format!("[[plugins.providers]]\nid = \"{id}\"\nname = \"P\"\ncommand = \"x\"\n");
        assert_invalid(
            &text,
            "plugins.providers[0].id must match ^[a-z0-9_.-]{1,64}$",
        );
    }
    let ok = format!(
        "[[plugins.providers]]\nid = \"{}\"\nname = \"P\"\ncommand = \"x\"\n",
        "a_.-9".repeat(12)
    );
    assert!(parse(&ok).is_ok());
}

#[test]
fn duplicate_id_is_invalid() {
    let text = format!("{MINIMAL}{MINIMAL}");
    let msg = assert_invalid(
        &text,
        "plugins.providers[1].id 'repo-tools' is already used by plugins.providers[0]",
    );
    assert!(msg.contains("unique"));
}

#[test]
fn name_must_be_nonblank_and_short() {
    for name in ["", "   ", &"n".repeat(129)] {
        let text =
            format!("[[plugins.providers]]\nid = \"p\"\nname = \"{name}\"\ncommand = \"x\"\n");
        assert_invalid(
            &text,
            "plugins.providers[0].name must be 1..=128 bytes and not blank",
        );
    }
}

#[test]
fn command_must_be_nonempty_bounded_without_nul() {
    for command in ["", &"c".repeat(1025)] {
        let text =
            format!("[[plugins.providers]]\nid = \"p\"\nname = \"P\"\ncommand = \"{command}\"\n");
        assert_invalid(&text, "plugins.providers[0].command must be 1..=1024 bytes");
    }
    let msg = assert_invalid(
        "[[plugins.providers]]\nid = \"p\"\nname = \"P\"\ncommand = \"se\\u0000cret\"\n",
        "plugins.providers[0].command must not contain NUL",
    );
    assert!(!msg.contains("se"));
}

#[test]
fn too_many_args_is_invalid() {
    let args = vec!["\"a\""; 65].join(", ");
    assert_invalid(
        &with_provider(&format!("args = [{args}]")),
        "plugins.providers[0].args has 65 entries; at most 64",
    );
}

#[test]
fn long_arg_is_invalid() {
    let arg = "a".repeat(4097);
    assert_invalid(
        &with_provider(&format!("args = [\"x\", \"{arg}\"]")),
        "plugins.providers[0].args[1] must be at most 4096 bytes",
    );
}

#[test]
fn args_total_is_bounded() {
    let args = vec![format!("\"{}\"", "a".repeat(4096)); 5].join(", ");
    assert_invalid(
        &with_provider(&format!("args = [{args}]")),
        "plugins.providers[0].args must total at most 16384 bytes",
    );
}

#[test]
fn arg_with_nul_is_invalid() {
    assert_invalid(
        &with_provider("args = [\"a\\u0000b\"]"),
        "plugins.providers[0].args[0] must not contain NUL",
    );
}

#[test]
fn args_must_be_strings() {
    assert_invalid(
        &with_provider("args = [1]"),
        "plugins.providers[0].args[0] must be a string",
    );
}

#[test]
fn cwd_must_be_absolute() {
    let msg = assert_invalid(
        &with_provider("cwd = \"relative/secret\""),
        "plugins.providers[0].cwd must be an absolute path",
    );
    assert!(!msg.contains("secret"));
}

#[test]
fn cwd_is_bounded_and_without_nul() {
    let long = format!("/{}", "d".repeat(4096));
    assert_invalid(
        &with_provider(&format!("cwd = \"{long}\"")),
        "plugins.providers[0].cwd must be at most 4096 bytes",
    );
    assert_invalid(
        &with_provider("cwd = \"/a\\u0000b\""),
        "plugins.providers[0].cwd must not contain NUL",
    );
}

#[test]
#[cfg_attr(
    windows,
    ignore = "uses Unix absolute paths in runner.toml (docs/PLATFORMS.md)"
)]
fn cwd_existence_is_not_checked() {
    let config = parse(&with_provider("cwd = \"/does/not/exist/anywhere\"")).unwrap();
    assert!(config.plugins.providers[0].cwd.is_some());
}

#[test]
fn unknown_profile_is_invalid() {
    assert_invalid(
        &with_provider("profile = \"python\""),
        "plugins.providers[0].profile names the profile python, which is not defined",
    );
}

#[test]
fn unknown_default_profile_is_invalid() {
    assert_invalid(
        "[shell]\ndefault_profile = \"python\"\n",
        "shell.default_profile names the profile python",
    );
}

#[test]
fn timeouts_must_be_integers_in_range() {
    for v in ["0", "121", "-1", "1.5", "\"30\""] {
        assert_invalid(
            &with_provider(&format!("timeout_secs = {v}")),
            "plugins.providers[0].timeout_secs must be an integer number of seconds in 1..=120",
        );
        assert_invalid(
            &format!("[plugins]\nrequest_timeout_secs = {v}\n"),
            "plugins.request_timeout_secs must be an integer number of seconds in 1..=120",
        );
    }
    for v in [1, 120] {
        let c = parse(&with_provider(&format!("timeout_secs = {v}"))).unwrap();
        assert_eq!(c.plugins.providers[0].timeout, Duration::from_secs(v));
    }
}

#[test]
fn too_many_providers_is_invalid() {
    let text = (0..3)
        .map(|i| format!("[[plugins.providers]]\nid = \"p{i}\"\nname = \"P\"\ncommand = \"x\"\n"))
        .collect::<String>();
    let err = parse_runner_config(&text, 2).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ConfigInvalid);
    assert!(err
        .message()
        .contains("plugins.providers has 3 entries; at most 2"));
    assert!(parse_runner_config(&text, 3).is_ok());
}

#[test]
fn profile_program_is_required_and_nonempty() {
    assert_invalid(
        "[shell.profiles.node]\nargs = []\n",
        "shell.profiles.node.program is required",
    );
    assert_invalid(
        "[shell.profiles.node]\nprogram = \"\"\n",
        "shell.profiles.node.program must not be empty",
    );
}

#[test]
fn shell_known_keys_are_type_checked() {
    assert_invalid(
        "[shell]\npath_prepend = \"/opt/bin\"\n",
        "shell.path_prepend must be an array of strings",
    );
    assert_invalid("[shell]\nenv = 1\n", "shell.env must be a table");
    assert_invalid(
        "[shell.profiles.node]\nprogram = \"bash\"\ninit_script = 1\n",
        "shell.profiles.node.init_script must be a string",
    );
    assert_invalid(
        "[shell.profiles.node]\nprogram = \"bash\"\nargs = \"-lc\"\n",
        "shell.profiles.node.args must be an array of strings",
    );
}

#[test]
fn env_keys_must_be_nonempty_without_equals_or_nul() {
    assert_invalid(
        "[shell]\nenv = { \"\" = \"x\" }\n",
        "shell.env has the key \"\"",
    );
    assert_invalid(
        "[shell]\nenv = { \"A=B\" = \"x\" }\n",
        "variable names must be non-empty without '=' or NUL",
    );
    assert_invalid(
        "[shell.profiles.n]\nprogram = \"sh\"\nenv = { \"A\\u0000\" = \"x\" }\n",
        "shell.profiles.n.env has the key",
    );
}

#[test]
fn env_values_must_be_strings_without_nul() {
    let msg = assert_invalid(
        "[shell]\nenv = { TOKEN = \"sec\\u0000ret\" }\n",
        "shell.env.TOKEN must not contain NUL",
    );
    assert!(!msg.contains("sec"));
    assert_invalid("[shell]\nenv = { N = 1 }\n", "shell.env.N must be a string");
}

#[test]
fn path_prepend_entries_must_be_nonempty_without_nul() {
    assert_invalid(
        "[shell]\npath_prepend = [\"/a\", \"\"]\n",
        "shell.path_prepend[1] must not be empty",
    );
    assert_invalid(
        "[shell]\npath_prepend = [\"/a\\u0000\"]\n",
        "shell.path_prepend[0] must not contain NUL",
    );
}

#[test]
fn load_reports_unreadable_file_without_path() {
    let path = std::env::temp_dir().join(format!("webcodex-missing-{}.toml", std::process::id()));
    let err = load_runner_config(&path, DEFAULT_MAX_PROVIDERS).unwrap_err();
    assert_eq!(err.code(), ErrorCode::ConfigReadFailed);
    assert_eq!(err.phase(), Some(Phase::Config));
    assert!(err.message().starts_with("cannot read runner.toml"));
    assert!(!err.message().contains("webcodex-missing"));
}

#[test]
fn load_parses_a_file() {
    let path = std::env::temp_dir().join(format!(
        "webcodex-runner-{}-{:?}.toml",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&path, MINIMAL).unwrap();
    let result = load_runner_config(&path, DEFAULT_MAX_PROVIDERS);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(result.unwrap().plugins.providers[0].id, "repo-tools");
}
