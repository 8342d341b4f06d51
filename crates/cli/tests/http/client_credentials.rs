//! Where the `--server-url` client finds its bearer token, first found wins: `--token`,
//! `--token-file`, `--env-file` (`WEBCODEX_TOKEN`, then `WEBCODEX_PAT`), the environment (the
//! same two). A recording server shows which token arrived; no run prints a token, even with
//! `RUST_LOG=debug`.

use crate::client_support;

use std::path::Path;

use client_support::{run, write, Origin, Reply};

/// One distinct token per source, so the received header names the source.
const FLAG: &str = "tok-flag-000000000000";
const FILE: &str = "tok-file-111111111111";
const ENV_FILE_TOKEN: &str = "tok-envfile-token-2222";
const ENV_FILE_PAT: &str = "tok-envfile-pat-33333";
const ENV_TOKEN: &str = "tok-env-token-4444444";
const ENV_PAT: &str = "tok-env-pat-555555555";
const ALL: [&str; 6] = [FLAG, FILE, ENV_FILE_TOKEN, ENV_FILE_PAT, ENV_TOKEN, ENV_PAT];

/// Where each source lives for one run.
struct Sources<'a> {
    dir: &'a Path,
    flag: bool,
    file: bool,
    /// The lines of the env file, when one is given.
    env_file: Option<&'a str>,
    env: Vec<(&'static str, &'static str)>,
}

impl Sources<'_> {
    /// Runs `list` with these sources; the token the server received (None: no request).
    fn received(&self, origin: &Origin) -> (client_support::Run, Option<String>) {
        let url = origin.url("http");
        let mut args: Vec<String> = ["list", "--json", "--server-url", &url]
            .map(String::from)
            .to_vec();
        if self.flag {
            args.extend(["--token".into(), FLAG.into()]);
        }
        if self.file {
            let path = write(self.dir, "token.txt", &format!("\n  {FILE}  \n"));
            args.extend(["--token-file".into(), path]);
        }
        if let Some(text) = self.env_file {
            let path = write(self.dir, "client.env", text);
            args.extend(["--env-file".into(), path]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = run(&args, &self.env);
        for token in ALL {
            assert!(
                !r.stdout.contains(token) && !r.stderr.contains(token),
                "a token was printed: {r:?}"
            );
        }
        let seen = origin.seen();
        assert!(seen.len() <= 1, "{seen:?}");
        let token = seen.first().map(|s| {
            s.request
                .lines()
                .find_map(|l| {
                    let (name, value) = l.split_once(':')?;
                    name.eq_ignore_ascii_case("authorization")
                        .then(|| value.trim().strip_prefix("Bearer ").map(str::to_string))?
                })
                .expect("an Authorization: Bearer header")
        });
        (r, token)
    }
}

const ENV_FILE_BOTH: &str = "# the client's credentials\nWEBCODEX_PAT=tok-envfile-pat-33333\n\
                             export WEBCODEX_TOKEN=\"tok-envfile-token-2222\"\n";
const ENV_FILE_PAT_ONLY: &str = "OTHER=1\nWEBCODEX_PAT='tok-envfile-pat-33333'\n";

#[test]
fn each_source_alone_supplies_the_token() {
    let dir = client_support::temp_dir("alone");
    let origin = Origin::start(Reply::Answer, None);
    let none = Sources {
        dir: &dir,
        flag: false,
        file: false,
        env_file: None,
        env: vec![],
    };
    let cases = [
        (
            Sources {
                flag: true,
                ..none.clone_shape()
            },
            FLAG,
        ),
        (
            Sources {
                file: true,
                ..none.clone_shape()
            },
            FILE,
        ),
        (
            Sources {
                env_file: Some(ENV_FILE_BOTH),
                ..none.clone_shape()
            },
            ENV_FILE_TOKEN,
        ),
        (
            Sources {
                env_file: Some(ENV_FILE_PAT_ONLY),
                ..none.clone_shape()
            },
            ENV_FILE_PAT,
        ),
        (
            Sources {
                env: vec![("WEBCODEX_TOKEN", ENV_TOKEN), ("WEBCODEX_PAT", ENV_PAT)],
                ..none.clone_shape()
            },
            ENV_TOKEN,
        ),
        (
            Sources {
                env: vec![("WEBCODEX_PAT", ENV_PAT)],
                ..none.clone_shape()
            },
            ENV_PAT,
        ),
    ];
    for (sources, expected) in cases {
        let (r, token) = sources.received(&origin);
        assert_eq!(r.code, Some(0), "{expected}: {r:?}");
        assert_eq!(token.as_deref(), Some(expected), "{r:?}");
    }
}

#[test]
fn each_precedence_pair_picks_the_earlier_source() {
    let dir = client_support::temp_dir("pairs");
    let origin = Origin::start(Reply::Answer, None);
    let env = vec![("WEBCODEX_TOKEN", ENV_TOKEN), ("WEBCODEX_PAT", ENV_PAT)];
    let base = Sources {
        dir: &dir,
        flag: false,
        file: false,
        env_file: None,
        env: vec![],
    };
    let cases = [
        // --token beats each later source.
        (
            Sources {
                flag: true,
                file: true,
                ..base.clone_shape()
            },
            FLAG,
        ),
        (
            Sources {
                flag: true,
                env_file: Some(ENV_FILE_BOTH),
                ..base.clone_shape()
            },
            FLAG,
        ),
        (
            Sources {
                flag: true,
                env: env.clone(),
                ..base.clone_shape()
            },
            FLAG,
        ),
        // --token-file beats the env file and the environment.
        (
            Sources {
                file: true,
                env_file: Some(ENV_FILE_BOTH),
                ..base.clone_shape()
            },
            FILE,
        ),
        (
            Sources {
                file: true,
                env: env.clone(),
                ..base.clone_shape()
            },
            FILE,
        ),
        // --env-file beats the environment, even with only WEBCODEX_PAT in the file.
        (
            Sources {
                env_file: Some(ENV_FILE_PAT_ONLY),
                env: env.clone(),
                ..base.clone_shape()
            },
            ENV_FILE_PAT,
        ),
        // All four: --token.
        (
            Sources {
                flag: true,
                file: true,
                env_file: Some(ENV_FILE_BOTH),
                env: env.clone(),
                ..base.clone_shape()
            },
            FLAG,
        ),
    ];
    for (sources, expected) in cases {
        let (r, token) = sources.received(&origin);
        assert_eq!(r.code, Some(0), "{expected}: {r:?}");
        assert_eq!(token.as_deref(), Some(expected), "{r:?}");
    }
}

#[test]
fn without_a_credential_it_is_a_usage_error_before_any_request() {
    let dir = client_support::temp_dir("none");
    let origin = Origin::start(Reply::Answer, None);
    let base = Sources {
        dir: &dir,
        flag: false,
        file: false,
        env_file: None,
        env: vec![],
    };
    let (r, token) = base.received(&origin);
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("needs a credential"), "{r:?}");
    assert_eq!(token, None);
    // Empty variables are no credential.
    let (r, token) = Sources {
        env: vec![("WEBCODEX_TOKEN", ""), ("WEBCODEX_PAT", " ")],
        ..base.clone_shape()
    }
    .received(&origin);
    assert_eq!((r.code, token), (Some(2), None), "{r:?}");
    // A named env file without either variable is an error, not a fall-through to the
    // environment.
    let (r, token) = Sources {
        env_file: Some("OTHER=1\n"),
        env: vec![("WEBCODEX_TOKEN", ENV_TOKEN)],
        ..base.clone_shape()
    }
    .received(&origin);
    assert_eq!((r.code, token), (Some(2), None), "{r:?}");
    assert!(
        r.stderr.contains("neither WEBCODEX_TOKEN nor WEBCODEX_PAT"),
        "{r:?}"
    );
    // A missing token file: an error naming the file, not the token.
    let r = run(
        &[
            "list",
            "--server-url",
            &origin.url("http"),
            "--token-file",
            dir.join("absent").to_str().unwrap(),
        ],
        &[("WEBCODEX_TOKEN", ENV_TOKEN)],
    );
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(origin.seen().is_empty());
}

impl<'a> Sources<'a> {
    /// The same directory with no source set (struct-update base).
    fn clone_shape(&self) -> Sources<'a> {
        Sources {
            dir: self.dir,
            flag: false,
            file: false,
            env_file: None,
            env: vec![],
        }
    }
}

#[test]
fn trace_logging_shows_no_request_bytes() {
    let origin = Origin::start(Reply::Answer, None);
    let url = origin.url("http");
    let r = run(
        &["list", "--json", "--server-url", &url, "--token", FLAG],
        &[("RUST_LOG", "trace")],
    );
    assert_eq!(r.code, Some(0), "{r:?}");
    assert!(
        !r.stderr.contains(FLAG) && !r.stdout.contains(FLAG),
        "{r:?}"
    );
    // ureq's trace records hex-dump the request, Authorization header included.
    assert!(!r.stderr.contains("TRACE ureq"), "{r:?}");
    assert!(
        r.stderr.contains("DEBUG ureq"),
        "debug records still pass: {r:?}"
    );
    assert_eq!(origin.seen().len(), 1);
}

#[test]
fn the_env_file_follows_dotenv_rules() {
    let dir = client_support::temp_dir("dotenv");
    let origin = Origin::start(Reply::Answer, None);
    let base = Sources {
        dir: &dir,
        flag: false,
        file: false,
        env_file: None,
        env: vec![],
    };
    let cases = [
        // An inline comment after an unquoted value is not part of it.
        "WEBCODEX_TOKEN=tok-envfile-token-2222 # the CI token\n",
        "WEBCODEX_TOKEN=tok-envfile-token-2222\t# tab, then a comment\n",
        "  export WEBCODEX_TOKEN='tok-envfile-token-2222'  # quoted, exported\n",
        "# comment\n\nWEBCODEX_TOKEN = \"tok-envfile-token-2222\"\r\nX=1\n",
        // A later line overrides an earlier one; `#` inside quotes is kept.
        "WEBCODEX_TOKEN=first-one-0000000000\nWEBCODEX_TOKEN=\"tok-envfile-token-2222\"\n",
    ];
    for text in cases {
        let (r, token) = Sources {
            env_file: Some(text),
            ..base.clone_shape()
        }
        .received(&origin);
        assert_eq!(r.code, Some(0), "{text:?}: {r:?}");
        assert_eq!(token.as_deref(), Some(ENV_FILE_TOKEN), "{text:?}: {r:?}");
    }
    let (r, token) = Sources {
        env_file: Some("WEBCODEX_PAT='tok#with-a-hash-0000'\n"),
        ..base.clone_shape()
    }
    .received(&origin);
    assert_eq!(r.code, Some(0), "{r:?}");
    assert_eq!(token.as_deref(), Some("tok#with-a-hash-0000"), "{r:?}");
}

#[test]
fn every_message_about_the_env_file_names_it_and_quotes_nothing_from_it() {
    let dir = client_support::temp_dir("dotenv-errors");
    let origin = Origin::start(Reply::Answer, None);
    let url = origin.url("http");
    let secret = "tok-envfile-looks-secret-7777";
    let cases = [
        // An unterminated quote: the parser's message would quote the line.
        format!("WEBCODEX_TOKEN=\"{secret}\n"),
        // A value that is not a token (a space in it).
        format!("WEBCODEX_TOKEN=\"{secret} two\"\n"),
        format!("WEBCODEX_PAT='{secret}\ttab'\n"),
        // Neither variable (and a token-looking value of another one).
        format!("OTHER={secret}\n"),
    ];
    for (i, text) in cases.iter().enumerate() {
        let path = write(&dir, &format!("bad-{i}.env"), text);
        let r = run(
            &["list", "--server-url", &url, "--env-file", &path],
            &[("WEBCODEX_TOKEN", ENV_TOKEN)],
        );
        assert_eq!(r.code, Some(2), "{text:?}: {r:?}");
        assert!(
            r.stderr.contains(&format!("--env-file {path}")),
            "{text:?}: the message names the option: {r:?}"
        );
        assert!(!r.stderr.contains("--server-url:"), "{text:?}: {r:?}");
        assert!(
            !r.stderr.contains(secret) && !r.stdout.contains(secret),
            "{text:?}: a value was quoted: {r:?}"
        );
    }
    let absent = dir.join("absent.env");
    let r = run(
        &[
            "list",
            "--server-url",
            &url,
            "--env-file",
            absent.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(r.code, Some(2), "{r:?}");
    assert!(r.stderr.contains("--env-file"), "{r:?}");
    assert!(origin.seen().is_empty(), "nothing was sent");
}
