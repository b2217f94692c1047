//! Variance-collapse measures of the Gaussian experiment (docs/algorithms.md §7.1): mixture and particle
//! variances per dimension, mean location and the diagonal "Frobenius distance" to I.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::matrix::Matrix;

fn check_particles(context: &str, m: &Matrix) -> Result<()> {
    if m.rows() == 0 || m.cols() == 0 {
        return Err(Error::Data(format!(
            "{context}: need at least one particle and one dimension, got {}×{}",
            m.rows(),
            m.cols()
        )));
    }
    if !m.is_finite() {
        return Err(Error::Data(format!("{context}: non-finite value")));
    }
    Ok(())
}

/// Per-dimension variance of an equally weighted Gaussian mixture (SMI with a Normal guide):
/// var_c = mean_j σ²_jc + mean_j μ²_jc − (mean_j μ_jc)² (docs/algorithms.md §7.1), the law of total variance
/// over the m components.
///
/// `loc` and `scale` are m×d (one particle per row; `scale` holds standard deviations σ, not
/// variances). Returns d values.
///
/// # Errors
/// [`Error::Data`] if `loc` is empty or an entry is non-finite, or a scale is negative;
/// [`Error::Shape`] if `scale` is not the shape of `loc`.
pub fn mixture_variance(loc: &Matrix, scale: &Matrix) -> Result<Vec<f64>> {
    check_particles("mixture_variance, loc", loc)?;
    if scale.rows() != loc.rows() || scale.cols() != loc.cols() {
        return Err(Error::shape(
            "mixture_variance, scale",
            format!("{}×{} (shape of loc)", loc.rows(), loc.cols()),
            format!("{}×{}", scale.rows(), scale.cols()),
        ));
    }
    check_particles("mixture_variance, scale", scale)?;
    if scale.as_slice().iter().any(|&s| s < 0.0) {
        return Err(Error::Data("mixture_variance: negative scale".into()));
    }
    let m = loc.rows() as f64;
    let mut out = vec![0.0; loc.cols()];
    let mut mean = vec![0.0; loc.cols()];
    for (mu_row, sd_row) in loc.iter_rows().zip(scale.iter_rows()) {
        for (c, (mu, sd)) in mu_row.iter().zip(sd_row).enumerate() {
            out[c] += sd * sd + mu * mu;
            mean[c] += mu;
        }
    }
    for (o, mu) in out.iter_mut().zip(&mean) {
        let mu = mu / m;
        *o = *o / m - mu * mu;
    }
    Ok(out)
}

/// Per-dimension variance (ddof 0) of point particles (SVGD/ASVGD; docs/algorithms.md §7.1):
/// var_c = (1/m) Σ_j (x_jc − x̄_c)². `particles` is m×d; returns d values.
///
/// # Errors
/// [`Error::Data`] if `particles` is empty or non-finite.
pub fn particle_variance(particles: &Matrix) -> Result<Vec<f64>> {
    check_particles("particle_variance", particles)?;
    Ok(particles.col_variances())
}

/// Mean location per dimension: (1/m) Σ_j μ_jc. `loc` is m×d; returns d values.
///
/// # Errors
/// [`Error::Data`] if `loc` is empty or non-finite.
pub fn mean_location(loc: &Matrix) -> Result<Vec<f64>> {
    check_particles("mean_location", loc)?;
    Ok(loc.col_means())
}

/// The experiment's "Frobenius distance" ‖diag(var) − I‖_F = sqrt(Σ_c (var_c − 1)²) (docs/algorithms.md §7.1;
/// diagonal only, §10 item 10).
///
/// # Errors
/// [`Error::Data`] if `variance` is empty or holds a NaN.
pub fn frobenius_to_identity(variance: &[f64]) -> Result<f64> {
    if variance.is_empty() {
        return Err(Error::Data("frobenius_to_identity: no dimensions".into()));
    }
    if variance.iter().any(|v| v.is_nan()) {
        return Err(Error::Data("frobenius_to_identity: NaN variance".into()));
    }
    Ok(variance
        .iter()
        .map(|v| (v - 1.0) * (v - 1.0))
        .sum::<f64>()
        .sqrt())
}

/// The plotted variance-collapse summary of one fitted posterior (docs/algorithms.md §7.1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VarianceSummary {
    /// Per-dimension variance (d values).
    pub variance: Vec<f64>,
    /// Mean of `variance` over dimensions (the plotted value).
    pub mean_variance: f64,
    /// Per-dimension mean location (d values).
    pub location: Vec<f64>,
    /// Mean of `location` over dimensions.
    pub mean_location: f64,
    /// [`frobenius_to_identity`] of `variance`.
    pub frobenius: f64,
}

impl VarianceSummary {
    fn from_parts(variance: Vec<f64>, location: Vec<f64>) -> Result<Self> {
        let d = variance.len() as f64;
        Ok(VarianceSummary {
            mean_variance: variance.iter().sum::<f64>() / d,
            mean_location: location.iter().sum::<f64>() / d,
            frobenius: frobenius_to_identity(&variance)?,
            variance,
            location,
        })
    }

    /// Summary of an SMI Normal-guide mixture: `loc`, `scale` (σ) are m×d; variance from
    /// [`mixture_variance`].
    ///
    /// # Errors
    /// As [`mixture_variance`].
    pub fn mixture(loc: &Matrix, scale: &Matrix) -> Result<Self> {
        Self::from_parts(mixture_variance(loc, scale)?, mean_location(loc)?)
    }

    /// Summary of point particles (m×d), variance from [`particle_variance`].
    ///
    /// # Errors
    /// As [`particle_variance`].
    pub fn particles(particles: &Matrix) -> Result<Self> {
        Self::from_parts(particle_variance(particles)?, mean_location(particles)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol * (1.0 + b.abs()), "{a} vs {b}");
    }

    #[test]
    fn mixture_variance_by_hand() {
        // m = 2, d = 2. dim 0: μ = (−1, 1), σ = (0.5, 0.5):
        //   mean σ² = 0.25, mean μ² = 1, (mean μ)² = 0 → 1.25.
        // dim 1: μ = (2, 4), σ = (1, 3): mean σ² = 5, mean μ² = 10, (mean μ)² = 9 → 6.
        let loc = Matrix::from_rows(&[vec![-1.0, 2.0], vec![1.0, 4.0]]).unwrap();
        let scale = Matrix::from_rows(&[vec![0.5, 1.0], vec![0.5, 3.0]]).unwrap();
        let v = mixture_variance(&loc, &scale).unwrap();
        close(v[0], 1.25, 1e-15);
        close(v[1], 6.0, 1e-15);
        assert_eq!(mean_location(&loc).unwrap(), vec![0.0, 3.0]);
        // Frobenius: sqrt(0.25² + 5²).
        let s = VarianceSummary::mixture(&loc, &scale).unwrap();
        close(s.frobenius, (0.0625f64 + 25.0).sqrt(), 1e-15);
        close(s.mean_variance, 3.625, 1e-15);
        close(s.mean_location, 1.5, 1e-15);
        // One component: variance = σ².
        let one = mixture_variance(
            &Matrix::from_rows(&[vec![3.0]]).unwrap(),
            &Matrix::from_rows(&[vec![0.5413]]).unwrap(),
        )
        .unwrap();
        close(one[0], 0.5413 * 0.5413, 1e-15);
        assert!(mixture_variance(&loc, &Matrix::zeros(2, 1)).is_err());
        assert!(mixture_variance(&loc, &Matrix::from_fn(2, 2, |_, _| -1.0)).is_err());
        assert!(mixture_variance(&Matrix::zeros(0, 2), &Matrix::zeros(0, 2)).is_err());
    }

    #[test]
    fn particle_variance_ddof0() {
        // dim 0: (1, 2, 3) → var 2/3; dim 1: constant → 0.
        let p = Matrix::from_rows(&[vec![1.0, 5.0], vec![2.0, 5.0], vec![3.0, 5.0]]).unwrap();
        let v = particle_variance(&p).unwrap();
        close(v[0], 2.0 / 3.0, 1e-15);
        close(v[1], 0.0, 0.0);
        let s = VarianceSummary::particles(&p).unwrap();
        close(s.frobenius, ((1.0f64 / 3.0).powi(2) + 1.0).sqrt(), 1e-15);
        assert_eq!(s.location, vec![2.0, 5.0]);
        // Perfect recovery of N(0, I) → 0.
        close(frobenius_to_identity(&[1.0, 1.0, 1.0]).unwrap(), 0.0, 0.0);
        assert!(frobenius_to_identity(&[]).is_err());
        assert!(particle_variance(&Matrix::from_rows(&[vec![f64::NAN]]).unwrap()).is_err());
    }
}
