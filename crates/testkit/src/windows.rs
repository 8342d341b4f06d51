//! Windows process-table checks for the shared test helpers (Wine included): there is no
//! `/proc` and no zombie; a plugin's "group" is its process tree, found through the parent
//! process ids of a ToolHelp snapshot.

use std::time::{SystemTime, UNIX_EPOCH};

use windows_sys::Win32::Foundation::{CloseHandle, FILETIME, INVALID_HANDLE_VALUE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, PROCESSENTRY32W, TH32CS_SNAPPROCESS,
};
use windows_sys::Win32::System::Threading::{
    GetProcessTimes, OpenProcess, WaitForSingleObject, PROCESS_QUERY_LIMITED_INFORMATION,
    PROCESS_SYNCHRONIZE,
};

use super::ProcEntry;

/// `(pid, parent pid)` of every running process.
pub fn process_table() -> Vec<(u32, u32)> {
    let mut table = Vec::new();
    // SAFETY: plain calls; the entry's dwSize is set before the first use, the snapshot is closed.
    unsafe {
        let snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
        if snapshot == INVALID_HANDLE_VALUE {
            return table;
        }
        let mut entry: PROCESSENTRY32W = std::mem::zeroed();
        entry.dwSize = std::mem::size_of::<PROCESSENTRY32W>() as u32;
        let mut more = Process32FirstW(snapshot, &mut entry) != 0;
        while more {
            table.push((entry.th32ProcessID, entry.th32ParentProcessID));
            more = Process32NextW(snapshot, &mut entry) != 0;
        }
        CloseHandle(snapshot);
    }
    table
}

/// True when `pid` no longer runs (no such process, or it has exited).
pub fn process_is_gone(pid: i32) -> bool {
    u32::try_from(pid).map_or(true, |pid| running_since(pid).is_none())
}

/// The creation time (FILETIME ticks: 100 ns since 1601) of the process `pid` while it runs;
/// `None` when there is no such process or it has exited.
fn running_since(pid: u32) -> Option<u64> {
    // SAFETY: plain calls on a handle opened here and closed before returning; the FILETIME
    // out-parameters are zeroed locals.
    unsafe {
        let handle = OpenProcess(
            PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_SYNCHRONIZE,
            0,
            pid,
        );
        if handle.is_null() {
            return None;
        }
        let exited = WaitForSingleObject(handle, 0) == WAIT_OBJECT_0;
        let [mut created, mut ended, mut kernel, mut user]: [FILETIME; 4] = std::mem::zeroed();
        let timed = GetProcessTimes(handle, &mut created, &mut ended, &mut kernel, &mut user) != 0;
        CloseHandle(handle);
        if exited || !timed {
            return None;
        }
        Some((u64::from(created.dwHighDateTime) << 32) | u64::from(created.dwLowDateTime))
    }
}

/// `time` in FILETIME ticks.
pub fn filetime(time: SystemTime) -> u64 {
    /// FILETIME ticks from 1601-01-01 to the Unix epoch.
    const UNIX_EPOCH_TICKS: u64 = 116_444_736_000_000_000;
    let since_epoch = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    UNIX_EPOCH_TICKS + (since_epoch.as_nanos() / 100) as u64
}

/// The running processes of the trees rooted at `roots` (the roots included), each reported
/// with its root as `pgrp`; `check_started` is when the caller's check began (FILETIME ticks).
///
/// Windows never reparents: a process keeps the id of a parent that exited, and that id can
/// be given to a new process. Wine hands out small ids and reuses them, so a plugin can get
/// the id that was once Wine's `wineboot.exe`, whose `services.exe` (and its service
/// processes) still name it as their parent. A process therefore counts as a child only when
/// it was created no earlier than its parent (the usual ToolHelp rule) and no earlier than
/// this test process (which started every plugin), and a process created after the check
/// began is a newcomer that reused an id, never a leftover.
pub fn live_trees(roots: &[i32], check_started: u64) -> Vec<ProcEntry> {
    let table = process_table();
    let host_started = running_since(std::process::id()).unwrap_or(0);
    let mut found: Vec<ProcEntry> = Vec::new();
    for &root in roots {
        let Ok(root_pid) = u32::try_from(root) else {
            continue;
        };
        // The root's own creation time bounds its children; an exited root's is unknown, so
        // the test process's start is the bound.
        let root_bound = match running_since(root_pid) {
            Some(created) if created > check_started => continue,
            Some(created) => {
                found.push(ProcEntry {
                    pid: root,
                    ppid: 0,
                    pgrp: root,
                    state: 'R',
                });
                created
            }
            None => host_started,
        };
        let mut frontier = vec![(root_pid, root_bound)];
        let mut seen = vec![root_pid];
        while let Some((parent, parent_created)) = frontier.pop() {
            for &(pid, ppid) in &table {
                if ppid != parent || seen.contains(&pid) {
                    continue;
                }
                match running_since(pid) {
                    Some(created) if created >= parent_created && created <= check_started => {
                        seen.push(pid);
                        frontier.push((pid, created));
                        found.push(ProcEntry {
                            pid: pid as i32,
                            ppid: ppid as i32,
                            pgrp: root,
                            state: 'R',
                        });
                    }
                    // Older than its parent, or newer than the check: not of this tree.
                    Some(_) => {}
                    // Listed but exited: its children may still be running.
                    None => {
                        seen.push(pid);
                        frontier.push((pid, parent_created));
                    }
                }
            }
        }
    }
    found
}

/// Running processes `(pid, parent pid)` older than this test process whose parent id names
/// no running process, or one created after them (the parent exited; its id may be reused).
/// Wine's `services.exe` names the exited `wineboot.exe`; on Windows, `explorer.exe` names the
/// exited `userinit.exe`.
pub fn processes_naming_an_exited_parent() -> Vec<(u32, u32)> {
    let host_started = running_since(std::process::id()).unwrap_or(u64::MAX);
    process_table()
        .into_iter()
        .filter(|&(pid, ppid)| {
            let Some(created) = running_since(pid) else {
                return false;
            };
            // A parent that is gone, or younger than its child (its pid was reused).
            let orphaned = match running_since(ppid) {
                Some(parent_created) => parent_created > created,
                None => true,
            };
            created < host_started && ppid != 0 && orphaned
        })
        .collect()
}

/// `CREATE_NEW_PROCESS_GROUP`: the child leads a console process group of its own.
pub const NEW_PROCESS_GROUP: u32 = windows_sys::Win32::System::Threading::CREATE_NEW_PROCESS_GROUP;

/// Sends Ctrl-Break to the console process group `group` (the id of the process that leads
/// it). True when it was sent.
pub fn send_ctrl_break(group: u32) -> bool {
    use windows_sys::Win32::System::Console::{GenerateConsoleCtrlEvent, CTRL_BREAK_EVENT};
    // SAFETY: a plain call; the group is a child of this process that was not waited for.
    let sent = unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, group) != 0 };
    if !sent {
        eprintln!(
            "GenerateConsoleCtrlEvent failed: {}",
            std::io::Error::last_os_error()
        );
    }
    sent
}

/// Running descendants of `root` (by parent ids, created after `root`) whose executable file
/// name is `name` (ASCII case ignored).
pub fn descendants_named(root: u32, name: &str) -> Vec<u32> {
    let mut named = Vec::new();
    // SAFETY: as in `process_table`.
    unsafe {
        let snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
        if snapshot == INVALID_HANDLE_VALUE {
            return named;
        }
        let mut entry: PROCESSENTRY32W = std::mem::zeroed();
        entry.dwSize = std::mem::size_of::<PROCESSENTRY32W>() as u32;
        let mut more = Process32FirstW(snapshot, &mut entry) != 0;
        while more {
            let len = entry.szExeFile.iter().position(|&c| c == 0).unwrap_or(0);
            let exe = String::from_utf16_lossy(&entry.szExeFile[..len]);
            if exe.eq_ignore_ascii_case(name) {
                named.push(entry.th32ProcessID);
            }
            more = Process32NextW(snapshot, &mut entry) != 0;
        }
        CloseHandle(snapshot);
    }
    let tree: Vec<i32> = live_trees(&[root as i32], filetime(SystemTime::now()))
        .into_iter()
        .map(|p| p.pid)
        .collect();
    named.retain(|pid| tree.contains(&(*pid as i32)));
    named
}
