//! The HTTP link of a remote runner (feature `http-client`): a front gateway reaches another
//! machine's `webcodex-plugin serve` with an [`HttpClient`] and that runner's own credential.
//! See docs/PROTOCOL.md, remote runners.

use serde_json::Value;

use super::client::{CallReply, ClientError, ClientOptions, HttpClient, ProxyChoice, Received};
use webcodex_plugin_host::{
    CallAnswer, LinkAnswer, LinkFailure, RemoteRunner, RunnerEntry, RunnerLink, RunnersError,
};

impl RunnerLink for HttpClient {
    fn send(&self, params: &Value) -> Result<LinkAnswer, LinkFailure> {
        self.exchange(params).map_err(link_failure).and_then(answer)
    }

    fn send_call(&self, params: &Value) -> Result<CallAnswer, LinkFailure> {
        match self.exchange_call(params).map_err(link_failure)? {
            CallReply::Result(text) => Ok(CallAnswer::Result(text)),
            CallReply::Received(received) => answer(received).map(CallAnswer::Output),
        }
    }
}

/// The link's answer for a received `plugin_tool` response.
fn answer(received: Received) -> Result<LinkAnswer, LinkFailure> {
    // `serve` answers 401 before it reads the body.
    if received.status == 401 {
        return Err(LinkFailure::Refused);
    }
    Ok(LinkAnswer {
        output: received.output,
        instance: received.runner_instance,
        held_link_secret: received.echoed_token,
    })
}

/// The link failure of a client error: nothing sent when no connection was made.
fn link_failure(e: ClientError) -> LinkFailure {
    match e {
        ClientError::Connect(_) | ClientError::Untrusted(_) => LinkFailure::NotSent(e.to_string()),
        e => LinkFailure::Lost(e.to_string()),
    }
}

/// The remote runner of a runners-file entry: reads its token (and CA file) now and builds its
/// HTTP link. The proxy environment applies as in the CLI's client mode (`NO_PROXY` exempts a
/// host); connect and read timeouts are the client's defaults (10 s, 130 s).
pub fn remote_runner(entry: &RunnerEntry) -> Result<RemoteRunner, RunnersError> {
    let token = entry.token()?;
    let ca_pem = match &entry.ca_file {
        None => None,
        // Not the path: a value from the runners file is never quoted.
        Some(path) => Some(std::fs::read(path).map_err(|e| {
            RunnersError::new(format!("runner `{}`: cannot read ca_file: {e}", entry.id))
        })?),
    };
    let options = ClientOptions {
        ca_pem,
        proxy: ProxyChoice::System,
        ..ClientOptions::default()
    };
    let client = HttpClient::new(&entry.url, &token, options)
        .map_err(|m| RunnersError::new(format!("runner `{}`: {m}", entry.id)))?;
    Ok(RemoteRunner::new(&entry.id, &entry.name, Box::new(client))
        .with_max_in_flight(entry.max_in_flight)
        .with_link_secret(&token))
}
