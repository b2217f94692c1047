//! The variance-collapse experiment (docs/algorithms.md §7.1): fit N(0, I_d) with SMI (1 and 20 particles,
//! Normal guide), SVGD and ASVGD (20 particles) and measure the dimension-averaged marginal
//! variance, the diagonal "Frobenius distance" to I and the mean location.
//!
//! Paper settings (the defaults): RBF kernel; SMI with init radius 2, Adagrad(0.05, momentum
//! 0.9), S = 100 ELBO draws, guide init scale 0.1; SVGD/ASVGD with init radius 20 and
//! Adam(0.05); ASVGD with C = 10 cycles and p = 10; 60 000 steps; seed 10. SMI runs for every
//! α of `--alphas`, SVGD/ASVGD only for α = 1.

mod figures;

use crate::seeds::mix;
use figures::{frobenius_figure, variance_figure};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use serde_json::{json, Map, Value};
use smi::testing::DiagNormal;
use smi::{Init, Method, MethodSettings, OptimizerSettings, RunSettings};

use crate::plot::{init_font, is_png, thousands, with_footer, FONT_FAMILY};
use crate::records;
use crate::tables::markdown;
use smi_fit::limits;
use smi_fit::progress::Bar;

/// The records' experiment name (`<out>/variance.jsonl`).
pub const EXPERIMENT: &str = "variance";

const PAPER_DIMS: [usize; 10] = [1, 2, 4, 8, 10, 20, 40, 60, 80, 100];
const PAPER_STEPS: u64 = 60_000;
const QUICK_DIMS: [usize; 2] = [2, 8];
/// SMI's ELBO draws per particle and step (S).
const SMI_ELBO_DRAWS: u64 = 100;
const QUICK_STEPS: u64 = 2_000;

/// Options of `smi reproduce variance`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Dimensions d of the target N(0, I_d), comma-separated [default: 1,2,4,8,10,20,40,60,80,100,
    /// or 2,8 with --quick].
    #[arg(long, value_delimiter = ',', value_parser = parse_dim)]
    pub dims: Option<Vec<usize>>,
    /// Repulsion temperatures α for SMI, comma-separated (SVGD/ASVGD always use α = 1).
    #[arg(long, value_delimiter = ',', value_parser = parse_alpha, default_value = "1")]
    pub alphas: Vec<f64>,
    /// Optimisation steps per run [default: 60000, or 2000 with --quick].
    #[arg(long)]
    pub steps: Option<u64>,
    /// Base seed; every (method, particles, d, α) run derives its own seed from it.
    #[arg(long, default_value_t = 10)]
    pub seed: u64,
    /// Output folder for records, tables and figures.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// A small preset finishing in seconds: d ∈ {2, 8} (unless --dims is given) and 2000 steps
    /// (unless --steps is given).
    #[arg(long)]
    pub quick: bool,
}

fn parse_dim(s: &str) -> std::result::Result<usize, String> {
    let d: usize = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a dimension (a whole number ≥ 1)"))?;
    if d == 0 {
        return Err("dimensions must be at least 1".into());
    }
    Ok(d)
}

fn parse_alpha(s: &str) -> std::result::Result<f64, String> {
    let a: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    if !(a.is_finite() && a >= 0.0) {
        return Err(format!("α must be finite and ≥ 0, got {s}"));
    }
    Ok(a)
}

/// One fit of the experiment: method, particle count, dimension, α.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Setting {
    pub method: Method,
    pub particles: usize,
    pub dim: usize,
    pub alpha: f64,
}

impl Setting {
    /// The label of the series this setting belongs to, e.g. `SMI-20`.
    fn series(&self) -> String {
        series_label(self.method.name(), self.particles as u64)
    }

    /// The run's own seed: a hash of the base seed and the setting, so that adding dimensions
    /// or α values never changes the seed of another run.
    fn seed(&self, base: u64) -> u64 {
        let mut h = mix(base);
        for v in [
            self.method as u64,
            self.particles as u64,
            self.dim as u64,
            self.alpha.to_bits(),
        ] {
            h = mix(h ^ v);
        }
        h
    }

    /// The paper's engine settings for this run (docs/algorithms.md §7.1): SMI with S = 100, uniform(2)
    /// init and Adagrad(0.05); SVGD and ASVGD with uniform(20) init and Adam(0.05).
    fn settings(&self, steps: u64, seed: u64) -> MethodSettings {
        let s = self.method.preset(steps);
        let s = if self.method == Method::Smi {
            s.with_elbo_draws(SMI_ELBO_DRAWS as usize)
                .with_init(Init::Uniform { radius: 2.0 })
                .with_optimizer(OptimizerSettings::adagrad(0.05))
        } else {
            s.with_init(Init::Uniform { radius: 20.0 })
                .with_optimizer(OptimizerSettings::adam(0.05))
        };
        let mut s = s.with_particles(self.particles).with_seed(seed);
        if let MethodSettings::Stein(st) = &mut s {
            st.repulsion_temperature = self.alpha;
            // SVGD/ASVGD on NumPyro's target, without the log-Jacobian
            // (SteinSettings::svgd_numpyro_parity).
            st.jacobian = !self.method.is_point_mass();
        }
        s
    }
}

/// A lower bound of the memory one run needs, in bytes (`None` beyond 64 bits): SMI evaluates
/// S = 100 draws of every particle's d coordinates per step; SVGD/ASVGD hold the particles, their
/// gradients and Adam's two moments.
fn memory_needed(s: &Setting) -> Option<u64> {
    let (m, d) = (s.particles as u64, s.dim as u64);
    match s.method {
        Method::Smi => limits::product(&[m, SMI_ELBO_DRAWS, d, 8]),
        _ => limits::product(&[m, 4, d, 8]),
    }
}

/// Refuses a plan whose largest run could not fit in `memory` bytes, naming `--dims`.
fn check_memory(runs: &[Setting], memory: u64) -> Result<()> {
    for s in runs {
        limits::check_memory(
            "--dims",
            &format!(
                "the run {} (d = {}, {} particles)",
                describe(s),
                s.dim,
                s.particles
            ),
            memory_needed(s),
            memory,
        )?;
    }
    Ok(())
}

fn series_label(method: &str, particles: u64) -> String {
    format!("{}-{particles}", method.to_uppercase())
}

/// The experiment's runs, dimension by dimension: SMI-1 and SMI-20 for every α, then SVGD-20
/// and ASVGD-20 at α = 1.
fn plan(dims: &[usize], alphas: &[f64]) -> Vec<Setting> {
    let mut out = Vec::new();
    for &dim in dims {
        for &alpha in alphas {
            for particles in [1, 20] {
                out.push(Setting {
                    method: Method::Smi,
                    particles,
                    dim,
                    alpha,
                });
            }
        }
        for method in [Method::Svgd, Method::Asvgd] {
            out.push(Setting {
                method,
                particles: 20,
                dim,
                alpha: 1.0,
            });
        }
    }
    out
}

fn dedup_sorted<T: PartialOrd + Copy>(v: &[T]) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(v.len());
    for &x in v {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    out
}

/// Runs the experiment.
pub fn run(args: &Args) -> Result<()> {
    let dims = match (&args.dims, args.quick) {
        (Some(d), _) => dedup_sorted(d),
        (None, true) => QUICK_DIMS.to_vec(),
        (None, false) => PAPER_DIMS.to_vec(),
    };
    let alphas = dedup_sorted(&args.alphas);
    if dims.is_empty() || alphas.is_empty() {
        anyhow::bail!("--dims and --alphas need at least one value each");
    }
    let steps = match (args.steps, args.quick) {
        (Some(0), _) => anyhow::bail!("--steps must be at least 1"),
        (Some(s), _) => s,
        (None, true) => QUICK_STEPS,
        (None, false) => PAPER_STEPS,
    };
    let runs = plan(&dims, &alphas);
    check_memory(&runs, limits::machine_memory())?;
    eprintln!(
        "variance collapse: {} runs (d ∈ {:?}, α ∈ {:?}), {steps} steps each, records in {}",
        runs.len(),
        dims,
        alphas,
        records::path(&args.out, EXPERIMENT).display()
    );
    let mut done = Vec::new();
    let mut failed = Vec::new();
    for (i, setting) in runs.iter().enumerate() {
        let mut rec = fit(setting, steps, args.seed, i, runs.len())?;
        let failure = records::fail_if_non_finite(&mut rec);
        records::append(&args.out, EXPERIMENT, rec.clone())
            .with_context(|| format!("cannot write the record of {}", describe(setting)))?;
        match failure {
            None => done.push(rec),
            Some(reason) => {
                eprintln!(
                    "error: {} failed (recorded as failed): {reason}",
                    describe(setting)
                );
                failed.push(describe(setting));
            }
        }
    }
    let rows = latest_rows(&done);
    println!();
    println!("{}", terminal_tables(&rows, steps));
    report(&args.out)?;
    eprintln!(
        "wrote {}, {} and {}",
        args.out.join("variance.md").display(),
        args.out.join("variance.png").display(),
        args.out.join("variance-frobenius.png").display()
    );
    if !failed.is_empty() {
        anyhow::bail!(
            "{} variance runs failed ({}): their metrics are not finite",
            failed.len(),
            failed.join(", ")
        );
    }
    Ok(())
}

fn describe(s: &Setting) -> String {
    format!("{} d={} α={}", s.series(), s.dim, s.alpha)
}

/// Fits one setting and returns its record.
fn fit(
    setting: &Setting,
    steps: u64,
    base_seed: u64,
    index: usize,
    total: usize,
) -> Result<Map<String, Value>> {
    let seed = setting.seed(base_seed);
    let settings = setting.settings(steps, seed);
    let target = DiagNormal::standard(setting.dim).context("cannot build the target N(0, I)")?;
    let label = format!("[{}/{}] {}", index + 1, total, describe(setting));
    let mut bar = Bar::new(&label, (steps / 200).max(1));
    let start = Instant::now();
    let result = smi::fit(&target, &settings, &RunSettings::steps(steps), &mut bar)
        .with_context(|| format!("the run {} failed", describe(setting)))?;
    let seconds = start.elapsed().as_secs_f64();
    let var = result.posterior.variance();
    let mean = result.posterior.mean();
    let d = setting.dim as f64;
    let mean_variance = var.iter().sum::<f64>() / d;
    let frobenius = var.iter().map(|v| (v - 1.0).powi(2)).sum::<f64>().sqrt();
    let mean_location = mean.iter().sum::<f64>() / d;
    let max_abs_location = mean.iter().fold(0.0_f64, |a, m| a.max(m.abs()));
    eprintln!(
        "{label}: mean variance {mean_variance:.4}, Frobenius {frobenius:.4}, mean location \
         {mean_location:+.4} ({seconds:.1} s)"
    );
    let config = settings.to_json();
    let Value::Object(m) = json!({
        "experiment": EXPERIMENT,
        "method": setting.method.name(),
        "particles": setting.particles,
        "dim": setting.dim,
        "alpha": setting.alpha,
        "seed": seed,
        "base_seed": base_seed,
        "steps": steps,
        "seconds": seconds,
        "skipped_steps": result.skipped_steps,
        "config": config,
        "metrics": {
            "mean_variance": mean_variance,
            "frobenius": frobenius,
            "mean_location": mean_location,
            "max_abs_location": max_abs_location,
            "variance": var,
        },
        "version": records::VERSION,
    }) else {
        unreachable!("json! of an object literal is an object")
    };
    Ok(m)
}

/// One setting's latest record, reduced to what the report needs.
#[derive(Clone, Debug)]
struct Row {
    series: String,
    method: String,
    particles: u64,
    dim: u64,
    alpha: f64,
    mean_variance: Option<f64>,
    frobenius: Option<f64>,
    mean_location: Option<f64>,
    steps: Option<u64>,
    seconds: Option<f64>,
}

/// The latest record of every (method, particles, dim, α), skipping records without a setting
/// and records of failed runs.
fn latest_rows(recs: &[Map<String, Value>]) -> Vec<Row> {
    let mut map: BTreeMap<(String, u64, u64, u64), Row> = BTreeMap::new();
    for r in recs.iter().filter(|r| !records::is_failed(r)) {
        let (Some(method), Some(particles), Some(dim), Some(alpha)) = (
            records::text(r, "method"),
            records::get(r, "particles").and_then(Value::as_u64),
            records::get(r, "dim").and_then(Value::as_u64),
            records::num(r, "alpha"),
        ) else {
            continue;
        };
        let row = Row {
            series: series_label(method, particles),
            method: method.to_string(),
            particles,
            dim,
            alpha,
            mean_variance: records::num(r, "metrics.mean_variance"),
            frobenius: records::num(r, "metrics.frobenius"),
            mean_location: records::num(r, "metrics.mean_location"),
            steps: records::get(r, "steps").and_then(Value::as_u64),
            seconds: records::num(r, "seconds"),
        };
        map.insert((method.to_string(), particles, dim, alpha.to_bits()), row);
    }
    let mut rows: Vec<Row> = map.into_values().collect();
    rows.sort_by(|a, b| {
        (series_rank(&a.method), a.particles, a.dim)
            .cmp(&(series_rank(&b.method), b.particles, b.dim))
            .then(a.alpha.total_cmp(&b.alpha))
    });
    rows
}

fn series_rank(method: &str) -> u8 {
    match method {
        "smi" => 0,
        "svgd" => 1,
        "asvgd" => 2,
        _ => 3,
    }
}

/// Series labels in presentation order (SMI-1, SMI-20, SVGD-20, ASVGD-20, others).
fn series_order(rows: &[Row]) -> Vec<String> {
    let mut v: Vec<(u8, u64, String)> = Vec::new();
    for r in rows {
        let k = (series_rank(&r.method), r.particles, r.series.clone());
        if !v.contains(&k) {
            v.push(k);
        }
    }
    v.sort();
    v.into_iter().map(|k| k.2).collect()
}

fn dims_of(rows: &[Row]) -> Vec<u64> {
    dedup_sorted(&rows.iter().map(|r| r.dim).collect::<Vec<_>>())
}

fn alphas_of<'a>(rows: impl Iterator<Item = &'a Row>) -> Vec<f64> {
    dedup_sorted(&rows.map(|r| r.alpha).collect::<Vec<_>>())
}

fn fmt_opt(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) if x.is_finite() => {
            let s = format!("{x:.digits$}");
            // No "-0.000".
            if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
                s[1..].to_string()
            } else {
                s
            }
        }
        _ => "–".into(),
    }
}

fn fmt_alpha(a: f64) -> String {
    format!("{a}")
}

/// The row of `series` at (dim, α), when present.
fn find<'a>(rows: &'a [Row], series: &str, dim: u64, alpha: f64) -> Option<&'a Row> {
    rows.iter()
        .find(|r| r.series == series && r.dim == dim && r.alpha == alpha)
}

/// The α a series is shown at in the main tables: 1 if it has it, otherwise its only α.
fn main_alpha(rows: &[Row], series: &str) -> Option<f64> {
    let alphas = alphas_of(rows.iter().filter(|r| r.series == series));
    if alphas.contains(&1.0) {
        Some(1.0)
    } else if alphas.len() == 1 {
        Some(alphas[0])
    } else {
        None
    }
}

/// A dims × series table of one metric at each series' main α.
fn metric_table(rows: &[Row], metric: fn(&Row) -> Option<f64>, digits: usize) -> String {
    let series = series_order(rows);
    let header_owned: Vec<String> = std::iter::once("d".to_string())
        .chain(series.iter().map(|s| match main_alpha(rows, s) {
            Some(a) if a != 1.0 => format!("{s} (α = {})", fmt_alpha(a)),
            _ => s.clone(),
        }))
        .collect();
    let header: Vec<&str> = header_owned.iter().map(String::as_str).collect();
    let body: Vec<Vec<String>> = dims_of(rows)
        .into_iter()
        .map(|d| {
            std::iter::once(d.to_string())
                .chain(series.iter().map(|s| {
                    let v = main_alpha(rows, s)
                        .and_then(|a| find(rows, s, d, a))
                        .and_then(metric);
                    fmt_opt(v, digits)
                }))
                .collect()
        })
        .collect();
    markdown(&header, &body)
}

/// dims × α tables of the mean variance for every SMI series with several α.
fn alpha_tables(rows: &[Row]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for s in series_order(rows) {
        let alphas = alphas_of(rows.iter().filter(|r| r.series == s));
        if alphas.len() < 2 {
            continue;
        }
        let header_owned: Vec<String> = std::iter::once("d".to_string())
            .chain(alphas.iter().map(|a| format!("α = {}", fmt_alpha(*a))))
            .collect();
        let header: Vec<&str> = header_owned.iter().map(String::as_str).collect();
        let dims = dims_of(
            &rows
                .iter()
                .filter(|r| r.series == s)
                .cloned()
                .collect::<Vec<_>>(),
        );
        let body: Vec<Vec<String>> =
            dims.into_iter()
                .map(|d| {
                    std::iter::once(d.to_string())
                        .chain(alphas.iter().map(|&a| {
                            fmt_opt(find(rows, &s, d, a).and_then(|r| r.mean_variance), 3)
                        }))
                        .collect()
                })
                .collect();
        out.push((s, markdown(&header, &body)));
    }
    out
}

fn terminal_tables(rows: &[Row], steps: u64) -> String {
    let mut s = format!(
        "Dimension-averaged marginal variance (target 1), {steps} steps:\n\n{}\n\
         Frobenius distance ‖diag(var) − I‖_F (target 0):\n\n{}",
        metric_table(rows, |r| r.mean_variance, 3),
        metric_table(rows, |r| r.frobenius, 3)
    );
    for (series, t) in alpha_tables(rows) {
        s.push_str(&format!("\n{series} mean variance over α:\n\n{t}"));
    }
    s
}

/// Rebuilds `variance.md`, `variance.png` and `variance-frobenius.png` from the records (does
/// nothing without records).
pub fn report(out: &Path) -> Result<()> {
    let recs = records::read(out, EXPERIMENT)?;
    let rows = latest_rows(&recs);
    if rows.is_empty() {
        return Ok(());
    }
    let md = markdown_report(&rows);
    let p = out.join("variance.md");
    smi_fit::files::write_atomic(&p, md.as_bytes())
        .with_context(|| format!("cannot write {}", p.display()))?;
    let p = out.join("variance.png");
    variance_figure(&rows, &p).with_context(|| format!("cannot draw {}", p.display()))?;
    anyhow::ensure!(is_png(&p), "{} is not a valid PNG", p.display());
    let p = out.join("variance-frobenius.png");
    frobenius_figure(&rows, &p).with_context(|| format!("cannot draw {}", p.display()))?;
    anyhow::ensure!(is_png(&p), "{} is not a valid PNG", p.display());
    Ok(())
}

/// The settings the records were made with, in one line for figures and tables: steps per fit
/// (against the paper's 60 000, naming a quick run), S, the dimensions.
fn settings_line(rows: &[Row]) -> String {
    let steps = dedup_sorted(&rows.iter().filter_map(|r| r.steps).collect::<Vec<_>>());
    let steps_txt = steps
        .iter()
        .map(|&n| thousands(n))
        .collect::<Vec<_>>()
        .join(" / ");
    let kind = match steps.as_slice() {
        [PAPER_STEPS] => "paper settings".to_string(),
        [QUICK_STEPS] => format!("quick run (--quick; the paper: {})", thousands(PAPER_STEPS)),
        _ => format!("reduced run (the paper: {})", thousands(PAPER_STEPS)),
    };
    let dims = dims_of(rows)
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "Settings: {kind}; {steps_txt} steps per fit; SMI S = {SMI_ELBO_DRAWS}; d ∈ {{{dims}}}."
    )
}

fn markdown_report(rows: &[Row]) -> String {
    let mut s = String::new();
    s.push_str("# Variance collapse on N(0, I_d)\n\n");
    s.push_str(&format!("> {}\n\n", settings_line(rows)));
    s.push_str(
        "docs/algorithms.md §7.1: SMI with a Normal guide (init radius 2, Adagrad(0.05), S = 100) \
         and 1 or 20 particles; SVGD and ASVGD with 20 particles (init radius 20, Adam(0.05)); \
         RBF kernel. Each cell is the latest record of its setting in `variance.jsonl`; columns \
         are at α = 1 unless marked.\n\n",
    );
    s.push_str("## Dimension-averaged marginal variance (target 1)\n\n");
    s.push_str(
        "SMI: mixture variance mean_j σ²_jc + mean_j μ²_jc − (mean_j μ_jc)²; SVGD/ASVGD: \
         particle variance (ddof 0); averaged over the d coordinates.\n\n",
    );
    s.push_str(&metric_table(rows, |r| r.mean_variance, 3));
    s.push_str("\n## Frobenius distance ‖diag(var) − I‖_F (target 0)\n\n");
    s.push_str(&metric_table(rows, |r| r.frobenius, 3));
    s.push_str("\n## Mean location (average over coordinates; target 0)\n\n");
    s.push_str(&metric_table(rows, |r| r.mean_location, 3));
    for (series, t) in alpha_tables(rows) {
        s.push_str(&format!(
            "\n## {series}: mean variance over the repulsion temperature α\n\n{t}"
        ));
    }
    s.push_str("\n## Run time (seconds)\n\n");
    s.push_str(&metric_table(rows, |r| r.seconds, 1));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_differ_per_setting_and_are_stable() {
        let runs = plan(&[2, 8], &[0.1, 1.0]);
        let seeds: Vec<u64> = runs.iter().map(|s| s.seed(10)).collect();
        let mut uniq = seeds.clone();
        uniq.sort();
        uniq.dedup();
        assert_eq!(uniq.len(), seeds.len());
        assert_eq!(runs.len(), 2 * (2 * 2 + 2));
        // Adding a dimension does not change the others' seeds.
        let more = plan(&[2, 4, 8], &[0.1, 1.0]);
        for s in &runs {
            assert!(more.iter().any(|t| t == s && t.seed(10) == s.seed(10)));
        }
    }

    #[test]
    fn parsers_reject_bad_values() {
        assert!(parse_dim("0").is_err());
        assert!(parse_dim("x").is_err());
        assert_eq!(parse_dim(" 4"), Ok(4));
        assert!(parse_alpha("-1").is_err());
        assert!(parse_alpha("nan").is_err());
        assert_eq!(parse_alpha("0.1"), Ok(0.1));
    }

    #[test]
    fn latest_record_wins() {
        let mk = |v: f64| {
            let Value::Object(m) = json!({"method": "smi", "particles": 1, "dim": 2,
                "alpha": 1.0, "metrics": {"mean_variance": v}})
            else {
                unreachable!()
            };
            m
        };
        let rows = latest_rows(&[mk(0.5), mk(0.9)]);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].mean_variance, Some(0.9));
    }

    #[test]
    fn a_failed_record_does_not_replace_a_good_one() {
        let mk = |v: f64| {
            let Value::Object(m) = json!({"method": "smi", "particles": 1, "dim": 2,
                "alpha": 1.0, "metrics": {"mean_variance": v, "frobenius": 0.1}})
            else {
                unreachable!()
            };
            m
        };
        let mut bad = mk(f64::NAN);
        assert!(records::fail_if_non_finite(&mut bad).is_some());
        let rows = latest_rows(&[mk(0.9), bad]);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].mean_variance, Some(0.9));
    }

    #[test]
    fn absurd_dimensions_are_refused_before_running() {
        let gib = 1u64 << 30;
        assert!(check_memory(&plan(&PAPER_DIMS, &[1.0]), 4 * gib).is_ok());
        let e = check_memory(&plan(&[1_000_000_000], &[1.0]), 1 << 40).unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("--dims") && e.contains("1000000000"), "{e}");
        let e = check_memory(&plan(&[usize::MAX], &[1.0]), u64::MAX).unwrap_err();
        assert!(format!("{e:#}").contains("--dims"), "{e:#}");
    }
}
