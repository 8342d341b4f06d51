use super::*;
use crate::env::is_sensitive_variable;

fn os(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
    pairs
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect()
}

fn provider(profile: Option<&str>) -> ProviderConfig {
    ProviderConfig {
        id: "p".into(),
        name: "P".into(),
        command: "x".into(),
        args: Vec::new(),
        cwd: None,
        profile: profile.map(str::to_string),
        timeout: Duration::from_secs(30),
        restart: Default::default(),
    }
}

fn profile(env: &[(&str, &str)], init_script: Option<&str>) -> ProfileConfig {
    ProfileConfig {
        program: "/bin/sh".into(),
        args: vec!["-c".into()],
        init_script: init_script.map(str::to_string),
        env: env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

fn shell_with(profiles: &[(&str, ProfileConfig)]) -> ShellConfig {
    ShellConfig {
        profiles: profiles
            .iter()
            .map(|(n, p)| (n.to_string(), p.clone()))
            .collect(),
        ..ShellConfig::default()
    }
}

fn base() -> Vec<(OsString, OsString)> {
    os(&[("PATH", "/usr/bin:/bin"), ("HOME", "/home/u")])
}

fn get(s: &EnvSnapshot, key: &str) -> Option<String> {
    s.get(key).map(|v| v.to_string_lossy().into_owned())
}

fn assert_prepare_failed(err: &Error, needle: &str) {
    assert_eq!(err.code(), ErrorCode::EnvironmentPrepareFailed);
    assert_eq!(err.phase(), Some(Phase::Environment));
    assert!(
        err.message().contains(needle),
        "message {:?} should contain {:?}",
        err.message(),
        needle
    );
}

#[test]
fn from_vars_sorts_and_last_duplicate_wins() {
    let s = EnvSnapshot::from_vars(os(&[("B", "1"), ("A", "2"), ("B", "3")]));
    assert_eq!(s.vars(), os(&[("A", "2"), ("B", "3")]).as_slice());
    assert_eq!(get(&s, "B").as_deref(), Some("3"));
    assert_eq!(s.get("C"), None);
}

#[test]
fn from_vars_drops_sensitive_variables() {
    let s = EnvSnapshot::from_vars(os(&[
        ("WEBCODEX_TOKEN", "t"),
        ("WEBCODEX_PAT", "t"),
        ("WEBCODEX_AGENT_TOKEN", "t"),
        ("WEBCODEX_USER_TOKEN", "t"),
        ("AUTHORIZATION", "t"),
        ("KEEP", "k"),
    ]));
    assert_eq!(s.vars(), os(&[("KEEP", "k")]).as_slice());
}

#[test]
fn sensitive_names_match_in_any_case_on_every_platform() {
    for name in [
        "WEBCODEX_TOKEN",
        "webcodex_pat",
        "Webcodex_Agent_Token",
        "webcodex_USER_token",
        "authorization",
        "Authorization",
    ] {
        assert!(is_sensitive_variable(OsStr::new(name)), "{name}");
    }
    for name in ["WEBCODEX_TOKENS", "AUTHORIZATION_", "X_WEBCODEX_PAT", ""] {
        assert!(!is_sensitive_variable(OsStr::new(name)), "{name}");
    }
}

#[test]
fn without_profile_the_base_environment_is_used() {
    let s = prepare_environment(&ShellConfig::default(), &provider(None), base()).unwrap();
    assert_eq!(s, EnvSnapshot::from_vars(base()));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "expects the Unix PATH separator ':' (docs/PLATFORMS.md)"
)]
fn path_prepend_goes_in_front_in_order() {
    let shell = ShellConfig {
        path_prepend: vec!["/opt/a".into(), "/opt/b".into()],
        ..ShellConfig::default()
    };
    let s = prepare_environment(&shell, &provider(None), base()).unwrap();
    assert_eq!(get(&s, "PATH").unwrap(), "/opt/a:/opt/b:/usr/bin:/bin");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "expects the Unix PATH separator ':' (docs/PLATFORMS.md)"
)]
fn path_prepend_alone_when_path_is_absent() {
    let shell = ShellConfig {
        path_prepend: vec!["/opt/a".into(), "/opt/b".into()],
        ..ShellConfig::default()
    };
    let s = prepare_environment(&shell, &provider(None), os(&[("HOME", "/h")])).unwrap();
    assert_eq!(get(&s, "PATH").unwrap(), "/opt/a:/opt/b");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "expects the Unix PATH separator ':' (docs/PLATFORMS.md)"
)]
fn path_prepend_entry_with_separator_fails() {
    let shell = ShellConfig {
        path_prepend: vec!["/a:/b".into()],
        ..ShellConfig::default()
    };
    let err = prepare_environment(&shell, &provider(None), base()).unwrap_err();
    assert_prepare_failed(&err, "path_prepend");
    assert!(!err.message().contains("/a:/b"));
}

#[test]
#[cfg(windows)]
fn path_prepend_uses_semicolons_and_finds_path_in_any_case() {
    let shell = ShellConfig {
        path_prepend: vec![r"C:\a".into(), r"C:\b".into()],
        ..ShellConfig::default()
    };
    let s = prepare_environment(&shell, &provider(None), os(&[("Path", r"C:\Windows")])).unwrap();
    assert_eq!(get(&s, "PATH").unwrap(), r"C:\a;C:\b;C:\Windows");
    assert_eq!(s.vars().len(), 1, "one PATH variable, whatever its case");
    // Windows quotes an entry holding `;` (PATH allows that); only a `"` cannot be joined.
    let shell = ShellConfig {
        path_prepend: vec![r#"C:\a"b"#.into()],
        ..ShellConfig::default()
    };
    let err = prepare_environment(&shell, &provider(None), base()).unwrap_err();
    assert_prepare_failed(
        &err,
        "a shell.path_prepend entry contains '\"', which PATH cannot hold",
    );
    assert!(!err.message().contains(r"C:\a"), "the value is never shown");
}

#[test]
fn profile_env_overrides_shell_env_which_overrides_base() {
    let mut shell = shell_with(&[("n", profile(&[("B", "profile"), ("C", "profile")], None))]);
    shell.env = [("A", "shell"), ("B", "shell")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let base = os(&[("A", "base"), ("D", "base")]);
    let s = prepare_environment(&shell, &provider(Some("n")), base).unwrap();
    assert_eq!(get(&s, "A").as_deref(), Some("shell"));
    assert_eq!(get(&s, "B").as_deref(), Some("profile"));
    assert_eq!(get(&s, "C").as_deref(), Some("profile"));
    assert_eq!(get(&s, "D").as_deref(), Some("base"));
}

#[test]
fn provider_profile_wins_over_default_profile() {
    let mut shell = shell_with(&[
        ("a", profile(&[("WHO", "a")], None)),
        ("b", profile(&[("WHO", "b")], None)),
    ]);
    shell.default_profile = Some("a".into());
    let s = prepare_environment(&shell, &provider(Some("b")), base()).unwrap();
    assert_eq!(get(&s, "WHO").as_deref(), Some("b"));
}

#[test]
fn default_profile_applies_when_provider_has_none() {
    let mut shell = shell_with(&[("a", profile(&[("WHO", "a")], None))]);
    shell.default_profile = Some("a".into());
    let s = prepare_environment(&shell, &provider(None), base()).unwrap();
    assert_eq!(get(&s, "WHO").as_deref(), Some("a"));
}

#[test]
fn undefined_profile_fails() {
    let err =
        prepare_environment(&ShellConfig::default(), &provider(Some("zz")), base()).unwrap_err();
    assert_prepare_failed(&err, "profile 'zz' is not defined");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs a POSIX shell for the init_script (Wine has none; docs/PLATFORMS.md)"
)]
fn init_script_output_replaces_the_environment_and_chatter_is_ignored() {
    let script =
        "echo 'chatter NOT_A=VAR'\nprintf 'x\\0Y=1\\0'\nexport FROM_SCRIPT='a=b'\nunset HOME";
    let shell = shell_with(&[("n", profile(&[("FROM_PROFILE", "1")], Some(script)))]);
    let s = prepare_environment(&shell, &provider(Some("n")), base()).unwrap();
    assert_eq!(get(&s, "FROM_SCRIPT").as_deref(), Some("a=b"));
    assert_eq!(get(&s, "FROM_PROFILE").as_deref(), Some("1"));
    assert_eq!(get(&s, "HOME"), None, "the script's unset must stick");
    assert_eq!(get(&s, "Y"), None);
    assert_eq!(get(&s, "NOT_A"), None);
    assert!(s
        .vars()
        .iter()
        .all(|(k, _)| !k.to_string_lossy().contains("chatter")));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs a POSIX shell for the init_script (Wine has none; docs/PLATFORMS.md)"
)]
fn init_script_runs_in_provider_cwd() {
    let shell = shell_with(&[("n", profile(&[], Some("export WHERE=\"$(pwd)\"")))]);
    let mut p = provider(Some("n"));
    p.cwd = Some("/".into());
    let s = prepare_environment(&shell, &p, base()).unwrap();
    assert_eq!(get(&s, "WHERE").as_deref(), Some("/"));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs a POSIX shell for the init_script (Wine has none; docs/PLATFORMS.md)"
)]
fn init_script_sees_the_built_environment() {
    let mut shell = shell_with(&[("n", profile(&[], Some("export SEEN=\"$PATH\"")))]);
    shell.path_prepend = vec!["/opt/x".into()];
    let s = prepare_environment(&shell, &provider(Some("n")), base()).unwrap();
    assert_eq!(get(&s, "SEEN").as_deref(), Some("/opt/x:/usr/bin:/bin"));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs a POSIX shell for the init_script (Wine has none; docs/PLATFORMS.md)"
)]
fn init_script_failure_reports_exit_status_without_stderr() {
    let shell = shell_with(&[("node", profile(&[], Some("echo SECRET_STDERR >&2\nexit 3")))]);
    let err = prepare_environment(&shell, &provider(Some("node")), base()).unwrap_err();
    assert_prepare_failed(&err, "init_script of profile 'node' exited with status 3");
    assert!(!err.message().contains("SECRET"));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs a POSIX shell for the init_script (Wine has none; docs/PLATFORMS.md)"
)]
fn init_script_runs_in_strict_mode() {
    let shell = shell_with(&[("node", profile(&[], Some("echo \"$UNSET_VARIABLE_X\"")))]);
    let err = prepare_environment(&shell, &provider(Some("node")), base()).unwrap_err();
    assert_prepare_failed(&err, "init_script of profile 'node' exited with status");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs a POSIX shell for the init_script (Wine has none; docs/PLATFORMS.md)"
)]
fn init_script_timeout_kills_and_fails() {
    let shell = shell_with(&[("node", profile(&[], Some("sleep 30 & sleep 30")))]);
    let started = std::time::Instant::now();
    let err = prepare_with_limit(
        &shell,
        &provider(Some("node")),
        base(),
        Duration::from_secs(1),
        &SecretNames::default(),
        &AdmissionCancel::new(),
    )
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_prepare_failed(
        &err,
        "init_script of profile 'node' did not finish within 1 s",
    );
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs a POSIX shell for the init_script (Wine has none; docs/PLATFORMS.md)"
)]
fn background_process_holding_stdout_is_killed_after_the_script_exits() {
    let shell = shell_with(&[("node", profile(&[], Some("sleep 30 &\nexport DONE=1")))]);
    let started = std::time::Instant::now();
    let s = prepare_environment(&shell, &provider(Some("node")), base()).unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(get(&s, "DONE").as_deref(), Some("1"));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs a POSIX shell for the init_script (Wine has none; docs/PLATFORMS.md)"
)]
fn init_script_exit_before_marker_fails() {
    let shell = shell_with(&[("node", profile(&[], Some("exec true")))]);
    let err = prepare_environment(&shell, &provider(Some("node")), base()).unwrap_err();
    assert_prepare_failed(&err, "did not print the environment");
}

#[test]
fn unstartable_profile_program_fails() {
    let mut p = profile(&[], Some("true"));
    p.program = "/nonexistent/webcodex-shell".into();
    let shell = shell_with(&[("node", p)]);
    let err = prepare_environment(&shell, &provider(Some("node")), base()).unwrap_err();
    assert_prepare_failed(
        &err,
        "the shell program of profile 'node' could not be started",
    );
    assert!(!err.message().contains("nonexistent"));
}

#[test]
#[cfg_attr(
    windows,
    ignore = "needs a POSIX shell for the init_script (Wine has none; docs/PLATFORMS.md)"
)]
fn sensitive_variables_are_removed_from_every_source() {
    let mut shell = shell_with(&[(
        "n",
        profile(
            &[],
            Some("export WEBCODEX_PAT=s3\nexport Webcodex_Token=s8\nexport SAW_TOKEN=\"${WEBCODEX_TOKEN:-none}${webcodex_pat:-}${Authorization:-}\""),
        ),
    )]);
    shell.env = [
        ("AUTHORIZATION".to_string(), "s2".to_string()),
        ("Webcodex_Agent_Token".to_string(), "s4".to_string()),
    ]
    .into();
    shell.profiles.get_mut("n").unwrap().env =
        [("webcodex_user_token".to_string(), "s5".to_string())].into();
    let mut base = base();
    base.push(("WEBCODEX_TOKEN".into(), "s1".into()));
    base.push(("webcodex_pat".into(), "s6".into()));
    base.push(("Authorization".into(), "s7".into()));
    let s = prepare_environment(&shell, &provider(Some("n")), base).unwrap();
    for (key, _) in s.vars() {
        assert!(
            !is_sensitive_variable(key),
            "{key:?} must be removed in every case"
        );
    }
    for key in ["WEBCODEX_TOKEN", "AUTHORIZATION", "WEBCODEX_PAT"] {
        assert_eq!(s.get(key), None, "{key} must be removed");
    }
    assert_eq!(
        get(&s, "SAW_TOKEN").as_deref(),
        Some("none"),
        "the script must not see it either"
    );
}

#[test]
fn parse_env_output_needs_the_marker_on_its_own_line() {
    let out = b"say M\n\nM\nA=1\0B=x=y\0=skip\0noeq\0";
    assert_eq!(
        parse_env_output(out, "M", false).unwrap(),
        os(&[("A", "1"), ("B", "x=y")])
    );
    assert_eq!(parse_env_output(b"\nxM\nA=1\0", "M", false), None);
    assert_eq!(parse_env_output(b"\nMx\nA=1\0", "M", false), None);
}

#[test]
fn markers_are_unique() {
    assert_ne!(unique_marker(), unique_marker());
}

#[test]
fn parse_env_output_reads_cmd_lines_after_a_crlf_marker() {
    let out = b"chatter M\r\n\r\nM\r\nA=1\r\nB=x=y\r\n=skip\r\nnoeq\r\n";
    assert_eq!(
        parse_env_output(out, "M", true).unwrap(),
        os(&[("A", "1"), ("B", "x=y")])
    );
    assert_eq!(parse_env_output(b"\r\nMx\r\nA=1\r\n", "M", true), None);
}

/// A `cmd` profile (Windows): the batch-file dialect of docs/DECISIONS.md D-PLAT-3.
#[cfg(windows)]
fn cmd_profile(init_script: &str) -> ProfileConfig {
    ProfileConfig {
        program: "cmd".into(),
        args: vec!["/d".into(), "/c".into()],
        init_script: Some(init_script.to_string()),
        env: BTreeMap::new(),
    }
}

#[cfg(windows)]
fn windows_base() -> Vec<(OsString, OsString)> {
    os(&[
        ("PATH", r"C:\windows\system32;C:\windows"),
        ("HOME", r"C:\users\u"),
        ("SystemRoot", r"C:\windows"),
    ])
}

#[cfg(windows)]
#[test]
fn cmd_init_script_output_replaces_the_environment_and_runs_line_by_line() {
    let script = "echo chatter NOT_A=VAR\nset FROM_SCRIPT=a=b\nset HOME=\nset SEEN=%FROM_SCRIPT%-x";
    let shell = shell_with(&[("c", cmd_profile(script))]);
    let s = prepare_environment(&shell, &provider(Some("c")), windows_base()).unwrap();
    assert_eq!(get(&s, "FROM_SCRIPT").as_deref(), Some("a=b"));
    assert_eq!(
        get(&s, "SEEN").as_deref(),
        Some("a=b-x"),
        "a line sees what the lines before it set"
    );
    assert_eq!(get(&s, "HOME"), None, "the script's unset must stick");
    assert_eq!(get(&s, "NOT_A"), None);
    assert_eq!(
        get(&s, "PATH").as_deref(),
        Some(r"C:\windows\system32;C:\windows")
    );
}

#[cfg(windows)]
#[test]
fn cmd_init_script_exit_status_and_early_exit_fail() {
    let shell = shell_with(&[("c", cmd_profile("echo SECRET_STDERR 1>&2\nexit /b 3"))]);
    let err = prepare_environment(&shell, &provider(Some("c")), windows_base()).unwrap_err();
    assert_prepare_failed(&err, "init_script of profile 'c' exited with status 3");
    assert!(!err.message().contains("SECRET"));
    let shell = shell_with(&[("c", cmd_profile("exit /b 0"))]);
    let err = prepare_environment(&shell, &provider(Some("c")), windows_base()).unwrap_err();
    assert_prepare_failed(&err, "did not print the environment");
}

#[cfg(windows)]
#[test]
fn cmd_init_script_timeout_kills_its_job_and_fails() {
    let shell = shell_with(&[("c", cmd_profile("ping -n 60 127.0.0.1 >nul"))]);
    let started = std::time::Instant::now();
    let err = prepare_with_limit(
        &shell,
        &provider(Some("c")),
        windows_base(),
        Duration::from_secs(1),
        &SecretNames::default(),
        &AdmissionCancel::new(),
    )
    .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the script was not killed"
    );
    assert_prepare_failed(&err, "init_script of profile 'c' did not finish within 1 s");
}

/// PowerShell end to end. Wine ships only a stub `powershell.exe` that runs nothing.
#[cfg(windows)]
#[test]
#[ignore = "needs PowerShell (Wine's powershell.exe is a stub; docs/PLATFORMS.md)"]
fn powershell_init_script_output_replaces_the_environment() {
    let profile = ProfileConfig {
        program: "powershell".into(),
        args: vec![
            "-NoProfile".into(),
            "-NonInteractive".into(),
            "-Command".into(),
        ],
        init_script: Some(
            "Write-Output 'chatter NOT_A=VAR'\n$env:FROM_SCRIPT = \"a=b\"\nRemove-Item Env:HOME"
                .into(),
        ),
        env: BTreeMap::new(),
    };
    let shell = shell_with(&[("ps", profile)]);
    let s = prepare_environment(&shell, &provider(Some("ps")), windows_base()).unwrap();
    assert_eq!(get(&s, "FROM_SCRIPT").as_deref(), Some("a=b"));
    assert_eq!(get(&s, "HOME"), None);
    assert_eq!(get(&s, "NOT_A"), None);
    let failing = ProfileConfig {
        init_script: Some("Get-Item Env:NO_SUCH_VARIABLE_X".into()),
        ..shell.profiles["ps"].clone()
    };
    let shell = shell_with(&[("ps", failing)]);
    let err = prepare_environment(&shell, &provider(Some("ps")), windows_base()).unwrap_err();
    assert_prepare_failed(&err, "init_script of profile 'ps' exited with status");
}
