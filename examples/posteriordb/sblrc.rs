//! `sblrc-blr`: Bayesian linear regression with five correlated coefficients (simulated
//! data; the coefficients' posterior sds are ≈ 0.001, 75 times smaller than log sigma's).
//!
//! ```stan
//! parameters { vector[D] beta; real<lower=0> sigma; }
//! model {
//!   target += normal_lpdf(beta | 0, 10);
//!   target += normal_lpdf(sigma | 0, 10);
//!   target += normal_lpdf(y | X * beta, sigma);
//! }
//! ```
//!
//! (`target +=` keeps the normalising constants; they are constant and dropped here.)
//! Unconstrained θ = (beta[1..D], log sigma); the data rows are the N = 100 rows of X.

use smi::rand::RngCore;
use smi::{Error, Result};

use super::density::{half_normal, normal, std_normal, GaussianRows};
use super::regression::{Regression, RegressionSpec};
use super::{check_len, count, numbers};

/// Prior sd of every beta and scale of sigma's half-Normal prior.
const PRIOR_SCALE: f64 = 10.0;

/// The sblrc posterior.
pub type Sblrc = Regression<SblrcSpec>;

/// Sblrc's part of [`Regression`]: the design matrix X and its priors.
#[derive(Clone, Debug)]
pub struct SblrcSpec {
    d: usize,
}

impl RegressionSpec for SblrcSpec {
    const NAME: &'static str = "sblrc-blr";
    const SHORT: &'static str = "sblrc";

    fn from_data(data: &serde_json::Value) -> Result<(Self, GaussianRows)> {
        let (n, d) = (count(data, "N")?, count(data, "D")?);
        let y = numbers(data, "y")?;
        check_len("y", &y, n)?;
        let bad = || Error::Data("data field \"X\" is not a list of N rows of D numbers".into());
        let rows = data.get("X").and_then(|v| v.as_array()).ok_or_else(bad)?;
        let mut x = Vec::with_capacity(n * d);
        for row in rows {
            let row = row.as_array().filter(|r| r.len() == d).ok_or_else(bad)?;
            for v in row {
                x.push(v.as_f64().ok_or_else(bad)?);
            }
        }
        Ok((SblrcSpec { d }, GaussianRows::new(x, y, d)?))
    }

    fn blocks(&self) -> Vec<(&'static str, usize)> {
        vec![("beta", self.d)]
    }

    /// `beta ~ normal(0, 10)`, `sigma ~ normal(0, 10)` on sigma > 0.
    fn log_prior(&self, beta: &[f64], u: f64, jacobian: bool, g: &mut [f64], g_u: &mut f64) -> f64 {
        let lp: f64 = beta
            .iter()
            .zip(g.iter_mut())
            .map(|(b, gb)| normal(*b, PRIOR_SCALE, gb))
            .sum();
        lp + half_normal(u, PRIOR_SCALE, jacobian, g_u)
    }

    fn sample_prior(&self, rng: &mut dyn RngCore, out: &mut [f64]) -> Result<()> {
        for v in &mut out[..self.d] {
            *v = PRIOR_SCALE * std_normal(rng);
        }
        out[self.d] = (PRIOR_SCALE * std_normal(rng).abs()).ln();
        Ok(())
    }
}
