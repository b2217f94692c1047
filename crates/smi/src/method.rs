//! The method layer: a method name, its preset settings, the engine they build, and one entry
//! point ([`fit`]) that fits any [`LogDensity`] by any method and returns one result type.
//!
//! Every front end (the `smi` command's experiments, `smi fit`, `smi bench`, the Python package)
//! goes through this module; no other code turns a method name into an engine.
//!
//! ```
//! use smi::{fit, testing::DiagNormal, Method, NoObserver, OptimizerSettings, RunSettings};
//!
//! let target = DiagNormal::standard(3)?;
//! let settings = Method::Ovi
//!     .preset(3000)
//!     .with_elbo_draws(50)
//!     .with_optimizer(OptimizerSettings::adam(0.01))
//!     .with_seed(1);
//! let result = fit(&target, &settings, &RunSettings::steps(3000), &mut NoObserver)?;
//! // Mean-field VI on a Gaussian target is exact: mean 0, variance 1.
//! let (mean, var) = (result.posterior.mean(), result.posterior.variance());
//! assert!(mean.iter().all(|m| m.abs() < 0.1), "{mean:?}");
//! assert!(var.iter().all(|v| (v - 1.0).abs() < 0.15), "{var:?}");
//! # Ok::<(), smi::Error>(())
//! ```

use crate::precondition::{Affine, Whitened};
use crate::Start;
use std::fmt;
use std::str::FromStr;
use std::time::Instant;

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::engine::{run, ElboEstimate, Engine, Observer, RunSettings, State, Termination};
use crate::error::{Error, Result};
use crate::guide::{GuideSettings, Init};
use crate::matrix::Matrix;
use crate::model::{Layout, LogDensity};
use crate::nuts::{Nuts, NutsResult, NutsSettings};
use crate::optim::{OptimizerSettings, Schedule};
use crate::posterior::Posterior;
use crate::quality::{diagnose, FitQuality};
use crate::stein::{SteinSettings, SteinVi};
use crate::summary::Summary;
use crate::svi::{Svi, SviSettings};

/// The paper's learning-rate grid (docs/algorithms.md §7.3), largest first.
pub const LR_GRID: [f64; 6] = [5e-1, 5e-2, 5e-3, 5e-4, 5e-5, 5e-6];

/// An inference method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Stein mixture inference: m Normal guides moved by the nonlinear-SVGD update.
    Smi,
    /// Stein variational gradient descent: m point masses.
    Svgd,
    /// Annealed SVGD: SVGD with a cyclical attraction schedule.
    Asvgd,
    /// Mean-field variational inference (one Normal guide).
    Ovi,
    /// Maximum a posteriori (one point mass).
    Map,
    /// The No-U-Turn sampler (the reference).
    Nuts,
}

impl Method {
    /// Every method, in the UCI table's column order.
    pub const ALL: [Method; 6] = [
        Method::Smi,
        Method::Svgd,
        Method::Asvgd,
        Method::Ovi,
        Method::Map,
        Method::Nuts,
    ];

    /// The variational methods (all but NUTS).
    pub const VARIATIONAL: [Method; 5] = [
        Method::Smi,
        Method::Svgd,
        Method::Asvgd,
        Method::Ovi,
        Method::Map,
    ];

    /// Lower-case name, as on the command line and in records.
    pub fn name(self) -> &'static str {
        match self {
            Method::Smi => "smi",
            Method::Svgd => "svgd",
            Method::Asvgd => "asvgd",
            Method::Ovi => "ovi",
            Method::Map => "map",
            Method::Nuts => "nuts",
        }
    }

    /// Label in tables and figures (upper case).
    pub fn label(self) -> &'static str {
        match self {
            Method::Smi => "SMI",
            Method::Svgd => "SVGD",
            Method::Asvgd => "ASVGD",
            Method::Ovi => "OVI",
            Method::Map => "MAP",
            Method::Nuts => "NUTS",
        }
    }

    /// Whether the method is a Stein method (SMI, SVGD, ASVGD: m particles and a kernel).
    pub fn is_stein(self) -> bool {
        matches!(self, Method::Smi | Method::Svgd | Method::Asvgd)
    }

    /// Whether the method's guide is a point mass (SVGD, ASVGD, MAP).
    pub fn is_point_mass(self) -> bool {
        matches!(self, Method::Svgd | Method::Asvgd | Method::Map)
    }

    /// Parses a list of names, each item possibly itself comma-separated (`["smi,svgd",
    /// "map"]`); duplicates are dropped, order is kept.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] (field `method`) for an unknown name or an empty list, listing
    /// the valid names.
    pub fn parse_list<S: AsRef<str>>(items: &[S]) -> Result<Vec<Method>> {
        let mut out = Vec::new();
        for item in items.iter().flat_map(|s| s.as_ref().split(',')) {
            let m: Method = item.parse()?;
            if !out.contains(&m) {
                out.push(m);
            }
        }
        if out.is_empty() {
            return Err(Error::invalid(
                "method",
                format!("no method given; valid methods: {}", valid_names()),
            ));
        }
        Ok(out)
    }

    /// The method's preset settings (docs/algorithms.md §2, §4, §5). The variational presets'
    /// optimizer (and OVI's S = 10) were chosen by measurement so that a run under
    /// [`crate::RunSettings::until_converged`] reaches the method's fixed point without tuning
    /// (docs/defaults.md); the paper's experiments set their own optimizers.
    /// `total_steps` is the planned step count, which only ASVGD's cyclical schedule uses.
    ///
    /// | method | preset |
    /// |---|---|
    /// | smi | [`SteinSettings::smi`]: m = 5, S = 10, RBF, Adam(0.1) with reduce-on-plateau, Normal guides |
    /// | svgd | [`SteinSettings::svgd`]: m = 5 point masses on the proper density (log-Jacobian on; NumPyro's target: [`SteinSettings::svgd_numpyro_parity`]) |
    /// | asvgd | [`SteinSettings::asvgd`]`(total_steps)`, likewise |
    /// | ovi | [`SviSettings::ovi`]: one Normal guide, Adam(0.1) with reduce-on-plateau, S = 10 |
    /// | map | [`SviSettings::map`]: one point mass, Adam(0.1) with reduce-on-plateau |
    /// | nuts | [`NutsSettings::default`] |
    pub fn preset(self, total_steps: u64) -> MethodSettings {
        match self {
            Method::Smi => MethodSettings::Stein(SteinSettings::smi()),
            Method::Svgd => MethodSettings::Stein(SteinSettings::svgd()),
            Method::Asvgd => MethodSettings::Stein(SteinSettings::asvgd(total_steps)),
            Method::Ovi => MethodSettings::Svi(SviSettings::ovi()),
            Method::Map => MethodSettings::Svi(SviSettings::map()),
            Method::Nuts => MethodSettings::Nuts(NutsSettings::default()),
        }
    }

    /// The library's defaults for a model of dimension `dim`: [`Method::preset`], and for SMI
    /// with d ≤ [`Method::FULL_RANK_MAX_DIM`] the full-rank guide
    /// ([`crate::GuideSettings::FullRank`]) with α = [`Method::FULL_RANK_REPULSION`]. Chosen
    /// on the validation set and on N(0, I_d) (docs/defaults.md, "The guide and α of SMI"):
    /// the mean-field guide cannot hold a correlation, and with guides that can, α = 1 spreads
    /// the particles to a variance 1.5 times the target's. Above the cap a full covariance
    /// costs d² per draw and component, and SMI keeps the preset (mean-field, α = 1: within
    /// 10 % of the variance at d = 100, docs/defaults.md). With the full-rank guide each
    /// particle also starts from the Laplace approximation at the mode its draw climbs to
    /// ([`crate::Start::Laplace`]; docs/defaults.md, "The start of SMI"), and Adam carries the
    /// spike guard c = [`Method::SPIKE_GUARD`] ([`crate::OptimizerSettings::with_spike_guard`]).
    /// What `smi.fit` and `smi.numpyro.fit` use.
    pub fn defaults_for(self, total_steps: u64, dim: usize) -> MethodSettings {
        let mut settings = self.preset(total_steps);
        if let MethodSettings::Stein(s) = &mut settings {
            if self == Method::Smi && dim <= Method::FULL_RANK_MAX_DIM {
                s.guide = crate::GuideSettings::full_rank();
                s.repulsion_temperature = Method::default_repulsion(s.guide);
                s.start = crate::Start::laplace();
                s.num_particles = Method::FULL_RANK_PARTICLES;
                s.optimizer = s.optimizer.with_spike_guard(Method::SPIKE_GUARD);
            }
        }
        settings
    }

    /// SMI's default α for particles of `guide`: [`Method::FULL_RANK_REPULSION`] for the
    /// low-rank and full-rank guides, 1 (the paper's) for the mean-field one.
    pub fn default_repulsion(guide: crate::GuideSettings) -> f64 {
        match guide {
            crate::GuideSettings::LowRank { .. } | crate::GuideSettings::FullRank { .. } => {
                Method::FULL_RANK_REPULSION
            }
            _ => 1.0,
        }
    }

    /// c, Adam's spike guard where [`Method::defaults_for`] gives SMI full-rank guides: each
    /// coordinate's gradient clipped to ±10 times its running RMS. On the validation set c = 10
    /// keeps every posterior the unguarded defaults fit right, where c = 5 put diamonds 48 sd
    /// off, and it fits eight schools in PyMC's parameter order (0.04–0.14 sd over seeds 0–3,
    /// against 0.2–6.3 unguarded); docs/defaults.md, "Gradient spikes".
    pub const SPIKE_GUARD: f64 = 10.0;

    /// The largest d for which [`Method::defaults_for`] gives SMI the full-rank guide.
    pub const FULL_RANK_MAX_DIM: usize = 50;

    /// m, SMI's particles where [`Method::defaults_for`] gives it full-rank guides (the
    /// preset's 5 elsewhere): on the validation set's latent GP (gp_pois_regr) five leave the
    /// heavy-tailed marginal sd 0.14–0.16 posterior sd low over seeds 0–2, ten 0.11
    /// (docs/defaults.md, "The start of SMI").
    pub const FULL_RANK_PARTICLES: usize = 10;

    /// α of SMI with a structured guide ([`Method::defaults_for`],
    /// [`Method::default_repulsion`]).
    pub const FULL_RANK_REPULSION: f64 = 0.1;
}

fn valid_names() -> String {
    Method::ALL.map(Method::name).join(", ")
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = Error;

    /// Parses a name, case-insensitively, ignoring surrounding white space.
    fn from_str(s: &str) -> Result<Self> {
        let l = s.trim().to_ascii_lowercase();
        Method::ALL
            .into_iter()
            .find(|m| m.name() == l)
            .ok_or_else(|| {
                Error::invalid(
                    "method",
                    format!(
                        "unknown method {:?}; valid methods: {}",
                        s.trim(),
                        valid_names()
                    ),
                )
            })
    }
}

/// The settings of one method: one settings type per engine family.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "family", rename_all = "snake_case")]
pub enum MethodSettings {
    /// SMI, SVGD, ASVGD ([`SteinVi`]).
    Stein(SteinSettings),
    /// OVI, MAP ([`Svi`]).
    Svi(SviSettings),
    /// NUTS ([`Nuts`]).
    Nuts(NutsSettings),
}

impl MethodSettings {
    /// Which method these settings run: a Stein engine with point masses is SVGD, or ASVGD
    /// under a cyclical schedule; an SVI engine with a point mass is MAP.
    pub fn method(&self) -> Method {
        match self {
            MethodSettings::Stein(s) => match (s.guide, s.schedule) {
                (GuideSettings::Delta, Schedule::Cyclical { .. }) => Method::Asvgd,
                (GuideSettings::Delta, _) => Method::Svgd,
                _ => Method::Smi,
            },
            MethodSettings::Svi(s) => match s.guide {
                GuideSettings::Delta => Method::Map,
                _ => Method::Ovi,
            },
            MethodSettings::Nuts(_) => Method::Nuts,
        }
    }

    /// The seed of every random choice of the fit.
    pub fn with_seed(mut self, seed: u64) -> Self {
        match &mut self {
            MethodSettings::Stein(s) => s.seed = seed,
            MethodSettings::Svi(s) => s.seed = seed,
            MethodSettings::Nuts(s) => s.seed = seed,
        }
        self
    }

    /// The seed of every random choice of the fit.
    pub fn seed(&self) -> u64 {
        match self {
            MethodSettings::Stein(s) => s.seed,
            MethodSettings::Svi(s) => s.seed,
            MethodSettings::Nuts(s) => s.seed,
        }
    }

    /// The optimizer of a variational method; NUTS has none and is left unchanged.
    pub fn with_optimizer(mut self, optimizer: OptimizerSettings) -> Self {
        match &mut self {
            MethodSettings::Stein(s) => s.optimizer = optimizer,
            MethodSettings::Svi(s) => s.optimizer = optimizer,
            MethodSettings::Nuts(_) => {}
        }
        self
    }

    /// The mini-batch size of a variational method (`None`: full data); NUTS always uses the
    /// full data and is left unchanged.
    pub fn with_batch_size(mut self, batch_size: Option<usize>) -> Self {
        match &mut self {
            MethodSettings::Stein(s) => s.batch_size = batch_size,
            MethodSettings::Svi(s) => s.batch_size = batch_size,
            MethodSettings::Nuts(_) => {}
        }
        self
    }

    /// How a variational method's particles start; for NUTS, a uniform init sets its radius
    /// and a prior-median init is ignored.
    pub fn with_init(mut self, init: Init) -> Self {
        match &mut self {
            MethodSettings::Stein(s) => s.init = init,
            MethodSettings::Svi(s) => s.init = init,
            MethodSettings::Nuts(s) => {
                if let Init::Uniform { radius } = init {
                    s.init_radius = radius;
                }
            }
        }
        self
    }

    /// m, the particles of a Stein method; the other methods have one guide (or chains of
    /// draws) and are left unchanged.
    pub fn with_particles(mut self, num_particles: usize) -> Self {
        if let MethodSettings::Stein(s) = &mut self {
            s.num_particles = num_particles;
        }
        self
    }

    /// The guide family of SMI's particles or OVI's one guide (`guide` must be a Normal of
    /// either kind, [`GuideSettings::is_normal`]); the point-mass methods and NUTS are left
    /// unchanged, and so is every method when `guide` is [`GuideSettings::Delta`] (use SVGD or
    /// MAP for point masses).
    pub fn with_guide(mut self, guide: GuideSettings) -> Self {
        if guide.is_normal() {
            match &mut self {
                MethodSettings::Stein(s) if s.guide.is_normal() => s.guide = guide,
                MethodSettings::Svi(s) if s.guide.is_normal() => s.guide = guide,
                _ => {}
            }
        }
        self
    }

    /// S, the ELBO draws per particle of SMI and OVI; the point-mass methods and NUTS draw
    /// nothing and are left unchanged.
    pub fn with_elbo_draws(mut self, num_elbo_particles: usize) -> Self {
        match &mut self {
            MethodSettings::Stein(s) if s.guide != GuideSettings::Delta => {
                s.num_elbo_particles = num_elbo_particles;
            }
            MethodSettings::Svi(s) if s.guide != GuideSettings::Delta => {
                s.num_elbo_particles = num_elbo_particles;
            }
            _ => {}
        }
        self
    }

    /// The model blocks (by [`Layout`] name) that a Stein method keeps as shared
    /// (non-mixture) parameters: one point for all particles, moved by the plain gradient of
    /// the mixture ELBO ([`SteinSettings::with_shared`], which derives it). The other methods
    /// have no particles to share between and are left unchanged. The names are checked
    /// against the model when the engine is built.
    pub fn with_shared<I, S>(self, blocks: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        match self {
            MethodSettings::Stein(s) => MethodSettings::Stein(s.with_shared(blocks)),
            other => other,
        }
    }

    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        match self {
            MethodSettings::Stein(s) => s.validate(),
            MethodSettings::Svi(s) => s.validate(),
            MethodSettings::Nuts(s) => s.validate(),
        }
    }

    /// The settings as JSON, for records.
    pub fn to_json(&self) -> serde_json::Value {
        let value = match self {
            MethodSettings::Stein(s) => serde_json::to_value(s),
            MethodSettings::Svi(s) => serde_json::to_value(s),
            MethodSettings::Nuts(s) => serde_json::to_value(s),
        };
        value.unwrap_or(serde_json::Value::Null)
    }

    /// Builds the engine of a variational method on `model`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] for NUTS (a sampler, run by [`fit`]); the engine's own checks
    /// ([`Error::InvalidSettings`]).
    pub fn build<'a, M: LogDensity + ?Sized>(&self, model: &'a M) -> Result<Box<dyn Engine + 'a>> {
        match self {
            MethodSettings::Stein(s) => Ok(Box::new(SteinVi::new(model, s.clone())?)),
            MethodSettings::Svi(s) => Ok(Box::new(Svi::new(model, s.clone())?)),
            MethodSettings::Nuts(_) => Err(Error::Unsupported(
                "NUTS is a sampler, not a step engine: run it with smi::fit".into(),
            )),
        }
    }

    /// Builds the concrete Stein engine (for what only it offers, such as
    /// [`SteinVi::force`]).
    ///
    /// # Errors
    /// [`Error::Unsupported`] for settings of another family; the engine's own checks.
    pub fn build_stein<'a, M: LogDensity + ?Sized>(&self, model: &'a M) -> Result<SteinVi<'a, M>> {
        match self {
            MethodSettings::Stein(s) => SteinVi::new(model, s.clone()),
            _ => Err(Error::Unsupported(format!(
                "{} is not a Stein method",
                self.method()
            ))),
        }
    }
}

/// What [`fit`] returns.
#[derive(Clone, Debug)]
pub struct Fit {
    /// The method that ran.
    pub method: Method,
    /// The result: a mixture of guides or NUTS's draws.
    pub posterior: Posterior,
    /// The final engine state of a variational method (a checkpoint), `None` for NUTS.
    pub state: Option<State>,
    /// Steps taken (NUTS: warm-up + draws of one chain).
    pub steps: u64,
    /// Steps skipped for a non-finite value (NUTS: divergent transitions after warm-up).
    pub skipped_steps: u64,
    /// Seconds spent fitting.
    pub seconds: f64,
    /// Why the run ended (NUTS: [`Termination::MaxSteps`]): the cap, early stopping, the
    /// convergence rule of [`RunSettings::convergence`], or a failed verdict on the ELBO
    /// estimates ([`Termination::Diverged`], [`Termination::Unstable`]; docs/convergence.md).
    pub termination: Termination,
    /// Why, in words, for [`Termination::Diverged`] and [`Termination::Unstable`].
    pub termination_reason: Option<String>,
    /// The run's ELBO at the end with its Monte Carlo standard error (the mean of the last
    /// ≤ 500 finite step estimates; `None` for NUTS or when none was finite).
    pub elbo: Option<ElboEstimate>,
    /// The fit-quality diagnostic k̂ of the final approximation ([`crate::quality`]), computed
    /// by [`fit`] for every variational method unless [`RunSettings::quality_draws`] is 0;
    /// `None` for NUTS (judge it by R̂, ESS and divergences) and when not computed.
    pub quality: Option<FitQuality>,
    /// The loss of every step: ‖φ‖ for Stein methods, −ELBO for OVI and MAP, −log p of every
    /// draw for NUTS.
    pub losses: Vec<f64>,
    /// The ELBO estimate of every step, beside `losses` (the mixture ELBO for Stein methods,
    /// NaN for a skipped step; empty for NUTS).
    pub elbos: Vec<f64>,
    /// NUTS's chains and diagnostics (its draws are also the posterior's), `None` otherwise.
    pub nuts: Option<NutsResult>,
    /// The model's [`LogDensity::layout`]: names and constraints of θ's blocks, for
    /// [`Fit::draws`], [`Fit::names`] and [`Fit::summary`].
    pub layout: Layout,
}

impl Fit {
    /// The loss of the last step, if any.
    pub fn final_loss(&self) -> Option<f64> {
        self.losses.last().copied()
    }

    /// Whether the early-stopping rule ended the run.
    pub fn early_stopped(&self) -> bool {
        self.termination == Termination::EarlyStopped
    }

    /// Whether the fit can be trusted by its own diagnostics: its run did not diverge or turn
    /// unstable, k̂ (where defined) is within its threshold, and NUTS's R̂ are below 1.01
    /// without divergences.
    pub fn trusted(&self) -> bool {
        self.warnings().is_empty()
    }

    /// What is wrong with the fit, in plain words, one item per problem (empty when nothing
    /// is): a diverged or unstable run, a k̂ above its threshold, a run that hit its step cap
    /// before the convergence rule could fire, skipped steps, and for NUTS divergences and
    /// R̂ > 1.01.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.termination.is_failure() {
            let what = match self.termination {
                Termination::Diverged => "the fit diverged",
                _ => "the fit is unstable",
            };
            out.push(format!(
                "{what}: {}",
                self.termination_reason
                    .as_deref()
                    .unwrap_or("no reason recorded")
            ));
        }
        if let Some(w) = self.quality.as_ref().and_then(FitQuality::warning) {
            out.push(w);
        }
        if self.skipped_steps > 0 && self.nuts.is_none() {
            out.push(format!(
                "{} of {} steps were skipped for a non-finite log density or gradient",
                self.skipped_steps, self.steps
            ));
        }
        if let Some(n) = &self.nuts {
            if n.divergences > 0 {
                out.push(format!(
                    "{} divergent transitions after warm-up: the sampler may miss part of the                      posterior (reparameterise, or raise target_accept)",
                    n.divergences
                ));
            }
        }
        out
    }

    /// The lines a summary prints under its table: the termination (with the reason), the
    /// ELBO ± its Monte Carlo standard error, k̂ (or what stands in for it) and every
    /// [`Fit::warnings`] item as `WARNING: …`.
    pub fn report(&self) -> Vec<String> {
        let mut out = vec![format!(
            "{}: {} after {} steps in {:.1} s",
            self.method, self.termination, self.steps, self.seconds
        )];
        if let Some(e) = &self.elbo {
            out.push(format!(
                "ELBO (last {} steps): {:.6e} ± {:.2e} (Monte Carlo se)",
                e.count, e.mean, e.mcse
            ));
        }
        if let Some(q) = &self.quality {
            out.push(q.note());
            if let Some(e) = &q.elbo {
                out.push(format!(
                    "ELBO of the final approximation ({} draws): {:.6e} ± {:.2e}",
                    e.count, e.mean, e.mcse
                ));
            }
        }
        out.extend(self.warnings().into_iter().map(|w| format!("WARNING: {w}")));
        out
    }

    /// `n` PSIS-reweighted posterior draws in the constrained space (columns [`Fit::names`]):
    /// the diagnostic's draws resampled by their Pareto-smoothed weights
    /// ([`FitQuality::resample`]), seeded by `seed`.
    ///
    /// # Errors
    /// [`Error::Unsupported`] when the fit has no diagnostic (NUTS, point masses, or
    /// [`RunSettings::quality_draws`] = 0); as [`FitQuality::resample`].
    pub fn reweighted_draws(&self, n: usize, seed: u64) -> Result<Matrix> {
        let q = self.quality.as_ref().ok_or_else(|| {
            Error::Unsupported(format!(
                "{} has no fit-quality diagnostic to reweight by",
                self.method
            ))
        })?;
        let mut rng = <ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
        self.layout.constrain_draws(&q.resample(n, &mut rng)?)
    }

    /// The names of the constrained parameters, the columns of [`Fit::draws`] (Stan's form:
    /// `"mu"`, `"theta[1]"`, …; [`Layout::constrained_names`]).
    pub fn names(&self) -> Vec<String> {
        self.layout.constrained_names()
    }

    /// Posterior draws in the constrained space, one per row, columns [`Fit::names`]: `n`
    /// draws from a variational posterior (seeded by `seed`), or every draw of every NUTS
    /// chain (`n` and `seed` unused). [`Summary::DEFAULT_DRAWS`] = 4000 is a good `n`.
    ///
    /// # Errors
    /// As [`Posterior::constrained_draws`].
    pub fn draws(&self, n: usize, seed: u64) -> Result<Matrix> {
        let mut rng = <ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
        self.posterior.constrained_draws(&self.layout, n, &mut rng)
    }

    /// The posterior summary in the constrained space by name: for NUTS over its chains with
    /// bulk/tail ESS and R̂ ([`Summary::from_nuts`]; `n_draws` and `seed` unused), for a
    /// variational method of `n_draws` draws (default choice [`Summary::DEFAULT_DRAWS`] =
    /// 4000) without ESS and R̂. Print it with `{}`.
    ///
    /// # Errors
    /// As [`Fit::draws`].
    pub fn summary(&self, n_draws: usize, seed: u64) -> Result<Summary> {
        let table = match &self.nuts {
            Some(nuts) => Summary::from_nuts(nuts, &self.layout),
            None => Summary::from_draws(&self.names(), &self.draws(n_draws, seed)?),
        }?;
        Ok(table.with_notes(self.report()))
    }

    /// The summary of `n_draws` PSIS-reweighted draws ([`Fit::reweighted_draws`]), with the
    /// same notes as [`Fit::summary`].
    ///
    /// # Errors
    /// As [`Fit::reweighted_draws`].
    pub fn reweighted_summary(&self, n_draws: usize, seed: u64) -> Result<Summary> {
        let mut notes = self.report();
        notes.push("draws reweighted by Pareto-smoothed importance sampling".into());
        Ok(
            Summary::from_draws(&self.names(), &self.reweighted_draws(n_draws, seed)?)?
                .with_notes(notes),
        )
    }
}

/// Fits `model` by the method of `settings`: builds the engine, runs it under `run_settings`
/// (step budget, early stopping, checkpoints) reporting to `observer`, and returns the
/// posterior. NUTS ignores `run_settings` (its budget is in [`NutsSettings`]).
///
/// # Errors
/// Invalid settings, the engine's or the model's errors.
pub fn fit<M: LogDensity + ?Sized>(
    model: &M,
    settings: &MethodSettings,
    run_settings: &RunSettings,
    observer: &mut dyn Observer,
) -> Result<Fit> {
    let method = settings.method();
    if let MethodSettings::Nuts(s) = settings {
        let t = Instant::now();
        let res = Nuts::new(s.clone()).sample(&AsDyn(model), observer)?;
        return Ok(Fit {
            method,
            posterior: Posterior::Draws(res.draws.clone()),
            state: None,
            steps: (s.num_warmup + s.num_draws) as u64,
            skipped_steps: res.divergences as u64,
            seconds: t.elapsed().as_secs_f64(),
            termination: Termination::MaxSteps,
            termination_reason: None,
            elbo: None,
            quality: None,
            losses: res.log_density.iter().map(|v| -v).collect(),
            elbos: Vec::new(),
            nuts: Some(res),
            layout: model.layout(),
        });
    }
    let engine = settings.build(model)?;
    let started = engine.init()?;
    let (res, mixture) = match whitening(settings, model, &started) {
        Some((guide, map)) => {
            // The engine runs on x, θ = c + A x (crate::precondition); its particles come
            // back to θ for the posterior and the state.
            let white = Whitened { model, map: &map };
            let mut white_settings = settings.clone();
            match &mut white_settings {
                MethodSettings::Stein(s) => s.start = Start::Draw,
                MethodSettings::Svi(s) => s.start = Start::Draw,
                MethodSettings::Nuts(_) => {}
            }
            let white_engine = white_settings.build(&white)?;
            let mut state = white_engine.init()?;
            state.particles = map.whiten(&guide, &started.particles);
            let mut res = run(white_engine.as_ref(), state, run_settings, observer)?;
            res.state.particles = map.unwhiten(&guide, &res.state.particles);
            let mixture = engine.posterior(&res.state);
            (res, mixture)
        }
        None => {
            let res = run(engine.as_ref(), started, run_settings, observer)?;
            let mixture = engine.posterior(&res.state);
            (res, mixture)
        }
    };
    let quality = diagnose(model, &mixture, run_settings.quality_draws, settings.seed())?;
    Ok(Fit {
        method,
        posterior: Posterior::Mixture(mixture),
        steps: res.state.step,
        skipped_steps: res.state.skipped_steps,
        seconds: res.seconds,
        termination: res.termination,
        termination_reason: res.reason,
        elbo: res.elbo,
        quality,
        losses: res.losses,
        elbos: res.elbos,
        state: Some(res.state),
        nuts: None,
        layout: model.layout(),
    })
}

/// The guide and the map θ = c + A x of a fit that starts from the Laplace approximation
/// ([`Start::Laplace`]) and so runs whitened (docs/algorithms.md §2.5): its mixture's mean and
/// covariance root at the start. `None` (the engine runs on θ) for other starts, point masses,
/// shared parameters, a reproduced NumPyro defect, or a start whose covariance is not positive
/// definite.
fn whitening<M: LogDensity + ?Sized>(
    settings: &MethodSettings,
    model: &M,
    started: &crate::State,
) -> Option<(GuideSettings, Affine)> {
    let guide = match settings {
        MethodSettings::Stein(s)
            if matches!(s.start, Start::Laplace { .. })
                && s.shared.is_empty()
                && s.defect.is_none() =>
        {
            s.guide
        }
        MethodSettings::Svi(s) if matches!(s.start, Start::Laplace { .. }) => s.guide,
        _ => return None,
    };
    Affine::of_mixture(&guide, &started.particles, model.dim()).map(|map| (guide, map))
}

/// A `?Sized` model seen as a `&dyn LogDensity` (what the NUTS adapter takes).
struct AsDyn<'a, M: ?Sized>(&'a M);

impl<M: LogDensity + ?Sized> LogDensity for AsDyn<'_, M> {
    fn dim(&self) -> usize {
        self.0.dim()
    }
    fn num_data(&self) -> usize {
        self.0.num_data()
    }
    fn log_density_and_grad(
        &self,
        theta: &[f64],
        batch: &crate::model::Batch,
        logp: &mut [f64],
        grad: &mut [f64],
    ) -> Result<()> {
        self.0.log_density_and_grad(theta, batch, logp, grad)
    }
    fn one_call_per_step(&self) -> bool {
        self.0.one_call_per_step()
    }
    fn layout(&self) -> crate::model::Layout {
        self.0.layout()
    }
    fn sample_prior(&self, rng: &mut dyn rand::RngCore, out: &mut [f64]) -> Result<()> {
        self.0.sample_prior(rng, out)
    }
}

/// The learning rate of `grid` with the lowest `score` (the first on ties). A score that is an
/// error or not finite counts as +∞ (a diverged run is the worst rate, not a failure), and
/// `on_error` hears of it. Returns the rate and its score.
///
/// # Errors
/// [`Error::InvalidSettings`] for an empty grid.
pub fn best_lr<E>(
    grid: &[f64],
    mut score: impl FnMut(f64) -> std::result::Result<f64, E>,
    mut on_error: impl FnMut(f64, &E),
) -> Result<(f64, f64)> {
    let mut best: Option<(f64, f64)> = None;
    for &lr in grid {
        let v = match score(lr) {
            Ok(v) if v.is_finite() => v,
            Ok(_) => f64::INFINITY,
            Err(e) => {
                on_error(lr, &e);
                f64::INFINITY
            }
        };
        if best.is_none_or(|(_, b)| v < b) {
            best = Some((lr, v));
        }
    }
    best.ok_or_else(|| Error::invalid("lr_grid", "the learning-rate grid is empty"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::DiagNormal;
    use crate::NoObserver;

    #[test]
    fn best_lr_skips_failures() {
        let mut errors = 0;
        let (lr, v) = best_lr(
            &LR_GRID,
            |lr| {
                if lr > 1e-1 {
                    Err("diverged")
                } else if lr < 1e-4 {
                    Ok(f64::NAN)
                } else {
                    Ok((lr.log10() + 2.5).abs())
                }
            },
            |_, _| errors += 1,
        )
        .unwrap();
        assert_eq!(lr, 5e-3);
        assert!(v < 0.2);
        assert_eq!(errors, 1);
        assert!(best_lr::<()>(&[], |_| Ok(1.0), |_, _| {}).is_err());
    }

    #[test]
    fn names_parse_and_round_trip() {
        for m in Method::ALL {
            assert_eq!(m.name().parse::<Method>().unwrap(), m);
            assert_eq!(m.label().parse::<Method>().unwrap(), m);
            assert_eq!(m.preset(100).method(), m, "{m}");
        }
        let e = "x".parse::<Method>().unwrap_err().to_string();
        assert!(e.contains("valid methods: smi, svgd"), "{e}");
        assert_eq!(
            Method::parse_list(&["smi,SVGD", " map", "smi"]).unwrap(),
            vec![Method::Smi, Method::Svgd, Method::Map]
        );
        assert!(Method::parse_list::<&str>(&[]).is_err());
        assert!(Method::parse_list(&[","]).is_err());
    }

    #[test]
    fn builders_touch_only_their_family() {
        let s = Method::Map.preset(10).with_particles(7).with_elbo_draws(9);
        assert_eq!(s, Method::Map.preset(10));
        let s = Method::Smi.preset(10).with_particles(7).with_elbo_draws(9);
        match s {
            MethodSettings::Stein(s) => assert_eq!((s.num_particles, s.num_elbo_particles), (7, 9)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            Method::Nuts
                .preset(1)
                .build(&DiagNormal::standard(1).unwrap()),
            Err(Error::Unsupported(_))
        ));
    }

    #[test]
    fn a_fit_that_never_saw_a_finite_density_says_so_everywhere() {
        let never = crate::FnDensity::new(2, |_x: &[f64], g: &mut [f64]| {
            g.fill(0.0);
            f64::NAN
        });
        let f = fit(
            &never,
            &Method::Smi.preset(200),
            &RunSettings::steps(200),
            &mut NoObserver,
        )
        .unwrap();
        assert_eq!(f.termination, Termination::Diverged);
        assert!(f
            .termination_reason
            .as_deref()
            .unwrap()
            .contains("non-finite"));
        assert!(!f.trusted());
        let w = f.warnings();
        assert!(w[0].starts_with("the fit diverged"), "{w:?}");
        assert!(
            w.iter()
                .any(|w| w.contains("200 of 200 steps were skipped")),
            "{w:?}"
        );
        assert_eq!(f.elbo, None);
        let table = f.summary(100, 0).unwrap().to_string();
        assert!(table.contains("WARNING: the fit diverged"), "{table}");
        // An exact fit (OVI on a Gaussian) has a small k̂, an ELBO of log Z = 0 ± its se, and
        // nothing to warn about.
        let target = DiagNormal::standard(2).unwrap();
        let f = fit(
            &target,
            &Method::Ovi.preset(3000).with_seed(2),
            &RunSettings::until_converged(60_000),
            &mut NoObserver,
        )
        .unwrap();
        assert!(f.trusted(), "{:?}", f.warnings());
        let q = f.quality.as_ref().unwrap();
        assert!(q.khat.unwrap() < q.threshold);
        let e = q.elbo.unwrap();
        assert!(e.mean.abs() < 0.05 && e.mcse < 0.05, "{e:?}");
        assert!(f.summary(100, 0).unwrap().to_string().contains("k-hat"));
        assert_eq!(f.reweighted_draws(50, 1).unwrap().rows(), 50);
    }

    #[test]
    fn fit_returns_one_posterior_type_for_every_method() {
        let target = DiagNormal::standard(2).unwrap();
        for m in Method::ALL {
            let settings = match m {
                Method::Nuts => MethodSettings::Nuts(NutsSettings {
                    num_warmup: 200,
                    num_draws: 400,
                    ..NutsSettings::numpyro()
                }),
                _ => m
                    .preset(300)
                    .with_optimizer(OptimizerSettings::adam(0.05))
                    .with_seed(3),
            };
            let f = fit(
                &target,
                &settings,
                &RunSettings::steps(300),
                &mut NoObserver,
            )
            .unwrap();
            assert_eq!(f.method, m);
            assert_eq!(f.posterior.dim(), 2);
            assert_eq!(f.state.is_none(), m == Method::Nuts);
            // Every method's mean is near the target's 0 (NUTS: 400 draws, sd of the mean ≈ 0.05;
            // the variational methods converge to 0 within a few hundred Adam(0.05) steps).
            for v in f.posterior.mean() {
                assert!(v.abs() < 0.3, "{m}: mean {v}");
            }
            let draws = f
                .posterior
                .predictive_draws(
                    50,
                    &mut <crate::rand::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0),
                )
                .unwrap();
            assert_eq!(draws.cols(), 2);
        }
    }
}
