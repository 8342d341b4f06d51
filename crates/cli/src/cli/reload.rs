//! What SIGHUP does to a running `serve`: re-read the tokens file, the runners file,
//! runner.toml (through the host's candidate reload, as `plugin_tool reload`) and, in cluster
//! mode, the cluster keys (`super::cluster::reload`). Each
//! file is taken alone: a bad one keeps its old state and logs why (a warning with the
//! loader's message, never a token or a path), the others still apply. The runner ids are
//! checked as at start ([`check_runner_ids`]): a runner token's id may not be a runner of the
//! runners file in force, and the runners file may not take a runner token's id.
//!
//! Reloads run on a thread of their own, so a stop signal is never held up by one; requests
//! that arrive while a reload runs are coalesced into one more reload.

use std::path::PathBuf;
use std::sync::Arc;

use crossbeam_channel::{Sender, TrySendError};
use webcodex_plugin_host::Gateway;
use webcodex_plugin_http::cluster::ClusterKeys;
use webcodex_plugin_http::{Tokens, TokensSwap};
use webcodex_plugin_ops::DialOutIds;

use super::target::RemoteSet;

/// Everything a SIGHUP re-reads, and where it puts the result.
pub(super) struct Reload {
    /// The `--tokens` file and the running server's tokens.
    pub(super) tokens_path: PathBuf,
    pub(super) tokens: TokensSwap,
    /// The gateway whose local hosts reload and whose remote runners are swapped.
    pub(super) gateway: Arc<Gateway>,
    /// The `--runners` file (if any), whether there is a local runner, and the runners it gave.
    pub(super) runners: Option<(PathBuf, bool, RemoteSet)>,
    /// Whether the front has a runner besides its dial-out ones (`--config` or `--runners`).
    pub(super) has_runner: bool,
    /// The runner ids of the runner tokens in force.
    pub(super) dial_out: Vec<String>,
    /// The admin listener's view of those ids, if there is one.
    pub(super) dial_out_metrics: Option<DialOutIds>,
    /// In cluster mode, the `--cluster-keys` file and the keys in force.
    pub(super) cluster_keys: Option<(PathBuf, Arc<ClusterKeys>)>,
}

/// A front needs a runner: `--config` or `--runners` (`has_runner`), or a runner token; and
/// each runner token's id is its own, not one of the runners file's `static_ids` (the token
/// file's own loader already refuses `local`, a malformed id and an id given twice). The
/// message names the entry, never a token or a path.
pub(super) fn check_runner_ids(
    has_runner: bool,
    static_ids: &[&str],
    tokens: &Tokens,
) -> Result<(), String> {
    let dial_out: Vec<&str> = tokens.runner_ids().collect();
    if !has_runner && dial_out.is_empty() {
        return Err(
            "a front with neither --config nor --runners needs [[runner_tokens]] entries \
             (runners that connect to it); give --config F, --runners F, or runner tokens"
                .into(),
        );
    }
    if let Some(index) = dial_out.iter().position(|id| static_ids.contains(id)) {
        return Err(format!(
            "runner_tokens[{index}].runner: is also a runner of --runners; each runner id is \
             either static or dial-out"
        ));
    }
    Ok(())
}

/// Asks the reload thread for one reload; never blocks.
#[derive(Clone)]
pub(super) struct ReloadTrigger(Sender<()>);

impl ReloadTrigger {
    /// Requests a reload. One already waiting covers this request too (it re-reads every file
    /// when it starts).
    pub(super) fn request(&self) {
        match self.0.try_send(()) {
            Ok(()) | Err(TrySendError::Full(())) => {}
            Err(TrySendError::Disconnected(())) => {
                log::warn!("serve: the reload thread is gone; SIGHUP is ignored");
            }
        }
    }
}

impl Reload {
    /// Starts the reload thread; it ends when every trigger is dropped.
    pub(super) fn spawn(mut self) -> std::io::Result<ReloadTrigger> {
        let (sender, receiver) = crossbeam_channel::bounded(1);
        std::thread::Builder::new()
            .name("wc-reload".into())
            .spawn(move || {
                while receiver.recv().is_ok() {
                    self.run();
                }
            })?;
        Ok(ReloadTrigger(sender))
    }

    /// One reload of every file.
    fn run(&mut self) {
        log::info!("serve: reloading on SIGHUP");
        self.reload_tokens();
        self.reload_runners();
        self.reload_hosts();
        if let Some((path, keys)) = &self.cluster_keys {
            super::cluster::reload(path, keys);
        }
    }

    fn reload_tokens(&mut self) {
        let static_ids: Vec<&str> = match &self.runners {
            Some((_, _, set)) => set.ids().collect(),
            None => Vec::new(),
        };
        let checked = Tokens::load(&self.tokens_path)
            .map_err(|e| e.to_string())
            .and_then(|tokens| {
                check_runner_ids(self.has_runner, &static_ids, &tokens).map(|()| tokens)
            });
        match checked {
            Ok(tokens) => {
                let count = tokens.len();
                self.dial_out = tokens.runner_ids().map(str::to_string).collect();
                if let Some(ids) = &self.dial_out_metrics {
                    ids.set(self.dial_out.iter().map(String::as_str));
                }
                // A runner link whose token is gone or rotated is closed now (and logged).
                let revoked = self.tokens.replace(tokens).len();
                log::info!(
                    "serve: --tokens reloaded ({count} tokens; {revoked} runner links closed, \
                     their token revoked)"
                );
            }
            // The messages never quote the file (see Tokens::parse) nor name a path.
            Err(e) => log::warn!("serve: --tokens not reloaded, the old tokens stay: {e}"),
        }
    }

    fn reload_runners(&mut self) {
        let Some((path, with_local, set)) = &mut self.runners else {
            return;
        };
        match set.reload(path, *with_local, &self.dial_out, &self.gateway) {
            Ok((kept, fresh, removed)) => log::info!(
                "serve: --runners reloaded ({kept} unchanged, {fresh} new or changed, \
                 {removed} removed)"
            ),
            // Runners-file messages never hold a token or a path (at most a runner id or an
            // unknown key, escaped).
            Err(e) => log::warn!("serve: --runners not reloaded, the old runners stay: {e}"),
        }
    }

    fn reload_hosts(&self) {
        for name in self.gateway.runner_names() {
            let Some(host) = self.gateway.runner(&name) else {
                continue;
            };
            match host.reload() {
                Ok(report) if report.committed => {
                    log::info!(
                        "serve: runner.toml reloaded ({} providers)",
                        report.providers.entries().len()
                    );
                }
                Ok(report) => {
                    let failed: Vec<String> = report
                        .failures
                        .iter()
                        .map(|(id, e)| format!("{id}: {}", e.code()))
                        .collect();
                    log::warn!(
                        "serve: runner.toml not reloaded, the old providers stay; failed \
                         candidates: {} (plugin_tool check shows why)",
                        failed.join(", ")
                    );
                }
                Err(e) => log::warn!(
                    "serve: runner.toml not reloaded, the old providers stay: {}: {}",
                    e.code(),
                    e.message()
                ),
            }
        }
    }
}
