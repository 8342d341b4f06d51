//! Provider ids (`^[a-z0-9_.-]{1,64}$`, docs/PROTOCOL.md §3, bounds) and the package names derived
//! from them.

use std::path::Path;

use super::ScaffoldError;

/// Longest provider id, in bytes (every allowed character is one byte).
pub const MAX_ID_LEN: usize = 64;

/// What a provider id may contain, for error messages.
pub(crate) const ID_RULE: &str = "1 to 64 characters from a-z, 0-9, '_', '.' and '-'";

/// True when `id` matches `^[a-z0-9_.-]{1,64}$`.
pub fn is_valid_id(id: &str) -> bool {
    (1..=MAX_ID_LEN).contains(&id.len()) && id.bytes().all(is_id_byte)
}

fn is_id_byte(b: u8) -> bool {
    matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-')
}

/// Checks an id given explicitly (`--id`); the error names what is allowed.
pub fn validate_id(id: &str) -> Result<(), ScaffoldError> {
    if is_valid_id(id) {
        Ok(())
    } else {
        Err(ScaffoldError::InvalidId { id: id.to_owned() })
    }
}

/// The id derived from a directory name: lowercased, every character outside `[a-z0-9_.-]`
/// replaced by `-`, cut to 64 characters. `None` when nothing usable is left.
pub fn id_from_name(name: &str) -> Option<String> {
    let id: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii() && is_id_byte(c as u8) {
                c
            } else {
                '-'
            }
        })
        .take(MAX_ID_LEN)
        .collect();
    is_valid_id(&id).then_some(id)
}

/// The id derived from the last component of `dir` (see [`id_from_name`]).
///
/// A path without a final name (`.`, `..`, `/`) is resolved first when it exists. Fails with
/// [`ScaffoldError::CannotDeriveId`], which tells the user to pass `--id`.
pub fn derive_id(dir: &Path) -> Result<String, ScaffoldError> {
    let name = match dir.file_name() {
        Some(name) => Some(name.to_os_string()),
        None => std::fs::canonicalize(dir)
            .ok()
            .and_then(|path| path.file_name().map(|n| n.to_os_string())),
    };
    let name = name.map(|n| n.to_string_lossy().into_owned());
    name.as_deref()
        .and_then(id_from_name)
        .ok_or_else(|| ScaffoldError::CannotDeriveId {
            dir: dir.to_path_buf(),
        })
}

/// An npm package name for `id`: npm refuses names starting with `.` or `_` and a few
/// reserved names, so those get a `plugin-` prefix.
pub(crate) fn npm_package_name(id: &str) -> String {
    if id.starts_with(['.', '_']) || matches!(id, "node_modules" | "favicon.ico") {
        format!("plugin-{id}")
    } else {
        id.to_owned()
    }
}

/// Names Cargo refuses for a package or binary target: Rust keywords, built-in crates,
/// Cargo's own build directories and Windows device names.
const CARGO_RESERVED: &[&str] = &[
    "abstract",
    "alloc",
    "as",
    "async",
    "await",
    "become",
    "box",
    "break",
    "build",
    "const",
    "continue",
    "core",
    "crate",
    "deps",
    "do",
    "dyn",
    "else",
    "enum",
    "examples",
    "extern",
    "false",
    "final",
    "fn",
    "for",
    "gen",
    "if",
    "impl",
    "in",
    "incremental",
    "let",
    "loop",
    "macro",
    "match",
    "mod",
    "move",
    "mut",
    "override",
    "priv",
    "proc_macro",
    "pub",
    "ref",
    "return",
    "self",
    "static",
    "std",
    "struct",
    "super",
    "test",
    "trait",
    "true",
    "try",
    "type",
    "typeof",
    "unsafe",
    "unsized",
    "use",
    "virtual",
    "where",
    "while",
    "yield",
    "con",
    "prn",
    "aux",
    "nul",
    "com1",
    "com2",
    "com3",
    "com4",
    "com5",
    "com6",
    "com7",
    "com8",
    "com9",
    "lpt1",
    "lpt2",
    "lpt3",
    "lpt4",
    "lpt5",
    "lpt6",
    "lpt7",
    "lpt8",
    "lpt9",
];

/// A Cargo package (and binary) name for `id`: `.` becomes `-`; a name that does not start
/// with a letter gets a `plugin-` prefix, a reserved one a `-plugin` suffix.
pub(crate) fn crate_name(id: &str) -> String {
    let name = id.replace('.', "-");
    let name = if name.starts_with(|c: char| c.is_ascii_lowercase()) {
        name
    } else {
        format!("plugin-{name}")
    };
    if CARGO_RESERVED.contains(&name.as_str()) {
        format!("{name}-plugin")
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_ids_match_the_rule() {
        for id in ["a", "repo-tools", "my_plugin.v2", "0", &"x".repeat(64)] {
            assert!(is_valid_id(id), "{id}");
        }
        for id in ["", "Repo", "a b", "a/b", "é", "a\"b", &"x".repeat(65)] {
            assert!(!is_valid_id(id), "{id}");
        }
    }

    #[test]
    fn derived_id_is_lowercased_replaced_and_cut() {
        assert_eq!(id_from_name("My Plugin").as_deref(), Some("my-plugin"));
        assert_eq!(
            id_from_name("repo_tools.v2").as_deref(),
            Some("repo_tools.v2")
        );
        assert_eq!(id_from_name("a\"b\\c d").as_deref(), Some("a-b-c-d"));
        assert_eq!(id_from_name("Čaj").as_deref(), Some("-aj"));
        let long = id_from_name(&"Ab".repeat(50)).unwrap();
        assert_eq!(long.len(), 64);
        assert_eq!(long, "ab".repeat(32));
        assert_eq!(id_from_name(""), None);
    }

    #[test]
    fn derive_id_uses_the_last_path_component() {
        assert_eq!(
            derive_id(Path::new("/some/where/Hello World")).unwrap(),
            "hello-world"
        );
        assert_eq!(derive_id(Path::new("rel/x.Y")).unwrap(), "x.y");
    }

    #[test]
    fn derive_id_without_a_name_asks_for_an_explicit_id() {
        let err = derive_id(Path::new("/")).unwrap_err();
        assert!(matches!(err, ScaffoldError::CannotDeriveId { .. }));
        assert!(err.to_string().contains("--id"), "{err}");
    }

    #[test]
    fn explicit_id_is_validated_and_the_error_names_the_rule() {
        assert!(validate_id("ok-id").is_ok());
        let err = validate_id("Bad Id").unwrap_err();
        assert!(matches!(err, ScaffoldError::InvalidId { .. }));
        let text = err.to_string();
        assert!(
            text.contains("Bad Id") && text.contains("a-z, 0-9"),
            "{text}"
        );
    }

    #[test]
    fn package_names_are_acceptable_to_npm_and_cargo() {
        assert_eq!(npm_package_name("echo"), "echo");
        assert_eq!(npm_package_name("_x"), "plugin-_x");
        assert_eq!(npm_package_name(".x"), "plugin-.x");
        assert_eq!(crate_name("my.plugin"), "my-plugin");
        assert_eq!(crate_name("1st"), "plugin-1st");
        assert_eq!(crate_name("_x"), "plugin-_x");
        assert_eq!(crate_name("test"), "test-plugin");
        assert_eq!(crate_name("self"), "self-plugin");
    }
}
