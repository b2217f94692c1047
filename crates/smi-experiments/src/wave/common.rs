//! What the wave and recovery experiments share (docs/algorithms.md §7.2): model sizes, methods, the wave
//! problem, fitting one method, and the predictive evaluation (LPPD per region, 90 % HDI of
//! y_loc on the visualisation grid).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};
use smi::metrics::{gaussian_log_lik, hdi_per_point, lppd, lppd_log_sum};
use smi::{Init, Matrix, MethodSettings, NutsSettings, OptimizerSettings, Posterior, RunSettings};
use smi_data::{WaveData, WavePhase, WaveSettings};
use smi_models::{BnnRegression, Precision};

use crate::cpu_time::CpuClock;
use crate::records;
use crate::resumable::FitCheckpoint;
use smi_fit::progress::Bar;

/// HDI mass of the paper's bands.
pub const HDI_MASS: f64 = 0.9;
/// Adam learning rate of every method (docs/algorithms.md §7.2).
pub const LEARNING_RATE: f64 = 1e-3;
/// Mixture components of SMI and particles of SVGD/ASVGD.
pub const PARTICLES: usize = 5;
/// ELBO draws per SMI particle per step.
pub const SMI_ELBO_DRAWS: usize = 100;
/// Steps of SMI, SVGD and ASVGD.
pub const STEIN_STEPS: u64 = 15_000;
/// Steps of OVI and MAP.
pub const SVI_STEPS: u64 = 50_000;
/// Predictive draws of the sampled methods.
pub const PREDICTIVE_DRAWS: usize = 5_000;
/// Master seed of the repeats.
pub const MASTER_SEED: u64 = 10;

/// A network width of the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Size {
    /// Width 5 (46 parameters).
    Low,
    /// Width 100 (10 401 parameters).
    Moderate,
}

impl Size {
    /// Hidden width of both tanh layers.
    pub fn hidden(self) -> usize {
        match self {
            Size::Low => 5,
            Size::Moderate => 100,
        }
    }

    /// The name in records.
    pub fn name(self) -> &'static str {
        match self {
            Size::Low => "low",
            Size::Moderate => "moderate",
        }
    }

    /// Parses a record's name.
    pub fn from_name(s: &str) -> Option<Size> {
        match s {
            "low" => Some(Size::Low),
            "moderate" => Some(Size::Moderate),
            _ => None,
        }
    }
}

/// `--size` on the command line.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SizeArg {
    /// Width 5.
    Low,
    /// Width 100.
    #[value(alias = "high")]
    Moderate,
    /// Both widths.
    Both,
}

impl SizeArg {
    /// The sizes to run.
    pub fn sizes(self) -> Vec<Size> {
        match self {
            SizeArg::Low => vec![Size::Low],
            SizeArg::Moderate => vec![Size::Moderate],
            SizeArg::Both => vec![Size::Low, Size::Moderate],
        }
    }
}

/// `--phase`: the sine's phase convention.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PhaseArg {
    /// sin(2π(x + 1/3)), the code that produced the paper's numbers.
    #[default]
    Code,
    /// sin(2π(x + 2/3)), as printed in the paper.
    Paper,
}

impl PhaseArg {
    /// The data crate's phase.
    pub fn phase(self) -> WavePhase {
        match self {
            PhaseArg::Code => WavePhase::Code,
            PhaseArg::Paper => WavePhase::Paper,
        }
    }

    /// The name in records.
    pub fn name(self) -> &'static str {
        match self {
            PhaseArg::Code => "code",
            PhaseArg::Paper => "paper",
        }
    }

    /// Parses a record's name (unknown → code).
    pub fn from_name(s: Option<&str>) -> PhaseArg {
        if s == Some("paper") {
            PhaseArg::Paper
        } else {
            PhaseArg::Code
        }
    }
}

pub use smi::Method;

/// Whether the paper's evaluation takes one draw per particle (Delta guide in SteinVI), which is
/// where its LPPD drops the 1/m (docs/algorithms.md §8).
pub fn has_lppd_artifact(method: Method) -> bool {
    matches!(method, Method::Svgd | Method::Asvgd)
}

/// The paper's step budget of `method` in the wave experiment.
pub fn default_steps(method: Method) -> u64 {
    match method {
        Method::Smi | Method::Svgd | Method::Asvgd => STEIN_STEPS,
        Method::Ovi | Method::Map => SVI_STEPS,
        Method::Nuts => 0,
    }
}

/// An evaluation region of the paper.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Region {
    /// Test points inside the training clusters.
    In,
    /// Test points between the clusters.
    Between,
    /// Test points over (−2, 2).
    Entire,
}

impl Region {
    /// Every region, in table order.
    pub const ALL: [Region; 3] = [Region::In, Region::Between, Region::Entire];

    /// The name in records.
    pub fn name(self) -> &'static str {
        match self {
            Region::In => "in",
            Region::Between => "between",
            Region::Entire => "entire",
        }
    }

    /// Parses a record's name.
    pub fn from_name(s: &str) -> Option<Region> {
        Region::ALL.into_iter().find(|r| r.name() == s)
    }
}

/// The data and model of one size.
pub struct Problem {
    /// How the data were drawn.
    pub settings: WaveSettings,
    /// Every set.
    pub data: WaveData,
    /// The BNN on the 40 training points.
    pub model: BnnRegression,
    /// In, between, entire, then grid x, one per row.
    eval_x: Matrix,
}

/// Column offsets in the evaluation matrix.
struct Offsets {
    in_: usize,
    between: usize,
    entire: usize,
    grid: usize,
    end: usize,
}

impl Problem {
    /// The paper's wave data with `phase` and the 2-hidden-layer tanh BNN of `size`.
    ///
    /// # Errors
    /// From data generation or model construction.
    pub fn new(size: Size, phase: PhaseArg) -> Result<Self> {
        let settings = WaveSettings {
            phase: phase.phase(),
            ..WaveSettings::default()
        };
        let data = WaveData::generate(&settings).context("cannot generate the wave data")?;
        let col = |x: &[f64]| Matrix::from_vec(x.len(), 1, x.to_vec());
        let model = BnnRegression::wave(
            col(&data.train.x).context("training inputs")?,
            data.train.y.clone(),
            size.hidden(),
        )
        .context("cannot build the wave BNN")?;
        let all: Vec<f64> = [
            &data.in_clusters.x,
            &data.between.x,
            &data.entire.x,
            &data.grid.x,
        ]
        .into_iter()
        .flatten()
        .copied()
        .collect();
        let eval_x = col(&all).context("evaluation inputs")?;
        Ok(Problem {
            settings,
            data,
            model,
            eval_x,
        })
    }

    fn offsets(&self) -> Offsets {
        let in_ = 0;
        let between = in_ + self.data.in_clusters.len();
        let entire = between + self.data.between.len();
        let grid = entire + self.data.entire.len();
        Offsets {
            in_,
            between,
            entire,
            grid,
            end: grid + self.data.grid.len(),
        }
    }

    /// Whether grid point x lies in a training cluster.
    pub fn in_clusters(&self, x: f64) -> bool {
        let (l, r) = (self.settings.left, self.settings.right);
        (l.0..=l.1).contains(&x) || (r.0..=r.1).contains(&x)
    }

    /// Whether grid point x lies between the clusters.
    pub fn between(&self, x: f64) -> bool {
        let b = self.settings.between;
        x > b.0 && x < b.1
    }
}

/// The options the wave and recovery experiments share: the problem and its repeats.
#[derive(clap::Args, Debug, Clone)]
pub struct ProblemArgs {
    /// Network size: width 5 (low), 100 (moderate) or both [default: both; low with --quick].
    #[arg(long, value_enum)]
    pub size: Option<SizeArg>,
    /// Repeats, seeded from the master seed [default: 10; 1 with --quick].
    #[arg(long)]
    pub repeats: Option<usize>,
    /// Phase of the sine: the code's (x + 1/3) or the paper's printed (x + 2/3).
    #[arg(long, value_enum, default_value = "code")]
    pub phase: PhaseArg,
    /// Master seed of the repeats.
    #[arg(long, default_value_t = MASTER_SEED)]
    pub seed: u64,
}

/// The per-repeat seeds: `repeats` u64 from ChaCha8 seeded with the master seed.
pub fn repeat_seeds(master: u64, repeats: usize) -> Vec<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(master);
    (0..repeats).map(|_| rng.next_u64()).collect()
}

/// What to fit.
#[derive(Clone, Debug)]
pub struct FitSpec {
    /// The method.
    pub method: Method,
    /// Optimisation steps (ignored by NUTS).
    pub steps: u64,
    /// Particles of SMI/SVGD/ASVGD.
    pub particles: usize,
    /// ELBO draws of SMI.
    pub elbo_draws: usize,
    /// Predictive draws of the sampled methods (SMI, OVI).
    pub draws: usize,
    /// Seed of the engine and of the predictive draws.
    pub seed: u64,
    /// NUTS settings (seed overwritten by `seed`).
    pub nuts: NutsSettings,
}

/// A fitted method: its posterior draws (K × d) and bookkeeping.
pub struct Fitted {
    /// Parameter draws used for prediction.
    pub draws: Matrix,
    /// Wall-clock seconds of the fit.
    pub seconds: f64,
    /// CPU seconds of the fit (all threads; `None` where unreadable).
    pub cpu_seconds: Option<f64>,
    /// Steps run (NUTS: warm-up + draws).
    pub steps: u64,
    /// Steps skipped for non-finite values.
    pub skipped_steps: u64,
    /// The engine settings, for records.
    pub config: Value,
}

/// The NUTS settings of the wave experiment ("modest": the experiment code's own NUTS settings
/// are a 5 + 50 placeholder): one chain, target accept 0.8; low: 500 warm-up + 500 draws, max
/// tree depth 10 (NumPyro's defaults); moderate (10 401 parameters): 200 + 200, max depth 8.
pub fn default_nuts(size: Size) -> NutsSettings {
    match size {
        Size::Low => NutsSettings {
            num_warmup: 500,
            num_draws: 500,
            ..NutsSettings::numpyro()
        },
        Size::Moderate => NutsSettings {
            num_warmup: 200,
            num_draws: 200,
            max_depth: 8,
            ..NutsSettings::numpyro()
        },
    }
}

/// The method settings of `spec` (docs/algorithms.md §7.2): the method's preset with Adam at
/// [`LEARNING_RATE`], m = `spec.particles`, S = `spec.elbo_draws` for SMI, the prior-median
/// init of AutoDelta for MAP (as the experiment code uses), and NUTS's own settings.
pub fn method_settings(spec: &FitSpec) -> MethodSettings {
    if spec.method == Method::Nuts {
        return MethodSettings::Nuts(NutsSettings {
            seed: spec.seed,
            ..spec.nuts.clone()
        });
    }
    let mut settings = spec
        .method
        .preset(spec.steps)
        .with_particles(spec.particles)
        .with_optimizer(OptimizerSettings::adam(LEARNING_RATE))
        .with_seed(spec.seed);
    match spec.method {
        Method::Smi => settings = settings.with_elbo_draws(spec.elbo_draws),
        Method::Map => settings = settings.with_init(Init::PriorMedian { draws: 15 }),
        // The paper's OVI draws once per step (the preset's S = 10 is the default that
        // converges without tuning, docs/defaults.md).
        Method::Ovi => settings = settings.with_elbo_draws(1),
        _ => {}
    }
    if let MethodSettings::Stein(s) = &mut settings {
        // SVGD/ASVGD on NumPyro's target, without the log-Jacobian
        // (SteinSettings::svgd_numpyro_parity).
        s.jacobian = !spec.method.is_point_mass();
    }
    settings
}

/// Fits `spec.method` on the problem's training data (full batch), with a progress bar
/// labelled `label`, and returns the draws the paper predicts with: `spec.draws` mixture draws
/// for SMI and OVI, the particles for SVGD/ASVGD/MAP, the posterior draws for NUTS.
///
/// With `checkpoint`, a variational fit saves its state there as it goes and continues from
/// a saved state of the same fit ([`crate::resumable`]; the same bits as an uninterrupted fit).
/// NUTS ignores it.
///
/// # Errors
/// Settings, engine or sampling errors, with context naming the method.
pub fn fit(
    problem: &Problem,
    spec: &FitSpec,
    label: &str,
    checkpoint: Option<&FitCheckpoint>,
) -> Result<Fitted> {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed ^ 0x005e_ed0f_d2a5);
    let name = spec.method.name();
    let settings = method_settings(spec);
    // NUTS: f64 gradients keep the Hamiltonian's energy error honest.
    let model64;
    let model = if spec.method == Method::Nuts {
        model64 = problem.model.clone().with_precision(Precision::F64);
        &model64
    } else {
        &problem.model
    };
    let every = match spec.method {
        Method::Nuts => 5,
        Method::Ovi | Method::Map => 200,
        _ => 50,
    };
    let mut bar = Bar::new(label, every);
    if let (Some(ckpt), false) = (checkpoint, spec.method == Method::Nuts) {
        let run = RunSettings::steps(spec.steps);
        let out = crate::resumable::fit(model, &settings, &run, ckpt, &mut bar, label)
            .with_context(|| format!("{name} failed"))?;
        return Ok(Fitted {
            draws: Posterior::Mixture(out.posterior).predictive_draws(spec.draws, &mut rng)?,
            seconds: out.seconds,
            cpu_seconds: out.cpu_seconds,
            steps: out.state.step,
            skipped_steps: out.state.skipped_steps,
            config: settings.to_json(),
        });
    }
    let cpu = CpuClock::start();
    let out = smi::fit(model, &settings, &RunSettings::steps(spec.steps), &mut bar)
        .with_context(|| format!("{name} failed"))?;
    let cpu_seconds = cpu.seconds();
    Ok(Fitted {
        draws: out.posterior.predictive_draws(spec.draws, &mut rng)?,
        seconds: out.seconds,
        cpu_seconds,
        steps: out.steps,
        skipped_steps: out.skipped_steps,
        config: settings.to_json(),
    })
}

/// The 90 % HDI band of y_loc on the grid.
#[derive(Clone, Debug, Default)]
pub struct Band {
    /// Grid x.
    pub x: Vec<f64>,
    /// Lower HDI end.
    pub lower: Vec<f64>,
    /// Upper HDI end.
    pub upper: Vec<f64>,
    /// Mean of y_loc over the draws.
    pub mean: Vec<f64>,
}

/// The metrics of one fit.
#[derive(Clone, Debug)]
pub struct Evaluation {
    /// Proper LPPD Σ_i log((1/S) Σ_s p(y_i|θ_s)) per region.
    pub lppd: BTreeMap<Region, f64>,
    /// Log-sum LPPD Σ_i log Σ_s p(y_i|θ_s) per region (the paper's SVGD artifact).
    pub lppd_log_sum: BTreeMap<Region, f64>,
    /// Mean 90 % HDI width of y_loc over the grid points inside the clusters.
    pub hdi_width_in: f64,
    /// Mean 90 % HDI width of y_loc over the grid points between the clusters.
    pub hdi_width_between: f64,
    /// The band on the whole grid.
    pub band: Band,
    /// Number of draws S.
    pub num_draws: usize,
    /// Wall-clock seconds of the evaluation.
    pub seconds: f64,
}

impl Evaluation {
    /// The LPPD the paper reports for `method`: log-sum for SVGD/ASVGD, proper otherwise.
    pub fn lppd_paper(&self, method: Method, region: Region) -> f64 {
        if has_lppd_artifact(method) {
            self.lppd_log_sum[&region]
        } else {
            self.lppd[&region]
        }
    }

    /// The `metrics` object of a wave record.
    pub fn metrics(&self, method: Method) -> Map<String, Value> {
        let mut m = Map::new();
        for r in Region::ALL {
            m.insert(format!("lppd_{}", r.name()), json!(self.lppd[&r]));
        }
        for r in Region::ALL {
            m.insert(
                format!("lppd_{}_paper", r.name()),
                json!(self.lppd_paper(method, r)),
            );
        }
        m.insert("hdi_width_in".into(), json!(self.hdi_width_in));
        m.insert("hdi_width_between".into(), json!(self.hdi_width_between));
        m.insert("num_draws".into(), json!(self.num_draws));
        m
    }
}

/// Predicts y_loc at every evaluation point for the K draws, then computes the LPPD of each
/// region and the HDI band on the grid.
///
/// # Errors
/// Shape errors, non-finite predictions.
pub fn evaluate(problem: &Problem, draws: &Matrix) -> Result<Evaluation> {
    let start = std::time::Instant::now();
    let model = &problem.model;
    let d = draws.cols();
    let k = draws.rows();
    let off = problem.offsets();
    let n = off.end;
    let mut y_loc = Matrix::zeros(k, n);
    let mut noise = Vec::with_capacity(k);
    const CHUNK: usize = 250;
    for a in (0..k).step_by(CHUNK) {
        let b = (a + CHUNK).min(k);
        let pred = model
            .predict(&draws.as_slice()[a * d..b * d], &problem.eval_x)
            .context("prediction failed")?;
        y_loc.as_mut_slice()[a * n..b * n].copy_from_slice(pred.y_loc.as_slice());
        noise.extend(pred.noise_scale);
    }
    if !y_loc.is_finite() {
        bail!("the fitted network predicts non-finite values");
    }
    let cols = |lo: usize, hi: usize| Matrix::from_fn(k, hi - lo, |s, i| y_loc.get(s, lo + i));
    let mut lp = BTreeMap::new();
    let mut ls = BTreeMap::new();
    for (region, lo, hi, y) in [
        (
            Region::In,
            off.in_,
            off.between,
            &problem.data.in_clusters.y,
        ),
        (
            Region::Between,
            off.between,
            off.entire,
            &problem.data.between.y,
        ),
        (Region::Entire, off.entire, off.grid, &problem.data.entire.y),
    ] {
        let ll = gaussian_log_lik(&cols(lo, hi), &noise, y)?;
        lp.insert(region, lppd(&ll, None)?);
        ls.insert(region, lppd_log_sum(&ll, None)?);
    }
    let grid = cols(off.grid, off.end);
    let hdi = hdi_per_point(&grid, HDI_MASS)?;
    let gx = &problem.data.grid.x;
    let mean_width = |keep: &dyn Fn(f64) -> bool| {
        let w: Vec<f64> = gx
            .iter()
            .zip(&hdi)
            .filter(|(x, _)| keep(**x))
            .map(|(_, iv)| iv.width())
            .collect();
        w.iter().sum::<f64>() / w.len().max(1) as f64
    };
    let band = Band {
        x: gx.clone(),
        lower: hdi.iter().map(|i| i.lower).collect(),
        upper: hdi.iter().map(|i| i.upper).collect(),
        mean: grid.col_means(),
    };
    Ok(Evaluation {
        lppd: lp,
        lppd_log_sum: ls,
        hdi_width_in: mean_width(&|x| problem.in_clusters(x)),
        hdi_width_between: mean_width(&|x| problem.between(x)),
        band,
        num_draws: k,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Mean and population standard deviation (ddof 0).
pub fn mean_std(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n;
    (m, var.sqrt())
}

/// Ends a wave or recovery run: says where the records of `experiment` in `out` and its
/// `outputs` (a description and a path each) are, then fails when any of the `failed` runs
/// (labels of `what`, e.g. "wave runs") did.
///
/// # Errors
/// When `failed` is not empty.
pub fn finish(
    out: &Path,
    experiment: &str,
    outputs: &[(&str, &Path)],
    what: &str,
    failed: &[String],
) -> Result<()> {
    let mut msg = format!("records in {}", records::path(out, experiment).display());
    for (name, path) in outputs {
        msg.push_str(&format!(", {name} {}", path.display()));
    }
    eprintln!("{msg}");
    if !failed.is_empty() {
        bail!(
            "{} {what} failed ({}): their metrics are not finite",
            failed.len(),
            failed.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_regions_and_evaluation() {
        let p = Problem::new(Size::Low, PhaseArg::Code).unwrap();
        assert!(p.in_clusters(-1.0) && p.in_clusters(1.5) && !p.in_clusters(0.0));
        assert!(p.between(0.0) && !p.between(-1.0) && !p.between(1.5));
        // Three identical draws: the LPPD is the same as with one, the log-sum adds n·ln 3,
        // and the HDI has zero width.
        let d = smi::LogDensity::dim(&p.model);
        let one = Matrix::from_fn(1, d, |_, j| 0.1 * (j as f64).sin());
        let three = Matrix::from_fn(3, d, |_, j| 0.1 * (j as f64).sin());
        let e1 = evaluate(&p, &one).unwrap();
        let e3 = evaluate(&p, &three).unwrap();
        for r in Region::ALL {
            assert!((e1.lppd[&r] - e3.lppd[&r]).abs() < 1e-9);
        }
        let n_between = p.data.between.len() as f64;
        let diff = e3.lppd_log_sum[&Region::Between] - e3.lppd[&Region::Between];
        assert!((diff - n_between * 3f64.ln()).abs() < 1e-9);
        assert_eq!(e3.hdi_width_between, 0.0);
        assert_eq!(e3.band.x.len(), 500);
        assert_eq!(
            e3.lppd_paper(Method::Svgd, Region::In),
            e3.lppd_log_sum[&Region::In]
        );
        assert_eq!(e3.lppd_paper(Method::Smi, Region::In), e3.lppd[&Region::In]);
    }

    #[test]
    fn seeds_are_reproducible() {
        assert_eq!(repeat_seeds(10, 3), repeat_seeds(10, 3));
        assert_eq!(repeat_seeds(10, 3)[..2], repeat_seeds(10, 2)[..]);
    }
}
