//! The remote half of the gateway: forwarding to another machine's `serve` or a linked runner.
//!
//! A project-bound `describe` travels with its `project`; the runner decides (it canonicalizes
//! and checks the root, pins nothing of the front's) and answers with `project` echoed and its
//! `projectTarget`. A call of such a binding travels with that target as `project_target`,
//! and the runner re-resolves the root before its plugin reads anything. A runner that does
//! not know project-bound tools is refused, never used unbound: its strict parameters refuse
//! `project` (`invalid_arguments`, which a runner that knows them never answers to parameters
//! this front checked itself), or its answer lacks the echo; the caller gets
//! `plugin_project_unavailable`, `not_started`.

use std::sync::Arc;

use serde_json::json;

use super::super::outcome::{Outcome, ToolFailure};
use super::super::params::{ActionKind, ActionRef};
use super::super::project;
use super::super::relay::{self, Expect};
use super::super::remote::{CallAnswer, RemoteRunner, REMOTE_RUNNER};
use super::{replaced, Bound, BoundCall, Failure, Gateway, RemoteBinding, Runner};
use crate::catalog::{
    validate_tool_result, validate_tool_result_text, ResultFault, Schema, ToolResult,
};
use crate::error::{Dispatch, Error, ErrorCode};

/// The remote half of the gateway: forwarding to another machine's `serve`.
impl Gateway {
    /// Every action but `call` and the runner list, forwarded to a remote runner with `runner`
    /// rewritten to the remote's own runner; its answer comes back with this gateway's runner id
    /// (and, for `describe`, this gateway's binding).
    pub(super) fn act_remote(
        &self,
        remote: &Arc<RemoteRunner>,
        runner: &str,
        action: ActionRef<'_>,
    ) -> Result<Outcome, Failure> {
        let kind = action.kind();
        let mut params = json!({"action": kind.as_str(), "runner": REMOTE_RUNNER});
        match action {
            ActionRef::List { plugin, .. } => {
                if let Some(plugin) = plugin {
                    params["plugin"] = plugin.into();
                }
            }
            ActionRef::Describe {
                plugin,
                tool,
                project,
                ..
            } => {
                params["plugin"] = plugin.into();
                params["tool"] = tool.into();
                if let Some(project) = project {
                    params["project"] = project.into();
                }
            }
            ActionRef::Check { plugin, .. } => params["plugin"] = plugin.into(),
            ActionRef::Reload { .. } => {}
            ActionRef::Catalog { project, .. } => params["project"] = project.into(),
            ActionRef::Call { .. } => unreachable!("calls are routed by their binding"),
        }
        if let Some(session_id) = action.recording_session_id() {
            params["recording_session_id"] = session_id.into();
        }
        let answer = remote.forward(&self.remote_slots, kind, &params)?;
        let (success, json) = answer.output.into_parts();
        let asked_project = match action {
            ActionRef::Describe { project, .. } => project,
            _ => None,
        };
        if !success {
            return match relay::failure(&json) {
                Some(failure) => Err(refused_project(remote, asked_project.is_some(), failure)),
                None => Err(remote.unusable_answer(kind).into()),
            };
        }
        let expect = match action {
            ActionRef::List { plugin: None, .. } => Expect::Providers,
            ActionRef::List {
                plugin: Some(plugin),
                ..
            } => Expect::ProviderDetail { plugin },
            ActionRef::Describe { plugin, tool, .. } => {
                if asked_project.is_some() && json.get("project").is_none() {
                    // Described, but not bound: a runner that ignored the field.
                    return Err(project::not_supported(remote.id()).into());
                }
                let described = relay::describe(&json, plugin, tool, runner);
                let Some(mut described) = described
                    .filter(|d| d.project.as_ref().map(|p| p.project.as_str()) == asked_project)
                else {
                    return Err(remote.unusable_answer(kind).into());
                };
                let front = self.mint(Bound::Remote(Box::new(RemoteBinding {
                    runner: remote.clone(),
                    binding: std::mem::take(&mut described.binding),
                    instance: answer.instance,
                    plugin: plugin.to_string(),
                    tool: described.tool.clone(),
                    project_target: described.project.as_ref().map(|p| p.target.clone()),
                })))?;
                described.binding = front;
                return Ok(Outcome::Described(Box::new(described)));
            }
            ActionRef::Check { plugin, .. } => Expect::Check { plugin },
            ActionRef::Reload { .. } => Expect::Reload,
            ActionRef::Catalog { .. } => Expect::Catalog,
            ActionRef::Call { .. } => unreachable!("calls are routed by their binding"),
        };
        relay::success(expect, &json, runner).ok_or_else(|| remote.unusable_answer(kind).into())
    }

    /// A call through a front binding: forwarded once with the remote's binding (and, when it
    /// is project-bound, its project target, for the runner to re-resolve). A remote that no
    /// longer knows its binding and names another instance restarted: `plugin_replaced`.
    pub(super) fn call_remote(
        &self,
        target: &RemoteBinding,
        call: BoundCall<'_>,
    ) -> Result<Outcome, Failure> {
        let project_target = target.project_target.as_deref();
        if project_target.is_some() || call.project_target.is_some() {
            project::gate(call.caller, project_target, call.project_target)?;
        }
        let registered = matches!(
            self.runners.read().get(target.runner.id()),
            Some(Runner::Remote(r)) if Arc::ptr_eq(r, &target.runner)
        );
        if !registered {
            return Err(replaced().into());
        }
        let mut params =
            json!({"action": "call", "binding": target.binding, "arguments": call.arguments});
        if let Some(session_id) = call.recording_session_id {
            params["recording_session_id"] = session_id.into();
        }
        if let Some(project_target) = project_target {
            params["project_target"] = project_target.into();
        }
        let answer = match target.runner.forward_call(&self.remote_slots, &params)? {
            CallAnswer::Result(text) => {
                return relayed_result(target, validate_tool_result_text(&text, schema(target)));
            }
            CallAnswer::Output(answer) => answer,
        };
        let (success, json) = answer.output.into_parts();
        if success {
            return relayed_result(target, validate_tool_result(json, schema(target)));
        }
        let Some(failure) = relay::failure(&json) else {
            return Err(target.runner.unusable_answer(ActionKind::Call).into());
        };
        let restarted = target.instance.is_some() && answer.instance != target.instance;
        if restarted && failure.code == ErrorCode::DescribeRequired {
            return Err(replaced().into());
        }
        Err(refused_project(
            &target.runner,
            project_target.is_some(),
            failure,
        ))
    }
}

/// A runner's failure to a request of this front: passed on as it came, except the
/// `invalid_arguments` of a request that carried a project (`describe` with `project`, a
/// `call` with `project_target`), whose parameters this front checked itself: only a runner
/// that does not know the field answers so, and the request is refused as one that runner
/// cannot serve (`plugin_project_unavailable`).
fn refused_project(remote: &RemoteRunner, carried: bool, failure: ToolFailure) -> Failure {
    if carried && failure.code == ErrorCode::InvalidArguments {
        return project::not_supported(remote.id()).into();
    }
    Failure::Remote(failure)
}

/// The output schema of a remote binding's tool.
fn schema(target: &RemoteBinding) -> Option<&Schema> {
    target.tool.output_schema()
}

/// A remote call's result, checked as a local provider's result is (the contract, then the
/// output schema): the outcome, or the completed failure of a result that breaks either.
fn relayed_result(
    target: &RemoteBinding,
    checked: Result<ToolResult, ResultFault>,
) -> Result<Outcome, Failure> {
    checked.map(Outcome::Called).map_err(|fault| {
        log::warn!(
            "runner `{}` answered a call of `{}` with a result that breaks the contract ({})",
            target.runner.id(),
            target.tool.name(),
            fault.code()
        );
        Error::new(
            fault.code(),
            Dispatch::Completed,
            format!(
                "runner `{}` answered the call with a tool result that breaks the tool result \
                 contract or the tool's output schema; it was refused",
                target.runner.id()
            ),
        )
        .into()
    })
}
