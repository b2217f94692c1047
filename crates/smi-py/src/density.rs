//! A Python callable as a [`smi::LogDensity`]: `logdensity(theta) -> (logp, grad)` on K×d draws.

use std::sync::Mutex;

use numpy::{PyArray1, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods};
use pyo3::prelude::*;
use smi::{check_shapes, Batch, LogDensity};

/// The user's batched log density. Each call takes the GIL, passes θ (K×d, float64) and reads
/// back log p (K) and ∇ log p (K×d). A Python exception, a pending signal (Ctrl-C) or a bad
/// return value is kept in `error` and ends the fit; the caller re-raises it.
pub struct PyDensity {
    callable: Py<PyAny>,
    dim: usize,
    error: Mutex<Option<PyErr>>,
    calls: std::sync::atomic::AtomicU64,
}

impl PyDensity {
    /// Wraps `callable` for parameters of dimension `dim`.
    pub fn new(callable: Py<PyAny>, dim: usize) -> Self {
        PyDensity {
            callable,
            dim,
            error: Mutex::new(None),
            calls: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The Python error that stopped the fit, if one did (taken: a second call gives `None`).
    pub fn take_error(&self) -> Option<PyErr> {
        self.error.lock().ok().and_then(|mut e| e.take())
    }

    /// How many times the callable was called.
    pub fn calls(&self) -> u64 {
        self.calls.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn evaluate(
        &self,
        py: Python<'_>,
        theta: &[f64],
        k: usize,
        logp: &mut [f64],
        grad: &mut [f64],
    ) -> PyResult<()> {
        py.check_signals()?;
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let x = PyArray1::from_slice(py, theta).reshape([k, self.dim])?;
        let out = self.callable.bind(py).call1((x,))?;
        let bad = |what: &str| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "logdensity must return (logp, grad) with logp of shape ({k},) and grad of \
                 shape ({k}, {}); {what}",
                self.dim
            ))
        };
        if out.len().ok() != Some(2) {
            return Err(bad("it returned something else"));
        }
        let np = py.import("numpy")?;
        let lp_obj = np.call_method1("ascontiguousarray", (out.get_item(0)?, "float64"))?;
        let g_obj = np.call_method1("ascontiguousarray", (out.get_item(1)?, "float64"))?;
        let lp: PyReadonlyArrayDyn<'_, f64> = lp_obj
            .extract()
            .map_err(|_| bad("logp is not a float array"))?;
        let g: PyReadonlyArrayDyn<'_, f64> = g_obj
            .extract()
            .map_err(|_| bad("grad is not a float array"))?;
        if lp.len() != k {
            return Err(bad(&format!("logp has shape {:?}", lp.shape())));
        }
        let g_shape_ok = g.shape() == [k, self.dim] || (k == 1 && g.shape() == [self.dim]);
        if !g_shape_ok {
            return Err(bad(&format!("grad has shape {:?}", g.shape())));
        }
        logp.copy_from_slice(lp.as_slice()?);
        grad.copy_from_slice(g.as_slice()?);
        Ok(())
    }
}

impl LogDensity for PyDensity {
    fn dim(&self) -> usize {
        self.dim
    }

    /// One Python call per step: each call crosses into Python (and JAX) with a fixed cost,
    /// and `smi.numpyro` draws one data subsample per call, shared by the step's draws.
    fn one_call_per_step(&self) -> bool {
        true
    }

    fn log_density_and_grad(
        &self,
        theta: &[f64],
        _batch: &Batch,
        logp: &mut [f64],
        grad: &mut [f64],
    ) -> smi::Result<()> {
        let k = check_shapes(self.dim, theta, logp, grad)?;
        let result = Python::attach(|py| self.evaluate(py, theta, k, logp, grad));
        result.map_err(|err| {
            let message = Python::attach(|py| {
                let text = err.to_string();
                if let Ok(mut slot) = self.error.lock() {
                    slot.get_or_insert(err.clone_ref(py));
                }
                text
            });
            smi::Error::Model(format!("the Python log density failed: {message}").into())
        })
    }
}
