//! The idle connections of a client, under the rule that keeps "not sent" provable
//! (docs/DECISIONS.md D-CLIENT-1, D-CLIENT-2): a connection goes back only when its answer was read
//! to the end and the server did not say it would close it; it is handed out again only while it
//! has been idle less than [`MAX_IDLE_AGE`], and only after a probe that does not block found it
//! open with nothing unread. A connection the probe refuses is dropped before anything is
//! written on it, so the request that asked for it is still unsent.

use std::time::Instant;

use parking_lot::Mutex;

use super::MAX_IDLE_AGE;

/// The most idle connections a client keeps (all to its one server).
pub(super) const MAX_IDLE_CONNECTIONS: usize = 8;

/// A connection the pool can ask whether it may carry a request.
pub(super) trait Probe {
    /// True when the connection is open and holds no byte nobody asked for; must not block.
    fn is_open(&mut self) -> bool;
}

/// One idle connection and when it went idle.
struct Idle<C> {
    conn: C,
    since: Instant,
}

/// At most [`MAX_IDLE_CONNECTIONS`] idle connections, the most recently used handed out first.
pub(super) struct Pool<C> {
    idle: Mutex<Vec<Idle<C>>>,
}

impl<C: Probe> Pool<C> {
    pub(super) fn new() -> Pool<C> {
        Pool {
            idle: Mutex::new(Vec::new()),
        }
    }

    /// A kept connection that may carry a request now, if any.
    pub(super) fn take(&self) -> Option<C> {
        self.take_at(Instant::now())
    }

    /// [`Pool::take`] at `now`: the most recently used connection idle less than
    /// [`MAX_IDLE_AGE`] that passes the probe. Every connection older than that, and every one
    /// the probe refuses, is dropped (outside the lock).
    fn take_at(&self, now: Instant) -> Option<C> {
        loop {
            let idle = {
                let mut idle = self.idle.lock();
                let fresh = idle
                    .iter()
                    .position(|i| now.saturating_duration_since(i.since) < MAX_IDLE_AGE);
                // They are in the order they went idle: all before the first fresh one are
                // stale.
                let stale: Vec<Idle<C>> = match fresh {
                    Some(0) => Vec::new(),
                    Some(n) => idle.drain(..n).collect(),
                    None => std::mem::take(&mut *idle),
                };
                let newest = idle.pop();
                drop(idle);
                drop(stale);
                newest?
            };
            let mut conn = idle.conn;
            if conn.is_open() {
                return Some(conn);
            }
        }
    }

    /// Keeps `conn` for a later request (its answer was read to the end and it may carry
    /// another); beyond [`MAX_IDLE_CONNECTIONS`], the one idle longest is dropped.
    pub(super) fn put(&self, conn: C) {
        self.put_with(conn, Instant::now);
    }

    #[cfg(test)]
    fn put_at(&self, conn: C, since: Instant) {
        self.put_with(conn, || since);
    }

    /// Keeps `conn`, idle from `now()` read under the lock, so the list stays in the order the
    /// connections went idle.
    fn put_with(&self, conn: C, now: impl FnOnce() -> Instant) {
        let mut idle = self.idle.lock();
        let since = now();
        let dropped = (idle.len() >= MAX_IDLE_CONNECTIONS).then(|| idle.remove(0));
        idle.push(Idle { conn, since });
        drop(idle);
        drop(dropped);
    }

    /// How many connections are idle (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.idle.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// A connection with a name, whose probe says `open`, counting the probes.
    struct Fake {
        name: &'static str,
        open: bool,
        probes: Arc<AtomicUsize>,
    }

    impl Probe for Fake {
        fn is_open(&mut self) -> bool {
            self.probes.fetch_add(1, Ordering::SeqCst);
            self.open
        }
    }

    fn fake(name: &'static str, open: bool, probes: &Arc<AtomicUsize>) -> Fake {
        Fake {
            name,
            open,
            probes: Arc::clone(probes),
        }
    }

    #[test]
    fn the_newest_open_connection_is_handed_out_after_its_probe() {
        let probes = Arc::new(AtomicUsize::new(0));
        let pool = Pool::new();
        let t0 = Instant::now();
        assert!(pool.take_at(t0).is_none());
        pool.put_at(fake("a", true, &probes), t0);
        pool.put_at(fake("b", true, &probes), t0 + Duration::from_millis(10));
        let got = pool.take_at(t0 + Duration::from_millis(20)).unwrap();
        assert_eq!(got.name, "b");
        assert_eq!(
            probes.load(Ordering::SeqCst),
            1,
            "probed before it is handed out"
        );
        assert_eq!(
            pool.take_at(t0 + Duration::from_millis(20)).unwrap().name,
            "a"
        );
        assert!(pool.take_at(t0).is_none());
    }

    #[test]
    fn a_connection_the_probe_refuses_is_dropped_and_the_next_one_tried() {
        let probes = Arc::new(AtomicUsize::new(0));
        let pool = Pool::new();
        let t0 = Instant::now();
        pool.put_at(fake("open", true, &probes), t0);
        pool.put_at(fake("closed", false, &probes), t0);
        assert_eq!(pool.take_at(t0).unwrap().name, "open");
        assert_eq!(probes.load(Ordering::SeqCst), 2);
        assert_eq!(pool.len(), 0, "the closed one is gone");
        pool.put_at(fake("closed", false, &probes), t0);
        assert!(pool.take_at(t0).is_none());
        assert_eq!(pool.len(), 0);
    }

    #[test]
    fn a_connection_idle_for_max_idle_age_is_never_handed_out() {
        let probes = Arc::new(AtomicUsize::new(0));
        let pool = Pool::new();
        let t0 = Instant::now();
        pool.put_at(fake("old", true, &probes), t0);
        pool.put_at(fake("young", true, &probes), t0 + Duration::from_secs(1));
        let later = t0 + MAX_IDLE_AGE;
        assert_eq!(pool.take_at(later).unwrap().name, "young");
        assert_eq!(pool.len(), 0, "the old one was dropped unprobed");
        assert_eq!(probes.load(Ordering::SeqCst), 1);
        pool.put_at(fake("young", true, &probes), t0 + Duration::from_secs(1));
        let just_under = t0 + Duration::from_secs(1) + MAX_IDLE_AGE - Duration::from_nanos(1);
        assert!(pool.take_at(just_under).is_some());
        pool.put_at(fake("young", true, &probes), t0 + Duration::from_secs(1));
        assert!(pool
            .take_at(t0 + Duration::from_secs(1) + MAX_IDLE_AGE)
            .is_none());
        assert_eq!(pool.len(), 0);
    }

    #[test]
    fn at_most_eight_are_kept() {
        let probes = Arc::new(AtomicUsize::new(0));
        let pool = Pool::new();
        let t0 = Instant::now();
        let names = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"];
        for name in names {
            pool.put_at(fake(name, true, &probes), t0);
        }
        assert_eq!(pool.len(), MAX_IDLE_CONNECTIONS);
        let mut out = Vec::new();
        while let Some(c) = pool.take_at(t0) {
            out.push(c.name);
        }
        assert_eq!(out, ["9", "8", "7", "6", "5", "4", "3", "2"]);
    }
}
