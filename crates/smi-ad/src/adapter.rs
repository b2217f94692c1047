//! [`Ad`]: an [`AdModel`] as a [`LogDensity`], its gradient by forward-mode dual numbers.

use num_dual::DualSVec64;
use smi::rand::RngCore;
use smi::{check_shapes, Batch, Layout, LogDensity, Result};

use crate::chunk::{value_and_gradient, Duals, CHUNK};
use crate::model::{AdModel, Scalar};

/// An [`AdModel`] with exact gradients: implements [`LogDensity`], so every engine of `smi`
/// (and [`smi::fit`]) takes it.
///
/// For each of the K draws of a call it evaluates `log_prior + batch.scale · log_likelihood`
/// (the likelihood on the draw's rows of the [`Batch`], all N rows for a full batch; skipped
/// when N = 0) on dual numbers of `num-dual` carrying 3 partial derivatives, so a gradient
/// takes ⌈d/3⌉ evaluations of the model (forward mode in chunks). Its cost is about 5× the
/// hand-written gradient at d = 10 and grows with d (about 40× at d = 100; the crate's README
/// has the table): fine for small hierarchical models; for models with hundreds of parameters
/// a hand-written [`smi::PerDraw`] is the faster choice.
#[derive(Clone, Debug)]
pub struct Ad<M> {
    model: M,
}

impl<M: AdModel> Ad<M> {
    /// Wraps `model`.
    pub fn new(model: M) -> Self {
        Ad { model }
    }

    /// The wrapped model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// Unwraps the model.
    pub fn into_inner(self) -> M {
        self.model
    }

    /// log p(θ, batch) of one draw (length d) on a [`Batch`] that uses all rows or the same
    /// rows for every draw, evaluated in plain `f64` without derivatives.
    ///
    /// # Errors
    /// [`smi::Error::Shape`] for a `theta` not of length d, [`smi::Error::Data`] for a bad
    /// row index, and the model's own errors.
    pub fn log_density(&self, theta: &[f64], batch: &Batch) -> Result<f64> {
        let d = self.model.dim();
        if theta.len() != d {
            return Err(smi::Error::shape("theta", d, theta.len()));
        }
        let n = self.model.num_data();
        batch.validate(n, 1)?;
        let all = all_rows(n, batch);
        let rows = batch.rows_for_draw(0).unwrap_or(&all);
        self.eval(theta, rows, batch)
    }

    /// `log_prior + scale · log_likelihood` of one draw in any scalar type.
    fn eval<T: Scalar>(&self, theta: &[T], rows: &[usize], batch: &Batch) -> Result<T> {
        let prior = self.model.log_prior(theta, batch.jacobian)?;
        if self.model.num_data() == 0 {
            return Ok(prior);
        }
        Ok(prior + self.model.log_likelihood(theta, rows)? * batch.scale)
    }
}

/// Every row index when the batch is the full data of a model with data, else nothing.
fn all_rows(n: usize, batch: &Batch) -> Vec<usize> {
    match batch.rows_for_draw(0) {
        None if n > 0 => (0..n).collect(),
        _ => Vec::new(),
    }
}

impl<M: AdModel> LogDensity for Ad<M> {
    fn dim(&self) -> usize {
        self.model.dim()
    }

    fn num_data(&self) -> usize {
        self.model.num_data()
    }

    fn log_density_and_grad(
        &self,
        theta: &[f64],
        batch: &Batch,
        logp: &mut [f64],
        grad: &mut [f64],
    ) -> Result<()> {
        let d = self.model.dim();
        let k = check_shapes(d, theta, logp, grad)?;
        batch.validate(self.model.num_data(), k)?;
        let all = all_rows(self.model.num_data(), batch);
        let mut buf: Duals<CHUNK> = Vec::with_capacity(d);
        for (i, ((t, g), l)) in theta
            .chunks_exact(d)
            .zip(grad.chunks_exact_mut(d))
            .zip(logp.iter_mut())
            .enumerate()
        {
            let rows = batch.rows_for_draw(i).unwrap_or(&all);
            *l = value_and_gradient(t, g, &mut buf, |x: &[DualSVec64<CHUNK>]| {
                self.eval(x, rows, batch)
            })?;
        }
        Ok(())
    }

    fn layout(&self) -> Layout {
        self.model.layout()
    }

    fn sample_prior(&self, rng: &mut dyn RngCore, out: &mut [f64]) -> Result<()> {
        self.model.sample_prior(rng, out)
    }
}
