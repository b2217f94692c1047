//! `smi predict` and `smi inspect`: their command lines, handed to `smi_fit`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use smi_fit::predict_csv::PredictRequest;

/// Options of `smi predict`.
#[derive(clap::Args, Debug, Clone)]
pub struct PredictArgs {
    /// A model written by `smi fit --save`.
    #[arg(long)]
    pub model: PathBuf,
    /// Rows to predict: a CSV file with a header row holding (at least) the model's feature
    /// columns; other columns are ignored, except the target column, which (when present)
    /// gives test metrics on stderr: one line, or the full report with --metrics.
    #[arg(long)]
    pub csv: PathBuf,
    /// Mass of the central predictive interval (regression models only; a classifier's output
    /// has no interval, and giving it is an error) [default: 0.9].
    #[arg(long)]
    pub interval: Option<f64>,
    /// Predictive draws (θ draws for SMI/OVI; y draws per row for the interval).
    #[arg(long, default_value_t = 1000)]
    pub draws: usize,
    /// Output CSV: regression `mean,std,lower,upper`; classification one `prob_<class>`
    /// column per class and `predicted_class`; rows in input order.
    #[arg(long)]
    pub out: PathBuf,
    /// Seed of the prediction draws [default: the fit's seed].
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print the test metrics and how well the predictive uncertainty matches the errors
    /// (the CSV must have the target column, checked before anything is written).
    /// Regression: NLL, RMSE and the coverage of the central predictive intervals of mass 50,
    /// 80, 90 and 95 % (observed against nominal, and their mean |difference|, the
    /// calibration error). Classification: NLL, accuracy, a reliability table (10 bins of
    /// top-class confidence: rows, mean confidence, accuracy), the ECE and whether the model
    /// is over- or underconfident. With FILE, also write them as JSON there (as
    /// --metrics-json FILE). Without --metrics, a target column gives a one-line summary.
    #[arg(long, value_name = "FILE", num_args = 0..=1)]
    pub metrics: Option<Option<PathBuf>>,
    /// Write the test metrics of --metrics as JSON to FILE (fields: task, n, skipped_rows,
    /// nll, rmse, accuracy, coverage (a list of {level, observed, inside}),
    /// calibration_error, interval, ece, mean_confidence, reliability (a list of {lower,
    /// upper, count, mean_confidence, accuracy}), verdict, model, target, draws, seed; null
    /// where a field does not apply to the task).
    #[arg(long, value_name = "FILE")]
    pub metrics_json: Option<PathBuf>,
    /// Draw the reliability diagram of the test metrics as a PNG: accuracy against top-class
    /// confidence per bin (classification) or observed against nominal interval coverage
    /// (regression), with the diagonal, the counts, the ECE or calibration error and the
    /// settings.
    #[arg(long, value_name = "FILE.png")]
    pub reliability_plot: Option<PathBuf>,
}

impl PredictArgs {
    /// The request these arguments make.
    pub fn request(&self) -> PredictRequest {
        let json = self
            .metrics_json
            .as_ref()
            .map(|p| (p.clone(), "--metrics-json"));
        let old = self.metrics.as_ref().and_then(Option::as_ref);
        PredictRequest {
            model: self.model.clone(),
            csv: self.csv.clone(),
            interval: self.interval,
            draws: self.draws,
            out: self.out.clone(),
            seed: self.seed,
            report: self.metrics.is_some(),
            metrics_json: json
                .into_iter()
                .chain(old.map(|p| (p.clone(), "--metrics")))
                .collect(),
            reliability_plot: self.reliability_plot.clone(),
        }
    }
}

/// Options of `smi inspect`.
#[derive(clap::Args, Debug, Clone)]
pub struct InspectArgs {
    /// A model written by `smi fit --save`.
    #[arg(long)]
    pub model: PathBuf,
    /// Print the whole JSON header instead of the summary.
    #[arg(long)]
    pub json: bool,
}

/// Runs `smi predict`.
pub fn predict(a: &PredictArgs) -> Result<()> {
    smi_fit::predict_csv::run(&a.request())
}

/// Runs `smi inspect`.
pub fn inspect(a: &InspectArgs) -> Result<()> {
    smi_fit::inspect::run(Path::new(&a.model), a.json)
}
