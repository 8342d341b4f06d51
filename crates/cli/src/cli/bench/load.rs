//! An open-loop run from start to report: every load step (each rate with each concurrency) on
//! every target in turn, then the latency-under-load table, the highest rate that held a p99
//! bound, the exports and the plot.

use serde_json::{json, Value};

use super::export;
use super::open::{self, Step, StepResult};
use super::plot;
use super::record::{self, Analysis, Series};
use super::report::{self, open_all, us};
use super::targets::Opened;
use super::{BenchFlags, Plan};
use crate::cli::{EXIT_FAILURE, EXIT_OK};

/// One step of one target, measured.
struct Row {
    target: usize,
    step: Step,
    result: StepResult,
    analysis: Analysis,
}

pub(super) fn run(f: &BenchFlags, plan: &Plan) -> Result<i32, String> {
    let clock_ns = record::clock_cost_ns();
    let steps = open::steps(&plan.rates, &plan.concurrencies, plan.duration);
    let lanes = plan.concurrencies.iter().copied().max().unwrap_or(1);
    let opened = open_all(plan, f, lanes)?;
    let rows = measure(&opened, &steps, f.warmup);
    opened.into_iter().for_each(Opened::close);
    let (rows, series) = rows?;
    let names: Vec<&str> = plan.specs.iter().map(|s| s.name.as_str()).collect();
    let whole: Vec<Analysis> = series.iter().map(|s| record::analyse(s, false)).collect();
    report::export_all(f, &names, &series, &whole)?;
    if let Some(path) = &f.plot {
        // One line pair per target, or per target and concurrency in a concurrency sweep.
        let several = plan.concurrencies.len() > 1;
        let mut labels: Vec<String> = Vec::new();
        let mut keys: Vec<(usize, usize)> = Vec::new();
        for r in &rows {
            let key = (r.target, if several { r.step.concurrency } else { 0 });
            if !keys.contains(&key) {
                keys.push(key);
                labels.push(if several {
                    format!("{} c={}", names[r.target], r.step.concurrency)
                } else {
                    names[r.target].to_string()
                });
            }
        }
        let lines: Vec<plot::SweepLine<'_>> = keys
            .iter()
            .zip(&labels)
            .map(|(&(t, c), label)| {
                let points = rows
                    .iter()
                    .filter(|r| r.target == t && (c == 0 || r.step.concurrency == c))
                    .map(|r| {
                        (
                            r.result.achieved,
                            r.analysis.at("p50") as f64 / 1e3,
                            r.analysis.at("p99") as f64 / 1e3,
                        )
                    })
                    .collect();
                (label.as_str(), points)
            })
            .collect();
        let title = format!("`{}` latency under open-loop load", f.tool);
        export::write_file(path, plot::sweep_svg(&title, &lines)?.as_bytes())?;
    }
    let bound_ns = f.p99_under.map(|b| (b * 1e3).round() as u64);
    let held: Vec<Option<Step>> = (0..names.len())
        .map(|t| {
            let results: Vec<(Step, u64, f64)> = rows
                .iter()
                .filter(|r| r.target == t)
                .map(|r| (r.step, r.analysis.at("p99"), r.result.achieved))
                .collect();
            bound_ns.and_then(|b| open::highest_held(&results, b))
        })
        .collect();
    if f.json {
        println!("{}", json_line(f, &names, &rows, &held, clock_ns));
    } else {
        print_table(f, &names, &rows, &held, clock_ns);
    }
    let erred = rows
        .iter()
        .any(|r| r.analysis.tool_errors + r.analysis.failures > 0);
    Ok(if f.fail_on_error && erred {
        EXIT_FAILURE
    } else {
        EXIT_OK
    })
}

/// Warms every lane up, then runs each step on each target in turn.
fn measure(
    opened: &[Opened],
    steps: &[Step],
    warmup: usize,
) -> Result<(Vec<Row>, Vec<Series>), String> {
    for o in opened {
        for lane in &o.lanes {
            for _ in 0..warmup.div_ceil(o.lanes.len()) {
                if let (super::targets::Outcome::Failed, reason) = lane.call().outcome() {
                    return Err(format!(
                        "a warm-up call failed: {}",
                        reason.unwrap_or_else(|| "no reason given".into())
                    ));
                }
            }
        }
    }
    let total: usize = steps.iter().map(Step::calls).sum();
    let mut series: Vec<Series> = opened
        .iter()
        .map(|_| Series::with_capacity(total))
        .collect();
    let mut rows = Vec::new();
    for step in steps {
        for (t, o) in opened.iter().enumerate() {
            let mut one = Series::with_capacity(step.calls());
            let result = open::run(step, &o.lanes, &mut one);
            let analysis = record::analyse(&one, false);
            let whole = &mut series[t];
            whole.samples.extend_from_slice(&one.samples);
            whole.outcomes.extend_from_slice(&one.outcomes);
            whole.end_round();
            whole.busy += one.busy;
            if whole.first_failure.is_none() {
                whole.first_failure = one.first_failure.clone();
            }
            rows.push(Row {
                target: t,
                step: *step,
                result,
                analysis,
            });
        }
    }
    Ok((rows, series))
}

fn json_line(
    f: &BenchFlags,
    names: &[&str],
    rows: &[Row],
    held: &[Option<Step>],
    clock_ns: f64,
) -> String {
    let steps: Vec<Value> = rows
        .iter()
        .map(|r| {
            let a = &r.analysis;
            let mut m = report::distribution_json(a);
            m.insert("name".into(), json!(names[r.target]));
            m.insert("rate".into(), json!(r.step.rate));
            m.insert("concurrency".into(), json!(r.step.concurrency));
            m.insert("duration_s".into(), json!(r.step.duration));
            m.insert("n".into(), json!(a.calls));
            m.insert(
                "achieved_per_s".into(),
                json!((r.result.achieved * 10.0).round() / 10.0),
            );
            m.insert("late".into(), json!(r.result.late));
            m.insert("max_lag_us".into(), json!(us(r.result.max_lag_ns as f64)));
            for key in ["p50", "p90", "p99", "max"] {
                m.insert(format!("{key}_us"), json!(us(a.at(key) as f64)));
            }
            Value::Object(m)
        })
        .collect();
    let held: Vec<Value> = names
        .iter()
        .zip(held)
        .map(|(name, h)| {
            json!({"name": name, "rate": h.map(|s| s.rate), "concurrency": h.map(|s| s.concurrency)})
        })
        .collect();
    json!({
        "mode": "open",
        "tool": f.tool,
        "clock_ns": (clock_ns * 10.0).round() / 10.0,
        "late_after_us": open::LATE.as_micros(),
        "p99_under_us": f.p99_under,
        "held": held,
        "steps": steps,
    })
    .to_string()
}

fn print_table(f: &BenchFlags, names: &[&str], rows: &[Row], held: &[Option<Step>], clock_ns: f64) {
    println!(
        "open loop: `{}` on a fixed schedule, latency from each call's intended start (µs)",
        f.tool
    );
    let width = names.iter().map(|n| n.len()).max().unwrap_or(6).max(6);
    println!(
        "{:<width$} {:>9} {:>4} {:>11} {:>9} {:>9} {:>9} {:>9} {:>10} {:>6} {:>7} {:>6}",
        "target",
        "rate/s",
        "conc",
        "achieved/s",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "max",
        "late",
        "isError",
        "failed"
    );
    for r in rows {
        let a = &r.analysis;
        let v = |key: &str| a.at(key) as f64 / 1e3;
        println!(
            "{:<width$} {:>9.0} {:>4} {:>11.1} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>10.2} {:>6} {:>7} {:>6}",
            names[r.target],
            r.step.rate,
            r.step.concurrency,
            r.result.achieved,
            v("p50"),
            v("p90"),
            v("p99"),
            v("p99_9"),
            v("max"),
            r.result.late,
            a.tool_errors,
            a.failures
        );
    }
    for r in rows {
        for w in &r.analysis.warnings {
            if w.contains("failed") {
                println!("warning: {} at {:.0}/s: {w}", names[r.target], r.step.rate);
            }
        }
    }
    if let Some(bound) = f.p99_under {
        for (name, h) in names.iter().zip(held) {
            match h {
                Some(s) => println!(
                    "{name}: the highest rate whose p99 stayed at or under {bound} µs: {:.0}/s (concurrency {})",
                    s.rate, s.concurrency
                ),
                None => println!("{name}: no rate kept its p99 at or under {bound} µs"),
            }
        }
    }
    println!(
        "a start more than {} µs after its intended start counts as late; one Instant::now() costs {:.0} ns",
        open::LATE.as_micros(),
        clock_ns
    );
}
