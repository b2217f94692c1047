//! The training loop of `smi fit`: the engine of a variational method run in short stretches, so
//! that a time limit (`--max-time`), Ctrl-C and periodic checkpoints take effect between steps.
//! The stretches change nothing in the result: every random choice lives in the engine's
//! [`State`], so a fit run in stretches, or stopped and resumed, takes the same steps as one
//! run straight through.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use smi::{
    Fit, LogDensity, Method, Observer, Posterior, Progress, RunSettings, State, Termination,
};
use smi_experiments::uci::{fit as fit_method, UnitSettings};

use super::interrupt::Interrupt;

/// Seconds one stretch of steps aims at: short enough for a prompt stop, long enough that
/// starting a stretch costs nothing measurable.
const STRETCH_SECONDS: f64 = 0.1;

/// Why a training run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The step budget or the early-stopping rule ended it (NUTS: all draws taken).
    Finished,
    /// `--max-time` ran out.
    TimeLimit,
    /// Ctrl-C or SIGTERM.
    Interrupted,
}

impl Stop {
    /// How the model file's `training.stopped` names it (`None` for a finished fit).
    pub fn name(self) -> Option<&'static str> {
        match self {
            Stop::Finished => None,
            Stop::TimeLimit => Some("max-time"),
            Stop::Interrupted => Some("interrupted"),
        }
    }
}

/// When to stop early and where to keep the state.
pub struct Limits<'a> {
    /// Stop at the first step boundary after this instant.
    pub deadline: Option<Instant>,
    /// Stop at the first step boundary after a Ctrl-C.
    pub interrupt: &'a Interrupt,
    /// Save the state here every `checkpoint_every` (and never otherwise: saving on a stop is
    /// the caller's choice).
    pub checkpoint: Option<(&'a Path, Duration)>,
    /// Continue from this state instead of a fresh one.
    pub resume: Option<State>,
}

/// A fit and why it ended.
pub struct Trained {
    /// The fit (for a stopped run: the posterior of its last state).
    pub fit: Fit,
    /// Why it ended.
    pub stop: Stop,
}

/// Passes only `on_step` on: the stretches' own starts and finishes are not the fit's.
struct StepsOnly<'a>(&'a mut dyn Observer);

impl Observer for StepsOnly<'_> {
    fn on_step(&mut self, p: &Progress) {
        self.0.on_step(p);
    }
}

/// Fits `method` at `lr` to `model` under `s` with `seed`, reporting to `observer` and
/// stopping at the `limits`. NUTS runs in one go (it cannot be stopped midway; Ctrl-C ends
/// the process as usual).
///
/// # Errors
/// Invalid settings, the engine's or the model's errors, a checkpoint that cannot be written.
pub fn train(
    method: Method,
    lr: Option<f64>,
    model: &dyn LogDensity,
    s: &UnitSettings,
    seed: u64,
    mut limits: Limits<'_>,
    observer: &mut dyn Observer,
) -> Result<Trained> {
    if method == Method::Nuts {
        return Ok(Trained {
            fit: fit_method(method, lr, model, s, seed, observer)?,
            stop: Stop::Finished,
        });
    }
    let engine = s.method_settings(method, lr, seed)?.build(model)?;
    let run = s.run_settings(method);
    let mut state = match limits.resume.take() {
        Some(state) => {
            anyhow::ensure!(
                state.fingerprint == engine.fingerprint(),
                "the checkpoint was written by a fit with other settings or data:\n  \
                 checkpoint: {}\n  this fit:   {}",
                state.fingerprint,
                engine.fingerprint()
            );
            state
        }
        None => engine.init()?,
    };
    let start = Instant::now();
    let mut saved = Instant::now();
    let (mut losses, mut elbos) = (Vec::new(), Vec::new());
    let mut termination = Termination::MaxSteps;
    let mut stretch = 1u64;
    let mut steps = StepsOnly(observer);
    steps.0.on_start(run.max_steps);
    let stop = loop {
        if state.step >= run.max_steps {
            break Stop::Finished;
        }
        let (t0, s0) = (Instant::now(), state.step);
        let part = RunSettings {
            max_steps: state.step.saturating_add(stretch).min(run.max_steps),
            ..run.clone()
        };
        let r = smi::run(engine.as_ref(), state, &part, &mut steps)?;
        state = r.state;
        losses.extend(r.losses);
        elbos.extend(r.elbos);
        if r.termination != Termination::MaxSteps {
            termination = r.termination;
            break Stop::Finished;
        }
        let per_step = t0.elapsed().as_secs_f64() / (state.step - s0).max(1) as f64;
        stretch = ((STRETCH_SECONDS / per_step.max(1e-9)) as u64).clamp(1, 10_000);
        if limits.interrupt.raised() {
            break Stop::Interrupted;
        }
        if limits.deadline.is_some_and(|d| Instant::now() >= d) {
            break Stop::TimeLimit;
        }
        if let Some((path, every)) = limits.checkpoint {
            if saved.elapsed() >= every && state.step < run.max_steps {
                state
                    .save(path)
                    .with_context(|| format!("cannot write the checkpoint {}", path.display()))?;
                saved = Instant::now();
            }
        }
    };
    steps.0.on_finish();
    Ok(Trained {
        fit: Fit {
            method,
            posterior: Posterior::Mixture(engine.posterior(&state)),
            steps: state.step,
            skipped_steps: state.skipped_steps,
            seconds: start.elapsed().as_secs_f64(),
            termination,
            losses,
            elbos,
            state: Some(state),
            nuts: None,
            layout: model.layout(),
        },
        stop,
    })
}
