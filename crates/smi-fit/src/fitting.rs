//! A fit from its source to the model file: load → plan → learning rate → train → validate,
//! with the checkpoint of a resumable fit; [`Fitted::save`] writes the model and retires the
//! checkpoint.

use std::path::Path;
use std::time::Instant;

use super::*;
use crate::checkpoint::{Meta, Paths, META_FORMAT};
use crate::diagnostics::{describe_nuts, nuts_diagnostics};
use crate::lr_search::{search_lr, GridScores, Job};
use crate::options::{FitOptions, RunControl};
use crate::plan::{plan, split, Plan};
use crate::source::{load, Source};
use crate::train::{Limits, Stop, Trained};

/// A finished (or stopped) fit: the model file to save and how the training ended.
pub struct Fitted {
    /// The model, as `smi fit --save` writes it.
    pub file: ModelFile,
    /// Why the training ended ([`Stop::Interrupted`]: a command should exit with
    /// [`INTERRUPTED_STATUS`]).
    pub stop: Stop,
    /// The steps of a stopped fit and its budget, for messages.
    pub steps: (u64, u64),
    /// Seconds trained, over every run of a resumed fit.
    pub seconds: f64,
    /// The checkpoint of a fit that keeps one.
    checkpoint: Option<Paths>,
}

impl Fitted {
    /// Saves the model to `path` (atomically, synced); a finished fit then removes its
    /// checkpoint, so a kill at any moment leaves the model or a checkpoint that resumes.
    ///
    /// # Errors
    /// A model or checkpoint file that cannot be written or removed.
    pub fn save(&self, path: &Path) -> Result<()> {
        self.file.save(path)?;
        if let (Some(c), Stop::Finished) = (&self.checkpoint, self.stop) {
            c.remove()?;
        }
        Ok(())
    }

    /// The checkpoint files of a fit that keeps one.
    pub fn checkpoint(&self) -> Option<&Paths> {
        self.checkpoint.as_ref()
    }
}

/// The model file's `settings` of a fit of `o` under `plan` with the learning rate `lr` =
/// (rate, mode, grid scores) and the engine settings `s`.
fn settings_record(
    o: &FitOptions,
    plan: &Plan,
    (lr, lr_mode, lr_grid): (Option<f64>, String, GridScores),
    s: &Protocol,
) -> Settings {
    Settings {
        lr,
        lr_mode,
        lr_grid,
        max_steps: s.max_steps,
        particles: s.num_particles,
        elbo_draws: s.elbo_draws,
        batch_size: s.batch_size,
        early_stopping: s.early_stopping,
        init_radius: s.init_radius,
        seed: o.seed,
        validation: o.validation,
        nuts_warmup: o.nuts_warmup,
        nuts_draws: o.nuts_draws,
        temperature: Some(plan.temperature),
        lr_schedule: o.lr_schedule,
    }
}

/// The model file's record of a finished (or stopped) fit of `rows` training and
/// `validation_rows` validation rows, `seconds` long in all; NUTS diagnostics included.
fn training_record(
    fit: &Fit,
    stop: Stop,
    seconds: f64,
    rows: usize,
    validation_rows: usize,
) -> Training {
    Training {
        rows,
        validation_rows,
        steps: fit.steps,
        seconds,
        early_stopped: fit.early_stopped(),
        final_loss: fit.final_loss().and_then(finite),
        stopped: stop.name().map(String::from),
        nuts: fit.nuts.as_ref().map(nuts_diagnostics),
    }
}

/// What a fit prints after training.
fn report_training(method: Method, out: &Fit, stop: Stop, seconds: f64) {
    eprintln!(
        "{method}: {} steps in {:.1} s{}{}{}",
        out.steps,
        seconds,
        if out.early_stopped() {
            " (stopped early on the force norm)"
        } else {
            ""
        },
        match stop {
            Stop::Finished => "",
            Stop::TimeLimit => " (stopped at --max-time)",
            Stop::Interrupted => " (interrupted)",
        },
        out.final_loss()
            .map_or_else(String::new, |l| format!(", last loss {l:.4}"))
    );
    // The termination, the ELBO ± its Monte Carlo se, k̂ and every warning (NUTS's own
    // diagnostics follow separately).
    if out.nuts.is_none() {
        for line in out.report() {
            eprintln!("{line}");
        }
    }
    if let Some(d) = out.nuts.as_ref().map(nuts_diagnostics) {
        eprintln!("NUTS: {}", describe_nuts(&d));
    }
}

/// The checkpoint a resumed fit continues, checked against `o` before the data is read.
fn read_resumed(o: &FitOptions, ckpt: &Paths) -> Result<Meta> {
    let meta = ckpt.read_meta()?;
    if meta.method != o.method.name() {
        bail!(
            "--resume: the checkpoint {} is of a {} fit, not {} (give --method {})",
            ckpt.meta.display(),
            meta.method,
            o.method,
            meta.method
        );
    }
    if let (Some(v), "fixed") = (o.lr, meta.lr_mode.as_str()) {
        if meta.lr != Some(v) {
            bail!(
                "--resume: the checkpoint {} is of a fit with --lr {:e}, not {v:e} (resume with \
                 the options of that fit)",
                ckpt.meta.display(),
                meta.lr.unwrap_or(f64::NAN)
            );
        }
    }
    Ok(meta)
}

/// Fits a Bayesian network to the table of `source` with the options `o`, training as
/// `control` says; returns the model file (not yet saved: [`Fitted::save`]) and how the
/// training ended. A stopped fit (time limit, interrupt) keeps the model as it is; with
/// checkpoints, `<save>.ckpt` continues it.
///
/// # Errors
/// Bad options or data, a failed fit, a checkpoint that cannot be read or written.
pub fn fit(source: &Source<'_>, o: &FitOptions, control: &RunControl<'_>) -> Result<Fitted> {
    o.check()?;
    let say = control.messages;
    let variational = o.method != Method::Nuts;
    let resuming = control.checkpoint.as_ref().is_some_and(|c| c.resume);
    if !variational && (control.max_time.is_some() || resuming) {
        bail!(
            "--max-time and --resume apply to the variational methods; NUTS's budget is \
             --nuts-warmup and --nuts-draws"
        );
    }
    let ckpt = control
        .checkpoint
        .as_ref()
        .filter(|_| variational)
        .map(|c| Paths::of(&c.save));
    let resumed = match (&ckpt, resuming) {
        (Some(c), true) => Some(read_resumed(o, c)?),
        _ => None,
    };

    // Load: read first, so that its errors say what is wrong with the data.
    let data = load(source, say, ckpt.is_some())?;
    let checksum = data.checksum.unwrap_or_default();
    if let (Some(m), Some(c)) = (&resumed, &ckpt) {
        if m.csv_crc32 != checksum {
            let what = match source {
                Source::Csv(csv) => csv.path.display().to_string(),
                Source::Arrays(_) => "the data".into(),
            };
            bail!(
                "--resume: {what} changed since the checkpoint {} was written (a resumed fit \
                 must see the same data)",
                c.meta.display()
            );
        }
    }

    // Plan.
    let plan = plan(&data, o, resumed.as_ref(), say)?;
    if let (Some(m), Some(c)) = (&resumed, &ckpt) {
        m.check_resume(&c.meta, plan.temperature, o.lr_schedule)?;
        m.check_model_options(&c.meta, &plan.model_options)?;
    }
    let cols = data.features.len();
    let (x, y, spec) = (&data.x, &data.y, &plan.spec);
    let val = plan.validation_rows.as_deref();
    let prep = prepare(x, y, cols, &plan.train_rows, val, plan.scale_y)?;
    let job = Job { o, control };
    let started = Instant::now();

    // Learning rate.
    let (lr, lr_mode, grid_scores) = if !variational {
        (None, "none".to_string(), Vec::new())
    } else if let Some(m) = &resumed {
        (m.lr, m.lr_mode.clone(), m.lr_grid.clone())
    } else if let Some(v) = o.lr {
        (Some(v), "fixed".into(), Vec::new())
    } else {
        // Tune on the validation split (the prepared one), or a 10 % hold-out of the training
        // rows.
        let holdout;
        let tprep = match val {
            Some(_) => &prep,
            None => {
                let (tr, va) = split(data.rows(), 0.1)?;
                holdout = prepare(x, y, cols, &tr, Some(&va), plan.scale_y)?;
                &holdout
            }
        };
        let ts = plan.protocol(o, tprep.y_train.len());
        let (best, grid) = search_lr(&job, spec, tprep, &ts)?;
        (Some(best), "auto".into(), grid)
    };

    // Train.
    let model = Model::build(spec, prep.x_train.clone(), &prep.y_train)?;
    let settings = plan.protocol(o, prep.y_train.len());
    let meta = Meta {
        format: META_FORMAT.into(),
        method: o.method.name().into(),
        csv_crc32: checksum,
        lr,
        lr_mode: lr_mode.clone(),
        lr_grid: grid_scores.clone(),
        elbo_draws: plan.elbo_draws,
        temperature: Some(plan.temperature),
        lr_schedule: Some(o.lr_schedule),
        model_options: Some(plan.model_options.clone()),
    };
    let mut files = ckpt.as_ref().map(|c| c.files(&meta)).transpose()?;
    let resume = match (&resumed, &ckpt, files.as_mut()) {
        (Some(_), Some(c), Some(f)) => {
            Some(c.read_state(&job.recipe(lr, &settings), model.density(), f)?)
        }
        _ => None,
    };
    if let Some(c) = &ckpt {
        if resume.is_none() && c.exist() {
            if say {
                eprintln!(
                    "note: replacing the checkpoint {} of an earlier fit (--resume continues it)",
                    c.state.display()
                );
            }
            c.remove()?;
        }
        if let (Some(s), true) = (&resume, say) {
            eprintln!(
                "resuming from {} at step {} of {}",
                c.state.display(),
                s.step,
                plan.max_steps
            );
        }
    }
    let earlier = files.as_ref().map_or(0.0, |f| f.earlier().seconds);
    let every = control.checkpoint.as_ref().and_then(|c| c.every);
    let limits = Limits {
        deadline: control.max_time.map(|t| started + t),
        interrupt: control.interrupt,
        checkpoint: files.as_mut().map(|f| (f, every)),
        resume,
    };
    let label = format!("fit {}", o.method);
    let Trained { fit: out, stop } = job
        .train(&label, lr, &model, &settings, limits)
        .with_context(|| format!("fitting {}", o.method))?;
    let seconds = earlier + out.seconds;
    if say {
        report_training(o.method, &out, stop, seconds);
    }

    // Validate.
    let validation = if stop == Stop::Interrupted {
        None
    } else {
        validate(spec, &prep, &out, o.draws, o.seed)?
    };
    if let (Some(m), true) = (&validation, say) {
        eprintln!("validation: {}", predict::describe(m));
    }

    // The model file.
    let mut h = header_stub(spec, &prep);
    h.method = o.method.name().into();
    h.target = data.target.clone();
    h.features = data.features.clone();
    h.classes = data.classes.clone();
    h.settings = settings_record(o, &plan, (lr, lr_mode, grid_scores), &settings);
    h.training = training_record(
        &out,
        stop,
        seconds,
        prep.y_train.len(),
        plan.validation_rows.as_ref().map_or(0, Vec::len),
    );
    h.validation = validation;
    let file = ModelFile::new(h, &out.posterior, model.density().dim());
    // What saving checks (finite parameters, a consistent header), without encoding.
    file.check()?;
    Ok(Fitted {
        file,
        stop,
        steps: (out.steps, plan.max_steps),
        seconds,
        checkpoint: ckpt,
    })
}
