//! The variance-collapse figures: variance and location against dimension, and the Frobenius
//! distance, one series per method and particle count.

use super::*;
use crate::plot::{draw_legend, draw_markers, glyph, plot_err, ramp, FOOTER_HEIGHT};

/// Colour of a series (Okabe–Ito palette, fixed per method so figures agree).
pub(crate) fn series_color(series: &str) -> RGBColor {
    match series {
        "SMI-1" => RGBColor(0, 114, 178),
        "SMI-20" => RGBColor(213, 94, 0),
        "SVGD-20" => RGBColor(0, 158, 115),
        "ASVGD-20" => RGBColor(204, 121, 167),
        s if s.starts_with("SMI") => RGBColor(86, 180, 233),
        s if s.starts_with("ASVGD") => RGBColor(230, 159, 0),
        _ => RGBColor(80, 80, 80),
    }
}

fn series_marker(series: &str) -> usize {
    match series {
        "SMI-1" => 0,
        "SMI-20" => 1,
        "SVGD-20" => 2,
        "ASVGD-20" => 3,
        _ => 0,
    }
}

/// A log-axis range covering `values` and 1, with the top fraction `legend` of the axis left
/// free for the legend.
fn log_range(values: impl Iterator<Item = f64>, floor: f64, legend: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (1.0_f64, 1.0_f64);
    for v in values.filter(|v| v.is_finite() && *v > 0.0) {
        lo = lo.min(v.max(floor));
        hi = hi.max(v);
    }
    let (lo, hi) = ((lo / 1.6).ln(), (hi * 1.6).ln());
    let top = lo + (hi - lo) / (1.0 - legend.clamp(0.0, 0.8));
    (lo.exp(), top.exp())
}

/// The fraction of a plot's height a legend of `entries` lines needs.
fn legend_fraction(entries: usize, plot_height: f64) -> f64 {
    (entries as f64 * 21.0 + 30.0) / plot_height
}

/// Tick labels of d: integers without decimals.
fn int_tick(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{:.0}", v.round())
    } else {
        format!("{v:.1}")
    }
}

/// Tick labels of a linear axis around 0 (no "-0.0").
fn signed_tick(v: &f64) -> String {
    let s = format!("{v:.2}");
    if s == "-0.00" {
        "0.00".into()
    } else {
        s
    }
}

/// Tick positions of a log axis over [lo, hi]: 1-2-5 per decade over up to 2.5 decades, 1-3
/// over up to 5, powers of ten beyond (plotters' own log ticks start at the first power of ten,
/// leaving no label below 1 on an axis such as 0.13..6).
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let decades = (hi / lo).log10();
    let mantissas: &[f64] = if decades <= 2.5 {
        &[1.0, 2.0, 5.0]
    } else if decades <= 5.0 {
        &[1.0, 3.0]
    } else {
        &[1.0]
    };
    let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    let mut ticks = Vec::new();
    for k in first..=last {
        for m in mantissas {
            let v = scaled(*m, k);
            if v >= lo && v <= hi {
                ticks.push(v);
            }
        }
    }
    ticks
}

/// `m · 10^k`, dividing for negative k so that e.g. 0.3 is the closest double to 0.3.
fn scaled(m: f64, k: i32) -> f64 {
    if k >= 0 {
        m * 10f64.powi(k)
    } else {
        m / 10f64.powi(-k)
    }
}

/// Minor grid lines of a log axis: every integer multiple of each power of ten in [lo, hi].
fn log_minor(lo: f64, hi: f64) -> Vec<f64> {
    let (first, last) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
    (first..=last)
        .flat_map(|k| (1..10).map(move |m| scaled(f64::from(m), k)))
        .filter(|v| *v >= lo && *v <= hi)
        .collect()
}

/// The y coordinate of the log panels: a log axis with [`log_ticks`] and [`log_minor`].
type LogY = plotters::coord::combinators::WithKeyPoints<LogCoord<f64>>;

fn log_tick(v: &f64) -> String {
    let v = *v;
    if v >= 1.0 && (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else if v >= 0.1 {
        format!("{v:.1}")
    } else {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').to_string()
    }
}

struct Series {
    label: String,
    color: RGBColor,
    shape: usize,
    /// Line width and marker radius: series that may coincide (SVGD and ASVGD converge to the
    /// same particles) get different sizes so that both stay visible.
    width: u32,
    size: i32,
    points: Vec<(f64, f64)>,
}

fn series_size(series: &str) -> (u32, i32) {
    match series {
        "SMI-1" => (4, 6),
        "SVGD-20" => (7, 8),
        "ASVGD-20" => (2, 5),
        _ => (3, 6),
    }
}

/// One panel: `series` vs d on a log y axis, with a dashed reference line at `reference`.
#[allow(clippy::too_many_arguments)]
fn log_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    x_range: (f64, f64),
    series: &[Series],
    reference: Option<(f64, &str)>,
    floor: f64,
    legend_pos: SeriesLabelPosition,
) -> Result<()> {
    let (lo, hi) = log_range(
        series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(reference.map(|r| r.0)),
        floor,
        legend_fraction(series.len() + usize::from(reference.is_some()), 470.0),
    );
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT_FAMILY, 24))
        .margin(18)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(
            x_range.0..x_range.1,
            (lo..hi)
                .log_scale()
                .with_key_points(log_ticks(lo, hi))
                .with_light_points(log_minor(lo, hi)),
        )
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .axis_desc_style((FONT_FAMILY, 18))
        .label_style((FONT_FAMILY, 15))
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(205, 205, 205))
        .y_label_formatter(&log_tick)
        .x_label_formatter(&int_tick)
        .draw()
        .map_err(plot_err)?;
    if let Some((r, label)) = reference {
        draw_reference(&mut chart, x_range, r, label)?;
    }
    draw_series_list(&mut chart, series, floor)?;
    draw_legend(&mut chart, legend_pos, 0.9, 16, 12)?;
    Ok(())
}

fn draw_reference<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, LogY>>,
    x_range: (f64, f64),
    r: f64,
    label: &str,
) -> Result<()> {
    // Dashed horizontal line: short segments.
    let n = 60;
    let w = (x_range.1 - x_range.0) / n as f64;
    chart
        .draw_series((0..n).step_by(2).map(|i| {
            let x0 = x_range.0 + i as f64 * w;
            PathElement::new(vec![(x0, r), (x0 + w, r)], BLACK.mix(0.55).stroke_width(2))
        }))
        .map_err(plot_err)?
        .label(label)
        .legend(|(x, y)| {
            PathElement::new(vec![(x, y), (x + 10, y)], BLACK.mix(0.55).stroke_width(2))
        });
    Ok(())
}

fn draw_series_list<'a, DB: DrawingBackend + 'a>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, LogY>>,
    series: &[Series],
    floor: f64,
) -> Result<()> {
    for s in series {
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter(|p| p.1.is_finite())
            .map(|&(x, y)| (x, y.max(floor)))
            .collect();
        let (color, shape) = (s.color, s.shape);
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(s.width)))
            .map_err(plot_err)?
            .label(s.label.clone())
            .legend(glyph!(color, shape));
        draw_markers(chart, &pts, shape, color, s.size)?;
    }
    Ok(())
}

/// Series of `metric` vs d at each series' main α.
fn main_series(rows: &[Row], metric: fn(&Row) -> Option<f64>) -> Vec<Series> {
    series_order(rows)
        .into_iter()
        .filter_map(|s| {
            let a = main_alpha(rows, &s)?;
            let points: Vec<(f64, f64)> = rows
                .iter()
                .filter(|r| r.series == s && r.alpha == a)
                .filter_map(|r| Some((r.dim as f64, metric(r)?)))
                .collect();
            let label = if a == 1.0 {
                s.clone()
            } else {
                format!("{s} (α = {})", fmt_alpha(a))
            };
            let (width, size) = series_size(&s);
            Some(Series {
                color: series_color(&s),
                shape: series_marker(&s),
                width,
                size,
                label,
                points,
            })
        })
        .filter(|s| !s.points.is_empty())
        .collect()
}

fn x_range_of(rows: &[Row]) -> (f64, f64) {
    let dims = dims_of(rows);
    let max = dims.last().copied().unwrap_or(1) as f64;
    let min = dims.first().copied().unwrap_or(1) as f64;
    let pad = ((max - min) * 0.04).max(0.5);
    ((min - pad).max(0.0), max + pad)
}

pub(super) fn variance_figure(rows: &[Row], path: &Path) -> Result<()> {
    init_font();
    let root = BitMapBackend::new(path, (1500, 620 + FOOTER_HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let body = with_footer(&root, &settings_line(rows))?;
    let (left, right) = body.split_horizontally(760);
    let x_range = x_range_of(rows);
    log_panel(
        &left,
        "Variance collapse on N(0, I) in d dimensions",
        "dimension d",
        "dimension-averaged marginal variance (log scale)",
        x_range,
        &main_series(rows, |r| r.mean_variance),
        Some((1.0, "target variance 1")),
        1e-4,
        SeriesLabelPosition::UpperLeft,
    )?;
    // Right: SMI over α (SMI-20, else SMI-1), else the mean location.
    let alpha_series = ["SMI-20", "SMI-1"]
        .into_iter()
        .find(|s| alphas_of(rows.iter().filter(|r| r.series == *s)).len() > 1);
    match alpha_series {
        Some(s) => {
            let alphas = alphas_of(rows.iter().filter(|r| r.series == s));
            let n = alphas.len();
            let series: Vec<Series> = alphas
                .iter()
                .enumerate()
                .map(|(i, &a)| Series {
                    label: format!("α = {}", fmt_alpha(a)),
                    color: ramp(if n > 1 {
                        i as f64 / (n - 1) as f64
                    } else {
                        0.0
                    }),
                    shape: i,
                    width: 3,
                    size: 6,
                    points: rows
                        .iter()
                        .filter(|r| r.series == s && r.alpha == a)
                        .filter_map(|r| Some((r.dim as f64, r.mean_variance?)))
                        .collect(),
                })
                .collect();
            log_panel(
                &right,
                &format!("{s} over the repulsion temperature α"),
                "dimension d",
                "dimension-averaged marginal variance (log scale)",
                x_range,
                &series,
                Some((1.0, "target variance 1")),
                1e-4,
                SeriesLabelPosition::UpperLeft,
            )?;
        }
        None => location_panel(&right, rows, x_range)?,
    }
    root.present().map_err(plot_err)?;
    Ok(())
}

/// Mean location vs d on a linear axis (target 0).
fn location_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    rows: &[Row],
    x_range: (f64, f64),
) -> Result<()> {
    let series = main_series(rows, |r| r.mean_location);
    let m = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1.abs()))
        .filter(|v| v.is_finite())
        .fold(0.05_f64, f64::max)
        * 1.4;
    // Room above the data for the legend.
    let top = m + 2.0 * m * legend_fraction(series.len(), 470.0) / 0.7;
    let mut chart = ChartBuilder::on(area)
        .caption("Mean location (unbiased = 0)", (FONT_FAMILY, 24))
        .margin(18)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d(x_range.0..x_range.1, -m..top)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc("dimension d")
        .y_desc("mean over coordinates of mean μ")
        .axis_desc_style((FONT_FAMILY, 18))
        .label_style((FONT_FAMILY, 15))
        .x_label_formatter(&int_tick)
        .y_label_formatter(&signed_tick)
        .light_line_style(RGBColor(235, 235, 235))
        .bold_line_style(RGBColor(205, 205, 205))
        .draw()
        .map_err(plot_err)?;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(x_range.0, 0.0), (x_range.1, 0.0)],
            BLACK.mix(0.55).stroke_width(2),
        )))
        .map_err(plot_err)?;
    for s in &series {
        let (color, shape) = (s.color, s.shape);
        chart
            .draw_series(LineSeries::new(
                s.points.clone(),
                color.stroke_width(s.width),
            ))
            .map_err(plot_err)?
            .label(s.label.clone())
            .legend(glyph!(color, shape));
        draw_markers(&mut chart, &s.points, shape, color, s.size)?;
    }
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, 0.9, 16, 12)?;
    Ok(())
}

pub(super) fn frobenius_figure(rows: &[Row], path: &Path) -> Result<()> {
    init_font();
    let root = BitMapBackend::new(path, (900, 620 + FOOTER_HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let body = with_footer(&root, &settings_line(rows))?;
    log_panel(
        &body,
        "Distance to the true variances: ‖diag(var) − I‖",
        "dimension d",
        "Frobenius distance (log scale; < 1e-4 drawn at 1e-4)",
        x_range_of(rows),
        &main_series(rows, |r| r.frobenius),
        None,
        1e-4,
        SeriesLabelPosition::UpperLeft,
    )?;
    root.present().map_err(plot_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_axes_get_ticks_below_one() {
        // A quick run's range (collapsed SVGD at 0.2, SMI-20 at 1.6): 1-2-5 ticks, some below 1.
        assert_eq!(log_ticks(0.13, 6.0), [0.2, 0.5, 1.0, 2.0, 5.0]);
        let labels: Vec<String> = log_ticks(0.13, 6.0).iter().map(log_tick).collect();
        assert_eq!(labels, ["0.2", "0.5", "1", "2", "5"]);
        // Six and a half decades: one tick per power of ten, the smallest labelled exactly.
        let wide = log_ticks(1e-4, 300.0);
        assert_eq!(wide.len(), 7);
        assert_eq!(log_tick(&wide[0]), "0.0001");
        assert!(log_minor(0.13, 6.0).contains(&0.3));
    }
}
