//! The run loop: steps an [`Engine`] to a step budget, with observers, early stopping and
//! periodic checkpoints.

use std::path::PathBuf;
use std::time::Instant;

use crate::engine::early_stop::EarlyStopSettings;
use crate::engine::observe::{Observer, Progress};
use crate::engine::state::State;
use crate::engine::Engine;
use crate::error::Result;

/// How long to run and what to do along the way.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct RunSettings {
    /// Run until `state.step == max_steps` (a resumed state continues to the same total).
    pub max_steps: u64,
    /// Stop early by the rule of spec §7.3 on the step loss (`None`: never; the default).
    pub early_stopping: Option<EarlyStopSettings>,
    /// Save the state to this file every `checkpoint_every` steps and at the end.
    pub checkpoint: Option<PathBuf>,
    /// Steps between checkpoints (0: only at the end).
    pub checkpoint_every: u64,
}

impl RunSettings {
    /// `max_steps` steps, no early stopping, no checkpoints.
    pub fn steps(max_steps: u64) -> Self {
        RunSettings {
            max_steps,
            ..Default::default()
        }
    }
}

/// Why a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Termination {
    /// The step budget was used up.
    MaxSteps,
    /// The early-stopping rule fired.
    EarlyStopped,
}

/// The outcome of [`run`].
#[derive(Clone, Debug)]
pub struct RunResult {
    /// The final state (save it to resume).
    pub state: State,
    /// The loss of every step of this call.
    pub losses: Vec<f64>,
    /// Why the run ended.
    pub termination: Termination,
    /// Wall-clock seconds of this call.
    pub seconds: f64,
}

/// Steps `engine` from `state` until `settings.max_steps`, the early-stopping rule, or an error.
///
/// Observers see every step. With a checkpoint file, the state is saved atomically every
/// `checkpoint_every` steps and at the end.
///
/// # Errors
/// The first non-recoverable engine error (with the policy `Error`, a non-finite step too), or a
/// checkpoint write failure.
pub fn run<E: Engine + ?Sized>(
    engine: &E,
    mut state: State,
    settings: &RunSettings,
    observer: &mut dyn Observer,
) -> Result<RunResult> {
    let start = Instant::now();
    let mut losses = Vec::new();
    let mut termination = Termination::MaxSteps;
    observer.on_start(settings.max_steps);
    if state.early_stop.stopped && settings.early_stopping.is_some() {
        termination = Termination::EarlyStopped;
    }
    while termination == Termination::MaxSteps && state.step < settings.max_steps {
        let info = engine.step(&mut state, None)?;
        losses.push(info.loss);
        observer.on_step(&Progress::new(
            state.step,
            settings.max_steps,
            info.loss,
            "fit",
        ));
        if let Some(es) = &settings.early_stopping {
            if info.loss.is_finite() && state.early_stop.update(es, info.loss) {
                termination = Termination::EarlyStopped;
            }
        }
        if let Some(path) = &settings.checkpoint {
            if settings.checkpoint_every > 0 && state.step % settings.checkpoint_every == 0 {
                state.save(path)?;
            }
        }
    }
    if let Some(path) = &settings.checkpoint {
        state.save(path)?;
    }
    observer.on_finish();
    Ok(RunResult {
        state,
        losses,
        termination,
        seconds: start.elapsed().as_secs_f64(),
    })
}
