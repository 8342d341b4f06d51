//! The process table: zombies, orphans, leftovers of a retired plugin's group, and waits for a
//! process to be gone or reaped.

use super::*;

/// `(ppid, state)` of a process from `/proc/PID/stat`, or `None` when it does not exist.
pub fn proc_stat(pid: i32) -> Option<(i32, char)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces: parse after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((ppid, state))
}

/// Every zombie whose parent is this test process.
pub fn zombie_children_of_self() -> Vec<i32> {
    zombie_children_of(std::process::id() as i32)
}

/// Asserts that the test process keeps no zombie child. Tests of one binary run in parallel:
/// another test's child may be a zombie for the moment between its exit and that test's wait
/// (longer on a loaded machine), so a zombie must persist through a bounded settling time to
/// count. A zombie nobody reaps persists, so this still catches every leak.
pub fn assert_no_zombie_children_of_self() {
    let deadline = Instant::now() + GENEROUS;
    let mut zombies = zombie_children_of_self();
    while !zombies.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        zombies = zombie_children_of_self();
    }
    assert!(
        zombies.is_empty(),
        "zombie children of the test: {zombies:?}"
    );
}

/// Every zombie whose parent is `parent`.
pub fn zombie_children_of(parent: i32) -> Vec<i32> {
    proc_table()
        .into_iter()
        .filter(|p| p.ppid == parent && p.state == 'Z')
        .map(|p| p.pid)
        .collect()
}

/// One row of the process table, from `/proc/PID/stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcEntry {
    /// Process id.
    pub pid: i32,
    /// Parent process id.
    pub ppid: i32,
    /// Process group id.
    pub pgrp: i32,
    /// State letter (`R`, `S`, `Z`, …).
    pub state: char,
}

/// The process table entry of `pid`, or `None` when it does not exist.
pub fn proc_entry(pid: i32) -> Option<ProcEntry> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces: parse after the last ')'.
    let mut fields = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(ProcEntry {
        pid,
        ppid,
        pgrp,
        state,
    })
}

/// Every process in `/proc`.
pub fn proc_table() -> Vec<ProcEntry> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(proc_entry)
        .collect()
}

/// Which leftovers a check looks for after a fault.
#[derive(Debug, Clone, Copy)]
pub enum ChildScope {
    /// Only the given process groups: for tests inside the shared test process, where other
    /// tests' plugins are legitimate children.
    Groups,
    /// Every zombie child of the host too: for a host process of its own (the CLI binary), whose
    /// children are exactly its plugins.
    AllZombieChildren,
}

/// Processes that break "no zombie, no orphan" for `host` after the plugins whose process
/// groups are `groups` were retired: a live member of one of those groups (an orphan that
/// escaped the group kill), or a zombie whose parent is `host` (not reaped) that belongs to
/// those groups or, with [`ChildScope::AllZombieChildren`], to any group.
#[cfg(unix)]
pub fn leftovers(host: i32, groups: &[i32], scope: ChildScope) -> Vec<ProcEntry> {
    proc_table()
        .into_iter()
        .filter(|p| {
            let ours = groups.contains(&p.pgrp) || groups.contains(&p.pid);
            if p.state == 'Z' {
                p.ppid == host && (ours || matches!(scope, ChildScope::AllZombieChildren))
            } else {
                ours
            }
        })
        .collect()
}

/// Windows: the running processes of the plugins' trees (a plugin's job holds exactly its
/// tree; Windows has no zombies, so `host` and `scope` do not matter). A process created after
/// this call is not counted (see `windows::live_trees`: ids are reused).
#[cfg(windows)]
pub fn leftovers(host: i32, groups: &[i32], scope: ChildScope) -> Vec<ProcEntry> {
    leftovers_since(host, groups, scope, SystemTime::now())
}

/// [`leftovers`] for a check that began at `check_started`. Unix ignores the time.
#[cfg(unix)]
fn leftovers_since(
    host: i32,
    groups: &[i32],
    scope: ChildScope,
    _check_started: SystemTime,
) -> Vec<ProcEntry> {
    leftovers(host, groups, scope)
}

/// [`leftovers`] for a check that began at `check_started`: a process created later reused an
/// id and is not a leftover (see `windows::live_trees`).
#[cfg(windows)]
fn leftovers_since(
    _host: i32,
    groups: &[i32],
    _scope: ChildScope,
    check_started: SystemTime,
) -> Vec<ProcEntry> {
    windows::live_trees(groups, windows::filetime(check_started))
}

/// How long retirement may take to kill and reap a plugin's tree (the termination bound).
pub const TERMINATION_BOUND: Duration = Duration::from_secs(1);

/// Asserts, polling for at most [`crate::GENEROUS`], that no leftover of the retired plugin
/// groups `groups` remains for `host` (see [`leftovers`]); fails listing the offenders. The
/// runtime's bound is [`TERMINATION_BOUND`]; the test waits longer, since a machine at load 12
/// was seen to take over a second to run a kill and its reap (the bound is a benchmark's
/// matter, the test's is that nothing is left).
pub fn assert_no_leftovers(host: i32, groups: &[i32], scope: ChildScope) {
    let check_started = SystemTime::now();
    let deadline = Instant::now() + crate::GENEROUS;
    loop {
        let found = leftovers_since(host, groups, scope, check_started);
        if found.is_empty() {
            return;
        }
        if Instant::now() >= deadline {
            panic!(
                "left behind {:?} after the fault (host {host}, groups {groups:?}): {found:?}",
                crate::GENEROUS
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// [`assert_no_leftovers`] for plugins this test process hosts, identified by their process ids
/// (each plugin leads its own process group).
pub fn assert_plugins_cleaned_up(plugin_pids: &[i32]) {
    assert_no_leftovers(std::process::id() as i32, plugin_pids, ChildScope::Groups);
}

/// The plugin process ids recorded (`self PID` lines, with any words after the PID) in a
/// `FIXTURE_PIDS` file (or the inspector's Python plugin's `INSPECTOR_PIDS`).
pub fn recorded_plugin_pids(pid_file: &Path) -> Vec<i32> {
    std::fs::read_to_string(pid_file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            l.strip_prefix("self ")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// Every process id recorded in a `FIXTURE_PIDS` file: the plugins (`self PID`, with any words
/// after the PID) and their grandchildren (`grandchild PID`).
pub fn recorded_pids(pid_file: &Path) -> Vec<i32> {
    std::fs::read_to_string(pid_file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect()
}

/// Asserts that each of `pids` stops running within [`GENEROUS`]; `what` names them.
pub fn assert_all_gone(pids: &[i32], what: &str) {
    for &pid in pids {
        assert!(wait_gone(pid), "{what} {pid} still runs");
    }
}

/// True when `pid` no longer runs: `/proc/PID` is missing or it is a zombie.
#[cfg(unix)]
pub fn process_is_gone(pid: i32) -> bool {
    !matches!(proc_stat(pid), Some((_, state)) if state != 'Z')
}

/// True when `pid` no longer runs (Windows: no such process, or it has exited).
#[cfg(windows)]
pub fn process_is_gone(pid: i32) -> bool {
    windows::process_is_gone(pid)
}

/// Waits (bounded by [`GENEROUS`]) until `pid` no longer runs.
pub fn wait_gone(pid: i32) -> bool {
    let deadline = Instant::now() + GENEROUS;
    loop {
        if process_is_gone(pid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits (bounded by [`GENEROUS`]) until `pid` has been reaped: not even a zombie is left in the
/// process table (Windows: as [`wait_gone`]).
pub fn wait_reaped(pid: i32) -> bool {
    let deadline = Instant::now() + GENEROUS;
    loop {
        #[cfg(not(windows))]
        let reaped = proc_stat(pid).is_none();
        #[cfg(windows)]
        let reaped = process_is_gone(pid);
        if reaped {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Asserts that the plugin process `pid` (a child of this test process) is gone and was reaped.
/// Also checks the plugin's process group, within the termination bound.
pub fn assert_reaped(pid: i32) {
    assert_plugins_cleaned_up(&[pid]);
}
