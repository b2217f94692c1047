//! `SteinSettings`: every option of the Stein engine, with presets for SMI, SVGD and ASVGD.

use serde::{Deserialize, Serialize};

use crate::engine::NonFinitePolicy;
use crate::error::{Error, Result};
use crate::guide::{GuideSettings, Init};
use crate::kernel::KernelSettings;
use crate::optim::OptimizerSettings;
use crate::optim::Schedule;

/// How the attraction is normalised (docs/algorithms.md §2.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum AttractionNorm {
    /// φ = (1/m)[Σ_i k·ĝ_i + α Σ_i ∇k]: the paper and NumPyro ≤ 0.15 (default).
    #[default]
    Paper,
    /// φ = Σ_i k·ĝ_i + (α/m) Σ_i ∇k: NumPyro ≥ 0.16 (equivalently α_eff = α/m).
    Numpyro,
}

impl AttractionNorm {
    /// The name on the command line and in records: `paper` or `numpyro`.
    pub fn name(self) -> &'static str {
        match self {
            AttractionNorm::Paper => "paper",
            AttractionNorm::Numpyro => "numpyro",
        }
    }
}

impl std::str::FromStr for AttractionNorm {
    type Err = Error;

    /// Parses `paper` or `numpyro` (case-insensitive).
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "paper" => Ok(AttractionNorm::Paper),
            "numpyro" => Ok(AttractionNorm::Numpyro),
            _ => Err(Error::invalid(
                "attraction",
                format!("unknown attraction normalisation {s:?}; valid: paper, numpyro"),
            )),
        }
    }
}

/// Whether one ELBO gradient per particle serves every target (docs/algorithms.md §2.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum GradientReuse {
    /// One ĝ_i per particle per step, shared by all targets: m·S model evaluations (the paper's
    /// runs; default).
    #[default]
    Shared,
    /// A fresh ĝ_i for every (target, source) pair: m²·S model evaluations (NumPyro ≥ 0.17).
    PerPair,
}

/// Settings of [`crate::SteinVi`]. Field names follow NumPyro.
///
/// Defaults ([`SteinSettings::smi`]): Normal guide (init scale 0.1), uniform init radius 2,
/// m = 5 particles, S = 10 ELBO draws, RBF kernel, Adagrad(0.05, momentum 0.9), τ = α = 1, paper
/// normalisation, shared gradients, constant schedule, full batch, log-Jacobian included,
/// non-finite steps skipped, seed 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SteinSettings {
    /// m, the number of particles (mixture components).
    pub num_particles: usize,
    /// S, reparameterised draws per particle per step (`num_elbo_particles`).
    pub num_elbo_particles: usize,
    /// The guide family of each particle.
    pub guide: GuideSettings,
    /// How each particle's initial location is drawn.
    pub init: Init,
    /// The Stein kernel.
    pub kernel: KernelSettings,
    /// The optimizer receiving −φ.
    pub optimizer: OptimizerSettings,
    /// τ, multiplying the model's log density in the attraction (SVGD in NumPyro uses 1/m
    /// with NumPyro normalisation; equivalent to 1 with paper normalisation). It scales the
    /// whole model term, including the log-Jacobian of constrained latents.
    pub loss_temperature: f64,
    /// α, multiplying the repulsion.
    pub repulsion_temperature: f64,
    /// Attraction normalisation (docs/algorithms.md §2.8).
    pub attraction: AttractionNorm,
    /// Gradient reuse across targets (docs/algorithms.md §2.8).
    pub gradient_reuse: GradientReuse,
    /// γ(t) multiplying τ (ASVGD's cyclical annealing).
    pub schedule: Schedule,
    /// Mini-batch size b (`None`: full batch). Each draw gets its own subsample (docs/algorithms.md §2.6).
    pub batch_size: Option<usize>,
    /// Include log|T′(u)| of constrained latents in the target (docs/algorithms.md §4.1). Must be `true` for
    /// the Normal guide; `false` gives NumPyro's SVGD, which targets p(T(u)).
    pub jacobian: bool,
    /// What to do with a non-finite step.
    pub on_non_finite: NonFinitePolicy,
    /// Seed of the state's RNG.
    pub seed: u64,
}

impl Default for SteinSettings {
    fn default() -> Self {
        SteinSettings::smi()
    }
}

impl SteinSettings {
    /// SMI with the defaults listed on [`SteinSettings`].
    pub fn smi() -> Self {
        SteinSettings {
            num_particles: 5,
            num_elbo_particles: 10,
            guide: GuideSettings::normal(),
            init: Init::default(),
            kernel: KernelSettings::default(),
            optimizer: OptimizerSettings::adagrad(0.05),
            loss_temperature: 1.0,
            repulsion_temperature: 1.0,
            attraction: AttractionNorm::Paper,
            gradient_reuse: GradientReuse::Shared,
            schedule: Schedule::Constant,
            batch_size: None,
            jacobian: true,
            on_non_finite: NonFinitePolicy::Skip,
            seed: 0,
        }
    }

    /// SVGD (docs/algorithms.md §4.1): Delta guide, one draw, α = 1, τ = 1 with paper normalisation
    /// (φ = (1/m)Σ[k∇log p + ∇k]), prior-median init of 15 draws, no log-Jacobian (NumPyro
    /// parity), Adagrad(0.05).
    pub fn svgd() -> Self {
        SteinSettings {
            num_elbo_particles: 1,
            guide: GuideSettings::Delta,
            init: Init::PriorMedian { draws: 15 },
            jacobian: false,
            ..SteinSettings::smi()
        }
    }

    /// ASVGD (docs/algorithms.md §4.2): SVGD with the attraction multiplied by the cyclical schedule over
    /// `total_steps` (C = 10, p = 10), i.e. γ(t)/m.
    pub fn asvgd(total_steps: u64) -> Self {
        SteinSettings {
            schedule: Schedule::cyclical(total_steps),
            ..SteinSettings::svgd()
        }
    }

    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] naming the field: zero particles or draws, a negative or
    /// non-finite temperature, a bad optimizer, kernel, guide, init or schedule, a zero batch
    /// size, `jacobian = false` with the Normal guide, or particle and draw counts whose
    /// products (the m×m kernel, the m·S draws of a step, times the batch size) would exceed
    /// the address space.
    pub fn validate(&self) -> Result<()> {
        if self.num_particles == 0 {
            return Err(Error::invalid(
                "num_particles",
                "needs at least one particle",
            ));
        }
        for (field, v) in [
            ("loss_temperature", self.loss_temperature),
            ("repulsion_temperature", self.repulsion_temperature),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::invalid(
                    field,
                    format!("must be finite and ≥ 0, got {v}"),
                ));
            }
        }
        crate::engine::validate_common(
            self.num_elbo_particles,
            self.batch_size,
            self.jacobian,
            &self.guide,
            &self.init,
            &self.optimizer,
        )?;
        let m = self.num_particles;
        crate::engine::buffer_len("num_particles", "the m×m kernel matrix", &[m, m])?;
        let (groups, what) = match self.gradient_reuse {
            GradientReuse::Shared => (1, "the m·S model draws of a step"),
            GradientReuse::PerPair => (m, "the m²·S model draws of a step (per-pair gradients)"),
        };
        crate::engine::buffer_len(
            "num_elbo_particles",
            what,
            &[groups, m, self.num_elbo_particles],
        )?;
        if let Some(b) = self.batch_size {
            crate::engine::buffer_len(
                "batch_size",
                "the mini-batch rows of a step",
                &[groups, m, self.num_elbo_particles, b],
            )?;
        }
        self.schedule.validate()?;
        self.kernel.build().map(|_| ())
    }
}
