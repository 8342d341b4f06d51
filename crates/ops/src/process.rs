//! This process's resident memory, threads and open descriptors, read from `/proc` when a
//! scrape asks (Linux; elsewhere nothing is reported).

/// One reading of the process's resources.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ProcessStats {
    /// Resident set size in bytes.
    pub resident_bytes: Option<u64>,
    /// Threads.
    pub threads: Option<u64>,
    /// Open file descriptors.
    pub open_fds: Option<u64>,
}

/// Reads `/proc/self/status` (VmRSS, Threads) and counts `/proc/self/fd`.
pub(crate) fn read() -> ProcessStats {
    let mut stats = ProcessStats::default();
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        for line in status.lines() {
            if let Some(rest) = line.strip_prefix("VmRSS:") {
                stats.resident_bytes = kib(rest).map(|k| k * 1024);
            } else if let Some(rest) = line.strip_prefix("Threads:") {
                stats.threads = rest.trim().parse().ok();
            }
        }
    }
    if let Ok(entries) = std::fs::read_dir("/proc/self/fd") {
        // The directory handle itself is one of the entries: not counted.
        let count = entries.filter(Result::is_ok).count() as u64;
        stats.open_fds = Some(count.saturating_sub(1));
    }
    stats
}

/// `  1234 kB` → 1234.
fn kib(field: &str) -> Option<u64> {
    field.trim().strip_suffix("kB")?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_fields() {
        assert_eq!(kib("   3496 kB"), Some(3496));
        assert_eq!(kib("x"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reads_this_process() {
        let stats = read();
        assert!(stats.resident_bytes.unwrap() > 0);
        assert!(stats.threads.unwrap() >= 1);
        assert!(stats.open_fds.unwrap() >= 3);
    }
}
