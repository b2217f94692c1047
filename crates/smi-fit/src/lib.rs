//! # smi-fit — Bayesian neural networks on a user's own CSV file
//!
//! The library behind `smi fit`, `smi predict` and `smi inspect`: Bayesian-network
//! regression and classification on a CSV table, through the method layer of `smi`
//! (calibration on test rows is reported by `smi predict --metrics`, [`metrics_report`]).
//!
//! `fit` reads the CSV ([`csv_input`]), standardises the inputs (and regression targets) with
//! the training statistics, fits one of the six methods with the UCI benchmark's engine code
//! ([`smi_experiments::uci::fit`], docs/algorithms.md §7.3 defaults), optionally reports validation metrics, and saves a
//! versioned model file ([`model_file`]). `predict` ([`predict`]) writes per-row predictions;
//! `inspect` ([`inspect`]) describes a model.

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod calibration;
pub mod csv_input;
pub mod inspect;
pub mod limits;
pub mod metrics_report;
pub mod model_file;
pub mod predict;
pub mod reliability_plot;
pub mod scaling;
pub mod sizing;
mod targets;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use smi::{LogDensity, Matrix, NutsSettings};
use smi_data::train_test_split_indices;
use smi_models::{Activation, BnnClassifier, BnnRegression, Mlp, Noise};

use csv_input::{class_map, read_table, show, Table};
use limits::Budget;
use model_file::{
    finite, network_dim, Architecture, Header, Metrics, ModelFile, Payload, PayloadKind, Scaler,
    Settings, Task, Training, FORMAT_VERSION, MAGIC,
};
use smi::{Fit, Method, LR_GRID};
use smi_experiments::uci::UnitSettings;

pub use inspect::InspectArgs;
pub use predict::PredictArgs;

/// The hidden-layer nonlinearity on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ActivationArg {
    /// max(0, x) (the UCI networks).
    Relu,
    /// tanh (the MNIST networks).
    Tanh,
}

/// Whether regression targets are standardised for fitting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetScaling {
    /// (y − mean) / std with training statistics; predictions are mapped back.
    Standardize,
    /// Raw targets (as `smi reproduce uci` fits them).
    None,
}

/// The learning-rate schedule on the command line (and in the model file's `settings`).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum LrScheduleArg {
    /// Adam at the base rate throughout (the default, and what model files without a recorded
    /// schedule were fitted with).
    #[default]
    Constant,
    /// Half a cosine from the base rate down to 1/100 of it over the step budget.
    Cosine,
}

/// Options of `smi fit`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_long_help = FIT_HELP)]
pub struct FitArgs {
    /// Training data: a CSV file with a header row; feature cells must be numbers.
    #[arg(long)]
    pub csv: PathBuf,
    /// The column to predict.
    #[arg(long)]
    pub target: String,
    /// Feature columns, comma-separated [default: every column but the target].
    #[arg(long, value_delimiter = ',')]
    pub features: Option<Vec<String>>,
    /// Regression or classification [default: regression when at least 90 % of the target's
    /// cells are numbers (a numeric target with a few bad cells is an error naming them),
    /// classification otherwise]. `--task classification` takes numbers as class labels.
    #[arg(long, value_enum)]
    pub task: Option<Task>,
    /// Drop the rows with a missing or non-numeric value (an empty, text, NaN or infinite
    /// feature cell or regression target; an empty class label) instead of failing; says how
    /// many were dropped.
    #[arg(long)]
    pub drop_missing: bool,
    /// Inference method: smi, svgd, asvgd, ovi, map or nuts.
    #[arg(long, default_value = "smi")]
    pub method: String,
    /// Particles m (SMI/SVGD/ASVGD).
    #[arg(long, default_value_t = 5)]
    pub particles: usize,
    /// Hidden-layer widths, comma-separated, or `auto`: two layers of 50 from 500 training
    /// rows, below that one layer of rows/10 units (at least 10); see `smi_fit::sizing`.
    #[arg(long, default_value = "auto")]
    pub hidden: String,
    /// Hidden-layer nonlinearity [default: relu for regression, tanh for classification].
    #[arg(long, value_enum)]
    pub activation: Option<ActivationArg>,
    /// Step budget (Stein methods stop earlier on the force norm; OVI/MAP run exactly this)
    /// [default: sized to the data so that the fit takes about a minute on two cores: 60 s
    /// over the estimated time of a step (θ draws × batch rows × network size), in hundreds,
    /// between 1000 and 20000; see `smi_fit::sizing`].
    #[arg(long)]
    pub max_steps: Option<u64>,
    /// Adam's learning rate, or `auto`: the grid 5e-1 … 5e-6, each fitted on the training part
    /// and scored on the validation split (regression: RMSE of the predictive mean;
    /// classification: NLL); the best is refitted.
    #[arg(long, default_value = "5e-3")]
    pub lr: String,
    /// Seed of the fit (and, by default, of `smi predict`'s draws).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Hold out this fraction of the rows (sklearn's split, random_state 10) and report
    /// validation metrics; `--lr auto` without it tunes on a 10 % hold-out and refits on all rows.
    #[arg(long)]
    pub validation: Option<f64>,
    /// Where to write the model.
    #[arg(long)]
    pub save: PathBuf,
    /// ELBO draws S per particle (SMI) [default: 10, the SMI preset's; with the default step
    /// budget, more draws mean fewer steps].
    #[arg(long)]
    pub elbo_draws: Option<usize>,
    /// The guide of SMI's particles or OVI's one guide: `normal` (mean-field), `lowrank:R`
    /// (diagonal plus a rank-R factor: (2 + R)·d values per particle) or `fullrank` (a full
    /// covariance, d²/2 values: small networks only); docs/algorithms.md §2.12 [default:
    /// normal].
    #[arg(long, value_name = "GUIDE")]
    pub guide: Option<String>,
    /// s of the N(0, s²) prior on every weight and bias (inputs and regression targets are
    /// standardised).
    #[arg(long, default_value_t = 1.0)]
    pub prior_scale: f64,
    /// Likelihood temperature T: the fit targets p(θ)·p(y | θ)^(1/T) (1: the Bayesian
    /// posterior; below 1 a sharper, "cold" one, which SMI's mean-field particles need to fit
    /// well and be calibrated: docs/calibration.md) [default for smi: 0.3 for regression, 0.2
    /// for classification; 1 for the other methods].
    #[arg(long)]
    pub temperature: Option<f64>,
    /// Learning-rate schedule of the variational methods: `constant` (Adam at --lr
    /// throughout) or `cosine` (from --lr down to --lr/100 over the step budget).
    #[arg(long, value_enum, default_value = "constant")]
    pub lr_schedule: LrScheduleArg,
    /// Mini-batch rows (used when the training set is larger).
    #[arg(long, default_value_t = 100)]
    pub batch_size: usize,
    /// Turn off early stopping on the Stein force norm.
    #[arg(long)]
    pub no_early_stop: bool,
    /// Standardise regression targets for fitting (predictions are mapped back).
    #[arg(long, value_enum, default_value = "standardize")]
    pub target_scaling: TargetScaling,
    /// Predictive draws for the validation metrics.
    #[arg(long, default_value_t = 1000)]
    pub draws: usize,
    /// NUTS warm-up iterations.
    #[arg(long, default_value_t = 500)]
    pub nuts_warmup: usize,
    /// NUTS draws kept (saved in the model file).
    #[arg(long, default_value_t = 1000)]
    pub nuts_draws: usize,
    /// Stop training after this long (seconds, or with a unit: 90s, 10m, 1.5h) and save the
    /// model as it is, with a checkpoint that --resume continues. Under --lr auto each fit of
    /// the search stops after 1/12 of it (the search takes at most half). [default: no limit]
    #[arg(long, value_parser = parse_duration)]
    pub max_time: Option<f64>,
    /// Time between checkpoints of the training state to `<save>.ckpt` (0: only when the fit
    /// stops at --max-time or on Ctrl-C). A fit that finishes removes its checkpoint.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub checkpoint_every: f64,
    /// Continue the fit whose checkpoint is `<save>.ckpt` (left by --max-time, Ctrl-C or a
    /// killed fit); give the options of that fit (its learning rate and ELBO draws are kept).
    #[arg(long)]
    pub resume: bool,
    /// Time between progress lines when stderr is not a terminal (on a terminal a bar is
    /// drawn; SMI_NO_PROGRESS=1 turns both off).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub progress_every: f64,
}

/// Seconds from `90`, `90s`, `1.5m`, `10min` or `2h`: a non-negative finite number with an
/// optional unit.
///
/// # Errors
/// Anything else, with the accepted forms.
pub fn parse_duration(s: &str) -> std::result::Result<f64, String> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let factor = match unit.trim() {
        "" | "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => f64::NAN,
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .map(|v| v * factor)
        .filter(|v| *v >= 0.0 && v.is_finite())
        .ok_or_else(|| format!("{s:?}: expected seconds, e.g. 90, 90s, 10m or 1.5h"))
}

const FIT_HELP: &str = "\
Model (docs/algorithms.md §7.3): in → hidden… → out network (--hidden: by default sized to the \
training rows) with N(0, s²) priors on all weights and biases (s = --prior-scale, 1). \
Regression: y ~ N(y_loc, 1/√prec), prec ~ Gamma(1, 0.1) learned (the UCI model), on \
standardised inputs and targets. Classification: softmax over the target's classes (the \
class map is saved with the model). The fit targets the tempered posterior \
p(θ)·p(y | θ)^(1/T), T = --temperature (for SMI by default 0.3 for regression and 0.2 for \
classification: at T = 1 it underfits, with too wide intervals and underconfident classes; \
docs/calibration.md has the measurements and what calibration to expect). Methods use the UCI benchmark's settings: Adam, \
Uniform(−0.1, 0.1) initialisation, mini-batches of --batch-size rows with N/b scaling when the \
training set is larger, SMI with m Normal particles and S ELBO draws, SVGD/ASVGD with m point \
particles, early stopping on ‖φ‖ (window 35, factor 2), NUTS on the full data.

Time: by default the step budget is sized so that the fit takes about a minute on two cores \
(it says so, with the budget, when it starts). --max-time stops it earlier; Ctrl-C stops it at \
the next step (a second Ctrl-C ends it at once). Either way the model is saved as it is, with \
a checkpoint <save>.ckpt that the same command with --resume continues; a checkpoint is also \
written every --checkpoint-every. Integer targets with at most 10 distinct values need --task.

Example:
  smi fit --csv examples/data/regression_train.csv --target y --validation 0.1 --save m.smi
  smi predict --model m.smi --csv examples/data/regression_test.csv --out pred.csv
  smi inspect --model m.smi";

/// The hidden widths of `--hidden` (comma-separated positive integers; an empty entry, as in
/// `2,,2` or `50,`, is an error).
fn parse_hidden(s: &str) -> Result<Vec<usize>> {
    if s.trim().is_empty() {
        bail!("--hidden {s:?}: give at least one hidden width, e.g. 50,50");
    }
    s.split(',')
        .map(str::trim)
        .enumerate()
        .map(|(i, p)| {
            if p.is_empty() {
                bail!(
                    "--hidden {s:?}: width {} is empty (two commas in a row, or one at an end?)",
                    i + 1
                );
            }
            p.parse::<usize>()
                .ok()
                .filter(|&w| w > 0)
                .with_context(|| format!("--hidden {s:?}: {p:?} is not a positive width"))
        })
        .collect()
}

/// Fails unless a file can be created in the folder of `path` (the one named by `flag`), so
/// that a missing or read-only folder is reported before any work rather than after it. The
/// probe file is removed again; `path` itself is not touched.
pub fn check_writable(path: &Path, flag: &str) -> Result<()> {
    let shown = path.display();
    if path.as_os_str().is_empty() {
        bail!("{flag}: the path is empty");
    }
    if path.is_dir() {
        bail!("{flag} {shown}: this is a folder; name a file in it");
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "{flag} {shown}: the folder {} does not exist (create it first)",
            dir.display()
        );
    }
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let probe = dir.join(format!(".{name}.{}.probe", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .with_context(|| format!("{flag} {shown}: cannot write into {}", dir.display()))?;
    // Best effort: a probe that cannot be removed is harmless.
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

pub mod arrays;
pub mod checkpoint;
mod data;
pub mod diagnostics;
mod fitting;
pub mod interrupt;
mod memory;
mod prepare;
pub mod progress;
pub mod train;

use data::{read_data, Data};
pub use fitting::run;
pub use interrupt::INTERRUPTED_STATUS;
use memory::check_fit_memory;
use prepare::{header_stub, prepare, validate, Model, Prepared, Spec};
pub use train::Stop;

#[cfg(test)]
mod tests;
