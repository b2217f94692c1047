//! What a fit leaves behind (docs/algorithms.md §6): [`Posterior`], either a [`Mixture`] of the particles'
//! guides (SMI and OVI: Normal guides; SVGD, ASVGD and MAP: point masses, i.e. the particles) or
//! a set of draws (NUTS), with predictive draws, means and variances for both.

use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::guide::GuideSettings;
use crate::matrix::Matrix;
use crate::model::softplus;

/// The result of any method: a mixture of guides or a set of draws.
#[derive(Clone, Debug, PartialEq)]
pub enum Posterior {
    /// The uniform mixture of m guides (SMI, SVGD, ASVGD, OVI, MAP).
    Mixture(Mixture),
    /// Posterior draws, n×d, one per row (NUTS; chains one after another).
    Draws(Matrix),
}

impl Posterior {
    /// d, the model dimension.
    pub fn dim(&self) -> usize {
        match self {
            Posterior::Mixture(m) => m.dim,
            Posterior::Draws(d) => d.cols(),
        }
    }

    /// The mixture, if this is one.
    pub fn as_mixture(&self) -> Option<&Mixture> {
        match self {
            Posterior::Mixture(m) => Some(m),
            Posterior::Draws(_) => None,
        }
    }

    /// The draws, if this is a set of draws.
    pub fn as_draws(&self) -> Option<&Matrix> {
        match self {
            Posterior::Mixture(_) => None,
            Posterior::Draws(d) => Some(d),
        }
    }

    /// `n` draws, n×d: from the mixture ([`Mixture::sample`]), or `n` of the stored draws
    /// picked uniformly with replacement.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] for n = 0 or an empty posterior.
    pub fn sample<R: Rng + ?Sized>(&self, n: usize, rng: &mut R) -> Result<Matrix> {
        match self {
            Posterior::Mixture(m) => Ok(m.sample(n, rng)?.theta),
            Posterior::Draws(d) => {
                if n == 0 {
                    return Err(Error::invalid("num_samples", "must be at least 1"));
                }
                if d.rows() == 0 {
                    return Err(Error::invalid("draws", "the posterior has no draws"));
                }
                let mut out = Matrix::zeros(n, d.cols());
                for s in 0..n {
                    let r = rng.random_range(0..d.rows());
                    out.row_mut(s).copy_from_slice(d.row(r));
                }
                Ok(out)
            }
        }
    }

    /// Draws for prediction as the paper's evaluation takes them (docs/algorithms.md §6, §7.3): `n` mixture
    /// draws for Normal guides (SMI, OVI), one draw per particle for point masses (SVGD, ASVGD,
    /// MAP), every stored draw for NUTS.
    ///
    /// # Errors
    /// As [`Mixture::sample`].
    pub fn predictive_draws<R: Rng + ?Sized>(&self, n: usize, rng: &mut R) -> Result<Matrix> {
        match self {
            Posterior::Mixture(m) => m.predictive_draws(n, rng),
            Posterior::Draws(d) => Ok(d.clone()),
        }
    }

    /// Per-coordinate mean (length d): the mixture's exact mean, or the draws' mean.
    pub fn mean(&self) -> Vec<f64> {
        match self {
            Posterior::Mixture(m) => m.mean(),
            Posterior::Draws(d) => d.col_means(),
        }
    }

    /// Per-coordinate variance (length d): the mixture's exact variance
    /// ([`Mixture::marginal_variance`]), or the draws' variance (ddof 0).
    pub fn variance(&self) -> Vec<f64> {
        match self {
            Posterior::Mixture(m) => m.marginal_variance(),
            Posterior::Draws(d) => d.col_variances(),
        }
    }
}

impl From<Mixture> for Posterior {
    fn from(m: Mixture) -> Self {
        Posterior::Mixture(m)
    }
}

/// The approximate posterior of a variational method: the uniform mixture of the guides of m
/// particles (m×p).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mixture {
    /// The guide each particle parameterises.
    pub guide: GuideSettings,
    /// The particles, one per row (Normal: [loc | ρ], Delta: θ).
    pub particles: Matrix,
    /// d, the model dimension.
    pub dim: usize,
}

/// Draws with the component each came from.
#[derive(Clone, Debug, PartialEq)]
pub struct MixtureDraws {
    /// n×d parameter draws (unconstrained).
    pub theta: Matrix,
    /// The mixture component (particle) of each draw.
    pub assignments: Vec<usize>,
}

impl Mixture {
    /// Number of particles m.
    pub fn num_particles(&self) -> usize {
        self.particles.rows()
    }

    /// The m×d matrix of particle locations (loc for Normal, θ for Delta).
    pub fn locations(&self) -> Matrix {
        Matrix::from_fn(self.num_particles(), self.dim, |i, c| {
            self.particles.get(i, c)
        })
    }

    /// The m×d matrix of guide scales σ = softplus(ρ) (zeros for Delta).
    pub fn scales(&self) -> Matrix {
        Matrix::from_fn(self.num_particles(), self.dim, |i, c| match self.guide {
            GuideSettings::Normal { .. } => softplus(self.particles.get(i, self.dim + c)),
            GuideSettings::Delta => 0.0,
        })
    }

    /// `n` draws from the uniform mixture: component c ~ Uniform{0..m−1}, then θ ~ q(·|ψ_c)
    /// (NumPyro's `MixtureGuidePredictive`). For a Delta guide each draw is a particle.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] for n = 0 or a posterior without particles.
    pub fn sample<R: Rng + ?Sized>(&self, n: usize, rng: &mut R) -> Result<MixtureDraws> {
        let m = self.num_particles();
        if n == 0 {
            return Err(Error::invalid("num_samples", "must be at least 1"));
        }
        if m == 0 {
            return Err(Error::invalid(
                "particles",
                "the posterior has no particles",
            ));
        }
        let d = self.dim;
        let mut theta = Matrix::zeros(n, d);
        let mut assignments = Vec::with_capacity(n);
        for s in 0..n {
            let c = rng.random_range(0..m);
            assignments.push(c);
            let psi = self.particles.row(c);
            let row = theta.row_mut(s);
            match self.guide {
                GuideSettings::Normal { .. } => {
                    for j in 0..d {
                        let e: f64 = StandardNormal.sample(rng);
                        row[j] = psi[j] + softplus(psi[d + j]) * e;
                    }
                }
                GuideSettings::Delta => row.copy_from_slice(&psi[..d]),
            }
        }
        Ok(MixtureDraws { theta, assignments })
    }

    /// Draws for prediction as the paper's evaluation takes them (docs/algorithms.md §6, §7): `n` mixture
    /// draws for a Normal guide, exactly one draw per particle (m draws) for a Delta guide.
    ///
    /// # Errors
    /// As [`Mixture::sample`].
    pub fn predictive_draws<R: Rng + ?Sized>(&self, n: usize, rng: &mut R) -> Result<Matrix> {
        match self.guide {
            GuideSettings::Normal { .. } => Ok(self.sample(n, rng)?.theta),
            GuideSettings::Delta => Ok(self.locations()),
        }
    }

    /// Per-coordinate variance of the approximation: the mixture variance
    /// mean_j σ_jc² + mean_j μ_jc² − (mean_j μ_jc)² for Normal, the ddof-0 variance of the
    /// particles for Delta (docs/algorithms.md §7.1).
    pub fn marginal_variance(&self) -> Vec<f64> {
        let loc = self.locations();
        let mut var = loc.col_variances();
        if let GuideSettings::Normal { .. } = self.guide {
            let sc = self.scales();
            let m = self.num_particles().max(1) as f64;
            for (c, v) in var.iter_mut().enumerate() {
                *v += (0..self.num_particles())
                    .map(|i| sc.get(i, c).powi(2))
                    .sum::<f64>()
                    / m;
            }
        }
        var
    }

    /// Per-coordinate mean of the approximation (mean over components of the locations).
    pub fn mean(&self) -> Vec<f64> {
        self.locations().col_means()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::inv_softplus;
    use rand::SeedableRng;

    #[test]
    fn components_are_drawn_uniformly() {
        // Spec §12.6: with well-separated components, the empirical frequency of each ≈ 1/m.
        // n = 30 000, m = 3: SE of a frequency = sqrt(p(1−p)/n) = 0.0027; 4 SE = 0.011.
        let s = inv_softplus(0.01);
        let post = Mixture {
            guide: GuideSettings::normal(),
            particles: Matrix::from_rows(&[vec![-10.0, s], vec![0.0, s], vec![10.0, s]]).unwrap(),
            dim: 1,
        };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let draws = post.sample(30_000, &mut rng).unwrap();
        for c in 0..3 {
            let idx: Vec<usize> = (0..30_000).filter(|&s| draws.assignments[s] == c).collect();
            let freq = idx.len() as f64 / 30_000.0;
            assert!((freq - 1.0 / 3.0).abs() < 0.011, "component {c}: {freq}");
            let mean = idx.iter().map(|&s| draws.theta.get(s, 0)).sum::<f64>() / idx.len() as f64;
            assert!((mean - (c as f64 - 1.0) * 10.0).abs() < 0.01);
        }
    }

    #[test]
    fn mixture_variance_formula() {
        // Two components at ±1 with σ = 0.5: var = 0.25 + 1 − 0 = 1.25.
        let r = inv_softplus(0.5);
        let post = Mixture {
            guide: GuideSettings::normal(),
            particles: Matrix::from_rows(&[vec![-1.0, r], vec![1.0, r]]).unwrap(),
            dim: 1,
        };
        assert!((post.marginal_variance()[0] - 1.25).abs() < 1e-12);
        assert!(post
            .sample(0, &mut rand_chacha::ChaCha8Rng::seed_from_u64(0))
            .is_err());
    }
}
