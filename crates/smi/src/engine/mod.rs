//! What every engine shares: the [`Engine`] trait, its [`State`], the run loop, observers, early
//! stopping and checkpoints.

mod checkpoint;
mod convergence;
pub(crate) mod cpu_time;
mod early_stop;
mod observe;
mod runner;
mod state;
mod verdict;
pub(crate) mod window;

pub use checkpoint::{Checkpoint, CopyHook, Elapsed, FileCheckpoint, Resumed, SavePoint, Sidecar};
pub use convergence::{ConvergenceSettings, ConvergenceState};
pub use cpu_time::{process_cpu_seconds, CpuClock};
pub use early_stop::{EarlyStopSettings, EarlyStopState};
pub use observe::{Control, EpochEnd, LossTrace, NoObserver, Observer, Progress};
pub use runner::{
    run, run_with_checkpoint, Epochs, RowSource, RunResult, RunSettings, Termination,
};
pub use state::{State, CHECKPOINT_FORMAT};
pub use verdict::{ElboEstimate, ElboTrack};
pub use window::ObjectiveWindows;

use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::guide::{GuideSettings, Init, Start};
use crate::model::LogDensity;
use crate::optim::OptimizerSettings;
use crate::posterior::Mixture;

/// What to do when a step produces a non-finite value (NumPyro's `stable_update`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum NonFinitePolicy {
    /// Leave particles and optimizer unchanged, count the step in `State::skipped_steps` and go
    /// on (the default).
    #[default]
    Skip,
    /// Return [`crate::Error::NonFinite`].
    Error,
}

/// Which checks of the run's verdict an engine's ELBO estimates support (docs/convergence.md,
/// "When a fit cannot be trusted"); the non-finite and magnitude checks apply to every engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ElboChecks {
    /// The estimate is a Monte Carlo average over draws of a guide with a density (SMI, OVI),
    /// near Normal for an approximation that covers its target: heavy tails are a failure.
    /// Not for point masses, whose full-batch estimate is deterministic.
    pub heavy_tails: bool,
    /// The update ascends the estimate's expectation (OVI's ELBO, MAP's log density), so a
    /// fall below the start or far from the best is a failure. Not for the Stein updates,
    /// whose repulsion may lower it (SVGD's spreading particles, SMI's guides pushed apart).
    pub falls: bool,
}

/// What one step reports.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct StepInfo {
    /// The step's loss, computed before the update: ‖φ‖_F for Stein engines, the negative ELBO
    /// estimate for SVI.
    pub loss: f64,
    /// The (mixture) ELBO estimate of this step's draws.
    pub elbo: f64,
    /// Whether the step was skipped for a non-finite value.
    pub skipped: bool,
}

impl StepInfo {
    /// A step record.
    pub fn new(loss: f64, elbo: f64, skipped: bool) -> Self {
        StepInfo {
            loss,
            elbo,
            skipped,
        }
    }
}

/// An inference engine: immutable settings + model; all mutable data lives in [`State`].
pub trait Engine: Sync {
    /// A short name for records (`"smi"`, `"svgd"`, `"ovi"`, …).
    fn name(&self) -> &str;

    /// A fresh state: particles initialised from the settings' seed.
    ///
    /// # Errors
    /// From the initialisation (e.g. a model that cannot sample its prior).
    fn init(&self) -> Result<State>;

    /// One update. `rows`: `None` lets the engine draw its own mini-batches (docs/algorithms.md §2.6);
    /// `Some(rows)` evaluates every draw on these rows with scale N/|rows| (e.g. MNIST epochs).
    ///
    /// # Errors
    /// Shape or data errors, a model error, and [`crate::Error::NonFinite`] under
    /// [`NonFinitePolicy::Error`].
    fn step(&self, state: &mut State, rows: Option<&[usize]>) -> Result<StepInfo>;

    /// The approximate posterior the state represents.
    ///
    /// A state whose particles do not have this engine's width (not one of its states) gives a
    /// mixture without particles, whose draws are an error.
    fn posterior(&self, state: &State) -> Mixture;

    /// Which of the verdict's ELBO checks (docs/convergence.md) this engine's estimates
    /// support. The default, none, suits an engine whose estimate is neither noisy by Monte
    /// Carlo nor its update's objective.
    fn elbo_checks(&self) -> ElboChecks {
        ElboChecks::default()
    }

    /// A string identifying settings and model shape; a checkpoint only loads into an engine
    /// with the same fingerprint.
    fn fingerprint(&self) -> String;

    /// Brings into `state` what the engine keeps elsewhere between steps, and hands the
    /// state back to the host.
    ///
    /// An engine may keep the particles and the optimizer's buffers on a device between
    /// [`Engine::step`] calls (the CUDA engine of `smi-models` does), so that nothing of size
    /// m×p crosses to the host per step; `state.particles` and `state.optimizer` are then
    /// those of the last sync. [`run`] calls this before every checkpoint, every epoch's end
    /// and at the end, so its observers and its result see the current state. A caller that
    /// steps by hand calls it before reading or editing the state (a state edited after a
    /// sync is uploaded again by the next step). The default does nothing: the CPU engines
    /// keep everything in `state`.
    ///
    /// # Errors
    /// A failed copy from the device.
    fn sync(&self, _state: &mut State) -> Result<()> {
        Ok(())
    }

    /// Loads a checkpoint written by a run of this engine.
    ///
    /// The built-in engines also check that the state fits them (particle shape, optimizer
    /// kind and buffer lengths), as their [`Engine::step`] does.
    ///
    /// # Errors
    /// See [`State::load`]; [`crate::Error::Checkpoint`] for a state that does not fit.
    fn load_state(&self, path: &std::path::Path) -> Result<State> {
        State::load(path, &self.fingerprint())
    }
}

/// Checks that a state's particle matrix is `rows × cols` (a state from another engine or
/// model is a shape error, not a panic).
pub(crate) fn check_particles(state: &State, rows: usize, cols: usize) -> Result<()> {
    if state.particles.rows() != rows || state.particles.cols() != cols {
        return Err(crate::Error::shape(
            "state particles",
            format!("{rows}×{cols}"),
            format!("{}×{}", state.particles.rows(), state.particles.cols()),
        ));
    }
    Ok(())
}

/// What a variational engine's states are: `m` particles of `guide` over a model of dimension
/// `dim`, moved by `optimizer`. Every engine's `init`, `step`, `posterior` and `load_state` go
/// through it.
#[derive(Clone, Copy)]
pub(crate) struct Particles<'a> {
    m: usize,
    guide: GuideSettings,
    dim: usize,
    optimizer: &'a OptimizerSettings,
}

impl<'a> Particles<'a> {
    /// `m` particles of `guide` over a model of dimension `dim`, moved by `optimizer`.
    pub(crate) fn new(
        m: usize,
        guide: GuideSettings,
        dim: usize,
        optimizer: &'a OptimizerSettings,
    ) -> Self {
        Particles {
            m,
            guide,
            dim,
            optimizer,
        }
    }

    /// p, the parameters of one particle.
    fn cols(&self) -> usize {
        self.guide.param_dim(self.dim)
    }

    /// A fresh state: the particles, each initialised by `init` from a ChaCha8 stream seeded
    /// with `seed` (the stream then lives on in the state), and the optimizer's moments.
    ///
    /// # Errors
    /// From the initialisation (e.g. a model that cannot sample its prior);
    /// [`crate::Error::NonFinite`] naming the particle when an initial value is not finite (e.g.
    /// a NaN prior draw), instead of a state whose every step would be skipped;
    /// [`crate::Error::InvalidSettings`] when the particles or optimizer buffers cannot be
    /// allocated.
    pub(crate) fn init<M: LogDensity + ?Sized>(
        &self,
        model: &M,
        init: &Init,
        start: Start,
        jacobian: bool,
        seed: u64,
        fingerprint: String,
    ) -> Result<State> {
        let (m, guide) = (self.m, &self.guide);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let p = guide.param_dim(model.dim());
        let mut particles = crate::Matrix::try_zeros(m, p).map_err(|e| {
            crate::Error::invalid(
                "num_particles",
                format!("{m} particles of {p} parameters cannot be stored: {e}"),
            )
        })?;
        let mut evidence = Vec::with_capacity(m);
        for i in 0..m {
            let row = particles.row_mut(i);
            guide.init_particle(model, init, &mut rng, row)?;
            evidence.push(start.apply(guide, model, jacobian, &mut rng, row)?);
            if let Some(c) = row.iter().position(|v| !v.is_finite()) {
                return Err(crate::Error::non_finite(format!(
                    "initial particle {i}, column {c} = {} (drawn by {init:?}; the model's \
                     `sample_prior` must give finite unconstrained values)",
                    row[c]
                )));
            }
        }
        Start::prune(&mut particles, &evidence, self.dim, &mut rng);
        let optimizer_state = self.optimizer.try_init(particles.as_slice().len())?;
        Ok(State {
            optimizer: optimizer_state,
            particles,
            rng,
            step: 0,
            skipped_steps: 0,
            early_stop: Default::default(),
            lr_schedule: Default::default(),
            convergence: Default::default(),
            elbo_track: Default::default(),
            fingerprint,
        })
    }

    /// [`check_particles`], and that the state's optimizer is the settings' kind with one value
    /// per particle entry in each buffer: everything a step relies on, checked before anything
    /// changes (a state from another engine or model, or a hand-edited one, is an error, not a
    /// panic or a silent partial update).
    pub(crate) fn check(&self, state: &State) -> Result<()> {
        check_particles(state, self.m, self.cols())?;
        if !state.optimizer.matches(self.optimizer) {
            return Err(crate::Error::Checkpoint(
                "optimizer state does not match the optimizer settings".into(),
            ));
        }
        state.optimizer.check_len(state.particles.as_slice().len())
    }

    /// [`State::load`], then [`Particles::check`]: a checkpoint whose state does not fit the
    /// engine is an [`crate::Error::Checkpoint`].
    pub(crate) fn load(&self, path: &std::path::Path, fingerprint: &str) -> Result<State> {
        let state = State::load(path, fingerprint)?;
        self.check(&state).map_err(|e| {
            let why = match e {
                crate::Error::Checkpoint(msg) => msg,
                other => other.to_string(),
            };
            crate::Error::Checkpoint(format!(
                "{} does not fit this engine: {why}",
                path.display()
            ))
        })?;
        Ok(state)
    }

    /// The mixture of `guide`s a state's particles parameterise.
    ///
    /// A state of another width (not one of the engine's) gives a mixture without particles,
    /// rather than an inconsistent one that would index out of bounds.
    pub(crate) fn mixture(&self, state: &State) -> Mixture {
        Mixture::new(self.guide, state.particles.clone(), self.dim)
            .unwrap_or_else(|_| Mixture::empty(self.guide, self.dim))
    }
}

/// The [`Engine`] methods that [`crate::SteinVi`] and [`crate::Svi`] share word for word:
/// `init`, `posterior`, `fingerprint` and `load_state`, through the engine's
/// `fn particles(&self) -> Particles<'_>`, its `model` and its `settings` (`init`, `seed`).
macro_rules! particle_engine_methods {
    () => {
        fn init(&self) -> Result<State> {
            let st = &self.settings;
            self.particles().init(
                self.model,
                &st.init,
                st.start,
                st.jacobian,
                st.seed,
                self.fingerprint(),
            )
        }

        fn posterior(&self, state: &State) -> Mixture {
            self.particles().mixture(state)
        }

        fn fingerprint(&self) -> String {
            engine::fingerprint(self.name(), self.model, &self.settings)
        }

        fn load_state(&self, path: &std::path::Path) -> Result<State> {
            self.particles().load(path, &self.fingerprint())
        }
    };
}
pub(crate) use particle_engine_methods;

/// The shared tail of a step: counts it, then either moves the particles along the ascent
/// `direction` (the optimizer receives −direction) at the scheduled learning rate of the step
/// and feeds the step's ELBO estimate to the schedule, or, for a recoverable non-finite value
/// under [`NonFinitePolicy::Skip`], leaves them unchanged and counts the skip.
///
/// `result` holds the ascent direction (flattened particles' length), the loss and the ELBO.
/// Public so that an engine built outside this crate over its public pieces (the CUDA engine
/// of `smi-models`) ends its steps exactly as the built-in engines do.
///
/// # Errors
/// The optimizer's shape error, or `result`'s error (or a non-finite direction or ELBO) unless
/// it is recoverable and `policy` is [`NonFinitePolicy::Skip`].
pub fn apply_ascent(
    state: &mut State,
    optimizer: &crate::OptimizerSettings,
    policy: NonFinitePolicy,
    result: Result<(Vec<f64>, f64, f64)>,
) -> Result<StepInfo> {
    let mut direction = Vec::new();
    let result = result.and_then(|(d, loss, elbo)| {
        if d.iter().all(|v| v.is_finite()) && elbo.is_finite() {
            direction = d;
            Ok((loss, elbo))
        } else {
            Err(crate::Error::non_finite(format!(
                "update direction at step {}",
                state.step
            )))
        }
    });
    finish_step(state, optimizer, policy, result, |lr, state| {
        direction.iter_mut().for_each(|v| *v = -*v);
        state
            .optimizer
            .step_with_lr(optimizer, lr, state.particles.as_mut_slice(), &direction)
    })
}

/// [`apply_ascent`] for an engine that moves the particles itself (the CUDA engine of
/// `smi-models`, whose particles stay on a device): counts the step, then either calls
/// `update(lr, state)` with the step's scheduled learning rate and feeds the ELBO to the
/// schedule, or, for a recoverable error under [`NonFinitePolicy::Skip`], counts the skip.
/// `result` holds the step's loss and ELBO (finite), or why there is no update.
///
/// # Errors
/// `update`'s error, or `result`'s error unless it is recoverable and `policy` is
/// [`NonFinitePolicy::Skip`].
pub fn finish_step(
    state: &mut State,
    optimizer: &crate::OptimizerSettings,
    policy: NonFinitePolicy,
    result: Result<(f64, f64)>,
    update: impl FnOnce(f64, &mut State) -> Result<()>,
) -> Result<StepInfo> {
    // The schedule's clock: the step's index from 0 (skipped steps count).
    let t = state.step;
    // Saturating: a loaded state may carry any count.
    state.step = state.step.saturating_add(1);
    match result {
        Ok((loss, elbo)) => {
            let lr = optimizer.lr_at(t, &state.lr_schedule);
            update(lr, state)?;
            optimizer
                .schedule()
                .observe(optimizer.lr(), t, elbo, &mut state.lr_schedule);
            Ok(StepInfo::new(loss, elbo, false))
        }
        Err(e) if e.is_recoverable() && policy == NonFinitePolicy::Skip => {
            state.skipped_steps = state.skipped_steps.saturating_add(1);
            Ok(StepInfo::new(f64::NAN, f64::NAN, true))
        }
        Err(e) => Err(e),
    }
}

/// The fingerprint of an engine: its name, the model's shape and its settings as JSON.
pub(crate) fn fingerprint<M: LogDensity + ?Sized, S: Serialize>(
    name: &str,
    model: &M,
    settings: &S,
) -> String {
    let settings = serde_json::to_string(settings).unwrap_or_default();
    format!("{name} d={} N={} {settings}", model.dim(), model.num_data())
}

/// The mini-batcher of an engine over `model`, after checking that the model has parameters and
/// that `batch_size` does not exceed its data rows.
pub(crate) fn batcher_for<M: LogDensity + ?Sized>(
    model: &M,
    batch_size: Option<usize>,
) -> Result<crate::model::Batcher> {
    if model.dim() == 0 {
        return Err(crate::Error::invalid("dim", "the model has no parameters"));
    }
    let n = model.num_data();
    if let (Some(b), true) = (batch_size, n > 0) {
        if b > n {
            return Err(crate::Error::invalid(
                "batch_size",
                format!("{b} exceeds the model's {n} data rows"),
            ));
        }
    }
    Ok(crate::model::Batcher::new(n, batch_size))
}

/// The number of values of a buffer whose length is the product of `factors`, or
/// [`crate::Error::InvalidSettings`] naming `field` when the product overflows or its bytes
/// exceed the address space (`isize::MAX`), so no later allocation of it can wrap or abort
/// for that reason. `what` describes the buffer.
pub(crate) fn buffer_len(field: &'static str, what: &str, factors: &[usize]) -> Result<usize> {
    const MAX_VALUES: usize = isize::MAX as usize / std::mem::size_of::<f64>();
    factors
        .iter()
        .try_fold(1usize, |acc, &f| acc.checked_mul(f))
        .filter(|&n| n <= MAX_VALUES)
        .ok_or_else(|| {
            let shown: Vec<String> = factors.iter().map(ToString::to_string).collect();
            crate::Error::invalid(
                field,
                format!(
                    "{what} would need {} values, more than any buffer can hold",
                    shown.join(" × ")
                ),
            )
        })
}

/// The checks every variational engine's settings share: S ≥ 1 draws, a batch size ≥ 1, the
/// log-Jacobian with a Normal guide, and valid guide, init and optimizer settings.
pub(crate) fn validate_common(
    num_elbo_particles: usize,
    batch_size: Option<usize>,
    jacobian: bool,
    guide: &GuideSettings,
    init: &Init,
    start: &Start,
    optimizer: &OptimizerSettings,
) -> Result<()> {
    if num_elbo_particles == 0 {
        return Err(crate::Error::invalid(
            "num_elbo_particles",
            "needs at least one draw",
        ));
    }
    if batch_size == Some(0) {
        return Err(crate::Error::invalid("batch_size", "must be at least 1"));
    }
    if !jacobian && guide.is_normal() {
        return Err(crate::Error::invalid(
            "jacobian",
            "the Normal guide's density needs the log-Jacobian of constrained latents",
        ));
    }
    guide.validate()?;
    init.validate()?;
    start.validate()?;
    optimizer.validate()
}
