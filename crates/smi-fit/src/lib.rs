//! # smi-fit — Bayesian neural networks on tabular data
//!
//! The library behind `smi fit`, `smi predict`, `smi inspect` and the Python estimators
//! (`smi.BNNRegressor`, `smi.BNNClassifier`): Bayesian-network regression and classification
//! on a table, from a CSV file or from arrays, through the method layer of `smi`.
//!
//! A fit ([`fit`]) runs load → plan → train → validate: it reads the table ([`source`]),
//! plans the split, the network and the step budget ([`plan`]), standardises the inputs (and
//! regression targets) with the training statistics, chooses the learning rate, fits one of
//! the six methods under the UCI protocol ([`protocol`], docs/algorithms.md §7.3), optionally
//! scores a validation split, and returns the versioned model file ([`model_file`]) that the
//! caller saves. Options are typed ([`FitOptions`], [`RunControl`]); the command line that
//! fills them lives in `smi-cli`. Prediction ([`predict`]) returns values that the reports
//! ([`metrics_report`], [`reliability_plot`] behind the `plot` feature) consume;
//! [`predict_csv`] is `smi predict` on a CSV file, [`inspect`] describes a model.
//!
//! The floor's shared utilities live here too, for the experiments above it: atomic writes
//! ([`files`]), progress bars ([`progress`]), memory checks ([`limits`]) and the embedded font
//! ([`plot`], feature `plot`).

#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod arrays;
pub mod calibration;
pub mod checkpoint;
pub mod csv_input;
pub mod diagnostics;
pub mod files;
mod fitting;
pub mod inspect;
pub mod interrupt;
pub mod limits;
mod lr_search;
mod memory;
pub mod metrics_report;
pub mod model_file;
pub mod options;
pub mod plan;
#[cfg(feature = "plot")]
pub mod plot;
pub mod predict;
pub mod predict_csv;
mod prepare;
pub mod progress;
pub mod protocol;
#[cfg(feature = "plot")]
pub mod reliability_plot;
pub mod scaling;
pub mod sizing;
pub mod source;
mod targets;
pub mod train;

use std::collections::HashMap;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use smi::{LogDensity, Matrix, NutsSettings};
use smi_models::{Activation, BnnClassifier, BnnRegression, Mlp, Noise};

use csv_input::{class_map, show, Table};
use limits::Budget;
use model_file::{
    finite, network_dim, Architecture, Header, Metrics, ModelFile, Payload, PayloadKind, Scaler,
    Settings, Task, Training, FORMAT_VERSION, MAGIC,
};
use protocol::Protocol;
use smi::{Fit, Method, LR_GRID};

pub use fitting::{fit, Fitted};
pub use interrupt::INTERRUPTED_STATUS;
pub use options::{
    Checkpointing, FitOptions, LrScheduleKind, RunControl, TargetScaling, DEFAULT_ELBO_DRAWS,
    DEFAULT_TEMPERATURE_CLASSIFICATION, DEFAULT_TEMPERATURE_REGRESSION,
};
pub use source::{ArrayData, CsvSource, Source};
pub use train::Stop;

/// This library's version (the workspace's), recorded in every model file.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

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

use memory::check_fit_memory;
use prepare::{header_stub, prepare, validate, Model, Prepared, Spec};
use source::Data;

#[cfg(test)]
mod tests;
