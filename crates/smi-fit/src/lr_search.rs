//! The learning-rate search of a fit without a fixed rate: every value of [`LR_GRID`] fitted
//! on the training part and scored on the validation part; the best is refitted.

use std::time::{Duration, Instant};

use super::*;
use crate::options::{FitOptions, RunControl};
use crate::progress::FitProgress;
use crate::train::{train, Limits, Recipe, Stop, Trained};

/// Everything a training run needs besides its model and limits.
pub(crate) struct Job<'a> {
    pub(crate) o: &'a FitOptions,
    pub(crate) control: &'a RunControl<'a>,
}

impl Job<'_> {
    /// The recipe of this job's method at `lr` under `s`.
    pub(crate) fn recipe<'s>(&self, lr: Option<f64>, s: &'s Protocol) -> Recipe<'s> {
        Recipe {
            method: self.o.method,
            lr,
            protocol: s,
            seed: self.o.seed,
            schedule: self.o.lr_schedule,
        }
    }

    /// [`train`] with progress labelled `label` (when the control shows progress).
    pub(crate) fn train(
        &self,
        label: &str,
        lr: Option<f64>,
        model: &Model,
        s: &Protocol,
        limits: Limits<'_>,
    ) -> Result<Trained> {
        let mut progress = FitProgress::new(label, self.control.progress_every);
        train(&self.recipe(lr, s), model.density(), limits, &mut progress)
    }
}

/// The validation score of each learning rate of the grid (`None`: not finite).
pub(crate) type GridScores = Vec<(f64, Option<f64>)>;

/// The learning-rate search: every grid value fitted on `tprep`'s training part and scored on
/// its validation part; returns the best and the grid's scores. Under a time limit T each fit
/// of the grid stops after T / (2 × grid size).
pub(crate) fn search_lr(
    job: &Job<'_>,
    spec: &Spec,
    tprep: &Prepared,
    ts: &Protocol,
) -> Result<(f64, GridScores)> {
    let (o, task, say) = (job.o, spec.task, job.control.messages);
    let interrupt = job.control.interrupt;
    let tmodel = Model::build(spec, tprep.x_train.clone(), &tprep.y_train)?;
    let share = job
        .control
        .max_time
        .map(|t| Duration::from_secs_f64(t.as_secs_f64() / (2 * LR_GRID.len()) as f64));
    let mut grid_scores = Vec::new();
    let (best, score) = smi::best_lr(
        &LR_GRID,
        |lr| -> Result<f64> {
            if interrupt.raised() {
                return Ok(f64::INFINITY);
            }
            let limits = Limits {
                deadline: share.map(|d| Instant::now() + d),
                interrupt,
                checkpoint: None,
                resume: None,
            };
            let t = job.train(&format!("lr {lr:e}"), Some(lr), &tmodel, ts, limits)?;
            if t.stop == Stop::Interrupted {
                return Ok(f64::INFINITY);
            }
            let m =
                validate(spec, tprep, &t.fit, o.draws, o.seed)?.context("no validation split")?;
            let v = match task {
                Task::Regression => m.rmse,
                Task::Classification => m.nll,
            }
            .unwrap_or(f64::INFINITY);
            if say {
                eprintln!(
                    "lr {lr:e}: validation {} {v:.4} ({} steps{})",
                    if task == Task::Regression {
                        "RMSE"
                    } else {
                        "NLL"
                    },
                    t.fit.steps,
                    if t.stop == Stop::TimeLimit {
                        ", stopped at its share of --max-time"
                    } else {
                        ""
                    }
                );
            }
            grid_scores.push((lr, finite(v)));
            Ok(v)
        },
        |lr, e| {
            if say {
                eprintln!("note: lr search lr={lr:e}: {e:#} (counted as infinite)");
            }
        },
    )?;
    if interrupt.raised() {
        bail!("interrupted during the learning-rate search; nothing was saved");
    }
    if say {
        eprintln!("chosen lr {best:e} (validation score {score:.4})");
    }
    Ok((best, grid_scores))
}
