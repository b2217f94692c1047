//! The model file's header: what the network is, how it was fitted, how it scored, and where
//! the payload lies (the table in the module documentation of [`super`]).

use serde::{Deserialize, Serialize};
use smi::GuideSettings;
use smi_models::{Activation, Noise};

/// The `magic` value of every model file.
pub const MAGIC: &str = "smi-model";
/// The format version this program writes and reads.
pub const FORMAT_VERSION: u64 = 1;
/// The longest header accepted (a guard against reading a huge non-model file as a header).
pub(super) const MAX_HEADER: usize = 64 << 20;

/// Regression or classification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Task {
    /// Gaussian likelihood on a numeric target.
    Regression,
    /// Categorical likelihood over the target's classes.
    Classification,
}

impl std::str::FromStr for Task {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "regression" => Ok(Task::Regression),
            "classification" => Ok(Task::Classification),
            _ => Err(format!("{s:?}: expected regression or classification")),
        }
    }
}

impl Task {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Task::Regression => "regression",
            Task::Classification => "classification",
        }
    }
}

/// The network and likelihood.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Architecture {
    /// Layer widths: inputs, hidden layers…, outputs (1 for regression, C for classification).
    pub sizes: Vec<usize>,
    /// Hidden-layer nonlinearity.
    pub activation: Activation,
    /// Observation noise (regression only).
    pub noise: Option<Noise>,
    /// Standard deviation of the N(0, s²) weight prior.
    pub prior_scale: f64,
}

/// An affine standardisation: z = (v − mean) / std per column.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Scaler {
    /// Training means.
    pub mean: Vec<f64>,
    /// Training standard deviations (ddof 0; 1 for a constant column).
    pub std: Vec<f64>,
}

/// How the model was fitted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Adam's learning rate (`None` for NUTS).
    pub lr: Option<f64>,
    /// `"fixed"` or `"auto"` (grid search on the validation split).
    pub lr_mode: String,
    /// Under `--lr auto`: (learning rate, validation score) of each grid point; a diverged run
    /// has score `null`.
    pub lr_grid: Vec<(f64, Option<f64>)>,
    /// Step budget.
    pub max_steps: u64,
    /// Particles m (SMI/SVGD/ASVGD).
    pub particles: usize,
    /// ELBO draws S per particle (SMI).
    pub elbo_draws: usize,
    /// Mini-batch rows (`None`: full data).
    pub batch_size: Option<usize>,
    /// Early stopping on the force norm (Stein methods).
    pub early_stopping: bool,
    /// Uniform(−r, r) initialisation radius.
    pub init_radius: f64,
    /// The seed of the fit (prediction draws derive theirs from it).
    pub seed: u64,
    /// Fraction of rows held out for validation (`None`: none).
    pub validation: Option<f64>,
    /// NUTS warm-up iterations and draws.
    pub nuts_warmup: usize,
    /// NUTS draws kept.
    pub nuts_draws: usize,
    /// T, the likelihood temperature: the fit targeted p(θ)·p(y | θ)^(1/T) (1: the Bayesian
    /// posterior). `None` in files written before smi recorded it, which were fitted at T = 1
    /// ([`Settings::temperature`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// The learning-rate schedule (`"constant"` or `"cosine"`); files written before smi
    /// recorded it were fitted with a constant rate, the default.
    #[serde(default)]
    pub lr_schedule: crate::options::LrScheduleKind,
}

impl Settings {
    /// T of the fit: the recorded temperature, or 1 for a file written before smi recorded
    /// it (such fits used the Bayesian posterior).
    pub fn temperature(&self) -> f64 {
        self.temperature.unwrap_or(1.0)
    }
}

/// What the fit did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Training {
    /// Rows the model was fitted on.
    pub rows: usize,
    /// Rows held out for validation.
    pub validation_rows: usize,
    /// Steps run (NUTS: warm-up + draws).
    pub steps: u64,
    /// Training seconds.
    pub seconds: f64,
    /// Whether early stopping ended the run.
    pub early_stopped: bool,
    /// The loss of the last step.
    pub final_loss: Option<f64>,
    /// Why a fit ended before its step budget and early-stopping rule: `"max-time"` or
    /// `"interrupted"` (absent for a fit that finished).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// NUTS: the sampler's diagnostics (absent for other methods).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nuts: Option<NutsDiagnostics>,
}

/// The convergence diagnostics of a NUTS fit, over the kept draws.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NutsDiagnostics {
    /// Chains run.
    pub chains: usize,
    /// Kept draws per chain.
    pub draws: usize,
    /// Divergent transitions among the kept draws (all chains).
    pub divergences: usize,
    /// Divergent transitions during warm-up (all chains).
    pub warmup_divergences: usize,
    /// Mean tree depth of the kept draws.
    pub mean_tree_depth: f64,
    /// The largest rank-normalised split-R̂ over the parameters (each chain split in halves,
    /// so one chain has one); `None` when it cannot be computed (fewer than 4 draws).
    pub max_rhat: Option<f64>,
    /// The smallest bulk ESS over the parameters; `None` as for `max_rhat`.
    pub min_ess_bulk: Option<f64>,
    /// The median bulk ESS over the parameters; `None` as for `max_rhat`.
    pub median_ess_bulk: Option<f64>,
}

/// Validation metrics (`None` for a metric that does not apply or was not finite).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Mean negative log predictive density (regression: mixture NLL in target units;
    /// classification: −mean log of the draw-averaged probability of the true class).
    pub nll: Option<f64>,
    /// Regression: RMSE of the predictive mean.
    pub rmse: Option<f64>,
    /// Classification: accuracy of the most probable class.
    pub accuracy: Option<f64>,
    /// Regression: fraction of targets inside the central predictive interval of mass
    /// `interval`.
    pub coverage: Option<f64>,
    /// The mass of that interval.
    pub interval: Option<f64>,
    /// Rows left out of the metrics: test rows whose class label the model does not know
    /// (absent when every row was scored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped_rows: Option<usize>,
}

/// Which matrix the payload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PayloadKind {
    /// The fitted guide's particles.
    Particles,
    /// NUTS draws.
    Draws,
}

/// Shape of the payload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Payload {
    /// Particles or draws.
    pub kind: PayloadKind,
    /// The guide of the particles (`None` for draws).
    pub guide: Option<GuideSettings>,
    /// Number of rows (particles or draws).
    pub rows: usize,
    /// Values per row.
    pub cols: usize,
    /// d, the model dimension.
    pub dim: usize,
    /// Always `"f64-le"`.
    pub encoding: String,
}

/// The JSON header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`MAGIC`].
    pub magic: String,
    /// Always [`FORMAT_VERSION`] when written by this program.
    pub format_version: u64,
    /// The writing program's version.
    pub smi_version: String,
    /// Regression or classification.
    pub task: Task,
    /// The inference method's name.
    pub method: String,
    /// Network and likelihood.
    pub architecture: Architecture,
    /// Target column name.
    pub target: String,
    /// Feature column names, in input order.
    pub features: Vec<String>,
    /// Input standardisation.
    pub x_scaler: Scaler,
    /// Target standardisation (regression).
    pub y_scaler: Option<Scaler>,
    /// Class names (classification).
    pub classes: Option<Vec<String>>,
    /// How it was fitted.
    pub settings: Settings,
    /// What the fit did.
    pub training: Training,
    /// Validation metrics.
    pub validation: Option<Metrics>,
    /// Payload shape.
    pub payload: Payload,
    /// State of the Python estimator that saved the file (`smi.BNNRegressor` /
    /// `smi.BNNClassifier`: its class labels with their types, its predictive draws), so that
    /// `load` gives back the estimator exactly; absent in files of `smi fit`, and ignored by
    /// every other reader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimator: Option<serde_json::Value>,
    /// `"crc32:xxxxxxxx"` of the file without this member (see the module docs); `None` in
    /// files written before checksums, and while a header is built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
}
