//! The result of `smi.fit` as a Python object.

use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use smi::rand::{ChaCha8Rng, SeedableRng};

use crate::to_py_err;

/// A fitted posterior: a mixture of guides (variational methods) or draws (NUTS), on the
/// unconstrained space the log density was written on.
#[pyclass(module = "smi._smi", frozen)]
pub struct Posterior {
    fit: smi::Fit,
    dim: usize,
    calls: u64,
}

impl Posterior {
    /// Wraps a finished fit of a model of dimension `dim` that called Python `calls` times.
    pub fn new(fit: smi::Fit, dim: usize, calls: u64) -> Self {
        Posterior { fit, dim, calls }
    }
}

fn matrix<'py>(py: Python<'py>, m: &smi::Matrix) -> PyResult<Bound<'py, PyArray2<f64>>> {
    PyArray1::from_slice(py, m.as_slice()).reshape([m.rows(), m.cols()])
}

#[pymethods]
impl Posterior {
    /// `n` draws (n×d) from the posterior, reproducible by `seed`.
    #[pyo3(signature = (n, seed = 0))]
    fn sample<'py>(
        &self,
        py: Python<'py>,
        n: usize,
        seed: u64,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let draws = self.fit.posterior.sample(n, &mut rng).map_err(to_py_err)?;
        matrix(py, &draws)
    }

    /// NUTS's draws (all chains one after another, n×d); an error for the variational methods,
    /// whose posterior is a mixture to `sample` from.
    fn draws<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        match self.fit.posterior.as_draws() {
            Some(d) => matrix(py, d),
            None => Err(pyo3::exceptions::PyValueError::new_err(format!(
                "{} gives a mixture, not draws: use sample(n, seed)",
                self.fit.method.name()
            ))),
        }
    }

    /// The posterior mean (d).
    #[getter]
    fn mean<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_vec(py, self.fit.posterior.mean())
    }

    /// The posterior marginal variances (d).
    #[getter]
    fn var<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_vec(py, self.fit.posterior.variance())
    }

    /// The loss of every step: the Stein force norm ‖φ‖ (SMI, SVGD, ASVGD), the negative
    /// ELBO estimate (OVI, MAP) or −log p of each draw (NUTS).
    #[getter]
    fn losses<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.fit.losses)
    }

    /// The (mixture) ELBO estimate of every step, beside `losses` (empty for NUTS).
    #[getter]
    fn elbos<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        PyArray1::from_slice(py, &self.fit.elbos)
    }

    /// A table of mean, sd, 5 %, 50 % and 95 % per parameter (by the model's names; `theta[i]`
    /// for a plain callable), from `num_draws` draws of a variational posterior, or from NUTS's
    /// draws with bulk and tail ESS and R̂.
    #[pyo3(signature = (num_draws = smi::Summary::DEFAULT_DRAWS, seed = 0))]
    fn summary(&self, num_draws: usize, seed: u64) -> PyResult<String> {
        let table = self.fit.summary(num_draws, seed).map_err(to_py_err)?;
        Ok(table.to_string())
    }

    /// The method's name.
    #[getter]
    fn method(&self) -> &'static str {
        self.fit.method.name()
    }

    /// d, the number of parameters.
    #[getter]
    fn dim(&self) -> usize {
        self.dim
    }

    /// Steps taken (NUTS: warm-up + draws per chain).
    #[getter]
    fn steps(&self) -> u64 {
        self.fit.steps
    }

    /// Why the fit ended: "converged" (the convergence rule), "max_steps" (the cap) or
    /// "early_stopped".
    #[getter]
    fn termination(&self) -> &'static str {
        match self.fit.termination {
            smi::Termination::Converged => "converged",
            smi::Termination::MaxSteps => "max_steps",
            smi::Termination::EarlyStopped => "early_stopped",
        }
    }

    /// Wall-clock seconds of the fit.
    #[getter]
    fn seconds(&self) -> f64 {
        self.fit.seconds
    }

    /// How many times the log density was called.
    #[getter]
    fn num_calls(&self) -> u64 {
        self.calls
    }

    /// NUTS's divergent transitions after warm-up (None for the variational methods).
    #[getter]
    fn divergences(&self) -> Option<usize> {
        self.fit.nuts.as_ref().map(|n| n.divergences)
    }

    fn __repr__(&self) -> String {
        format!(
            "Posterior(method={:?}, dim={}, steps={}, termination={:?})",
            self.fit.method.name(),
            self.dim,
            self.fit.steps,
            self.termination()
        )
    }
}
