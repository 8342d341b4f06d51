//! The runners file: the remote runners a front gateway routes to (`--runners F`).
//!
//! ```toml
//! [[runners]]
//! id = "edge-1"                      # ^[a-z0-9_.-]{1,64}$, unique; the `runner` parameter
//! name = "Edge host 1"               # shown by `list`
//! url = "https://edge-1.example:8787" # the runner's `webcodex-plugin serve`
//! token_file = "tokens/edge-1.token" # or: token_env = "EDGE_1_TOKEN" (exactly one of the two)
//! ca_file = "ca.pem"                 # optional: trust this CA (PEM) instead of the built-in roots
//! max_in_flight = 16                 # optional: its own in-flight cap (1..=64, default 16)
//! ```
//!
//! Validation is strict: an unknown key, a missing or mistyped key, a bad or duplicate id, the id
//! `local` beside a local runner, both or neither credential source, or a file without any entry
//! is an error that names the entry (`runners[INDEX]`, from 0) and the key, and says what to
//! fix. Relative `token_file` and `ca_file` paths are resolved against the directory of the
//! runners file (docs/DECISIONS.md D-LINK-4). No message ever contains a token: the file holds
//! only where a token is, and a TOML syntax error gives only its line and column.

use std::path::{Path, PathBuf};

/// The runner name [`Gateway::single`](super::Gateway::single) registers its host under.
pub const LOCAL_RUNNER: &str = "local";

/// The longest runner id, in bytes.
pub const MAX_RUNNER_ID_BYTES: usize = 64;
/// The longest runner display name, in bytes.
pub const MAX_RUNNER_NAME_BYTES: usize = 128;
/// The most runners a runners file may list.
pub const MAX_RUNNERS: usize = 64;
/// A remote runner's own in-flight cap when its entry gives none: beyond it a request fails
/// at once with `plugin_runner_saturated`, so one slow runner cannot hold every slot of the
/// front.
pub const DEFAULT_RUNNER_IN_FLIGHT: usize = 16;
/// The largest `max_in_flight` an entry may give (the front's own in-flight bound).
pub const MAX_RUNNER_IN_FLIGHT: usize = 64;
/// The most requests the remote runners of a gateway have in flight together: 48 of the
/// front's 64 (`transport::MAX_IN_FLIGHT`), so 16 always stay for the local runner.
pub const REMOTE_IN_FLIGHT: usize = 48;

/// Where a runner's bearer token comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenSource {
    /// A file holding the token alone on one line (resolved to an absolute path, or relative to
    /// the current directory when the runners file was given as text).
    File(PathBuf),
    /// An environment variable of the gateway's process.
    Env(String),
}

/// One `[[runners]]` entry, validated. Holds no token: [`RunnerEntry::token`] reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerEntry {
    /// The runner id callers route by.
    pub id: String,
    /// The display name `list` shows.
    pub name: String,
    /// The URL of the runner's `serve` endpoint (`http://` or `https://`).
    pub url: String,
    /// Where the token is.
    pub token: TokenSource,
    /// A PEM file of CA certificates to trust instead of the built-in roots.
    pub ca_file: Option<PathBuf>,
    /// The most requests in flight to this runner at once (`max_in_flight`, default
    /// [`DEFAULT_RUNNER_IN_FLIGHT`]).
    pub max_in_flight: usize,
}

/// A runners file that could not be read or is invalid. Its message never contains a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnersError(String);

impl RunnersError {
    /// An error with this message (which must hold no token).
    pub fn new(message: impl Into<String>) -> RunnersError {
        RunnersError(message.into())
    }
}

impl std::fmt::Display for RunnersError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RunnersError {}

/// Reads and validates a runners file. `with_local` says whether a local runner (`--config`)
/// runs beside these, which reserves the id `local`.
pub fn load_runners(path: &Path, with_local: bool) -> Result<Vec<RunnerEntry>, RunnersError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| RunnersError(format!("cannot read the runners file: {e}")))?;
    let base = path.parent().unwrap_or(Path::new(""));
    parse_runners(&text, base, with_local)
}

/// Validates the text of a runners file; relative paths are resolved against `base`.
pub fn parse_runners(
    text: &str,
    base: &Path,
    with_local: bool,
) -> Result<Vec<RunnerEntry>, RunnersError> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        // The position and the parser's reason only: its full display quotes the line.
        let reason = one_line(e.message());
        match e.span() {
            Some(span) => {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                RunnersError(format!(
                    "the runners file is not valid TOML (line {line}, column {column}: {reason})"
                ))
            }
            None => RunnersError(format!("the runners file is not valid TOML ({reason})")),
        }
    })?;
    let mut list = None;
    for (key, value) in &table {
        match (key.as_str(), value) {
            ("runners", toml::Value::Array(items)) => list = Some(items),
            ("runners", _) => {
                return Err(RunnersError(
                    "`runners` must be an array of tables: write each runner as a [[runners]] \
                     entry"
                        .into(),
                ))
            }
            (other, _) => {
                return Err(RunnersError(format!(
                    "unknown top-level key `{}`: the runners file holds only [[runners]] entries",
                    echo(other)
                )))
            }
        }
    }
    let items = match list {
        Some(items) if !items.is_empty() => items,
        _ => {
            return Err(RunnersError(
                "the runners file has no [[runners]] entry; add one with id, name, url and \
                 token_file or token_env"
                    .into(),
            ))
        }
    };
    if items.len() > MAX_RUNNERS {
        return Err(RunnersError(format!(
            "the runners file lists {} runners; at most {MAX_RUNNERS} are allowed",
            items.len()
        )));
    }
    let mut entries: Vec<RunnerEntry> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let entry = parse_entry(index, item, base)?;
        if with_local && entry.id == LOCAL_RUNNER {
            return Err(RunnersError(format!(
                "runners[{index}].id: `local` is the runner of --config; give this runner \
                 another id"
            )));
        }
        if let Some(j) = entries.iter().position(|e| e.id == entry.id) {
            return Err(RunnersError(format!(
                "runners[{index}].id: `{}` is already the id of runners[{j}]; ids must be unique",
                entry.id
            )));
        }
        entries.push(entry);
    }
    Ok(entries)
}

const KEYS: [&str; 7] = [
    "id",
    "name",
    "url",
    "token_file",
    "token_env",
    "ca_file",
    "max_in_flight",
];

fn parse_entry(index: usize, item: &toml::Value, base: &Path) -> Result<RunnerEntry, RunnersError> {
    let at = |key: &str, problem: &str| RunnersError(format!("runners[{index}].{key}: {problem}"));
    let table = item.as_table().ok_or_else(|| {
        RunnersError(format!(
            "runners[{index}]: each runner must be a table ([[runners]] with id, name, url, …)"
        ))
    })?;
    for key in table.keys() {
        if !KEYS.contains(&key.as_str()) {
            let hint = if key == "token" {
                "; never put a token in this file: give `token_file` (a file holding it) or \
                 `token_env` (an environment variable holding it)"
            } else {
                ""
            };
            return Err(RunnersError(format!(
                "runners[{index}]: unknown key `{}` (allowed: {}){hint}",
                echo(key),
                KEYS.join(", ")
            )));
        }
    }
    let string = |key: &str| -> Result<Option<&str>, RunnersError> {
        match table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(at(key, "must be a string")),
        }
    };
    let required = |key: &str| string(key)?.ok_or_else(|| at(key, "is required"));
    let id = required("id")?;
    if !valid_id(id) {
        return Err(at(
            "id",
            "must be 1 to 64 characters of a-z, 0-9, `_`, `.` and `-`",
        ));
    }
    let name = required("name")?;
    if name.trim().is_empty()
        || name.len() > MAX_RUNNER_NAME_BYTES
        || name.chars().any(char::is_control)
    {
        return Err(at(
            "name",
            "must be 1 to 128 bytes of text without control characters",
        ));
    }
    let url = required("url")?;
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(at("url", "must start with http:// or https://"));
    }
    let path = |p: &str| {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            base.join(p)
        }
    };
    let token = match (string("token_file")?, string("token_env")?) {
        (Some(_), Some(_)) => {
            return Err(RunnersError(format!(
                "runners[{index}]: give exactly one of token_file and token_env, not both"
            )))
        }
        (None, None) => {
            return Err(RunnersError(format!(
                "runners[{index}]: a credential is required: token_file (a file holding the \
                 token) or token_env (an environment variable holding it)"
            )))
        }
        (Some(""), None) => return Err(at("token_file", "must be a path")),
        (Some(file), None) => TokenSource::File(path(file)),
        (None, Some(var)) => {
            if var.is_empty() || var.contains(['=', '\0']) {
                return Err(at(
                    "token_env",
                    "must be the name of an environment variable",
                ));
            }
            TokenSource::Env(var.to_string())
        }
    };
    let ca_file = match string("ca_file")? {
        Some("") => return Err(at("ca_file", "must be a path")),
        Some(file) => Some(path(file)),
        None => None,
    };
    let max_in_flight = match table.get("max_in_flight") {
        None => DEFAULT_RUNNER_IN_FLIGHT,
        Some(toml::Value::Integer(n)) if (1..=MAX_RUNNER_IN_FLIGHT as i64).contains(n) => {
            *n as usize
        }
        Some(_) => {
            return Err(at(
                "max_in_flight",
                "must be a whole number from 1 to 64 (requests in flight to this runner)",
            ))
        }
    };
    Ok(RunnerEntry {
        id: id.to_string(),
        name: name.to_string(),
        url: url.to_string(),
        token,
        ca_file,
        max_in_flight,
    })
}

impl RunnerEntry {
    /// Reads this runner's token from its file or variable. The error names the source, never
    /// a value: not the file's path (a token pasted as `token_file` would be echoed), and the
    /// variable only when it has the shape of a variable name (`^[A-Z_][A-Z0-9_]{0,63}$`).
    pub fn token(&self) -> Result<String, RunnersError> {
        let problem = |m: &str| RunnersError(format!("runner `{}`: {m}", self.id));
        let token =
            match &self.token {
                TokenSource::File(path) => {
                    let text = std::fs::read_to_string(path)
                        .map_err(|e| problem(&format!("cannot read token_file: {e}")))?;
                    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
                    match (lines.next(), lines.next()) {
                        (Some(token), None) => token.to_string(),
                        (None, _) => {
                            return Err(problem(
                                "token_file is empty; put the token alone on one line",
                            ))
                        }
                        (Some(_), Some(_)) => return Err(problem(
                            "token_file has more than one line; put the token alone on one line",
                        )),
                    }
                }
                TokenSource::Env(name) => {
                    match std::env::var(name) {
                        Ok(value) if !value.trim().is_empty() => value.trim().to_string(),
                        _ if variable_shaped(name) => {
                            return Err(problem(&format!(
                                "token_env: the environment variable {name} is not set (or empty)"
                            )))
                        }
                        _ => return Err(problem(
                            "token_env: the environment variable it names is not set (or empty); \
                         token_env takes the name of a variable (e.g. EDGE_1_TOKEN), never a \
                         token",
                        )),
                    }
                }
            };
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(problem(
                "the token must be one line of printable ASCII without spaces",
            ));
        }
        Ok(token)
    }
}

/// True for an id matching `^[a-z0-9_.-]{1,64}$`.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_RUNNER_ID_BYTES
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.-".contains(&b))
}

/// True for a conventional environment variable name (`^[A-Z_][A-Z0-9_]{0,63}$`), which a
/// message may name; anything else given as `token_env` might be a misplaced token.
fn variable_shaped(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

/// A key from the file made safe to echo: control characters replaced, at most 64 bytes.
fn echo(key: &str) -> String {
    let mut out = String::new();
    for c in key.chars() {
        if out.len() + c.len_utf8() > 64 {
            out.push('…');
            break;
        }
        out.push(if c.is_control() { '?' } else { c });
    }
    out
}

/// The first line of a parser message, at most 200 bytes.
fn one_line(message: &str) -> String {
    let line = message.lines().next().unwrap_or("");
    let mut end = line.len().min(200);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Vec<RunnerEntry>, String> {
        parse_runners(text, Path::new("/etc/wc"), true).map_err(|e| e.to_string())
    }

    const ONE: &str = "[[runners]]\nid = \"edge-1\"\nname = \"Edge 1\"\n\
                       url = \"http://127.0.0.1:1\"\ntoken_file = \"edge.tok\"\n";

    #[test]
    fn a_valid_file() {
        let text = format!(
            "{ONE}\n[[runners]]\nid = \"b_2.x\"\nname = \"B\"\nurl = \"https://b.example/p\"\n\
             token_env = \"B_TOKEN\"\nca_file = \"/abs/ca.pem\"\nmax_in_flight = 2\n"
        );
        let entries = parse(&text).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].id, "edge-1");
        assert_eq!(entries[0].name, "Edge 1");
        assert_eq!(
            entries[0].token,
            TokenSource::File(PathBuf::from("/etc/wc/edge.tok"))
        );
        assert_eq!(entries[0].ca_file, None);
        assert_eq!(entries[1].token, TokenSource::Env("B_TOKEN".into()));
        assert_eq!(entries[1].ca_file, Some(PathBuf::from("/abs/ca.pem")));
        assert_eq!(entries[0].max_in_flight, DEFAULT_RUNNER_IN_FLIGHT);
        assert_eq!(entries[1].max_in_flight, 2);
    }

    #[test]
    fn relative_paths_follow_the_runners_file() {
        let dir = std::env::temp_dir().join(format!("wc-runners-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("runners.toml");
        std::fs::write(&file, ONE.replace("edge.tok", "sub/edge.tok")).unwrap();
        let entries = load_runners(&file, false).unwrap();
        assert_eq!(
            entries[0].token,
            TokenSource::File(dir.join("sub/edge.tok"))
        );
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/edge.tok"), "\n  s3cret-token-value \n\n").unwrap();
        assert_eq!(entries[0].token().unwrap(), "s3cret-token-value");
        std::fs::write(dir.join("sub/edge.tok"), "a\nb\n").unwrap();
        let e = entries[0].token().unwrap_err().to_string();
        assert!(e.contains("more than one line") && !e.contains('\n'), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn token_env_is_read_and_named_when_missing() {
        let entry = RunnerEntry {
            id: "x".into(),
            name: "X".into(),
            url: "http://h:1".into(),
            token: TokenSource::Env("WC_RUNNERS_UNIT_SURELY_UNSET".into()),
            ca_file: None,
            max_in_flight: DEFAULT_RUNNER_IN_FLIGHT,
        };
        let e = entry.token().unwrap_err().to_string();
        assert!(e.contains("WC_RUNNERS_UNIT_SURELY_UNSET"), "{e}");
    }

    #[test]
    fn errors_name_the_entry_and_key_and_say_what_to_fix() {
        let cases: Vec<(String, &str)> = vec![
            (String::new(), "no [[runners]] entry"),
            ("runners = 3".into(), "array of tables"),
            ("other = 1\n".into(), "unknown top-level key `other`"),
            (
                ONE.replace("edge-1", "Edge"),
                "runners[0].id: must be 1 to 64",
            ),
            (ONE.replace("edge-1", &"a".repeat(65)), "runners[0].id"),
            (
                ONE.replace("edge-1", "local"),
                "`local` is the runner of --config",
            ),
            (
                format!("{ONE}{ONE}"),
                "runners[1].id: `edge-1` is already the id of runners[0]",
            ),
            (
                ONE.replace("name = \"Edge 1\"\n", ""),
                "runners[0].name: is required",
            ),
            (
                ONE.replace("name = \"Edge 1\"", "name = 5"),
                "runners[0].name: must be a string",
            ),
            (
                ONE.replace("http://", "ftp://"),
                "runners[0].url: must start with http://",
            ),
            (
                ONE.replace("token_file = \"edge.tok\"\n", ""),
                "a credential is required",
            ),
            (
                format!("{ONE}token_env = \"T\"\n"),
                "exactly one of token_file and token_env",
            ),
            (format!("{ONE}tokn = 1\n"), "unknown key `tokn`"),
            (
                format!("{ONE}max_in_flight = 0\n"),
                "runners[0].max_in_flight: must be a whole number from 1 to 64",
            ),
            (format!("{ONE}max_in_flight = 65\n"), "max_in_flight"),
            (format!("{ONE}max_in_flight = \"4\"\n"), "max_in_flight"),
            (
                format!("{ONE}token_env = \"\"\n").replace("token_file = \"edge.tok\"\n", ""),
                "token_env",
            ),
            ("[[runners]\n".into(), "not valid TOML (line 1"),
        ];
        for (text, want) in cases {
            let e = parse(&text).expect_err(&text);
            assert!(e.contains(want), "{text:?}: {e}");
        }
        // `local` is a valid id when no local runner runs beside.
        assert!(parse_runners(&ONE.replace("edge-1", "local"), Path::new("/"), false).is_ok());
    }

    #[test]
    fn no_error_echoes_a_token_value() {
        let secret = "super-secret-value-0123456789";
        for text in [
            format!("{ONE}token = \"{secret}\"\n"),
            format!("[[runners]]\nid = \"a\"\ntoken = \"{secret}\n"),
            format!("[[runners]]\nid = \"a\"\ntoken = {secret}\n"),
        ] {
            let e = parse(&text).unwrap_err();
            assert!(!e.contains(secret), "{e}");
        }
        let e = parse(&format!("{ONE}token = \"{secret}\"\n")).unwrap_err();
        assert!(e.contains("never put a token in this file"), "{e}");
    }

    #[test]
    fn ids() {
        for good in ["a", "edge-1", "a.b_c-9", &"z".repeat(64)] {
            assert!(valid_id(good), "{good}");
        }
        for bad in ["", "A", "a b", "é", "a/b", &"z".repeat(65)] {
            assert!(!valid_id(bad), "{bad}");
        }
    }
}
