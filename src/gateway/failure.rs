//! The canonical failure output and the recovery vocabulary.
//!
//! A failed action's output is
//! `{"error":{"code","message"},"dispatch":"not_started"|"outcome_unknown"|"completed","recovery"?}`.
//! `recovery` is one short, stable string telling the caller what to do next:
//!
//! | recovery | when | what to do |
//! |---|---|---|
//! | `do_not_retry` | every `outcome_unknown` failure | the effect may have happened: never repeat the call blindly |
//! | `retry` | `plugin_provider_busy`, `plugin_timeout` (not started), `gateway_saturated`, `plugin_runner_saturated`, `plugin_check_busy`, `plugin_reload_busy`, `plugin_runner_unavailable`, `plugin_gateway_timeout` (not started: a read-only action) | the same request may be sent again later |
//! | `describe_again` | `describe_required`, `plugin_schema_changed` | describe the tool again and call with the new binding |
//! | `list_and_describe` | `plugin_replaced`, `stale_plugin_provider`, `plugin_project_changed` | list the runner, then describe the tool again |
//! | `reload` | `plugin_provider_unavailable`, and any not-started failure that retired the provider | reload the runner (`plugin:manage`) |
//! | `fix_arguments` | `invalid_arguments`, `plugin_arguments_schema_invalid` | correct the parameters or tool arguments |
//! | `fix_request` | `invalid_request` | send a well-formed transport request |
//! | `list` | `plugin_runner_not_found`, `plugin_not_configured`, `plugin_tool_unavailable` | list to see what exists |
//!
//! Every other failure (for example `insufficient_scope`, `plugin_project_mismatch`,
//! `plugin_project_unavailable`, configuration errors, or a completed
//! call whose answer was an error) carries no `recovery`: nothing the caller can do by itself.

use crate::error::{Dispatch, Error, ErrorCode};

/// What a caller should do after a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Recovery {
    /// The request may be sent again (nothing was started).
    Retry,
    /// Describe the tool again, then call with the new binding.
    DescribeAgain,
    /// List the runner and describe the tool again.
    ListAndDescribe,
    /// Reload the runner.
    Reload,
    /// Correct the parameters or the tool arguments.
    FixArguments,
    /// Send a well-formed transport request.
    FixRequest,
    /// List to see which runners, providers and tools exist.
    List,
    /// The outcome is unknown: never retry automatically.
    DoNotRetry,
}

impl Recovery {
    /// The stable wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Recovery::Retry => "retry",
            Recovery::DescribeAgain => "describe_again",
            Recovery::ListAndDescribe => "list_and_describe",
            Recovery::Reload => "reload",
            Recovery::FixArguments => "fix_arguments",
            Recovery::FixRequest => "fix_request",
            Recovery::List => "list",
            Recovery::DoNotRetry => "do_not_retry",
        }
    }

    /// The recovery for a failure, if the caller can do anything by itself.
    pub fn for_error(error: &Error) -> Option<Recovery> {
        if error.dispatch() == Dispatch::OutcomeUnknown {
            return Some(Recovery::DoNotRetry);
        }
        let by_code = match error.code() {
            ErrorCode::ProviderBusy
            | ErrorCode::GatewaySaturated
            | ErrorCode::RunnerSaturated
            | ErrorCode::Internal
            | ErrorCode::CheckBusy
            | ErrorCode::ReloadBusy
            | ErrorCode::RunnerUnavailable
            | ErrorCode::GatewayTimeout => Some(Recovery::Retry),
            ErrorCode::Timeout if error.dispatch() == Dispatch::NotStarted && !error.is_fatal() => {
                Some(Recovery::Retry)
            }
            ErrorCode::DescribeRequired | ErrorCode::SchemaChanged => Some(Recovery::DescribeAgain),
            ErrorCode::Replaced | ErrorCode::StaleProvider | ErrorCode::ProjectChanged => {
                Some(Recovery::ListAndDescribe)
            }
            ErrorCode::ProviderUnavailable => Some(Recovery::Reload),
            ErrorCode::InvalidArguments | ErrorCode::ArgumentsSchemaInvalid => {
                Some(Recovery::FixArguments)
            }
            ErrorCode::InvalidRequest => Some(Recovery::FixRequest),
            ErrorCode::RunnerNotFound | ErrorCode::NotConfigured | ErrorCode::ToolUnavailable => {
                Some(Recovery::List)
            }
            _ => None,
        };
        by_code.or_else(|| {
            (error.dispatch() == Dispatch::NotStarted && error.is_fatal())
                .then_some(Recovery::Reload)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recovery(code: ErrorCode, dispatch: Dispatch) -> Option<&'static str> {
        Recovery::for_error(&Error::new(code, dispatch, "m")).map(Recovery::as_str)
    }

    #[test]
    fn every_outcome_unknown_is_do_not_retry() {
        for code in ErrorCode::ALL {
            assert_eq!(
                recovery(*code, Dispatch::OutcomeUnknown),
                Some("do_not_retry"),
                "{code}"
            );
        }
    }

    #[test]
    fn recovery_by_code() {
        use Dispatch::NotStarted as N;
        let cases = [
            (ErrorCode::ProviderBusy, "retry"),
            (ErrorCode::Timeout, "retry"),
            (ErrorCode::GatewaySaturated, "retry"),
            (ErrorCode::RunnerSaturated, "retry"),
            (ErrorCode::CheckBusy, "retry"),
            (ErrorCode::ReloadBusy, "retry"),
            (ErrorCode::RunnerUnavailable, "retry"),
            (ErrorCode::GatewayTimeout, "retry"),
            (ErrorCode::DescribeRequired, "describe_again"),
            (ErrorCode::SchemaChanged, "describe_again"),
            (ErrorCode::Replaced, "list_and_describe"),
            (ErrorCode::StaleProvider, "list_and_describe"),
            (ErrorCode::ProjectChanged, "list_and_describe"),
            (ErrorCode::ProviderUnavailable, "reload"),
            (ErrorCode::InvalidArguments, "fix_arguments"),
            (ErrorCode::ArgumentsSchemaInvalid, "fix_arguments"),
            (ErrorCode::InvalidRequest, "fix_request"),
            (ErrorCode::RunnerNotFound, "list"),
            (ErrorCode::NotConfigured, "list"),
            (ErrorCode::ToolUnavailable, "list"),
        ];
        for (code, want) in cases {
            assert_eq!(recovery(code, N), Some(want), "{code}");
        }
        assert_eq!(recovery(ErrorCode::InsufficientScope, N), None);
        assert_eq!(recovery(ErrorCode::ConfigInvalid, N), None);
        assert_eq!(recovery(ErrorCode::ProjectMismatch, N), None);
        assert_eq!(recovery(ErrorCode::ProjectUnavailable, N), None);
        assert_eq!(recovery(ErrorCode::RpcError, Dispatch::Completed), None);
        assert_eq!(
            recovery(ErrorCode::ResultInvalid, Dispatch::Completed),
            None
        );
    }

    #[test]
    fn a_not_started_failure_that_retired_the_provider_means_reload() {
        let e = Error::not_started(ErrorCode::UnexpectedMessage, "m").retiring();
        assert_eq!(Recovery::for_error(&e), Some(Recovery::Reload));
        let e = Error::not_started(ErrorCode::Timeout, "m").retiring();
        assert_eq!(Recovery::for_error(&e), Some(Recovery::Reload));
    }
}
