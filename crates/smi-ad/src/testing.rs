//! Eight schools written both ways, for tests, benchmarks and as a worked example: once as an
//! [`AdModel`] ([`EightSchools`]) and once with its gradient derived by hand
//! ([`EightSchoolsHand`], a [`PerDraw`]).
//!
//! The model (non-centred), for schools j = 1..J with data rows = schools:
//!
//! ```text
//! y_j ~ N(μ + τ·θ̃_j, σ_j²),   θ̃_j ~ N(0, 1),   μ ~ N(0, 5²),   τ ~ HalfCauchy(0, 5)
//! ```
//!
//! on θ = (θ̃_1..θ̃_J, μ, u = log τ), d = J + 2, up to an additive constant:
//! log p = −½Σθ̃_j² − ½(μ/5)² − ln(1 + (τ/5)²) [+ u, the log-Jacobian of τ = eᵘ]
//! − ½ · scale · Σ_{j ∈ rows} ((y_j − μ − τθ̃_j)/σ_j)².

use smi::{Error, Layout, PerDraw, Result};

use crate::model::{AdModel, Scalar};

/// Observed effects of the eight schools (Rubin 1981).
pub const Y: [f64; 8] = [28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0];
/// Their standard errors.
pub const SIGMA: [f64; 8] = [15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0];
/// Prior scale of μ and of the half-Cauchy on τ.
const SCALE: f64 = 5.0;

/// The eight-schools model (or any number J of schools) as an [`AdModel`]: the log density
/// written once, no gradient.
#[derive(Clone, Debug, PartialEq)]
pub struct EightSchools {
    y: Vec<f64>,
    sigma: Vec<f64>,
}

impl EightSchools {
    /// The classic data ([`Y`], [`SIGMA`]).
    pub fn new() -> Self {
        EightSchools {
            y: Y.to_vec(),
            sigma: SIGMA.to_vec(),
        }
    }

    /// J schools with effects `y` and standard errors `sigma`.
    ///
    /// # Errors
    /// [`Error::Shape`] when the lengths differ, [`Error::InvalidSettings`] when there is no
    /// school or a standard error is not finite and positive.
    pub fn with_data(y: Vec<f64>, sigma: Vec<f64>) -> Result<Self> {
        if y.len() != sigma.len() {
            return Err(Error::shape("sigma", y.len(), sigma.len()));
        }
        if y.is_empty() {
            return Err(Error::invalid("y", "needs at least one school"));
        }
        if !sigma.iter().all(|s| s.is_finite() && *s > 0.0) {
            return Err(Error::invalid("sigma", "must be finite and > 0"));
        }
        Ok(EightSchools { y, sigma })
    }

    /// J, the number of schools.
    pub fn schools(&self) -> usize {
        self.y.len()
    }

    /// The same model with its gradient derived by hand.
    pub fn hand_written(&self) -> EightSchoolsHand {
        EightSchoolsHand(self.clone())
    }
}

impl Default for EightSchools {
    fn default() -> Self {
        EightSchools::new()
    }
}

impl AdModel for EightSchools {
    fn dim(&self) -> usize {
        self.schools() + 2
    }

    fn num_data(&self) -> usize {
        self.schools()
    }

    fn log_prior<T: Scalar>(&self, theta: &[T], jacobian: bool) -> Result<T> {
        let j = self.schools();
        let (mu, u) = (theta[j], theta[j + 1]);
        let tau = u.exp();
        let z2 = theta[..j].iter().map(|z| *z * *z).sum::<T>();
        let lp = (z2 + (mu / SCALE).powi(2)) * -0.5 - (tau / SCALE).powi(2).ln_1p();
        Ok(if jacobian { lp + u } else { lp })
    }

    fn log_likelihood<T: Scalar>(&self, theta: &[T], rows: &[usize]) -> Result<T> {
        let j = self.schools();
        let (mu, tau) = (theta[j], theta[j + 1].exp());
        let sq = rows
            .iter()
            .map(|&r| ((-(mu + tau * theta[r]) + self.y[r]) / self.sigma[r]).powi(2))
            .sum::<T>();
        Ok(sq * -0.5)
    }

    fn layout(&self) -> Layout {
        let mut l = Layout::default();
        l.push("theta_trans", vec![self.schools()]);
        l.push("mu", vec![1]);
        l.push("log_tau", vec![1]);
        l
    }
}

/// [`EightSchools`] with its gradient derived by hand (the reference for the adapter's
/// gradient and its cost).
#[derive(Clone, Debug, PartialEq)]
pub struct EightSchoolsHand(pub EightSchools);

impl PerDraw for EightSchoolsHand {
    fn dim(&self) -> usize {
        self.0.schools() + 2
    }

    fn num_data(&self) -> usize {
        self.0.schools()
    }

    fn log_prior(&self, theta: &[f64], jacobian: bool, grad: &mut [f64]) -> Result<f64> {
        let j = self.0.schools();
        let (mu, u) = (theta[j], theta[j + 1]);
        let t2 = (u.exp() / SCALE).powi(2);
        let mut lp = -0.5 * (mu / SCALE).powi(2) - t2.ln_1p();
        for (g, z) in grad.iter_mut().zip(&theta[..j]) {
            lp -= 0.5 * z * z;
            *g -= z;
        }
        grad[j] -= mu / (SCALE * SCALE);
        // d/du ln(1 + e^{2u}/25) = 2t²/(1 + t²) with t² = e^{2u}/25.
        grad[j + 1] -= 2.0 * t2 / (1.0 + t2);
        if jacobian {
            lp += u;
            grad[j + 1] += 1.0;
        }
        Ok(lp)
    }

    fn log_likelihood(
        &self,
        theta: &[f64],
        rows: &[usize],
        scale: f64,
        grad: &mut [f64],
    ) -> Result<f64> {
        let j = self.0.schools();
        let (mu, tau) = (theta[j], theta[j + 1].exp());
        let mut lp = 0.0;
        for &r in rows {
            let s = self.0.sigma[r];
            // ρ = (y − μ − τθ̃)/σ; d(−ρ²/2) = ρ/σ · (dμ + τ dθ̃ + τθ̃ du).
            let rho = (self.0.y[r] - mu - tau * theta[r]) / s;
            let w = scale * rho / s;
            lp -= 0.5 * rho * rho;
            grad[r] += w * tau;
            grad[j] += w;
            grad[j + 1] += w * tau * theta[r];
        }
        Ok(scale * lp)
    }

    fn layout(&self) -> Layout {
        AdModel::layout(&self.0)
    }
}
