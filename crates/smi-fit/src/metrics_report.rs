//! The test metrics of `smi predict --metrics`: accuracy and calibration of the predictions
//! of the rows whose target is known, as a text report, as JSON (`--metrics-json`) and as the
//! data of the reliability diagram (`--reliability-plot`, [`crate::reliability_plot`]).
//!
//! JSON fields (stable; scripts read them; a field that does not apply to the task is `null`
//! or an empty list):
//! - `task`: `"regression"` or `"classification"`; `n`: rows scored; `skipped_rows`: test
//!   rows left out (a class label the model does not know);
//! - `nll`: mean negative log predictive density (regression: of the mixture predictive, in
//!   target units; classification: of the draw-averaged probability of the true class);
//! - regression: `rmse` of the predictive mean; `coverage`: a list of `{level, observed,
//!   inside}` for the central intervals of masses 0.5, 0.8, 0.9, 0.95; `calibration_error`:
//!   mean |observed − level| over that list; `interval`: the same for the `--interval` mass
//!   (the interval of the output CSV);
//! - classification: `accuracy` of the most probable class; `mean_confidence`: the mean
//!   top-class probability; `ece`: the count-weighted mean |accuracy − mean confidence| over
//!   `reliability`, a list of 10 bins `{lower, upper, count, mean_confidence, accuracy}`;
//! - `verdict`: the one-line over/underconfidence summary; `model` (file name), `target`,
//!   `draws`, `seed`: the settings.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::calibration::{
    confidence_verdict, coverage_error, coverage_table, coverage_verdict, ece, reliability,
    Coverage, ReliabilityBin, COVERAGE_LEVELS, RELIABILITY_BINS,
};
use super::model_file::{finite, Metrics, Task};
use super::predict::{ClassOutput, RegressionOutput};

/// The settings a report was made with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReportSettings {
    /// The model's file name.
    pub model: String,
    /// The target column.
    pub target: String,
    /// Predictive draws (`--draws`).
    pub draws: usize,
    /// Seed of the draws.
    pub seed: u64,
}

/// The test metrics of one prediction run (see the module documentation for the fields).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricsReport {
    /// Regression or classification.
    pub task: Task,
    /// Rows scored.
    pub n: usize,
    /// Test rows not scored (a class label the model does not know).
    pub skipped_rows: usize,
    /// Mean negative log predictive density.
    pub nll: Option<f64>,
    /// Regression: RMSE of the predictive mean.
    pub rmse: Option<f64>,
    /// Classification: accuracy of the most probable class.
    pub accuracy: Option<f64>,
    /// Regression: coverage of the central intervals of masses [`COVERAGE_LEVELS`].
    pub coverage: Vec<Coverage>,
    /// Regression: mean |observed − nominal| over `coverage`.
    pub calibration_error: Option<f64>,
    /// Regression: coverage of the `--interval` interval (the output CSV's `lower`/`upper`).
    pub interval: Option<Coverage>,
    /// Classification: expected calibration error of `reliability`.
    pub ece: Option<f64>,
    /// Classification: mean top-class probability.
    pub mean_confidence: Option<f64>,
    /// Classification: [`RELIABILITY_BINS`] equal-width bins of top-class confidence.
    pub reliability: Vec<ReliabilityBin>,
    /// One line: over- or underconfident, or neither within sampling error.
    pub verdict: String,
    /// The model file name.
    pub model: String,
    /// The target column.
    pub target: String,
    /// Predictive draws.
    pub draws: usize,
    /// Seed of the draws.
    pub seed: u64,
}

impl MetricsReport {
    /// An empty report of `task` with `settings`.
    fn new(task: Task, n: usize, settings: ReportSettings) -> Self {
        MetricsReport {
            task,
            n,
            skipped_rows: 0,
            nll: None,
            rmse: None,
            accuracy: None,
            coverage: Vec::new(),
            calibration_error: None,
            interval: None,
            ece: None,
            mean_confidence: None,
            reliability: Vec::new(),
            verdict: String::new(),
            model: settings.model,
            target: settings.target,
            draws: settings.draws,
            seed: settings.seed,
        }
    }

    /// The report of regression predictions `out` of `n` rows (targets given, so that
    /// `out.inside` is filled) whose NLL, RMSE and `--interval` coverage are `m`
    /// ([`crate::predict::regression_metrics`]).
    ///
    /// # Errors
    /// No rows, or `out` without the interval counts.
    pub fn regression(
        m: &Metrics,
        out: &RegressionOutput,
        n: usize,
        settings: ReportSettings,
    ) -> Result<Self> {
        let coverage = coverage_table(&COVERAGE_LEVELS, &out.inside, n)
            .context("no interval coverage to report")?;
        let mut r = MetricsReport::new(Task::Regression, n, settings);
        r.nll = m.nll;
        r.rmse = m.rmse;
        r.calibration_error = coverage_error(&coverage).and_then(finite);
        r.interval = match (m.interval, m.coverage) {
            (Some(level), Some(observed)) => Some(Coverage {
                level,
                observed,
                inside: (observed * n as f64).round() as usize,
            }),
            _ => None,
        };
        r.verdict = coverage_verdict(&coverage, n);
        r.coverage = coverage;
        Ok(r)
    }

    /// The report of class predictions `out` of the scored rows (true class indices
    /// `labels`), whose NLL and accuracy are `m` ([`crate::predict::class_metrics`]).
    ///
    /// # Errors
    /// No rows, or `out` and `labels` of different lengths.
    pub fn classification(
        m: &Metrics,
        out: &ClassOutput,
        labels: &[usize],
        settings: ReportSettings,
    ) -> Result<Self> {
        let n = labels.len();
        if n == 0 || out.probs.len() != n || out.predicted.len() != n {
            bail!(
                "{} labels for {} predictions: nothing to score",
                n,
                out.probs.len()
            );
        }
        let conf: Vec<f64> = out
            .probs
            .iter()
            .zip(&out.predicted)
            .map(|(p, &k)| p.get(k).copied().unwrap_or(0.0).clamp(0.0, 1.0))
            .collect();
        let correct: Vec<bool> = out
            .predicted
            .iter()
            .zip(labels)
            .map(|(a, b)| a == b)
            .collect();
        let table = reliability(&conf, &correct, RELIABILITY_BINS)?;
        let accuracy = correct.iter().filter(|&&c| c).count() as f64 / n as f64;
        let mut r = MetricsReport::new(Task::Classification, n, settings);
        r.nll = m.nll;
        r.accuracy = Some(accuracy);
        r.skipped_rows = m.skipped_rows.unwrap_or(0);
        r.ece = ece(&table).and_then(finite);
        r.mean_confidence = finite(conf.iter().sum::<f64>() / n as f64);
        r.verdict = confidence_verdict(&conf, accuracy);
        r.reliability = table;
        Ok(r)
    }

    /// The report as text: a header line, the metrics, the coverage or reliability table, the
    /// calibration summary and the verdict.
    pub fn text(&self) -> String {
        let f = |v: Option<f64>, d: usize| v.map_or_else(|| "n/a".into(), |v| format!("{v:.d$}"));
        let pct = |v: f64| format!("{:.1} %", 100.0 * v);
        let mut s = format!(
            "test metrics of {} on {} rows (target column \"{}\"; {} draws, seed {}){}\n",
            self.model,
            self.n,
            self.target,
            self.draws,
            self.seed,
            if self.skipped_rows > 0 {
                format!(
                    "; {} rows with unknown labels not scored",
                    self.skipped_rows
                )
            } else {
                String::new()
            }
        );
        match self.task {
            Task::Regression => {
                s.push_str(&format!(
                    "  nll {}   rmse {}\n  central interval coverage (nominal → observed, \
                     rows inside):\n",
                    f(self.nll, 4),
                    f(self.rmse, 4)
                ));
                let row = |c: &Coverage| {
                    format!(
                        "    {:>5} → {:>7}   {:>6} of {}",
                        format!("{:.0} %", 100.0 * c.level),
                        pct(c.observed),
                        c.inside,
                        self.n
                    )
                };
                for c in &self.coverage {
                    s.push_str(&(row(c) + "\n"));
                }
                if let Some(c) = &self.interval {
                    if !COVERAGE_LEVELS.iter().any(|l| (l - c.level).abs() < 1e-12) {
                        s.push_str(&(row(c) + "   (--interval; not in the calibration error)\n"));
                    }
                }
                s.push_str(&format!(
                    "  calibration error (mean |observed − nominal| over the levels): {}\n",
                    f(self.calibration_error, 3)
                ));
            }
            Task::Classification => {
                s.push_str(&format!(
                    "  nll {}   accuracy {}   mean confidence {}\n  reliability \
                     (top-class confidence bins; empty bins left out):\n    {:<11} {:>6} \
                     {:>10} {:>9}\n",
                    f(self.nll, 4),
                    f(self.accuracy, 4),
                    f(self.mean_confidence, 4),
                    "confidence",
                    "rows",
                    "mean conf",
                    "accuracy"
                ));
                for b in self.reliability.iter().filter(|b| b.count > 0) {
                    s.push_str(&format!(
                        "    {:<11} {:>6} {:>10} {:>9}\n",
                        format!("{:.1}–{:.1}", b.lower, b.upper),
                        b.count,
                        f(b.mean_confidence, 3),
                        f(b.accuracy, 3)
                    ));
                }
                s.push_str(&format!(
                    "  ECE (count-weighted mean |accuracy − confidence|): {}\n",
                    f(self.ece, 4)
                ));
            }
        }
        s.push_str(&format!("  {}\n", self.verdict));
        s
    }

    /// The calibration summary of the figure title: "ECE 0.034" or "calibration error 0.021".
    pub fn summary(&self) -> String {
        match self.task {
            Task::Regression => format!(
                "calibration error {}",
                self.calibration_error
                    .map_or_else(|| "n/a".into(), |v| format!("{v:.3}"))
            ),
            Task::Classification => format!(
                "ECE {}",
                self.ece.map_or_else(|| "n/a".into(), |v| format!("{v:.3}"))
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> ReportSettings {
        ReportSettings {
            model: "m.smi".into(),
            target: "y".into(),
            draws: 100,
            seed: 0,
        }
    }

    #[test]
    fn regression_report_has_the_stable_fields() {
        let out = RegressionOutput {
            inside: vec![2, 3, 4, 4],
            ..RegressionOutput::default()
        };
        let m = Metrics {
            nll: Some(1.5),
            rmse: Some(0.5),
            coverage: Some(1.0),
            interval: Some(0.9),
            ..Metrics::default()
        };
        let r = MetricsReport::regression(&m, &out, 4, settings()).unwrap();
        // |0.5 − 0.5|, |0.75 − 0.8|, |1 − 0.9|, |1 − 0.95|: mean 0.05.
        assert!((r.calibration_error.unwrap() - 0.05).abs() < 1e-12);
        assert_eq!(r.interval.as_ref().unwrap().inside, 4);
        let v = serde_json::to_value(&r).unwrap();
        for key in [
            "task",
            "n",
            "nll",
            "rmse",
            "accuracy",
            "coverage",
            "ece",
            "mean_confidence",
            "reliability",
            "calibration_error",
            "interval",
            "verdict",
            "draws",
            "model",
        ] {
            assert!(v.get(key).is_some(), "{key} missing from {v}");
        }
        assert_eq!(v["coverage"][1]["level"], 0.8);
        assert_eq!(v["coverage"][1]["observed"], 0.75);
        assert!(v["accuracy"].is_null() && v["ece"].is_null());
        let t = r.text();
        assert!(t.contains("80 % →  75.0 %"), "{t}");
        assert!(t.contains("calibration error"), "{t}");
        let back: MetricsReport = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn classification_report_counts_bins_and_verdict() {
        // Three rows at confidence 0.95 (two right), one at 0.55 (right): accuracy 0.75,
        // mean confidence 0.85; ECE = (3·|2/3 − 0.95| + 1·|1 − 0.55|)/4 = (0.85 + 0.45)/4.
        let out = ClassOutput {
            probs: vec![
                vec![0.95, 0.05],
                vec![0.95, 0.05],
                vec![0.05, 0.95],
                vec![0.55, 0.45],
            ],
            predicted: vec![0, 0, 1, 0],
        };
        let m = Metrics {
            nll: Some(0.3),
            accuracy: Some(0.75),
            ..Metrics::default()
        };
        let r = MetricsReport::classification(&m, &out, &[0, 1, 1, 0], settings()).unwrap();
        assert_eq!(r.accuracy, Some(0.75));
        assert!((r.mean_confidence.unwrap() - 0.85).abs() < 1e-12);
        assert!((r.ece.unwrap() - 1.3 / 4.0).abs() < 1e-12);
        assert_eq!(r.reliability[9].count, 3);
        assert_eq!(r.reliability[5].count, 1);
        let t = r.text();
        assert!(t.contains("0.9–1.0"), "{t}");
        assert!(!t.contains("0.1–0.2"), "empty bins are left out: {t}");
        assert!(r.rmse.is_none() && r.coverage.is_empty());
        assert!(MetricsReport::classification(&m, &out, &[0], settings()).is_err());
    }
}
