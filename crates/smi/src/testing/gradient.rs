//! A finite-difference check of a model's gradient, for anyone writing a [`LogDensity`].

use crate::error::{Error, Result};
use crate::model::{Batch, LogDensity};

/// The largest absolute difference between the analytic gradient of `model` at the K draws
/// `theta` (K×d, row-major) on `batch` and central differences with step `h`
/// ((f(θ + h e_c) − f(θ − h e_c)) / 2h per coordinate c). With h ≈ 1e-5 and a smooth log
/// density the difference is of order h²·|f‴| plus rounding, so a correct gradient gives
/// about 1e-8 or less on well-scaled parameters; a wrong one gives an error of the size of
/// the gradient.
///
/// ```
/// use smi::{testing::{check_gradient, DiagNormal}, Batch};
/// let model = DiagNormal::new(vec![1.0, -2.0], vec![0.5, 3.0])?;
/// let err = check_gradient(&model, &[0.3, 0.7, -1.0, 2.0], &Batch::full(), 1e-5)?;
/// assert!(err < 1e-6, "{err}");
/// # Ok::<(), smi::Error>(())
/// ```
///
/// # Errors
/// The model's own errors; [`Error::InvalidSettings`] for `h` not finite and positive;
/// [`Error::NonFinite`] when a log density or gradient is not finite.
pub fn check_gradient<M: LogDensity + ?Sized>(
    model: &M,
    theta: &[f64],
    batch: &Batch,
    h: f64,
) -> Result<f64> {
    if !(h.is_finite() && h > 0.0) {
        return Err(Error::invalid(
            "h",
            format!("must be finite and > 0, got {h}"),
        ));
    }
    let d = model.dim();
    if d == 0 || !theta.len().is_multiple_of(d) {
        return Err(Error::shape("theta", format!("K×{d}"), theta.len()));
    }
    let k = theta.len() / d;
    let (mut lp, mut grad) = (vec![0.0; k], vec![0.0; k * d]);
    model.log_density_and_grad(theta, batch, &mut lp, &mut grad)?;
    if lp.iter().chain(&grad).any(|v| !v.is_finite()) {
        return Err(Error::non_finite(
            "check_gradient: the log density or its gradient",
        ));
    }
    let (mut up, mut dn, mut scratch) = (vec![0.0; k], vec![0.0; k], vec![0.0; k * d]);
    let mut worst: f64 = 0.0;
    for c in 0..d {
        let (mut plus, mut minus) = (theta.to_vec(), theta.to_vec());
        for i in 0..k {
            plus[i * d + c] += h;
            minus[i * d + c] -= h;
        }
        model.log_density_and_grad(&plus, batch, &mut up, &mut scratch)?;
        model.log_density_and_grad(&minus, batch, &mut dn, &mut scratch)?;
        for i in 0..k {
            let fd = (up[i] - dn[i]) / (2.0 * h);
            worst = worst.max((fd - grad[i * d + c]).abs());
        }
    }
    if !worst.is_finite() {
        return Err(Error::non_finite("check_gradient: a finite difference"));
    }
    Ok(worst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FnDensity;
    use crate::testing::Funnel;

    #[test]
    fn a_wrong_gradient_is_caught_and_a_right_one_passes() {
        let funnel = Funnel::new(5).unwrap();
        let theta: Vec<f64> = (0..15).map(|i| ((i as f64) * 0.7).sin()).collect();
        assert!(check_gradient(&funnel, &theta, &Batch::full(), 1e-5).unwrap() < 1e-6);
        // d/dx of −x²/2 is −x; this model returns −2x.
        let wrong = FnDensity::new(1, |x: &[f64], g: &mut [f64]| {
            g[0] = -2.0 * x[0];
            -0.5 * x[0] * x[0]
        });
        let err = check_gradient(&wrong, &[1.5], &Batch::full(), 1e-5).unwrap();
        assert!((err - 1.5).abs() < 1e-6, "{err}");
        assert!(check_gradient(&wrong, &[1.5], &Batch::full(), 0.0).is_err());
        assert!(check_gradient(&wrong, &[1.5, 2.0, 3.0], &Batch::full(), 1e-5).is_ok());
    }
}
