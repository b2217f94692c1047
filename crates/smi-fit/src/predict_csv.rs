//! `smi predict`: predictions of a saved model for the rows of a CSV file, written as CSV, with
//! test metrics, their JSON report and the reliability diagram when the target column is
//! there.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use smi::Matrix;

use crate::csv_input::{read_table, show, Table};
use crate::metrics_report::{MetricsReport, ReportSettings};
use crate::model_file::{Header, Metrics, ModelFile, Task};
use crate::predict::{
    check_memory, describe, predict_classes, predict_regression, regression_metrics,
    DEFAULT_INTERVAL,
};
use crate::targets::{targets, Targets};

/// What `smi predict` is asked to do.
#[derive(Clone, Debug)]
pub struct PredictRequest {
    /// A model written by `smi fit --save`.
    pub model: PathBuf,
    /// Rows to predict: a CSV file with a header row holding (at least) the model's feature
    /// columns; the target column, when present, gives test metrics.
    pub csv: PathBuf,
    /// Mass of the central predictive interval (regression only; `None`:
    /// [`DEFAULT_INTERVAL`]).
    pub interval: Option<f64>,
    /// Predictive draws (default 1000).
    pub draws: usize,
    /// Output CSV: regression `mean,std,lower,upper`; classification one `prob_<class>`
    /// column per class and `predicted_class`; rows in input order.
    pub out: PathBuf,
    /// Seed of the prediction draws (`None`: the fit's seed).
    pub seed: Option<u64>,
    /// Print the full metrics report (coverage or reliability) instead of one line.
    pub report: bool,
    /// JSON files of the test metrics, each with the flag that named it (for messages).
    pub metrics_json: Vec<(PathBuf, &'static str)>,
    /// A PNG of the reliability diagram (needs the `plot` feature).
    pub reliability_plot: Option<PathBuf>,
}

impl PredictRequest {
    /// The flag that asks for test metrics (for messages), if any does.
    fn metrics_flag(&self) -> Option<String> {
        let shown = |flag: &str, p: &Path| format!("{flag} {}", p.display());
        if let Some((p, flag)) = self.metrics_json.first() {
            Some(shown(flag, p))
        } else if let Some(p) = &self.reliability_plot {
            Some(shown("--reliability-plot", p))
        } else {
            self.report.then(|| "--metrics".into())
        }
    }
}

/// The model's feature columns of `table`, standardised with the model's training statistics.
pub fn features(h: &Header, table: &Table) -> Result<Matrix> {
    let idx: Vec<usize> = h
        .features
        .iter()
        .map(|f| table.column(f, "a feature the model was fitted on"))
        .collect::<Result<_>>()?;
    let cols = idx.len();
    if h.x_scaler.mean.len() != cols || h.x_scaler.std.len() != cols {
        bail!(
            "corrupt model header: x_scaler has {} means for {cols} features",
            h.x_scaler.mean.len()
        );
    }
    let mut x = table.numbers(&idx)?;
    h.x_scaler.apply(&mut x).map_err(|(r, c)| {
        anyhow!(
            "{}: {} lies too far outside the training data to standardise (training mean {}, \
             std {})",
            table.at(r, idx[c]),
            show(&table.rows[r][idx[c]]),
            h.x_scaler.mean[c],
            h.x_scaler.std[c]
        )
    })?;
    Ok(Matrix::from_vec(table.len(), cols, x)?)
}

fn check_args(a: &PredictRequest) -> Result<()> {
    if let Some(i) = a.interval {
        if !(i > 0.0 && i < 1.0) {
            bail!("--interval must be in (0, 1), got {i}");
        }
    }
    if a.draws < 2 {
        bail!("--draws must be at least 2");
    }
    Ok(())
}

fn write_csv(
    path: &Path,
    header: &[String],
    rows: impl Iterator<Item = Vec<String>>,
) -> Result<()> {
    let mut w = csv::Writer::from_path(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    w.write_record(header)
        .with_context(|| format!("cannot write {}", path.display()))?;
    for r in rows {
        w.write_record(&r)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    w.flush()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Runs `smi predict`: writes the predictions of `a.model` for the rows of `a.csv` to `a.out`,
/// and the test metrics as asked when the target column is there.
///
/// # Errors
/// An output that would overwrite an input or cannot be written, a bad model or CSV file,
/// metrics asked for without a target column.
pub fn run(a: &PredictRequest) -> Result<()> {
    check_args(a)?;
    let mut outputs: Vec<(&Path, &str)> = vec![(&a.out, "--out")];
    outputs.extend(a.metrics_json.iter().map(|(p, f)| (p.as_path(), *f)));
    if let Some(p) = &a.reliability_plot {
        outputs.push((p, "--reliability-plot"));
    }
    for (p, flag) in &outputs {
        for (input, in_flag) in [(&a.csv, "--csv"), (&a.model, "--model")] {
            if same_file(p, input) {
                bail!(
                    "{flag} {} is the {in_flag} file: writing it would destroy the input; give \
                     another path",
                    p.display()
                );
            }
        }
        crate::check_writable(p, flag)?;
    }
    let model = ModelFile::load(&a.model)?;
    let h = &model.header;
    if h.task == Task::Classification && a.interval.is_some() {
        bail!(
            "--interval: {} is a classifier; its predictions are class probabilities, which \
             have no interval (--interval applies to regression models)",
            a.model.display()
        );
    }
    let interval = a.interval.unwrap_or(DEFAULT_INTERVAL);
    let fitted = model.fitted()?;
    let table = read_table(&a.csv)?;
    let x = features(h, &table)?;
    let seed = a.seed.unwrap_or(h.settings.seed);
    let targets = targets(h, &table)?;
    if let (Some(flag), Targets::None(why)) = (a.metrics_flag(), &targets) {
        bail!("{flag}: no test metrics to report: {why}");
    }
    let settings = ReportSettings {
        model: a.model.file_name().map_or_else(
            || a.model.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
        target: h.target.clone(),
        draws: a.draws,
        seed,
    };
    check_memory(h, &fitted, a.draws, x.rows())?;
    let metrics = match h.task {
        Task::Regression => {
            let y = match &targets {
                Targets::Values(y) => Some(y.as_slice()),
                _ => None,
            };
            let out = predict_regression(h, &fitted, &x, a.draws, interval, seed, y)?;
            let head = ["mean", "std", "lower", "upper"].map(String::from);
            write_csv(
                &a.out,
                &head,
                (0..out.mean.len()).map(|i| {
                    [out.mean[i], out.std[i], out.lower[i], out.upper[i]]
                        .iter()
                        .map(|v| v.to_string())
                        .collect()
                }),
            )?;
            match y {
                Some(y) => {
                    let m = regression_metrics(&out, y, interval);
                    let report = MetricsReport::regression(&m, &out, y.len(), settings)?;
                    Some((m, report))
                }
                None => None,
            }
        }
        Task::Classification => {
            let classes = h
                .classes
                .as_ref()
                .context("corrupt model header: a classifier without classes")?;
            let out = predict_classes(h, &fitted, &x, a.draws, seed)?;
            if out.probs.iter().any(|p| p.len() != classes.len()) {
                bail!(
                    "corrupt model header: {} class names for a network with a different \
                     number of outputs",
                    classes.len()
                );
            }
            let mut head: Vec<String> = classes.iter().map(|c| format!("prob_{c}")).collect();
            head.push("predicted_class".into());
            write_csv(
                &a.out,
                &head,
                out.probs.iter().zip(&out.predicted).map(|(p, &k)| {
                    let mut r: Vec<String> = p.iter().map(|v| v.to_string()).collect();
                    r.push(classes.get(k).cloned().unwrap_or_default());
                    r
                }),
            )?;
            match &targets {
                Targets::Classes(known) => Some(known.metrics(&out, settings)?),
                _ => None,
            }
        }
    };
    eprintln!(
        "wrote {} predictions of {} rows to {}",
        h.task.name(),
        table.len(),
        a.out.display()
    );
    if let Targets::None(why) = &targets {
        if table.headers.contains(&h.target) {
            eprintln!("note: no test metrics: {why}");
        }
    }
    if let Some((m, report)) = metrics {
        show_metrics(a, &m, &report)?;
    }
    Ok(())
}

/// Shows the test metrics on stderr as `a` asks: the report (`--metrics`), else one line;
/// writes the JSON file and the reliability diagram when asked for.
fn show_metrics(a: &PredictRequest, m: &Metrics, report: &MetricsReport) -> Result<()> {
    if a.report {
        eprint!("{}", report.text());
    } else {
        eprintln!(
            "test metrics (column {} present): {} (--metrics for interval coverage or a \
             reliability table)",
            show(&report.target),
            describe(m)
        );
    }
    for (p, _) in &a.metrics_json {
        let text = serde_json::to_string_pretty(report)?;
        std::fs::write(p, text).with_context(|| format!("cannot write {}", p.display()))?;
    }
    if let Some(p) = &a.reliability_plot {
        write_plot(p, report)?;
    }
    Ok(())
}

/// Whether `a` and `b` name one existing file (after resolving links and `..`).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

#[cfg(feature = "plot")]
fn write_plot(p: &Path, report: &MetricsReport) -> Result<()> {
    crate::reliability_plot::write(p, report)
        .with_context(|| format!("--reliability-plot {}", p.display()))?;
    eprintln!("wrote the reliability diagram to {}", p.display());
    Ok(())
}

#[cfg(not(feature = "plot"))]
fn write_plot(p: &Path, _report: &MetricsReport) -> Result<()> {
    bail!(
        "--reliability-plot {}: this build of smi-fit has no plots (feature `plot`)",
        p.display()
    )
}
