//! The recovery point (docs/algorithms.md §7.2, §9.4): how many SVGD particles it takes to beat the LPPD of
//! 5-particle SMI on the 1-D wave, per region.
//!
//! Per repeat: SMI is fitted once (m = 5, S = 100, Adam 1e-3, 15 000 steps); SVGD is fitted with
//! m = 1, 2, 4, … (the cap itself last when it is not a power of two) until its LPPD exceeds
//! SMI's in every region or the cap is reached. R (per region) is the first m that beats SMI;
//! a region never beaten records R = cap with `capped: true` (shown as ">cap").
//!
//! By default both LPPDs are the proper Σ_i log((1/S) Σ_s p(y_i|θ_s)); `--svgd-lppd paper`
//! gives SVGD the paper's log-sum (no 1/m, docs/algorithms.md §8), which inflates it by n·ln m.
//! Records: `<out>/recovery.jsonl`, one per size × region × repeat. Report: `recovery.md`.
//! A repeat already recorded with the same settings is skipped; an unfinished one resumes after
//! its last finished fit (`recovery_partial.rs`; see the command's help).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::{json, Map, Value};

use super::common::{
    default_nuts, evaluate, fit, repeat_seeds, FitSpec, Method, Problem, ProblemArgs, Region, Size,
    SizeArg, PARTICLES, PREDICTIVE_DRAWS, SMI_ELBO_DRAWS, STEIN_STEPS,
};
use super::recovery_partial::{self, Outcome};
use crate::records;
use crate::tables::markdown;

const EXPERIMENT: &str = "recovery";

/// Which LPPD SVGD is scored with.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SvgdLppd {
    /// Σ log((1/m) Σ_j p): the mixture of the particles.
    Proper,
    /// Σ log Σ_j p: the paper's artifact (no 1/m).
    Paper,
}

impl SvgdLppd {
    fn name(self) -> &'static str {
        match self {
            SvgdLppd::Proper => "proper",
            SvgdLppd::Paper => "paper",
        }
    }
}

/// Options of `smi reproduce recovery`.
#[derive(clap::Args, Debug)]
#[command(
    after_long_help = "Resuming: a repeat (size × repeat) whose three region records are \
already in <out>/recovery.jsonl with the same seed, cap, steps, SVGD LPPD kind, phase, SMI \
predictive draws and SMI engine settings is skipped, so rerunning a command after an \
interruption runs only the missing repeats, and asking for more repeats adds only those (the \
repeat seeds come from the master seed in order). A repeat interrupted midway resumes after its \
last finished fit: each fit's LPPDs are kept in <out>/checkpoints/recovery-<size>-r<repeat>-s<seed>.json \
until the repeat is recorded, and reused when their engine settings are this run's (the fits are \
seeded, so the resumed repeat gives the same numbers). A fit interrupted midway continues from \
its state, saved every 1 000 steps to <out>/checkpoints/fit-<size>-r<repeat>-s<seed>-<method>-m<m>.json \
(removed when the fit ends; the same bits as an uninterrupted fit)."
)]
pub struct Args {
    #[command(flatten)]
    pub problem: ProblemArgs,
    /// Largest SVGD particle count tried [default: 256; 8 with --quick].
    #[arg(long)]
    pub max_particles: Option<usize>,
    /// Steps of SMI and of every SVGD run [default: 15000; 300 with --quick].
    #[arg(long)]
    pub steps: Option<u64>,
    /// LPPD used for SVGD: proper (with 1/m) or the paper's artifact (without).
    #[arg(long, value_enum, default_value = "proper")]
    pub svgd_lppd: SvgdLppd,
    /// Predictive draws of SMI [default: 5000; 200 with --quick].
    #[arg(long)]
    pub draws: Option<usize>,
    /// Output folder for records, tables and figures.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Tiny preset for a smoke test: 300 steps, 1 repeat, low size, cap 8, 200 draws.
    #[arg(long)]
    pub quick: bool,
}

/// The particle counts tried: 1, 2, 4, … ≤ cap, then the cap itself if it is not a power of two.
fn particle_counts(cap: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut m = 1;
    while m <= cap {
        v.push(m);
        m *= 2;
    }
    if v.last() != Some(&cap) {
        v.push(cap);
    }
    v
}

/// What a repeat fits: `method` with `particles` particles at `size`, seeded with the repeat's
/// `seed`.
fn repeat_spec(
    size: Size,
    steps: u64,
    draws: usize,
    seed: u64,
    method: Method,
    particles: usize,
) -> FitSpec {
    FitSpec {
        method,
        steps,
        particles,
        elbo_draws: SMI_ELBO_DRAWS,
        draws,
        seed,
        nuts: default_nuts(size),
    }
}

/// The key of a repeat's partial results (`recovery_partial.rs`): what its fits depend on
/// besides their engine settings (which each fit's outcome carries). The cap and the SVGD LPPD
/// kind are not in it: they decide which fits a repeat needs, not what a fit gives.
fn partial_key(
    size: Size,
    repeat: usize,
    seed: u64,
    phase: &str,
    steps: u64,
    draws: usize,
    quick: bool,
) -> Value {
    json!({
        "size": size.name(),
        "repeat": repeat,
        "seed": seed,
        "phase": phase,
        "steps": steps,
        "smi_predictive_draws": draws,
        "quick": quick,
    })
}

/// Runs the experiment.
pub fn run(args: &Args) -> Result<()> {
    let q = args.quick;
    let sizes = args
        .problem
        .size
        .unwrap_or(if q { SizeArg::Low } else { SizeArg::Both })
        .sizes();
    let cap = args.max_particles.unwrap_or(if q { 8 } else { 256 });
    let repeats = args.problem.repeats.unwrap_or(if q { 1 } else { 10 });
    let steps = args.steps.unwrap_or(if q { 300 } else { STEIN_STEPS });
    let draws = args.draws.unwrap_or(if q { 200 } else { PREDICTIVE_DRAWS });
    anyhow::ensure!(cap >= 1, "--max-particles must be at least 1");
    anyhow::ensure!(repeats >= 1, "--repeats must be at least 1");
    anyhow::ensure!(steps >= 1, "--steps must be at least 1");
    anyhow::ensure!(draws >= 1, "--draws must be at least 1");
    let out = &args.out;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let seeds = repeat_seeds(args.problem.seed, repeats);
    let counts = particle_counts(cap);
    let mut done = Vec::new();
    let mut failed = Vec::new();
    let recorded = records::read_succeeded(out, EXPERIMENT)?;
    let mut skipped = 0usize;
    for &size in &sizes {
        let problem = Problem::new(size, args.problem.phase)?;
        for (r, &seed) in seeds.iter().enumerate() {
            let spec = |method, particles| repeat_spec(size, steps, draws, seed, method, particles);
            let label = format!("smi {} #{r}", size.name());
            let identity = json!({
                "method": "svgd-vs-smi",
                "size": size.name(),
                "repeat": r,
                "seed": seed,
                "master_seed": args.problem.seed,
                "max_particles": cap,
                "svgd_lppd": args.svgd_lppd.name(),
                "steps": steps,
                "quick": q,
            });
            let Value::Object(identity) = identity else {
                unreachable!("json! of an object literal")
            };
            let earlier = earlier_repeat(
                &recorded,
                &identity,
                args.problem.phase.name(),
                draws,
                &super::common::method_settings(&spec(Method::Smi, PARTICLES)).to_json(),
            );
            if let Some(earlier) = earlier {
                eprintln!(
                    "recovery {} #{r}: already recorded in {}, skipped",
                    size.name(),
                    out.display()
                );
                skipped += 1;
                done.extend(earlier);
                continue;
            }
            let smi_settings =
                super::common::method_settings(&spec(Method::Smi, PARTICLES)).to_json();
            let partial_path = recovery_partial::path(out, size.name(), r, seed);
            let partial_key =
                partial_key(size, r, seed, args.problem.phase.name(), steps, draws, q);
            let mut partial = recovery_partial::load(&partial_path, &partial_key, &label);
            // a fit and its LPPDs, kept with the settings it was asked for
            let fit_outcome =
                |method: Method, m, label: &str, settings: &Value| -> Result<Outcome> {
                    // the fit's state as it goes, so an interrupted fit continues (an m = 256 SVGD
                    // fit of the moderate net takes an hour or more)
                    let ckpt = crate::resumable::FitCheckpoint::in_folder(
                        out,
                        &format!("fit-{}-r{r}-s{seed}-{}-m{m}", size.name(), method.name()),
                    );
                    let f = fit(&problem, &spec(method, m), label, Some(&ckpt))
                        .with_context(|| format!("{label}: fitting failed"))?;
                    let e = evaluate(&problem, &f.draws)
                        .with_context(|| format!("{label}: evaluation failed"))?;
                    Ok(Outcome::new(&f, &e, settings))
                };
            let smi = match partial.smi_with(&smi_settings) {
                Some(done) => done.clone(),
                None => {
                    let done = fit_outcome(Method::Smi, PARTICLES, &label, &smi_settings)?;
                    partial.smi = Some(done.clone());
                    recovery_partial::save(&partial_path, &partial)?;
                    done
                }
            };
            let smi_lppd = |region| smi.lppd(region, false);
            eprintln!(
                "{label}: LPPD in {:.2} between {:.2} entire {:.2} ({:.1} s)",
                smi_lppd(Region::In),
                smi_lppd(Region::Between),
                smi_lppd(Region::Entire),
                smi.seconds
            );
            let mut recovered: BTreeMap<Region, usize> = BTreeMap::new();
            let mut trail: BTreeMap<Region, Map<String, Value>> = BTreeMap::new();
            let mut svgd_seconds = Map::new();
            let mut cpu_seconds = smi.cpu_seconds;
            let mut svgd_config = Value::Null;
            for &m in &counts {
                let label = format!("svgd m={m} {} #{r}", size.name());
                let settings = super::common::method_settings(&spec(Method::Svgd, m)).to_json();
                let (f, resumed) = match partial.svgd_with(m, &settings) {
                    Some(done) => (done.clone(), true),
                    None => {
                        let done = fit_outcome(Method::Svgd, m, &label, &settings)?;
                        partial.svgd.insert(m, done.clone());
                        recovery_partial::save(&partial_path, &partial)?;
                        (done, false)
                    }
                };
                svgd_seconds.insert(m.to_string(), json!(f.seconds));
                cpu_seconds = cpu_seconds.zip(f.cpu_seconds).map(|(a, b)| a + b);
                svgd_config = f.config.clone();
                let mut line = Vec::new();
                for region in Region::ALL {
                    let v = f.lppd(region, args.svgd_lppd == SvgdLppd::Paper);
                    trail
                        .entry(region)
                        .or_default()
                        .insert(m.to_string(), json!(v));
                    if !recovered.contains_key(&region) && v > smi_lppd(region) {
                        recovered.insert(region, m);
                    }
                    line.push(format!("{} {v:.2}", region.name()));
                }
                eprintln!(
                    "{label}: LPPD {} ({:.1} s{})",
                    line.join(", "),
                    f.seconds,
                    if resumed { ", fitted earlier" } else { "" }
                );
                if recovered.len() == Region::ALL.len() {
                    break;
                }
            }
            for region in Region::ALL {
                let (point, capped) = match recovered.get(&region) {
                    Some(&m) => (m, false),
                    None => (cap, true),
                };
                let record = json!({
                    "method": "svgd-vs-smi",
                    "size": size.name(),
                    "hidden": size.hidden(),
                    "region": region.name(),
                    "repeat": r,
                    "seed": seed,
                    "master_seed": args.problem.seed,
                    "recovery_point": point,
                    "capped": capped,
                    "max_particles": cap,
                    "svgd_lppd": args.svgd_lppd.name(),
                    "steps": steps,
                    "seconds": smi.seconds
                        + svgd_seconds.values().filter_map(Value::as_f64).sum::<f64>(),
                    "cpu_seconds": cpu_seconds,
                    "quick": q,
                    "config": {
                        "phase": args.problem.phase.name(),
                        "smi_particles": PARTICLES,
                        "smi_elbo_draws": SMI_ELBO_DRAWS,
                        "smi_predictive_draws": draws,
                        "learning_rate": super::common::LEARNING_RATE,
                        "smi": smi.config,
                        "svgd": svgd_config,
                    },
                    "metrics": {
                        "lppd_smi": smi_lppd(region),
                        "lppd_svgd": trail.get(&region).cloned().unwrap_or_default(),
                        "smi_seconds": smi.seconds,
                        "svgd_seconds": svgd_seconds.clone(),
                    },
                });
                let Value::Object(mut record) = record else {
                    unreachable!("json! of an object literal")
                };
                // A non-finite LPPD (SMI's or one of SVGD's) makes the comparison meaningless.
                let failure = records::fail_if_non_finite(&mut record);
                records::append(out, EXPERIMENT, record.clone())?;
                match failure {
                    None => done.push(record),
                    Some(reason) => {
                        let label = format!("recovery {} #{r} {}", size.name(), region.name());
                        eprintln!("error: {label} failed (recorded as failed): {reason}");
                        failed.push(label);
                    }
                }
            }
            recovery_partial::remove(&partial_path)?;
        }
    }
    if skipped > 0 {
        eprintln!(
            "recovery: {skipped} repeats skipped (already recorded in {})",
            out.display()
        );
    }
    println!("{}", median_table(&done));
    report(out)?;
    super::common::finish(
        out,
        EXPERIMENT,
        &[("table", &out.join("recovery.md"))],
        "recovery records",
        &failed,
    )
}

/// The records of one repeat already in the file (one per region, the last of each), when all
/// regions are there with the same identity fields, phase, SMI predictive draws and SMI engine
/// settings; `None` when the repeat must run.
fn earlier_repeat(
    recorded: &[Map<String, Value>],
    identity: &Map<String, Value>,
    phase: &str,
    draws: usize,
    smi_engine: &Value,
) -> Option<Vec<Map<String, Value>>> {
    // the same round trip as a stored record's
    let smi_engine: Value = serde_json::from_str(&smi_engine.to_string()).ok()?;
    let mut by_region: BTreeMap<&str, &Map<String, Value>> = BTreeMap::new();
    for r in records::matching(recorded, identity) {
        let same = records::text(r, "config.phase") == Some(phase)
            && records::num(r, "config.smi_predictive_draws") == Some(draws as f64)
            && records::get(r, "config.smi") == Some(&smi_engine);
        if let (true, Some(region)) = (same, records::text(r, "region")) {
            by_region.insert(region, r);
        }
    }
    Region::ALL
        .iter()
        .map(|region| by_region.get(region.name()).map(|&r| r.clone()))
        .collect()
}

/// numpy-style median of recovery points; a capped point counts as +∞. `None` when the median
/// involves a capped value.
fn median(points: &[(usize, bool)]) -> Option<f64> {
    let mut v: Vec<f64> = points
        .iter()
        .map(|&(p, c)| if c { f64::INFINITY } else { p as f64 })
        .collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return None;
    }
    let m = if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    };
    m.is_finite().then_some(m)
}

fn median_cell(points: &[(usize, bool)]) -> String {
    let cap = points.iter().map(|p| p.0).max().unwrap_or(0);
    match median(points) {
        Some(m) if m.fract() == 0.0 => format!("{m:.0}"),
        Some(m) => format!("{m:.1}"),
        None => format!(">{cap}"),
    }
}

/// A record's (SVGD LPPD kind, size, region), recovery point and whether it was capped; `None`
/// for a record without them.
pub(super) fn recovery_key(r: &Map<String, Value>) -> Option<(PointKey, (usize, bool))> {
    let size = records::text(r, "size").and_then(Size::from_name)?;
    let region = records::text(r, "region").and_then(Region::from_name)?;
    let point = records::num(r, "recovery_point")?;
    let kind = records::text(r, "svgd_lppd")
        .unwrap_or("proper")
        .to_string();
    let capped = records::get(r, "capped")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Some(((kind, size, region), (point as usize, capped)))
}

/// (SVGD LPPD kind, size, region): the key of a median.
pub(super) type PointKey = (String, Size, Region);

/// The recovery points of `recs` per (SVGD LPPD kind, size, region).
pub(super) fn points(recs: &[Map<String, Value>]) -> BTreeMap<PointKey, Vec<(usize, bool)>> {
    let mut groups: BTreeMap<PointKey, Vec<(usize, bool)>> = BTreeMap::new();
    for (key, point) in recs.iter().filter_map(recovery_key) {
        groups.entry(key).or_default().push(point);
    }
    groups
}

/// The median cells of `kind` and `size` per region (in [`Region::ALL`]'s order; `–` for a
/// region without points) and the most repeats behind one of them.
pub(super) fn medians(
    groups: &BTreeMap<PointKey, Vec<(usize, bool)>>,
    kind: &str,
    size: Size,
) -> ([String; 3], usize) {
    let mut repeats = 0;
    let cells = Region::ALL.map(|r| {
        let pts = groups
            .get(&(kind.to_string(), size, r))
            .map_or(&[][..], Vec::as_slice);
        repeats = repeats.max(pts.len());
        if pts.is_empty() {
            "–".to_string()
        } else {
            median_cell(pts)
        }
    });
    (cells, repeats)
}

/// The paper's table: median R over repeats per size (rows) and region (columns), one table
/// per LPPD kind.
fn median_table(recs: &[Map<String, Value>]) -> String {
    let groups = points(recs);
    let mut smi_s: BTreeMap<(String, Size), Vec<f64>> = BTreeMap::new();
    for r in recs {
        if let (Some(((kind, size, Region::In), _)), Some(s)) =
            (recovery_key(r), records::num(r, "metrics.smi_seconds"))
        {
            smi_s.entry((kind, size)).or_default().push(s);
        }
    }
    let mut kinds: Vec<String> = groups.keys().map(|k| k.0.clone()).collect();
    kinds.dedup();
    let mut text = String::new();
    for kind in kinds {
        let rows: Vec<Vec<String>> = [Size::Low, Size::Moderate]
            .into_iter()
            .filter(|&s| {
                Region::ALL
                    .iter()
                    .any(|&r| groups.contains_key(&(kind.clone(), s, r)))
            })
            .map(|s| {
                let (cells, n) = medians(&groups, &kind, s);
                let mut row = vec![s.name().to_string()];
                row.extend(cells);
                row.push(n.to_string());
                let secs = smi_s.get(&(kind.clone(), s)).cloned().unwrap_or_default();
                row.push(if secs.is_empty() {
                    "–".into()
                } else {
                    format!("{:.1}", secs.iter().sum::<f64>() / secs.len() as f64)
                });
                row
            })
            .collect();
        text.push_str(&format!(
            "\nSVGD scored with the {} LPPD{}\n\n",
            kind,
            if kind == "paper" {
                " (log-sum over particles, no 1/m: the paper's artifact)"
            } else {
                " (with 1/m)"
            }
        ));
        text.push_str(&markdown(
            &["model", "In", "Between", "Entire", "repeats", "SMI fit s"],
            &rows,
        ));
    }
    text
}

/// Rebuilds `recovery.md` from the records (nothing without records); records of failed runs
/// are left out.
pub fn report(out: &Path) -> Result<()> {
    let mut latest: BTreeMap<(String, String, String, u64), Map<String, Value>> = BTreeMap::new();
    for r in records::read_succeeded(out, EXPERIMENT)? {
        let key = (
            records::text(&r, "svgd_lppd")
                .unwrap_or("proper")
                .to_string(),
            records::text(&r, "size").unwrap_or_default().to_string(),
            records::text(&r, "region").unwrap_or_default().to_string(),
            records::num(&r, "repeat").unwrap_or(0.0) as u64,
        );
        latest.insert(key, r);
    }
    if latest.is_empty() {
        return Ok(());
    }
    let recs: Vec<_> = latest.into_values().collect();
    let mut md = String::from("# Recovery point (docs/algorithms.md §7.2)\n\n");
    let refs: Vec<&Map<String, Value>> = recs.iter().collect();
    md.push_str(&format!("> {}\n\n", super::stamp::recovery_line(&refs)));
    md.push_str(
        "R: the smallest SVGD particle count m ∈ {1, 2, 4, …} whose LPPD over the region beats \
         5-particle SMI's (S = 100, Adam 1e-3, same steps and seed); median over repeats; \
         \">cap\" when the median involves a repeat where no m up to the cap beat SMI. R > 5 \
         favours SMI. The paper (median of 10, SVGD scored without 1/m): low 1 / 8 / 8, \
         moderate 1 / >256 / >256 (In / Between / Entire).\n",
    );
    md.push_str(&median_table(&recs));
    md.push_str(&super::beside_paper::recovery_section(&recs));
    let p = out.join("recovery.md");
    smi_fit::files::write_atomic(&p, md.as_bytes())
        .with_context(|| format!("cannot write {}", p.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interrupted repeat resumes from its partial results: the fits in them are not run
    /// again (their made-up LPPDs reach the records), a fit asked for with other settings is,
    /// and the file is gone once the repeat is recorded.
    #[test]
    fn an_interrupted_repeat_reuses_its_finished_fits() {
        use super::super::common::{method_settings, PhaseArg, MASTER_SEED};
        let dir = tempfile::tempdir().unwrap();
        let args = Args {
            problem: ProblemArgs {
                size: Some(SizeArg::Low),
                repeats: Some(1),
                phase: PhaseArg::Code,
                seed: MASTER_SEED,
            },
            max_particles: Some(4),
            steps: Some(50),
            svgd_lppd: SvgdLppd::Proper,
            draws: Some(20),
            out: dir.path().to_path_buf(),
            quick: true,
        };
        let seed = repeat_seeds(MASTER_SEED, 1)[0];
        let (size, steps, draws) = (Size::Low, 50, 20);
        let settings = |method, m| {
            method_settings(&repeat_spec(size, steps, draws, seed, method, m)).to_json()
        };
        let made_up = |v: f64, settings: Value| recovery_partial::Outcome {
            lppd: Region::ALL
                .iter()
                .map(|r| (r.name().to_string(), Some(v)))
                .collect(),
            lppd_log_sum: BTreeMap::new(),
            seconds: 0.25,
            cpu_seconds: Some(0.5),
            config: json!({"made": "up"}),
            settings,
        };
        let key = partial_key(size, 0, seed, "code", steps, draws, true);
        let mut partial = recovery_partial::Partial::new(key);
        // SMI far above any SVGD: no m beats it, every region is capped at 4.
        partial.smi = Some(made_up(1e6, settings(Method::Smi, PARTICLES)));
        partial
            .svgd
            .insert(1, made_up(-123.5, settings(Method::Svgd, 1)));
        // m = 2 "fitted" with other settings: refitted.
        partial
            .svgd
            .insert(2, made_up(-7.0, json!({"other": true})));
        let path = recovery_partial::path(dir.path(), "low", 0, seed);
        recovery_partial::save(&path, &partial).unwrap();

        run(&args).unwrap();
        assert!(
            !path.exists(),
            "the partial repeat is removed once recorded"
        );
        let recs = records::read(dir.path(), EXPERIMENT).unwrap();
        assert_eq!(recs.len(), 3);
        for r in &recs {
            assert_eq!(records::num(r, "metrics.lppd_smi"), Some(1e6));
            assert_eq!(records::num(r, "metrics.lppd_svgd.1"), Some(-123.5));
            let two = records::num(r, "metrics.lppd_svgd.2").unwrap();
            assert!(two.is_finite() && two != -7.0, "{two}");
            assert!(records::num(r, "metrics.lppd_svgd.4").unwrap().is_finite());
            assert_eq!(records::num(r, "recovery_point"), Some(4.0));
            assert_eq!(records::get(r, "capped"), Some(&json!(true)));
            assert_eq!(records::get(r, "config.smi"), Some(&json!({"made": "up"})));
        }
    }

    #[test]
    fn counts_double_up_to_the_cap() {
        assert_eq!(particle_counts(1), vec![1]);
        assert_eq!(particle_counts(8), vec![1, 2, 4, 8]);
        assert_eq!(particle_counts(6), vec![1, 2, 4, 6]);
    }

    #[test]
    fn median_treats_capped_as_infinite() {
        assert_eq!(median(&[(1, false), (8, false), (8, false)]), Some(8.0));
        assert_eq!(median(&[(4, false), (8, false)]), Some(6.0));
        assert_eq!(median(&[(1, false), (256, true), (256, true)]), None);
        assert_eq!(median_cell(&[(1, false), (256, true), (256, true)]), ">256");
        assert_eq!(median_cell(&[(2, false), (4, false), (256, true)]), "4");
    }
}
