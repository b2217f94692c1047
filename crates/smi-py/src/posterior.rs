//! The result of `smi.fit` as a Python object.

use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use smi::rand::{ChaCha8Rng, SeedableRng};

use crate::{guard, to_py_err};

/// A fitted posterior: a mixture of guides (variational methods) or draws (NUTS), on the
/// unconstrained space the log density was written on.
#[pyclass(module = "smi._smi", frozen)]
pub struct Posterior {
    fit: smi::Fit,
    dim: usize,
    calls: u64,
}

impl Posterior {
    /// The fitted mixture, or an error naming the method that gave draws instead.
    fn mixture(&self) -> PyResult<&smi::Mixture> {
        self.fit.posterior.as_mixture().ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!(
                "{} gives draws, not a mixture: use draws()",
                self.fit.method.name()
            ))
        })
    }

    /// `part` of the fitted mixture as an array; None for NUTS.
    fn of_mixture<'py>(
        &self,
        py: Python<'py>,
        part: impl Fn(&smi::Mixture) -> smi::Matrix,
    ) -> PyResult<Option<Bound<'py, PyArray2<f64>>>> {
        self.fit
            .posterior
            .as_mixture()
            .map(|m| matrix(py, &part(m)))
            .transpose()
    }

    /// Wraps a finished fit of a model of dimension `dim` that called Python `calls` times.
    pub fn new(fit: smi::Fit, dim: usize, calls: u64) -> Self {
        Posterior { fit, dim, calls }
    }

    /// The count `n` of draws asked for by the parameter `name`, checked ([`guard::count`])
    /// and refused when its n × d array cannot fit in memory.
    fn draw_count(&self, n: &Bound<'_, PyAny>, name: &str) -> PyResult<usize> {
        let n = guard::count(n, name, 0)?;
        guard::fits_in_memory(name, &[(n, "draws"), (self.dim, "parameters")])?;
        Ok(n)
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
        n: &Bound<'py, PyAny>,
        seed: u64,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        guard::no_panic(|| {
            let n = self.draw_count(n, "n")?;
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let draws = self.fit.posterior.sample(n, &mut rng).map_err(to_py_err)?;
            matrix(py, &draws)
        })
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
    /// Under the table: the termination, the ELBO with its Monte Carlo standard error, k-hat
    /// and every warning. `reweighted=True` summarises Pareto-smoothed importance-resampled
    /// draws instead (variational methods with a density). `num_draws` `None`: 4000
    /// (`smi::Summary::DEFAULT_DRAWS`).
    #[pyo3(signature = (num_draws = None, seed = 0, reweighted = false))]
    fn summary(
        &self,
        num_draws: Option<&Bound<'_, PyAny>>,
        seed: u64,
        reweighted: bool,
    ) -> PyResult<String> {
        guard::no_panic(|| {
            let num_draws = match num_draws {
                Some(n) => self.draw_count(n, "num_draws")?,
                None => smi::Summary::DEFAULT_DRAWS,
            };
            let table = if reweighted {
                self.fit.reweighted_summary(num_draws, seed)
            } else {
                self.fit.summary(num_draws, seed)
            }
            .map_err(to_py_err)?;
            Ok(table.to_string())
        })
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

    /// Why the fit ended: "converged" (the convergence rule), "max_steps" (the cap),
    /// "early_stopped", or a failure: "diverged" (non-finite or absurd ELBO estimates) or
    /// "unstable" (heavy-tailed, partly non-finite or falling ELBO estimates);
    /// `termination_reason` says why.
    #[getter]
    fn termination(&self) -> &'static str {
        self.fit.termination.name()
    }

    /// Why a fit ended "diverged" or "unstable", in words (None otherwise).
    #[getter]
    fn termination_reason(&self) -> Option<String> {
        self.fit.termination_reason.clone()
    }

    /// The fit-quality diagnostic k-hat (Pareto-smoothed importance sampling of
    /// log p - log q over draws of the final approximation); None for NUTS and for the
    /// point-mass methods (SVGD, ASVGD, MAP), which have no density.
    #[getter]
    fn khat(&self) -> Option<f64> {
        self.fit.quality.as_ref().and_then(|q| q.khat)
    }

    /// The relative effective sample size of the diagnostic's Pareto-smoothed importance
    /// weights, ESS / draws (1: the approximation is the posterior; small: few draws carry
    /// the weight, as when the approximation is much wider than the posterior); None without
    /// k-hat.
    #[getter]
    fn psis_relative_ess(&self) -> Option<f64> {
        self.fit
            .quality
            .as_ref()
            .filter(|q| q.khat.is_some())
            .map(|q| q.relative_ess())
    }

    /// The threshold k-hat is judged by (0.7 at the default 2000 draws); None without k-hat.
    #[getter]
    fn khat_threshold(&self) -> Option<f64> {
        self.fit
            .quality
            .as_ref()
            .filter(|q| q.khat.is_some())
            .map(|q| q.threshold)
    }

    /// The run's ELBO at the end (mean of the last <= 500 finite step estimates); None for
    /// NUTS.
    #[getter]
    fn elbo(&self) -> Option<f64> {
        self.fit.elbo.map(|e| e.mean)
    }

    /// The Monte Carlo standard error of `elbo`.
    #[getter]
    fn elbo_mcse(&self) -> Option<f64> {
        self.fit.elbo.map(|e| e.mcse)
    }

    /// What is wrong with the fit, in plain words (empty when its diagnostics find nothing):
    /// a diverged or unstable run, k-hat above its threshold, skipped steps, NUTS divergences.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.fit.warnings()
    }

    /// Whether the fit's own diagnostics find nothing wrong (`warnings` is empty).
    #[getter]
    fn trusted(&self) -> bool {
        self.fit.trusted()
    }

    /// `n` draws (n x d) resampled by their Pareto-smoothed importance weights: the
    /// approximation corrected towards the posterior (variational methods with a density).
    #[pyo3(signature = (n, seed = 0))]
    fn sample_reweighted<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
        seed: u64,
    ) -> PyResult<Bound<'py, PyArray2<f64>>> {
        guard::no_panic(|| {
            let n = self.draw_count(n, "n")?;
            let q = self.fit.quality.as_ref().ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "{} has no fit-quality diagnostic to reweight by",
                    self.fit.method.name()
                ))
            })?;
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let draws = q.resample(n, &mut rng).map_err(to_py_err)?;
            matrix(py, &draws)
        })
    }

    /// Steps skipped because the log density or its gradient was NaN or infinite at one of
    /// the step's draws (those steps left the particles where they were); above zero,
    /// `warnings` says so. NUTS: its divergent transitions after warm-up.
    #[getter]
    fn skipped_steps(&self) -> u64 {
        self.fit.skipped_steps
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

    /// NUTS's chains (None for the variational methods); `draws()` holds chain c in rows
    /// `c·n .. (c+1)·n` with n = rows / num_chains.
    #[getter]
    fn num_chains(&self) -> Option<usize> {
        self.fit.nuts.as_ref().map(|n| n.num_chains)
    }

    /// NUTS's statistics of every kept draw, as arrays of shape (chains, draws): `diverging`
    /// (bool), `energy`, `tree_depth` (int), `step_size`, `lp` (log density) and `n_steps`
    /// (leapfrog steps, int); None for the variational methods.
    fn nuts_stats<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(n) = &self.fit.nuts else {
            return Ok(None);
        };
        let (c, k) = (n.num_chains, n.num_draws);
        let stats: Vec<&smi::DrawStats> = n
            .chains
            .iter()
            .flat_map(|ch| ch.draw_stats.iter())
            .collect();
        if stats.len() != c * k {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "NUTS kept {} draw statistics for {c} chains of {k} draws",
                stats.len()
            )));
        }
        // One (chains × draws) array of a statistic.
        fn grid<'py, T: numpy::Element>(
            py: Python<'py>,
            values: Vec<T>,
            shape: [usize; 2],
        ) -> PyResult<Bound<'py, PyArray2<T>>> {
            PyArray1::from_vec(py, values).reshape(shape)
        }
        let f = |g: fn(&smi::DrawStats) -> f64| stats.iter().map(|s| g(s)).collect::<Vec<_>>();
        let i =
            |g: fn(&smi::DrawStats) -> u64| stats.iter().map(|s| g(s) as i64).collect::<Vec<_>>();
        let shape = [c, k];
        let d = PyDict::new(py);
        let diverging: Vec<bool> = stats.iter().map(|s| s.divergent).collect();
        d.set_item("diverging", grid(py, diverging, shape)?)?;
        d.set_item("energy", grid(py, f(|s| s.energy), shape)?)?;
        d.set_item("tree_depth", grid(py, i(|s| s.tree_depth), shape)?)?;
        d.set_item("step_size", grid(py, f(|s| s.step_size), shape)?)?;
        d.set_item("lp", grid(py, f(|s| s.log_density), shape)?)?;
        d.set_item("n_steps", grid(py, i(|s| s.n_leapfrog), shape)?)?;
        Ok(Some(d))
    }

    /// `n` draws (n×d) from the fitted mixture with the component (particle) each was drawn
    /// from (n), reproducible by `seed`: the draws `sample(n, seed)` gives. An error for NUTS.
    #[pyo3(signature = (n, seed = 0))]
    #[allow(clippy::type_complexity)]
    fn sample_components<'py>(
        &self,
        py: Python<'py>,
        n: &Bound<'py, PyAny>,
        seed: u64,
    ) -> PyResult<(Bound<'py, PyArray2<f64>>, Bound<'py, PyArray1<i64>>)> {
        guard::no_panic(|| {
            let n = self.draw_count(n, "n")?;
            let mixture = self.mixture()?;
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let drawn = mixture.sample(n, &mut rng).map_err(to_py_err)?;
            let components = drawn.assignments.iter().map(|&c| c as i64).collect();
            Ok((
                matrix(py, &drawn.theta)?,
                PyArray1::from_vec(py, components),
            ))
        })
    }

    /// The mixture's particles: one row of guide parameters ψ per particle (m × p; for the
    /// mean-field Normal guide p = 2d, the locations then the unconstrained scales). None for
    /// NUTS.
    #[getter]
    fn particles<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray2<f64>>>> {
        self.fit
            .posterior
            .as_mixture()
            .map(|m| matrix(py, m.particles()))
            .transpose()
    }

    /// The components' locations (m × d; the particles themselves for point masses). None for
    /// NUTS.
    #[getter]
    fn locations<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray2<f64>>>> {
        self.of_mixture(py, smi::Mixture::locations)
    }

    /// The components' marginal standard deviations (m × d; zeros for point masses). None for
    /// NUTS.
    #[getter]
    fn scales<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyArray2<f64>>>> {
        self.of_mixture(py, smi::Mixture::scales)
    }

    /// The fit as ArviZ data (`import arviz`; `pip install "smi[arviz]"`): an `InferenceData`
    /// for ArviZ < 1, a `DataTree` for ArviZ ≥ 1, that `az.summary` reads. Groups:
    /// `posterior` (`theta`, chains × draws × d; a variational fit is one chain of
    /// `num_samples` mixture draws), `sample_stats` (NUTS: `diverging`, `energy`,
    /// `tree_depth`, `step_size`, `lp`, `n_steps`; a mixture: each draw's `component`),
    /// `mixture` (the particles' `location`, `scale` and raw `params`), `optimization` (the
    /// `elbo` and `loss` of every step), `observed_data` when given; the fit's diagnostics
    /// (method, termination, trusted, khat, ELBO) are the posterior's attributes.
    #[pyo3(signature = (num_samples = 1000, seed = 0, observed_data = None))]
    fn to_arviz<'py>(
        slf: &Bound<'py, Self>,
        num_samples: usize,
        seed: u64,
        observed_data: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        slf.py()
            .import("smi._arviz")?
            .call_method1("from_posterior", (slf, num_samples, seed, observed_data))
    }

    fn __repr__(&self) -> String {
        format!(
            "Posterior(method={:?}, dim={}, steps={}, termination={:?}, khat={})",
            self.fit.method.name(),
            self.dim,
            self.fit.steps,
            self.termination(),
            self.khat().map_or("None".into(), |k| format!("{k:.2}"))
        )
    }
}
