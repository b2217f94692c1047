//! The 1-D wave experiment (docs/algorithms.md §7.2): in-between uncertainty of SMI, SVGD, ASVGD, OVI, MAP
//! and NUTS on a two-cluster regression problem.
//!
//! Records: `<out>/wave.jsonl` (one per method × size × repeat: LPPD per region, proper and the
//! paper's SVGD artifact, and the mean 90 % HDI width of y_loc in and between the clusters) and
//! `<out>/wave-bands.jsonl` (the HDI band on the 500-point grid of one repeat per method and
//! size, for the figure). Report: `wave.md` and `wave-hdi.png`.
//!
//! A unit already recorded with the same settings is skipped (see the command's help).
//!
//! HDI widths are averaged over the points of the visualisation grid (linspace(−2, 2, 500))
//! that fall inside the training clusters ([−1.5, −0.5] ∪ [1.3, 1.7]) or strictly between
//! them ((−0.5, 1.3)).

mod beside_paper;
pub mod common;
mod figure;
pub mod recovery;
mod recovery_partial;
mod stamp;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

use self::common::{
    default_nuts, default_steps, evaluate, fit, mean_std, repeat_seeds, FitSpec, Method, Problem,
    ProblemArgs, Region, Size, SizeArg, PARTICLES, PREDICTIVE_DRAWS, SMI_ELBO_DRAWS,
};
use crate::records;
use crate::tables::markdown;

/// Records file of the metrics.
const EXPERIMENT: &str = "wave";
/// Records file of the bands.
const BANDS: &str = "wave-bands";

/// Options of `smi reproduce wave`.
#[derive(clap::Args, Debug)]
#[command(
    after_long_help = "Resuming: a unit (method × size × repeat) whose record is already \
in <out>/wave.jsonl with the same seed, phase, predictive draws and engine settings (steps \
included) is skipped, so rerunning a command after an interruption runs only the missing units, \
and asking for more repeats or methods adds only those. A variational fit interrupted midway \
continues from its state, saved every 1 000 steps to \
<out>/checkpoints/wave-<size>-r<repeat>-s<seed>-<method>.json (removed when the fit ends; the \
same bits as an uninterrupted fit); NUTS starts over. Records: method, size, hidden, repeat, \
seed, master_seed, steps, seconds (fit, wall), cpu_seconds (fit, all threads), eval_seconds, \
config (engine settings included), metrics."
)]
pub struct Args {
    #[command(flatten)]
    pub problem: ProblemArgs,
    /// Steps of every optimisation method [default: 15000 for SMI/SVGD/ASVGD, 50000 for
    /// OVI/MAP; 300 with --quick].
    #[arg(long)]
    pub steps: Option<u64>,
    /// Methods, comma-separated, out of smi, svgd, asvgd, ovi, map, nuts.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "smi,svgd,asvgd,ovi,map,nuts"
    )]
    pub methods: Vec<String>,
    /// Predictive draws of SMI and OVI [default: 5000; 200 with --quick].
    #[arg(long)]
    pub draws: Option<usize>,
    /// NUTS warm-up iterations [default: 500 low, 200 moderate; 50 with --quick].
    #[arg(long)]
    pub nuts_warmup: Option<usize>,
    /// NUTS draws [default: 500 low, 200 moderate; 50 with --quick].
    #[arg(long)]
    pub nuts_draws: Option<usize>,
    /// Output folder for records, tables and figures.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Tiny preset for a smoke test: 300 steps, 1 repeat, low size, 200 draws, short NUTS.
    #[arg(long)]
    pub quick: bool,
}

/// The resolved plan of a run.
struct Plan {
    sizes: Vec<Size>,
    repeats: usize,
    steps: Option<u64>,
    methods: Vec<Method>,
    draws: usize,
    quick: bool,
    nuts_warmup: Option<usize>,
    nuts_draws: Option<usize>,
}

impl Plan {
    fn of(a: &Args) -> Result<Plan> {
        let methods = Method::parse_list(&a.methods)?;
        let q = a.quick;
        let plan = Plan {
            sizes: a
                .problem
                .size
                .unwrap_or(if q { SizeArg::Low } else { SizeArg::Both })
                .sizes(),
            repeats: a.problem.repeats.unwrap_or(if q { 1 } else { 10 }),
            steps: a.steps.or(if q { Some(300) } else { None }),
            methods,
            draws: a.draws.unwrap_or(if q { 200 } else { PREDICTIVE_DRAWS }),
            quick: q,
            nuts_warmup: a.nuts_warmup,
            nuts_draws: a.nuts_draws,
        };
        anyhow::ensure!(plan.repeats > 0, "--repeats must be at least 1");
        anyhow::ensure!(plan.draws > 0, "--draws must be at least 1");
        anyhow::ensure!(plan.steps != Some(0), "--steps must be at least 1");
        anyhow::ensure!(
            plan.nuts_draws != Some(0),
            "--nuts-draws must be at least 1"
        );
        Ok(plan)
    }

    /// NUTS settings for `size`: [`default_nuts`], 50 + 50 at depth 8 with --quick, then the
    /// command-line overrides.
    fn nuts(&self, size: Size) -> smi::NutsSettings {
        let mut nuts = default_nuts(size);
        if self.quick {
            nuts.num_warmup = 50;
            nuts.num_draws = 50;
            nuts.max_depth = 8;
        }
        nuts.num_warmup = self.nuts_warmup.unwrap_or(nuts.num_warmup);
        nuts.num_draws = self.nuts_draws.unwrap_or(nuts.num_draws);
        nuts
    }
}

/// The repeat whose bands are stored for the figure: index 4 as in the paper, else the first.
fn band_repeat(repeats: usize) -> usize {
    if repeats > 4 {
        4
    } else {
        0
    }
}

/// Runs the experiment.
pub fn run(args: &Args) -> Result<()> {
    let plan = Plan::of(args)?;
    let out = &args.out;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let seeds = repeat_seeds(args.problem.seed, plan.repeats);
    let mut done: Vec<Map<String, Value>> = Vec::new();
    let mut failed = Vec::new();
    let recorded = records::read_succeeded(out, EXPERIMENT)?;
    let mut skipped = 0usize;
    for &size in &plan.sizes {
        let problem = Problem::new(size, args.problem.phase)?;
        for (r, &seed) in seeds.iter().enumerate() {
            for &method in &plan.methods {
                let spec = FitSpec {
                    method,
                    steps: plan.steps.unwrap_or(default_steps(method)),
                    particles: PARTICLES,
                    elbo_draws: SMI_ELBO_DRAWS,
                    draws: plan.draws,
                    seed,
                    nuts: plan.nuts(size),
                };
                let label = format!("{} {} #{r}", method.name(), size.name());
                // What makes a unit: a record with the same fields is its result, and a rerun
                // skips it (the settings below are those the fit uses).
                let identity = json!({
                    "method": method.name(),
                    "size": size.name(),
                    "repeat": r,
                    "seed": seed,
                    "master_seed": args.problem.seed,
                    "quick": args.quick,
                    "config": {
                        "phase": args.problem.phase.name(),
                        "dim": smi::LogDensity::dim(&problem.model),
                        "noise": 0.1,
                        "prior_scale": 1.0,
                        "learning_rate": self::common::LEARNING_RATE,
                        "predictive_draws": plan.draws,
                        "hdi_mass": self::common::HDI_MASS,
                        "hdi_points": "visualisation grid linspace(-2, 2, 500): in = [-1.5,-0.5] ∪ [1.3,1.7], between = (-0.5, 1.3)",
                        "engine": common::method_settings(&spec).to_json(),
                    },
                });
                let Value::Object(mut record) = identity else {
                    unreachable!("json! of an object literal")
                };
                if let Some(&earlier) = records::matching(&recorded, &record).last() {
                    eprintln!("{label}: already recorded in {}, skipped", out.display());
                    skipped += 1;
                    done.push(earlier.clone());
                    continue;
                }
                // saves the fit's state as it goes; a rerun after an interruption goes on
                let ckpt = crate::resumable::FitCheckpoint::in_folder(
                    out,
                    &format!("wave-{}-r{r}-s{seed}-{}", size.name(), method.name()),
                );
                let fitted = fit(&problem, &spec, &label, Some(&ckpt))
                    .with_context(|| format!("{label}: fitting failed"))?;
                let eval = evaluate(&problem, &fitted.draws)
                    .with_context(|| format!("{label}: evaluation failed"))?;
                for (key, value) in [
                    ("hidden", json!(size.hidden())),
                    ("steps", json!(fitted.steps)),
                    ("seconds", json!(fitted.seconds)),
                    ("cpu_seconds", json!(fitted.cpu_seconds)),
                    ("eval_seconds", json!(eval.seconds)),
                    ("skipped_steps", json!(fitted.skipped_steps)),
                    ("metrics", Value::Object(eval.metrics(method))),
                ] {
                    record.insert(key.into(), value);
                }
                let failure = records::fail_if_non_finite(&mut record);
                records::append(out, EXPERIMENT, record.clone())?;
                if let Some(reason) = failure {
                    // Recorded as failed; the report ignores it (and draws no band for it).
                    eprintln!("error: {label} failed (recorded as failed): {reason}");
                    failed.push(label);
                    continue;
                }
                if r == band_repeat(plan.repeats) {
                    let band = json!({
                        "method": method.name(),
                        "size": size.name(),
                        "repeat": r,
                        "seed": seed,
                        "phase": args.problem.phase.name(),
                        "x": eval.band.x,
                        "lower": eval.band.lower,
                        "upper": eval.band.upper,
                        "mean": eval.band.mean,
                    });
                    let Value::Object(band) = band else {
                        unreachable!("json! of an object literal")
                    };
                    records::append(out, BANDS, band)?;
                }
                eprintln!(
                    "{label}: LPPD in {:.2} between {:.2} entire {:.2}; HDI width in {:.3} between {:.3}; {:.1} s",
                    eval.lppd[&Region::In],
                    eval.lppd[&Region::Between],
                    eval.lppd[&Region::Entire],
                    eval.hdi_width_in,
                    eval.hdi_width_between,
                    fitted.seconds
                );
                done.push(record);
            }
        }
    }
    if skipped > 0 {
        eprintln!(
            "wave: {skipped} units skipped (already recorded in {})",
            out.display()
        );
    }
    println!("{}", summary_tables(&done, false));
    report(out)?;
    common::finish(
        out,
        EXPERIMENT,
        &[
            ("table", &out.join("wave.md")),
            ("figure", &out.join("wave-hdi.png")),
        ],
        "wave runs",
        &failed,
    )
}

/// Keeps the last record of every key (reruns into the same folder replace earlier results).
fn latest<K: Ord>(
    recs: Vec<Map<String, Value>>,
    key: impl Fn(&Map<String, Value>) -> Option<K>,
) -> Vec<Map<String, Value>> {
    let mut by: BTreeMap<K, Map<String, Value>> = BTreeMap::new();
    for r in recs {
        if let Some(k) = key(&r) {
            by.insert(k, r);
        }
    }
    by.into_values().collect()
}

fn method_size(r: &Map<String, Value>) -> Option<(Size, Method)> {
    Some((
        Size::from_name(records::text(r, "size")?)?,
        records::text(r, "method")?.parse::<Method>().ok()?,
    ))
}

/// The paper's table per size: mean ± std over repeats of LPPD per region and HDI widths.
fn summary_tables(recs: &[Map<String, Value>], paper: bool) -> String {
    let mut groups: BTreeMap<(Size, Method), Vec<&Map<String, Value>>> = BTreeMap::new();
    for r in recs {
        if let Some(k) = method_size(r) {
            groups.entry(k).or_default().push(r);
        }
    }
    let suffix = if paper { "_paper" } else { "" };
    let cell = |rs: &[&Map<String, Value>], key: &str, digits: usize| {
        let v: Vec<f64> = rs.iter().filter_map(|r| records::num(r, key)).collect();
        let (m, s) = mean_std(&v);
        if v.is_empty() {
            "–".to_string()
        } else {
            format!("{m:.digits$} ± {s:.digits$}")
        }
    };
    let mut text = String::new();
    for size in [Size::Low, Size::Moderate] {
        let rows: Vec<Vec<String>> = Method::ALL
            .iter()
            .filter_map(|&m| groups.get(&(size, m)).map(|rs| (m, rs)))
            .map(|(m, rs)| {
                let steps: Vec<String> = rs
                    .iter()
                    .filter_map(|r| records::num(r, "steps"))
                    .map(|v| format!("{v:.0}"))
                    .fold(Vec::new(), |mut acc, v| {
                        if !acc.contains(&v) {
                            acc.push(v);
                        }
                        acc
                    });
                let mut row = vec![m.label().to_string(), rs.len().to_string(), steps.join("/")];
                for r in Region::ALL {
                    row.push(cell(rs, &format!("metrics.lppd_{}{suffix}", r.name()), 2));
                }
                if !paper {
                    row.push(cell(rs, "metrics.hdi_width_in", 3));
                    row.push(cell(rs, "metrics.hdi_width_between", 3));
                }
                row.push(cell(rs, "seconds", 1));
                row
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        text.push_str(&format!(
            "\n{} model (width {}{})\n\n",
            if size == Size::Low { "Low" } else { "Moderate" },
            size.hidden(),
            if paper { ", paper's LPPD" } else { "" }
        ));
        let mut header = vec![
            "Method",
            "n",
            "steps",
            "LPPD In ↑",
            "LPPD Between ↑",
            "LPPD Entire ↑",
        ];
        if !paper {
            header.extend(["HDI width In", "HDI width Between"]);
        }
        header.push("fit s");
        text.push_str(&markdown(&header, &rows));
    }
    text
}

/// Rebuilds `wave.md` and `wave-hdi.png` from the records (nothing without records); records
/// of failed runs are left out.
pub fn report(out: &Path) -> Result<()> {
    let recs = latest(records::read_succeeded(out, EXPERIMENT)?, |r| {
        let (s, m) = method_size(r)?;
        Some((s, m, records::num(r, "repeat")? as u64))
    });
    let refs: Vec<&Map<String, Value>> = recs.iter().collect();
    let settings = if refs.is_empty() {
        "Settings: unknown (no successful record in wave.jsonl).".to_string()
    } else {
        stamp::settings_line(&refs)
    };
    if !recs.is_empty() {
        let mut md =
            String::from("# 1-D wave: in-between uncertainty (docs/algorithms.md §7.2)\n\n");
        md.push_str(&format!("> {settings} ({}.)\n\n", stamp::paper_budgets()));
        md.push_str(
            "Mean ± std (ddof 0) over repeats. LPPD = Σ_i log((1/S) Σ_s p(y_i|x_i, θ_s)) over the \
             region's test points (In 20, Between 60, Entire 120); S = the predictive draws above \
             for SMI and OVI, the m = 5 particles for SVGD/ASVGD, the single point for MAP, the \
             posterior draws for NUTS. HDI width: mean width of the 90 % HDI of y_loc over the \
             points of the visualisation grid linspace(−2, 2, 500) inside the clusters \
             ([−1.5, −0.5] ∪ [1.3, 1.7]) and between them ((−0.5, 1.3)). `fit s`: seconds of \
             the fit. `n`: repeats. `steps`: optimisation steps (NUTS: warm-up + draws, one \
             chain).\n",
        );
        md.push_str(&summary_tables(&recs, false));
        md.push_str(
            "\n## As the paper computes it\n\nThe paper's SVGD/ASVGD LPPD sums the particles' \
             densities without the 1/m (docs/algorithms.md §8), inflating it by n·ln m; other methods \
             unchanged.\n",
        );
        md.push_str(&summary_tables(&recs, true));
        md.push_str("\n![90 % HDI of y_loc](wave-hdi.png)\n");
        md.push_str(&beside_paper::hdi_claims(&recs));
        let p = out.join("wave.md");
        smi_fit::files::write_atomic(&p, md.as_bytes())
            .with_context(|| format!("cannot write {}", p.display()))?;
    }
    let bands = latest(records::read(out, BANDS)?, method_size);
    if !bands.is_empty() {
        let quick = !refs.is_empty()
            && refs
                .iter()
                .all(|r| records::get(r, "quick").and_then(Value::as_bool) == Some(true));
        figure::figure(&bands, &settings, quick, &out.join("wave-hdi.png"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_ignores_failed_records() {
        let rec = |lppd: f64| {
            let Value::Object(m) = json!({"method": "smi", "size": "low", "repeat": 0,
                "steps": 10, "seconds": 1.0,
                "metrics": {"lppd_in": lppd, "lppd_between": -2.0, "lppd_entire": -3.0}})
            else {
                unreachable!()
            };
            m
        };
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path();
        records::append(out, EXPERIMENT, rec(-1.25)).unwrap();
        // A later rerun of the same repeat that diverged.
        let mut bad = rec(f64::NAN);
        assert!(records::fail_if_non_finite(&mut bad).is_some());
        records::append(out, EXPERIMENT, bad).unwrap();
        report(out).unwrap();
        let md = std::fs::read_to_string(out.join("wave.md")).unwrap();
        assert!(md.contains("-1.25 ± 0.00"), "{md}");
    }

    #[test]
    fn band_repeat_is_index_four_when_run() {
        assert_eq!(band_repeat(10), 4);
        assert_eq!(band_repeat(5), 4);
        assert_eq!(band_repeat(4), 0);
        assert_eq!(band_repeat(1), 0);
    }
}
