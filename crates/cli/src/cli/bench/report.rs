//! A closed-loop run from start to report: open the targets, run the rounds, analyse, compare
//! (with each other and with a baseline), export, and print (human or one JSON line).

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::closed;
use super::export::{self, Baseline, BaselineTarget};
use super::inference::{self, Interval};
use super::plot;
use super::record::{self, Analysis, Series, PERCENTILES};
use super::targets::{self, CallSpec, Opened};
use super::{BenchFlags, Plan};
use crate::cli::{EXIT_FAILURE, EXIT_OK};

/// The result-line keys every harness reads first, then everything else.
#[derive(Serialize)]
pub(super) struct TargetJson {
    pub name: String,
    pub n: usize,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
    pub calls_per_s: f64,
    pub rss_kb: u64,
    #[serde(flatten)]
    pub more: Map<String, Value>,
}

/// Opens every target with `lanes` lanes; on a failure closes those already open.
pub(super) fn open_all(plan: &Plan, f: &BenchFlags, lanes: usize) -> Result<Vec<Opened>, String> {
    let call = CallSpec {
        tool: &f.tool,
        arguments: &plan.arguments,
        token: plan.token.as_deref(),
    };
    let mut opened = Vec::with_capacity(plan.specs.len());
    for spec in &plan.specs {
        match targets::open(spec, lanes, &call) {
            Ok(o) => opened.push(o),
            Err(e) => {
                opened.into_iter().for_each(Opened::close);
                return Err(e);
            }
        }
    }
    Ok(opened)
}

/// Runs the closed loop and reports; the exit code.
pub(super) fn run(f: &BenchFlags, plan: &Plan) -> Result<i32, String> {
    // Read before anything else touches the disk: a bad name fails before minutes of calls.
    let baseline = f
        .baseline
        .as_deref()
        .map(export::load_baseline)
        .transpose()?;
    let clock_ns = record::clock_cost_ns();
    let opened = open_all(plan, f, 1)?;
    let lanes: Vec<&targets::Lane> = opened.iter().map(|o| &o.lanes[0]).collect();
    let result = closed::run(
        &lanes,
        &closed::Plan {
            n: plan.n,
            rounds: plan.rounds,
            warmup: f.warmup,
        },
    );
    drop(lanes);
    opened.into_iter().for_each(Opened::close);
    let series = result?;
    let analyses: Vec<Analysis> = series
        .iter()
        .map(|s| record::analyse(s, plan.rounds > 1))
        .collect();
    let names: Vec<&str> = plan.specs.iter().map(|s| s.name.as_str()).collect();
    export_all(f, &names, &series, &analyses)?;
    let against: Vec<Option<Interval>> = match &baseline {
        Some(b) => names
            .iter()
            .zip(&analyses)
            .map(|(name, a)| {
                b.targets
                    .iter()
                    .find(|t| t.name == *name)
                    .map(|t| inference::ratio_interval(&t.rounds, &a.rounds))
            })
            .collect(),
        None => vec![None; names.len()],
    };
    let saved = match &f.save_baseline {
        Some(name) => Some(export::save_baseline(
            name,
            &Baseline {
                version: 1,
                host: export::host_name(),
                saved_at: std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
                tool: f.tool.clone(),
                calls_per_round: plan.n,
                targets: names
                    .iter()
                    .zip(&analyses)
                    .map(|(name, a)| BaselineTarget {
                        name: name.to_string(),
                        rounds: a.rounds.clone(),
                    })
                    .collect(),
            },
        )?),
        None => None,
    };
    let ratios: Vec<Option<Interval>> = analyses
        .iter()
        .enumerate()
        .map(|(i, a)| (i > 0).then(|| inference::ratio_interval(&analyses[0].rounds, &a.rounds)))
        .collect();
    let context = Context {
        names: &names,
        analyses: &analyses,
        ratios: &ratios,
        against: &against,
        baseline: f.baseline.as_deref().zip(baseline.as_ref()),
        clock_ns,
        plan,
        tool: &f.tool,
    };
    if f.json {
        println!("{}", json_line(&context));
    } else {
        print_human(&context);
        if let Some(path) = saved {
            println!(
                "saved baseline `{}` in {}",
                f.save_baseline.as_deref().unwrap_or(""),
                path.display()
            );
        }
    }
    let erred = analyses.iter().any(|a| a.tool_errors + a.failures > 0);
    Ok(if f.fail_on_error && erred {
        EXIT_FAILURE
    } else {
        EXIT_OK
    })
}

/// Writes the exports the flags ask for.
pub(super) fn export_all(
    f: &BenchFlags,
    names: &[&str],
    series: &[Series],
    analyses: &[Analysis],
) -> Result<(), String> {
    let several = names.len() > 1;
    if let Some(path) = &f.export_hgrm {
        for (name, a) in names.iter().zip(analyses) {
            let target = export::per_target_path(path, name, several);
            export::write_file(&target, export::hgrm(&a.histogram).as_bytes())?;
        }
    }
    if let Some(path) = &f.export_csv {
        let rows: Vec<(&str, &Series)> = names.iter().copied().zip(series).collect();
        export::csv(path, &rows)?;
    }
    if let Some(path) = &f.plot {
        if f.rates.is_none() && f.rate.is_none() {
            let title = format!("`{}` latency by percentile", f.tool);
            let lines: Vec<(&str, &hdrhistogram::Histogram<u64>)> = names
                .iter()
                .copied()
                .zip(analyses.iter().map(|a| &a.histogram))
                .collect();
            export::write_file(path, plot::distribution_svg(&title, &lines)?.as_bytes())?;
        }
    }
    Ok(())
}

/// What the report is made of.
struct Context<'a> {
    names: &'a [&'a str],
    analyses: &'a [Analysis],
    /// Each target's ratio to the first (none for the first).
    ratios: &'a [Option<Interval>],
    /// Each target's ratio to its baseline, when the baseline has it.
    against: &'a [Option<Interval>],
    baseline: Option<(&'a str, &'a Baseline)>,
    clock_ns: f64,
    plan: &'a Plan,
    tool: &'a str,
}

/// Nanoseconds as microseconds rounded to a hundredth (the result line's precision).
pub(super) fn us(ns: f64) -> f64 {
    (ns / 10.0).round() / 100.0
}

/// The figures of one target over all its calls, as JSON keys (added to the result line).
pub(super) fn distribution_json(a: &Analysis) -> Map<String, Value> {
    let mut m = Map::new();
    for (key, _) in PERCENTILES.iter().skip(3).take(2) {
        m.insert(format!("{key}_us"), json!(us(a.at(key) as f64)));
    }
    m.insert("min_us".into(), json!(us(a.min_ns as f64)));
    m.insert("mean_us".into(), json!(us(a.mean_ns)));
    m.insert("stddev_us".into(), json!(us(a.stddev_ns)));
    m.insert("ok".into(), json!(a.ok));
    m.insert("tool_errors".into(), json!(a.tool_errors));
    m.insert("failures".into(), json!(a.failures));
    let table: Vec<Value> = a
        .histogram
        .iter_quantiles(5)
        .map(|v| {
            json!({
                "percentile": (v.quantile_iterated_to() * 1e8).round() / 1e6,
                "us": us(v.value_iterated_to() as f64),
                "count": v.count_since_last_iteration(),
            })
        })
        .collect();
    m.insert("percentiles".into(), Value::Array(table));
    m.insert("warnings".into(), json!(a.warnings));
    m
}

/// One target's JSON object.
fn target_json(c: &Context<'_>, i: usize) -> TargetJson {
    let a = &c.analyses[i];
    let mut more = distribution_json(a);
    let rounds: Vec<f64> = a.rounds.iter().map(|r| us(r.p50_ns)).collect();
    let mut p50s: Vec<f64> = a.rounds.iter().map(|r| r.p50_ns).collect();
    let mean = p50s.iter().sum::<f64>() / p50s.len().max(1) as f64;
    let sd = if p50s.len() < 2 {
        0.0
    } else {
        (p50s.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (p50s.len() - 1) as f64).sqrt()
    };
    p50s.sort_unstable_by(f64::total_cmp);
    more.insert("rounds".into(), json!(c.plan.rounds));
    more.insert("calls_per_round".into(), json!(c.plan.n));
    more.insert("round_p50_us".into(), json!(rounds));
    more.insert("median_p50_us".into(), json!(us(a.median.estimate)));
    more.insert(
        "median_p50_ci_us".into(),
        json!([us(a.median.lo), us(a.median.hi)]),
    );
    more.insert("round_p50_min_us".into(), json!(us(p50s[0])));
    more.insert("round_p50_max_us".into(), json!(us(p50s[p50s.len() - 1])));
    more.insert("round_p50_mean_us".into(), json!(us(mean)));
    more.insert("round_p50_stddev_us".into(), json!(us(sd)));
    if let Some(r) = c.ratios[i] {
        more.insert(
            "ratio_to_first".into(),
            json!({"reference": c.names[0], "ratio": round3(r.estimate), "ci": [round3(r.lo), round3(r.hi)]}),
        );
    }
    if let (Some((name, _)), Some(r)) = (c.baseline, c.against[i]) {
        more.insert(
            "baseline".into(),
            json!({"name": name, "ratio": round3(r.estimate), "ci": [round3(r.lo), round3(r.hi)], "change": change_word(&r)}),
        );
    }
    TargetJson {
        name: c.names[i].to_string(),
        n: a.calls,
        p50_us: us(a.at("p50") as f64),
        p90_us: us(a.at("p90") as f64),
        p99_us: us(a.at("p99") as f64),
        max_us: us(a.at("max") as f64),
        calls_per_s: (a.calls_per_s * 10.0).round() / 10.0,
        rss_kb: a.rss_kb,
        more,
    }
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// `no change`, `slower` or `faster`, for a ratio of new to old (or other to reference).
fn change_word(r: &Interval) -> &'static str {
    if r.contains(1.0) {
        "no change"
    } else if r.lo > 1.0 {
        "slower"
    } else {
        "faster"
    }
}

/// The run as one JSON line: with one target its object (today's keys first), with several
/// `{"targets":[…],"ranking":[…],…}`.
fn json_line(c: &Context<'_>) -> String {
    let mut objects: Vec<TargetJson> = (0..c.names.len()).map(|i| target_json(c, i)).collect();
    let clock = json!((c.clock_ns * 10.0).round() / 10.0);
    if objects.len() == 1 {
        let mut one = objects.remove(0);
        one.more.insert("clock_ns".into(), clock);
        one.more.insert("tool".into(), json!(c.tool));
        return serde_json::to_string(&one).unwrap_or_default();
    }
    let line = json!({
        "tool": c.tool,
        "clock_ns": clock,
        "ranking": ranking(c).iter().map(|&i| c.names[i]).collect::<Vec<_>>(),
        "targets": objects,
    });
    line.to_string()
}

/// Target indices from the lowest median p50 to the highest.
fn ranking(c: &Context<'_>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..c.names.len()).collect();
    order.sort_by(|&a, &b| {
        c.analyses[a]
            .median
            .estimate
            .total_cmp(&c.analyses[b].median.estimate)
    });
    order
}

/// `B: 1.31× [1.27, 1.35] slower than A` (or faster, the ratio turned around).
pub(super) fn ratio_sentence(name: &str, reference: &str, r: &Interval) -> String {
    let (ratio, lo, hi, word) = if r.estimate >= 1.0 {
        (r.estimate, r.lo, r.hi, "slower")
    } else {
        (1.0 / r.estimate, 1.0 / r.hi, 1.0 / r.lo, "faster")
    };
    let same = if r.contains(1.0) {
        " (no significant difference: the interval holds 1)"
    } else {
        ""
    };
    format!("{name}: {ratio:.2}× [{lo:.2}, {hi:.2}] {word} than {reference}{same}")
}

fn print_human(c: &Context<'_>) {
    let p = c.plan;
    for (i, (name, a)) in c.names.iter().zip(c.analyses).enumerate() {
        if i > 0 {
            println!();
        }
        println!(
            "{name}: {} rounds of {} sequential calls of `{}` ({} calls)",
            p.rounds, p.n, c.tool, a.calls
        );
        let rounds: Vec<String> = a
            .rounds
            .iter()
            .map(|r| format!("{:.2}", r.p50_ns / 1e3))
            .collect();
        println!(
            "  p50 {:.2} µs [{:.2}, {:.2}] (median of the rounds' p50s, 95 % interval); rounds: {} µs",
            a.median.estimate / 1e3,
            a.median.lo / 1e3,
            a.median.hi / 1e3,
            rounds.join(" ")
        );
        print_distribution(a);
        for w in &a.warnings {
            println!("  warning: {w}");
        }
    }
    if c.names.len() > 1 {
        println!();
        let order = ranking(c);
        let ranked: Vec<String> = order
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                format!(
                    "{}. {} {:.2} µs",
                    k + 1,
                    c.names[i],
                    c.analyses[i].median.estimate / 1e3
                )
            })
            .collect();
        println!("ranking by median p50: {}", ranked.join("   "));
        for (i, r) in c.ratios.iter().enumerate() {
            if let Some(r) = r {
                println!("  {}", ratio_sentence(c.names[i], c.names[0], r));
            }
        }
    }
    if let Some((name, b)) = c.baseline {
        println!();
        let host = if b.host == export::host_name() {
            "this machine".to_string()
        } else {
            format!("host `{}`, NOT this machine", b.host)
        };
        println!("against baseline `{name}` ({host}):");
        for (i, r) in c.against.iter().enumerate() {
            match r {
                Some(r) if r.contains(1.0) => println!(
                    "  {}: no change ({:.3}× [{:.3}, {:.3}])",
                    c.names[i], r.estimate, r.lo, r.hi
                ),
                Some(r) => println!("  {}", ratio_sentence(c.names[i], "the baseline", r)),
                None => println!("  {}: not in the baseline", c.names[i]),
            }
        }
    }
    println!(
        "clock: one Instant::now() costs {:.0} ns (each sample holds two readings)",
        c.clock_ns
    );
}

/// The all-calls lines of one target.
pub(super) fn print_distribution(a: &Analysis) {
    let v = |key: &str| a.at(key) as f64 / 1e3;
    println!(
        "  all calls: p50 {:.2}   p90 {:.2}   p99 {:.2}   p99.9 {:.2}   p99.99 {:.2}   max {:.2} µs",
        v("p50"),
        v("p90"),
        v("p99"),
        v("p99_9"),
        v("p99_99"),
        v("max")
    );
    println!(
        "  min {:.2} µs   mean {:.2} µs ± σ {:.2} µs   {:.0} calls per second",
        a.min_ns as f64 / 1e3,
        a.mean_ns / 1e3,
        a.stddev_ns / 1e3,
        a.calls_per_s
    );
    println!(
        "  {} ok   {} isError   {} failed   host peak RSS {} KiB",
        a.ok, a.tool_errors, a.failures, a.rss_kb
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(estimate: f64, lo: f64, hi: f64) -> Interval {
        Interval { estimate, lo, hi }
    }

    #[test]
    fn ratios_read_as_slower_or_faster_than_the_reference() {
        assert_eq!(
            ratio_sentence("B", "A", &interval(1.31, 1.27, 1.35)),
            "B: 1.31× [1.27, 1.35] slower than A"
        );
        assert_eq!(
            ratio_sentence("B", "A", &interval(0.5, 0.4, 0.625)),
            "B: 2.00× [1.60, 2.50] faster than A"
        );
        assert!(ratio_sentence("B", "A", &interval(1.01, 0.98, 1.04))
            .ends_with("(no significant difference: the interval holds 1)"));
        assert_eq!(change_word(&interval(1.01, 0.98, 1.04)), "no change");
        assert_eq!(change_word(&interval(1.2, 1.1, 1.3)), "slower");
        assert_eq!(change_word(&interval(0.8, 0.7, 0.9)), "faster");
    }
}
