//! Observers: progress bars, loss traces and custom hooks called by every run loop.

use crate::engine::state::State;
use crate::error::Result;

/// What a run loop reports after each step (or each draw, for NUTS).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Progress {
    /// Steps (or draws) done so far, counting this one.
    pub step: u64,
    /// The number of steps the run is configured for (an upper bound with early stopping).
    pub total: u64,
    /// The step's loss: ‖φ‖_F for Stein engines, −ELBO estimate for SVI, −log p for NUTS.
    pub loss: f64,
    /// The step's ELBO estimate (the objective the variational engines ascend, computed from the
    /// step's draws before its update): the mixture ELBO for Stein engines (tempered by the
    /// attraction temperature, so ASVGD's is annealed), the ELBO for OVI, log p for MAP. NaN
    /// where there is none (NUTS, a skipped step).
    pub elbo: f64,
    /// A short label of the phase, e.g. `"fit"`, `"warmup"`, `"sampling"`.
    pub phase: &'static str,
}

impl Progress {
    /// A progress record without an ELBO (NaN; see [`Progress::with_elbo`]).
    pub fn new(step: u64, total: u64, loss: f64, phase: &'static str) -> Self {
        Progress {
            step,
            total,
            loss,
            elbo: f64::NAN,
            phase,
        }
    }

    /// The same record with the step's ELBO estimate.
    pub fn with_elbo(mut self, elbo: f64) -> Self {
        self.elbo = elbo;
        self
    }
}

/// What an observer asks of a run after a step ([`Observer::control`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Control {
    /// Go on (the default).
    #[default]
    Continue,
    /// Save the state to the run's checkpoint now ([`crate::RunSettings::checkpoint`] or the
    /// [`crate::Checkpoint`] of [`crate::run_with_checkpoint`]; nothing without one), then go
    /// on: checkpoints on the observer's clock (every few minutes, say) rather than every so
    /// many steps.
    Checkpoint,
    /// End the run after this step (a deadline, an interrupt, the observer's own rule). The run
    /// ends as at its step budget: the ELBO verdict, and the state saved to the checkpoint
    /// if there is one; [`crate::RunResult::stopped`] says it was stopped.
    Stop,
}

/// Hooks a run loop calls; every method defaults to doing nothing.
pub trait Observer {
    /// Before the first step; `total` as in [`Progress::total`].
    fn on_start(&mut self, _total: u64) {}
    /// After each step.
    fn on_step(&mut self, _progress: &Progress) {}
    /// After each step of a variational run, once its checkpoint and epoch's end are done:
    /// whether the run goes on, saves its state now, or stops. `step` is the number of steps
    /// taken so far. The default goes on. (NUTS does not ask.)
    fn control(&mut self, _step: u64) -> Control {
        Control::Continue
    }
    /// After the last step.
    fn on_finish(&mut self) {}
    /// After the last step of an epoch (only under [`crate::RowSource::Epochs`]), after that
    /// step's checkpoint (whose sidecar has the epoch and its mean loss,
    /// [`crate::SavePoint`]).
    ///
    /// # Errors
    /// Whatever the observer cannot do; it ends the run with that error.
    fn on_epoch_end(&mut self, _end: &EpochEnd<'_>) -> Result<()> {
        Ok(())
    }
}

/// What [`Observer::on_epoch_end`] hears.
#[derive(Clone, Copy, Debug)]
pub struct EpochEnd<'a> {
    /// Epochs finished so far (1 after the first).
    pub epoch: u64,
    /// Steps per epoch.
    pub steps_per_epoch: u64,
    /// Mean of the epoch's finite step losses (NaN if none), over the steps this run took.
    pub mean_loss: f64,
    /// The state after the epoch's last step.
    pub state: &'a State,
}

/// An observer that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}

/// Records every step's loss and ELBO estimate.
#[derive(Clone, Debug, Default)]
pub struct LossTrace {
    /// Loss after each step, in order.
    pub losses: Vec<f64>,
    /// ELBO estimate of each step, in order (NaN where there is none).
    pub elbos: Vec<f64>,
}

impl Observer for LossTrace {
    fn on_step(&mut self, p: &Progress) {
        self.losses.push(p.loss);
        self.elbos.push(p.elbo);
    }
}

impl<F: FnMut(&Progress)> Observer for F {
    fn on_step(&mut self, p: &Progress) {
        self(p)
    }
}
