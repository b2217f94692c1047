//! Bayesian linear regression with a known noise scale: a model with data, mini-batching and a
//! closed-form posterior, for testing engines.
//!
//! y_i ~ N(x_iᵀβ, σ²), β ~ N(0, τ² I). Posterior: Σ = (XᵀX/σ² + I/τ²)⁻¹, μ = Σ Xᵀy/σ².

use rand::RngCore;
use rand_distr::{Distribution, StandardNormal};

use crate::error::{Error, Result};
use crate::matrix::Matrix;

use crate::model::PerDraw;

const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// Bayesian linear regression on owned data (N rows, d features, no intercept: add a column of
/// ones for one).
#[derive(Clone, Debug, PartialEq)]
pub struct BayesLinReg {
    x: Matrix,
    y: Vec<f64>,
    noise: f64,
    prior_scale: f64,
}

impl BayesLinReg {
    /// Data `x` (N×d), `y` (N), noise σ and prior scale τ.
    ///
    /// # Errors
    /// [`Error::Shape`] when `y` and `x` disagree, [`Error::Data`] for an empty or non-finite
    /// data set (naming the row), [`Error::InvalidSettings`] for non-positive scales.
    pub fn new(x: Matrix, y: Vec<f64>, noise: f64, prior_scale: f64) -> Result<Self> {
        if x.rows() == 0 || x.cols() == 0 {
            return Err(Error::Data(
                "linear regression needs at least one row and one feature".into(),
            ));
        }
        if x.rows() != y.len() {
            return Err(Error::shape("BayesLinReg y", x.rows(), y.len()));
        }
        for (i, (row, yi)) in x.iter_rows().zip(&y).enumerate() {
            if !yi.is_finite() || row.iter().any(|v| !v.is_finite()) {
                return Err(Error::Data(format!("row {i} has a non-finite value")));
            }
        }
        for (field, v) in [("noise", noise), ("prior_scale", prior_scale)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::invalid(field, format!("must be positive, got {v}")));
            }
        }
        Ok(BayesLinReg {
            x,
            y,
            noise,
            prior_scale,
        })
    }

    /// The exact posterior mean (d) and covariance (d×d), by Gauss–Jordan inversion of the
    /// posterior precision (d is small in tests).
    ///
    /// # Errors
    /// [`Error::Data`] if the precision is numerically singular.
    pub fn posterior(&self) -> Result<(Vec<f64>, Matrix)> {
        let d = self.x.cols();
        let s2 = self.noise * self.noise;
        let mut prec = Matrix::zeros(d, d);
        let mut xty = vec![0.0; d];
        for (row, y) in self.x.iter_rows().zip(&self.y) {
            for a in 0..d {
                xty[a] += row[a] * y / s2;
                for b in 0..d {
                    prec.set(a, b, prec.get(a, b) + row[a] * row[b] / s2);
                }
            }
        }
        for a in 0..d {
            prec.set(
                a,
                a,
                prec.get(a, a) + 1.0 / (self.prior_scale * self.prior_scale),
            );
        }
        let cov = invert(&prec)?;
        let mean = (0..d)
            .map(|a| (0..d).map(|b| cov.get(a, b) * xty[b]).sum())
            .collect();
        Ok((mean, cov))
    }
}

fn invert(a: &Matrix) -> Result<Matrix> {
    let n = a.rows();
    let mut m = a.clone();
    let mut inv = Matrix::from_fn(n, n, |i, j| if i == j { 1.0 } else { 0.0 });
    for col in 0..n {
        let piv = (col..n)
            .max_by(|&i, &j| m.get(i, col).abs().total_cmp(&m.get(j, col).abs()))
            .unwrap_or(col);
        let p = m.get(piv, col);
        if p.abs() < 1e-300 {
            return Err(Error::Data("singular posterior precision".into()));
        }
        for j in 0..n {
            let (t1, t2) = (m.get(col, j), m.get(piv, j));
            m.set(col, j, t2);
            m.set(piv, j, t1);
            let (t1, t2) = (inv.get(col, j), inv.get(piv, j));
            inv.set(col, j, t2);
            inv.set(piv, j, t1);
        }
        for j in 0..n {
            m.set(col, j, m.get(col, j) / p);
            inv.set(col, j, inv.get(col, j) / p);
        }
        for i in 0..n {
            if i != col {
                let f = m.get(i, col);
                for j in 0..n {
                    m.set(i, j, m.get(i, j) - f * m.get(col, j));
                    inv.set(i, j, inv.get(i, j) - f * inv.get(col, j));
                }
            }
        }
    }
    Ok(inv)
}

impl PerDraw for BayesLinReg {
    fn dim(&self) -> usize {
        self.x.cols()
    }

    fn num_data(&self) -> usize {
        self.x.rows()
    }

    fn log_prior(&self, beta: &[f64], _jacobian: bool, g: &mut [f64]) -> Result<f64> {
        let t2 = self.prior_scale * self.prior_scale;
        let mut lp = 0.0;
        for (b, gc) in beta.iter().zip(g.iter_mut()) {
            lp -= 0.5 * b * b / t2 + 0.5 * (t2.ln() + LN_2PI);
            *gc += -b / t2;
        }
        Ok(lp)
    }

    fn log_likelihood(
        &self,
        beta: &[f64],
        rows: &[usize],
        scale: f64,
        g: &mut [f64],
    ) -> Result<f64> {
        let s2 = self.noise * self.noise;
        let mut ll = 0.0;
        let mut gl = vec![0.0; beta.len()];
        for &i in rows {
            let row = self.x.row(i);
            let r = self.y[i] - row.iter().zip(beta).map(|(a, b)| a * b).sum::<f64>();
            ll -= 0.5 * r * r / s2 + 0.5 * (s2.ln() + LN_2PI);
            for (glc, xc) in gl.iter_mut().zip(row) {
                *glc += r * xc / s2;
            }
        }
        for (gc, glc) in g.iter_mut().zip(&gl) {
            *gc += scale * glc;
        }
        Ok(scale * ll)
    }

    fn sample_prior(&self, rng: &mut dyn RngCore, out: &mut [f64]) -> Result<()> {
        for o in out.iter_mut() {
            let z: f64 = StandardNormal.sample(rng);
            *o = self.prior_scale * z;
        }
        Ok(())
    }
}
