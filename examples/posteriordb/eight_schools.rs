//! `eight_schools-eight_schools_noncentered`: the non-centred eight-schools model.
//!
//! ```stan
//! parameters { vector[J] theta_trans; real mu; real<lower=0> tau; }
//! transformed parameters { vector[J] theta = theta_trans * tau + mu; }
//! model {
//!   theta_trans ~ normal(0, 1);
//!   y ~ normal(theta, sigma);
//!   mu ~ normal(0, 5);
//!   tau ~ cauchy(0, 5);
//! }
//! ```
//!
//! Unconstrained θ = (theta_trans[1..J], mu, u = log tau), d = J + 2; the data rows are the J
//! schools. The reference draws hold the transformed `theta[j]`, `mu` and `tau`.

use smi::rand::RngCore;
use smi::{Error, Layout, PerDraw, Result};

use super::density::{half_cauchy, log_half_cauchy_draw, normal, positive, std_normal};
use super::{check_len, count, indexed, numbers, StanPosterior};

/// Prior sd of mu.
const MU_SCALE: f64 = 5.0;
/// Scale of tau's half-Cauchy prior.
const TAU_SCALE: f64 = 5.0;

/// The eight-schools model (non-centred): J schools with estimates `y` and standard errors
/// `sigma`.
#[derive(Clone, Debug)]
pub struct EightSchools {
    y: Vec<f64>,
    sigma: Vec<f64>,
}

impl EightSchools {
    /// J, the number of schools.
    pub fn schools(&self) -> usize {
        self.y.len()
    }
}

impl PerDraw for EightSchools {
    fn dim(&self) -> usize {
        self.schools() + 2
    }

    fn num_data(&self) -> usize {
        self.schools()
    }

    /// `theta_trans ~ normal(0, 1)`, `mu ~ normal(0, 5)`, `tau ~ cauchy(0, 5)` on tau > 0
    /// (+ log-Jacobian u of tau = exp(u)).
    fn log_prior(&self, t: &[f64], jacobian: bool, g: &mut [f64]) -> Result<f64> {
        let j = self.schools();
        let mut lp = 0.0;
        for (tt, gt) in t[..j].iter().zip(&mut g[..j]) {
            lp += normal(*tt, 1.0, gt);
        }
        lp += normal(t[j], MU_SCALE, &mut g[j]);
        lp += half_cauchy(t[j + 1], TAU_SCALE, jacobian, &mut g[j + 1]);
        Ok(lp)
    }

    /// `y[j] ~ normal(theta[j], sigma[j])` for the schools in `rows`, with
    /// `theta[j] = mu + tau * theta_trans[j]`, times `scale`.
    fn log_likelihood(&self, t: &[f64], rows: &[usize], scale: f64, g: &mut [f64]) -> Result<f64> {
        let jn = self.schools();
        let (mu, tau) = (t[jn], t[jn + 1].exp());
        let mut ll = 0.0;
        for &j in rows {
            let s = self.sigma[j];
            let z = (self.y[j] - (mu + tau * t[j])) / s;
            ll += -0.5 * z * z;
            // r = scale · ∂/∂theta[j], then the chain rule through theta[j] = mu + tau·tt[j]
            // and tau = exp(u).
            let r = scale * z / s;
            g[j] += r * tau;
            g[jn] += r;
            g[jn + 1] += r * tau * t[j];
        }
        Ok(scale * ll)
    }

    /// Stan's parameter blocks; tau's column holds log tau, declared positive so that
    /// summaries show tau.
    fn layout(&self) -> Layout {
        let mut l = Layout::default();
        l.push("theta_trans", vec![self.schools()]);
        l.push("mu", vec![]);
        positive(&mut l, "tau");
        l
    }

    fn sample_prior(&self, rng: &mut dyn RngCore, out: &mut [f64]) -> Result<()> {
        let j = self.schools();
        for v in &mut out[..j] {
            *v = std_normal(rng);
        }
        out[j] = MU_SCALE * std_normal(rng);
        out[j + 1] = log_half_cauchy_draw(rng, TAU_SCALE);
        Ok(())
    }
}

impl StanPosterior for EightSchools {
    const NAME: &'static str = "eight_schools-eight_schools_noncentered";
    const SHORT: &'static str = "eight_schools";
    /// log tau's posterior is skewed: the exact mean-field sd of log tau is 35 % below the
    /// covariance formula's.
    const NEAR_GAUSSIAN: bool = false;

    fn from_data(data: &serde_json::Value) -> Result<Self> {
        let j = count(data, "J")?;
        let (y, sigma) = (numbers(data, "y")?, numbers(data, "sigma")?);
        check_len("y", &y, j)?;
        check_len("sigma", &sigma, j)?;
        if j == 0 || sigma.iter().any(|s| *s <= 0.0) {
            return Err(Error::Data(
                "eight schools needs at least one school and sigma > 0".into(),
            ));
        }
        Ok(EightSchools { y, sigma })
    }

    fn reference_names(&self) -> Vec<String> {
        let mut names = indexed("theta", self.schools());
        names.extend(["mu".to_string(), "tau".to_string()]);
        names
    }

    fn constrain(&self, t: &[f64], out: &mut [f64]) {
        let j = self.schools();
        let (mu, tau) = (t[j], t[j + 1].exp());
        for (o, tt) in out[..j].iter_mut().zip(&t[..j]) {
            *o = mu + tau * tt;
        }
        out[j] = mu;
        out[j + 1] = tau;
    }

    fn unconstrain(&self, r: &[f64], out: &mut [f64]) {
        let j = self.schools();
        let (mu, tau) = (r[j], r[j + 1]);
        for (o, theta) in out[..j].iter_mut().zip(&r[..j]) {
            *o = (theta - mu) / tau;
        }
        out[j] = mu;
        out[j + 1] = tau.ln();
    }
}
