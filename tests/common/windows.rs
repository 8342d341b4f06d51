//! Windows process-table checks for the shared test helpers (Wine included): there is no
//! `/proc` and no zombie; a plugin's "group" is its process tree, found through the parent
//! process ids of a ToolHelp snapshot.

use windows_sys::Win32::Foundation::{CloseHandle, INVALID_HANDLE_VALUE, WAIT_OBJECT_0};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, Process32FirstW, Process32NextW, PROCESSENTRY32W, TH32CS_SNAPPROCESS,
};
use windows_sys::Win32::System::Threading::{
    OpenProcess, WaitForSingleObject, PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SYNCHRONIZE,
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
    let Ok(pid) = u32::try_from(pid) else {
        return true;
    };
    // SAFETY: plain calls; the handle is closed.
    unsafe {
        let handle = OpenProcess(
            PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_SYNCHRONIZE,
            0,
            pid,
        );
        if handle.is_null() {
            return true;
        }
        let exited = WaitForSingleObject(handle, 0) == WAIT_OBJECT_0;
        CloseHandle(handle);
        exited
    }
}

/// The running processes of the trees rooted at `roots` (the roots included), each reported
/// with its root as `pgrp`.
pub fn live_trees(roots: &[i32]) -> Vec<ProcEntry> {
    let table = process_table();
    let mut found: Vec<ProcEntry> = Vec::new();
    for &root in roots {
        let Ok(root_pid) = u32::try_from(root) else {
            continue;
        };
        let mut frontier = vec![root_pid];
        let mut seen = vec![root_pid];
        while let Some(parent) = frontier.pop() {
            for &(pid, ppid) in &table {
                if ppid == parent && !seen.contains(&pid) {
                    seen.push(pid);
                    frontier.push(pid);
                }
            }
        }
        for &(pid, ppid) in &table {
            if seen.contains(&pid) && !process_is_gone(pid as i32) {
                found.push(ProcEntry {
                    pid: pid as i32,
                    ppid: ppid as i32,
                    pgrp: root,
                    state: 'R',
                });
            }
        }
    }
    found
}
