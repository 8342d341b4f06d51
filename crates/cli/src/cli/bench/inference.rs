//! What a bench may conclude from its samples: the interval of a round's median, a bootstrap
//! interval of the median over rounds (and of a ratio of two such medians), and the warnings for
//! rounds that disagree, a bimodal distribution and outliers that dominate the time.
//!
//! Pure functions over nanosecond samples; the generator is seeded, so the same samples give
//! the same intervals.

/// Bootstrap replicates per interval.
const REPLICATES: usize = 2_000;
/// The generator's seed: intervals are reproducible.
const SEED: u64 = 0x5eed_be9c_4a11_0001;
/// z of the two-sided 95 % interval.
const Z95: f64 = 1.959_964;

/// One round's median and the distribution-free 95 % interval of it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct RoundStat {
    /// The round's p50 (nearest rank), nanoseconds.
    pub p50_ns: f64,
    /// The interval's low end, nanoseconds.
    pub lo_ns: f64,
    /// The interval's high end, nanoseconds.
    pub hi_ns: f64,
}

/// An estimate and its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Interval {
    pub estimate: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Interval {
    /// True when the interval holds `value`.
    pub fn contains(&self, value: f64) -> bool {
        self.lo <= value && value <= self.hi
    }
}

/// The p50 of sorted samples (nearest rank) and the order-statistic interval of the median:
/// the ranks `n/2 − 1.96·√n/2` and `1 + n/2 + 1.96·√n/2` (1-based, rounded outwards), which
/// hold the population median with 95 % probability whatever the distribution.
pub(super) fn round_stat(sorted: &[u64]) -> RoundStat {
    let n = sorted.len();
    if n == 0 {
        return RoundStat {
            p50_ns: 0.0,
            lo_ns: 0.0,
            hi_ns: 0.0,
        };
    }
    let at = |rank: f64| sorted[(rank as usize).clamp(1, n) - 1] as f64;
    let half = n as f64 / 2.0;
    let spread = Z95 * (n as f64).sqrt() / 2.0;
    RoundStat {
        p50_ns: at((0.5 * n as f64).ceil()),
        lo_ns: at((half - spread).floor()),
        hi_ns: at((1.0 + half + spread).ceil()),
    }
}

/// The median of values (the mean of the middle two for an even count); 0 when empty.
pub(super) fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_unstable_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// The median of the rounds' p50s.
pub(super) fn median_of_rounds(rounds: &[RoundStat]) -> f64 {
    median(&mut rounds.iter().map(|r| r.p50_ns).collect::<Vec<_>>())
}

/// A seeded generator with the draws the bootstrap needs.
struct Draws(fastrand::Rng);

impl Draws {
    fn new() -> Draws {
        Draws(fastrand::Rng::with_seed(SEED))
    }

    /// A standard normal variate (Box–Muller).
    fn normal(&mut self) -> f64 {
        let u1 = self.0.f64().max(f64::MIN_POSITIVE);
        let u2 = self.0.f64();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }

    /// One bootstrap replicate of the median of round p50s: the rounds resampled with
    /// replacement, and each picked round's median drawn from its own sampling distribution
    /// (normal, scaled on each side to the round's interval): so the replicate varies with the
    /// rounds' disagreement and with the calls' noise within a round.
    fn replicate(&mut self, rounds: &[RoundStat], buffer: &mut Vec<f64>) -> f64 {
        buffer.clear();
        for _ in 0..rounds.len() {
            let round = &rounds[self.0.usize(..rounds.len())];
            let z = self.normal();
            let side = if z < 0.0 {
                round.p50_ns - round.lo_ns
            } else {
                round.hi_ns - round.p50_ns
            };
            buffer.push(round.p50_ns + z / Z95 * side);
        }
        median(buffer)
    }
}

/// The 2.5th and 97.5th percentiles of replicates.
fn percentile_interval(estimate: f64, replicates: &mut [f64]) -> Interval {
    replicates.sort_unstable_by(f64::total_cmp);
    let at = |q: f64| {
        let i = (q * (replicates.len() - 1) as f64).round() as usize;
        replicates[i]
    };
    Interval {
        estimate,
        lo: at(0.025),
        hi: at(0.975),
    }
}

/// The median of the rounds' p50s with its 95 % bootstrap interval.
pub(super) fn median_interval(rounds: &[RoundStat]) -> Interval {
    let estimate = median_of_rounds(rounds);
    if rounds.is_empty() {
        return Interval {
            estimate,
            lo: estimate,
            hi: estimate,
        };
    }
    let mut draws = Draws::new();
    let mut buffer = Vec::with_capacity(rounds.len());
    let mut replicates: Vec<f64> = (0..REPLICATES)
        .map(|_| draws.replicate(rounds, &mut buffer))
        .collect();
    percentile_interval(estimate, &mut replicates)
}

/// The ratio of `other`'s median p50 to `reference`'s, with its 95 % bootstrap interval (both
/// sides resampled independently in each replicate).
pub(super) fn ratio_interval(reference: &[RoundStat], other: &[RoundStat]) -> Interval {
    let base = median_of_rounds(reference);
    let estimate = if base > 0.0 {
        median_of_rounds(other) / base
    } else {
        f64::NAN
    };
    if reference.is_empty() || other.is_empty() || base <= 0.0 {
        return Interval {
            estimate,
            lo: estimate,
            hi: estimate,
        };
    }
    let mut draws = Draws::new();
    let mut buffer = Vec::new();
    let mut replicates: Vec<f64> = (0..REPLICATES)
        .map(|_| {
            let a = draws.replicate(reference, &mut buffer);
            let b = draws.replicate(other, &mut buffer);
            if a > 0.0 {
                b / a
            } else {
                f64::INFINITY
            }
        })
        .collect();
    percentile_interval(estimate, &mut replicates)
}

/// Rounds disagree when the slowest round's median interval lies wholly above the fastest
/// round's and their p50s differ by more than 10 %: more than the calls of one round explain,
/// and enough to matter.
pub(super) fn rounds_disagree(rounds: &[RoundStat]) -> Option<String> {
    let fastest = rounds.iter().min_by(|a, b| a.p50_ns.total_cmp(&b.p50_ns))?;
    let slowest = rounds.iter().max_by(|a, b| a.p50_ns.total_cmp(&b.p50_ns))?;
    if slowest.lo_ns > fastest.hi_ns && slowest.p50_ns > 1.10 * fastest.p50_ns {
        Some(format!(
            "the rounds disagree: their p50s run from {} to {} µs ({:.2}×), beyond what the \
             calls of one round explain; the machine changed state between rounds (other load, \
             CPU frequency or scheduling): rerun, raise --rounds, or pin with taskset",
            us(fastest.p50_ns),
            us(slowest.p50_ns),
            slowest.p50_ns / fastest.p50_ns
        ))
    } else {
        None
    }
}

/// Bins per decade of the bimodality test's log-spaced histogram.
const BINS_PER_DECADE: f64 = 20.0;

/// Two modes of sorted samples, when there are two: the two highest peaks of a smoothed
/// log-spaced histogram at least 1.5× apart, each side holding at least 10 % of the calls, with a
/// valley between them under half the smaller peak. Returns (mode, share) of each, in µs.
pub(super) fn modes(sorted: &[u64]) -> Option<((f64, f64), (f64, f64))> {
    let n = sorted.len();
    let (first, last) = (*sorted.first()?, *sorted.last()?);
    if n < 20 || first == 0 || last < first * 2 {
        return None;
    }
    let base = (first as f64).log10();
    let bins = (((last as f64).log10() - base) * BINS_PER_DECADE).floor() as usize + 1;
    let mut counts = vec![0f64; bins];
    for &v in sorted {
        let i = (((v as f64).log10() - base) * BINS_PER_DECADE) as usize;
        counts[i.min(bins - 1)] += 1.0;
    }
    let smooth: Vec<f64> = (0..bins)
        .map(|i| {
            let lo = i.saturating_sub(1);
            let hi = (i + 1).min(bins - 1);
            counts[lo..=hi].iter().sum::<f64>() / (hi - lo + 1) as f64
        })
        .collect();
    let peaks: Vec<usize> = (0..bins)
        .filter(|&i| {
            (i == 0 || smooth[i] > smooth[i - 1]) && (i + 1 == bins || smooth[i] >= smooth[i + 1])
        })
        .collect();
    let centre = |i: usize| 10f64.powf(base + (i as f64 + 0.5) / BINS_PER_DECADE) / 1e3;
    let min_gap = (1.5f64.log10() * BINS_PER_DECADE).ceil() as usize;
    let mut best: Option<(f64, usize, usize, usize)> = None;
    for (x, &a) in peaks.iter().enumerate() {
        for &b in &peaks[x + 1..] {
            if b - a < min_gap {
                continue;
            }
            let valley = (a..=b)
                .min_by(|&i, &j| smooth[i].total_cmp(&smooth[j]))
                .unwrap_or(a);
            let smaller = smooth[a].min(smooth[b]);
            let left: f64 = counts[..=valley].iter().sum();
            let right = n as f64 - left;
            let enough = left >= 0.1 * n as f64 && right >= 0.1 * n as f64;
            if smooth[valley] < 0.5 * smaller && enough && best.is_none_or(|m| smaller > m.0) {
                best = Some((smaller, a, b, valley));
            }
        }
    }
    let (_, a, b, valley) = best?;
    let left: f64 = counts[..=valley].iter().sum::<f64>() / n as f64;
    Some(((centre(a), left), (centre(b), 1.0 - left)))
}

/// The bimodality warning for sorted samples.
pub(super) fn bimodal(sorted: &[u64]) -> Option<String> {
    let ((a, share_a), (b, share_b)) = modes(sorted)?;
    Some(format!(
        "the latencies are bimodal: one mode near {} µs ({:.0} % of calls), another near {} µs \
         ({:.0} %); a single p50 hides that: compare rounds, or pin with taskset",
        us(a * 1e3),
        share_a * 100.0,
        us(b * 1e3),
        share_b * 100.0
    ))
}

/// Outliers dominate when the calls beyond the fence (`Q3 + 3·IQR`, and at least twice the
/// median, so that a tight core's ordinary tail is not called outlying) take at least a fifth of
/// the measured time: the mean and σ then describe them, not the typical call.
pub(super) fn outliers_dominate(sorted: &[u64]) -> Option<String> {
    let n = sorted.len();
    if n < 20 {
        return None;
    }
    let rank = |p: f64| sorted[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
    let (q1, q3) = (rank(0.25), rank(0.75));
    let fence = q3
        .saturating_add(3 * (q3 - q1))
        .max(rank(0.5).saturating_mul(2));
    let start = sorted.partition_point(|&v| v <= fence);
    let total: f64 = sorted.iter().map(|&v| v as f64).sum();
    let beyond: f64 = sorted[start..].iter().map(|&v| v as f64).sum();
    (total > 0.0 && beyond >= 0.2 * total).then(|| {
        format!(
            "outliers dominate: {} calls ({:.2} %) beyond {} µs (Q3 + 3·IQR, at least 2 × p50) take {:.0} % of the \
             measured time; the mean and σ describe them, the percentiles do not",
            n - start,
            (n - start) as f64 * 100.0 / n as f64,
            us(fence as f64),
            beyond * 100.0 / total
        )
    })
}

/// Nanoseconds as microseconds for a message (two decimals).
pub(super) fn us(ns: f64) -> String {
    format!("{:.2}", ns / 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(p50: f64, lo: f64, hi: f64) -> RoundStat {
        RoundStat {
            p50_ns: p50,
            lo_ns: lo,
            hi_ns: hi,
        }
    }

    #[test]
    fn the_median_interval_of_one_to_a_thousand_is_the_known_order_statistics() {
        // n = 1000: ranks floor(500 − 30.99) = 469 and ceil(501 + 30.99) = 532.
        let sorted: Vec<u64> = (1..=1000).collect();
        let r = round_stat(&sorted);
        assert_eq!((r.p50_ns, r.lo_ns, r.hi_ns), (500.0, 469.0, 532.0));
        // One round: the bootstrap reproduces that interval (within the replicates' noise).
        let i = median_interval(&[r]);
        assert_eq!(i.estimate, 500.0);
        assert!(
            (i.lo - 469.0).abs() <= 3.0 && (i.hi - 532.0).abs() <= 3.0,
            "{i:?}"
        );
    }

    #[test]
    fn five_equal_rounds_give_the_interval_of_a_median_of_five_normals() {
        // Each round's median ~ N(100, 5.1²) (interval ±10 at 95 %); the median of five such
        // draws has σ ≈ 1.2533·5.1/√5 ≈ 2.86 (asymptotically; ≈ 2.72 exactly for five), so the
        // interval is about 100 ± 5.4.
        let rounds = [stat(100.0, 90.0, 110.0); 5];
        let i = median_interval(&rounds);
        assert_eq!(i.estimate, 100.0);
        let half = (i.hi - i.lo) / 2.0;
        assert!((4.6..6.4).contains(&half), "{i:?}");
        assert!(i.contains(100.0));
    }

    #[test]
    fn identical_samples_give_a_ratio_interval_that_holds_one() {
        let sorted: Vec<u64> = (0..5000).map(|i| 10_000 + (i * 37) % 2000).collect();
        let mut sorted = sorted;
        sorted.sort_unstable();
        let rounds = vec![round_stat(&sorted); 5];
        let ratio = ratio_interval(&rounds, &rounds);
        assert_eq!(ratio.estimate, 1.0);
        assert!(ratio.contains(1.0), "{ratio:?}");
        assert!(ratio.hi - ratio.lo < 0.05, "{ratio:?}");
    }

    #[test]
    fn a_thirty_percent_slower_target_gives_a_ratio_interval_around_one_point_three() {
        let a: Vec<u64> = (1..=2000).map(|i| 10_000 + i).collect();
        let b: Vec<u64> = a.iter().map(|v| v * 13 / 10).collect();
        let ra = vec![round_stat(&a); 5];
        let rb = vec![round_stat(&b); 5];
        let ratio = ratio_interval(&ra, &rb);
        assert!((ratio.estimate - 1.3).abs() < 1e-3, "{ratio:?}");
        assert!(
            ratio.lo > 1.25 && ratio.hi < 1.35 && !ratio.contains(1.0),
            "{ratio:?}"
        );
    }

    #[test]
    fn the_two_regime_machine_makes_rounds_disagree() {
        let rounds = [
            stat(7_410.0, 7_300.0, 7_500.0),
            stat(53_920.0, 53_000.0, 54_500.0),
            stat(44_290.0, 44_000.0, 44_600.0),
        ];
        let warning = rounds_disagree(&rounds).expect("a warning");
        assert!(
            warning.contains("7.41") && warning.contains("53.92"),
            "{warning}"
        );
        let close = [stat(100.0, 95.0, 105.0), stat(104.0, 99.0, 109.0)];
        assert_eq!(rounds_disagree(&close), None);
        // Apart beyond their intervals, but by under 10 %: not worth a warning.
        let near = [stat(100.0, 99.0, 101.0), stat(105.0, 104.0, 106.0)];
        assert_eq!(rounds_disagree(&near), None);
    }

    #[test]
    fn a_mixture_of_two_regimes_is_bimodal_and_one_regime_is_not() {
        let mut mixed: Vec<u64> = (0..6000)
            .map(|i| 7_000 + (i * 7919) % 1_500)
            .chain((0..4000).map(|i| 50_000 + (i * 7919) % 8_000))
            .collect();
        mixed.sort_unstable();
        let ((a, share_a), (b, share_b)) = modes(&mixed).expect("two modes");
        assert!(
            (6.5..9.0).contains(&a) && (45.0..60.0).contains(&b),
            "{a} {b}"
        );
        assert!((share_a - 0.6).abs() < 0.02 && (share_b - 0.4).abs() < 0.02);
        assert!(bimodal(&mixed).is_some());
        // One regime with a long thin tail: one mode.
        let mut single: Vec<u64> = (0..10_000u64)
            .map(|i| 10_000 + (i * 7919) % 3_000 + if i % 100 == 0 { 40_000 } else { 0 })
            .collect();
        single.sort_unstable();
        assert_eq!(modes(&single), None);
    }

    #[test]
    fn outliers_that_take_the_time_are_reported() {
        let mut samples: Vec<u64> = (0..1000).map(|i| 10_000 + i % 100).collect();
        samples.extend([5_000_000; 10]);
        samples.sort_unstable();
        let warning = outliers_dominate(&samples).expect("a warning");
        assert!(warning.contains("10 calls"), "{warning}");
        let mut calm: Vec<u64> = (0..1000).map(|i| 10_000 + i % 100).collect();
        calm.extend([30_000; 10]);
        calm.sort_unstable();
        assert_eq!(outliers_dominate(&calm), None);
    }
}
