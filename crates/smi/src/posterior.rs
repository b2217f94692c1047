//! What a fit leaves behind (docs/algorithms.md §6): [`Posterior`], either a [`Mixture`] of the particles'
//! guides (SMI and OVI: Normal guides; SVGD, ASVGD and MAP: point masses, i.e. the particles) or
//! a set of draws (NUTS), with predictive draws, means and variances for both (on unconstrained
//! θ), and draws and summaries in the model's constrained space by name
//! ([`Posterior::constrained_draws`], [`Posterior::summary`]).

use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::guide::GuideSettings;
use crate::matrix::Matrix;
use crate::model::{softplus, Layout};
use crate::summary::Summary;

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

    /// Draws in the constrained space of `layout` (the model's [`crate::LogDensity::layout`]),
    /// n × [`Layout::constrained_dim`], columns named by [`Layout::constrained_names`]: `n`
    /// mixture draws ([`Mixture::sample`]) mapped by [`Layout::constrain`], or **every** stored
    /// draw constrained (for [`Posterior::Draws`], `n` is ignored: NUTS's chains are the
    /// sample).
    ///
    /// # Errors
    /// [`Error::Shape`] when `layout.dim()` is not d; as [`Mixture::sample`].
    pub fn constrained_draws<R: Rng + ?Sized>(
        &self,
        layout: &Layout,
        n: usize,
        rng: &mut R,
    ) -> Result<Matrix> {
        if layout.dim() != self.dim() {
            return Err(Error::shape("posterior: layout", self.dim(), layout.dim()));
        }
        match self {
            Posterior::Mixture(m) => layout.constrain_draws(&m.sample(n, rng)?.theta),
            Posterior::Draws(d) => layout.constrain_draws(d),
        }
    }

    /// The [`Summary`] of [`Posterior::constrained_draws`] by parameter name: mean, sd and
    /// quantiles, without ESS or R̂ (the draws are independent, or their chains are unknown
    /// here: for NUTS use [`crate::Fit::summary`] or [`Summary::from_nuts`]).
    ///
    /// # Errors
    /// As [`Posterior::constrained_draws`].
    pub fn summary<R: Rng + ?Sized>(
        &self,
        layout: &Layout,
        n: usize,
        rng: &mut R,
    ) -> Result<Summary> {
        let x = self.constrained_draws(layout, n, rng)?;
        Summary::from_draws(&layout.constrained_names(), &x)
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
///
/// Built by [`Mixture::new`], which checks that the particles are p = `guide.param_dim(d)` wide,
/// so the methods below never index out of bounds; deserialising runs the same check.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "RawMixture")]
pub struct Mixture {
    /// The guide each particle parameterises.
    guide: GuideSettings,
    /// The particles, one per row (Normal: [loc | ρ], Delta: θ).
    particles: Matrix,
    /// d, the model dimension.
    dim: usize,
}

/// The serialised form of [`Mixture`], checked by [`Mixture::new`] before it becomes one.
#[derive(Deserialize)]
struct RawMixture {
    guide: GuideSettings,
    particles: Matrix,
    dim: usize,
}

impl TryFrom<RawMixture> for Mixture {
    type Error = Error;

    fn try_from(raw: RawMixture) -> Result<Self> {
        Mixture::new(raw.guide, raw.particles, raw.dim)
    }
}

/// The guide's name in messages.
fn guide_name(guide: &GuideSettings) -> &'static str {
    match guide {
        GuideSettings::Normal { .. } => "Normal",
        GuideSettings::LowRank { .. } => "low-rank Normal",
        GuideSettings::FullRank { .. } => "full-rank Normal",
        GuideSettings::Delta => "Delta",
    }
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
    /// The uniform mixture of the `guide`s parameterised by the rows of `particles`, for a model
    /// of dimension `dim` (d).
    ///
    /// # Errors
    /// [`Error::Shape`] unless `particles` has p = `guide.param_dim(dim)` columns (2d for
    /// Normal, d(2 + r) for low-rank, d for Delta), or when p overflows.
    pub fn new(guide: GuideSettings, particles: Matrix, dim: usize) -> Result<Self> {
        let p = guide.checked_param_dim(dim);
        if p != Some(particles.cols()) {
            return Err(Error::shape(
                format!("mixture of {} guides", guide_name(&guide)),
                match p {
                    Some(p) => format!("{p} particle columns for d = {dim}"),
                    None => format!("a model dimension d = {dim} whose p does not overflow"),
                },
                format!("{} columns", particles.cols()),
            ));
        }
        Ok(Mixture {
            guide,
            particles,
            dim,
        })
    }

    /// A mixture of no particles (0×p), whose draws are an error.
    pub(crate) fn empty(guide: GuideSettings, dim: usize) -> Self {
        let p = guide.param_dim(dim);
        // With no rows no method indexes a particle, even if p saturated.
        Mixture {
            guide,
            particles: Matrix::zeros(0, p),
            dim,
        }
    }

    /// The guide each particle parameterises.
    pub fn guide(&self) -> GuideSettings {
        self.guide
    }

    /// The m×p particles, one per row (Normal: [loc | ρ], Delta: θ).
    pub fn particles(&self) -> &Matrix {
        &self.particles
    }

    /// d, the model dimension.
    pub fn dim(&self) -> usize {
        self.dim
    }

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

    /// The m×d matrix of each component's marginal sds: σ = softplus(ρ) for Normal,
    /// σ_c √(1 + ‖v_c‖²) for low-rank, zeros for Delta.
    pub fn scales(&self) -> Matrix {
        let d = self.dim;
        Matrix::from_fn(self.num_particles(), d, |i, c| match self.guide {
            GuideSettings::Normal { .. } => softplus(self.particles.get(i, d + c)),
            GuideSettings::LowRank { rank, .. } => {
                crate::guide::lowrank::marginal_sd(self.particles.row(i), rank, c)
            }
            GuideSettings::FullRank { .. } => {
                crate::guide::fullrank::marginal_sd(self.particles.row(i), c)
            }
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
                GuideSettings::LowRank { .. } | GuideSettings::FullRank { .. } => {
                    let e: Vec<f64> = (0..self.guide.noise_dim(d))
                        .map(|_| StandardNormal.sample(rng))
                        .collect();
                    self.guide.sample(psi, &e, row);
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
            GuideSettings::Normal { .. }
            | GuideSettings::LowRank { .. }
            | GuideSettings::FullRank { .. } => Ok(self.sample(n, rng)?.theta),
            GuideSettings::Delta => Ok(self.locations()),
        }
    }

    /// Per-coordinate variance of the approximation: the mixture variance
    /// mean_j σ_jc² + mean_j μ_jc² − (mean_j μ_jc)² for Normal (the component's marginal variance
    /// σ_jc²(1 + ‖v_jc‖²) in place of σ_jc² for low-rank), the ddof-0 variance of the particles for Delta
    /// (docs/algorithms.md §7.1).
    pub fn marginal_variance(&self) -> Vec<f64> {
        let loc = self.locations();
        let mut var = loc.col_variances();
        if self.guide.is_normal() {
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
        // docs/algorithms.md §12.6: with well-separated components, the empirical frequency of each ≈ 1/m.
        // n = 30 000, m = 3: SE of a frequency = sqrt(p(1−p)/n) = 0.0027; 4 SE = 0.011.
        let s = inv_softplus(0.01);
        let post = Mixture::new(
            GuideSettings::normal(),
            Matrix::from_rows(&[vec![-10.0, s], vec![0.0, s], vec![10.0, s]]).unwrap(),
            1,
        )
        .unwrap();
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
    fn constrained_draws_map_every_draw_through_the_layout() {
        let mut layout = Layout::default();
        layout.push("mu", vec![]);
        layout
            .push_constrained("tau", vec![], crate::model::Constraint::Positive)
            .unwrap();
        let draws = Matrix::from_rows(&[vec![1.0, 0.0], vec![2.0, 1.0], vec![3.0, -1.0]]).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0);
        let x = Posterior::Draws(draws.clone())
            .constrained_draws(&layout, 1, &mut rng)
            .unwrap();
        assert_eq!(x.rows(), 3, "every stored draw, n ignored");
        assert_eq!(x.row(1), &[2.0, 1f64.exp()]);
        // Point masses: every draw is one of the particles, constrained.
        let post = Posterior::from(Mixture::new(GuideSettings::Delta, draws, 2).unwrap());
        let x = post.constrained_draws(&layout, 50, &mut rng).unwrap();
        assert_eq!(x.rows(), 50);
        // Rows (μ, ln τ) = (1, 0), (2, 1), (3, −1).
        let tau_of_mu = |mu: f64| f64::exp([0.0, 1.0, -1.0][mu as usize - 1]);
        assert!(x.iter_rows().all(|r| r[1] == tau_of_mu(r[0])));
        let s = post.summary(&layout, 400, &mut rng).unwrap();
        assert_eq!(s.rows()[1].name, "tau");
        assert!(s.rows()[1].q5 >= (-1f64).exp() && s.rows()[1].rhat.is_none());
        assert!(post
            .constrained_draws(&Layout::flat(3), 5, &mut rng)
            .is_err());
    }

    #[test]
    fn mixture_variance_formula() {
        // Two components at ±1 with σ = 0.5: var = 0.25 + 1 − 0 = 1.25.
        let r = inv_softplus(0.5);
        let post = Mixture::new(
            GuideSettings::normal(),
            Matrix::from_rows(&[vec![-1.0, r], vec![1.0, r]]).unwrap(),
            1,
        )
        .unwrap();
        assert!((post.marginal_variance()[0] - 1.25).abs() < 1e-12);
        assert!(post
            .sample(0, &mut rand_chacha::ChaCha8Rng::seed_from_u64(0))
            .is_err());
    }

    #[test]
    fn a_dimension_that_disagrees_with_the_particles_is_an_error_not_a_panic() {
        // Normal particles are 2d wide, Delta particles d wide.
        let parts = Matrix::from_rows(&[vec![0.0, 1.0, 2.0], vec![3.0, 4.0, 5.0]]).unwrap();
        for (guide, dim) in [
            (GuideSettings::normal(), 3),
            (GuideSettings::normal(), 1),
            (GuideSettings::Delta, 2),
            (GuideSettings::Delta, 4),
            (GuideSettings::normal(), usize::MAX),
        ] {
            assert!(
                matches!(
                    Mixture::new(guide, parts.clone(), dim),
                    Err(Error::Shape { .. })
                ),
                "{guide:?} d = {dim}"
            );
        }
        let ok = Mixture::new(GuideSettings::Delta, parts.clone(), 3).unwrap();
        assert_eq!((ok.dim(), ok.num_particles()), (3, 2));
        assert_eq!(ok.particles(), &parts);
        assert_eq!(ok.locations(), parts);
        // Deserialising runs the same check: a file claiming d = 4 for 3-wide Delta particles
        // is an error, where it used to panic in `locations()` and `sample()`.
        let json = serde_json::to_string(&ok).unwrap();
        let back: Mixture = serde_json::from_str(&json).unwrap();
        assert_eq!(back, ok);
        let bad = json.replace("\"dim\":3", "\"dim\":4");
        assert_ne!(bad, json);
        let err = serde_json::from_str::<Mixture>(&bad)
            .unwrap_err()
            .to_string();
        assert!(err.contains("shape mismatch"), "{err}");
        let normal = json.replace(
            "\"kind\":\"delta\"",
            "\"kind\":\"normal\",\"init_scale\":0.1",
        );
        assert_ne!(normal, json);
        assert!(serde_json::from_str::<Mixture>(&normal).is_err());
    }
}
