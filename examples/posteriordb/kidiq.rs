//! `kidiq-kidscore_momiq`: a child's test score regressed on the mother's IQ (uncentred, so
//! corr(beta[1], beta[2]) = −0.99 a posteriori).
//!
//! ```stan
//! parameters { vector[2] beta; real<lower=0> sigma; }
//! model {
//!   sigma ~ cauchy(0, 2.5);
//!   kid_score ~ normal(beta[1] + beta[2] * mom_iq, sigma);
//! }
//! ```
//!
//! beta has a flat (improper) prior, so the model cannot draw from its prior. Unconstrained
//! θ = (beta[1], beta[2], log sigma); the data rows are the N = 434 children, design row
//! (1, mom_iq[n]).

use smi::Result;

use super::density::{half_cauchy, GaussianRows};
use super::regression::{Regression, RegressionSpec};
use super::{check_len, count, numbers};

/// Scale of sigma's half-Cauchy prior.
const SIGMA_SCALE: f64 = 2.5;

/// The kidiq posterior.
pub type Kidiq = Regression<KidiqSpec>;

/// Kidiq's part of [`Regression`]: the design rows (1, mom_iq) and its priors.
#[derive(Clone, Debug)]
pub struct KidiqSpec;

impl RegressionSpec for KidiqSpec {
    const NAME: &'static str = "kidiq-kidscore_momiq";
    const SHORT: &'static str = "kidiq";

    fn from_data(data: &serde_json::Value) -> Result<(Self, GaussianRows)> {
        let n = count(data, "N")?;
        let (score, iq) = (numbers(data, "kid_score")?, numbers(data, "mom_iq")?);
        check_len("kid_score", &score, n)?;
        check_len("mom_iq", &iq, n)?;
        let x = iq.iter().flat_map(|&v| [1.0, v]).collect();
        Ok((KidiqSpec, GaussianRows::new(x, score, 2)?))
    }

    fn blocks(&self) -> Vec<(&'static str, usize)> {
        vec![("beta", 2)]
    }

    /// No prior statement for beta (flat); `sigma ~ cauchy(0, 2.5)` on sigma > 0.
    fn log_prior(
        &self,
        _beta: &[f64],
        u: f64,
        jacobian: bool,
        _g: &mut [f64],
        g_u: &mut f64,
    ) -> f64 {
        half_cauchy(u, SIGMA_SCALE, jacobian, g_u)
    }
}
