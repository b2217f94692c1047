//! The model contract: a batched log density with its gradient, on unconstrained parameters.

mod batch;
mod constrained;
mod constraint;
mod layout;
mod per_draw;
mod transform;

pub use batch::{Batch, Batcher, Rows};
pub use constrained::{Constrained, ConstrainedModel};
pub use constraint::{Constraint, SIMPLEX_TOLERANCE};
pub use layout::{Block, Layout};
pub use per_draw::PerDraw;
pub(crate) use transform::softplus_and_sigmoid;
pub use transform::{inv_softplus, log_sigmoid, sigmoid, softplus, Transform};

use rand::RngCore;

use crate::error::{Error, Result};

/// A target density p(θ, D) on unconstrained θ ∈ ℝᵈ, evaluated for many draws at once.
///
/// This is the only thing an engine needs from a model (like nuts-rs's `CpuLogpFunc`, batched).
/// Constrained latents are either the model's business (it works on unconstrained θ, maps it
/// through a transform and adds the log-Jacobian when `batch.jacobian` is set) or the
/// library's: write a [`ConstrainedModel`] on the constrained values and wrap it in
/// [`Constrained`], which declares the [`Constraint`]s in its layout and applies the
/// transforms and Jacobians.
pub trait LogDensity: Send + Sync {
    /// d, the number of unconstrained parameters.
    fn dim(&self) -> usize;

    /// N, the number of data rows the likelihood sums over (0 for a model without data, the
    /// default). Engines draw mini-batches of these rows.
    fn num_data(&self) -> usize {
        0
    }

    /// For K = `theta.len() / dim()` draws (`theta` is K×d, row-major), writes
    /// `logp[k] = log p(θ_k, batch)` (prior + `batch.scale` × log-likelihood of the draw's rows
    /// [+ log-Jacobian]) and `grad[k, :] = ∇_θ log p(θ_k, batch)` (K×d).
    ///
    /// # Errors
    /// Model-specific; shapes are checked by [`check_shapes`] before the call by every engine.
    fn log_density_and_grad(
        &self,
        theta: &[f64],
        batch: &Batch,
        logp: &mut [f64],
        grad: &mut [f64],
    ) -> Result<()>;

    /// Whether the engines must evaluate all K draws of a step in **one** call (default
    /// `false`). With `false`, an engine may call [`Self::log_density_and_grad`] several times
    /// per step on parts of the K draws (the SMI step with the Normal guide takes its draws in
    /// cache-sized sub-blocks), each part with its own rows of the step's batch. Return `true`
    /// for a model with a large fixed cost per call (one evaluated in another runtime, such as a
    /// Python/JAX function) or one that must see every draw of a step at once (e.g. it draws one
    /// data subsample per call and should share it across the step's draws).
    fn one_call_per_step(&self) -> bool {
        false
    }

    /// Names of the slices of θ and their constraints (default: one real block `"theta"`).
    /// Summaries and constrained draws ([`crate::Fit::summary`], [`crate::Fit::draws`]) map θ
    /// through these constraints, so a model on unconstrained θ that declares a constrained
    /// block must use the same transform (e.g. x = exp(u) for [`Constraint::Positive`]).
    fn layout(&self) -> Layout {
        Layout::flat(self.dim())
    }

    /// Writes one draw from the prior, in unconstrained space, into `out` (length d). Needed only
    /// for the `PriorMedian` initialisation of point-mass guides.
    ///
    /// # Errors
    /// [`Error::Unsupported`] by default.
    fn sample_prior(&self, _rng: &mut dyn RngCore, _out: &mut [f64]) -> Result<()> {
        Err(Error::Unsupported(
            "this model cannot sample its prior; use a uniform initialisation".into(),
        ))
    }
}

/// Checks the buffers of a [`LogDensity::log_density_and_grad`] call and returns K.
///
/// # Errors
/// [`Error::Shape`] when `theta` is not a whole number of d-vectors or `logp`/`grad` disagree.
pub fn check_shapes(dim: usize, theta: &[f64], logp: &[f64], grad: &[f64]) -> Result<usize> {
    if dim == 0 {
        return Err(Error::invalid("dim", "the model has no parameters"));
    }
    if !theta.len().is_multiple_of(dim) {
        return Err(Error::shape("theta", format!("K×{dim}"), theta.len()));
    }
    let k = theta.len() / dim;
    if logp.len() != k {
        return Err(Error::shape("logp", k, logp.len()));
    }
    if grad.len() != theta.len() {
        return Err(Error::shape("grad", theta.len(), grad.len()));
    }
    Ok(k)
}

/// A [`LogDensity`] from a closure evaluating one draw: `f(θ, grad_out) -> log p` (it writes the
/// whole gradient).
///
/// Handy in tests and examples: a density without data, taken as it is (the Jacobian flag of
/// the [`Batch`] does not apply; a model with data or constrained latents implements
/// [`PerDraw`] or [`LogDensity`]).
///
/// ```
/// use smi::{FnDensity, LogDensity, Batch};
/// let normal = FnDensity::new(2, |x: &[f64], g: &mut [f64]| {
///     g.iter_mut().zip(x).for_each(|(g, x)| *g = -x);
///     -0.5 * x.iter().map(|v| v * v).sum::<f64>()
/// });
/// let (mut lp, mut g) = (vec![0.0; 1], vec![0.0; 2]);
/// normal.log_density_and_grad(&[1.0, 2.0], &Batch::full(), &mut lp, &mut g).unwrap();
/// assert_eq!(lp[0], -2.5);
/// ```
pub struct FnDensity<F> {
    dim: usize,
    f: F,
}

impl<F> FnDensity<F>
where
    F: Fn(&[f64], &mut [f64]) -> f64 + Send + Sync,
{
    /// Wraps `f` for parameters of dimension `dim`.
    pub fn new(dim: usize, f: F) -> Self {
        FnDensity { dim, f }
    }
}

impl<F> PerDraw for FnDensity<F>
where
    F: Fn(&[f64], &mut [f64]) -> f64 + Send + Sync,
{
    fn dim(&self) -> usize {
        self.dim
    }

    fn log_prior(&self, theta: &[f64], _jacobian: bool, grad: &mut [f64]) -> Result<f64> {
        Ok((self.f)(theta, grad))
    }
}
