//! The training of `smi fit`: one run of the engine (`smi::run`) whose observer stops it at a
//! time limit (`--max-time`) or a Ctrl-C and asks for periodic checkpoints, between steps.
//! Every random choice lives in the engine's [`State`], so a fit stopped and resumed takes the
//! same steps as one run straight through.

use std::time::{Duration, Instant};

use crate::protocol::{fit as fit_method, Protocol};
use anyhow::Result;
use smi::{
    Control, FileCheckpoint, Fit, LogDensity, LrDecay, LrSchedule, Method, MethodSettings,
    Observer, OptimizerSettings, Posterior, Progress, RunSettings, State,
};

use super::interrupt::Interrupt;
use crate::options::LrScheduleKind;

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
    /// Save the state here at the end of the run (finished or stopped), and every so often
    /// when an interval is given.
    pub checkpoint: Option<(&'a mut FileCheckpoint, Option<Duration>)>,
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

/// The fit's observer with the limits: stops the run at the deadline or an interrupt, and
/// asks for a checkpoint every `every`.
struct Limited<'a> {
    inner: &'a mut dyn Observer,
    deadline: Option<Instant>,
    interrupt: &'a Interrupt,
    every: Option<Duration>,
    saved: Instant,
    /// Why the run was stopped (`Finished`: it was not).
    why: Stop,
}

impl Observer for Limited<'_> {
    fn on_start(&mut self, total: u64) {
        self.inner.on_start(total);
    }

    fn on_step(&mut self, p: &Progress) {
        self.inner.on_step(p);
    }

    fn control(&mut self, step: u64) -> Control {
        if self.interrupt.raised() {
            self.why = Stop::Interrupted;
            return Control::Stop;
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            self.why = Stop::TimeLimit;
            return Control::Stop;
        }
        if self.every.is_some_and(|e| self.saved.elapsed() >= e) {
            self.saved = Instant::now();
            return Control::Checkpoint;
        }
        self.inner.control(step)
    }

    fn on_finish(&mut self) {
        self.inner.on_finish();
    }
}

/// The final learning rate of [`LrScheduleKind::Cosine`] as a fraction of the base rate.
pub const COSINE_FLOOR: f64 = 0.01;

/// What one training run fits: `method` at `lr` under `protocol` with `seed` and the
/// learning-rate `schedule`.
#[derive(Clone, Copy, Debug)]
pub struct Recipe<'a> {
    /// The method.
    pub method: Method,
    /// The learning rate (`None`: the method's default; NUTS has none).
    pub lr: Option<f64>,
    /// The fit protocol (particles, draws, steps, …).
    pub protocol: &'a Protocol,
    /// The seed.
    pub seed: u64,
    /// The learning-rate schedule (a cosine spans `protocol.max_steps`).
    pub schedule: LrScheduleKind,
}

/// The engine settings of `recipe`.
///
/// # Errors
/// Invalid settings.
pub fn method_settings(recipe: &Recipe) -> Result<MethodSettings> {
    let (method, lr, s) = (recipe.method, recipe.lr, recipe.protocol);
    let settings = s.method_settings(method, lr, recipe.seed)?;
    Ok(match (recipe.schedule, lr) {
        (LrScheduleKind::Cosine, Some(lr)) if method != Method::Nuts => {
            settings.with_optimizer(OptimizerSettings::adam(lr).with_schedule(LrSchedule {
                warmup_steps: 0,
                decay: LrDecay::Cosine {
                    steps: s.max_steps.max(1),
                },
                min_lr: lr * COSINE_FLOOR,
            }))
        }
        _ => settings,
    })
}

/// Fits `recipe` to `model`, reporting to `observer` and stopping at the `limits`. NUTS runs
/// in one go (it cannot be stopped midway; Ctrl-C ends the process as usual).
///
/// # Errors
/// Invalid settings, the engine's or the model's errors, a checkpoint that cannot be written.
pub fn train(
    recipe: &Recipe,
    model: &dyn LogDensity,
    mut limits: Limits<'_>,
    observer: &mut dyn Observer,
) -> Result<Trained> {
    let (method, seed) = (recipe.method, recipe.seed);
    if method == Method::Nuts {
        return Ok(Trained {
            fit: fit_method(method, recipe.lr, model, recipe.protocol, seed, observer)?,
            stop: Stop::Finished,
        });
    }
    let engine = method_settings(recipe)?.build(model)?;
    let run = RunSettings {
        checkpoint: None,
        checkpoint_every: 0,
        ..recipe.protocol.run_settings(method)
    };
    let state = match limits.resume.take() {
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
    let mut limited = Limited {
        inner: observer,
        deadline: limits.deadline,
        interrupt: limits.interrupt,
        every: limits.checkpoint.as_ref().and_then(|(_, every)| *every),
        saved: Instant::now(),
        why: Stop::Finished,
    };
    let r = match limits.checkpoint {
        Some((files, _)) => {
            smi::run_with_checkpoint(engine.as_ref(), state, &run, &mut limited, files)?
        }
        None => smi::run(engine.as_ref(), state, &run, &mut limited)?,
    };
    let stop = if r.stopped {
        limited.why
    } else {
        Stop::Finished
    };
    let (state, losses, elbos) = (r.state, r.losses, r.elbos);
    let (termination, reason, elbo) = (r.termination, r.reason, r.elbo);
    let mixture = engine.posterior(&state);
    // The fit-quality diagnostic (k̂), unless the user interrupted the fit.
    let draws = if matches!(stop, Stop::Interrupted) {
        0
    } else {
        smi::DEFAULT_QUALITY_DRAWS
    };
    let quality = smi::quality::diagnose(model, &mixture, draws, seed)?;
    Ok(Trained {
        fit: Fit {
            method,
            posterior: Posterior::Mixture(mixture),
            steps: state.step,
            skipped_steps: state.skipped_steps,
            seconds: start.elapsed().as_secs_f64(),
            termination,
            termination_reason: reason,
            elbo,
            quality,
            losses,
            elbos,
            state: Some(state),
            nuts: None,
            layout: model.layout(),
        },
        stop,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--lr-schedule cosine` puts a cosine over the step budget down to lr/100 on the
    /// optimizer; `constant` leaves the UCI settings' constant Adam.
    #[test]
    fn the_cosine_schedule_spans_the_budget() {
        let s = Protocol {
            batch_size: None,
            ..crate::tests::tiny_fit(700).1
        };
        let optimizer = |schedule| {
            let recipe = Recipe {
                method: Method::Smi,
                lr: Some(0.01),
                protocol: &s,
                seed: 0,
                schedule,
            };
            match method_settings(&recipe).unwrap() {
                MethodSettings::Stein(st) => st.optimizer,
                _ => unreachable!("SMI is a Stein method"),
            }
        };
        let cosine = optimizer(LrScheduleKind::Cosine);
        let OptimizerSettings::Adam { lr, schedule, .. } = cosine else {
            unreachable!("Adam")
        };
        assert_eq!(lr, 0.01);
        assert_eq!(schedule.decay, LrDecay::Cosine { steps: 700 });
        assert!((schedule.min_lr - 1e-4).abs() < 1e-18);
        assert_eq!(
            optimizer(LrScheduleKind::Constant),
            OptimizerSettings::adam(0.01)
        );
    }
}
