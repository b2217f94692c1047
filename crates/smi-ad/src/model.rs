//! What the user writes: a log density generic over the scalar type ([`AdModel`]).

use num_dual::DualNum;
use smi::rand::RngCore;
use smi::{Error, Layout, Result};

/// The number type a model's log density is written in: `f64` itself or a forward-mode dual
/// number of `num-dual` that carries a block of partial derivatives along.
///
/// Every `T: Scalar` supports `+ − × ÷` with `T`, `&T` and `f64` on the right (`x * 2.0`, not
/// `2.0 * x`), `T::from(c)` for a constant `c: f64`, the functions of [`DualNum`] (`exp`, `ln`,
/// `ln_1p`, `sqrt`, `powi`, `powf`, `sin`, `tanh`, …; they take `&self`), `.sum::<T>()` over an
/// iterator of `T`, comparisons with `T` and with `f64`, and `x.re()` for the value without
/// derivatives. It is `Copy`. Implemented for every type with these properties; there is
/// nothing to implement.
///
/// ```
/// use smi_ad::Scalar;
///
/// /// log(1 + eˣ), stable for large x; the branch looks at the value only.
/// fn softplus<T: Scalar>(x: T) -> T {
///     if x > 30.0 { x } else { x.exp().ln_1p() }
/// }
/// fn mean<T: Scalar>(xs: &[T]) -> T {
///     xs.iter().copied().sum::<T>() / xs.len() as f64
/// }
/// assert_eq!(softplus(0.0_f64), 2.0_f64.ln());
/// fn value<T: Scalar>(x: T) -> f64 {
///     x.re()
/// }
/// assert_eq!(value(mean(&[1.0, softplus(40.0)])), 20.5);
/// assert_eq!(f64::from(3.0) * 2.0 - 1.0, 5.0);
/// ```
pub trait Scalar: DualNum<Primitive = f64> + Copy + Send + Sync {}

impl<T: DualNum<Primitive = f64> + Copy + Send + Sync> Scalar for T {}

/// A model whose log density is written once, generic over [`Scalar`]; wrap it in
/// [`crate::Ad`] to get a [`smi::LogDensity`] with exact gradients.
///
/// The split mirrors [`smi::PerDraw`]: a prior (with the log-Jacobian of constrained latents
/// when asked for) and, for a model with data, the log-likelihood of given data rows. The
/// adapter multiplies the likelihood by the batch's N/b scale, so a model never sees it.
/// Both functions see one draw θ (length [`AdModel::dim`]) in unconstrained space.
///
/// See the crate documentation for a worked example.
pub trait AdModel: Send + Sync {
    /// d, the number of unconstrained parameters.
    fn dim(&self) -> usize;

    /// N, the number of data rows the likelihood sums over (0, the default, for a model
    /// without data: [`AdModel::log_likelihood`] is then never called).
    fn num_data(&self) -> usize {
        0
    }

    /// log p(θ) of the prior for one draw θ (length d), plus log|T′(u)| of each constrained
    /// latent when `jacobian` is set (e.g. `+ u` for τ = exp(u)).
    ///
    /// # Errors
    /// Model-specific; returned unchanged by the adapter.
    fn log_prior<T: Scalar>(&self, theta: &[T], jacobian: bool) -> Result<T>;

    /// Σ_{i ∈ rows} log p(y_i | θ) for one draw θ, unscaled (every row index is below
    /// [`AdModel::num_data`]; the adapter checks the batch). The default is 0.
    ///
    /// # Errors
    /// Model-specific; returned unchanged by the adapter.
    fn log_likelihood<T: Scalar>(&self, _theta: &[T], _rows: &[usize]) -> Result<T> {
        Ok(T::from(0.0))
    }

    /// Names of the slices of θ (default: one block `"theta"`).
    fn layout(&self) -> Layout {
        Layout::flat(self.dim())
    }

    /// One draw from the prior in unconstrained space (see [`smi::LogDensity::sample_prior`]).
    ///
    /// # Errors
    /// [`Error::Unsupported`] by default.
    fn sample_prior(&self, _rng: &mut dyn RngCore, _out: &mut [f64]) -> Result<()> {
        Err(Error::Unsupported(
            "this model cannot sample its prior; use a uniform initialisation".into(),
        ))
    }
}
