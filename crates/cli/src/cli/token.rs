//! `token new`: a fresh random bearer token and the tokens-file entry that grants it, ready to
//! paste into a `serve --tokens` file (the schema of `transport::http::Tokens`).

use std::io::Write;
use std::path::{Path, PathBuf};

use webcodex_plugin_host::{valid_runner_id, Scope, LOCAL_RUNNER};
use webcodex_plugin_http::MAX_TOKEN_NAME_BYTES;

use super::{EXIT_FAILURE, EXIT_OK, EXIT_USAGE};

/// Random bytes in a new token (256 bits).
const TOKEN_BYTES: usize = 32;

/// What every new token starts with: it tells a secret scanner (and a person) what the token
/// is, and keeps it from starting with `-` on a command line.
const TOKEN_PREFIX: &str = "wcp_";

/// What `token` makes.
#[derive(Debug, clap::Subcommand)]
pub(super) enum TokenCommand {
    /// Print a fresh random token in a `[[tokens]]` entry to paste into a `serve --tokens`
    /// file.
    New(NewToken),
}

/// The options of `token new`.
#[derive(Debug, clap::Args)]
pub(super) struct NewToken {
    /// The entry's name, shown in serve's logs (default: `token-` and 8 random hex digits);
    /// with --cluster-key, the key's id.
    #[arg(long, value_name = "NAME")]
    name: Option<String>,
    /// The scopes it grants, e.g. `--scopes plugin:inspect plugin:invoke` or a comma-separated
    /// list (default: plugin:inspect and plugin:invoke).
    #[arg(long, value_name = "SCOPE", num_args = 1.., value_delimiter = ',')]
    scopes: Vec<String>,
    /// Make a runner token instead: a `[[runner_tokens]]` entry with which `connect` may link
    /// the runner ID to a front (no scopes; it is refused on every user route).
    #[arg(long, value_name = "ID", conflicts_with = "scopes")]
    runner: Option<String>,
    /// Make a cluster key instead: a `[[keys]]` entry (id from --name, default `key-` and 8
    /// random hex digits; 32 random bytes) for the `serve --cluster-keys` file of every
    /// replica.
    #[arg(long, conflicts_with_all = ["scopes", "runner", "token_file"])]
    cluster_key: bool,
    /// Also write the bare token to FILE (created with mode 600), for the client's
    /// `--token-file FILE` or connect's; an existing FILE is refused unless --force.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// With --token-file: replace an existing file (its mode set to 600).
    #[arg(long, requires = "token_file")]
    force: bool,
}

/// Runs a `token` subcommand.
pub(super) fn run(command: TokenCommand) -> i32 {
    match command {
        TokenCommand::New(args) => new(&args),
    }
}

/// `token new`: prints the entry on stdout.
fn new(args: &NewToken) -> i32 {
    if args.cluster_key {
        return new_cluster_key(args.name.as_deref());
    }
    let scopes = match scopes(&args.scopes) {
        Ok(scopes) => scopes,
        Err(message) => {
            eprintln!("error: --scopes: {message}");
            return EXIT_USAGE;
        }
    };
    let Some(random) = webcodex_plugin_host::random_bytes::<{ TOKEN_BYTES + 4 }>() else {
        eprintln!("error: the system's random source failed");
        return EXIT_FAILURE;
    };
    let (secret, suffix) = random.split_at(TOKEN_BYTES);
    let name = match &args.name {
        Some(name) => match checked_name(name) {
            Ok(name) => name.to_string(),
            Err(message) => {
                eprintln!("error: --name: {message}");
                return EXIT_USAGE;
            }
        },
        None => format!(
            "token-{}",
            suffix
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        ),
    };
    let token = format!("{TOKEN_PREFIX}{}", base64url(secret));
    let text = match &args.runner {
        Some(runner) => {
            if !valid_runner_id(runner) || runner == LOCAL_RUNNER {
                eprintln!(
                    "error: --runner: a runner id is 1 to 64 characters of a-z, 0-9, `_`, `.` \
                     and `-`, and not `local`"
                );
                return EXIT_USAGE;
            }
            runner_entry(&name, &token, runner)
        }
        None => entry(&name, &token, &scopes),
    };
    if let Some(path) = &args.token_file {
        if let Err((code, message)) = write_token_file(path, &token, args.force) {
            eprintln!("error: --token-file {}: {message}", path.display());
            return code;
        }
    }
    print!("{text}");
    EXIT_OK
}

/// `token new --cluster-key [--name ID]`: prints a `[[keys]]` entry.
fn new_cluster_key(name: Option<&str>) -> i32 {
    let id = match name {
        Some(id) if valid_runner_id(id) => id.to_string(),
        Some(_) => {
            eprintln!(
                "error: --name: a cluster key id is 1 to 64 characters of a-z, 0-9, `_`, `.` \
                 and `-`"
            );
            return EXIT_USAGE;
        }
        None => {
            let Some(suffix) = webcodex_plugin_host::random_bytes::<4>() else {
                eprintln!("error: the system's random source failed");
                return EXIT_FAILURE;
            };
            let hex: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
            format!("key-{hex}")
        }
    };
    match webcodex_plugin_http::cluster::new_key_entry(&id) {
        Some(entry) => {
            print!("{entry}");
            EXIT_OK
        }
        None => {
            eprintln!("error: the system's random source failed");
            EXIT_FAILURE
        }
    }
}

/// Writes `token` and a newline to `path`, created with mode 600 (owner only) on Unix. An
/// existing file is refused unless `force`, which replaces it (and sets its mode to 600).
fn write_token_file(path: &Path, token: &str, force: bool) -> Result<(), (i32, String)> {
    use std::io::ErrorKind;
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if force {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).map_err(|e| match e.kind() {
        ErrorKind::AlreadyExists => (
            EXIT_USAGE,
            "the file exists; it is not overwritten (give --force to replace it, or another \
             path)"
                .to_string(),
        ),
        _ => (EXIT_FAILURE, format!("cannot create it: {e}")),
    })?;
    #[cfg(unix)]
    if force {
        // An existing file keeps its mode on open: make it the owner's alone.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| (EXIT_FAILURE, format!("cannot set its mode to 600: {e}")))?;
    }
    file.write_all(format!("{token}\n").as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| (EXIT_FAILURE, format!("cannot write it: {e}")))
}

/// The scopes of `--scopes`, in the order given without repeats (default: inspect, invoke).
fn scopes(given: &[String]) -> Result<Vec<Scope>, String> {
    if given.is_empty() {
        return Ok(vec![Scope::Inspect, Scope::Invoke]);
    }
    let mut scopes = Vec::new();
    for name in given.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
        let scope = Scope::parse(name).ok_or_else(|| {
            let known: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
            format!("`{name}` is not a scope; use {}", known.join(", "))
        })?;
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    if scopes.is_empty() {
        return Err("give at least one scope".into());
    }
    Ok(scopes)
}

/// A name a tokens file accepts: not blank, at most [`MAX_TOKEN_NAME_BYTES`], no control
/// characters.
fn checked_name(name: &str) -> Result<&str, String> {
    if name.trim().is_empty() {
        return Err("the name must not be empty".into());
    }
    if name.len() > MAX_TOKEN_NAME_BYTES {
        return Err(format!(
            "the name must be at most {MAX_TOKEN_NAME_BYTES} bytes"
        ));
    }
    if name.chars().any(char::is_control) {
        return Err("the name must not hold control characters".into());
    }
    Ok(name)
}

/// The `[[tokens]]` entry, with a comment on where it goes.
fn entry(name: &str, token: &str, scopes: &[Scope]) -> String {
    let quoted = |s: &str| toml::Value::String(s.to_string()).to_string();
    let scopes: Vec<String> = scopes.iter().map(|s| quoted(s.as_str())).collect();
    format!(
        "# Paste this entry into the tokens file of `webcodex-plugin serve --tokens FILE`, and\n\
         # give the token to the client (alone in a file for --token-file, mode 600:\n\
         # `token new --token-file F` writes that file).\n\
         [[tokens]]\n\
         name = {}\n\
         token = {}\n\
         scopes = [{}]\n",
        quoted(name),
        quoted(token),
        scopes.join(", ")
    )
}

/// The `[[runner_tokens]]` entry, with a comment on where it goes.
fn runner_entry(name: &str, token: &str, runner: &str) -> String {
    let quoted = |s: &str| toml::Value::String(s.to_string()).to_string();
    format!(
        "# Paste this entry into the tokens file of the front (`webcodex-plugin serve --tokens\n\
         # FILE`), and give the token to the runner (`connect`: alone in a file for --token-file,\n\
         # mode 600, as `token new --token-file F` writes it, or WEBCODEX_RUNNER_TOKEN).\n\
         # It connects only as runner {}.\n\
         [[runner_tokens]]\n\
         name = {}\n\
         token = {}\n\
         runner = {}\n",
        quoted(runner),
        quoted(name),
        quoted(token),
        quoted(runner)
    )
}

/// URL-safe base64 without padding (RFC 4648 §5): printable ASCII without spaces, as a bearer
/// token must be.
fn base64url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_matches_rfc4648() {
        assert_eq!(base64url(b""), "");
        assert_eq!(base64url(b"f"), "Zg");
        assert_eq!(base64url(b"fo"), "Zm8");
        assert_eq!(base64url(b"foo"), "Zm9v");
        assert_eq!(base64url(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64url(&[0xfb, 0xff, 0xbf]), "-_-_");
        assert_eq!(base64url(&[0u8; TOKEN_BYTES]).len(), 43);
    }

    #[test]
    fn the_entry_is_a_valid_tokens_file() {
        let text = entry(
            "ci \"quoted\" ü",
            &base64url(&[7u8; TOKEN_BYTES]),
            &[Scope::Manage],
        );
        let tokens = webcodex_plugin_http::Tokens::parse(&text).unwrap();
        let (name, scopes) = tokens
            .authenticate(&base64url(&[7u8; TOKEN_BYTES]))
            .unwrap();
        assert_eq!(name, "ci \"quoted\" ü");
        assert!(scopes.contains(Scope::Manage) && !scopes.contains(Scope::Invoke));
    }

    #[test]
    fn the_runner_entry_is_a_valid_tokens_file() {
        let token = base64url(&[9u8; TOKEN_BYTES]);
        let text = runner_entry("edge one", &token, "edge-1");
        let tokens = webcodex_plugin_http::Tokens::parse(&text).unwrap();
        assert_eq!(
            tokens.authenticate_runner(&token),
            Some(("edge one", "edge-1"))
        );
        assert!(tokens.authenticate(&token).is_none());
    }

    #[test]
    fn scopes_and_names_are_checked() {
        assert_eq!(scopes(&[]).unwrap(), vec![Scope::Inspect, Scope::Invoke]);
        assert_eq!(
            scopes(&["plugin:manage".into(), "plugin:manage".into()]).unwrap(),
            vec![Scope::Manage]
        );
        assert!(scopes(&["plugin:admin".into()]).is_err());
        assert!(checked_name(" ").is_err());
        assert!(checked_name("a\nb").is_err());
        assert!(checked_name(&"x".repeat(MAX_TOKEN_NAME_BYTES + 1)).is_err());
    }
}
