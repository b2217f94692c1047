//! The options of a fit, typed: what to fit ([`FitOptions`]) and how the training runs
//! ([`RunControl`]). `smi fit` parses its command line into them; the Python estimators fill
//! them from their arguments.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use smi::{GuideSettings, Method};
use smi_models::Activation;

use crate::interrupt::Interrupt;
use crate::model_file::Task;

/// S, the ELBO draws per particle of SMI, unless [`FitOptions::elbo_draws`] says otherwise.
pub const DEFAULT_ELBO_DRAWS: usize = 10;

/// T, the likelihood temperature of an SMI regression, unless [`FitOptions::temperature`]
/// says otherwise: the fit targets p(θ)·p(y | θ)^(1/T). Chosen by measurement
/// (docs/calibration.md): at T = 1 the mean-field particles underfit and the learned noise
/// absorbs the misfit (intervals too wide, NLL up to 7 % behind a GP); at 0.3 the NLL matches
/// or beats the GP; at 0.1–0.2 small noisy sets overfit (the learned noise shrinks, the 90 %
/// interval covers 70–82 %).
pub const DEFAULT_TEMPERATURE_REGRESSION: f64 = 0.3;

/// T of an SMI classifier unless [`FitOptions::temperature`] says otherwise
/// (docs/calibration.md): at T = 1 the classifiers are underconfident (digits: ECE 0.10); 0.2
/// gave the lowest test NLL on all four classification sets of the study (0.3 next), with ECE
/// 0.014–0.035.
pub const DEFAULT_TEMPERATURE_CLASSIFICATION: f64 = 0.2;

/// The learning-rate schedule of the variational methods (stored in the model file's
/// `settings.lr_schedule` as `constant` or `cosine`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LrScheduleKind {
    /// Adam at the base rate throughout (the default, and what model files without a recorded
    /// schedule were fitted with).
    #[default]
    Constant,
    /// Half a cosine from the base rate down to 1/100 of it over the step budget.
    Cosine,
}

impl LrScheduleKind {
    /// `constant` or `cosine`.
    pub fn name(self) -> &'static str {
        match self {
            LrScheduleKind::Constant => "constant",
            LrScheduleKind::Cosine => "cosine",
        }
    }
}

impl FromStr for LrScheduleKind {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "constant" => Ok(LrScheduleKind::Constant),
            "cosine" => Ok(LrScheduleKind::Cosine),
            _ => Err(format!("{s:?}: expected constant or cosine")),
        }
    }
}

/// Whether regression targets are standardised for fitting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TargetScaling {
    /// (y − mean) / std with training statistics; predictions are mapped back (the default).
    #[default]
    Standardize,
    /// Raw targets (as `smi reproduce uci` fits them).
    None,
}

impl TargetScaling {
    /// `standardize` or `none`.
    pub fn name(self) -> &'static str {
        match self {
            TargetScaling::Standardize => "standardize",
            TargetScaling::None => "none",
        }
    }
}

impl FromStr for TargetScaling {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "standardize" | "standardise" => Ok(TargetScaling::Standardize),
            "none" => Ok(TargetScaling::None),
            _ => Err(format!("{s:?}: expected standardize or none")),
        }
    }
}

/// What to fit: the network, the method and its settings. The defaults are `smi fit`'s.
#[derive(Clone, Debug, PartialEq)]
pub struct FitOptions {
    /// The inference method (default SMI).
    pub method: Method,
    /// Particles m of SMI/SVGD/ASVGD (default 5).
    pub particles: usize,
    /// Hidden-layer widths; `None` (the default): two layers of 50 from 500 training rows,
    /// below that one layer of rows/10 units (at least 10), [`crate::sizing::default_hidden`].
    pub hidden: Option<Vec<usize>>,
    /// Hidden-layer nonlinearity; `None` (the default): ReLU for regression, tanh for
    /// classification.
    pub activation: Option<Activation>,
    /// Step budget; `None` (the default): sized to the data so that the fit takes about a
    /// minute on two cores ([`crate::sizing::default_max_steps`]).
    pub max_steps: Option<u64>,
    /// Adam's learning rate (default 5e-3); `None`: the grid 5e-1 … 5e-6 ([`smi::LR_GRID`]),
    /// each fitted on the training part and scored on the validation split (regression: RMSE
    /// of the predictive mean; classification: NLL), the best refitted.
    pub lr: Option<f64>,
    /// Seed of the fit (default 0).
    pub seed: u64,
    /// Fraction of the rows held out for validation metrics (sklearn's split, random_state
    /// 10; default none). Without it a learning-rate search tunes on a 10 % hold-out and
    /// refits on all rows.
    pub validation: Option<f64>,
    /// ELBO draws S per particle of SMI; `None` (the default): [`DEFAULT_ELBO_DRAWS`].
    pub elbo_draws: Option<usize>,
    /// The guide of SMI's particles or OVI's one guide; `None` (the default): mean-field
    /// Normal (docs/algorithms.md §2.12).
    pub guide: Option<GuideSettings>,
    /// s of the N(0, s²) prior on every weight and bias (default 1).
    pub prior_scale: f64,
    /// T of the tempered posterior p(θ)·p(y | θ)^(1/T); `None` (the default): for SMI
    /// [`DEFAULT_TEMPERATURE_REGRESSION`] or [`DEFAULT_TEMPERATURE_CLASSIFICATION`], 1 for the
    /// other methods.
    pub temperature: Option<f64>,
    /// The learning-rate schedule (default constant).
    pub lr_schedule: LrScheduleKind,
    /// Mini-batch rows, used when the training set is larger (default 100).
    pub batch_size: usize,
    /// Early stopping of the Stein methods on the force norm (default on).
    pub early_stopping: bool,
    /// Whether regression targets are standardised for fitting (default yes).
    pub target_scaling: TargetScaling,
    /// Predictive draws for the validation metrics (default 1000).
    pub draws: usize,
    /// NUTS warm-up iterations (default 500).
    pub nuts_warmup: usize,
    /// NUTS draws kept in the model (default 1000).
    pub nuts_draws: usize,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            method: Method::Smi,
            particles: 5,
            hidden: None,
            activation: None,
            max_steps: None,
            lr: Some(5e-3),
            seed: 0,
            validation: None,
            elbo_draws: None,
            guide: None,
            prior_scale: 1.0,
            temperature: None,
            lr_schedule: LrScheduleKind::Constant,
            batch_size: 100,
            early_stopping: true,
            target_scaling: TargetScaling::Standardize,
            draws: 1000,
            nuts_warmup: 500,
            nuts_draws: 1000,
        }
    }
}

impl FitOptions {
    /// Checks every value (errors name the `smi fit` option).
    ///
    /// # Errors
    /// A zero count, a non-positive scale, a validation fraction outside (0, 1), a guide for a
    /// method without one.
    pub fn check(&self) -> Result<()> {
        for (flag, v) in [
            ("--particles", self.particles as u64),
            ("--max-steps", self.max_steps.unwrap_or(1)),
            ("--batch-size", self.batch_size as u64),
            ("--elbo-draws", self.elbo_draws.unwrap_or(1) as u64),
        ] {
            if v == 0 {
                bail!("{flag} must be at least 1");
            }
        }
        if let Some(h) = &self.hidden {
            if h.is_empty() || h.contains(&0) {
                bail!("--hidden: give positive widths, e.g. 50,50");
            }
        }
        for (flag, v) in [
            ("--prior-scale", self.prior_scale),
            ("--temperature", self.temperature.unwrap_or(1.0)),
            ("--lr", self.lr.unwrap_or(1.0)),
        ] {
            if !(v > 0.0 && v.is_finite()) {
                bail!("{flag} must be a positive number, got {v}");
            }
        }
        if self.draws < 2 {
            bail!("--draws must be at least 2");
        }
        if let Some(v) = self.validation {
            if !(v > 0.0 && v < 1.0) {
                bail!("--validation must be a fraction in (0, 1), got {v}");
            }
        }
        if let Some(guide) = &self.guide {
            if !matches!(self.method, Method::Smi | Method::Ovi) || !guide.is_normal() {
                bail!(
                    "--guide {}: the guide families normal, lowrank:R and fullrank are for smi \
                     and ovi (svgd, asvgd and map use point masses, nuts draws)",
                    guide.name()
                );
            }
        }
        Ok(())
    }

    /// T of the fit for `task`: [`FitOptions::temperature`], else the task's default for SMI
    /// (the method it was measured for) and 1 for the others.
    pub fn temperature_for(&self, task: Task) -> f64 {
        self.temperature.unwrap_or(match (self.method, task) {
            (Method::Smi, Task::Regression) => DEFAULT_TEMPERATURE_REGRESSION,
            (Method::Smi, Task::Classification) => DEFAULT_TEMPERATURE_CLASSIFICATION,
            _ => 1.0,
        })
    }

    /// The nonlinearity of the hidden layers for `task`.
    pub fn activation_for(&self, task: Task) -> Activation {
        self.activation.unwrap_or(match task {
            Task::Regression => Activation::Relu,
            Task::Classification => Activation::Tanh,
        })
    }
}

/// Where a fit keeps its checkpoint and whether it continues one.
#[derive(Clone, Debug)]
pub struct Checkpointing {
    /// The model file the fit will write; the checkpoint is `<save>.ckpt` and
    /// `<save>.ckpt.json` ([`crate::checkpoint::Paths`]).
    pub save: PathBuf,
    /// Time between checkpoints (`None`: only when the fit stops early).
    pub every: Option<Duration>,
    /// Continue the fit whose checkpoint is there.
    pub resume: bool,
}

/// How a fit's training runs: its time limit, checkpoints, progress, messages and interrupt.
pub struct RunControl<'a> {
    /// Stop training after this long and keep the model as it is (`None`: no limit). Under a
    /// learning-rate search each fit of the grid stops after 1/12 of it.
    pub max_time: Option<Duration>,
    /// Checkpoints of the training state (`None`: none, and no resume).
    pub checkpoint: Option<Checkpointing>,
    /// Time between progress lines or bar updates (`None`: no progress shown).
    pub progress_every: Option<Duration>,
    /// Whether notes (the network and budget chosen, the learning-rate search, the training
    /// summary) go to stderr.
    pub messages: bool,
    /// When raised, a variational fit stops at its next step and keeps what it has.
    pub interrupt: &'a Interrupt,
}

impl<'a> RunControl<'a> {
    /// No limit, checkpoint, progress or message: how a library caller fits in memory.
    pub fn quiet(interrupt: &'a Interrupt) -> Self {
        RunControl {
            max_time: None,
            checkpoint: None,
            progress_every: None,
            messages: false,
            interrupt,
        }
    }
}
