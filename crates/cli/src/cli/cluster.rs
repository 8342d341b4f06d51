//! Cluster mode of `serve` (`--cluster-keys FILE`, `--binding-ttl D`): several replicas behind
//! any load balancer, with no affinity and no shared store (docs/PROTOCOL.md, cluster mode).
//! Every binding is sealed with the keys file's first key and opens on any replica holding
//! it; SIGHUP re-reads the file ([`reload`]). A front in cluster mode has no local runner.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use webcodex_plugin_http::cluster::{parse_ttl, ClusterKeys, KeySet, DEFAULT_BINDING_TTL};
use webcodex_plugin_http::readable_by_everyone;

use super::{EXIT_FAILURE, EXIT_USAGE};

/// How long a replica that just started reports not ready while runner-token runners have
/// not linked to it yet (a runner finds a new replica within 30 s, its name's resolution
/// period, and dials it at once).
pub(super) const AWAIT_RUNNERS_WITHIN: Duration = Duration::from_secs(45);

/// The refusal of `--config` in cluster mode.
pub(super) const CONFIG_REFUSED: &str =
    "--config: a front in cluster mode (--cluster-keys) has no local runner: each replica \
     would run its own plugin processes, and a binding described on one replica's could not \
     be called on another. Run the plugins under `webcodex-plugin connect --front-url URL` \
     (runners that link to every replica) or list them in --runners";

/// The options of cluster mode.
#[derive(Debug, Clone)]
pub(super) struct ClusterArgs {
    /// The keys file.
    pub(super) keys: PathBuf,
    /// `--binding-ttl`, as given.
    pub(super) ttl: Option<String>,
}

/// Reads the keys file and makes the replica's sealer; the exit code after a message on
/// stderr when it cannot.
pub(super) fn start(args: &ClusterArgs) -> Result<Arc<ClusterKeys>, i32> {
    let ttl = match &args.ttl {
        None => DEFAULT_BINDING_TTL,
        Some(text) => parse_ttl(text).map_err(|e| {
            eprintln!("error: --binding-ttl {text:?}: {e}");
            EXIT_USAGE
        })?,
    };
    let set = KeySet::load(&args.keys).map_err(|e| {
        eprintln!("error: --cluster-keys {}: {e}", args.keys.display());
        EXIT_USAGE
    })?;
    if readable_by_everyone(&args.keys) {
        log::warn!(
            "--cluster-keys: every user of this machine may read the keys file; restrict it \
             (chmod 600) unless no other user can reach it"
        );
    }
    let ids = set.ids().join(", ");
    let keys = ClusterKeys::new(set, Some(ttl)).ok_or_else(|| {
        eprintln!("error: the system's random source failed");
        EXIT_FAILURE
    })?;
    log::info!(
        "serve: cluster mode: bindings sealed with the first of the keys {ids}, opening for {} s",
        ttl.as_secs()
    );
    Ok(Arc::new(keys))
}

/// SIGHUP: re-reads the keys file at `path` into `keys`; a bad file keeps the keys in force
/// and logs why (never a secret nor the path).
pub(super) fn reload(path: &Path, keys: &ClusterKeys) {
    match KeySet::load(path) {
        Ok(set) => {
            let ids = set.ids().join(", ");
            keys.replace(set);
            log::info!("serve: --cluster-keys reloaded (keys {ids}; the first seals)");
        }
        Err(e) => log::warn!("serve: --cluster-keys not reloaded, the old keys stay: {e}"),
    }
}
