//! `smi fit` from the command line to the saved model: options, data, learning rate, training
//! (with its time limit, checkpoints and Ctrl-C), validation and the model file.

use std::time::{Duration, Instant};

use super::checkpoint::{file_crc32, Meta, Paths, META_FORMAT};
use super::diagnostics::{describe_nuts, nuts_diagnostics};
use super::interrupt::Interrupt;
use super::progress::{human_seconds, FitProgress};
use super::train::{train, Limits, Stop, Trained};
use super::*;

/// S, the ELBO draws per particle of SMI, unless `--elbo-draws` says otherwise.
pub const DEFAULT_ELBO_DRAWS: usize = 10;

/// T, the likelihood temperature of an SMI regression, unless `--temperature` says otherwise:
/// the fit targets p(θ)·p(y | θ)^(1/T). Chosen by measurement (docs/calibration.md): at T = 1
/// the mean-field particles underfit and the learned noise absorbs the misfit (intervals too
/// wide, NLL up to 7 % behind a GP); at 0.3 the NLL matches or beats the GP; at 0.1–0.2 small
/// noisy sets overfit (the learned noise shrinks, the 90 % interval covers 70–82 %).
pub const DEFAULT_TEMPERATURE_REGRESSION: f64 = 0.3;

/// T of an SMI classifier unless `--temperature` says otherwise (docs/calibration.md): at
/// T = 1 the classifiers are underconfident (digits: ECE 0.10); 0.2 gave the lowest test NLL
/// on all four classification sets of the study (0.3 next), with ECE 0.014–0.035.
pub const DEFAULT_TEMPERATURE_CLASSIFICATION: f64 = 0.2;

/// T of a fit of `method` for `task` under `a`: `--temperature`, else the default of the task
/// for SMI (the method it was measured for) and 1 for the others.
pub(super) fn temperature(a: &FitArgs, method: Method, task: Task) -> f64 {
    a.temperature.unwrap_or(match (method, task) {
        (Method::Smi, Task::Regression) => DEFAULT_TEMPERATURE_REGRESSION,
        (Method::Smi, Task::Classification) => DEFAULT_TEMPERATURE_CLASSIFICATION,
        _ => 1.0,
    })
}

/// The options of `smi fit` after checking.
pub(super) struct Checked {
    pub(super) method: Method,
    /// `None` under `--hidden auto` (sized to the data by [`sizing::default_hidden`]).
    pub(super) hidden: Option<Vec<usize>>,
    /// `None` under `--lr auto`.
    pub(super) fixed_lr: Option<f64>,
}

pub(super) fn check_args(a: &FitArgs) -> Result<Checked> {
    let method: Method = a.method.parse().context("--method")?;
    let hidden = if a.hidden.trim().eq_ignore_ascii_case("auto") {
        None
    } else {
        Some(parse_hidden(&a.hidden)?)
    };
    for (flag, v) in [
        ("--particles", a.particles as u64),
        ("--max-steps", a.max_steps.unwrap_or(1)),
        ("--batch-size", a.batch_size as u64),
    ] {
        if v == 0 {
            bail!("{flag} must be at least 1");
        }
    }
    for (flag, v) in [
        ("--prior-scale", a.prior_scale),
        ("--temperature", a.temperature.unwrap_or(1.0)),
    ] {
        if !(v > 0.0 && v.is_finite()) {
            bail!("{flag} must be a positive number, got {v}");
        }
    }
    if a.draws < 2 {
        bail!("--draws must be at least 2");
    }
    let fixed_lr = if a.lr.trim().eq_ignore_ascii_case("auto") {
        None
    } else {
        let v: f64 = a
            .lr
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| *v > 0.0 && v.is_finite())
            .with_context(|| format!("--lr {:?}: expected a positive number or `auto`", a.lr))?;
        Some(v)
    };
    if let Some(v) = a.validation {
        if !(v > 0.0 && v < 1.0) {
            bail!("--validation must be a fraction in (0, 1), got {v}");
        }
    }
    if let Some(spec) = &a.guide {
        let guide = smi::GuideSettings::from_spec(spec).context("--guide")?;
        if !matches!(method, Method::Smi | Method::Ovi) || !guide.is_normal() {
            bail!(
                "--guide {spec}: the guide families normal, lowrank:R and fullrank are for smi \
                 and ovi (svgd, asvgd and map use point masses, nuts draws)"
            );
        }
    }
    if method == Method::Nuts && (a.max_time.is_some() || a.resume) {
        bail!(
            "--max-time and --resume apply to the variational methods; NUTS's budget is \
             --nuts-warmup and --nuts-draws"
        );
    }
    Ok(Checked {
        method,
        hidden,
        fixed_lr,
    })
}

/// The guide `--guide` names (`None`: the preset's); `check_args` has refused a bad name
/// before any fit.
pub(super) fn guide_of(a: &FitArgs) -> Option<smi::GuideSettings> {
    a.guide
        .as_deref()
        .and_then(|g| smi::GuideSettings::from_spec(g).ok())
}

/// The engine settings of a fit of `a` on `rows` training rows with the step budget
/// `max_steps` and `elbo_draws` ELBO draws (mini-batches only when `rows` exceeds the batch).
pub(super) fn unit_settings(
    a: &FitArgs,
    max_steps: u64,
    elbo_draws: usize,
    rows: usize,
) -> UnitSettings {
    UnitSettings {
        max_steps,
        num_particles: a.particles,
        elbo_draws,
        batch_size: (rows > a.batch_size).then_some(a.batch_size),
        init_radius: 0.1,
        early_stopping: !a.no_early_stop,
        nuts: NutsSettings {
            num_warmup: a.nuts_warmup,
            num_draws: a.nuts_draws,
            ..NutsSettings::uci()
        },
        attraction: Default::default(),
        defect: None,
        guide: guide_of(a),
        loss_temperature: 1.0,
        kernel: None,
    }
}

/// Reads the training data, reporting the rows `--drop-missing` dropped.
fn load(a: &FitArgs) -> Result<Data> {
    let table = read_table(&a.csv)?;
    let data = read_data(
        &table,
        &a.target,
        a.features.as_deref(),
        a.task,
        a.drop_missing,
    )?;
    if a.drop_missing {
        let lines = if data.dropped.is_empty() {
            String::new()
        } else {
            format!(
                " (lines {}{})",
                data.dropped
                    .iter()
                    .take(csv_input::SHOWN_ROWS)
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                if data.dropped.len() > csv_input::SHOWN_ROWS {
                    ", …"
                } else {
                    ""
                }
            )
        };
        eprintln!(
            "--drop-missing: dropped {} of {} rows with a missing or non-numeric value{lines}",
            data.dropped.len(),
            data.dropped.len() + data.rows(),
        );
    }
    if let (true, Some(c)) = (data.guessed, &data.classes) {
        if c.len() > 100 || 2 * c.len() > data.rows() {
            eprintln!(
                "note: the target {} is not numeric, so this fits a classifier with {} classes \
                 on {} rows; use --task regression if it holds numbers",
                show(&a.target),
                c.len(),
                data.rows()
            );
        }
    }
    Ok(data)
}

/// Everything a training run needs besides its model and limits.
pub(super) struct Job<'a> {
    pub(super) a: &'a FitArgs,
    pub(super) method: Method,
    pub(super) interrupt: &'a Interrupt,
    pub(super) progress_every: Duration,
}

impl Job<'_> {
    /// [`train`] with progress labelled `label`.
    fn train(
        &self,
        label: &str,
        lr: Option<f64>,
        model: &Model,
        s: &UnitSettings,
        limits: Limits<'_>,
    ) -> Result<Trained> {
        let mut progress = FitProgress::new(label, self.progress_every);
        train(
            self.method,
            lr,
            model.density(),
            s,
            self.a.seed,
            self.a.lr_schedule,
            limits,
            &mut progress,
        )
    }
}

/// The validation score of each learning rate of the grid (`None`: not finite).
pub(super) type GridScores = Vec<(f64, Option<f64>)>;

/// The learning-rate search of `--lr auto`: every grid value fitted on `tprep`'s training part
/// and scored on its validation part; returns the best and the grid's scores. Under
/// `--max-time T` each fit of the grid stops after T / (2 × grid size).
pub(super) fn search_lr(
    job: &Job<'_>,
    spec: &Spec,
    tprep: &Prepared,
    ts: &UnitSettings,
) -> Result<(f64, GridScores)> {
    let (a, task) = (job.a, spec.task);
    let tmodel = Model::build(spec, tprep.x_train.clone(), &tprep.y_train)?;
    let share = a
        .max_time
        .map(|t| Duration::from_secs_f64(t / (2 * LR_GRID.len()) as f64));
    let mut grid_scores = Vec::new();
    let (best, score) = smi::best_lr(
        &LR_GRID,
        |lr| -> Result<f64> {
            if job.interrupt.raised() {
                return Ok(f64::INFINITY);
            }
            let limits = Limits {
                deadline: share.map(|d| Instant::now() + d),
                interrupt: job.interrupt,
                checkpoint: None,
                resume: None,
            };
            let t = job.train(&format!("lr {lr:e}"), Some(lr), &tmodel, ts, limits)?;
            if t.stop == Stop::Interrupted {
                return Ok(f64::INFINITY);
            }
            let m =
                validate(spec, tprep, &t.fit, a.draws, a.seed)?.context("no validation split")?;
            let v = match task {
                Task::Regression => m.rmse,
                Task::Classification => m.nll,
            }
            .unwrap_or(f64::INFINITY);
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
            grid_scores.push((lr, finite(v)));
            Ok(v)
        },
        |lr, e| eprintln!("note: lr search lr={lr:e}: {e:#} (counted as infinite)"),
    )?;
    if job.interrupt.raised() {
        bail!("interrupted during the learning-rate search; nothing was saved");
    }
    eprintln!("chosen lr {best:e} (validation score {score:.4})");
    Ok((best, grid_scores))
}

/// The model file's `settings` of a fit of `a` at likelihood temperature `temperature` with
/// the learning rate `lr` = (rate, mode, grid scores) and the engine settings `s`.
pub(super) fn settings_record(
    a: &FitArgs,
    temperature: f64,
    (lr, lr_mode, lr_grid): (Option<f64>, String, GridScores),
    s: &UnitSettings,
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
        seed: a.seed,
        validation: a.validation,
        nuts_warmup: a.nuts_warmup,
        nuts_draws: a.nuts_draws,
        temperature: Some(temperature),
        lr_schedule: a.lr_schedule,
    }
}

/// The model file's record of a finished (or stopped) fit of `rows` training and
/// `validation_rows` validation rows, `seconds` long in all; NUTS diagnostics included.
pub(super) fn training_record(
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

/// What `smi fit` prints after training.
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
}

/// Runs `smi fit`; says how the fit ended ([`Stop::Interrupted`]: the caller should exit
/// with [`interrupt::INTERRUPTED_STATUS`]).
///
/// # Errors
/// Bad options or data, a failed fit, a model or checkpoint that cannot be written.
pub fn run(a: &FitArgs) -> Result<Stop> {
    let Checked {
        method,
        hidden,
        fixed_lr,
    } = check_args(a)?;
    check_writable(&a.save, "--save")?;
    let ckpt = Paths::of(&a.save);
    let resumed = if a.resume {
        let meta = ckpt.read_meta()?;
        if meta.method != method.name() {
            bail!(
                "--resume: the checkpoint {} is of a {} fit, not {method} (give --method {})",
                ckpt.meta.display(),
                meta.method,
                meta.method
            );
        }
        if let (Some(v), "fixed") = (fixed_lr, meta.lr_mode.as_str()) {
            if meta.lr != Some(v) {
                bail!(
                    "--resume: the checkpoint {} is of a fit with --lr {:e}, not {v:e} (resume \
                     with the options of that fit)",
                    ckpt.meta.display(),
                    meta.lr.unwrap_or(f64::NAN)
                );
            }
        }
        Some(meta)
    } else {
        None
    };
    // Read first: its errors say what is wrong with the file.
    let data = load(a)?;
    let csv_crc32 = file_crc32(&a.csv)?;
    if let Some(m) = &resumed {
        if m.csv_crc32 != csv_crc32 {
            bail!(
                "--resume: {} changed since the checkpoint {} was written (a resumed fit must \
                 see the same data)",
                a.csv.display(),
                ckpt.meta.display()
            );
        }
    }

    let t = temperature(a, method, data.task);
    if let Some(m) = &resumed {
        m.check_resume(&ckpt.meta, t, a.lr_schedule)?;
    }
    let Data {
        features,
        x,
        y,
        classes,
        task,
        ..
    } = data;
    let cols = features.len();
    let n = y.len();
    let all: Vec<usize> = (0..n).collect();
    let split = |frac: f64| -> Result<(Vec<usize>, Vec<usize>)> {
        train_test_split_indices(n, frac, 10).with_context(|| {
            format!(
                "--validation {frac}: cannot hold out {frac} of {n} rows for validation and \
                 keep training rows (too few rows?)"
            )
        })
    };
    let (train_rows, val) = match a.validation {
        Some(v) => {
            let (tr, va) = split(v)?;
            (tr, Some(va))
        }
        None => (all, None),
    };

    // Model and engine settings.
    let activation = match a.activation {
        Some(ActivationArg::Relu) => Activation::Relu,
        Some(ActivationArg::Tanh) => Activation::Tanh,
        None if task == Task::Regression => Activation::Relu,
        None => Activation::Tanh,
    };
    let out_dim = classes.as_ref().map_or(1, Vec::len);
    let hidden = hidden.unwrap_or_else(|| {
        let h = sizing::default_hidden(train_rows.len());
        let widths: Vec<String> = h.iter().map(usize::to_string).collect();
        eprintln!(
            "network: hidden layers {} for {} training rows (--hidden auto; --hidden sets them)",
            widths.join(","),
            train_rows.len()
        );
        h
    });
    let mut sizes = vec![cols];
    sizes.extend(&hidden);
    sizes.push(out_dim);
    let spec = Spec {
        task,
        sizes,
        activation,
        prior_scale: a.prior_scale,
        likelihood_weight: 1.0 / t,
    };
    // The options that define the model, as resolved: a resumed fit must have the same.
    let model_options: std::collections::BTreeMap<String, String> = [
        ("--target", a.target.clone()),
        ("--features", features.join(",")),
        (
            "--activation",
            match activation {
                Activation::Relu => "relu",
                Activation::Tanh => "tanh",
            }
            .to_string(),
        ),
        (
            "--hidden",
            hidden
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(","),
        ),
        ("--prior-scale", a.prior_scale.to_string()),
        (
            "--target-scaling",
            match a.target_scaling {
                TargetScaling::Standardize => "standardize",
                TargetScaling::None => "none",
            }
            .to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    if let Some(m) = &resumed {
        m.check_model_options(&ckpt.meta, &model_options)?;
    }
    let elbo_draws = match &resumed {
        Some(m) => m.elbo_draws,
        None => a.elbo_draws.unwrap_or(DEFAULT_ELBO_DRAWS),
    };
    if elbo_draws == 0 {
        bail!("--elbo-draws must be at least 1");
    }
    let max_steps = match a.max_steps {
        Some(s) => s,
        None => {
            let draws = sizing::draws_per_step(method, a.particles, elbo_draws);
            let rows = train_rows.len().min(a.batch_size);
            let dim = network_dim(&spec.sizes)
                .unwrap_or(usize::MAX)
                .saturating_add(usize::from(task == Task::Regression));
            let s = sizing::default_max_steps(draws, rows, dim);
            if method != Method::Nuts {
                eprintln!(
                    "step budget {s} (sized for about {:.0} s: {draws} draws × {rows} rows × {dim} \
                     parameters a step; --max-steps sets it)",
                    sizing::TARGET_SECONDS
                );
            }
            s
        }
    };
    let search = fixed_lr.is_none() && method != Method::Nuts && resumed.is_none();
    check_fit_memory(
        a,
        method,
        &spec.sizes,
        elbo_draws,
        train_rows.len(),
        val.as_ref().map_or(n / 10, Vec::len),
        val.is_some() || search,
    )?;
    let scale_y = task == Task::Regression && a.target_scaling == TargetScaling::Standardize;
    let prep = prepare(&x, &y, cols, &train_rows, val.as_deref(), scale_y)?;
    let settings_for = |rows: usize| unit_settings(a, max_steps, elbo_draws, rows);
    // From here on, Ctrl-C stops a variational fit at the next step and saves what it has.
    let interrupt = if method == Method::Nuts {
        Interrupt::never()
    } else {
        Interrupt::install()?
    };
    let job = Job {
        a,
        method,
        interrupt: &interrupt,
        progress_every: Duration::from_secs_f64(a.progress_every),
    };
    let started = Instant::now();

    // Learning rate.
    let (lr, lr_mode, grid_scores) = if method == Method::Nuts {
        (None, "none".to_string(), Vec::new())
    } else if let Some(m) = &resumed {
        (m.lr, m.lr_mode.clone(), m.lr_grid.clone())
    } else if let Some(v) = fixed_lr {
        (Some(v), "fixed".into(), Vec::new())
    } else {
        // Tune on the validation split (or a 10 % hold-out of the training rows).
        let tprep = match &val {
            Some(_) => prepare(&x, &y, cols, &train_rows, val.as_deref(), scale_y)?,
            None => {
                let (tr, va) = split(0.1)?;
                prepare(&x, &y, cols, &tr, Some(&va), scale_y)?
            }
        };
        let ts = settings_for(tprep.y_train.len());
        let (best, grid) = search_lr(&job, &spec, &tprep, &ts)?;
        (Some(best), "auto".into(), grid)
    };

    // Final fit.
    let model = Model::build(&spec, prep.x_train.clone(), &prep.y_train)?;
    let settings = settings_for(prep.y_train.len());
    let mut meta = Meta {
        format: META_FORMAT.into(),
        method: method.name().into(),
        csv_crc32,
        lr,
        lr_mode: lr_mode.clone(),
        lr_grid: grid_scores.clone(),
        elbo_draws,
        seconds: resumed.as_ref().map_or(0.0, |m| m.seconds),
        temperature: Some(t),
        lr_schedule: Some(a.lr_schedule),
        model_options: Some(model_options),
    };
    let resume = match &resumed {
        Some(_) => Some(ckpt.read_state(
            method,
            lr,
            model.density(),
            &settings,
            a.seed,
            a.lr_schedule,
        )?),
        None => None,
    };
    let checkpointing = method != Method::Nuts;
    if checkpointing {
        if resume.is_none() && ckpt.exist() {
            eprintln!(
                "note: replacing the checkpoint {} of an earlier fit (--resume continues it)",
                ckpt.state.display()
            );
        }
        ckpt.write_meta(&meta)?;
    }
    if let Some(s) = &resume {
        eprintln!(
            "resuming from {} at step {} of {}",
            ckpt.state.display(),
            s.step,
            max_steps
        );
    }
    let limits = Limits {
        deadline: a.max_time.map(|t| started + Duration::from_secs_f64(t)),
        interrupt: &interrupt,
        checkpoint: checkpointing.then(|| {
            (
                ckpt.state.as_path(),
                (a.checkpoint_every > 0.0).then(|| Duration::from_secs_f64(a.checkpoint_every)),
            )
        }),
        resume,
    };
    let Trained { fit: out, stop } = job
        .train(&format!("fit {method}"), lr, &model, &settings, limits)
        .with_context(|| format!("fitting {method}"))?;
    let seconds = meta.seconds + out.seconds;
    report_training(method, &out, stop, seconds);
    let nuts = out.nuts.as_ref().map(nuts_diagnostics);
    if let Some(d) = &nuts {
        eprintln!("NUTS: {}", describe_nuts(d));
    }
    // The run saved its final state to the checkpoint before returning, so before validation
    // and saving; a finished fit removes it only once the model is saved: a kill at any moment
    // leaves the model or a checkpoint that resumes.
    if checkpointing && out.state.is_some() {
        meta.seconds = seconds;
        ckpt.write_meta(&meta)?;
    }
    let validation = if stop == Stop::Interrupted {
        None
    } else {
        validate(&spec, &prep, &out, a.draws, a.seed)?
    };
    if let Some(m) = &validation {
        eprintln!("validation: {}", predict::describe(m));
    }

    // Save.
    let mut h = header_stub(&spec, &prep);
    h.method = method.name().into();
    h.target = a.target.clone();
    h.features = features;
    h.classes = classes;
    h.settings = settings_record(a, t, (lr, lr_mode, grid_scores), &settings);
    h.training = training_record(
        &out,
        stop,
        seconds,
        prep.y_train.len(),
        val.as_ref().map_or(0, Vec::len),
    );
    h.validation = validation;
    let file = ModelFile::new(h, &out.posterior, model.density().dim());
    file.save(&a.save)?;
    if checkpointing && stop == Stop::Finished {
        ckpt.remove()?;
    }
    match stop {
        Stop::Finished => eprintln!("saved the model to {}", a.save.display()),
        _ => eprintln!(
            "saved the model as it is after {} of {} steps ({} of training) to {}; the \
             checkpoint {} continues it: rerun the same command with --resume",
            out.steps,
            max_steps,
            human_seconds(seconds),
            a.save.display(),
            ckpt.state.display()
        ),
    }
    Ok(stop)
}
