//! The bearer tokens of the HTTP transport: the tokens file, its validation and constant-time
//! authentication.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use zeroize::Zeroize;

use webcodex_plugin_host::{
    valid_runner_id, Scope, Scopes, DEFAULT_RUNNER_IN_FLIGHT, LOCAL_RUNNER, MAX_RUNNER_IN_FLIGHT,
};

/// The shortest token a tokens file may hold, in bytes.
pub const MIN_TOKEN_BYTES: usize = 16;

/// The longest token name, in bytes.
pub const MAX_TOKEN_NAME_BYTES: usize = 128;

/// Tokens printed in this project's documentation as examples: a file that holds one was
/// copied, not made, and anyone who read the docs knows it.
const EXAMPLE_TOKENS: [&str; 2] = ["long-random-secret-at-least-16-bytes", "long-random-secret"];

/// The bearer tokens of an HTTP server, loaded from a TOML tokens file:
///
/// ```toml
/// [[tokens]]
/// name = "ci-runner"            # for logs only
/// token = "long-random-secret"  # at least 16 bytes of printable ASCII, no spaces
/// scopes = ["plugin:inspect", "plugin:invoke"]
/// ```
///
/// Validation is strict: an unknown key anywhere, a missing or empty `name` (or one over
/// [`MAX_TOKEN_NAME_BYTES`]), a `token` that is shorter than 16 bytes (`MIN_TOKEN_BYTES`), holds
/// spaces or non-printable bytes or is an example token from the documentation, an unknown or
/// missing scope, a duplicate name or token, or a file without any entry is an error naming the
/// entry (`tokens[INDEX]`, from 0) and the key. No error message quotes anything from the file
/// (a key, a scope or a name may be a misplaced token); a TOML syntax error gives only its line
/// and column. A name is kept with its control characters escaped (`\u{1b}`), so the log
/// lines that show it hold none. `webcodex-plugin token new` prints a fresh entry.
#[derive(Clone)]
pub struct Tokens {
    entries: Vec<TokenEntry>,
    runners: Vec<RunnerTokenEntry>,
    /// Names this set among every set this process parsed (a clone keeps it: same tokens), so
    /// a [`TokenMemo`] made against another set is never trusted.
    generation: u64,
}

/// Numbers every parsed [`Tokens`] set.
static GENERATIONS: AtomicU64 = AtomicU64::new(1);

/// A `[[runner_tokens]]` entry: the one runner id its token may connect a link as, and the
/// runner's own in-flight cap on the front (`max_in_flight`, default 16).
#[derive(Clone)]
struct RunnerTokenEntry {
    name: String,
    digest: [u8; 32],
    runner: String,
    max_in_flight: usize,
}

#[derive(Clone)]
struct TokenEntry {
    name: String,
    digest: [u8; 32],
    scopes: Scopes,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.entries.iter().map(|e| e.name.as_str()).collect();
        f.debug_struct("Tokens").field("names", &names).finish()
    }
}

/// A tokens file that could not be read or is invalid. Its message never contains a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokensError(String);

impl std::fmt::Display for TokensError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TokensError {}

fn digest(token: &[u8]) -> [u8; 32] {
    Sha256::digest(token).into()
}

/// Equality of two digests in time independent of where they differ (`subtle`).
fn digests_equal(a: &[u8; 32], b: &[u8; 32]) -> bool {
    a.ct_eq(b).into()
}

impl Tokens {
    /// Reads and validates a tokens file.
    pub fn load(path: &Path) -> Result<Tokens, TokensError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| TokensError(format!("cannot read the tokens file: {e}")))?;
        Tokens::parse(&text)
    }

    /// Validates the text of a tokens file.
    pub fn parse(text: &str) -> Result<Tokens, TokensError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            // The position and the parser's reason, never the line (it may hold a token).
            let reason = parser_reason(e.message());
            match e.span() {
                Some(span) => {
                    let before = &text[..span.start.min(text.len())];
                    let line = before.matches('\n').count() + 1;
                    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                    TokensError(format!(
                        "the tokens file is not valid TOML (line {line}, column {column}): \
                         {reason}"
                    ))
                }
                None => TokensError(format!("the tokens file is not valid TOML: {reason}")),
            }
        })?;
        let mut list = None;
        let mut runner_list = None;
        for (key, value) in &table {
            match (key.as_str(), value) {
                ("tokens", toml::Value::Array(items)) => list = Some(items),
                ("runner_tokens", toml::Value::Array(items)) => runner_list = Some(items),
                ("tokens", _) => {
                    return Err(TokensError(
                        "`tokens` must be an array of tables ([[tokens]])".into(),
                    ))
                }
                ("runner_tokens", _) => {
                    return Err(TokensError(
                        "`runner_tokens` must be an array of tables ([[runner_tokens]])".into(),
                    ))
                }
                _ => {
                    return Err(TokensError(
                        "the tokens file has a top-level key other than `tokens` and \
                         `runner_tokens` (only [[tokens]] and [[runner_tokens]] entries are \
                         allowed)"
                            .into(),
                    ))
                }
            }
        }
        let items = list.map(Vec::as_slice).unwrap_or_default();
        let runner_items = runner_list.map(Vec::as_slice).unwrap_or_default();
        if items.is_empty() && runner_items.is_empty() {
            return Err(TokensError(
                "the tokens file has no [[tokens]] entry (and no [[runner_tokens]] entry)".into(),
            ));
        }
        let mut entries: Vec<TokenEntry> = Vec::with_capacity(items.len());
        for (index, item) in items.iter().enumerate() {
            let entry = parse_entry(index, item)?;
            if let Some(j) = entries.iter().position(|e| e.name == entry.name) {
                return Err(TokensError(format!(
                    "tokens[{index}].name: duplicates the name of tokens[{j}]"
                )));
            }
            if let Some(j) = entries
                .iter()
                .position(|e| digests_equal(&e.digest, &entry.digest))
            {
                return Err(TokensError(format!(
                    "tokens[{index}].token: duplicates the token of tokens[{j}]"
                )));
            }
            entries.push(entry);
        }
        let mut runners: Vec<RunnerTokenEntry> = Vec::with_capacity(runner_items.len());
        for (index, item) in runner_items.iter().enumerate() {
            let entry = parse_runner_entry(index, item)?;
            let at = |key: &str, what: String| {
                TokensError(format!("runner_tokens[{index}].{key}: {what}"))
            };
            if let Some(j) = runners.iter().position(|e| e.name == entry.name) {
                return Err(at(
                    "name",
                    format!("duplicates the name of runner_tokens[{j}]"),
                ));
            }
            if let Some(j) = runners.iter().position(|e| e.runner == entry.runner) {
                return Err(at(
                    "runner",
                    format!(
                        "duplicates the runner of runner_tokens[{j}] (one token per runner id)"
                    ),
                ));
            }
            if let Some(j) = entries
                .iter()
                .position(|e| digests_equal(&e.digest, &entry.digest))
            {
                return Err(at("token", format!("duplicates the token of tokens[{j}]")));
            }
            if let Some(j) = runners
                .iter()
                .position(|e| digests_equal(&e.digest, &entry.digest))
            {
                return Err(at(
                    "token",
                    format!("duplicates the token of runner_tokens[{j}]"),
                ));
            }
            runners.push(entry);
        }
        Ok(Tokens {
            entries,
            runners,
            generation: GENERATIONS.fetch_add(1, Ordering::Relaxed),
        })
    }

    /// The runner ids the `[[runner_tokens]]` entries may connect as.
    pub fn runner_ids(&self) -> impl Iterator<Item = &str> {
        self.runners.iter().map(|e| e.runner.as_str())
    }

    /// The in-flight cap of runner `runner`'s `[[runner_tokens]]` entry (`max_in_flight`,
    /// default 16); `None` when no entry names it.
    pub fn runner_max_in_flight(&self, runner: &str) -> Option<usize> {
        self.runners
            .iter()
            .find(|e| e.runner == runner)
            .map(|e| e.max_in_flight)
    }

    /// The name and runner id of the `[[runner_tokens]]` entry whose token is `presented`
    /// (compared like [`Tokens::authenticate`]). A runner token is good for the link route
    /// only; [`Tokens::authenticate`] never accepts it.
    pub fn authenticate_runner(&self, presented: &str) -> Option<(&str, &str)> {
        let wanted = digest(presented.as_bytes());
        let mut found = None;
        for entry in &self.runners {
            if digests_equal(&entry.digest, &wanted) && found.is_none() {
                found = Some((entry.name.as_str(), entry.runner.as_str()));
            }
        }
        found
    }

    /// The number of `[[tokens]]` entries (user tokens).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there is no `[[tokens]]` entry (a front that only takes runner links).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The name and scopes of the entry whose token is `presented`. Every entry is compared,
    /// each in constant time, so the time taken does not depend on which one matched.
    pub fn authenticate(&self, presented: &str) -> Option<(&str, Scopes)> {
        let wanted = digest(presented.as_bytes());
        let mut found = None;
        for entry in &self.entries {
            if digests_equal(&entry.digest, &wanted) && found.is_none() {
                found = Some((entry.name.as_str(), entry.scopes));
            }
        }
        found
    }

    /// [`Tokens::authenticate`] through a connection's `memo`: the token this connection's
    /// last request was accepted with, compared in constant time, answers without the digest
    /// while these tokens are in place; any other token is authenticated in full and, when
    /// accepted, remembered in its place.
    pub(crate) fn authenticate_remembered(
        &self,
        presented: &str,
        memo: &mut TokenMemo,
    ) -> Option<(String, Scopes)> {
        if let Some(known) = &memo.accepted {
            if known.generation == self.generation && bytes_equal(&known.token, presented) {
                return Some((known.name.clone(), known.scopes));
            }
        }
        let (name, scopes) = self.authenticate(presented)?;
        memo.accepted = Some(Accepted {
            generation: self.generation,
            token: presented.as_bytes().into(),
            name: name.to_string(),
            scopes,
        });
        Some((name.to_string(), scopes))
    }
}

/// One connection's memory of the user token it was last accepted with (see
/// [`Tokens::authenticate_remembered`]): it saves the SHA-256 of the token on every request
/// of a keep-alive connection. It holds the token's bytes, overwritten when it is dropped or
/// replaced, and is trusted only against the very set of tokens that accepted it: a reload
/// of the tokens file makes every connection authenticate again.
#[derive(Default)]
pub(crate) struct TokenMemo {
    accepted: Option<Accepted>,
}

struct Accepted {
    generation: u64,
    token: Box<[u8]>,
    name: String,
    scopes: Scopes,
}

impl Drop for Accepted {
    fn drop(&mut self) {
        // Volatile writes the compiler keeps (`zeroize`).
        self.token.zeroize();
    }
}

/// Equality of a remembered token and a presented one in time independent of where they
/// differ (a length differs only when the tokens do; tokens of one file share no secret
/// through their length).
fn bytes_equal(known: &[u8], presented: &str) -> bool {
    known.ct_eq(presented.as_bytes()).into()
}

/// The TOML parser's reason (`invalid basic string`, `expected newline, `#``, `duplicate key
/// `token` in table `tokens``) as a message may carry it: one line, bounded, and every
/// backquoted fragment that is not punctuation or a lower-case key name replaced by `…` (a
/// misplaced line can make a token look like a key, which the parser would quote).
pub(crate) fn parser_reason(message: &str) -> String {
    let one_line: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let mut out = String::new();
    for (i, part) in one_line.join("; ").split('`').enumerate() {
        if i > 0 {
            out.push('`');
        }
        let key_like =
            part.len() <= 20 && part.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
        if i % 2 == 1 && part.len() > 2 && !key_like {
            out.push('…');
        } else {
            out.extend(part.chars().filter(|c| !c.is_control()));
        }
        if out.len() > 200 {
            let cut = (0..=200)
                .rev()
                .find(|&i| out.is_char_boundary(i))
                .unwrap_or(0);
            out.truncate(cut);
            out.push('…');
            break;
        }
    }
    out
}

fn parse_entry(index: usize, item: &toml::Value) -> Result<TokenEntry, TokensError> {
    let err = |key: &str, what: &str| TokensError(format!("tokens[{index}].{key}: {what}"));
    let toml::Value::Table(table) = item else {
        return Err(TokensError(format!("tokens[{index}]: must be a table")));
    };
    for key in table.keys() {
        if !matches!(key.as_str(), "name" | "token" | "scopes") {
            return Err(TokensError(format!(
                "tokens[{index}]: has a key other than name, token and scopes; remove it"
            )));
        }
    }
    let name = checked_name(table.get("name"), &err)?;
    let token = checked_token(table.get("token"), &err)?;
    let scopes = match table.get("scopes") {
        None => return Err(err("scopes", "missing")),
        Some(toml::Value::Array(items)) => items,
        Some(_) => return Err(err("scopes", "must be an array of strings")),
    };
    if scopes.is_empty() {
        return Err(err("scopes", "empty (give at least one scope)"));
    }
    let mut set = Scopes::none();
    for (i, scope) in scopes.iter().enumerate() {
        let scope = match scope {
            toml::Value::String(s) => Scope::parse(s).ok_or_else(|| {
                let known: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
                err(
                    &format!("scopes[{i}]"),
                    &format!("not a known scope (known: {})", known.join(", ")),
                )
            })?,
            _ => return Err(err(&format!("scopes[{i}]"), "must be a string")),
        };
        set = set.with(scope);
    }
    Ok(TokenEntry {
        name,
        digest: digest(token.as_bytes()),
        scopes: set,
    })
}

/// The `token` of an entry, checked: a string of at least 16 bytes of printable ASCII without
/// spaces that is not an example from the documentation.
fn checked_token<'v>(
    value: Option<&'v toml::Value>,
    err: &dyn Fn(&str, &str) -> TokensError,
) -> Result<&'v String, TokensError> {
    let token = match value {
        None => return Err(err("token", "missing")),
        Some(toml::Value::String(s)) => s,
        Some(_) => return Err(err("token", "must be a string")),
    };
    if token.is_empty() {
        return Err(err("token", "empty"));
    }
    if token.len() < MIN_TOKEN_BYTES {
        return Err(err(
            "token",
            &format!("shorter than {MIN_TOKEN_BYTES} bytes"),
        ));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(err(
            "token",
            "must be printable ASCII without spaces (it is sent in an HTTP header)",
        ));
    }
    if EXAMPLE_TOKENS.contains(&token.as_str()) {
        return Err(err(
            "token",
            "is the example token from the documentation; make a fresh one with \
             `webcodex-plugin token new`",
        ));
    }
    Ok(token)
}

/// The name of an entry, checked and kept with its control characters escaped.
fn checked_name(
    value: Option<&toml::Value>,
    err: &dyn Fn(&str, &str) -> TokensError,
) -> Result<String, TokensError> {
    match value {
        None => Err(err("name", "missing")),
        Some(toml::Value::String(s)) if s.trim().is_empty() => Err(err("name", "empty")),
        Some(toml::Value::String(s)) if s.len() > MAX_TOKEN_NAME_BYTES => Err(err(
            "name",
            &format!("longer than {MAX_TOKEN_NAME_BYTES} bytes"),
        )),
        Some(toml::Value::String(s)) => Ok(escape_controls(s)),
        Some(_) => Err(err("name", "must be a string")),
    }
}

fn parse_runner_entry(index: usize, item: &toml::Value) -> Result<RunnerTokenEntry, TokensError> {
    let err = |key: &str, what: &str| TokensError(format!("runner_tokens[{index}].{key}: {what}"));
    let toml::Value::Table(table) = item else {
        return Err(TokensError(format!(
            "runner_tokens[{index}]: must be a table"
        )));
    };
    for key in table.keys() {
        if !matches!(key.as_str(), "name" | "token" | "runner" | "max_in_flight") {
            return Err(TokensError(format!(
                "runner_tokens[{index}]: has a key other than name, token, runner and \
                 max_in_flight; remove it"
            )));
        }
    }
    let name = checked_name(table.get("name"), &err)?;
    let token = checked_token(table.get("token"), &err)?;
    let runner = match table.get("runner") {
        None => return Err(err("runner", "missing")),
        Some(toml::Value::String(id)) if id == LOCAL_RUNNER => {
            return Err(err(
                "runner",
                "`local` is the name of a front's own runner; choose another id",
            ))
        }
        Some(toml::Value::String(id)) if valid_runner_id(id) => id.clone(),
        Some(toml::Value::String(_)) => {
            return Err(err(
                "runner",
                "must be 1 to 64 characters of a-z, 0-9, `_`, `.` and `-`",
            ))
        }
        Some(_) => return Err(err("runner", "must be a string")),
    };
    let max_in_flight = match table.get("max_in_flight") {
        None => DEFAULT_RUNNER_IN_FLIGHT,
        Some(toml::Value::Integer(n)) if (1..=MAX_RUNNER_IN_FLIGHT as i64).contains(n) => {
            *n as usize
        }
        Some(_) => {
            return Err(err(
                "max_in_flight",
                "must be a whole number from 1 to 64 (requests in flight to this runner at \
                 once; default 16)",
            ))
        }
    };
    Ok(RunnerTokenEntry {
        name,
        digest: digest(token.as_bytes()),
        runner,
        max_in_flight,
    })
}

/// `name` with each control character written as a `\u{…}` escape (and `\` as `\\`, so
/// the escaped form names one original only).
fn escape_controls(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// True when the file at `path` may be read by every user of the machine (Unix: mode has
/// `o+r`); always false elsewhere. `serve` warns about such a tokens file at start.
pub fn readable_by_everyone(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o004 != 0)
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// The token of an `Authorization: Bearer TOKEN` value (scheme case-insensitive).
pub(super) fn bearer(value: &str) -> Option<&str> {
    let (scheme, rest) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = rest.trim_start();
    (!token.is_empty() && !token.contains(' ')).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "0123456789abcdef-secret";

    fn tokens(body: &str) -> Result<Tokens, TokensError> {
        Tokens::parse(body)
    }

    #[test]
    fn tokens_parse_and_authenticate() {
        let t = tokens(&format!(
            "[[tokens]]\nname = \"ci\"\ntoken = \"{SECRET}\"\nscopes = [\"plugin:inspect\", \"plugin:invoke\"]\n\
             [[tokens]]\nname = \"ops\"\ntoken = \"{SECRET}-ops\"\nscopes = [\"plugin:manage\"]\n"
        ))
        .unwrap();
        assert_eq!(t.len(), 2);
        let (name, scopes) = t.authenticate(SECRET).unwrap();
        assert_eq!(name, "ci");
        assert!(scopes.contains(Scope::Inspect) && scopes.contains(Scope::Invoke));
        assert!(!scopes.contains(Scope::Manage));
        let (name, scopes) = t.authenticate(&format!("{SECRET}-ops")).unwrap();
        assert_eq!(name, "ops");
        assert!(scopes.contains(Scope::Manage) && !scopes.contains(Scope::Invoke));
        assert!(t.authenticate("0123456789abcdef-secreT").is_none());
        assert!(t.authenticate("").is_none());
        assert!(!format!("{t:?}").contains(SECRET));
    }

    #[test]
    fn a_memo_answers_only_its_own_token_and_only_against_the_set_that_accepted_it() {
        let file = |extra: &str| {
            format!(
                "[[tokens]]\nname = \"ci\"\ntoken = \"{SECRET}\"\nscopes = [\"plugin:invoke\"]\n{extra}"
            )
        };
        let ops = format!(
            "[[tokens]]\nname = \"ops\"\ntoken = \"{SECRET}-ops\"\nscopes = [\"plugin:manage\"]\n"
        );
        let both = tokens(&file(&ops)).unwrap();
        let mut memo = TokenMemo::default();
        let ops_token = format!("{SECRET}-ops");
        let (name, _) = both.authenticate_remembered(&ops_token, &mut memo).unwrap();
        assert_eq!(name, "ops");
        // Remembered: the same answer again; other tokens are still checked in full.
        let (name, scopes) = both.authenticate_remembered(&ops_token, &mut memo).unwrap();
        assert_eq!(name, "ops");
        assert!(scopes.contains(Scope::Manage));
        assert!(both
            .authenticate_remembered("0123456789abcdef-secreT-ops", &mut memo)
            .is_none());
        assert!(both
            .authenticate_remembered(&format!("{SECRET}-op"), &mut memo)
            .is_none());
        assert!(both.authenticate_remembered("", &mut memo).is_none());
        let (name, _) = both.authenticate_remembered(SECRET, &mut memo).unwrap();
        assert_eq!(name, "ci", "an accepted token takes the memo's place");
        let (name, _) = both.authenticate_remembered(&ops_token, &mut memo).unwrap();
        assert_eq!(name, "ops");
        // A new set without `ops` (a reload): the memo made against the old set is not trusted.
        let only_ci = tokens(&file("")).unwrap();
        assert!(only_ci
            .authenticate_remembered(&ops_token, &mut memo)
            .is_none());
        // Even a set parsed from the same text is another set.
        let again = tokens(&file(&ops)).unwrap();
        let _ = again
            .authenticate_remembered(&ops_token, &mut memo)
            .unwrap();
        assert!(only_ci
            .authenticate_remembered(&ops_token, &mut memo)
            .is_none());
    }

    #[test]
    fn remembered_tokens_compare_whole() {
        assert!(bytes_equal(b"abc", "abc"));
        assert!(!bytes_equal(b"abc", "abd"));
        assert!(!bytes_equal(b"abc", "ab"));
        assert!(!bytes_equal(b"abc", "abcd"));
        assert!(bytes_equal(b"", ""));
    }

    #[test]
    fn tokens_errors_name_entry_and_key_and_never_the_token() {
        let entry = |extra: &str| {
            format!(
                "[[tokens]]\nname = \"a\"\ntoken = \"{SECRET}\"\nscopes = [\"plugin:inspect\"]\n{extra}"
            )
        };
        let cases = [
            (entry("[[tokens]]\nname = \"b\"\ntoken = \"\"\nscopes = [\"plugin:inspect\"]\n"), "tokens[1].token: empty"),
            (entry("[[tokens]]\nname = \"b\"\ntoken = \"short-secret\"\nscopes = [\"plugin:inspect\"]\n"), "tokens[1].token: shorter than 16 bytes"),
            (entry("[[tokens]]\nname = \"b\"\ntoken = \"has a space in it!!\"\nscopes = [\"plugin:inspect\"]\n"), "tokens[1].token: must be printable"),
            (entry("colour = \"red\"\n"), "tokens[0]: has a key other than"),
            (entry("[[tokens]]\nname = \"b\"\ntoken = \"{SECRET}x\"\nscopes = [\"plugin:admin\"]\n".replace("{SECRET}", SECRET).as_str()), "tokens[1].scopes[0]: not a known scope"),
            (entry("[[tokens]]\nname = \"b\"\ntoken = \"{SECRET}\"\nscopes = [\"plugin:invoke\"]\n".replace("{SECRET}", SECRET).as_str()), "tokens[1].token: duplicates the token of tokens[0]"),
            (entry("[[tokens]]\nname = \"a\"\ntoken = \"{SECRET}x\"\nscopes = [\"plugin:invoke\"]\n".replace("{SECRET}", SECRET).as_str()), "tokens[1].name: duplicates"),
            (entry("[[tokens]]\nname = \"b\"\ntoken = \"{SECRET}x\"\nscopes = []\n".replace("{SECRET}", SECRET).as_str()), "tokens[1].scopes: empty"),
            (entry("[[tokens]]\nname = \"b\"\nscopes = [\"plugin:invoke\"]\n"), "tokens[1].token: missing"),
            (entry("[[tokens]]\ntoken = 1234\nname = \"b\"\nscopes = [\"plugin:invoke\"]\n"), "tokens[1].token: must be a string"),
            (entry("other = 1\n").replace("[[tokens]]\n", "other = 1\n[[tokens]]\n").replace("other = 1\n\n", ""), "a top-level key other than `tokens`"),
            ("".to_string(), "no [[tokens]] entry"),
            (format!("[[tokens]]\nname = \"a\"\ntoken = \"{SECRET}\nscopes = []\n"), "not valid TOML (line 3, column 33): invalid basic string"),
            (format!("[[tokens]]\nname = \"a\"\ntoken = {SECRET}\n"), "(line 3, column 10): expected newline, `#`"),
            (format!("[[tokens]]\n{SECRET} = \"a\"\n{SECRET} = \"b\"\n"), "duplicate key `…` in table `tokens`"),
            (format!("[[tokens]]\ntoken = \"{SECRET}\"\ntoken = \"{SECRET}\"\n"), "duplicate key `token` in table `tokens`"),
        ];
        for (text, want) in cases {
            let err = tokens(&text).unwrap_err().to_string();
            assert!(err.contains(want), "{err:?} should contain {want:?}");
            assert!(!err.contains(SECRET), "{err:?} leaks the token");
            assert!(!err.contains("short-secret"), "{err:?} leaks the token");
        }
    }

    #[test]
    fn runner_tokens_bind_one_runner_id_and_are_not_user_tokens() {
        let runner = |name: &str, token: &str, id: &str| {
            format!(
                "[[runner_tokens]]\nname = \"{name}\"\ntoken = \"{token}\"\nrunner = \"{id}\"\n"
            )
        };
        let t = tokens(&format!(
            "{}{}",
            runner("a", &format!("{SECRET}-a"), "edge-1"),
            runner("b", &format!("{SECRET}-b"), "edge.2")
        ))
        .unwrap();
        assert!(t.is_empty(), "only runner tokens");
        assert_eq!(t.runner_ids().collect::<Vec<_>>(), ["edge-1", "edge.2"]);
        assert_eq!(
            t.authenticate_runner(&format!("{SECRET}-a")),
            Some(("a", "edge-1"))
        );
        assert!(t.authenticate(&format!("{SECRET}-a")).is_none());
        assert!(t.authenticate_runner("nope-nope-nope-nope").is_none());
        assert_eq!(
            t.runner_max_in_flight("edge-1"),
            Some(DEFAULT_RUNNER_IN_FLIGHT)
        );
        assert_eq!(t.runner_max_in_flight("edge-9"), None);
        let capped = tokens(&format!(
            "{}max_in_flight = 4\n",
            runner("a", &format!("{SECRET}-a"), "edge-1")
        ))
        .unwrap();
        assert_eq!(capped.runner_max_in_flight("edge-1"), Some(4));
        let user = format!(
            "[[tokens]]\nname = \"u\"\ntoken = \"{SECRET}\"\nscopes = [\"plugin:inspect\"]\n"
        );
        let cases = [
            (runner("a", &format!("{SECRET}-a"), "local"), "runner_tokens[0].runner: `local`"),
            (runner("a", &format!("{SECRET}-a"), "Edge"), "runner_tokens[0].runner: must be"),
            (runner("a", "short", "edge"), "runner_tokens[0].token: shorter"),
            (
                format!("{}{}", runner("a", &format!("{SECRET}-a"), "e"), runner("b", &format!("{SECRET}-b"), "e")),
                "runner_tokens[1].runner: duplicates",
            ),
            (format!("{user}{}", runner("a", SECRET, "e")), "runner_tokens[0].token: duplicates the token of tokens[0]"),
            (
                format!("[[runner_tokens]]\nname = \"a\"\ntoken = \"{SECRET}\"\nrunner = \"e\"\nscopes = []\n"),
                "runner_tokens[0]: has a key other than",
            ),
            ("runner_tokens = 1\n".to_string(), "`runner_tokens` must be an array"),
            (
                format!("{}max_in_flight = 0\n", runner("a", &format!("{SECRET}-a"), "e")),
                "runner_tokens[0].max_in_flight: must be a whole number from 1 to 64",
            ),
            (
                format!("{}max_in_flight = 65\n", runner("a", &format!("{SECRET}-a"), "e")),
                "runner_tokens[0].max_in_flight: must be",
            ),
            (
                format!("{}max_in_flight = \"8\"\n", runner("a", &format!("{SECRET}-a"), "e")),
                "runner_tokens[0].max_in_flight: must be",
            ),
        ];
        for (text, want) in cases {
            let err = tokens(&text).unwrap_err().to_string();
            assert!(err.contains(want), "{err:?} should contain {want:?}");
            assert!(!err.contains(SECRET), "{err:?} leaks the token");
        }
    }

    #[test]
    fn names_are_kept_with_control_characters_escaped() {
        let t = tokens(&format!(
            "[[tokens]]\nname = \"ci\\u001b[31m\\nX\\\\\"\ntoken = \"{SECRET}\"\nscopes = [\"plugin:inspect\"]\n"
        ))
        .unwrap();
        let (name, _) = t.authenticate(SECRET).unwrap();
        assert_eq!(name, "ci\\u{1b}[31m\\u{a}X\\\\");
        assert!(!name.chars().any(char::is_control));
    }

    #[test]
    fn bearer_header_parsing() {
        assert_eq!(bearer("Bearer abc"), Some("abc"));
        assert_eq!(bearer("bearer   abc "), Some("abc"));
        assert_eq!(bearer("Basic abc"), None);
        assert_eq!(bearer("Bearer"), None);
        assert_eq!(bearer("Bearer a b"), None);
    }
}
