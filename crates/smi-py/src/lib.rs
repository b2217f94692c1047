//! `smi._smi`: the Rust half of the Python package `smi` (the pure-Python half is `python/smi`).
//!
//! One function, `fit` (Python: `smi.fit`), runs any method of the method layer on a Python callable that
//! evaluates a batched log density; it returns a [`Posterior`]. The GIL is released while the
//! engine works and taken again for each call of the user's function (one call per step for
//! all K = m·S draws of the step).
#![deny(missing_docs)]

mod bnn;
mod density;
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
    repulsion_temperature = None, guide = None, start = None
))]
#[allow(clippy::too_many_arguments)]
fn fit(
    py: Python<'_>,
    logdensity: Py<PyAny>,
    dim: usize,
    method: &str,
    num_stein_particles: Option<usize>,
    num_elbo_particles: Option<usize>,
    num_steps: Option<u64>,
    converge: bool,
    optimizer: Option<String>,
    constant_lr: bool,
    lr: Option<f64>,
    init_radius: Option<f64>,
    seed: u64,
    num_warmup: Option<usize>,
    num_samples: Option<usize>,
    num_chains: Option<usize>,
    quality_draws: Option<usize>,
    repulsion_temperature: Option<f64>,
    guide: Option<String>,
    start: Option<String>,
) -> PyResult<Posterior> {
    if !logdensity.bind(py).is_callable() {
        return Err(PyValueError::new_err("logdensity must be callable"));
    }
    if dim == 0 {
        return Err(PyValueError::new_err("dim must be at least 1"));
    }
    let options = FitOptions {
        method: method.to_string(),
        num_stein_particles,
        num_elbo_particles,
        num_steps,
        converge,
        constant_lr,
        optimizer,
        lr,
        init_radius,
        seed,
        num_warmup,
        num_samples,
        num_chains,
        quality_draws,
        repulsion_temperature,
        guide,
        start,
    };
    let (settings, run) = options.build(dim).map_err(to_py_err)?;
    let model = PyDensity::new(logdensity, dim);
    let result = py.detach(|| smi::fit(&model, &settings, &run, &mut smi::NoObserver));
    match result {
        Ok(fit) => Ok(Posterior::new(fit, dim, model.calls())),
        Err(err) => Err(model.take_error().unwrap_or_else(|| to_py_err(err))),
    }
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
