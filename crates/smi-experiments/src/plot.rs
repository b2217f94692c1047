//! Shared figure helpers: colour ramps, markers, legend glyphs and footers (the embedded font
//! and PNG checks are [`smi_fit::plot`]'s).

pub use smi_fit::plot::{init_font, is_png, FONT_FAMILY};

use anyhow::{anyhow, Result};
use plotters::coord::CoordTranslate;
use plotters::prelude::*;

/// A colour from a viridis-like ramp, t ∈ [0, 1].
pub(crate) fn ramp(t: f64) -> RGBColor {
    const STOPS: [(f64, f64, f64); 5] = [
        (68.0, 1.0, 84.0),
        (59.0, 82.0, 139.0),
        (33.0, 145.0, 140.0),
        (94.0, 201.0, 98.0),
        (220.0, 200.0, 30.0),
    ];
    let t = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
    let i = (t.floor() as usize).min(STOPS.len() - 2);
    let f = t - i as f64;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let lerp = |x: f64, y: f64| (x + (y - x) * f).round() as u8;
    RGBColor(lerp(a.0, b.0), lerp(a.1, b.1), lerp(a.2, b.2))
}

/// Turns a plotters error into anyhow.
pub(crate) fn plot_err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing failed: {e:?}")
}

/// The outline of marker `shape` (0 circle, 1 triangle, 2 square, 3 diamond, 4 inverted
/// triangle) of radius `r` pixels around (dx, dy).
pub(crate) fn marker_outline(shape: usize, r: i32, (dx, dy): (i32, i32)) -> Vec<(i32, i32)> {
    let poly = |n: usize, start: f64, scale: f64| -> Vec<(i32, i32)> {
        (0..n)
            .map(|k| {
                let t = start + std::f64::consts::TAU * k as f64 / n as f64;
                let rr = r as f64 * scale;
                (
                    dx + (rr * t.cos()).round() as i32,
                    dy - (rr * t.sin()).round() as i32,
                )
            })
            .collect()
    };
    use std::f64::consts::FRAC_PI_2;
    match shape % 5 {
        0 => poly(20, 0.0, 1.0),
        1 => poly(3, FRAC_PI_2, 1.35),
        2 => poly(4, FRAC_PI_2 / 2.0, 1.25),
        3 => poly(4, 0.0, 1.35),
        _ => poly(3, -FRAC_PI_2, 1.35),
    }
}

/// Draws filled markers of shape `shape` (see [`marker_outline`]) at `pts`.
pub(crate) fn draw_markers<DB, CT>(
    chart: &mut ChartContext<'_, DB, CT>,
    pts: &[(f64, f64)],
    shape: usize,
    color: RGBColor,
    size: i32,
) -> Result<()>
where
    DB: DrawingBackend,
    CT: CoordTranslate<From = (f64, f64)>,
{
    let outline = marker_outline(shape, size, (0, 0));
    chart
        .draw_series(pts.iter().map(|&p| {
            EmptyElement::at(p)
                + Polygon::new(outline.clone(), color.filled())
                + PathElement::new(
                    outline
                        .iter()
                        .chain(outline.first())
                        .copied()
                        .collect::<Vec<_>>(),
                    WHITE.stroke_width(1),
                )
        }))
        .map_err(plot_err)?;
    Ok(())
}

/// The legend glyph closure of a series: a line with the series' marker.
macro_rules! glyph {
    ($color:expr, $shape:expr) => {{
        let (color, shape): (RGBColor, usize) = ($color, $shape);
        move |(x, y): (i32, i32)| {
            EmptyElement::at((x, y))
                + PathElement::new(vec![(0, 0), (24, 0)], color.stroke_width(3))
                + Polygon::new(
                    $crate::plot::marker_outline(shape, 5, (12, 0)),
                    color.filled(),
                )
        }
    }};
}
pub(crate) use glyph;

/// Draws the legend of `chart` at `position`: a white box of opacity `background` with a grey
/// border, labels in the embedded font at `font_size` px, `margin` px from the plot's edge.
pub(crate) fn draw_legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
    background: f64,
    font_size: u32,
    margin: u32,
) -> Result<()>
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(background))
        .border_style(RGBColor(160, 160, 160))
        .label_font((FONT_FAMILY, font_size))
        .margin(margin)
        .draw()
        .map_err(plot_err)?;
    Ok(())
}

/// Height in pixels of the settings line [`with_footer`] adds below a figure.
pub(crate) const FOOTER_HEIGHT: u32 = 30;

/// Splits `root` into the figure and a strip of [`FOOTER_HEIGHT`] pixels at the bottom in which
/// `text` (the settings the figure was made with: steps, draws, quick or paper) is written in
/// grey; gives the figure's part. Every figure states its settings this way.
pub(crate) fn with_footer<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    text: &str,
) -> Result<DrawingArea<DB, plotters::coord::Shift>> {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    let (_, h) = root.dim_in_pixel();
    let (body, foot) = root.split_vertically(h.saturating_sub(FOOTER_HEIGHT));
    let style = TextStyle::from((FONT_FAMILY, 15).into_font())
        .color(&RGBColor(90, 90, 90))
        .pos(Pos::new(HPos::Left, VPos::Center));
    foot.draw_text(text, &style, (12, FOOTER_HEIGHT as i32 / 2))
        .map_err(plot_err)?;
    Ok(body)
}

/// `n` with a space between groups of three digits (`60 000`), as the reports write counts.
pub(crate) fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}
