//! The SVI engine ([`Svi`]): mean-field VI (OVI, Normal guide) and MAP (Delta guide), docs/algorithms.md §5.
//!
//! OVI follows the full reparameterised ELBO gradient (Trace_ELBO: path derivative plus the
//! guide's entropy gradient), not the sticking-the-landing estimator SMI uses; MAP ascends
//! log p(T(u), D) without the log-Jacobian (the mode in constrained space).

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::engine::{self, Engine, NonFinitePolicy, State, StepInfo};
use crate::error::{Error, Result};
use crate::guide::{GuideSettings, Init, Start};
use crate::matrix::try_resize;
use crate::model::LogDensity;
use crate::model::{Batch, Batcher};
use crate::optim::{LrSchedule, OptimizerSettings, PlateauSettings};
use crate::posterior::Mixture;

/// Settings of [`Svi`].
///
/// Defaults ([`SviSettings::ovi`]): Normal guide (init scale 0.1), uniform init radius 2, 10
/// ELBO draws per step, Adam(0.1) with reduce-on-plateau (halved after 5 windows of 200 steps
/// without a significant ELBO gain, floor 1e-6), full batch,
/// Jacobian included, non-finite steps skipped, seed 0. Run it with
/// [`crate::RunSettings::until_converged`]: the values were chosen by measurement on four
/// posteriordb posteriors (docs/defaults.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SviSettings {
    /// Normal (OVI) or Delta (MAP).
    pub guide: GuideSettings,
    /// S, ELBO draws per step (ignored for Delta: one evaluation).
    pub num_elbo_particles: usize,
    /// How the initial location is drawn.
    pub init: Init,
    /// Where the guide starts from its drawn location ([`Start`]; default [`Start::Draw`]).
    /// Omitted from the serialised settings when `Draw` (fingerprints unchanged).
    #[serde(default, skip_serializing_if = "Start::is_draw")]
    pub start: Start,
    /// The optimizer receiving −∇ELBO.
    pub optimizer: OptimizerSettings,
    /// Mini-batch size b (`None`: full batch).
    pub batch_size: Option<usize>,
    /// Include the log-Jacobian of constrained latents (must be `true` for Normal; MAP uses
    /// `false`).
    pub jacobian: bool,
    /// What to do with a non-finite step.
    pub on_non_finite: NonFinitePolicy,
    /// Seed of the state's RNG.
    pub seed: u64,
}

/// The variational presets' optimizer ([`SviSettings::ovi`], [`crate::SteinSettings::smi`] and
/// the SVGD presets built on it): Adam(0.1) under reduce-on-plateau, the rate halved after 5
/// windows of 200 steps without a significant gain of the ELBO estimate, down to 1e-6. The
/// large first rate crosses badly scaled or strongly correlated posteriors (kidiq's −0.99
/// ridge) quickly; the cuts then shrink the optimizer's jitter below the posterior's own
/// scale (sblrc's coefficients have sd 0.001). Chosen by measurement (docs/defaults.md).
pub(crate) fn default_optimizer() -> OptimizerSettings {
    let plateau = PlateauSettings {
        window: 200,
        patience: 5,
        ..PlateauSettings::default()
    };
    OptimizerSettings::adam(0.1).with_schedule(LrSchedule::plateau(plateau, 1e-6))
}

impl Default for SviSettings {
    fn default() -> Self {
        SviSettings::ovi()
    }
}

impl SviSettings {
    /// Mean-field VI with the defaults listed on [`SviSettings`].
    pub fn ovi() -> Self {
        SviSettings {
            guide: GuideSettings::normal(),
            num_elbo_particles: 10,
            init: Init::default(),
            start: Start::Draw,
            optimizer: default_optimizer(),
            batch_size: None,
            jacobian: true,
            on_non_finite: NonFinitePolicy::Skip,
            seed: 0,
        }
    }

    /// MAP: Delta guide, no log-Jacobian, otherwise as [`SviSettings::ovi`].
    pub fn map() -> Self {
        SviSettings {
            guide: GuideSettings::Delta,
            jacobian: false,
            ..SviSettings::ovi()
        }
    }

    /// Checks every field.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] naming the field, also for a draw count (times the batch
    /// size) whose buffers would exceed the address space.
    pub fn validate(&self) -> Result<()> {
        crate::engine::validate_common(
            self.num_elbo_particles,
            self.batch_size,
            self.jacobian,
            &self.guide,
            &self.init,
            &self.start,
            &self.optimizer,
        )?;
        let s = self.draws_per_step();
        crate::engine::buffer_len("num_elbo_particles", "the S log densities of a step", &[s])?;
        if let Some(b) = self.batch_size {
            crate::engine::buffer_len("batch_size", "the S·b mini-batch rows of a step", &[s, b])?;
        }
        Ok(())
    }

    /// The draws one step evaluates: S for Normal, one for Delta.
    fn draws_per_step(&self) -> usize {
        match self.guide {
            _ if self.guide.is_normal() => self.num_elbo_particles,
            _ => 1,
        }
    }
}

/// The SVI engine over a model `M` (one "particle": the guide's parameters).
pub struct Svi<'a, M: LogDensity + ?Sized> {
    model: &'a M,
    settings: SviSettings,
    batcher: Batcher,
    scratch: Mutex<SviScratch>,
}

/// Buffers reused across steps (sized on first use), so a step allocates only its direction.
#[derive(Default, Debug)]
struct SviScratch {
    eps: Vec<f64>,
    theta: Vec<f64>,
    logp: Vec<f64>,
    grad: Vec<f64>,
}

impl<'a, M: LogDensity + ?Sized> Svi<'a, M> {
    /// An engine for `model` with `settings` (validated).
    ///
    /// # Errors
    /// From [`SviSettings::validate`]; a batch size larger than the data; draws (S×d) whose
    /// buffers would exceed the address space.
    pub fn new(model: &'a M, settings: SviSettings) -> Result<Self> {
        settings.validate()?;
        let d = model.dim();
        let s = settings.draws_per_step();
        engine::buffer_len("num_elbo_particles", "the S×d draws of a step", &[s, d])?;
        engine::buffer_len(
            "dim",
            "the guide's parameters",
            &[settings.guide.param_dim(1), d],
        )?;
        Ok(Svi {
            model,
            batcher: engine::batcher_for(model, settings.batch_size)?,
            settings,
            scratch: Mutex::new(SviScratch::default()),
        })
    }

    /// The settings.
    pub fn settings(&self) -> &SviSettings {
        &self.settings
    }

    fn draws(&self) -> usize {
        self.settings.draws_per_step()
    }

    /// ∇_ψ ELBO (length p) and the ELBO estimate, drawing noise from `state.rng`.
    fn gradient(&self, state: &mut State, rows: Option<&[usize]>) -> Result<(Vec<f64>, f64)> {
        let st = &self.settings;
        let d = self.model.dim();
        let s = self.draws();
        let mut guard = self
            .scratch
            .lock()
            .map_err(|_| Error::Data("scratch buffer poisoned by an earlier panic".into()))?;
        let sc = &mut *guard;
        let psi = state.particles.row(0);
        // Sizes from user settings (S): a failed allocation is an error, not an abort.
        try_resize(&mut sc.eps, s * st.guide.noise_dim(d), "the step's noise")?;
        try_resize(&mut sc.theta, s * d, "the step's S×d draws")?;
        try_resize(&mut sc.logp, s, "the step's S log densities")?;
        try_resize(&mut sc.grad, s * d, "the step's S×d gradients")?;
        st.guide
            .draw_noise(&mut state.rng, &mut sc.eps, st.guide.noise_dim(d));
        let mut batch = match rows {
            None => self.batcher.draw(&mut state.rng, s),
            Some(r) => Batch::shared(r.to_vec(), self.model.num_data()),
        };
        batch.jacobian = st.jacobian;
        batch.validate(self.model.num_data(), s)?;
        st.guide.sample(psi, &sc.eps, &mut sc.theta);
        self.model
            .log_density_and_grad(&sc.theta, &batch, &mut sc.logp, &mut sc.grad)?;
        // A non-finite gradient propagates into g, which the step checks before updating.
        if sc.logp.iter().any(|v| !v.is_finite()) {
            return Err(Error::non_finite(format!(
                "model log density at step {}",
                state.step
            )));
        }
        let mut g = vec![0.0; psi.len()];
        st.guide.pullback(psi, &sc.eps, &sc.grad, &mut g);
        st.guide.add_entropy_grad(psi, &mut g);
        let elbo = sc.logp.iter().sum::<f64>() / s as f64 + st.guide.entropy(psi);
        Ok((g, elbo))
    }

    /// The shape of this engine's states (see [`engine::Particles`]).
    fn particles(&self) -> engine::Particles<'_> {
        let st = &self.settings;
        engine::Particles::new(1, st.guide, self.model.dim(), &st.optimizer)
    }
}

impl<M: LogDensity + ?Sized> Engine for Svi<'_, M> {
    engine::particle_engine_methods!();

    fn name(&self) -> &str {
        match self.settings.guide {
            GuideSettings::Delta => "map",
            _ => "ovi",
        }
    }

    /// Falls always (the update ascends the ELBO, or MAP's log density); heavy tails for
    /// OVI's Monte Carlo estimate.
    fn elbo_checks(&self) -> engine::ElboChecks {
        engine::ElboChecks {
            heavy_tails: self.settings.guide != GuideSettings::Delta,
            falls: true,
        }
    }

    fn step(&self, state: &mut State, rows: Option<&[usize]>) -> Result<StepInfo> {
        let st = &self.settings;
        self.particles().check(state)?;
        let result = self.gradient(state, rows).map(|(g, elbo)| (g, -elbo, elbo));
        engine::apply_ascent(state, &st.optimizer, st.on_non_finite, result)
    }
}
