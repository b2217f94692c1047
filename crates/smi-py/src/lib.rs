//! `smi._smi`: the Rust half of the Python package `smi` (the pure-Python half is `python/smi`).
//!
//! One function, `fit` (Python: `smi.fit`), runs any method of the method layer on a Python callable that
//! evaluates a batched log density; it returns a [`Posterior`]. The GIL is released while the
//! engine works and taken again for each call of the user's function (one call per step for
//! all K = m·S draws of the step).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod bnn;
mod density;
mod guard;
mod posterior;
mod settings;

use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;

pub use bnn::{bnn_fit, BnnModel};
pub use density::PyDensity;
pub use posterior::Posterior;
pub use settings::{FitOptions, DEFAULT_STEPS};

pyo3::create_exception!(
    smi,
    SmiError,
    PyException,
    "An error of the smi engine that is not a bad setting (bad settings raise ValueError)."
);

/// A Rust error as a Python exception: bad settings are `ValueError`, the rest `SmiError`.
pub fn to_py_err(err: smi::Error) -> PyErr {
    match err {
        smi::Error::InvalidSettings { .. } => PyValueError::new_err(err.to_string()),
        other => SmiError::new_err(other.to_string()),
    }
}

/// Fits the density `logdensity(theta) -> (logp, grad)` (θ: K×d float64) by `method`.
///
/// See `smi.fit` in the Python package for the meaning of each argument.
#[pyfunction]
#[pyo3(signature = (
    logdensity, dim, method = "smi", *, num_stein_particles = None, num_elbo_particles = None,
    num_steps = None, converge = true, optimizer = None, constant_lr = false, lr = None, init_radius = None, seed = 0,
    num_warmup = None, num_samples = None, num_chains = None, quality_draws = None,
    repulsion_temperature = None, guide = None, start = None, kernel = None,
    loss_temperature = None, init_scale = None, num_cycles = None, transition_speed = None,
    progress_bar = true
))]
#[allow(clippy::too_many_arguments)]
fn fit(
    py: Python<'_>,
    logdensity: Py<PyAny>,
    dim: &Bound<'_, PyAny>,
    method: &str,
    num_stein_particles: Option<Bound<'_, PyAny>>,
    num_elbo_particles: Option<Bound<'_, PyAny>>,
    num_steps: Option<Bound<'_, PyAny>>,
    converge: bool,
    optimizer: Option<String>,
    constant_lr: bool,
    lr: Option<f64>,
    init_radius: Option<f64>,
    seed: u64,
    num_warmup: Option<Bound<'_, PyAny>>,
    num_samples: Option<Bound<'_, PyAny>>,
    num_chains: Option<Bound<'_, PyAny>>,
    quality_draws: Option<Bound<'_, PyAny>>,
    repulsion_temperature: Option<f64>,
    guide: Option<String>,
    start: Option<String>,
    kernel: Option<String>,
    loss_temperature: Option<f64>,
    init_scale: Option<f64>,
    num_cycles: Option<Bound<'_, PyAny>>,
    transition_speed: Option<f64>,
    progress_bar: bool,
) -> PyResult<Posterior> {
    guard::no_panic(|| {
        if !logdensity.bind(py).is_callable() {
            return Err(PyValueError::new_err("logdensity must be callable"));
        }
        let dim = guard::count(dim, "dim", 1)?;
        let counted = |v: &Option<Bound<'_, PyAny>>, name: &str, min: usize| {
            guard::optional_count(v.as_ref(), name, min)
        };
        let options = FitOptions {
            method: method.to_string(),
            num_stein_particles: counted(&num_stein_particles, "num_stein_particles", 1)?,
            num_elbo_particles: counted(&num_elbo_particles, "num_elbo_particles", 1)?,
            num_steps: counted(&num_steps, "num_steps", 1)?.map(|v| v as u64),
            converge,
            constant_lr,
            optimizer,
            lr,
            init_radius,
            seed,
            num_warmup: counted(&num_warmup, "num_warmup", 0)?,
            num_samples: counted(&num_samples, "num_samples", 1)?,
            num_chains: counted(&num_chains, "num_chains", 1)?,
            quality_draws: counted(&quality_draws, "quality_draws", 0)?,
            repulsion_temperature,
            guide,
            start,
            kernel,
            loss_temperature,
            init_scale,
            num_cycles: counted(&num_cycles, "num_cycles", 1)?.map(|v| v as u64),
            transition_speed,
        };
        options.check_memory(dim)?;
        let (settings, run) = options.build(dim).map_err(to_py_err)?;
        let model = PyDensity::new(logdensity, dim);
        // A bar on a terminal, else a line a minute on stderr (smi_fit::progress).
        let every = progress_bar.then_some(smi_fit::progress::PLAIN_EVERY);
        let mut progress = smi_fit::progress::FitProgress::new(&format!("smi {method}"), every);
        let result = py.detach(|| smi::fit(&model, &settings, &run, &mut progress));
        match result {
            Ok(fit) => Ok(Posterior::new(fit, dim, model.calls())),
            Err(err) => Err(model.take_error().unwrap_or_else(|| to_py_err(err))),
        }
    })
}

/// The extension module.
#[pymodule]
fn _smi(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(fit, m)?)?;
    m.add_class::<Posterior>()?;
    m.add_function(wrap_pyfunction!(bnn_fit, m)?)?;
    m.add_class::<BnnModel>()?;
    m.add("SmiError", m.py().get_type::<SmiError>())?;
    m.add("DEFAULT_STEPS", DEFAULT_STEPS)?;
    Ok(())
}
