//! `wave-hdi.png`: a grid of panels (rows: network sizes, columns: methods) of the 90 % HDI band
//! of y_loc, the predictive mean, the true function and the training data, with labelled axes,
//! one legend for all panels and the run's settings at the bottom.

use std::path::Path;

use anyhow::Result;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::{Map, Value};

use super::common::{Method, PhaseArg, Problem, Size};
use super::method_size;
use crate::plot::{init_font, plot_err, with_footer, FONT_FAMILY, FOOTER_HEIGHT};
use crate::records;

const BAND: RGBColor = RGBColor(31, 119, 180);
const MEAN: RGBColor = RGBColor(8, 48, 107);
const DATA: RGBColor = RGBColor(214, 39, 40);
const GAP: RGBColor = RGBColor(236, 236, 236);
/// Height of the title and legend strip.
const HEAD: u32 = 78;

fn floats(r: &Map<String, Value>, key: &str) -> Vec<f64> {
    r.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

/// Which repeat the panels show, for the title: the bands are of one repeat each (index 4 as
/// in the paper's figure when there are more than 4), not averages over the repeats.
fn repeats_shown(bands: &[Map<String, Value>]) -> String {
    let mut shown: Vec<u64> = bands
        .iter()
        .filter_map(|b| records::get(b, "repeat").and_then(Value::as_u64))
        .collect();
    shown.sort_unstable();
    shown.dedup();
    match shown.as_slice() {
        [r] => format!("one fit each (repeat index {r}, not an average over repeats)"),
        [] => "one fit each".to_string(),
        many => format!(
            "one fit each (repeat indices {}, not an average over repeats)",
            many.iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join("/")
        ),
    }
}

/// A panel's note where its band leaves the y-limits `ylo..yhi` (the band is drawn cut at
/// them): how far it reaches, so that a cut band is not read as a narrow one. `None` where the
/// band stays within the limits.
fn cut_note(lower: &[f64], upper: &[f64], ylo: f64, yhi: f64) -> Option<String> {
    let low = lower.iter().copied().fold(f64::INFINITY, f64::min);
    let high = upper.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let parts: Vec<String> = [(high > yhi, high), (low < ylo, low)]
        .iter()
        .filter(|(cut, _)| *cut)
        .map(|(_, v)| format!("{v:.1}"))
        .collect();
    (!parts.is_empty()).then(|| format!("band cut at the axis: reaches {}", parts.join(" and ")))
}

/// The title and the legend shared by all panels.
fn head<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    quick: bool,
    shown: &str,
) -> Result<()> {
    let (w, _) = area.dim_in_pixel();
    let base = format!("1-D wave: 90 % HDI of y_loc per method, {shown}");
    let title = if quick {
        format!("{base} (QUICK RUN: reduced budgets, see the settings below)")
    } else {
        base
    };
    let centred =
        TextStyle::from((FONT_FAMILY, 20).into_font()).pos(Pos::new(HPos::Center, VPos::Center));
    area.draw_text(&title, &centred, (w as i32 / 2, 18))
        .map_err(plot_err)?;
    let label =
        TextStyle::from((FONT_FAMILY, 15).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let entries: [(&str, u8); 5] = [
        ("90 % HDI of y_loc", 0),
        ("predictive mean of y_loc", 1),
        ("true function f(x)", 2),
        ("training data (40 points)", 3),
        ("gap between the clusters", 4),
    ];
    // Lay the entries out in one row, centred.
    let widths: Vec<i32> = entries
        .iter()
        .map(|(t, _)| 36 + 8 * t.chars().count() as i32 + 24)
        .collect();
    let total: i32 = widths.iter().sum();
    let (mut x, y) = (((w as i32) - total).max(0) / 2, 54);
    for ((text, kind), width) in entries.iter().zip(&widths) {
        match kind {
            0 => area.draw(&Rectangle::new(
                [(x, y - 7), (x + 28, y + 7)],
                BAND.mix(0.35).filled(),
            )),
            1 => area.draw(&PathElement::new(
                vec![(x, y), (x + 28, y)],
                MEAN.stroke_width(2),
            )),
            2 => area.draw(&PathElement::new(
                vec![(x, y), (x + 28, y)],
                BLACK.stroke_width(1),
            )),
            3 => area.draw(&Circle::new((x + 14, y), 3, DATA.filled())),
            _ => area.draw(&Rectangle::new([(x, y - 7), (x + 28, y + 7)], GAP.filled())),
        }
        .map_err(plot_err)?;
        area.draw_text(text, &label, (x + 36, y))
            .map_err(plot_err)?;
        x += width;
    }
    Ok(())
}

/// Draws the figure of `bands` (one per size × method) with `settings` (see
/// [`super::stamp::settings_line`]) at the bottom; `quick` puts it in the title too.
pub(super) fn figure(
    bands: &[Map<String, Value>],
    settings: &str,
    quick: bool,
    path: &Path,
) -> Result<()> {
    init_font();
    let mut sizes: Vec<Size> = Vec::new();
    let mut methods: Vec<Method> = Vec::new();
    for b in bands {
        if let Some((s, m)) = method_size(b) {
            if !sizes.contains(&s) {
                sizes.push(s);
            }
            if !methods.contains(&m) {
                methods.push(m);
            }
        }
    }
    sizes.sort();
    methods.sort();
    let phase = PhaseArg::from_name(bands.first().and_then(|b| records::text(b, "phase")));
    let problem = Problem::new(Size::Low, phase)?;
    let train = &problem.data.train;
    let truth: Vec<(f64, f64)> = problem
        .data
        .grid
        .x
        .iter()
        .map(|&x| (x, smi_data::wave_fn(x, phase.phase())))
        .collect();
    let (ymin, ymax) = truth
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &(_, y)| {
            (a.min(y), b.max(y))
        });
    let (ylo, yhi) = (ymin - 3.0, ymax + 3.0);
    let (cols, rows) = (methods.len().max(1), sizes.len().max(1));
    let (pw, ph) = (340u32, 300u32);
    // Wide enough for the legend and the settings line whatever the number of methods.
    let width = (pw * cols as u32).max(1300);
    let root = BitMapBackend::new(path, (width, ph * rows as u32 + HEAD + FOOTER_HEIGHT))
        .into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let root = with_footer(&root, settings)?;
    let (top, body) = root.split_vertically(HEAD);
    head(&top, quick, &repeats_shown(bands))?;
    let body = body.margin(0, 0, 0, (width - pw * cols as u32) / 2);
    let panels = body.split_evenly((rows, cols));
    for (si, &size) in sizes.iter().enumerate() {
        for (mi, &method) in methods.iter().enumerate() {
            let area = &panels[si * cols + mi];
            let Some(b) = bands
                .iter()
                .find(|b| method_size(b) == Some((size, method)))
            else {
                continue;
            };
            let (x, lo, up, mean) = (
                floats(b, "x"),
                floats(b, "lower"),
                floats(b, "upper"),
                floats(b, "mean"),
            );
            let title = format!(
                "{} — {} (width {})",
                method.label(),
                size.name(),
                size.hidden()
            );
            let mut chart = ChartBuilder::on(area)
                .caption(title, (FONT_FAMILY, 16))
                .margin(8)
                .x_label_area_size(38)
                .y_label_area_size(44)
                .build_cartesian_2d(-2.0f64..2.0f64, ylo..yhi)
                .map_err(plot_err)?;
            chart
                .configure_mesh()
                .x_labels(5)
                .y_labels(6)
                .x_desc("x")
                .y_desc("y")
                .axis_desc_style((FONT_FAMILY, 14))
                .x_label_formatter(&|v| format!("{v:.0}"))
                .y_label_formatter(&|v| format!("{v:.0}"))
                .light_line_style(WHITE.mix(0.0))
                .label_style((FONT_FAMILY, 12))
                .draw()
                .map_err(plot_err)?;
            // Shade the between-cluster gap lightly so the regions are visible.
            let gap = problem.settings.between;
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(gap.0, ylo), (gap.1, yhi)],
                    GAP.filled(),
                )))
                .map_err(plot_err)?;
            let clip = |v: f64| v.clamp(ylo, yhi);
            let mut poly: Vec<(f64, f64)> =
                x.iter().zip(&up).map(|(&a, &b)| (a, clip(b))).collect();
            poly.extend(x.iter().zip(&lo).rev().map(|(&a, &b)| (a, clip(b))));
            chart
                .draw_series(std::iter::once(Polygon::new(poly, BAND.mix(0.35))))
                .map_err(plot_err)?;
            for edge in [&lo, &up] {
                chart
                    .draw_series(LineSeries::new(
                        x.iter().zip(edge.iter()).map(|(&a, &b)| (a, clip(b))),
                        BAND.mix(0.8).stroke_width(1),
                    ))
                    .map_err(plot_err)?;
            }
            if let Some(note) = cut_note(&lo, &up, ylo, yhi) {
                // on a white box, so that it reads over the band: its size in data units from
                // the text's in pixels (about 6.5 px a character, 15 px a line at size 12)
                let (px_x, px_y) = chart.plotting_area().dim_in_pixel();
                let per_px = (
                    4.0 / f64::from(px_x.max(1)),
                    (yhi - ylo) / f64::from(px_y.max(1)),
                );
                let (w, h) = (
                    6.5 * note.chars().count() as f64 * per_px.0,
                    15.0 * per_px.1,
                );
                let corner = (-1.97, yhi - 0.1 * h);
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [corner, (corner.0 + w, corner.1 - h)],
                        WHITE.mix(0.85).filled(),
                    )))
                    .map_err(plot_err)?;
                let style = TextStyle::from((FONT_FAMILY, 12).into_font())
                    .color(&MEAN)
                    .pos(Pos::new(HPos::Left, VPos::Top));
                let at = (corner.0 + 0.01, corner.1 - 0.1 * h);
                chart
                    .draw_series(std::iter::once(Text::new(note, at, style)))
                    .map_err(plot_err)?;
            }
            chart
                .draw_series(LineSeries::new(
                    truth.iter().copied(),
                    BLACK.stroke_width(1),
                ))
                .map_err(plot_err)?;
            chart
                .draw_series(LineSeries::new(
                    x.iter().zip(&mean).map(|(&a, &b)| (a, clip(b))),
                    MEAN.stroke_width(2),
                ))
                .map_err(plot_err)?;
            chart
                .draw_series(
                    train
                        .x
                        .iter()
                        .zip(&train.y)
                        .map(|(&a, &b)| Circle::new((a, b), 2, DATA.filled())),
                )
                .map_err(plot_err)?;
        }
    }
    root.present().map_err(plot_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::cut_note;

    #[test]
    fn a_band_beyond_the_limits_says_how_far_it_reaches() {
        assert_eq!(cut_note(&[-1.0, 0.0], &[1.0, 2.0], -8.0, 11.0), None);
        assert_eq!(
            cut_note(&[-1.0, -14.24], &[1.0, 2.0], -8.0, 11.0).as_deref(),
            Some("band cut at the axis: reaches -14.2")
        );
        assert_eq!(
            cut_note(&[-9.0, 0.0], &[12.5, 2.0], -8.0, 11.0).as_deref(),
            Some("band cut at the axis: reaches 12.5 and -9.0")
        );
    }
}
