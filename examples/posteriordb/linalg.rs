//! The small dense linear algebra of the reference checks (d ≤ 10): Cholesky factor, solve,
//! and the diagonal of an inverse.

use smi::{Error, Matrix, Result};

/// The lower Cholesky factor L of a symmetric positive definite `a` (L Lᵀ = a).
///
/// # Errors
/// [`Error::NonFinite`] when `a` is not positive definite.
pub(crate) fn cholesky(a: &Matrix) -> Result<Matrix> {
    let d = a.rows();
    let mut l = Matrix::zeros(d, d);
    for i in 0..d {
        for j in 0..=i {
            let s = a.get(i, j) - (0..j).map(|k| l.get(i, k) * l.get(j, k)).sum::<f64>();
            if i == j {
                if s.is_nan() || s <= 0.0 {
                    return Err(Error::non_finite("the matrix is not positive definite"));
                }
                l.set(i, i, s.sqrt());
            } else {
                l.set(i, j, s / l.get(j, j));
            }
        }
    }
    Ok(l)
}

/// x with L Lᵀ x = b, for the Cholesky factor `l`.
pub(crate) fn cholesky_solve(l: &Matrix, b: &[f64]) -> Vec<f64> {
    let d = l.rows();
    let mut y = vec![0.0; d];
    for i in 0..d {
        y[i] = (b[i] - (0..i).map(|k| l.get(i, k) * y[k]).sum::<f64>()) / l.get(i, i);
    }
    for i in (0..d).rev() {
        y[i] = (y[i] - (i + 1..d).map(|k| l.get(k, i) * y[k]).sum::<f64>()) / l.get(i, i);
    }
    y
}

/// diag(Σ⁻¹) of a symmetric positive definite Σ: (Σ⁻¹)_ii = Σ_k ((L⁻¹)_ki)².
///
/// # Errors
/// [`Error::NonFinite`] when Σ is not positive definite.
pub(crate) fn inverse_diagonal(cov: &Matrix) -> Result<Vec<f64>> {
    let l = cholesky(cov)?;
    let d = l.rows();
    let mut diag = vec![0.0; d];
    // Column c of L⁻¹ by forward substitution: L x = e_c (x_i = 0 for i < c).
    for (c, dc) in diag.iter_mut().enumerate() {
        let mut x = vec![0.0; d];
        for i in c..d {
            let rhs = if i == c { 1.0 } else { 0.0 };
            x[i] = (rhs - (c..i).map(|k| l.get(i, k) * x[k]).sum::<f64>()) / l.get(i, i);
            *dc += x[i] * x[i];
        }
    }
    Ok(diag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solve_and_inverse_diagonal_of_a_correlated_pair() {
        // Σ = [[1, ρ], [ρ, 1]]: (Σ⁻¹)_ii = 1/(1 − ρ²).
        let rho: f64 = 0.8;
        let cov = Matrix::from_rows(&[vec![1.0, rho], vec![rho, 1.0]]).unwrap();
        for p in inverse_diagonal(&cov).unwrap() {
            assert!((p - 1.0 / (1.0 - rho * rho)).abs() < 1e-12);
        }
        let x = cholesky_solve(&cholesky(&cov).unwrap(), &[1.0 + rho, rho + 1.0]);
        assert!(
            (x[0] - 1.0).abs() < 1e-12 && (x[1] - 1.0).abs() < 1e-12,
            "{x:?}"
        );
        assert!(cholesky(&Matrix::from_rows(&[vec![1.0, 2.0], vec![2.0, 1.0]]).unwrap()).is_err());
    }
}
