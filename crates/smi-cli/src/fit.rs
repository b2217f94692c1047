//! `smi fit`: the command line of a fit, parsed into the typed options of `smi_fit`, the fit
//! run with Ctrl-C, time limit and checkpoints, and the model saved.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use smi::{GuideSettings, Method};
use smi_fit::interrupt::Interrupt;
use smi_fit::model_file::Task;
use smi_fit::progress::human_seconds;
use smi_fit::{
    check_writable, Checkpointing, CsvSource, FitOptions, LrScheduleKind, RunControl, Source, Stop,
    TargetScaling,
};
use smi_models::Activation;

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
    /// regression or classification [default: regression when at least 90 % of the target's
    /// cells are numbers (a numeric target with a few bad cells is an error naming them),
    /// classification otherwise]. `--task classification` takes numbers as class labels.
    #[arg(long, value_parser = parse_task)]
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
    /// Hidden-layer widths, comma-separated, or `auto`: two layers of 50 from 500 training
    /// rows, below that one layer of rows/10 units (at least 10); see `smi_fit::sizing`.
    #[arg(long, default_value = "auto")]
    pub hidden: String,
    /// Hidden-layer nonlinearity: relu or tanh [default: relu for regression, tanh for
    /// classification].
    #[arg(long, value_parser = parse_activation)]
    pub activation: Option<Activation>,
    /// Step budget (Stein methods stop earlier on the force norm; OVI/MAP run exactly this)
    /// [default: sized to the data so that the fit takes about a minute on two cores: 60 s
    /// over the estimated time of a step (θ draws × batch rows × network size), in hundreds,
    /// between 1000 and 20000; see `smi_fit::sizing`].
    #[arg(long)]
    pub max_steps: Option<u64>,
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
    /// ELBO draws S per particle (SMI) [default: 10, the SMI preset's; with the default step
    /// budget, more draws mean fewer steps].
    #[arg(long)]
    pub elbo_draws: Option<usize>,
    /// The guide of SMI's particles or OVI's one guide: `normal` (mean-field), `lowrank:R`
    /// (diagonal plus a rank-R factor: (2 + R)·d values per particle) or `fullrank` (a full
    /// covariance, d²/2 values: small networks only); docs/algorithms.md §2.12 [default:
    /// normal].
    #[arg(long, value_name = "GUIDE")]
    pub guide: Option<String>,
    /// s of the N(0, s²) prior on every weight and bias (inputs and regression targets are
    /// standardised).
    #[arg(long, default_value_t = 1.0)]
    pub prior_scale: f64,
    /// Likelihood temperature T: the fit targets p(θ)·p(y | θ)^(1/T) (1: the Bayesian
    /// posterior; below 1 a sharper, "cold" one, which SMI's mean-field particles need to fit
    /// well and be calibrated: docs/calibration.md) [default for smi: 0.3 for regression, 0.2
    /// for classification; 1 for the other methods].
    #[arg(long)]
    pub temperature: Option<f64>,
    /// Learning-rate schedule of the variational methods: `constant` (Adam at --lr
    /// throughout) or `cosine` (from --lr down to --lr/100 over the step budget).
    #[arg(long, default_value = "constant")]
    pub lr_schedule: LrScheduleKind,
    /// Mini-batch rows (used when the training set is larger).
    #[arg(long, default_value_t = 100)]
    pub batch_size: usize,
    /// Turn off early stopping on the Stein force norm.
    #[arg(long)]
    pub no_early_stop: bool,
    /// Standardise regression targets for fitting (`standardize`, predictions are mapped
    /// back) or fit them raw (`none`).
    #[arg(long, default_value = "standardize")]
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
    /// Stop training after this long (seconds, or with a unit: 90s, 10m, 1.5h) and save the
    /// model as it is, with a checkpoint that --resume continues. Under --lr auto each fit of
    /// the search stops after 1/12 of it (the search takes at most half). [default: no limit]
    #[arg(long, value_parser = parse_duration)]
    pub max_time: Option<f64>,
    /// Time between checkpoints of the training state to `<save>.ckpt` (0: only when the fit
    /// stops at --max-time or on Ctrl-C). A fit that finishes removes its checkpoint.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub checkpoint_every: f64,
    /// Continue the fit whose checkpoint is `<save>.ckpt` (left by --max-time, Ctrl-C or a
    /// killed fit); give the options of that fit (its learning rate and ELBO draws are kept).
    #[arg(long)]
    pub resume: bool,
    /// Time between progress lines when stderr is not a terminal (on a terminal a bar is
    /// drawn; SMI_NO_PROGRESS=1 turns both off).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub progress_every: f64,
}

/// Seconds from `90`, `90s`, `1.5m`, `10min` or `2h`: a non-negative finite number with an
/// optional unit.
///
/// # Errors
/// Anything else, with the accepted forms.
pub fn parse_duration(s: &str) -> std::result::Result<f64, String> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let factor = match unit.trim() {
        "" | "s" | "sec" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => f64::NAN,
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .map(|v| v * factor)
        .filter(|v| *v >= 0.0 && v.is_finite())
        .ok_or_else(|| format!("{s:?}: expected seconds, e.g. 90, 90s, 10m or 1.5h"))
}

fn parse_task(s: &str) -> std::result::Result<Task, String> {
    s.parse()
}

fn parse_activation(s: &str) -> std::result::Result<Activation, String> {
    match s.trim().to_ascii_lowercase().as_str() {
        "relu" => Ok(Activation::Relu),
        "tanh" => Ok(Activation::Tanh),
        _ => Err(format!("{s:?}: expected relu or tanh")),
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

/// A duration of `secs` seconds, `None` for zero.
fn interval(secs: f64) -> Option<Duration> {
    (secs > 0.0).then(|| Duration::from_secs_f64(secs))
}

impl FitArgs {
    /// The typed options of the fit these arguments ask for (parsed only: the fit checks them,
    /// [`FitOptions::check`], and their combination with the run's time limit and resume).
    ///
    /// # Errors
    /// A method, width list, learning rate or guide that does not parse.
    pub fn options(&self) -> Result<FitOptions> {
        let method: Method = self.method.parse().context("--method")?;
        let hidden = if self.hidden.trim().eq_ignore_ascii_case("auto") {
            None
        } else {
            Some(parse_hidden(&self.hidden)?)
        };
        let lr = if self.lr.trim().eq_ignore_ascii_case("auto") {
            None
        } else {
            // A number; `FitOptions::check` (run by the fit) refuses one that is not positive.
            let v: f64 = self.lr.trim().parse().with_context(|| {
                format!("--lr {:?}: expected a positive number or `auto`", self.lr)
            })?;
            Some(v)
        };
        let guide = self
            .guide
            .as_deref()
            .map(GuideSettings::from_spec)
            .transpose()
            .context("--guide")?;
        Ok(FitOptions {
            method,
            particles: self.particles,
            hidden,
            activation: self.activation,
            max_steps: self.max_steps,
            lr,
            seed: self.seed,
            validation: self.validation,
            elbo_draws: self.elbo_draws,
            guide,
            prior_scale: self.prior_scale,
            temperature: self.temperature,
            lr_schedule: self.lr_schedule,
            batch_size: self.batch_size,
            early_stopping: !self.no_early_stop,
            target_scaling: self.target_scaling,
            draws: self.draws,
            nuts_warmup: self.nuts_warmup,
            nuts_draws: self.nuts_draws,
        })
    }
}

/// Runs `smi fit`; says how the fit ended ([`Stop::Interrupted`]: the caller should exit
/// with [`smi_fit::INTERRUPTED_STATUS`]).
///
/// # Errors
/// Bad options or data, a failed fit, a model or checkpoint that cannot be written.
pub fn run(a: &FitArgs) -> Result<Stop> {
    let o = a.options()?;
    check_writable(&a.save, "--save")?;
    let source = Source::Csv(CsvSource {
        path: a.csv.clone(),
        target: a.target.clone(),
        features: a.features.clone(),
        task: a.task,
        drop_missing: a.drop_missing,
    });
    // Ctrl-C stops a variational fit at the next step and saves what it has.
    let interrupt = if o.method == Method::Nuts {
        Interrupt::never()
    } else {
        Interrupt::install()?
    };
    let control = RunControl {
        max_time: a.max_time.map(Duration::from_secs_f64),
        checkpoint: Some(Checkpointing {
            save: a.save.clone(),
            every: interval(a.checkpoint_every),
            resume: a.resume,
        }),
        progress_every: Some(Duration::from_secs_f64(a.progress_every)),
        messages: true,
        interrupt: &interrupt,
    };
    let fitted = smi_fit::fit(&source, &o, &control)?;
    fitted.save(&a.save)?;
    match (fitted.stop, fitted.checkpoint()) {
        (Stop::Finished, _) | (_, None) => {
            eprintln!("saved the model to {}", a.save.display());
        }
        (_, Some(c)) => eprintln!(
            "saved the model as it is after {} of {} steps ({} of training) to {}; the \
             checkpoint {} continues it: rerun the same command with --resume",
            fitted.steps.0,
            fitted.steps.1,
            human_seconds(fitted.seconds),
            a.save.display(),
            c.state.display()
        ),
    }
    Ok(fitted.stop)
}

const FIT_HELP: &str = "\
Model (docs/algorithms.md §7.3): in → hidden… → out network (--hidden: by default sized to the \
training rows) with N(0, s²) priors on all weights and biases (s = --prior-scale, 1). \
Regression: y ~ N(y_loc, 1/√prec), prec ~ Gamma(1, 0.1) learned (the UCI model), on \
standardised inputs and targets. Classification: softmax over the target's classes (the \
class map is saved with the model). The fit targets the tempered posterior \
p(θ)·p(y | θ)^(1/T), T = --temperature (for SMI by default 0.3 for regression and 0.2 for \
classification: at T = 1 it underfits, with too wide intervals and underconfident classes; \
docs/calibration.md has the measurements and what calibration to expect). Methods use the UCI benchmark's settings: Adam, \
Uniform(−0.1, 0.1) initialisation, mini-batches of --batch-size rows with N/b scaling when the \
training set is larger, SMI with m Normal particles and S ELBO draws, SVGD/ASVGD with m point \
particles, early stopping on ‖φ‖ (window 35, factor 2), NUTS on the full data.

Time: by default the step budget is sized so that the fit takes about a minute on two cores \
(it says so, with the budget, when it starts). --max-time stops it earlier; Ctrl-C stops it at \
the next step (a second Ctrl-C ends it at once). Either way the model is saved as it is, with \
a checkpoint <save>.ckpt that the same command with --resume continues; a checkpoint is also \
written every --checkpoint-every. Integer targets with at most 10 distinct values need --task.

Example:
  smi fit --csv examples/data/regression_train.csv --target y --validation 0.1 --save m.smi
  smi predict --model m.smi --csv examples/data/regression_test.csv --out pred.csv
  smi inspect --model m.smi";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_lists_with_empty_entries_are_errors() {
        assert_eq!(parse_hidden("50, 50").unwrap(), [50, 50]);
        for bad in ["2,,2", "50,", ",50", "", " ", "0", "a", "-1"] {
            let e = parse_hidden(bad).unwrap_err().to_string();
            assert!(e.starts_with("--hidden"), "{bad:?}: {e}");
        }
        assert!(parse_hidden("2,,2")
            .unwrap_err()
            .to_string()
            .contains("width 2 is empty"));
    }

    #[test]
    fn durations_take_seconds_or_a_unit() {
        for (text, secs) in [
            ("90", 90.0),
            ("1.5m", 90.0),
            ("2h", 7200.0),
            (" 10 s ", 10.0),
        ] {
            assert_eq!(parse_duration(text), Ok(secs), "{text}");
        }
        assert_eq!(parse_duration("10min"), Ok(600.0));
        for bad in ["", "-1", "1d", "m", "inf", "NaN"] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
    }
}
