//! The test targets of a prediction CSV (`smi predict`): regression values, or the class
//! indices of the rows whose label the model knows, and the metrics and calibration report of
//! predictions against them.

use anyhow::{Context, Result};

use super::csv_input::{show, Table};
use super::metrics_report::{MetricsReport, ReportSettings};
use super::model_file::{Header, Metrics, Task};
use super::predict::{class_metrics, ClassOutput};

/// The metrics and report of the scored test rows.
pub(crate) type Scored = (Metrics, MetricsReport);

/// The test targets of a prediction CSV.
pub(crate) enum Targets {
    /// Regression targets in target units.
    Values(Vec<f64>),
    /// Class indices into the model's classes of the rows whose label the model knows.
    Classes(KnownLabels),
    /// No test metrics, and why.
    None(String),
}

/// The test rows of a classifier whose labels the model knows.
pub(crate) struct KnownLabels {
    /// The rows (0-based), in order.
    rows: Vec<usize>,
    /// Their class indices.
    labels: Vec<usize>,
    /// How many rows have a label the model does not know, and the first such label.
    unknown: Option<(usize, String)>,
}

impl KnownLabels {
    /// Maps `labels` (one per row) to indices into `classes`, keeping the rows it can.
    fn new(classes: &[String], labels: &[String]) -> Self {
        let mut k = KnownLabels {
            rows: Vec::new(),
            labels: Vec::new(),
            unknown: None,
        };
        for (r, l) in labels.iter().enumerate() {
            match classes.iter().position(|c| c == l) {
                Some(i) => {
                    k.rows.push(r);
                    k.labels.push(i);
                }
                None => match &mut k.unknown {
                    Some((count, _)) => *count += 1,
                    None => k.unknown = Some((1, l.clone())),
                },
            }
        }
        k
    }

    /// The metrics of `out` (every row of the table) on the known rows, and the report with
    /// `settings`.
    pub(crate) fn metrics(&self, out: &ClassOutput, settings: ReportSettings) -> Result<Scored> {
        let known = ClassOutput {
            probs: self.rows.iter().map(|&r| out.probs[r].clone()).collect(),
            predicted: self.rows.iter().map(|&r| out.predicted[r]).collect(),
        };
        let m = Metrics {
            skipped_rows: self.unknown.as_ref().map(|u| u.0),
            ..class_metrics(&known, &self.labels)
        };
        let report = MetricsReport::classification(&m, &known, &self.labels, settings)?;
        Ok((m, report))
    }
}

/// The test targets of `table` when it has the model's target column: regression values, or
/// class indices; [`Targets::None`] with the reason when there are none to score against.
pub(crate) fn targets(h: &Header, table: &Table) -> Result<Targets> {
    let Some(t) = table.headers.iter().position(|c| c == &h.target) else {
        return Ok(Targets::None(format!(
            "the CSV has no target column {} (its columns: {})",
            show(&h.target),
            table
                .headers
                .iter()
                .take(30)
                .map(|c| show(c))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    Ok(match h.task {
        Task::Regression => Targets::Values(table.numbers(&[t])?),
        Task::Classification => {
            let classes = h
                .classes
                .as_ref()
                .context("corrupt model header: a classifier without classes")?;
            let known = KnownLabels::new(classes, &table.labels(t)?);
            if let Some((count, l)) = &known.unknown {
                let what = format!(
                    "{count} of the {} rows have a label in column {} that the model does not \
                     know (e.g. {}; it knows {})",
                    table.len(),
                    show(&h.target),
                    show(l),
                    classes
                        .iter()
                        .map(|c| show(c))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                if known.rows.is_empty() {
                    return Ok(Targets::None(what));
                }
                eprintln!(
                    "note: {what}; the test metrics score the other {} rows",
                    known.rows.len()
                );
            }
            Targets::Classes(known)
        }
    })
}
