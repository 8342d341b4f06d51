//! Strict, action-aware parsing of `plugin_tool` parameters (docs/PROTOCOL.md §8.1, parameters).
//!
//! Every action has a fixed set of fields; any other field, a wrong type or a missing required
//! field is `invalid_arguments`, with a message that names the field and the action. Parsing
//! looks only at the shape of the parameters: whether a runner, plugin or binding exists is
//! decided later, after the scope check.

use serde_json::Value;

use super::scope::Scope;
use crate::error::{Error, ErrorCode};

/// Longest `recording_session_id`, in bytes.
pub const MAX_RECORDING_SESSION_ID_BYTES: usize = 256;
/// Longest `project` of a `describe`, in bytes.
pub const MAX_PROJECT_BYTES: usize = 4096;
/// Longest field name echoed back in an `invalid_arguments` message.
const MAX_ECHOED_FIELD_BYTES: usize = 64;
/// The most fields an action accepts besides `action`.
const MAX_FIELDS: usize = 4;

/// The six actions of `plugin_tool`, without their parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ActionKind {
    /// `list`: runners, providers or one provider's tools.
    List,
    /// `describe`: one tool's full definition and a fresh binding.
    Describe,
    /// `call`: call the tool a binding points at.
    Call,
    /// `check`: admit a disposable candidate of one provider.
    Check,
    /// `reload`: restart every provider of a runner.
    Reload,
    /// `catalog`: the project catalog of one project root (an addition to the contract's actions).
    Catalog,
}

impl ActionKind {
    /// Every action, in documentation order.
    pub const ALL: [ActionKind; 6] = [
        ActionKind::List,
        ActionKind::Describe,
        ActionKind::Call,
        ActionKind::Check,
        ActionKind::Reload,
        ActionKind::Catalog,
    ];

    /// The wire name, e.g. `describe`.
    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::List => "list",
            ActionKind::Describe => "describe",
            ActionKind::Call => "call",
            ActionKind::Check => "check",
            ActionKind::Reload => "reload",
            ActionKind::Catalog => "catalog",
        }
    }

    /// The scope the action needs.
    pub fn scope(self) -> Scope {
        match self {
            ActionKind::List | ActionKind::Describe | ActionKind::Catalog => Scope::Inspect,
            ActionKind::Call => Scope::Invoke,
            ActionKind::Check | ActionKind::Reload => Scope::Manage,
        }
    }

    /// The fields this action accepts besides `action`.
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            ActionKind::List => &["runner", "plugin"],
            ActionKind::Describe => &["runner", "plugin", "tool", "project"],
            ActionKind::Call => &[
                "binding",
                "arguments",
                "recording_session_id",
                "project_target",
            ],
            ActionKind::Check => &["runner", "plugin", "recording_session_id"],
            ActionKind::Reload => &["runner", "recording_session_id"],
            ActionKind::Catalog => &["runner", "project"],
        }
    }

    /// The place of field `name` in [`ActionKind::fields`], if the action accepts it (one
    /// `match` on the name: no search through the list).
    #[inline(always)]
    fn slot(self, name: &str) -> Option<usize> {
        use ActionKind::*;
        Some(match (name, self) {
            ("runner", List | Describe | Check | Reload | Catalog) => 0,
            ("plugin", List | Describe | Check) => 1,
            ("tool", Describe) => 2,
            ("binding", Call) => 0,
            ("arguments", Call) => 1,
            ("recording_session_id", Call | Check) => 2,
            ("recording_session_id", Reload) => 1,
            ("project", Catalog) => 1,
            ("project", Describe) => 3,
            ("project_target", Call) => 3,
            _ => return None,
        })
    }

    fn parse(name: &str) -> Option<ActionKind> {
        Some(match name {
            "list" => ActionKind::List,
            "describe" => ActionKind::Describe,
            "call" => ActionKind::Call,
            "check" => ActionKind::Check,
            "reload" => ActionKind::Reload,
            "catalog" => ActionKind::Catalog,
            _ => return None,
        })
    }
}

/// A `plugin_tool` request, typed: what [`Action::parse`] makes of the JSON parameters, and
/// what [`Gateway::act_on`](super::Gateway::act_on) takes from a program that builds its
/// requests itself (the gateway acts on a borrowed form of either, copying nothing).
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// `list`: no runner → the runners; a runner → its providers; runner + plugin → its tools.
    List {
        /// The runner to list.
        runner: Option<String>,
        /// The provider to list (requires `runner`).
        plugin: Option<String>,
    },
    /// `describe` one tool.
    Describe {
        /// The runner.
        runner: String,
        /// The provider id.
        plugin: String,
        /// The tool name.
        tool: String,
        /// The project the binding is bound to (an absolute path), when given.
        project: Option<String>,
    },
    /// `call` the tool a binding points at.
    Call {
        /// The binding as sent (validated when it is resolved: a malformed one is
        /// `describe_required`, not `invalid_arguments`).
        binding: String,
        /// The tool arguments (always a JSON object).
        arguments: Value,
        /// Passed to the recording hook when present.
        recording_session_id: Option<String>,
        /// The project target the binding must be bound to, when given (a front sends the
        /// one its runner described).
        project_target: Option<String>,
    },
    /// `check` one provider.
    Check {
        /// The runner.
        runner: String,
        /// The provider id.
        plugin: String,
        /// Passed to the recording hook when present.
        recording_session_id: Option<String>,
    },
    /// `reload` a runner.
    Reload {
        /// The runner.
        runner: String,
        /// Passed to the recording hook when present.
        recording_session_id: Option<String>,
    },
    /// `catalog`: the tools of the providers working in one project root.
    Catalog {
        /// The runner.
        runner: String,
        /// The absolute project root.
        project: String,
    },
}

impl Action {
    /// Parses `plugin_tool` parameters strictly; every failure is `invalid_arguments`.
    pub fn parse(params: &Value) -> Result<Action, Error> {
        ActionRef::parse(params).map(ActionRef::into_action)
    }

    /// The borrowed form the gateway acts on, after the checks [`Action::parse`] makes on
    /// the same values (a typed request and its JSON form are refused alike).
    pub(crate) fn checked(&self) -> Result<ActionRef<'_>, Error> {
        fn text(s: &Option<String>) -> Option<&str> {
            s.as_deref()
        }
        let kind = self.kind();
        Ok(match self {
            Action::List { runner, plugin } => {
                check_list(text(runner), text(plugin))?;
                ActionRef::List {
                    runner: text(runner),
                    plugin: text(plugin),
                }
            }
            Action::Describe {
                runner,
                plugin,
                tool,
                project,
            } => {
                check_project(kind, text(project))?;
                ActionRef::Describe {
                    runner,
                    plugin,
                    tool,
                    project: text(project),
                }
            }
            Action::Call {
                binding,
                arguments,
                recording_session_id,
                project_target,
            } => {
                if !arguments.is_object() {
                    return Err(invalid(
                        "field `arguments` must be a JSON object for action `call`".to_string(),
                    ));
                }
                check_session_id(kind, text(recording_session_id))?;
                check_project_target(kind, text(project_target))?;
                ActionRef::Call {
                    binding,
                    arguments,
                    recording_session_id: text(recording_session_id),
                    project_target: text(project_target),
                }
            }
            Action::Check {
                runner,
                plugin,
                recording_session_id,
            } => {
                check_session_id(kind, text(recording_session_id))?;
                ActionRef::Check {
                    runner,
                    plugin,
                    recording_session_id: text(recording_session_id),
                }
            }
            Action::Reload {
                runner,
                recording_session_id,
            } => {
                check_session_id(kind, text(recording_session_id))?;
                ActionRef::Reload {
                    runner,
                    recording_session_id: text(recording_session_id),
                }
            }
            Action::Catalog { runner, project } => ActionRef::Catalog { runner, project },
        })
    }

    /// The action without its parameters.
    pub fn kind(&self) -> ActionKind {
        match self {
            Action::List { .. } => ActionKind::List,
            Action::Describe { .. } => ActionKind::Describe,
            Action::Call { .. } => ActionKind::Call,
            Action::Check { .. } => ActionKind::Check,
            Action::Reload { .. } => ActionKind::Reload,
            Action::Catalog { .. } => ActionKind::Catalog,
        }
    }

    /// The explicit `recording_session_id`, if the action carries one.
    pub fn recording_session_id(&self) -> Option<&str> {
        match self {
            Action::Call {
                recording_session_id,
                ..
            }
            | Action::Check {
                recording_session_id,
                ..
            }
            | Action::Reload {
                recording_session_id,
                ..
            } => recording_session_id.as_deref(),
            _ => None,
        }
    }
}

/// Parsed `plugin_tool` parameters, borrowing from the parameters they were parsed from: what the
/// gateway acts on, so that a request copies neither its strings nor its call arguments.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum ActionRef<'a> {
    List {
        runner: Option<&'a str>,
        plugin: Option<&'a str>,
    },
    Describe {
        runner: &'a str,
        plugin: &'a str,
        tool: &'a str,
        project: Option<&'a str>,
    },
    Call {
        binding: &'a str,
        /// Always a JSON object.
        arguments: &'a Value,
        recording_session_id: Option<&'a str>,
        project_target: Option<&'a str>,
    },
    Check {
        runner: &'a str,
        plugin: &'a str,
        recording_session_id: Option<&'a str>,
    },
    Reload {
        runner: &'a str,
        recording_session_id: Option<&'a str>,
    },
    Catalog {
        runner: &'a str,
        project: &'a str,
    },
}

impl<'a> ActionRef<'a> {
    /// Parses `plugin_tool` parameters strictly, exactly like [`Action::parse`].
    #[inline]
    pub(crate) fn parse(params: &'a Value) -> Result<ActionRef<'a>, Error> {
        let map = params
            .as_object()
            .ok_or_else(|| invalid("the parameters must be a JSON object".to_string()))?;
        // One pass over the parameters: `action`, and the others in key order (at most
        // MAX_FIELDS of them; with more, one is surely not allowed and a second pass finds it).
        let (mut action, mut others, mut count) = (None, [None; MAX_FIELDS], 0);
        for (key, value) in map {
            if key == "action" {
                action = Some(value);
            } else if count < MAX_FIELDS {
                others[count] = Some((key, value));
                count += 1;
            } else {
                count += 1;
            }
        }
        let kind = match action {
            None => return Err(invalid("field `action` is required".to_string())),
            Some(Value::String(name)) => ActionKind::parse(name).ok_or_else(|| {
                invalid(
                    "unknown action; use list, describe, call, check, reload or catalog"
                        .to_string(),
                )
            })?,
            Some(_) => return Err(invalid("field `action` must be a string".to_string())),
        };
        // The first field (in key order) that the action does not accept is the error; the
        // others are kept by their place in `kind.fields()`.
        let not_allowed = |key: &str| {
            invalid(format!(
                "field `{}` is not allowed for action `{}`",
                echo(key),
                kind.as_str()
            ))
        };
        let mut values = [None; MAX_FIELDS];
        if count > MAX_FIELDS {
            let key = map
                .keys()
                .find(|key| *key != "action" && kind.slot(key).is_none());
            return Err(not_allowed(
                key.expect("more fields than any action accepts"),
            ));
        }
        for &(key, value) in others[..count].iter().flatten() {
            match kind.slot(key) {
                Some(slot) => values[slot] = Some(value),
                None => return Err(not_allowed(key)),
            }
        }
        let fields = Fields { values, kind };
        // The slots are the places in `ActionKind::fields` (`ActionKind::slot`).
        Ok(match kind {
            ActionKind::List => {
                let runner = fields.optional_string(0)?;
                let plugin = fields.optional_string(1)?;
                check_list(runner, plugin)?;
                ActionRef::List { runner, plugin }
            }
            ActionKind::Describe => ActionRef::Describe {
                runner: fields.string(0)?,
                plugin: fields.string(1)?,
                tool: fields.string(2)?,
                project: fields.project(3)?,
            },
            ActionKind::Call => ActionRef::Call {
                binding: fields.string(0)?,
                arguments: fields.object(1)?,
                recording_session_id: fields.session_id(2)?,
                // Most calls name no target: only one that does leaves the hot path.
                project_target: match fields.values[3] {
                    None => None,
                    Some(_) => fields.project_target(3)?,
                },
            },
            ActionKind::Check => ActionRef::Check {
                runner: fields.string(0)?,
                plugin: fields.string(1)?,
                recording_session_id: fields.session_id(2)?,
            },
            ActionKind::Reload => ActionRef::Reload {
                runner: fields.string(0)?,
                recording_session_id: fields.session_id(1)?,
            },
            ActionKind::Catalog => ActionRef::Catalog {
                runner: fields.string(0)?,
                project: fields.string(1)?,
            },
        })
    }

    /// The owned [`Action`].
    pub(crate) fn into_action(self) -> Action {
        let owned = |s: Option<&str>| s.map(str::to_string);
        match self {
            ActionRef::List { runner, plugin } => Action::List {
                runner: owned(runner),
                plugin: owned(plugin),
            },
            ActionRef::Describe {
                runner,
                plugin,
                tool,
                project,
            } => Action::Describe {
                runner: runner.to_string(),
                plugin: plugin.to_string(),
                tool: tool.to_string(),
                project: owned(project),
            },
            ActionRef::Call {
                binding,
                arguments,
                recording_session_id,
                project_target,
            } => Action::Call {
                binding: binding.to_string(),
                arguments: arguments.clone(),
                recording_session_id: owned(recording_session_id),
                project_target: owned(project_target),
            },
            ActionRef::Check {
                runner,
                plugin,
                recording_session_id,
            } => Action::Check {
                runner: runner.to_string(),
                plugin: plugin.to_string(),
                recording_session_id: owned(recording_session_id),
            },
            ActionRef::Reload {
                runner,
                recording_session_id,
            } => Action::Reload {
                runner: runner.to_string(),
                recording_session_id: owned(recording_session_id),
            },
            ActionRef::Catalog { runner, project } => Action::Catalog {
                runner: runner.to_string(),
                project: project.to_string(),
            },
        }
    }

    /// The action without its parameters.
    pub(crate) fn kind(self) -> ActionKind {
        match self {
            ActionRef::List { .. } => ActionKind::List,
            ActionRef::Describe { .. } => ActionKind::Describe,
            ActionRef::Call { .. } => ActionKind::Call,
            ActionRef::Check { .. } => ActionKind::Check,
            ActionRef::Reload { .. } => ActionKind::Reload,
            ActionRef::Catalog { .. } => ActionKind::Catalog,
        }
    }

    /// The explicit `recording_session_id`, if the action carries one.
    pub(crate) fn recording_session_id(self) -> Option<&'a str> {
        match self {
            ActionRef::Call {
                recording_session_id,
                ..
            }
            | ActionRef::Check {
                recording_session_id,
                ..
            }
            | ActionRef::Reload {
                recording_session_id,
                ..
            } => recording_session_id,
            _ => None,
        }
    }
}

/// `list` names a plugin only within a runner.
fn check_list(runner: Option<&str>, plugin: Option<&str>) -> Result<(), Error> {
    if plugin.is_some() && runner.is_none() {
        return Err(invalid(
            "field `plugin` needs field `runner` for action `list`".to_string(),
        ));
    }
    Ok(())
}

/// A `recording_session_id`: 1..=[`MAX_RECORDING_SESSION_ID_BYTES`] bytes without control
/// characters.
fn check_session_id(kind: ActionKind, id: Option<&str>) -> Result<(), Error> {
    match id {
        Some(id)
            if id.is_empty()
                || id.len() > MAX_RECORDING_SESSION_ID_BYTES
                || id.chars().any(char::is_control) =>
        {
            Err(invalid(format!(
                "field `recording_session_id` must be 1..={MAX_RECORDING_SESSION_ID_BYTES} \
                 bytes without control characters for action `{}`",
                kind.as_str()
            )))
        }
        _ => Ok(()),
    }
}

/// The `project` of a `describe`: an absolute path (of any platform: the runner that serves it
/// decides what it names), 1..=[`MAX_PROJECT_BYTES`] bytes without control characters.
#[cold]
fn check_project(kind: ActionKind, project: Option<&str>) -> Result<(), Error> {
    match project {
        Some(project)
            if project.len() > MAX_PROJECT_BYTES
                || project.chars().any(char::is_control)
                || !absolute_on_some_platform(project) =>
        {
            Err(invalid(format!(
                "field `project` must be an absolute path (at most {MAX_PROJECT_BYTES} \
                 bytes, no control characters) for action `{}`",
                kind.as_str()
            )))
        }
        _ => Ok(()),
    }
}

/// The `project_target` of a `call`: a project target id.
#[cold]
fn check_project_target(kind: ActionKind, target: Option<&str>) -> Result<(), Error> {
    if target.is_some_and(|t| !crate::host::valid_project_target(t)) {
        return Err(invalid(format!(
            "field `project_target` must be the projectTarget a describe returned \
             (wc_proot_ and 32 hex digits) for action `{}`",
            kind.as_str()
        )));
    }
    Ok(())
}

/// The fields of one action, each at its place in [`ActionKind::fields`].
struct Fields<'a> {
    values: [Option<&'a Value>; MAX_FIELDS],
    kind: ActionKind,
}

impl<'a> Fields<'a> {
    /// The name of the field at `slot`.
    fn name(&self, slot: usize) -> &'static str {
        self.kind.fields()[slot]
    }

    #[inline(always)]
    fn optional_string(&self, slot: usize) -> Result<Option<&'a str>, Error> {
        match self.values[slot] {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.wrong_type(slot, "a string")),
        }
    }

    #[inline(always)]
    fn string(&self, slot: usize) -> Result<&'a str, Error> {
        self.optional_string(slot)?
            .ok_or_else(|| self.missing(slot))
    }

    #[inline(always)]
    fn object(&self, slot: usize) -> Result<&'a Value, Error> {
        match self.values[slot] {
            None => Err(self.missing(slot)),
            Some(v @ Value::Object(_)) => Ok(v),
            Some(_) => Err(self.wrong_type(slot, "a JSON object")),
        }
    }

    /// The `recording_session_id` at `slot`.
    #[inline(always)]
    fn session_id(&self, slot: usize) -> Result<Option<&'a str>, Error> {
        debug_assert_eq!(self.name(slot), "recording_session_id");
        let id = self.optional_string(slot)?;
        check_session_id(self.kind, id)?;
        Ok(id)
    }

    /// The `project` of a `describe` at `slot`: an absolute path (of any platform: the runner
    /// that serves it decides what it names), 1..=[`MAX_PROJECT_BYTES`] bytes without control
    /// characters.
    #[cold]
    fn project(&self, slot: usize) -> Result<Option<&'a str>, Error> {
        debug_assert_eq!(self.name(slot), "project");
        let project = self.optional_string(slot)?;
        check_project(self.kind, project)?;
        Ok(project)
    }

    /// The `project_target` of a `call` at `slot`: a project target id.
    #[cold]
    fn project_target(&self, slot: usize) -> Result<Option<&'a str>, Error> {
        debug_assert_eq!(self.name(slot), "project_target");
        let target = self.optional_string(slot)?;
        check_project_target(self.kind, target)?;
        Ok(target)
    }

    #[cold]
    fn missing(&self, slot: usize) -> Error {
        invalid(format!(
            "field `{}` is required for action `{}`",
            self.name(slot),
            self.kind.as_str()
        ))
    }

    #[cold]
    fn wrong_type(&self, slot: usize, expected: &str) -> Error {
        invalid(format!(
            "field `{}` must be {expected} for action `{}`",
            self.name(slot),
            self.kind.as_str()
        ))
    }
}

/// True for a path that is absolute on Unix (`/…`) or on Windows (`C:\…`, `C:/…`, `\\server\…`):
/// the parser cannot know the runner's platform, so it refuses only what is relative on all.
fn absolute_on_some_platform(path: &str) -> bool {
    let bytes = path.as_bytes();
    match bytes {
        [b'/', ..] | [b'\\', b'\\', ..] => true,
        [drive, b':', b'\\' | b'/', ..] => drive.is_ascii_alphabetic(),
        _ => false,
    }
}

fn invalid(message: String) -> Error {
    Error::not_started(ErrorCode::InvalidArguments, message)
}

/// A caller-supplied field name made safe to echo: control characters replaced, length cut.
fn echo(field: &str) -> String {
    let mut out = String::new();
    for c in field.chars() {
        if out.len() + c.len_utf8() > MAX_ECHOED_FIELD_BYTES {
            out.push('…');
            break;
        }
        out.push(if c.is_control() { '?' } else { c });
    }
    out
}

#[cfg(test)]
mod tests;
