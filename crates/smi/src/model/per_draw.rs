//! Models written one draw at a time: implement [`PerDraw`] (a prior and, for a model with data,
//! a likelihood over given rows) and the blanket implementation makes it a [`LogDensity`]: it
//! checks the shapes, loops over the K draws, picks each draw's rows from the [`Batch`], scales
//! the likelihood by N/b and passes on the Jacobian flag.

use rand::RngCore;

use crate::error::{Error, Result};
use crate::model::{check_shapes, Batch, Layout, LogDensity};

/// A model evaluated one draw at a time; every `PerDraw` type is a [`LogDensity`].
///
/// ```
/// use smi::{Batch, LogDensity, PerDraw};
///
/// /// y_i ~ N(μ, 1), μ ~ N(0, 10²).
/// struct Mean { y: Vec<f64> }
///
/// impl PerDraw for Mean {
///     fn dim(&self) -> usize { 1 }
///     fn num_data(&self) -> usize { self.y.len() }
///     fn log_prior(&self, t: &[f64], _jacobian: bool, g: &mut [f64]) -> smi::Result<f64> {
///         g[0] += -t[0] / 100.0;
///         Ok(-0.5 * t[0] * t[0] / 100.0)
///     }
///     fn log_likelihood(&self, t: &[f64], rows: &[usize], scale: f64, g: &mut [f64]) -> smi::Result<f64> {
///         let r: Vec<f64> = rows.iter().map(|&i| self.y[i] - t[0]).collect();
///         g[0] += scale * r.iter().sum::<f64>();
///         Ok(-0.5 * scale * r.iter().map(|v| v * v).sum::<f64>())
///     }
/// }
///
/// let m = Mean { y: vec![1.0, 3.0] };
/// let (mut lp, mut g) = (vec![0.0; 2], vec![0.0; 2]);
/// m.log_density_and_grad(&[2.0, 0.0], &Batch::full(), &mut lp, &mut g)?;
/// assert!((lp[0] + 1.02).abs() < 1e-12 && (g[0] + 0.02).abs() < 1e-12 && g[1] == 4.0);
/// # Ok::<(), smi::Error>(())
/// ```
pub trait PerDraw: Send + Sync {
    /// d, the number of unconstrained parameters.
    fn dim(&self) -> usize;

    /// N, the data rows the likelihood sums over (0, the default, for a model without data).
    fn num_data(&self) -> usize {
        0
    }

    /// log p(θ) of the prior for one draw θ (length d), with log|T′(u)| of constrained latents
    /// added when `jacobian` is set; **adds** ∇_θ of it into `grad` (length d, zeroed before).
    ///
    /// # Errors
    /// Model-specific.
    fn log_prior(&self, theta: &[f64], jacobian: bool, grad: &mut [f64]) -> Result<f64>;

    /// `scale` × Σ_{i ∈ rows} log p(y_i | θ) for one draw, **adding** `scale` × its gradient into
    /// `grad`. The default (a model without data) is 0.
    ///
    /// # Errors
    /// Model-specific.
    fn log_likelihood(
        &self,
        _theta: &[f64],
        _rows: &[usize],
        _scale: f64,
        _grad: &mut [f64],
    ) -> Result<f64> {
        Ok(0.0)
    }

    /// Names of the slices of θ (default: one block `"theta"`).
    fn layout(&self) -> Layout {
        Layout::flat(self.dim())
    }

    /// One draw from the prior in unconstrained space (see [`LogDensity::sample_prior`]).
    ///
    /// # Errors
    /// [`Error::Unsupported`] by default.
    fn sample_prior(&self, _rng: &mut dyn RngCore, _out: &mut [f64]) -> Result<()> {
        Err(Error::Unsupported(
            "this model cannot sample its prior; use a uniform initialisation".into(),
        ))
    }
}

impl<T: PerDraw> LogDensity for T {
    fn dim(&self) -> usize {
        PerDraw::dim(self)
    }

    fn num_data(&self) -> usize {
        PerDraw::num_data(self)
    }

    fn log_density_and_grad(
        &self,
        theta: &[f64],
        batch: &Batch,
        logp: &mut [f64],
        grad: &mut [f64],
    ) -> Result<()> {
        let d = PerDraw::dim(self);
        let k = check_shapes(d, theta, logp, grad)?;
        let n = PerDraw::num_data(self);
        batch.validate(n, k)?;
        let all: Vec<usize> = match batch.rows_for_draw(0) {
            None if n > 0 => (0..n).collect(),
            _ => Vec::new(),
        };
        for (i, ((t, g), l)) in theta
            .chunks_exact(d)
            .zip(grad.chunks_exact_mut(d))
            .zip(logp.iter_mut())
            .enumerate()
        {
            g.fill(0.0);
            *l = self.log_prior(t, batch.jacobian, g)?;
            if n > 0 {
                let rows = batch.rows_for_draw(i).unwrap_or(&all);
                *l += self.log_likelihood(t, rows, batch.scale, g)?;
            }
        }
        Ok(())
    }

    fn layout(&self) -> Layout {
        PerDraw::layout(self)
    }

    fn sample_prior(&self, rng: &mut dyn RngCore, out: &mut [f64]) -> Result<()> {
        PerDraw::sample_prior(self, rng, out)
    }
}
