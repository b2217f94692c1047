//! A diagonal multivariate normal target N(μ, diag(σ²)) — the standard normal N(0, I_d) of the
//! variance-collapse experiment (docs/algorithms.md §7.1) by default.

use rand::RngCore;
use rand_distr::{Distribution, StandardNormal};

use crate::error::{Error, Result};
use crate::model::PerDraw;

const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// log p(θ) = Σ_c log N(θ_c; μ_c, σ_c). No data; [`PerDraw::sample_prior`] samples it exactly.
#[derive(Clone, Debug, PartialEq)]
pub struct DiagNormal {
    mean: Vec<f64>,
    scale: Vec<f64>,
    /// Σ_c (−ln σ_c − ln √(2π)), the normalising constant (computed once).
    log_norm: f64,
}

impl DiagNormal {
    /// The standard normal N(0, I_d).
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] for d = 0.
    pub fn standard(dim: usize) -> Result<Self> {
        Self::new(vec![0.0; dim], vec![1.0; dim])
    }

    /// N(mean, diag(scale²)).
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] for an empty mean, a length mismatch or a non-positive scale.
    pub fn new(mean: Vec<f64>, scale: Vec<f64>) -> Result<Self> {
        if mean.is_empty() {
            return Err(Error::invalid("dim", "must be at least 1"));
        }
        if mean.len() != scale.len() {
            return Err(Error::shape("DiagNormal scale", mean.len(), scale.len()));
        }
        if let Some(s) = scale.iter().find(|s| !(s.is_finite() && **s > 0.0)) {
            return Err(Error::invalid(
                "scale",
                format!("must be positive, got {s}"),
            ));
        }
        if mean.iter().any(|m| !m.is_finite()) {
            return Err(Error::non_finite("DiagNormal mean"));
        }
        let log_norm = scale.iter().map(|s| -s.ln() - 0.5 * LN_2PI).sum();
        Ok(DiagNormal {
            mean,
            scale,
            log_norm,
        })
    }
}

impl PerDraw for DiagNormal {
    fn dim(&self) -> usize {
        self.mean.len()
    }

    fn log_prior(&self, t: &[f64], _jacobian: bool, g: &mut [f64]) -> Result<f64> {
        let mut acc = self.log_norm;
        for (c, gc) in g.iter_mut().enumerate() {
            let z = (t[c] - self.mean[c]) / self.scale[c];
            acc -= 0.5 * z * z;
            *gc = -z / self.scale[c];
        }
        Ok(acc)
    }

    fn sample_prior(&self, rng: &mut dyn RngCore, out: &mut [f64]) -> Result<()> {
        for ((o, m), s) in out.iter_mut().zip(&self.mean).zip(&self.scale) {
            let z: f64 = StandardNormal.sample(rng);
            *o = m + s * z;
        }
        Ok(())
    }
}
