//! Fronts that scale out (docs/PROTOCOL.md, cluster mode): several `serve` replicas behind any
//! load balancer, with no affinity and no shared store.
//!
//! - [`keys`]: the cluster keys file (`serve --cluster-keys FILE`, `[[keys]] {id, secret}`),
//!   and [`ClusterKeys`], the [`BindingSealer`] that seals every binding of a replica into an
//!   AES-256-GCM box (`ring`) any replica holding the key opens: the first key seals, every
//!   key opens, SIGHUP swaps the set in place, and a box expires after the binding TTL.
//! - [`fleet`]: the runner's side, `connect --front-url URL` (repeatable): one link per
//!   address each URL's host resolves to, resolved again every 30 s, every link one runner
//!   instance.
//!
//! The MCP HTTP binding (`POST /mcp`) keeps no session (each message is handled on its own),
//! so it has no session id to seal: any replica serves any MCP request as it is.
//!
//! [`BindingSealer`]: webcodex_plugin_host::BindingSealer

pub mod fleet;
pub mod keys;

pub use fleet::{Fleet, FleetStop, RESOLVE_EVERY};
pub use keys::{
    new_key_entry, parse_ttl, ClusterKeys, KeySet, KeysError, DEFAULT_BINDING_TTL, KEY_BYTES,
    MAX_KEYS,
};
