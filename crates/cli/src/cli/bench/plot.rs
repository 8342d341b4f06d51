//! `--plot FILE.svg`: the percentile distribution of each target on a log "nines" axis
//! (x = log10(1/(1 − q)): 0 is p0, 1 is p90, 2 is p99, 3 is p99.9…; y = latency in µs, log
//! scale), or for a load sweep p50 and p99 against the achieved rate. Drawn with plotters'
//! SVG backend: text is left to the viewer's fonts, nothing is loaded.

use hdrhistogram::Histogram;
use plotters::prelude::*;

/// The chart's size in pixels.
const SIZE: (u32, u32) = (960, 600);
/// The deepest "nine" drawn (p99.9999).
const MAX_NINES: f64 = 6.0;

/// Series colours, in target order (cycled).
const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// The (nines, µs) points of a histogram's percentile distribution (nanosecond values).
pub(super) fn distribution_points(histogram: &Histogram<u64>) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = Vec::new();
    for v in histogram.iter_quantiles(5) {
        let q = v.quantile_iterated_to();
        let nines = if q >= 1.0 {
            // The maximum: one step past the deepest quantile the calls resolve.
            (histogram.len() as f64).log10().min(MAX_NINES)
        } else {
            (1.0 / (1.0 - q)).log10().min(MAX_NINES)
        };
        let us = (v.value_iterated_to() as f64 / 1e3).max(1e-3);
        if points.last().is_none_or(|p| nines > p.0) {
            points.push((nines, us));
        } else if let Some(last) = points.last_mut() {
            last.1 = last.1.max(us);
        }
    }
    points
}

/// "50%", "99%", "99.9%"… for a nines value.
fn nines_label(x: &f64) -> String {
    let p = 100.0 * (1.0 - 10f64.powf(-x));
    let decimals = (x.round() as i32 - 2).max(0) as usize;
    format!("{p:.decimals$}%")
}

/// The bounds of a log axis around `values` (positive).
fn log_bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo > hi {
        return (1.0, 10.0);
    }
    (lo.max(1e-3) / 1.5, (hi * 1.5).max(lo * 2.0))
}

fn draw_error<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> String {
    format!("cannot draw the plot: {e}")
}

/// The percentile distribution of each (name, histogram) as one line each, as SVG text.
pub(super) fn distribution_svg(
    title: &str,
    targets: &[(&str, &Histogram<u64>)],
) -> Result<String, String> {
    let series: Vec<(&str, Vec<(f64, f64)>)> = targets
        .iter()
        .map(|(name, h)| (*name, distribution_points(h)))
        .collect();
    let x_max = series
        .iter()
        .flat_map(|(_, p)| p.last().map(|l| l.0))
        .fold(2.0f64, f64::max)
        .ceil();
    let (y_lo, y_hi) = log_bounds(series.iter().flat_map(|(_, p)| p.iter().map(|q| q.1)));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(16)
            .margin_right(48)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..x_max, (y_lo..y_hi).log_scale())
            .map_err(draw_error)?;
        chart
            .configure_mesh()
            .x_labels(x_max as usize + 1)
            .x_label_formatter(&nines_label)
            .y_label_formatter(&|v| format!("{v}"))
            .x_desc("percentile")
            .y_desc("latency (µs)")
            .draw()
            .map_err(draw_error)?;
        for (i, (name, points)) in series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    colour.stroke_width(2),
                ))
                .map_err(draw_error)?
                .label(*name)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], colour));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(draw_error)?;
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
}

/// One target's sweep: (achieved rate, p50 µs, p99 µs) per step.
pub(super) type SweepLine<'a> = (&'a str, Vec<(f64, f64, f64)>);

/// p50 and p99 against the achieved rate, two lines per target, as SVG text.
pub(super) fn sweep_svg(title: &str, targets: &[SweepLine<'_>]) -> Result<String, String> {
    let x_hi = targets
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.0))
        .fold(1.0f64, f64::max)
        * 1.1;
    let (y_lo, y_hi) = log_bounds(
        targets
            .iter()
            .flat_map(|(_, p)| p.iter().flat_map(|q| [q.1, q.2])),
    );
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(16)
            .margin_right(48)
            .x_label_area_size(48)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..x_hi, (y_lo..y_hi).log_scale())
            .map_err(draw_error)?;
        chart
            .configure_mesh()
            .x_desc("achieved calls per second")
            .y_desc("latency (µs)")
            .y_label_formatter(&|v| format!("{v}"))
            .draw()
            .map_err(draw_error)?;
        for (i, (name, points)) in targets.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            for (label, pick, width) in [("p50", 1usize, 2u32), ("p99", 2, 1)] {
                let line = points
                    .iter()
                    .map(|p| (p.0, if pick == 1 { p.1 } else { p.2 }));
                chart
                    .draw_series(LineSeries::new(line, colour.stroke_width(width)))
                    .map_err(draw_error)?
                    .label(format!("{name} {label}"))
                    .legend(move |(x, y)| {
                        PathElement::new([(x, y), (x + 20, y)], colour.stroke_width(width))
                    });
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(draw_error)?;
        root.present().map_err(draw_error)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nines_axis_is_labelled_in_percent() {
        assert_eq!(nines_label(&0.0), "0%");
        assert_eq!(nines_label(&1.0), "90%");
        assert_eq!(nines_label(&2.0), "99%");
        assert_eq!(nines_label(&3.0), "99.9%");
        assert_eq!(nines_label(&4.0), "99.99%");
    }

    #[test]
    fn distribution_points_rise_along_the_nines() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        for v in 1..=10_000u64 {
            h.record(v * 100).unwrap();
        }
        let points = distribution_points(&h);
        assert!(points
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        assert_eq!(points[0].0, 0.0);
        assert!((points.last().unwrap().0 - 4.0).abs() < 0.05, "{points:?}");
    }
}
