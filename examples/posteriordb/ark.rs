//! `arK-arK`: an autoregressive model of order K = 5 on a simulated series of T = 200 points.
//!
//! ```stan
//! parameters { real alpha; array[K] real beta; real<lower=0> sigma; }
//! model {
//!   alpha ~ normal(0, 10);
//!   beta ~ normal(0, 10);
//!   sigma ~ cauchy(0, 2.5);
//!   for (t in (K + 1):T) {
//!     real mu = alpha;
//!     for (k in 1:K) mu = mu + beta[k] * y[t - k];
//!     y[t] ~ normal(mu, sigma);
//!   }
//! }
//! ```
//!
//! Unconstrained θ = (alpha, beta[1..K], log sigma); the data rows are the T − K = 195 time
//! points t = K+1..T, design row (1, y[t−1], …, y[t−K]).

use smi::rand::RngCore;
use smi::{Error, Result};

use super::density::{half_cauchy, log_half_cauchy_draw, normal, std_normal, GaussianRows};
use super::regression::{Regression, RegressionSpec};
use super::{check_len, count, numbers};

/// Prior sd of alpha and of every beta.
const COEF_SCALE: f64 = 10.0;
/// Scale of sigma's half-Cauchy prior.
const SIGMA_SCALE: f64 = 2.5;

/// The arK posterior.
pub type ArK = Regression<ArKSpec>;

/// ArK's part of [`Regression`]: the lagged design rows and its priors.
#[derive(Clone, Debug)]
pub struct ArKSpec {
    k: usize,
}

impl RegressionSpec for ArKSpec {
    const NAME: &'static str = "arK-arK";
    const SHORT: &'static str = "arK";

    fn from_data(data: &serde_json::Value) -> Result<(Self, GaussianRows)> {
        let (k, t) = (count(data, "K")?, count(data, "T")?);
        let y = numbers(data, "y")?;
        check_len("y", &y, t)?;
        if t <= k {
            return Err(Error::Data(format!(
                "arK needs T > K, got T = {t}, K = {k}"
            )));
        }
        let mut x = Vec::with_capacity((t - k) * (k + 1));
        for i in k..t {
            x.push(1.0);
            x.extend((1..=k).map(|lag| y[i - lag]));
        }
        Ok((ArKSpec { k }, GaussianRows::new(x, y[k..].to_vec(), k + 1)?))
    }

    fn blocks(&self) -> Vec<(&'static str, usize)> {
        vec![("alpha", 1), ("beta", self.k)]
    }

    /// `alpha ~ normal(0, 10)`, `beta ~ normal(0, 10)`, `sigma ~ cauchy(0, 2.5)` on sigma > 0.
    fn log_prior(&self, coef: &[f64], u: f64, jacobian: bool, g: &mut [f64], g_u: &mut f64) -> f64 {
        let lp: f64 = coef
            .iter()
            .zip(g.iter_mut())
            .map(|(c, gc)| normal(*c, COEF_SCALE, gc))
            .sum();
        lp + half_cauchy(u, SIGMA_SCALE, jacobian, g_u)
    }

    fn sample_prior(&self, rng: &mut dyn RngCore, out: &mut [f64]) -> Result<()> {
        for v in &mut out[..=self.k] {
            *v = COEF_SCALE * std_normal(rng);
        }
        out[self.k + 1] = log_half_cauchy_draw(rng, SIGMA_SCALE);
        Ok(())
    }
}
