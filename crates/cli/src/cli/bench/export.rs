//! What a bench writes besides its report: HdrHistogram percentile-distribution files
//! (`--export-hgrm`), every call as CSV (`--export-csv`), and saved baselines
//! (`--save-baseline`, `--baseline`).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::inference::RoundStat;
use super::record::Series;

/// Percentile ticks per half distance of the distribution files (HdrHistogram's default).
const TICKS_PER_HALF_DISTANCE: u32 = 5;

/// HdrHistogram's percentile-distribution text of `histogram` (recorded in nanoseconds),
/// values in microseconds: the `Value Percentile TotalCount 1/(1-Percentile)` table and its
/// `#[Mean …]`, `#[Max …]`, `#[Buckets …]` footer, as the reference implementation's
/// `outputPercentileDistribution` writes it (and its plotter reads it).
pub(super) fn hgrm(histogram: &Histogram<u64>) -> String {
    let scale = 1_000.0;
    let digits = usize::from(histogram.sigfig());
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let mut total = 0u64;
    for v in histogram.iter_quantiles(TICKS_PER_HALF_DISTANCE) {
        total += v.count_since_last_iteration();
        let q = v.quantile_iterated_to();
        let value = v.value_iterated_to() as f64 / scale;
        if q < 1.0 {
            let _ = writeln!(
                out,
                "{value:12.digits$} {q:2.12} {total:10} {:14.2}",
                1.0 / (1.0 - q)
            );
        } else {
            let _ = writeln!(out, "{value:12.digits$} {q:2.12} {total:10}");
        }
    }
    let sub_buckets = 2u64.pow(
        (2.0 * 10f64.powi(i32::from(histogram.sigfig())))
            .log2()
            .ceil() as u32,
    );
    let _ = writeln!(
        out,
        "#[Mean    = {:12.digits$}, StdDeviation   = {:12.digits$}]",
        histogram.mean() / scale,
        histogram.stdev() / scale
    );
    let _ = writeln!(
        out,
        "#[Max     = {:12.digits$}, Total count    = {:12}]",
        histogram.max() as f64 / scale,
        histogram.len()
    );
    let _ = writeln!(
        out,
        "#[Buckets = {:12}, SubBuckets     = {:12}]",
        histogram.buckets(),
        sub_buckets
    );
    out
}

/// The file of target `name` when several targets share `path`: `-NAME` before the
/// extension (`out.hgrm` → `out-python.hgrm`), the name reduced to file-name characters.
pub(super) fn per_target_path(path: &Path, name: &str, several: bool) -> PathBuf {
    if !several {
        return path.to_path_buf();
    }
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("bench");
    let file = match path.extension().and_then(|e| e.to_str()) {
        Some(ext) => format!("{stem}-{safe}.{ext}"),
        None => format!("{stem}-{safe}"),
    };
    path.with_file_name(file)
}

/// Writes `text` to `path`, saying which file could not be written.
pub(super) fn write_file(path: &Path, text: &[u8]) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Every call as a CSV row `target,round,latency_ns,outcome` (rounds and load steps counted
/// from 1), after a header.
pub(super) fn csv(path: &Path, targets: &[(&str, &Series)]) -> Result<(), String> {
    let fail = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let file = std::fs::File::create(path).map_err(fail)?;
    let mut out = std::io::BufWriter::new(file);
    writeln!(out, "target,round,latency_ns,outcome").map_err(fail)?;
    for (name, series) in targets {
        let name = csv_field(name);
        for r in 0..series.ends.len() {
            for i in series.round(r) {
                writeln!(
                    out,
                    "{name},{},{},{}",
                    r + 1,
                    series.samples[i],
                    series.outcomes[i].as_str()
                )
                .map_err(fail)?;
            }
        }
    }
    out.flush().map_err(fail)
}

/// A CSV field, quoted when it must be.
fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// A saved run: per target, each round's median and interval.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Baseline {
    /// Format version.
    pub version: u32,
    /// The machine's host name when saved.
    pub host: String,
    /// Seconds since the Unix epoch when saved.
    pub saved_at: u64,
    pub tool: String,
    pub calls_per_round: usize,
    pub targets: Vec<BaselineTarget>,
}

/// One target of a saved run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct BaselineTarget {
    pub name: String,
    pub rounds: Vec<RoundStat>,
}

/// The directory baselines are kept in: `$WEBCODEX_BENCH_DIR`, else
/// `$XDG_DATA_HOME/webcodex-plugin/bench`, else `~/.local/share/webcodex-plugin/bench`
/// (Windows: `%LOCALAPPDATA%\webcodex-plugin\bench`).
pub(super) fn baseline_dir() -> Result<PathBuf, String> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = var("WEBCODEX_BENCH_DIR") {
        return Ok(dir);
    }
    let data = var("XDG_DATA_HOME")
        .or_else(|| var("HOME").map(|h| h.join(".local").join("share")))
        .or_else(|| var("LOCALAPPDATA"))
        .ok_or("no per-user data directory: set WEBCODEX_BENCH_DIR to where baselines go")?;
    Ok(data.join("webcodex-plugin").join("bench"))
}

/// The file of baseline `name` (letters, digits, `.`, `_`, `-`; 1 to 64, not starting with `.`).
pub(super) fn baseline_path(name: &str) -> Result<PathBuf, String> {
    let fine = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !fine {
        return Err(format!(
            "baseline name `{name}`: use 1 to 64 letters, digits, `.`, `_` or `-`, not starting \
             with `.`"
        ));
    }
    Ok(baseline_dir()?.join(format!("{name}.json")))
}

/// Saves `baseline` as `name`, replacing an earlier one of that name.
pub(super) fn save_baseline(name: &str, baseline: &Baseline) -> Result<PathBuf, String> {
    let path = baseline_path(name)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let text = serde_json::to_vec_pretty(baseline).map_err(|e| e.to_string())?;
    let temp = path.with_extension("json.tmp");
    write_file(&temp, &text)?;
    std::fs::rename(&temp, &path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(path)
}

/// Loads baseline `name`.
pub(super) fn load_baseline(name: &str) -> Result<Baseline, String> {
    let path = baseline_path(name)?;
    let text = std::fs::read(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "no baseline `{name}` in {} (save one with --save-baseline {name})",
            path.parent().unwrap_or(&path).display()
        ),
        _ => format!("cannot read {}: {e}", path.display()),
    })?;
    serde_json::from_slice(&text)
        .map_err(|e| format!("{} is not a bench baseline: {e}", path.display()))
}

/// This machine's host name (empty where unknown).
pub(super) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .or_else(|_| std::env::var("COMPUTERNAME"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_distribution_file_has_the_table_and_the_footer() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let text = hgrm(&h);
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        assert_eq!(
            header,
            ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
        );
        assert_eq!(lines.next(), Some(""));
        let rows: Vec<Vec<&str>> = text
            .lines()
            .skip(2)
            .take_while(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows[0][0], "1.000");
        let last = rows.last().unwrap();
        assert_eq!(last.len(), 3, "{last:?}");
        assert_eq!(
            (last[0], last[1], last[2]),
            ("1000.447", "1.000000000000", "1000")
        );
        assert!(
            text.contains("#[Mean    =      500.505, StdDeviation   =      288.676]"),
            "{text}"
        );
        // HdrHistogram reports a value as the highest of its equivalence range (3 digits).
        assert!(
            text.contains("#[Max     =     1000.447, Total count    =         1000]"),
            "{text}"
        );
        assert!(text.contains("SubBuckets     =         2048]"), "{text}");
    }

    #[test]
    fn several_targets_get_their_name_before_the_extension() {
        let p = Path::new("/tmp/out.hgrm");
        assert_eq!(per_target_path(p, "py", false), p);
        assert_eq!(
            per_target_path(p, "py@mcp/x", true),
            Path::new("/tmp/out-py_mcp_x.hgrm")
        );
        assert_eq!(per_target_path(Path::new("o"), "a", true), Path::new("o-a"));
    }

    #[test]
    fn baseline_names_are_file_names() {
        assert!(baseline_path("../x").is_err());
        assert!(baseline_path(".hidden").is_err());
        assert!(baseline_path("").is_err());
    }
}
