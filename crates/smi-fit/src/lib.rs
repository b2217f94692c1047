//! # smi-fit — Bayesian neural networks on a user's own CSV file
//!
//! The library behind `smi fit`, `smi predict` and `smi inspect`: calibrated Bayesian-network
//! regression and classification on a CSV table, through the method layer of `smi`.
//!
//! `fit` reads the CSV ([`csv_input`]), standardises the inputs (and regression targets) with
//! the training statistics, fits one of the six methods with the UCI benchmark's engine code
//! ([`smi_experiments::uci::fit`], docs/algorithms.md §7.3 defaults), optionally reports validation metrics, and saves a
//! versioned model file ([`model_file`]). `predict` ([`predict`]) writes per-row predictions;
//! `inspect` ([`inspect`]) describes a model.

#![deny(missing_docs)]

pub mod csv_input;
pub mod inspect;
pub mod limits;
pub mod model_file;
pub mod predict;
pub mod scaling;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use smi::{LogDensity, Matrix, NutsSettings};
use smi_data::train_test_split_indices;
use smi_models::{Activation, BnnClassifier, BnnRegression, Mlp, Noise};

use csv_input::{class_map, read_table, show, Table};
use limits::Budget;
use model_file::{
    finite, network_dim, Architecture, Header, Metrics, ModelFile, Payload, PayloadKind, Scaler,
    Settings, Task, Training, FORMAT_VERSION, MAGIC,
};
use smi::{Fit, Method, LR_GRID};
use smi_experiments::progress::Bar;
use smi_experiments::uci::{fit as fit_method, UnitSettings};

pub use inspect::InspectArgs;
pub use predict::PredictArgs;

/// The hidden-layer nonlinearity on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ActivationArg {
    /// max(0, x) (the UCI networks).
    Relu,
    /// tanh (the MNIST networks).
    Tanh,
}

/// Whether regression targets are standardised for fitting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetScaling {
    /// (y − mean) / std with training statistics; predictions are mapped back.
    Standardize,
    /// Raw targets (as `smi reproduce uci` fits them).
    None,
}

/// Options of `smi fit`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_long_help = FIT_HELP)]
pub struct FitArgs {
    /// Training data: a CSV file with a header row; feature cells must be numbers.
    #[arg(long)]
    pub csv: PathBuf,
    /// The column to predict.
    #[arg(long)]
    pub target: String,
    /// Feature columns, comma-separated [default: every column but the target].
    #[arg(long, value_delimiter = ',')]
    pub features: Option<Vec<String>>,
    /// Regression or classification [default: regression when at least 90 % of the target's
    /// cells are numbers (a numeric target with a few bad cells is an error naming them),
    /// classification otherwise]. `--task classification` takes numbers as class labels.
    #[arg(long, value_enum)]
    pub task: Option<Task>,
    /// Drop the rows with a missing or non-numeric value (an empty, text, NaN or infinite
    /// feature cell or regression target; an empty class label) instead of failing; says how
    /// many were dropped.
    #[arg(long)]
    pub drop_missing: bool,
    /// Inference method: smi, svgd, asvgd, ovi, map or nuts.
    #[arg(long, default_value = "smi")]
    pub method: String,
    /// Particles m (SMI/SVGD/ASVGD).
    #[arg(long, default_value_t = 5)]
    pub particles: usize,
    /// Hidden-layer widths, comma-separated.
    #[arg(long, default_value = "50,50")]
    pub hidden: String,
    /// Hidden-layer nonlinearity [default: relu for regression, tanh for classification].
    #[arg(long, value_enum)]
    pub activation: Option<ActivationArg>,
    /// Step budget (Stein methods stop earlier on the force norm; OVI/MAP run exactly this).
    #[arg(long, default_value_t = 20_000)]
    pub max_steps: u64,
    /// Adam's learning rate, or `auto`: the grid 5e-1 … 5e-6, each fitted on the training part
    /// and scored on the validation split (regression: RMSE of the predictive mean;
    /// classification: NLL); the best is refitted.
    #[arg(long, default_value = "5e-3")]
    pub lr: String,
    /// Seed of the fit (and, by default, of `smi predict`'s draws).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Hold out this fraction of the rows (sklearn's split, random_state 10) and report
    /// validation metrics; `--lr auto` without it tunes on a 10 % hold-out and refits on all rows.
    #[arg(long)]
    pub validation: Option<f64>,
    /// Where to write the model.
    #[arg(long)]
    pub save: PathBuf,
    /// ELBO draws S per particle (SMI) [default: 100; classification with more than 10 000
    /// rows: 20].
    #[arg(long)]
    pub elbo_draws: Option<usize>,
    /// Mini-batch rows (used when the training set is larger).
    #[arg(long, default_value_t = 100)]
    pub batch_size: usize,
    /// Turn off early stopping on the Stein force norm.
    #[arg(long)]
    pub no_early_stop: bool,
    /// Standardise regression targets for fitting (predictions are mapped back).
    #[arg(long, value_enum, default_value = "standardize")]
    pub target_scaling: TargetScaling,
    /// Predictive draws for the validation metrics.
    #[arg(long, default_value_t = 1000)]
    pub draws: usize,
    /// NUTS warm-up iterations.
    #[arg(long, default_value_t = 500)]
    pub nuts_warmup: usize,
    /// NUTS draws kept (saved in the model file).
    #[arg(long, default_value_t = 1000)]
    pub nuts_draws: usize,
}

const FIT_HELP: &str = "\
Model (docs/algorithms.md §7.3): in → hidden… → out network with N(0, 1) priors on all weights and biases. \
Regression: y ~ N(y_loc, 1/√prec), prec ~ Gamma(1, 0.1) learned (the UCI model), on \
standardised inputs and targets. Classification: softmax over the target's classes (the \
class map is saved with the model). Methods use the UCI benchmark's settings: Adam, \
Uniform(−0.1, 0.1) initialisation, mini-batches of --batch-size rows with N/b scaling when the \
training set is larger, SMI with m Normal particles and S ELBO draws, SVGD/ASVGD with m point \
particles, early stopping on ‖φ‖ (window 35, factor 2), NUTS on the full data.

Example:
  smi fit --csv examples/data/regression_train.csv --target y --validation 0.1 --save m.smi
  smi predict --model m.smi --csv examples/data/regression_test.csv --out pred.csv
  smi inspect --model m.smi";

/// Training data after the split and standardisation.
struct Prepared {
    x_train: Matrix,
    x_val: Option<Matrix>,
    /// Regression: standardised (or raw) targets; classification: class indices as f64.
    y_train: Vec<f64>,
    /// Validation targets in original units (regression) or class indices.
    y_val: Option<Vec<f64>>,
    x_scaler: Scaler,
    y_scaler: Option<Scaler>,
}

fn gather(x: &[f64], cols: usize, idx: &[usize]) -> Vec<f64> {
    idx.iter()
        .flat_map(|&r| x[r * cols..(r + 1) * cols].iter().copied())
        .collect()
}

/// Standardises `x` (row-major) with `s`; `what` names the rows in the error.
fn standardise(s: &Scaler, x: &mut [f64], what: &str) -> Result<()> {
    s.apply(x).map_err(|(r, c)| {
        anyhow!(
            "cannot standardise {what}: row {}, column {} lies too far from the training mean \
             (mean {}, std {})",
            r + 1,
            c + 1,
            s.mean[c],
            s.std[c]
        )
    })
}

/// Splits off `val` rows (if any) and standardises with the training rows' statistics
/// ([`Scaler::fit`], which cannot overflow).
fn prepare(
    x: &[f64],
    y: &[f64],
    cols: usize,
    train: &[usize],
    val: Option<&[usize]>,
    scale_y: bool,
) -> Result<Prepared> {
    let mut xt = gather(x, cols, train);
    let x_scaler = Scaler::fit(&xt, train.len(), cols).context("the features")?;
    standardise(&x_scaler, &mut xt, "the training features")?;
    let mut yt: Vec<f64> = train.iter().map(|&r| y[r]).collect();
    let y_scaler = if scale_y {
        let s = Scaler::fit(&yt, yt.len(), 1).context("the target")?;
        standardise(&s, &mut yt, "the training targets")?;
        Some(s)
    } else {
        None
    };
    let (x_val, y_val) = match val {
        Some(v) => {
            let mut xv = gather(x, cols, v);
            standardise(&x_scaler, &mut xv, "the validation features")?;
            (
                Some(Matrix::from_vec(v.len(), cols, xv)?),
                Some(v.iter().map(|&r| y[r]).collect()),
            )
        }
        None => (None, None),
    };
    Ok(Prepared {
        x_train: Matrix::from_vec(train.len(), cols, xt)?,
        x_val,
        y_train: yt,
        y_val,
        x_scaler,
        y_scaler,
    })
}

/// The model to fit: network sizes, activation and task.
#[derive(Clone, Debug)]
struct Spec {
    task: Task,
    sizes: Vec<usize>,
    activation: Activation,
}

enum Model {
    Regression(BnnRegression),
    Classification(BnnClassifier),
}

impl Model {
    fn build(spec: &Spec, x: Matrix, y: &[f64]) -> Result<Self> {
        let mlp = Mlp::new(&spec.sizes, spec.activation).context("bad network")?;
        Ok(match spec.task {
            Task::Regression => Model::Regression(
                BnnRegression::new(mlp, x, y.to_vec(), Noise::uci())
                    .context("cannot build the regression model")?,
            ),
            Task::Classification => Model::Classification(
                BnnClassifier::new(mlp, x, y.iter().map(|&v| v as usize).collect())
                    .context("cannot build the classifier")?,
            ),
        })
    }

    fn density(&self) -> &dyn LogDensity {
        match self {
            Model::Regression(m) => m,
            Model::Classification(m) => m,
        }
    }
}

/// A header without the payload (filled by [`ModelFile::new`]).
fn empty_payload() -> Payload {
    Payload {
        kind: PayloadKind::Particles,
        guide: None,
        rows: 0,
        cols: 0,
        dim: 0,
        encoding: String::new(),
    }
}

/// Validation metrics of a fit (targets in original units / class indices).
fn validate(
    spec: &Spec,
    prep: &Prepared,
    out: &Fit,
    draws: usize,
    seed: u64,
) -> Result<Option<Metrics>> {
    let (Some(x), Some(y)) = (&prep.x_val, &prep.y_val) else {
        return Ok(None);
    };
    let h = header_stub(spec, prep);
    Ok(Some(match spec.task {
        Task::Regression => {
            let o = predict::predict_regression(&h, &out.posterior, x, draws, 0.9, seed, Some(y))?;
            predict::regression_metrics(&o, y, 0.9)
        }
        Task::Classification => {
            let o = predict::predict_classes(&h, &out.posterior, x, draws, seed)?;
            let labels: Vec<usize> = y.iter().map(|&v| v as usize).collect();
            predict::class_metrics(&o, &labels)
        }
    }))
}

/// The parts of a header that prediction needs.
fn header_stub(spec: &Spec, prep: &Prepared) -> Header {
    Header {
        magic: MAGIC.into(),
        format_version: FORMAT_VERSION,
        smi_version: smi_experiments::records::VERSION.into(),
        task: spec.task,
        method: String::new(),
        architecture: Architecture {
            sizes: spec.sizes.clone(),
            activation: spec.activation,
            noise: (spec.task == Task::Regression).then(Noise::uci),
            prior_scale: 1.0,
        },
        target: String::new(),
        features: Vec::new(),
        x_scaler: prep.x_scaler.clone(),
        y_scaler: prep.y_scaler.clone(),
        classes: None,
        settings: Settings {
            lr: None,
            lr_mode: String::new(),
            lr_grid: Vec::new(),
            max_steps: 0,
            particles: 0,
            elbo_draws: 0,
            batch_size: None,
            early_stopping: false,
            init_radius: 0.0,
            seed: 0,
            validation: None,
            nuts_warmup: 0,
            nuts_draws: 0,
        },
        training: Training {
            rows: 0,
            validation_rows: 0,
            steps: 0,
            seconds: 0.0,
            early_stopped: false,
            final_loss: None,
        },
        validation: None,
        payload: empty_payload(),
        checksum: None,
    }
}

/// The hidden widths of `--hidden` (comma-separated positive integers; an empty entry, as in
/// `2,,2` or `50,`, is an error).
fn parse_hidden(s: &str) -> Result<Vec<usize>> {
    if s.trim().is_empty() {
        bail!("--hidden {s:?}: give at least one hidden width, e.g. 50,50");
    }
    s.split(',')
        .map(str::trim)
        .enumerate()
        .map(|(i, p)| {
            if p.is_empty() {
                bail!(
                    "--hidden {s:?}: width {} is empty (two commas in a row, or one at an end?)",
                    i + 1
                );
            }
            p.parse::<usize>()
                .ok()
                .filter(|&w| w > 0)
                .with_context(|| format!("--hidden {s:?}: {p:?} is not a positive width"))
        })
        .collect()
}

/// Fails unless a file can be created in the folder of `path` (the one named by `flag`), so
/// that a missing or read-only folder is reported before any work rather than after it. The
/// probe file is removed again; `path` itself is not touched.
pub fn check_writable(path: &Path, flag: &str) -> Result<()> {
    let shown = path.display();
    if path.as_os_str().is_empty() {
        bail!("{flag}: the path is empty");
    }
    if path.is_dir() {
        bail!("{flag} {shown}: this is a folder; name a file in it");
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "{flag} {shown}: the folder {} does not exist (create it first)",
            dir.display()
        );
    }
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    let probe = dir.join(format!(".{name}.{}.probe", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .with_context(|| format!("{flag} {shown}: cannot write into {}", dir.display()))?;
    // Best effort: a probe that cannot be removed is harmless.
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

mod data;
mod memory;

use data::{read_data, Data};
use memory::check_fit_memory;

/// Runs `smi fit`.
pub fn run(a: &FitArgs) -> Result<()> {
    let method: Method = a.method.parse().context("--method")?;
    let hidden = parse_hidden(&a.hidden)?;
    if a.particles == 0 {
        bail!("--particles must be at least 1");
    }
    if a.max_steps == 0 {
        bail!("--max-steps must be at least 1");
    }
    if a.batch_size == 0 {
        bail!("--batch-size must be at least 1");
    }
    if a.draws < 2 {
        bail!("--draws must be at least 2");
    }
    let lr_auto = a.lr.trim().eq_ignore_ascii_case("auto");
    let fixed_lr = if lr_auto {
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

    check_writable(&a.save, "--save")?;

    // Data.
    let table = read_table(&a.csv)?;
    let data = read_data(
        &table,
        &a.target,
        a.features.as_deref(),
        a.task,
        a.drop_missing,
    )?;
    drop(table);
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
    let Data {
        features,
        x,
        y,
        classes,
        task,
        guessed,
        ..
    } = data;
    let cols = features.len();
    if let (true, Some(c)) = (guessed, &classes) {
        if c.len() > 100 || 2 * c.len() > y.len() {
            eprintln!(
                "note: the target {} is not numeric, so this fits a classifier with {} classes \
                 on {} rows; use --task regression if it holds numbers",
                show(&a.target),
                c.len(),
                y.len()
            );
        }
    }
    let n = y.len();
    let all: Vec<usize> = (0..n).collect();
    let split = |frac: f64| -> Result<(Vec<usize>, Vec<usize>)> {
        train_test_split_indices(n, frac, 10).with_context(|| {
            format!("cannot hold out {frac} of {n} rows for validation (too few rows?)")
        })
    };
    let (train, val) = match a.validation {
        Some(v) => {
            let (tr, va) = split(v)?;
            (tr, Some(va))
        }
        None => (all.clone(), None),
    };

    // Model and engine settings.
    let activation = match a.activation {
        Some(ActivationArg::Relu) => Activation::Relu,
        Some(ActivationArg::Tanh) => Activation::Tanh,
        None if task == Task::Regression => Activation::Relu,
        None => Activation::Tanh,
    };
    let out_dim = classes.as_ref().map_or(1, Vec::len);
    let mut sizes = vec![cols];
    sizes.extend(&hidden);
    sizes.push(out_dim);
    let spec = Spec {
        task,
        sizes,
        activation,
    };
    let elbo_draws = a.elbo_draws.unwrap_or(match task {
        Task::Classification if n > 10_000 => 20,
        _ => 100,
    });
    if elbo_draws == 0 {
        bail!("--elbo-draws must be at least 1");
    }
    check_fit_memory(
        a,
        method,
        &spec.sizes,
        elbo_draws,
        train.len(),
        val.as_ref().map_or(n / 10, Vec::len),
        val.is_some() || (lr_auto && method != Method::Nuts),
    )?;
    let scale_y = task == Task::Regression && a.target_scaling == TargetScaling::Standardize;
    let prep = prepare(&x, &y, cols, &train, val.as_deref(), scale_y)?;
    let settings_for = |rows: usize| UnitSettings {
        max_steps: a.max_steps,
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
    };

    // Learning rate.
    let mut grid_scores = Vec::new();
    let lr = if method == Method::Nuts {
        None
    } else if let Some(v) = fixed_lr {
        Some(v)
    } else {
        // Tune on the validation split (or a 10 % hold-out of the training rows).
        let tune = match &val {
            Some(_) => None,
            None => Some(split(0.1)?),
        };
        let tprep = match &tune {
            Some((tr, va)) => prepare(&x, &y, cols, tr, Some(va), scale_y)?,
            None => prepare(&x, &y, cols, &train, val.as_deref(), scale_y)?,
        };
        let tmodel = Model::build(&spec, tprep.x_train.clone(), &tprep.y_train)?;
        let ts = settings_for(tprep.y_train.len());
        let (best, score) = smi::best_lr(
            &LR_GRID,
            |lr| -> Result<f64> {
                let o = fit_method(
                    method,
                    Some(lr),
                    tmodel.density(),
                    &ts,
                    a.seed,
                    &mut smi::NoObserver,
                )?;
                let m =
                    validate(&spec, &tprep, &o, a.draws, a.seed)?.context("no validation split")?;
                let v = match task {
                    Task::Regression => m.rmse,
                    Task::Classification => m.nll,
                }
                .unwrap_or(f64::INFINITY);
                eprintln!(
                    "lr {lr:e}: validation {} {v:.4} ({} steps)",
                    if task == Task::Regression {
                        "RMSE"
                    } else {
                        "NLL"
                    },
                    o.steps
                );
                grid_scores.push((lr, finite(v)));
                Ok(v)
            },
            |lr, e| eprintln!("note: lr search lr={lr:e}: {e:#} (counted as infinite)"),
        )?;
        eprintln!("chosen lr {best:e} (validation score {score:.4})");
        Some(best)
    };

    // Final fit.
    let model = Model::build(&spec, prep.x_train.clone(), &prep.y_train)?;
    let settings = settings_for(prep.y_train.len());
    let mut bar = Bar::new(&format!("fit {method}"), 10);
    let out = fit_method(method, lr, model.density(), &settings, a.seed, &mut bar)
        .with_context(|| format!("fitting {method}"))?;
    eprintln!(
        "{method}: {} steps in {:.1} s{}{}",
        out.steps,
        out.seconds,
        if out.early_stopped() {
            " (stopped early on the force norm)"
        } else {
            ""
        },
        out.final_loss()
            .map_or_else(String::new, |l| format!(", last loss {l:.4}"))
    );
    let validation = validate(&spec, &prep, &out, a.draws, a.seed)?;
    if let Some(m) = &validation {
        eprintln!("validation: {}", predict::describe(m));
    }

    // Save.
    let mut h = header_stub(&spec, &prep);
    h.method = method.name().into();
    h.target = a.target.clone();
    h.features = features;
    h.classes = classes;
    h.settings = Settings {
        lr,
        lr_mode: if method == Method::Nuts {
            "none"
        } else if lr_auto {
            "auto"
        } else {
            "fixed"
        }
        .into(),
        lr_grid: grid_scores,
        max_steps: a.max_steps,
        particles: a.particles,
        elbo_draws,
        batch_size: settings.batch_size,
        early_stopping: !a.no_early_stop,
        init_radius: settings.init_radius,
        seed: a.seed,
        validation: a.validation,
        nuts_warmup: a.nuts_warmup,
        nuts_draws: a.nuts_draws,
    };
    h.training = Training {
        rows: prep.y_train.len(),
        validation_rows: val.as_ref().map_or(0, Vec::len),
        steps: out.steps,
        seconds: out.seconds,
        early_stopped: out.early_stopped(),
        final_loss: out.final_loss().and_then(finite),
    };
    h.validation = validation;
    let file = ModelFile::new(h, &out.posterior, model.density().dim());
    file.save(&a.save)?;
    eprintln!("saved the model to {}", a.save.display());
    Ok(())
}

#[cfg(test)]
mod tests;
