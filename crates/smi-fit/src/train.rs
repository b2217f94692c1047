//! The training loop of `smi fit`: the engine of a variational method run in short stretches, so
//! that a time limit (`--max-time`), Ctrl-C and periodic checkpoints take effect between steps.
//! The stretches change nothing in the result: every random choice lives in the engine's
//! [`State`], so a fit run in stretches, or stopped and resumed, takes the same steps as one
//! run straight through.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use smi::{
    Fit, LogDensity, LrDecay, LrSchedule, Method, MethodSettings, Observer, OptimizerSettings,
    Posterior, Progress, RunSettings, State, Termination,
};
use smi_experiments::uci::{fit as fit_method, UnitSettings};

use super::interrupt::Interrupt;
use super::LrScheduleArg;

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

/// The final learning rate of [`LrScheduleArg::Cosine`] as a fraction of the base rate.
pub const COSINE_FLOOR: f64 = 0.01;

/// The engine settings of `method` at `lr` under `s` with `seed` and the learning-rate
/// `schedule` (a cosine spans `s.max_steps`).
///
/// # Errors
/// Invalid settings.
pub fn method_settings(
    method: Method,
    lr: Option<f64>,
    s: &UnitSettings,
    seed: u64,
    schedule: LrScheduleArg,
) -> Result<MethodSettings> {
    let settings = s.method_settings(method, lr, seed)?;
    Ok(match (schedule, lr) {
        (LrScheduleArg::Cosine, Some(lr)) if method != Method::Nuts => {
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

/// Fits `method` at `lr` to `model` under `s` with `seed` and the learning-rate `schedule`,
/// reporting to `observer` and stopping at the `limits`. NUTS runs in one go (it cannot be
/// stopped midway; Ctrl-C ends the process as usual).
///
/// # Errors
/// Invalid settings, the engine's or the model's errors, a checkpoint that cannot be written.
#[allow(clippy::too_many_arguments)]
pub fn train(
    method: Method,
    lr: Option<f64>,
    model: &dyn LogDensity,
    s: &UnitSettings,
    seed: u64,
    schedule: LrScheduleArg,
    mut limits: Limits<'_>,
    observer: &mut dyn Observer,
) -> Result<Trained> {
    if method == Method::Nuts {
        return Ok(Trained {
            fit: fit_method(method, lr, model, s, seed, observer)?,
            stop: Stop::Finished,
        });
    }
    let engine = method_settings(method, lr, s, seed, schedule)?.build(model)?;
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
    let (mut reason, mut elbo) = (None, None);
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
        // The verdict of each stretch stands until the next: the last one is the run's.
        (termination, reason, elbo) = (r.termination, r.reason, r.elbo);
        if matches!(
            r.termination,
            Termination::Converged | Termination::EarlyStopped
        ) {
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
        let s = UnitSettings {
            max_steps: 700,
            num_particles: 2,
            elbo_draws: 2,
            batch_size: None,
            init_radius: 0.1,
            early_stopping: false,
            nuts: Default::default(),
            attraction: Default::default(),
            defect: None,
            guide: None,
            loss_temperature: 1.0,
        };
        let optimizer =
            |schedule| match method_settings(Method::Smi, Some(0.01), &s, 0, schedule).unwrap() {
                MethodSettings::Stein(st) => st.optimizer,
                _ => unreachable!("SMI is a Stein method"),
            };
        let cosine = optimizer(LrScheduleArg::Cosine);
        let OptimizerSettings::Adam { lr, schedule, .. } = cosine else {
            unreachable!("Adam")
        };
        assert_eq!(lr, 0.01);
        assert_eq!(schedule.decay, LrDecay::Cosine { steps: 700 });
        assert!((schedule.min_lr - 1e-4).abs() < 1e-18);
        assert_eq!(
            optimizer(LrScheduleArg::Constant),
            OptimizerSettings::adam(0.01)
        );
    }
}
