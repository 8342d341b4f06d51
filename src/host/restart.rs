//! The restart policy (`restart = "on-failure"`): a provider whose plugin exited, or whose
//! instance was retired by a fault, or that failed to start, is started again as a new
//! instance after a backoff, at most `restart_max` times in a row.
//!
//! One thread (`wc-restart`, started with the first provider under `on-failure`) waits on a
//! channel with the deadline of the next restart due, never polling: a provider's instance
//! tells it when a fault or its exit retires it ([`Provider::on_fault_retirement`]), a reload
//! and a finished restart tell it too. A restart prepares the candidate on a thread of its own
//! (`wc-restart-ID`) with the configuration the set was committed with (a restart is no reload:
//! it never reads runner.toml), then swaps that one entry of the committed set under its lock:
//! a new set with a new generation, so old bindings fail with `plugin_replaced` as after a
//! reload. A reload cancels pending and preparing restarts (an epoch that a restart must still
//! find when it commits) and decides afresh when it ends. Shutdown cancels and joins them.
//!
//! Backoff: full jitter, a uniform delay in `0..=min(60 s, 1 s × 2^(n-1))` before the `n`th
//! restart in a row; an instance that stayed up 10 minutes resets the count. After `restart_max`
//! restarts in a row failed, the provider stays down (and says so) until a reload.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use parking_lot::{Mutex, RwLock};

use super::{ProviderEntry, ProviderSet, ProviderState, Started};
use crate::env::{Restart, RestartPolicy, RunnerConfig};
use crate::provider::{AdmissionCancel, InstanceId, Provider};

/// The delay ceiling before the first restart in a row (doubling for each further one).
pub const RESTART_BACKOFF_BASE: Duration = Duration::from_secs(1);
/// The largest delay ceiling.
pub const RESTART_BACKOFF_CAP: Duration = Duration::from_secs(60);
/// An instance up this long before it went down starts a new row of restarts.
pub const RESTART_RESET_AFTER: Duration = Duration::from_secs(600);

/// The restarts of one host.
pub(super) struct Restarts {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Restarts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Restarts").finish_non_exhaustive()
    }
}

/// What the host shares with the restart threads.
pub(super) struct Shared {
    pub(super) committed: Arc<RwLock<Arc<ProviderSet>>>,
    pub(super) generation: Arc<AtomicU64>,
    pub(super) stopping: Arc<AtomicBool>,
    pub(super) options: super::HostOptions,
    state: Mutex<State>,
    /// One pending wake-up at most: a full channel already wakes the thread.
    wake: Sender<()>,
    woken: Receiver<()>,
}

#[derive(Default)]
struct State {
    /// The configuration of the committed set (restarts start from it).
    config: Option<Arc<RunnerConfig>>,
    /// A reload is preparing or committing: nothing starts or commits.
    reloading: bool,
    /// Counts reloads: a restart commits only in the epoch it started in.
    epoch: u64,
    stopped: bool,
    /// The providers under `on-failure`.
    tracks: BTreeMap<String, Track>,
    /// Restarts started (each a new process), by provider id (the configured ones).
    totals: BTreeMap<String, u64>,
    workers: Vec<JoinHandle<()>>,
}

struct Track {
    policy: RestartPolicy,
    /// Restarts in a row so far.
    restarts: u32,
    /// When the live instance was committed.
    up_since: Option<Instant>,
    /// The live instance whose retirement is the next failure.
    watched: Option<InstanceId>,
    /// The next restart, when one is pending.
    due: Option<Instant>,
    /// The restart preparing now.
    running: Option<AdmissionCancel>,
    gave_up: bool,
}

impl Restarts {
    pub(super) fn new(shared: Shared) -> Restarts {
        Restarts {
            shared: Arc::new(shared),
            thread: Mutex::new(None),
        }
    }

    /// A reload begins: pending and preparing restarts are cancelled until it ends (when the
    /// guard is dropped, or [`ReloadGuard::committed`] is called).
    pub(super) fn reload_begins(&self) -> ReloadGuard<'_> {
        let mut state = self.shared.state.lock();
        state.reloading = true;
        state.epoch += 1;
        for (id, track) in &mut state.tracks {
            let cancelled = track.due.take().is_some();
            if let Some(cancel) = track.running.take() {
                cancel.cancel();
            } else if cancelled {
                log::info!("plugin provider {id:?}: its pending restart is cancelled by a reload");
            }
        }
        ReloadGuard {
            restarts: self,
            committed: false,
        }
    }

    /// A set was committed (at start or by a reload) with `config`: every provider under
    /// `on-failure` is tracked afresh, its live instance watched, a failed one scheduled.
    pub(super) fn adopt(&self, config: &RunnerConfig, set: &ProviderSet) {
        let now = Instant::now();
        let mut state = self.shared.state.lock();
        state.config = Some(Arc::new(config.clone()));
        state.tracks.clear();
        let mut totals = BTreeMap::new();
        for cfg in &config.plugins.providers {
            if cfg.restart.restart != Restart::OnFailure {
                continue;
            }
            totals.insert(
                cfg.id.clone(),
                state.totals.get(&cfg.id).copied().unwrap_or(0),
            );
            let mut track = Track {
                policy: cfg.restart,
                restarts: 0,
                up_since: None,
                watched: None,
                due: None,
                running: None,
                gave_up: false,
            };
            match set.entry(&cfg.id).map(|e| &e.state) {
                Some(ProviderState::Ready(provider)) => self.watch(&mut track, provider, now),
                Some(ProviderState::Failed(error)) => {
                    let why = format!("it failed to start, code {}", error.code().as_str());
                    track.failed(&cfg.id, &why, now);
                }
                None => {}
            }
            state.tracks.insert(cfg.id.clone(), track);
        }
        state.totals = totals;
        let start = !state.tracks.is_empty() && !state.stopped;
        drop(state);
        if start {
            self.ensure_thread();
        }
        self.shared.wake();
    }

    /// A reload ended without committing: the old set stays, and each provider still down
    /// gets its cancelled restart again (the count goes on).
    fn kept(&self) {
        let now = Instant::now();
        let set = self.shared.committed.read().clone();
        let mut state = self.shared.state.lock();
        state.reloading = false;
        if state.stopped {
            return;
        }
        for (id, track) in &mut state.tracks {
            let Some(entry) = set.entry(id) else { continue };
            if track.gave_up || track.due.is_some() || track.running.is_some() || !is_down(entry) {
                continue;
            }
            if newly_retired(entry, track) {
                // It went down while the reload ran: a failure of the row.
                track.failed(id, "its plugin exited or was retired after a fault", now);
            } else {
                track.schedule(id, "it is still down after a reload that kept the set", now);
            }
        }
        drop(state);
        self.shared.wake();
    }

    fn watch(&self, track: &mut Track, provider: &Provider, now: Instant) {
        track.watched = Some(provider.instance());
        track.up_since = Some(now);
        provider.on_fault_retirement(self.shared.wake.clone());
    }

    fn ensure_thread(&self) {
        let mut thread = self.thread.lock();
        if thread.is_some() {
            return;
        }
        let shared = self.shared.clone();
        match std::thread::Builder::new()
            .name("wc-restart".into())
            .spawn(move || supervise(&shared))
        {
            Ok(handle) => *thread = Some(handle),
            Err(e) => log::error!("plugin restarts are off: no thread for them ({e})"),
        }
    }

    /// Shutdown began: pending restarts are dropped, preparing ones killed, none commits.
    pub(super) fn stop(&self) {
        let mut state = self.shared.state.lock();
        state.stopped = true;
        for track in state.tracks.values_mut() {
            track.due = None;
            if let Some(cancel) = track.running.take() {
                cancel.cancel();
            }
        }
        drop(state);
        self.shared.wake();
    }

    /// [`Restarts::stop`], then waits for the restart threads to end.
    pub(super) fn join(&self) {
        self.stop();
        if let Some(thread) = self.thread.lock().take() {
            let _ = thread.join();
        }
    }

    /// Restarts started so far (each a new process, admitted or not), by provider id: every
    /// provider configured with `restart = "on-failure"` (0 until its first restart).
    pub(super) fn counts(&self) -> Vec<(String, u64)> {
        let state = self.shared.state.lock();
        state
            .totals
            .iter()
            .map(|(id, n)| (id.clone(), *n))
            .collect()
    }
}

/// A reload in progress; when dropped, the restarts decide afresh.
pub(super) struct ReloadGuard<'r> {
    restarts: &'r Restarts,
    committed: bool,
}

impl ReloadGuard<'_> {
    /// The reload committed `set` with `config`.
    pub(super) fn committed(mut self, config: &RunnerConfig, set: &ProviderSet) {
        self.committed = true;
        self.restarts.shared.state.lock().reloading = false;
        self.restarts.adopt(config, set);
    }
}

impl Drop for ReloadGuard<'_> {
    fn drop(&mut self) {
        if !self.committed {
            self.restarts.kept();
        }
    }
}

impl Shared {
    pub(super) fn new(
        committed: Arc<RwLock<Arc<ProviderSet>>>,
        generation: Arc<AtomicU64>,
        stopping: Arc<AtomicBool>,
        options: super::HostOptions,
    ) -> Shared {
        let (wake, woken) = crossbeam_channel::bounded(1);
        Shared {
            committed,
            generation,
            stopping,
            options,
            state: Mutex::new(State::default()),
            wake,
            woken,
        }
    }

    fn wake(&self) {
        let _ = self.wake.try_send(());
    }

    /// Commits `provider` as the new instance of `plugin` when the restart is still wanted: the
    /// epoch it started in, no reload, no shutdown. False when it is not: the candidate is then
    /// dropped (its process tree killed), outside the locks.
    fn commit(&self, plugin: &str, started: Started, epoch: u64) -> bool {
        let mut committed = self.committed.write();
        let mut state = self.state.lock();
        let wanted = state.epoch == epoch
            && !state.reloading
            && !state.stopped
            && !self.stopping.load(Ordering::Acquire);
        let at = committed.entries().iter().position(|e| e.id == plugin);
        let (Some(at), Some(track), true) = (at, state.tracks.get_mut(plugin), wanted) else {
            drop((state, committed));
            drop(started);
            return false;
        };
        let provider = Arc::new(started.provider);
        let mut entries: Vec<ProviderEntry> = committed.entries().to_vec();
        entries[at].state = ProviderState::Ready(provider.clone());
        entries[at].root = started.root;
        self.generation.fetch_add(1, Ordering::SeqCst);
        let old = std::mem::replace(&mut *committed, Arc::new(ProviderSet::new(entries)));
        drop(committed);
        track.running = None;
        track.watched = Some(provider.instance());
        track.up_since = Some(Instant::now());
        let row = track.restarts;
        drop(state);
        provider.on_fault_retirement(self.wake.clone());
        log::info!(
            "plugin provider {plugin:?} restarted: a new instance, ready, {} tools (restart {row} in a row)",
            provider.catalog().tools().len()
        );
        // The old instance (retired) ends here, outside the locks.
        drop(old);
        true
    }
}

/// True when `entry` is the instance `track` watches, retired (a failure not yet counted).
fn newly_retired(entry: &ProviderEntry, track: &Track) -> bool {
    match &entry.state {
        ProviderState::Ready(p) => p.is_retired() && track.watched == Some(p.instance()),
        ProviderState::Failed(_) => false,
    }
}

fn is_down(entry: &ProviderEntry) -> bool {
    match &entry.state {
        ProviderState::Ready(p) => p.is_retired(),
        ProviderState::Failed(_) => true,
    }
}

impl Track {
    /// The provider went down (`why`): the next restart is scheduled, or it stays down.
    fn failed(&mut self, id: &str, why: &str, now: Instant) {
        self.watched = None;
        if let Some(up) = self.up_since.take() {
            if now.saturating_duration_since(up) >= RESTART_RESET_AFTER {
                self.restarts = 0;
            }
        }
        if self.restarts >= self.policy.max {
            self.gave_up = true;
            log::error!(
                "plugin provider {id:?} stays down: {} restarts in a row failed (restart_max = {}); fix the plugin and reload",
                self.restarts,
                self.policy.max
            );
            return;
        }
        self.restarts += 1;
        self.schedule(id, why, now);
    }

    /// Schedules restart number `self.restarts` after its backoff.
    fn schedule(&mut self, id: &str, why: &str, now: Instant) {
        let delay = backoff(self.restarts.max(1), random_unit());
        self.due = Some(now + delay);
        log::warn!(
            "plugin provider {id:?} is down ({why}); restart {} of at most {} in a row in {:.1} s (restart = \"on-failure\")",
            self.restarts.max(1),
            self.policy.max,
            delay.as_secs_f64()
        );
    }
}

/// The delay before the `n`th restart in a row (`n` ≥ 1) for a `unit` drawn uniformly in
/// `0.0..1.0`: full jitter under a ceiling of 1 s × 2^(n-1), at most 60 s.
pub(super) fn backoff(n: u32, unit: f64) -> Duration {
    let doublings = n.saturating_sub(1).min(31);
    let ceiling = RESTART_BACKOFF_BASE
        .saturating_mul(1u32 << doublings)
        .min(RESTART_BACKOFF_CAP);
    ceiling.mul_f64(unit.clamp(0.0, 1.0))
}

/// A uniform draw in `0.0..1.0` from the system's randomness (0.5 without it).
fn random_unit() -> f64 {
    let mut bytes = [0u8; 8];
    if getrandom::getrandom(&mut bytes).is_err() {
        return 0.5;
    }
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

/// The restart thread: waits for the next restart due or a wake-up, notices instances gone
/// down, starts the restarts due.
fn supervise(shared: &Arc<Shared>) {
    loop {
        let next = {
            let state = shared.state.lock();
            if state.stopped {
                break;
            }
            state
                .tracks
                .values()
                .filter(|t| t.running.is_none())
                .filter_map(|t| t.due)
                .min()
        };
        // A wake-up, or the deadline: either way, look. (The channel never closes: this
        // side holds a sender.)
        match next {
            Some(at) => drop(shared.woken.recv_deadline(at)),
            None => drop(shared.woken.recv()),
        }
        // The set first, then the state (a restart commits holding both, in that order).
        let set = shared.committed.read().clone();
        let now = Instant::now();
        let mut state = shared.state.lock();
        if state.stopped {
            break;
        }
        state.workers.retain(|w| !w.is_finished());
        if state.reloading {
            continue;
        }
        let epoch = state.epoch;
        let config = state.config.clone();
        for (id, track) in &mut state.tracks {
            let retired = set.entry(id).is_some_and(|e| newly_retired(e, track));
            if retired && track.due.is_none() && track.running.is_none() && !track.gave_up {
                track.failed(id, "its plugin exited or was retired after a fault", now);
            }
        }
        let Some(config) = config else { continue };
        let due: Vec<String> = state
            .tracks
            .iter()
            .filter(|(_, t)| t.running.is_none() && t.due.is_some_and(|at| at <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            let cancel = AdmissionCancel::new();
            let worker = {
                let (shared, config, cancel, id) =
                    (shared.clone(), config.clone(), cancel.clone(), id.clone());
                std::thread::Builder::new()
                    .name(format!("wc-restart-{id}"))
                    .spawn(move || restart(&shared, &config, &id, epoch, &cancel))
            };
            let Some(track) = state.tracks.get_mut(&id) else {
                continue;
            };
            track.due = None;
            match worker {
                Ok(handle) => {
                    track.running = Some(cancel);
                    state.workers.push(handle);
                    *state.totals.entry(id).or_default() += 1;
                }
                Err(e) => {
                    log::warn!("plugin provider {id:?}: no thread for its restart ({e})");
                    track.failed(&id, "its restart could not start", now);
                }
            }
        }
    }
    let workers = std::mem::take(&mut shared.state.lock().workers);
    for worker in workers {
        let _ = worker.join();
    }
}

/// One restart: prepares `plugin` from `config` and commits it (or counts the failure).
fn restart(
    shared: &Arc<Shared>,
    config: &RunnerConfig,
    plugin: &str,
    epoch: u64,
    cancel: &AdmissionCancel,
) {
    let Some(cfg) = config.provider(plugin) else {
        return;
    };
    let prepared = super::prepare_logged(config, cfg, &shared.options, cancel);
    let failed = match prepared {
        // Committed, or no longer wanted (a reload or shutdown came).
        Ok(started) => {
            shared.commit(plugin, started, epoch);
            false
        }
        Err(_) => true,
    };
    if failed {
        let mut state = shared.state.lock();
        if state.epoch == epoch && !state.stopped {
            if let Some(track) = state.tracks.get_mut(plugin) {
                track.running = None;
                track.failed(plugin, "its restart failed admission", Instant::now());
            }
        }
    }
    shared.wake();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_its_ceiling_up_to_a_minute_with_full_jitter() {
        assert_eq!(backoff(1, 1.0), Duration::from_secs(1));
        assert_eq!(backoff(2, 1.0), Duration::from_secs(2));
        assert_eq!(backoff(3, 1.0), Duration::from_secs(4));
        assert_eq!(backoff(6, 1.0), Duration::from_secs(32));
        assert_eq!(backoff(7, 1.0), Duration::from_secs(60));
        assert_eq!(backoff(100, 1.0), Duration::from_secs(60));
        assert_eq!(backoff(u32::MAX, 1.0), Duration::from_secs(60));
        assert_eq!(backoff(5, 0.0), Duration::ZERO);
        assert_eq!(backoff(3, 0.5), Duration::from_secs(2));
        // Full jitter: anywhere under the ceiling.
        for _ in 0..100 {
            let unit = random_unit();
            assert!((0.0..1.0).contains(&unit), "{unit}");
            assert!(backoff(4, unit) < Duration::from_secs(8));
        }
    }

    fn track(max: u32) -> Track {
        Track {
            policy: RestartPolicy {
                restart: Restart::OnFailure,
                max,
            },
            restarts: 0,
            up_since: None,
            watched: None,
            due: None,
            running: None,
            gave_up: false,
        }
    }

    #[test]
    fn at_most_restart_max_restarts_in_a_row_then_it_stays_down() {
        let now = Instant::now();
        let mut t = track(3);
        for n in 1..=3 {
            t.failed("p", "test", now);
            assert_eq!(t.restarts, n);
            assert!(t.due.is_some_and(|at| at <= now + backoff(n, 1.0)));
            assert!(!t.gave_up);
            t.due = None;
        }
        t.failed("p", "test", now);
        assert!(t.gave_up);
        assert_eq!(t.due, None);
    }

    #[test]
    fn ten_minutes_up_start_a_new_row() {
        let now = Instant::now();
        let mut t = track(2);
        t.failed("p", "test", now);
        t.failed("p", "test", now);
        assert_eq!(t.restarts, 2);
        // Up for nine minutes: the row goes on (and ends).
        t.up_since = now.checked_sub(Duration::from_secs(540));
        t.failed("p", "test", now);
        assert!(t.gave_up);
        let mut t = track(2);
        t.failed("p", "test", now);
        t.failed("p", "test", now);
        // Up for ten minutes: a new row.
        t.up_since = now.checked_sub(RESTART_RESET_AFTER);
        if t.up_since.is_some() {
            t.failed("p", "test", now);
            assert!(!t.gave_up);
            assert_eq!(t.restarts, 1);
        }
    }
}
