//! Caller scopes: what a caller of `plugin_tool` may do.
//!
//! `plugin:inspect` covers list, describe and catalog; `plugin:invoke` covers call;
//! `plugin:manage` covers check and reload. A project-bound tool needs one more: `project:read`
//! to describe a tool with a `project`, `project:write` to call a binding bound to one. No scope
//! implies another (manage does not imply invoke, write does not imply read). A binding is not
//! a bearer token: every call re-checks the caller's scopes.

use std::fmt;

/// One permission of a `plugin_tool` caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Scope {
    /// `plugin:inspect`: list, describe, catalog.
    Inspect,
    /// `plugin:invoke`: call.
    Invoke,
    /// `plugin:manage`: check, reload.
    Manage,
    /// `project:read`: describe a tool bound to a project (with `plugin:inspect`).
    ProjectRead,
    /// `project:write`: call a project-bound binding (with `plugin:invoke`).
    ProjectWrite,
}

impl Scope {
    /// Every scope, in wire order.
    pub const ALL: [Scope; 5] = [
        Scope::Inspect,
        Scope::Invoke,
        Scope::Manage,
        Scope::ProjectRead,
        Scope::ProjectWrite,
    ];

    /// The wire name, e.g. `plugin:inspect`.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Inspect => "plugin:inspect",
            Scope::Invoke => "plugin:invoke",
            Scope::Manage => "plugin:manage",
            Scope::ProjectRead => "project:read",
            Scope::ProjectWrite => "project:write",
        }
    }

    /// Parses one wire name (exact, case-sensitive).
    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == name)
    }

    fn bit(self) -> u8 {
        match self {
            Scope::Inspect => 1,
            Scope::Invoke => 2,
            Scope::Manage => 4,
            Scope::ProjectRead => 8,
            Scope::ProjectWrite => 16,
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A set of scopes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Scopes(u8);

impl Scopes {
    /// No scope at all.
    pub const fn none() -> Scopes {
        Scopes(0)
    }

    /// Every scope (the default of the stdio gateway; docs/PROTOCOL.md §8.2, scopes).
    pub const fn all() -> Scopes {
        Scopes(31)
    }

    /// This set plus `scope`.
    pub fn with(self, scope: Scope) -> Scopes {
        Scopes(self.0 | scope.bit())
    }

    /// True when `scope` is in the set.
    pub fn contains(self, scope: Scope) -> bool {
        self.0 & scope.bit() != 0
    }

    /// Parses a comma-separated list such as `plugin:inspect,plugin:invoke`.
    ///
    /// Whitespace around names is ignored and duplicates are allowed; an empty string is the
    /// empty set. An unknown name or an empty item (`a,,b`) is an error naming the item.
    pub fn parse(list: &str) -> Result<Scopes, ScopeParseError> {
        let mut scopes = Scopes::none();
        if list.trim().is_empty() {
            return Ok(scopes);
        }
        for item in list.split(',') {
            let item = item.trim();
            match Scope::parse(item) {
                Some(scope) => scopes = scopes.with(scope),
                None => {
                    return Err(ScopeParseError {
                        item: item.to_string(),
                    })
                }
            }
        }
        Ok(scopes)
    }
}

impl FromIterator<Scope> for Scopes {
    fn from_iter<I: IntoIterator<Item = Scope>>(iter: I) -> Scopes {
        iter.into_iter().fold(Scopes::none(), Scopes::with)
    }
}

impl fmt::Display for Scopes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Scope::ALL
            .into_iter()
            .filter(|s| self.contains(*s))
            .map(Scope::as_str)
            .collect();
        f.write_str(&names.join(","))
    }
}

/// A scope list that names something other than the known scopes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeParseError {
    item: String,
}

impl fmt::Display for ScopeParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.item.is_empty() {
            write!(f, "empty scope in the list; use {}", Scopes::all())
        } else {
            write!(f, "unknown scope `{}`; use {}", self.item, Scopes::all())
        }
    }
}

impl std::error::Error for ScopeParseError {}

/// Who is calling `plugin_tool`: the scopes the transport granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    scopes: Scopes,
}

impl Caller {
    /// A caller holding exactly `scopes`.
    pub fn new(scopes: Scopes) -> Caller {
        Caller { scopes }
    }

    /// A caller holding every scope (the stdio gateway's default).
    pub fn trusted() -> Caller {
        Caller::new(Scopes::all())
    }

    /// The caller's scopes.
    pub fn scopes(&self) -> Scopes {
        self.scopes
    }

    /// True when the caller holds `scope`.
    pub fn has(&self, scope: Scope) -> bool {
        self.scopes.contains(scope)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_comma_separated_list() {
        let s = Scopes::parse("plugin:inspect,plugin:invoke").unwrap();
        assert!(s.contains(Scope::Inspect));
        assert!(s.contains(Scope::Invoke));
        assert!(!s.contains(Scope::Manage));
    }

    #[test]
    fn tolerates_spaces_and_duplicates() {
        let s = Scopes::parse(" plugin:manage , plugin:manage").unwrap();
        assert_eq!(s, Scopes::none().with(Scope::Manage));
    }

    #[test]
    fn empty_string_is_no_scope() {
        assert_eq!(Scopes::parse("").unwrap(), Scopes::none());
        assert_eq!(Scopes::parse("  ").unwrap(), Scopes::none());
    }

    #[test]
    fn rejects_unknown_and_empty_items() {
        let e = Scopes::parse("plugin:inspect,plugin:admin").unwrap_err();
        assert!(e.to_string().contains("plugin:admin"));
        assert!(Scopes::parse("plugin:inspect,,plugin:invoke").is_err());
        assert!(Scopes::parse("PLUGIN:INSPECT").is_err());
    }

    #[test]
    fn manage_does_not_imply_invoke() {
        let caller = Caller::new(Scopes::parse("plugin:manage").unwrap());
        assert!(caller.has(Scope::Manage));
        assert!(!caller.has(Scope::Invoke));
        assert!(!caller.has(Scope::Inspect));
    }

    #[test]
    fn project_scopes_parse_and_imply_nothing() {
        let s = Scopes::parse("project:read, project:write").unwrap();
        assert!(s.contains(Scope::ProjectRead) && s.contains(Scope::ProjectWrite));
        assert!(!s.contains(Scope::Inspect) && !s.contains(Scope::Invoke));
        let read = Scopes::parse("project:read").unwrap();
        assert!(!read.contains(Scope::ProjectWrite));
        let e = Scopes::parse("project:admin").unwrap_err().to_string();
        assert!(
            e.contains("project:read") && e.contains("project:write"),
            "{e}"
        );
    }

    #[test]
    fn all_holds_every_scope_and_displays_in_order() {
        let all = Scopes::all();
        assert!(Scope::ALL.iter().all(|s| all.contains(*s)));
        assert_eq!(
            all.to_string(),
            "plugin:inspect,plugin:invoke,plugin:manage,project:read,project:write"
        );
        assert_eq!(Scope::ALL.into_iter().collect::<Scopes>(), all);
    }
}
