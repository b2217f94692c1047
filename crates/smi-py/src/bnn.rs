//! The built-in Bayesian networks of `smi fit` from Python: the Rust half of the scikit-learn
//! estimators `smi.BNNRegressor` and `smi.BNNClassifier` (python/smi/sklearn.py).
//!
//! [`bnn_fit`] runs [`smi_fit::fit`], the pipeline of `smi fit`, on NumPy arrays
//! and returns a [`BnnModel`]: the model file `smi fit --save` writes, which `save`/`load` and
//! `to_bytes`/`from_bytes` move to and from disk and pickles unchanged.

use std::path::PathBuf;
use std::time::Duration;

use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use smi_fit::arrays;
use smi_fit::interrupt::Interrupt;
use smi_fit::model_file::ModelFile;
use smi_fit::{ArrayData, FitOptions, RunControl, Source};

use crate::{guard, SmiError};

/// `smi fit`'s flags and the estimators' parameters of the same meaning (longest flag first, so
/// that `--elbo-draws` is renamed before `--draws`).
const FLAGS: [(&str, &str); 12] = [
    ("--elbo-draws", "elbo_draws"),
    ("--max-steps", "max_steps"),
    ("--batch-size", "batch_size"),
    ("--prior-scale", "prior_scale"),
    ("--validation", "validation_fraction"),
    ("--temperature", "temperature"),
    ("--particles", "n_particles"),
    ("--hidden", "hidden"),
    ("--method", "method"),
    ("--draws", "n_draws"),
    ("--seed", "random_state"),
    ("--lr", "lr"),
];

/// An `anyhow` error of smi-fit as a Python exception, in the estimators' words: the flags
/// of `smi fit` it names become the estimator's parameters ([`FLAGS`]). `ValueError` when the
/// engine found a bad setting or the message is about a parameter, `SmiError` otherwise.
fn fit_err(err: anyhow::Error) -> PyErr {
    let engine_setting = err.chain().any(|e| {
        matches!(
            e.downcast_ref::<smi::Error>(),
            Some(smi::Error::InvalidSettings { .. })
        )
    });
    let mut message = format!("{err:#}");
    let mut names_a_parameter = false;
    for (flag, param) in FLAGS {
        if message.contains(flag) {
            names_a_parameter = true;
            message = message.replace(flag, param);
        }
    }
    if engine_setting || names_a_parameter {
        PyValueError::new_err(message)
    } else {
        SmiError::new_err(message)
    }
}

/// The rows of a C-ordered copy of `x` and its column count.
fn rows_of(x: &PyReadonlyArray2<'_, f64>) -> (Vec<f64>, usize) {
    let a = x.as_array();
    (a.iter().copied().collect(), a.ncols())
}

fn matrix<'py>(py: Python<'py>, m: &smi::Matrix) -> PyResult<Bound<'py, PyArray2<f64>>> {
    PyArray1::from_slice(py, m.as_slice()).reshape([m.rows(), m.cols()])
}

/// A fitted network: the contents of a `.smi` model file.
#[pyclass(module = "smi._smi", frozen)]
pub struct BnnModel {
    file: ModelFile,
}

#[pymethods]
impl BnnModel {
    /// Reads the model file bytes (as `smi fit --save` writes them); `ValueError` if they are
    /// not a valid model file.
    #[staticmethod]
    fn from_bytes(data: &[u8]) -> PyResult<Self> {
        ModelFile::from_bytes(data, "the model bytes")
            .map(|file| BnnModel { file })
            .map_err(|e| PyValueError::new_err(format!("{e:#}")))
    }

    /// Reads a `.smi` model file.
    #[staticmethod]
    fn load(path: PathBuf) -> PyResult<Self> {
        ModelFile::load(&path)
            .map(|file| BnnModel { file })
            .map_err(|e| PyValueError::new_err(format!("{e:#}")))
    }

    /// The model file's bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = self.file.to_bytes().map_err(fit_err)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Writes the model file to `path` (which `smi predict --model` reads).
    fn save(&self, path: PathBuf) -> PyResult<()> {
        self.file.save(&path).map_err(fit_err)
    }

    /// The model file's JSON header.
    fn header_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.file.header).map_err(|e| SmiError::new_err(e.to_string()))
    }

    /// "regression" or "classification".
    #[getter]
    fn task(&self) -> &'static str {
        self.file.header.task.name()
    }

    /// The class names of a classifier (None for regression).
    #[getter]
    fn classes(&self) -> Option<Vec<String>> {
        self.file.header.classes.clone()
    }

    /// The feature names, in input order.
    #[getter]
    fn features(&self) -> Vec<String> {
        self.file.header.features.clone()
    }

    /// The same model with the Python estimator's state `json` (a JSON object) in its
    /// header's `estimator` member, which `save` and `to_bytes` then write.
    fn with_estimator_state(&self, json: &str) -> PyResult<Self> {
        let value: serde_json::Value = serde_json::from_str(json)
            .map_err(|e| PyValueError::new_err(format!("estimator state is not JSON: {e}")))?;
        let mut file = self.file.clone();
        file.header.estimator = Some(value);
        file.header.checksum = None;
        Ok(BnnModel { file })
    }

    /// The Python estimator's state the file holds (JSON), `None` for files of `smi fit`.
    fn estimator_state(&self) -> Option<String> {
        self.file.header.estimator.as_ref().map(|v| v.to_string())
    }

    /// Regression: per row (mean, std, lower, upper, log_pred) of the predictive distribution,
    /// the interval the central one of mass `coverage`, from `draws` draws seeded by `seed`;
    /// `log_pred` is the log predictive density of the targets `y` (empty without them).
    #[pyo3(signature = (x, draws = 1000, coverage = 0.9, seed = 0, y = None))]
    fn predict_regression<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
        draws: usize,
        coverage: f64,
        seed: u64,
        y: Option<PyReadonlyArray1<'py, f64>>,
    ) -> PyResult<[Bound<'py, PyArray1<f64>>; 5]> {
        guard::no_panic(|| {
            let (v, cols) = rows_of(&x);
            let y: Option<Vec<f64>> = y.map(|y| y.as_array().iter().copied().collect());
            let o = py
                .detach(|| {
                    arrays::predict_regression_arrays(
                        &self.file,
                        &v,
                        cols,
                        draws,
                        coverage,
                        seed,
                        y.as_deref(),
                    )
                })
                .map_err(fit_err)?;
            Ok([o.mean, o.std, o.lower, o.upper, o.log_pred].map(|v| PyArray1::from_vec(py, v)))
        })
    }

    /// Classification: the draw-averaged class probabilities (rows × classes).
    #[pyo3(signature = (x, draws = 1000, seed = 0))]
    fn predict_proba<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
        draws: usize,
        seed: u64,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        guard::no_panic(|| {
            let (v, cols) = rows_of(&x);
            let o = py
                .detach(|| arrays::predict_classes_arrays(&self.file, &v, cols, draws, seed))
                .map_err(fit_err)?;
            let c = self.file.header.classes.as_ref().map_or(0, Vec::len);
            let flat: Vec<f64> = o.probs.into_iter().flatten().collect();
            PyArray1::from_vec(py, flat).reshape([x.as_array().nrows(), c])
        })
    }

    /// Regression: `n` posterior predictive draws of y per row (rows × n).
    #[pyo3(signature = (x, n, seed = 0))]
    fn sample_y<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray2<'py, f64>,
        n: &Bound<'py, PyAny>,
        seed: u64,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        guard::no_panic(|| {
            let n = guard::count(n, "n", 0)?;
            let rows = x.as_array().nrows();
            guard::fits_in_memory("n", &[(rows, "rows"), (n, "draws")])?;
            let (v, cols) = rows_of(&x);
            let m = py
                .detach(|| arrays::sample_y_arrays(&self.file, &v, cols, n, seed))
                .map_err(fit_err)?;
            matrix(py, &m)
        })
    }

    fn __repr__(&self) -> String {
        let h = &self.file.header;
        format!(
            "BnnModel(task={:?}, method={:?}, sizes={:?}, steps={})",
            h.task.name(),
            h.method,
            h.architecture.sizes,
            h.training.steps
        )
    }
}

/// Fits a Bayesian network to `x` (rows × features) and `y` (regression targets, or class
/// indices into `classes`) by the pipeline of `smi fit`. Ctrl-C stops the fit (the
/// `KeyboardInterrupt` is raised); `n_jobs` threads work on it (default: all cores). `lr`
/// `None` is `smi fit --lr auto`: the learning-rate grid search. `hidden` `None` is `smi fit
/// --hidden auto` (widths sized to the training rows by `smi_fit::sizing::default_hidden`);
/// `temperature` `None` is `smi fit`'s default T for the method and task.
#[pyfunction]
#[pyo3(signature = (
    x, y, classes = None, features = None, target = "y".to_string(), *, method = "smi".to_string(),
    hidden = None, particles = 5, elbo_draws = 10, lr = None, max_steps = None,
    batch_size = 100, validation = None, seed = 0, n_jobs = None, temperature = None,
    prior_scale = 1.0
))]
#[allow(clippy::too_many_arguments)]
pub fn bnn_fit(
    py: Python<'_>,
    x: PyReadonlyArray2<'_, f64>,
    y: PyReadonlyArray1<'_, f64>,
    classes: Option<Vec<String>>,
    features: Option<Vec<String>>,
    target: String,
    method: String,
    hidden: Option<Vec<usize>>,
    particles: usize,
    elbo_draws: usize,
    lr: Option<f64>,
    max_steps: Option<u64>,
    batch_size: usize,
    validation: Option<f64>,
    seed: u64,
    n_jobs: Option<usize>,
    temperature: Option<f64>,
    prior_scale: f64,
) -> PyResult<BnnModel> {
    let (xv, cols) = rows_of(&x);
    let yv: Vec<f64> = y.as_array().iter().copied().collect();
    let rows = x.as_array().nrows();
    let data = ArrayData {
        x: &xv,
        rows,
        cols,
        y: &yv,
        classes,
        features: features.unwrap_or_else(|| (0..cols).map(|j| format!("x{j}")).collect()),
        target,
    };
    let method: smi::Method = method
        .parse()
        .map_err(|e: smi::Error| fit_err(anyhow::Error::new(e).context("--method")))?;
    let options = FitOptions {
        method,
        hidden,
        particles,
        elbo_draws: Some(elbo_draws),
        lr,
        max_steps,
        batch_size,
        validation,
        seed,
        prior_scale,
        temperature,
        ..FitOptions::default()
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n_jobs.unwrap_or(0))
        .build()
        .map_err(|e| SmiError::new_err(format!("cannot start {n_jobs:?} threads: {e}")))?;
    let interrupt = Interrupt::never();
    let mut signal: Option<PyErr> = None;
    let result = py.detach(|| {
        std::thread::scope(|s| {
            let worker = s.spawn(|| {
                pool.install(|| {
                    let control = RunControl::quiet(&interrupt);
                    smi_fit::fit(&Source::Arrays(data.clone()), &options, &control)
                })
            });
            // Ctrl-C: Python's handler only flags the signal; look at the flag while Rust works.
            while !worker.is_finished() {
                std::thread::sleep(Duration::from_millis(50));
                if signal.is_none() {
                    if let Err(e) = Python::attach(|py| py.check_signals()) {
                        signal = Some(e);
                        interrupt.raise();
                    }
                }
            }
            worker.join()
        })
    });
    if let Some(e) = signal {
        return Err(e);
    }
    match result {
        Ok(fitted) => fitted.map(|f| BnnModel { file: f.file }).map_err(fit_err),
        Err(_) => Err(SmiError::new_err("the fit panicked")),
    }
}
