//! `SteinSettings`: every option of the Stein engine, with presets for SMI, SVGD and ASVGD.

use serde::{Deserialize, Serialize};

use crate::engine::NonFinitePolicy;
use crate::error::{Error, Result};
use crate::guide::{GuideSettings, Init, Start};
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

/// A defect of a NumPyro version, reproduced on purpose to test whether it explains a published
/// result (docs/algorithms.md §2.8, §2.9, §2.11). Never a default, never needed for inference:
/// with either one the engine no longer follows the paper's mathematics. Both act on the
/// Normal guide's scale, so the Delta guide (SVGD, ASVGD) refuses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NumpyroDefect {
    /// NumPyro before #1883 (≤ 0.15; the paper's UCI, 1-D and variance runs): the attraction's
    /// gradient is taken with respect to the constrained scale σ = softplus(ρ) and applied to ρ
    /// without the chain rule, so ĝ's ρ entries are the correct ones times
    /// 1/sigmoid(ρ) = 1 + e^(−ρ) (docs/algorithms.md §2.11). Name: `no-chain-rule`.
    NoChainRule,
    /// NumPyro 0.16 to 0.22 (the paper's MNIST runs): the mixture denominator transforms the
    /// scale twice, so component j enters log q_mix with scale softplus(σ_j) instead of σ_j
    /// (docs/algorithms.md §2.9). Name: `double-transform`.
    DoubleTransform,
}

impl NumpyroDefect {
    /// The name on the command line and in records: `no-chain-rule` or `double-transform`.
    pub fn name(self) -> &'static str {
        match self {
            NumpyroDefect::NoChainRule => "no-chain-rule",
            NumpyroDefect::DoubleTransform => "double-transform",
        }
    }
}

impl std::str::FromStr for NumpyroDefect {
    type Err = Error;

    /// Parses `no-chain-rule` or `double-transform` (case-insensitive; `_` for `-` accepted).
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "no-chain-rule" => Ok(NumpyroDefect::NoChainRule),
            "double-transform" => Ok(NumpyroDefect::DoubleTransform),
            _ => Err(Error::invalid(
                "defect",
                format!("unknown NumPyro defect {s:?}; valid: no-chain-rule, double-transform"),
            )),
        }
    }
}

/// Settings of [`crate::SteinVi`]. Field names follow NumPyro.
///
/// Defaults ([`SteinSettings::smi`]): Normal guide (init scale 0.1), uniform init radius 2,
/// m = 5 particles, S = 10 ELBO draws, RBF kernel, Adam(0.1) with reduce-on-plateau (as
/// [`crate::SviSettings::ovi`], chosen by measurement: docs/defaults.md), τ = α = 1, paper
/// normalisation, shared gradients, constant schedule, full batch, log-Jacobian included,
/// non-finite steps skipped, seed 0, no shared (non-mixture) parameters, no reproduced defect,
/// one learning rate for every column.
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
    /// Where each particle starts from its drawn location ([`Start`]; default
    /// [`Start::Draw`], [`crate::Method::defaults_for`] gives SMI the Laplace start for small
    /// d). Omitted from the serialised settings when `Draw`, so records and checkpoint
    /// fingerprints without it are unchanged.
    #[serde(default, skip_serializing_if = "Start::is_draw")]
    pub start: Start,
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
    /// Include log|T′(u)| of constrained latents in the target (docs/algorithms.md §4.1): the
    /// proper density of the unconstrained parameters, p(T(u))·|T′(u)|. Must be `true` for the
    /// Normal guide, and is `true` in every preset.
    ///
    /// `false` targets p(T(u)) without the Jacobian, as NumPyro's SVGD does (AutoDelta adds no
    /// Jacobian; [`SteinSettings::svgd_numpyro_parity`]). For a constrained latent this is
    /// another density, often improper: on eight schools (τ > 0 by an exp transform) its mass
    /// runs off to log τ → −∞, and 19 of 20 SVGD particles end at τ < 1e-4.
    pub jacobian: bool,
    /// What to do with a non-finite step.
    pub on_non_finite: NonFinitePolicy,
    /// Seed of the state's RNG.
    pub seed: u64,
    /// Shared (non-mixture) parameters (docs/algorithms.md §2.7): names of blocks of the model's
    /// [`crate::Layout`] that are one point for all particles, moved by the plain gradient of
    /// the mixture ELBO instead of the Stein force (default: none). See
    /// [`SteinSettings::with_shared`]. Omitted from the serialised settings when empty, so
    /// records and checkpoint fingerprints of runs without shared parameters are unchanged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared: Vec<String>,
    /// A NumPyro defect to reproduce ([`NumpyroDefect`]; default `None`, the paper's
    /// mathematics). A diagnostic switch: never set it for inference. Omitted from the
    /// serialised settings when `None`, so records and checkpoint fingerprints without it are
    /// unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub defect: Option<NumpyroDefect>,
    /// A factor on the learning rate of the guide's scale columns ρ (columns d..2d of every
    /// particle; Normal, low-rank and full-rank guides): each step moves ρ by this factor
    /// times the optimizer's step, the locations and factors by the step itself. Default 1
    /// (one rate for every column, the paper's); another value is an ablation of the scale's
    /// learning rate. Omitted from the serialised settings when 1, so records and checkpoint
    /// fingerprints without it are unchanged.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub scale_lr_factor: f64,
}

fn one() -> f64 {
    1.0
}

fn is_one(v: &f64) -> bool {
    *v == 1.0
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
            start: Start::Draw,
            kernel: KernelSettings::default(),
            optimizer: crate::svi::default_optimizer(),
            loss_temperature: 1.0,
            repulsion_temperature: 1.0,
            attraction: AttractionNorm::Paper,
            gradient_reuse: GradientReuse::Shared,
            schedule: Schedule::Constant,
            batch_size: None,
            jacobian: true,
            on_non_finite: NonFinitePolicy::Skip,
            seed: 0,
            shared: Vec::new(),
            defect: None,
            scale_lr_factor: 1.0,
        }
    }

    /// SVGD (docs/algorithms.md §4.1): Delta guide, one draw, α = 1, τ = 1 with paper normalisation
    /// (φ = (1/m)Σ[k∇log p + ∇k]), prior-median init of 15 draws (Uniform(−2, 2) for a model
    /// that cannot sample its prior, see [`Init::PriorMedian`]), the SMI preset's optimizer
    /// (Adam(0.1) with reduce-on-plateau, docs/defaults.md), and the log-Jacobian included: the particles target the proper density of the unconstrained
    /// parameters. NumPyro's SVGD leaves the Jacobian out: [`SteinSettings::svgd_numpyro_parity`].
    pub fn svgd() -> Self {
        SteinSettings {
            num_elbo_particles: 1,
            guide: GuideSettings::Delta,
            init: Init::PriorMedian { draws: 15 },
            ..SteinSettings::smi()
        }
    }

    /// [`SteinSettings::svgd`] without the log-Jacobian (`jacobian = false`), as NumPyro's SVGD
    /// (and the paper's SVGD runs) do: the particles target p(T(u)), not the density of u.
    ///
    /// **Caveat.** For a constrained latent that target is another density and can be
    /// improper: on eight schools (τ = exp(u)) p(T(u)) is not integrable as u → −∞, and 19 of 20
    /// particles collapse to τ < 1e-4. Use it to reproduce NumPyro, not for inference. For a
    /// model without constrained latents both presets are the same.
    pub fn svgd_numpyro_parity() -> Self {
        SteinSettings {
            jacobian: false,
            ..SteinSettings::svgd()
        }
    }

    /// ASVGD (docs/algorithms.md §4.2): [`SteinSettings::svgd`] (log-Jacobian included) with the
    /// attraction multiplied by the cyclical schedule over `total_steps` (C = 10, p = 10), i.e.
    /// γ(t)/m.
    pub fn asvgd(total_steps: u64) -> Self {
        SteinSettings {
            schedule: Schedule::cyclical(total_steps),
            ..SteinSettings::svgd()
        }
    }

    /// [`SteinSettings::asvgd`] without the log-Jacobian, as NumPyro; the caveat of
    /// [`SteinSettings::svgd_numpyro_parity`] applies.
    pub fn asvgd_numpyro_parity(total_steps: u64) -> Self {
        SteinSettings {
            jacobian: false,
            ..SteinSettings::asvgd(total_steps)
        }
    }

    /// These settings with the model blocks named in `blocks` shared (non-mixture) parameters
    /// (docs/algorithms.md §2.7); an empty list restores the plain Stein method.
    ///
    /// A shared block is one point η for all particles. Write θ = (θ_T, θ_S) for the Stein
    /// (mixture) blocks and the shared ones; particle i's guide is q(θ_T | ψ_i)·δ_η(θ_S), so the
    /// mixture is q_mix(θ) = [(1/m) Σ_j q(θ_T | ψ_j)]·δ_η(θ_S). The point mass is common to all
    /// components, so as for SVGD's Delta guide its log density is a constant, and the mixture
    /// ELBO is, up to that constant,
    ///
    /// L(ψ, η) = (1/m) Σ_i E_ε[τ·log p(θ_T, η) − log q_mix^T(θ_T)],  θ_T = g(ε; ψ_i).
    ///
    /// The draws θ_T and q_mix^T do not depend on η, so
    ///
    /// ∇_η L = (τ/m) Σ_i E_ε[∇_{θ_S} log p(θ_T, θ_S)] at θ_S = η,
    ///
    /// estimated without bias by τ times the mean of the model's θ_S-gradient over all m·S draws
    /// of the step (every component weighted 1/m; NumPyro draws S component indices instead:
    /// the same expectation with more noise). The Stein blocks get the usual force with η held
    /// fixed (their ĝ_i is ∇_{ψ_i} of the same L, docs/algorithms.md §2.2), and the kernel sees
    /// only their columns. Both parts move in the same optimizer step, η by gradient ascent on
    /// L (the optimizer receives −∇_η L, as NumPyro's shared params). The step's loss, ‖φ‖_F of
    /// the whole direction ([`crate::SteinVi::force`]), counts ∇_η L once per particle row.
    ///
    /// Storage: η lives in the particle matrix, in the shared blocks' location columns, equal
    /// in every row (each row receives the same gradient, and the optimizers act element by
    /// element, so the rows stay bit-identical); it starts at particle 0's initial value (as
    /// NumPyro's). With the Normal guide the shared blocks' ρ columns hold
    /// [`SteinSettings::SHARED_RHO`] and never move, so σ = softplus(ρ) = 0 exactly: the
    /// [`crate::Mixture`] of the final state, its draws, mean and variance, has the shared
    /// columns at η with no spread. The state is therefore an ordinary state (checkpoints
    /// resume it), and the names enter the engine's fingerprint.
    ///
    /// [`crate::SteinVi::new`] checks the names against the model's layout: an unknown name, a
    /// repeated one, or every block shared is [`crate::Error::InvalidSettings`] (field
    /// `shared`).
    pub fn with_shared<I, S>(mut self, blocks: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.shared = blocks.into_iter().map(Into::into).collect();
        self
    }

    /// The ρ stored in a Normal guide's scale columns of shared blocks: softplus(−1000) = 0
    /// exactly in f64 (e^−1000 underflows), so those columns are points; finite, so checkpoints
    /// hold it.
    pub const SHARED_RHO: f64 = -1000.0;

    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] naming the field: zero particles or draws, a negative or
    /// non-finite temperature, a bad optimizer, kernel, guide, init or schedule, a zero batch
    /// size, `jacobian = false` with the Normal guide, a block named twice in `shared`, a
    /// `defect` with a guide other than Normal, or
    /// particle and draw counts whose
    /// products (the m×m kernel, the m·S draws of a step, times the batch size) would exceed
    /// the address space.
    pub fn validate(&self) -> Result<()> {
        if self.num_particles == 0 {
            return Err(Error::invalid(
                "num_particles",
                "needs at least one particle",
            ));
        }
        if !(self.scale_lr_factor.is_finite() && self.scale_lr_factor > 0.0) {
            return Err(Error::invalid(
                "scale_lr_factor",
                format!("must be finite and > 0, got {}", self.scale_lr_factor),
            ));
        }
        if self.scale_lr_factor != 1.0 && self.guide == GuideSettings::Delta {
            return Err(Error::invalid(
                "scale_lr_factor",
                "the Delta guide has no scale columns; leave it at 1",
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
            &self.start,
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
        if let Some(defect) = self.defect {
            if !matches!(self.guide, GuideSettings::Normal { .. }) {
                return Err(Error::invalid(
                    "defect",
                    format!(
                        "{} acts on the Normal guide's scale; this guide has none",
                        defect.name()
                    ),
                ));
            }
        }
        for (i, name) in self.shared.iter().enumerate() {
            if self.shared[..i].contains(name) {
                return Err(Error::invalid(
                    "shared",
                    format!("block {name:?} is named twice"),
                ));
            }
        }
        self.kernel.build().map(|_| ())
    }
}
