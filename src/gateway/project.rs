//! The gateway's side of project-bound tools (docs/PROTOCOL.md, project-bound tools): the
//! scopes they need and the checks a call of a project-bound binding passes before anything is
//! sent. The root itself is re-resolved by the runner's host (`host::ProjectTarget::check`).
//!
//! - `describe` with `project` needs `project:read` besides `plugin:inspect` (checked with the
//!   action's own scope, before anything is looked up);
//! - a `call` of a project-bound binding needs `project:write` besides `plugin:invoke`
//!   (checked once the binding is known to be bound: a caller without it learns nothing more);
//! - a `call` that names a `project_target` must go through a binding bound to exactly that
//!   target (`plugin_project_mismatch` otherwise): a front sends the target its runner gave, so
//!   the runner decides with what the front saw.
//!
//! A binding without a project and a call without `project_target` never reach this module.

use super::scope::{Caller, Scope};
use crate::error::{Error, ErrorCode};
use crate::host::ProjectTarget;

/// `insufficient_scope` with `message`.
#[cold]
pub(super) fn insufficient(message: &str) -> Error {
    Error::not_started(ErrorCode::InsufficientScope, message)
}

/// The checks of a call through a binding bound to `bound` (its project target id, `None` for
/// a binding without a project) that asked for `asked` (its `project_target`): the caller's
/// `project:write`, and the target asked being the one bound.
#[cold]
pub(super) fn gate(caller: &Caller, bound: Option<&str>, asked: Option<&str>) -> Result<(), Error> {
    let Some(bound) = bound else {
        return Err(Error::not_started(
            ErrorCode::ProjectMismatch,
            "the binding is not bound to a project, and the call names a project target; \
             describe the tool with its project",
        ));
    };
    if !caller.has(Scope::ProjectWrite) {
        return Err(insufficient(
            "a call of a project-bound binding needs scope project:write (besides \
             plugin:invoke)",
        ));
    }
    if asked.is_some_and(|asked| asked != bound) {
        return Err(Error::not_started(
            ErrorCode::ProjectMismatch,
            "the binding is bound to another project target than the call names; describe the \
             tool with its project again",
        ));
    }
    Ok(())
}

/// [`gate`] for a binding of a runner in this process, then the project root re-resolved:
/// nothing reaches the plugin unless the root is the directory it was started in.
#[cold]
pub(super) fn check_local(
    caller: &Caller,
    bound: Option<&ProjectTarget>,
    asked: Option<&str>,
) -> Result<(), Error> {
    gate(caller, bound.map(ProjectTarget::id), asked)?;
    bound.map_or(Ok(()), ProjectTarget::check)
}

/// The failure of a request with a project that runner `id` cannot serve: it does not know
/// project-bound tools (an earlier version), so nothing was bound or called.
#[cold]
pub(super) fn not_supported(id: &str) -> Error {
    log::warn!(
        "runner `{id}` does not support project-bound tools (it refused or ignored the project \
         of a request); update it"
    );
    Error::not_started(
        ErrorCode::ProjectUnavailable,
        format!(
            "runner `{id}` does not support project-bound tools (it runs an earlier version); \
             nothing was bound or called: describe without a project, or update the runner"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Dispatch;
    use crate::gateway::Scopes;

    const TARGET: &str = "wc_proot_00112233445566778899aabbccddeeff";

    fn code(result: Result<(), Error>) -> Option<ErrorCode> {
        result.err().map(|e| {
            assert_eq!(e.dispatch(), Dispatch::NotStarted);
            e.code()
        })
    }

    #[test]
    fn a_bound_call_needs_project_write_and_the_target_bound() {
        let writer = Caller::new(Scopes::parse("plugin:invoke,project:write").unwrap());
        let invoker = Caller::new(Scopes::parse("plugin:invoke,project:read").unwrap());
        assert_eq!(code(gate(&writer, Some(TARGET), None)), None);
        assert_eq!(code(gate(&writer, Some(TARGET), Some(TARGET))), None);
        assert_eq!(
            code(gate(&invoker, Some(TARGET), None)),
            Some(ErrorCode::InsufficientScope)
        );
        let other = "wc_proot_ffffffffffffffffffffffffffffffff";
        assert_eq!(
            code(gate(&writer, Some(TARGET), Some(other))),
            Some(ErrorCode::ProjectMismatch)
        );
        // A target named for an unbound binding is refused, whatever the scopes.
        assert_eq!(
            code(gate(&invoker, None, Some(TARGET))),
            Some(ErrorCode::ProjectMismatch)
        );
    }

    #[test]
    fn scope_failures_name_the_scope() {
        let e = gate(&Caller::new(Scopes::none()), Some(TARGET), None).unwrap_err();
        assert!(e.message().contains("project:write"), "{}", e.message());
        let e = not_supported("edge-1");
        assert_eq!(e.code(), ErrorCode::ProjectUnavailable);
        assert!(e.message().contains("edge-1"), "{}", e.message());
    }
}
