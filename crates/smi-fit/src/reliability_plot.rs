//! `smi predict --reliability-plot FILE.png`: the reliability diagram of a
//! [`MetricsReport`]. Classification: accuracy per bin of top-class confidence (bars, with the
//! bin's row count above) and the bin's mean confidence against its accuracy (points), against
//! the diagonal confidence = accuracy. Regression: the observed coverage of the central
//! predictive intervals against their nominal mass (points, with rows inside), against the
//! diagonal and the band of ±2 binomial standard errors around it. The title holds the ECE or
//! calibration error; the bottom line the settings (model file, target, draws, seed).

use std::path::Path;

use crate::plot::{init_font, FONT_FAMILY};
use anyhow::Result;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::metrics_report::MetricsReport;
use super::model_file::Task;

const BAR: RGBColor = RGBColor(31, 119, 180);
const POINT: RGBColor = RGBColor(214, 95, 14);
const DIAGONAL: RGBColor = RGBColor(110, 110, 110);
const NOTE: RGBColor = RGBColor(90, 90, 90);
/// Figure size in pixels.
const SIZE: (u32, u32) = (960, 820);
/// Height of the settings strip at the bottom.
const FOOT: u32 = 80;

/// Turns a plotters error into anyhow.
fn plot_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow::anyhow!("drawing the reliability diagram failed: {e:?}")
}

type Chart<'a, 'b> =
    ChartContext<'a, BitMapBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Writes the reliability diagram of `r` to `path` (PNG).
///
/// # Errors
/// A file that cannot be written.
pub fn write(path: &Path, r: &MetricsReport) -> Result<()> {
    init_font();
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let (body, foot) = root.split_vertically(SIZE.1 - FOOT);
    footer(&foot, r)?;
    let (title, x_label, y_label) = match r.task {
        Task::Classification => (
            format!(
                "Reliability: {}, accuracy {}, mean confidence {} (n = {})",
                r.summary(),
                f3(r.accuracy),
                f3(r.mean_confidence),
                r.n
            ),
            "top-class confidence (probability of the predicted class)",
            "accuracy (fraction of rows whose predicted class is right)",
        ),
        Task::Regression => (
            format!("Interval coverage: {} (n = {})", r.summary(), r.n),
            "nominal mass of the central predictive interval",
            "observed coverage (fraction of rows inside)",
        ),
    };
    let mut chart = ChartBuilder::on(&body)
        .caption(title, (FONT_FAMILY, 21))
        .margin(18)
        .x_label_area_size(52)
        .y_label_area_size(66)
        .build_cartesian_2d(0.0..1.0, 0.0..1.0)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .x_labels(11)
        .y_labels(11)
        .x_label_formatter(&|v| format!("{v:.1}"))
        .y_label_formatter(&|v| format!("{v:.1}"))
        .label_style((FONT_FAMILY, 15))
        .axis_desc_style((FONT_FAMILY, 16))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(RGBColor(225, 225, 225))
        .draw()
        .map_err(plot_err)?;
    match r.task {
        Task::Classification => classification(&mut chart, r)?,
        Task::Regression => regression(&mut chart, r)?,
    }
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(0.0, 0.0), (1.0, 1.0)],
            DIAGONAL.stroke_width(2),
        )))
        .map_err(plot_err)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

/// A value with three decimals, or `n/a`.
fn f3(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".into(), |v| format!("{v:.3}"))
}

/// A legend entry's glyph.
enum Glyph {
    /// A filled box of this colour.
    Box(RGBAColor),
    /// A point.
    Point,
    /// The diagonal's line.
    Line,
}

/// The legend (one row), the settings and the verdict, below the chart.
fn footer(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    r: &MetricsReport,
) -> Result<()> {
    let entries = match r.task {
        Task::Classification => [
            (
                Glyph::Box(BAR.mix(0.45)),
                "accuracy per confidence bin (n: rows)".to_string(),
            ),
            (Glyph::Point, "bin's mean confidence".into()),
            (Glyph::Line, "accuracy = confidence".into()),
        ],
        Task::Regression => [
            (
                Glyph::Box(DIAGONAL.mix(0.18)),
                format!("±2 binomial s.e. at n = {}", r.n),
            ),
            (Glyph::Point, "observed coverage (rows inside)".into()),
            (Glyph::Line, "observed = nominal".into()),
        ],
    };
    let label = TextStyle::from((FONT_FAMILY, 15).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let (mut x, y) = (84, 14);
    for (glyph, text) in &entries {
        match glyph {
            Glyph::Box(c) => area.draw(&Rectangle::new([(x, y - 7), (x + 26, y + 7)], c.filled())),
            Glyph::Point => area.draw(&Circle::new((x + 13, y), 5, POINT.filled())),
            Glyph::Line => area.draw(&PathElement::new(
                vec![(x, y), (x + 26, y)],
                DIAGONAL.stroke_width(2),
            )),
        }
        .map_err(plot_err)?;
        area.draw_text(text, &label, (x + 34, y))
            .map_err(plot_err)?;
        x += 34 + 8 * text.chars().count() as i32 + 22;
    }
    let style = TextStyle::from((FONT_FAMILY, 14).into_font())
        .color(&NOTE)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let settings = format!(
        "model {} · target \"{}\" · {} predictive draws · seed {} · {} rows scored{}",
        r.model,
        r.target,
        r.draws,
        r.seed,
        r.n,
        if r.skipped_rows > 0 {
            format!(" ({} with unknown labels left out)", r.skipped_rows)
        } else {
            String::new()
        }
    );
    area.draw_text(&settings, &style, (14, 42))
        .map_err(plot_err)?;
    area.draw_text(&r.verdict, &style, (14, 64))
        .map_err(plot_err)?;
    Ok(())
}

/// Bars of accuracy per non-empty bin with their counts, and (mean confidence, accuracy)
/// points.
fn classification(chart: &mut Chart<'_, '_>, r: &MetricsReport) -> Result<()> {
    let bins: Vec<_> = r.reliability.iter().filter(|b| b.count > 0).collect();
    chart
        .draw_series(bins.iter().filter_map(|b| {
            let acc = b.accuracy?;
            Some(Rectangle::new(
                [(b.lower + 0.004, 0.0), (b.upper - 0.004, acc)],
                BAR.mix(0.45).filled(),
            ))
        }))
        .map_err(plot_err)?;
    // The outline of the whole bin's column, so that a bin of accuracy 0 is seen as one.
    chart
        .draw_series(bins.iter().map(|b| {
            Rectangle::new(
                [(b.lower + 0.004, 0.0), (b.upper - 0.004, 1.0)],
                BAR.mix(0.35).stroke_width(1),
            )
        }))
        .map_err(plot_err)?;
    chart
        .draw_series(bins.iter().filter_map(|b| {
            Some(Circle::new(
                (b.mean_confidence?, b.accuracy?),
                5,
                POINT.filled(),
            ))
        }))
        .map_err(plot_err)?;
    // The counts at the foot of the bars: always inside the chart, never on a point.
    let count = TextStyle::from((FONT_FAMILY, 13).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Bottom));
    for b in &bins {
        if b.accuracy.is_some() {
            let at = ((b.lower + b.upper) / 2.0, 0.015);
            chart
                .draw_series(std::iter::once(Text::new(
                    format!("n={}", b.count),
                    at,
                    count.clone(),
                )))
                .map_err(plot_err)?;
        }
    }
    Ok(())
}

/// The ±2 s.e. band around the diagonal, and the observed coverage per level with the rows
/// inside.
fn regression(chart: &mut Chart<'_, '_>, r: &MetricsReport) -> Result<()> {
    let n = r.n.max(1) as f64;
    let se = |l: f64| 2.0 * (l * (1.0 - l) / n).sqrt();
    let grid: Vec<f64> = (0..=100).map(|i| i as f64 / 100.0).collect();
    let mut band: Vec<(f64, f64)> = grid.iter().map(|&l| (l, (l + se(l)).min(1.0))).collect();
    band.extend(grid.iter().rev().map(|&l| (l, (l - se(l)).max(0.0))));
    chart
        .draw_series(std::iter::once(Polygon::new(
            band,
            DIAGONAL.mix(0.18).filled(),
        )))
        .map_err(plot_err)?;
    let pts: Vec<(f64, f64)> = r.coverage.iter().map(|c| (c.level, c.observed)).collect();
    chart
        .draw_series(LineSeries::new(pts.clone(), POINT.stroke_width(2)))
        .map_err(plot_err)?;
    chart
        .draw_series(pts.iter().map(|&p| Circle::new(p, 6, POINT.filled())))
        .map_err(plot_err)?;
    coverage_inset(chart, r)
}

/// The coverage table (nominal, observed, rows inside) in a white box in the lower right of
/// the chart, where no point of a usable model lies (labels next to the points collide at
/// 90 and 95 %).
fn coverage_inset(chart: &mut Chart<'_, '_>, r: &MetricsReport) -> Result<()> {
    let (x0, x1, dy) = (0.56, 0.98, 0.045);
    let top = 0.04 + dy * (r.coverage.len() + 1) as f64;
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(x0, 0.02), (x1, top)],
            ShapeStyle::from(WHITE.mix(0.92)).filled(),
        )))
        .map_err(plot_err)?;
    chart
        .draw_series(std::iter::once(Rectangle::new(
            [(x0, 0.02), (x1, top)],
            RGBColor(160, 160, 160).stroke_width(1),
        )))
        .map_err(plot_err)?;
    let style = TextStyle::from((FONT_FAMILY, 14).into_font())
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let mut lines = vec![[
        "nominal".to_string(),
        "observed".into(),
        "rows inside".into(),
    ]];
    lines.extend(r.coverage.iter().map(|c| {
        [
            format!("{:.0} %", 100.0 * c.level),
            format!("{:.1} %", 100.0 * c.observed),
            format!("{} of {}", c.inside, r.n),
        ]
    }));
    for (i, line) in lines.iter().enumerate() {
        let y = top - dy * (i as f64 + 0.6);
        for (cell, x) in line.iter().zip([x0 + 0.02, x0 + 0.14, x0 + 0.27]) {
            chart
                .draw_series(std::iter::once(Text::new(
                    cell.clone(),
                    (x, y),
                    style.clone(),
                )))
                .map_err(plot_err)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibration::{coverage_table, reliability, COVERAGE_LEVELS};
    use crate::metrics_report::ReportSettings;

    fn report(task: Task) -> MetricsReport {
        let settings = ReportSettings {
            model: "m.smi".into(),
            target: "y".into(),
            draws: 50,
            seed: 1,
        };
        let mut r: MetricsReport = serde_json::from_value(serde_json::json!({
            "task": task, "n": 20, "skipped_rows": 0, "nll": 1.0, "rmse": null,
            "accuracy": 0.9, "coverage": [], "calibration_error": 0.02, "interval": null,
            "ece": 0.05, "mean_confidence": 0.85, "reliability": [], "verdict": "v (x)",
            "model": settings.model, "target": settings.target, "draws": 50, "seed": 1
        }))
        .unwrap();
        r.coverage = coverage_table(&COVERAGE_LEVELS, &[9, 17, 18, 20], 20).unwrap();
        let conf = [0.95, 0.95, 0.7, 0.55, 0.99];
        r.reliability = reliability(&conf, &[true, true, false, true, true], 10).unwrap();
        r
    }

    #[test]
    fn writes_a_png_for_both_tasks() {
        let dir = tempfile::tempdir().unwrap();
        for task in [Task::Regression, Task::Classification] {
            let path = dir.path().join(format!("{}.png", task.name()));
            write(&path, &report(task)).unwrap();
            assert!(crate::plot::is_png(&path));
        }
        assert!(write(
            &dir.path().join("no/such/dir.png"),
            &report(Task::Regression)
        )
        .is_err());
    }
}
