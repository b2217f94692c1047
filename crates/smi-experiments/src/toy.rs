//! The paper's appendix toy figure: two-particle SMI (Normal guide) and two-particle SVGD
//! approximations of the 2-D standard Gaussian after `--steps` steps (10 000 by default, which
//! is converged; 1 000 with `--quick`), with the Stein forces at the final particles and the
//! parts of SMI's mixture variance. The figure states the steps it was made with.
//!
//! Settings: SMI as in docs/algorithms.md §7.1 (init radius 2, Adagrad(0.05), S = 100, guide init scale 0.1);
//! SVGD with Adam(0.05) and init radius 2 (in two dimensions it converges without §7.1's wide
//! init); RBF kernel, α = 1. The forces drawn are averages over 256 evaluations of
//! [`smi::SteinVi::force`] at the final particles: the attraction is φ with α = 0 on the same noise,
//! the repulsion the remainder.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::{json, Map, Value};
use smi::testing::DiagNormal;
use smi::{Engine, Init, Method, MethodSettings, OptimizerSettings, RunSettings};

use crate::plot::{draw_legend, draw_markers, glyph, plot_err};
use crate::plot::{init_font, is_png, thousands, with_footer, FONT_FAMILY, FOOTER_HEIGHT};
use crate::records;
use crate::seeds::mix;
use smi_fit::progress::Bar;

/// The records' experiment name (`<out>/toy.jsonl`).
pub const EXPERIMENT: &str = "toy";

const DEFAULT_STEPS: u64 = 10_000;
const QUICK_STEPS: u64 = 1_000;
const FORCE_DRAWS: usize = 256;
const PARTICLES: usize = 2;
const DIM: usize = 2;

/// Options of `smi reproduce toy`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Output folder for records, tables and figures.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Optimisation steps of each fit [default: 10000, or 1000 with --quick].
    #[arg(long)]
    pub steps: Option<u64>,
    /// Base seed; SMI and SVGD derive their own seeds from it.
    #[arg(long, default_value_t = 10)]
    pub seed: u64,
    /// A short run (1000 steps unless --steps is given).
    #[arg(long)]
    pub quick: bool,
}

/// The figure's engine settings (docs/algorithms.md §7.1): SMI with S = 100 and Adagrad(0.05), SVGD with
/// Adam(0.05); both m = 2 from a uniform(2) init, α = 1.
fn settings(method: Method, seed: u64) -> MethodSettings {
    let s = method.preset(0);
    let s = if method == Method::Smi {
        s.with_elbo_draws(100)
            .with_optimizer(OptimizerSettings::adagrad(0.05))
    } else {
        s.with_optimizer(OptimizerSettings::adam(0.05))
    };
    let mut s = s
        .with_init(Init::Uniform { radius: 2.0 })
        .with_particles(PARTICLES)
        .with_seed(seed);
    if let MethodSettings::Stein(st) = &mut s {
        st.repulsion_temperature = 1.0;
        // SVGD on NumPyro's target, without the log-Jacobian (SteinSettings::svgd_numpyro_parity).
        st.jacobian = !method.is_point_mass();
    }
    s
}

/// Runs the experiment.
pub fn run(args: &Args) -> Result<()> {
    let steps = match (args.steps, args.quick) {
        (Some(0), _) => anyhow::bail!("--steps must be at least 1"),
        (Some(s), _) => s,
        (None, true) => QUICK_STEPS,
        (None, false) => DEFAULT_STEPS,
    };
    let target = DiagNormal::standard(DIM).context("cannot build the target N(0, I₂)")?;
    for (k, method) in [Method::Smi, Method::Svgd].into_iter().enumerate() {
        let seed = mix(mix(args.seed) ^ (k as u64 + 1));
        let rec = fit(&target, method, steps, seed, args.seed)?;
        records::append(&args.out, EXPERIMENT, rec)
            .with_context(|| format!("cannot write the {} record", method.name()))?;
    }
    report(&args.out)?;
    eprintln!("wrote {}", args.out.join("toy.png").display());
    Ok(())
}

fn fit(
    target: &DiagNormal,
    method: Method,
    steps: u64,
    seed: u64,
    base_seed: u64,
) -> Result<Map<String, Value>> {
    let settings = settings(method, seed);
    let label = format!("{}-{PARTICLES} on N(0, I₂)", method.name().to_uppercase());
    let engine = settings
        .build_stein(target)
        .with_context(|| format!("invalid settings for {label}"))?;
    let mut no_repulsion = settings.clone();
    if let MethodSettings::Stein(st) = &mut no_repulsion {
        st.repulsion_temperature = 0.0;
    }
    let attraction_engine = no_repulsion
        .build_stein(target)
        .context("invalid settings without repulsion")?;
    let state = engine.init().context("cannot initialise the particles")?;
    let mut bar = Bar::new(&label, (steps / 200).max(1));
    let start = Instant::now();
    let result = smi::run(&engine, state, &RunSettings::steps(steps), &mut bar)
        .with_context(|| format!("the {label} run failed"))?;
    let seconds = start.elapsed().as_secs_f64();

    // Average forces at the final particles; the attraction on the same noise as the total.
    let mut probe = result.state.clone();
    let p = probe.particles.cols();
    let mut total = vec![0.0; PARTICLES * p];
    let mut attraction = vec![0.0; PARTICLES * p];
    for _ in 0..FORCE_DRAWS {
        let mut twin = probe.clone();
        let (phi, _) = engine
            .force(&mut probe, None)
            .context("cannot evaluate the Stein force")?;
        let (att, _) = attraction_engine
            .force(&mut twin, None)
            .context("cannot evaluate the attraction")?;
        for (t, v) in total.iter_mut().zip(phi.as_slice()) {
            *t += v / FORCE_DRAWS as f64;
        }
        for (a, v) in attraction.iter_mut().zip(att.as_slice()) {
            *a += v / FORCE_DRAWS as f64;
        }
    }
    let post = engine.posterior(&result.state);
    let (locs, scales) = (post.locations(), post.scales());
    let var = post.marginal_variance();
    let mean = post.mean();
    let loc_spread = locs.col_variances();
    let particles: Vec<Value> = (0..PARTICLES)
        .map(|i| {
            let row = |v: &[f64]| v[i * p..i * p + DIM].to_vec();
            let rep: Vec<f64> = row(&total)
                .iter()
                .zip(row(&attraction))
                .map(|(t, a)| t - a)
                .collect();
            json!({
                "loc": locs.row(i),
                "scale": scales.row(i),
                "attraction": row(&attraction),
                "repulsion": rep,
                "total": row(&total),
            })
        })
        .collect();
    let frobenius = var.iter().map(|v| (v - 1.0).powi(2)).sum::<f64>().sqrt();
    eprintln!(
        "{label}: variance ({:.3}, {:.3}), mean ({:+.3}, {:+.3}) ({seconds:.1} s)",
        var[0], var[1], mean[0], mean[1]
    );
    let config = settings.to_json();
    let Value::Object(m) = json!({
        "experiment": EXPERIMENT,
        "method": method.name(),
        "particles": PARTICLES,
        "dim": DIM,
        "alpha": 1.0,
        "seed": seed,
        "base_seed": base_seed,
        "steps": steps,
        "seconds": seconds,
        "config": config,
        "force_draws": FORCE_DRAWS,
        "metrics": {
            "variance": var,
            "mean_variance": var.iter().sum::<f64>() / DIM as f64,
            "frobenius": frobenius,
            "mean": mean,
            "mean_location": mean.iter().sum::<f64>() / DIM as f64,
            "loc_spread": loc_spread,
        },
        "state": { "particles": particles },
        "version": records::VERSION,
    }) else {
        unreachable!("json! of an object literal is an object")
    };
    Ok(m)
}

/// What the figure needs of one method's record.
#[derive(Clone, Debug, Default)]
struct Fit {
    steps: u64,
    locs: Vec<[f64; 2]>,
    scales: Vec<[f64; 2]>,
    attraction: Vec<[f64; 2]>,
    repulsion: Vec<[f64; 2]>,
    variance: [f64; 2],
    loc_spread: [f64; 2],
}

fn pair(v: Option<&Value>) -> Option<[f64; 2]> {
    let a = v?.as_array()?;
    Some([a.first()?.as_f64()?, a.get(1)?.as_f64()?])
}

fn parse_fit(r: &Map<String, Value>) -> Option<Fit> {
    let ps = records::get(r, "state.particles")?.as_array()?;
    let mut f = Fit {
        steps: records::get(r, "steps")?.as_u64()?,
        variance: pair(records::get(r, "metrics.variance"))?,
        loc_spread: pair(records::get(r, "metrics.loc_spread"))?,
        ..Default::default()
    };
    for p in ps {
        f.locs.push(pair(p.get("loc"))?);
        f.scales.push(pair(p.get("scale"))?);
        f.attraction.push(pair(p.get("attraction"))?);
        f.repulsion.push(pair(p.get("repulsion"))?);
    }
    Some(f)
}

/// Rebuilds `toy.png` from the latest SMI and SVGD records (nothing without records).
pub fn report(out: &Path) -> Result<()> {
    let recs = records::read(out, EXPERIMENT)?;
    let latest = |m: &str| {
        recs.iter()
            .rev()
            .find(|r| records::text(r, "method") == Some(m))
            .and_then(parse_fit)
    };
    let (smi_fit, svgd_fit) = (latest("smi"), latest("svgd"));
    if smi_fit.is_none() && svgd_fit.is_none() {
        return Ok(());
    }
    let p = out.join("toy.png");
    figure(smi_fit.as_ref(), svgd_fit.as_ref(), &p)
        .with_context(|| format!("cannot draw {}", p.display()))?;
    anyhow::ensure!(is_png(&p), "{} is not a valid PNG", p.display());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Figure.

const PARTICLE_COLORS: [RGBColor; 2] = [RGBColor(230, 120, 0), RGBColor(140, 60, 170)];
const ATTRACTION: RGBColor = RGBColor(0, 130, 90);
const REPULSION: RGBColor = RGBColor(200, 30, 45);
const SVGD_COLOR: RGBColor = RGBColor(0, 158, 115);
const LIM: f64 = 3.2;

/// The settings line of the figure: steps of each fit against the default, quick or not.
fn settings_line(smi_fit: Option<&Fit>, svgd_fit: Option<&Fit>) -> String {
    let steps = |f: Option<&Fit>| f.map_or("–".to_string(), |f| thousands(f.steps));
    let all: Vec<u64> = [smi_fit, svgd_fit]
        .into_iter()
        .flatten()
        .map(|f| f.steps)
        .collect();
    let kind = if all.iter().all(|&s| s == DEFAULT_STEPS) {
        "full run".to_string()
    } else if all.iter().all(|&s| s == QUICK_STEPS) {
        format!(
            "quick run (--quick; full run: {} steps)",
            thousands(DEFAULT_STEPS)
        )
    } else {
        format!("custom steps (full run: {})", thousands(DEFAULT_STEPS))
    };
    format!(
        "Settings: {kind}; SMI-2 {} steps (S = 100, Adagrad(0.05)), SVGD-2 {} steps (Adam(0.05)); \
         α = 1; forces averaged over {FORCE_DRAWS} draws at the final particles.",
        steps(smi_fit),
        steps(svgd_fit)
    )
}

/// The figure's title: the steps the fits ran (not "converged": a short run may not be).
fn title(smi_fit: Option<&Fit>, svgd_fit: Option<&Fit>) -> String {
    let mut steps: Vec<u64> = [smi_fit, svgd_fit]
        .into_iter()
        .flatten()
        .map(|f| f.steps)
        .collect();
    steps.dedup();
    let after = match steps.as_slice() {
        [s] => format!("after {} steps", thousands(*s)),
        _ => "after the steps below".to_string(),
    };
    format!("Two particles on N(0, I₂): SMI mixture vs SVGD {after}")
}

fn figure(smi_fit: Option<&Fit>, svgd_fit: Option<&Fit>, path: &Path) -> Result<()> {
    init_font();
    let root = BitMapBackend::new(path, (1800, 640 + FOOTER_HEIGHT)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let root = with_footer(&root, &settings_line(smi_fit, svgd_fit))?;
    let (title_area, body) = root.split_vertically(56);
    let centred =
        TextStyle::from((FONT_FAMILY, 28).into_font()).pos(Pos::new(HPos::Center, VPos::Center));
    title_area
        .draw_text(&title(smi_fit, svgd_fit), &centred, (900, 30))
        .map_err(plot_err)?;
    let panels = body.split_by_breakpoints([580, 1160], [] as [u32; 0]);
    // Arrow scale shared by both force panels: the longest force is drawn 1.2 units long.
    let longest = [smi_fit, svgd_fit]
        .into_iter()
        .flatten()
        .flat_map(|f| f.attraction.iter().chain(&f.repulsion))
        .map(|v| v[0].hypot(v[1]))
        .fold(0.0_f64, f64::max);
    let scale = if longest > 0.0 { 1.2 / longest } else { 1.0 };
    force_panel(&panels[0], smi_fit, "SMI-2 (Normal guide)", true, scale)?;
    force_panel(&panels[1], svgd_fit, "SVGD-2 (point masses)", false, scale)?;
    variance_panel(&panels[2], smi_fit, svgd_fit)?;
    root.present().map_err(plot_err)?;
    Ok(())
}

/// Points of the ellipse (cx, cy) + (a cos t, b sin t).
fn ellipse(c: [f64; 2], a: f64, b: f64) -> Vec<(f64, f64)> {
    (0..=96)
        .map(|k| {
            let t = std::f64::consts::TAU * k as f64 / 96.0;
            (c[0] + a * t.cos(), c[1] + b * t.sin())
        })
        .collect()
}

/// Blends white into `c` by `t` ∈ [0, 1].
fn tint(c: RGBColor, t: f64) -> RGBColor {
    let f = |x: u8| (255.0 - (255.0 - x as f64) * t).round() as u8;
    RGBColor(f(c.0), f(c.1), f(c.2))
}

fn force_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    fit: Option<&Fit>,
    title: &str,
    ellipses: bool,
    arrow_scale: f64,
) -> Result<()> {
    let mut chart = ChartBuilder::on(area)
        .caption(title, (FONT_FAMILY, 22))
        .margin(14)
        .x_label_area_size(42)
        .y_label_area_size(48)
        .build_cartesian_2d(-LIM..LIM, -LIM..LIM)
        .map_err(plot_err)?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("θ₁")
        .y_desc("θ₂")
        .axis_desc_style((FONT_FAMILY, 18))
        .label_style((FONT_FAMILY, 14))
        .draw()
        .map_err(plot_err)?;
    // Target density: filled bands between the Mahalanobis radii, darker towards the centre.
    let radii = [3.0, 2.5, 2.0, 1.5, 1.0, 0.5];
    let base = RGBColor(66, 133, 200);
    for (k, r) in radii.iter().enumerate() {
        let t = 0.08 + 0.07 * k as f64;
        chart
            .draw_series(std::iter::once(Polygon::new(
                ellipse([0.0, 0.0], *r, *r),
                tint(base, t).filled(),
            )))
            .map_err(plot_err)?;
    }
    chart
        .draw_series(radii.iter().map(|r| {
            PathElement::new(ellipse([0.0, 0.0], *r, *r), tint(base, 0.6).stroke_width(1))
        }))
        .map_err(plot_err)?
        .label("target N(0, I₂) density contours")
        .legend(move |(x, y)| {
            Rectangle::new([(x, y - 6), (x + 24, y + 6)], tint(base, 0.35).filled())
        });
    let Some(fit) = fit else {
        chart
            .draw_series(std::iter::once(Text::new(
                "no record",
                (-0.8, 0.0),
                (FONT_FAMILY, 22),
            )))
            .map_err(plot_err)?;
        return Ok(());
    };
    if ellipses {
        for (i, (l, s)) in fit.locs.iter().zip(&fit.scales).enumerate() {
            let c = PARTICLE_COLORS[i % 2];
            chart
                .draw_series(std::iter::once(PathElement::new(
                    ellipse(*l, s[0], s[1]),
                    c.stroke_width(3),
                )))
                .map_err(plot_err)?
                .label(format!(
                    "component {} (1σ: {:.2} × {:.2})",
                    i + 1,
                    s[0],
                    s[1]
                ))
                .legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + Circle::new((12, 0), 7, c.stroke_width(3))
                        + Circle::new((12, 0), 3, c.filled())
                });
        }
    }
    // Forces.
    let mut first = true;
    for (l, (a, r)) in fit
        .locs
        .iter()
        .zip(fit.attraction.iter().zip(&fit.repulsion))
    {
        for (v, color, name) in [(a, ATTRACTION, "attraction"), (r, REPULSION, "repulsion")] {
            let tip = [l[0] + arrow_scale * v[0], l[1] + arrow_scale * v[1]];
            let (from, tip) = shifted_right(*l, tip, ARROW_SHIFT);
            let (shaft, head) = arrow(from, tip);
            if !head.is_empty() {
                chart
                    .draw_series(std::iter::once(Polygon::new(head, color.filled())))
                    .map_err(plot_err)?;
            }
            let anno = chart
                .draw_series(std::iter::once(PathElement::new(
                    shaft,
                    color.stroke_width(3),
                )))
                .map_err(plot_err)?;
            if first {
                anno.label(format!("{name} (avg. of {FORCE_DRAWS} draws)"))
                    .legend(move |(x, y)| {
                        EmptyElement::at((x, y))
                            + PathElement::new(vec![(0, 0), (20, 0)], color.stroke_width(3))
                            + Polygon::new(vec![(26, 0), (18, -5), (18, 5)], color.filled())
                    });
            }
        }
        first = false;
    }
    for (i, l) in fit.locs.iter().enumerate() {
        let c = if ellipses {
            PARTICLE_COLORS[i % 2]
        } else {
            SVGD_COLOR
        };
        draw_markers(&mut chart, &[(l[0], l[1])], 0, c, 7)?;
    }
    if !ellipses {
        chart
            .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
            .map_err(plot_err)?
            .label("particles")
            .legend(glyph!(SVGD_COLOR, 0));
    }
    chart
        .draw_series(std::iter::once(Text::new(
            format!(
                "{} steps; variance ({:.2}, {:.2})",
                thousands(fit.steps),
                fit.variance[0],
                fit.variance[1]
            ),
            (-LIM + 0.15, -LIM + 0.4),
            (FONT_FAMILY, 15),
        )))
        .map_err(plot_err)?;
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, 0.85, 14, 8)?;
    Ok(())
}

/// How far (in data units) every force arrow is moved to its own right. Arrows along one line
/// in opposite directions (one particle's attraction and the other's, or a particle's attraction
/// and repulsion at equilibrium) then run side by side instead of over each other.
const ARROW_SHIFT: f64 = 0.06;

/// `from` and `to` moved by `d` perpendicular to the segment, to its right.
fn shifted_right(from: [f64; 2], to: [f64; 2], d: f64) -> ([f64; 2], [f64; 2]) {
    let (dx, dy) = (to[0] - from[0], to[1] - from[1]);
    let len = dx.hypot(dy);
    if len < 1e-12 {
        return (from, to);
    }
    let (nx, ny) = (dy / len * d, -dx / len * d);
    ([from[0] + nx, from[1] + ny], [to[0] + nx, to[1] + ny])
}

/// A polyline or polygon in data coordinates.
type Path2 = Vec<(f64, f64)>;

/// The shaft and head of an arrow from `from` to `to` in data coordinates (equal aspect
/// assumed; the head is 0.16 units long).
fn arrow(from: [f64; 2], to: [f64; 2]) -> (Path2, Path2) {
    let (dx, dy) = (to[0] - from[0], to[1] - from[1]);
    let len = dx.hypot(dy);
    if len < 1e-9 {
        return (vec![(from[0], from[1])], Vec::new());
    }
    let (ux, uy) = (dx / len, dy / len);
    let head = 0.16_f64.min(0.6 * len);
    let base = (to[0] - ux * head, to[1] - uy * head);
    let w = head * 0.45;
    (
        vec![(from[0], from[1]), base],
        vec![
            (to[0], to[1]),
            (base.0 - uy * w, base.1 + ux * w),
            (base.0 + uy * w, base.1 - ux * w),
        ],
    )
}

fn variance_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    smi_fit: Option<&Fit>,
    svgd_fit: Option<&Fit>,
) -> Result<()> {
    const WITHIN: RGBColor = RGBColor(0, 114, 178);
    const BETWEEN: RGBColor = RGBColor(120, 190, 235);
    let top = [smi_fit, svgd_fit]
        .into_iter()
        .flatten()
        .flat_map(|f| f.variance.iter().copied())
        .filter(|v| v.is_finite())
        .fold(1.0_f64, f64::max);
    let y_max = top * 1.15 / 0.62;
    let mut chart = ChartBuilder::on(area)
        .caption("Parts of the variance per coordinate", (FONT_FAMILY, 22))
        .margin(14)
        .x_label_area_size(42)
        .y_label_area_size(56)
        .build_cartesian_2d(0.0..2.0, 0.0..y_max)
        .map_err(plot_err)?;
    let x_fmt = |x: &f64| -> String {
        if (x - 0.5).abs() < 1e-6 {
            "θ₁".into()
        } else if (x - 1.5).abs() < 1e-6 {
            "θ₂".into()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(5)
        .x_label_formatter(&x_fmt)
        .y_desc("variance")
        .axis_desc_style((FONT_FAMILY, 18))
        .label_style((FONT_FAMILY, 16))
        .light_line_style(RGBColor(238, 238, 238))
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()
        .map_err(plot_err)?;
    // Bars: (left, right, bottom, top) in data coordinates.
    let bar = |c: usize, off: f64, w: f64, lo: f64, hi: f64| {
        let x = c as f64 + 0.5 + off;
        [(x - w / 2.0, lo), (x + w / 2.0, hi)]
    };
    let mut labels: Vec<(f64, f64, String)> = Vec::new();
    if let Some(f) = smi_fit {
        for (i, s) in f.scales.iter().enumerate().take(2) {
            let color = PARTICLE_COLORS[i % 2];
            let off = -0.34 + 0.14 * i as f64;
            chart
                .draw_series((0..2).map(|c| {
                    Rectangle::new(
                        bar(c, off, 0.12, 0.0, s[c] * s[c]),
                        color.mix(0.85).filled(),
                    )
                }))
                .map_err(plot_err)?
                .label(format!("σ² of SMI component {}", i + 1))
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 6), (x + 24, y + 6)], color.mix(0.85).filled())
                });
            for (c, sc) in s.iter().enumerate() {
                labels.push((c as f64 + 0.5 + off, sc * sc, format!("{:.2}", sc * sc)));
            }
        }
        let within: Vec<f64> = (0..2)
            .map(|c| f.scales.iter().map(|s| s[c] * s[c]).sum::<f64>() / f.scales.len() as f64)
            .collect();
        chart
            .draw_series(
                (0..2).map(|c| Rectangle::new(bar(c, 0.02, 0.16, 0.0, within[c]), WITHIN.filled())),
            )
            .map_err(plot_err)?
            .label("SMI within: mean σ²")
            .legend(|(x, y)| Rectangle::new([(x, y - 6), (x + 24, y + 6)], WITHIN.filled()));
        chart
            .draw_series((0..2).map(|c| {
                Rectangle::new(
                    bar(c, 0.02, 0.16, within[c], within[c] + f.loc_spread[c]),
                    BETWEEN.filled(),
                )
            }))
            .map_err(plot_err)?
            .label("SMI between: spread of the locs")
            .legend(|(x, y)| Rectangle::new([(x, y - 6), (x + 24, y + 6)], BETWEEN.filled()));
        labels.extend((0..2).map(|c| {
            let v = f.variance[c];
            (c as f64 + 0.52, v, format!("mixture {v:.2}"))
        }));
    }
    if let Some(f) = svgd_fit {
        chart
            .draw_series((0..2).map(|c| {
                Rectangle::new(bar(c, 0.26, 0.14, 0.0, f.variance[c]), SVGD_COLOR.filled())
            }))
            .map_err(plot_err)?
            .label("SVGD-2: particle variance")
            .legend(|(x, y)| Rectangle::new([(x, y - 6), (x + 24, y + 6)], SVGD_COLOR.filled()));
        labels.extend((0..2).map(|c| {
            (
                c as f64 + 0.76,
                f.variance[c],
                format!("{:.2}", f.variance[c]),
            )
        }));
    }
    // The target variance 1, dashed.
    chart
        .draw_series((0..40).step_by(2).map(|k| {
            let x0 = k as f64 * 0.05;
            PathElement::new(
                vec![(x0, 1.0), (x0 + 0.05, 1.0)],
                BLACK.mix(0.6).stroke_width(2),
            )
        }))
        .map_err(plot_err)?
        .label("target variance 1")
        .legend(|(x, y)| {
            PathElement::new(vec![(x, y), (x + 10, y)], BLACK.mix(0.6).stroke_width(2))
        });
    let font = (FONT_FAMILY, 13).into_font();
    chart
        .draw_series(labels.into_iter().map(|(x, y, t)| {
            let style = TextStyle::from(font.clone()).pos(Pos::new(HPos::Center, VPos::Bottom));
            Text::new(t, (x, y + 0.01 * y_max), style)
        }))
        .map_err(plot_err)?;
    draw_legend(&mut chart, SeriesLabelPosition::UpperLeft, 0.9, 14, 8)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(steps: u64) -> Fit {
        Fit {
            steps,
            ..Default::default()
        }
    }

    #[test]
    fn the_figure_states_its_steps_and_claims_no_convergence() {
        let quick = fit(QUICK_STEPS);
        let t = title(Some(&quick), Some(&quick));
        assert!(
            t.ends_with("after 1 000 steps") && !t.contains("convergence"),
            "{t}"
        );
        let s = settings_line(Some(&quick), Some(&quick));
        assert!(s.contains("quick run") && s.contains("10 000"), "{s}");
        let full = fit(DEFAULT_STEPS);
        assert!(settings_line(Some(&full), None).contains("full run"));
        assert!(settings_line(Some(&full), Some(&quick)).contains("custom steps"));
    }

    #[test]
    fn arrows_along_one_line_run_side_by_side() {
        // Opposite arrows on the x axis move to opposite sides of it.
        let (a, _) = shifted_right([0.0, 0.0], [1.0, 0.0], ARROW_SHIFT);
        let (b, _) = shifted_right([1.0, 0.0], [0.0, 0.0], ARROW_SHIFT);
        assert!(a[1] < 0.0 && b[1] > 0.0 && (a[1] + b[1]).abs() < 1e-12);
    }
}
