//! How far a fit is from a posterior's reference: standardised mean errors of the constrained
//! quantities (every method), and a mean-field Gaussian's distance from the exact mean-field
//! optimum in the unconstrained space (OVI).

use smi::rand::{ChaCha8Rng, SeedableRng};
use smi::{Error, Matrix, Posterior, Result};

use super::reference::{constrained_moments, Reference, UnconstrainedMoments};
use super::StanPosterior;

/// Draws taken from a variational posterior to estimate its constrained means: the Monte
/// Carlo error of a mean is then sd/√20000 < 0.01 reference sd.
pub const CHECK_DRAWS: usize = 20_000;

/// |mean − reference mean| / reference sd of every reference quantity (constrained, in
/// [`StanPosterior::reference_names`] order), the means taken over the posterior's draws:
/// NUTS's own draws, or [`CHECK_DRAWS`] draws (seed 0) of a variational posterior.
///
/// # Errors
/// From drawing the posterior.
pub fn standardised_errors<M: StanPosterior>(
    model: &M,
    reference: &Reference,
    posterior: &Posterior,
) -> Result<Vec<f64>> {
    let (means, _) = constrained_moments(model, &posterior_draws(posterior)?);
    Ok(means
        .iter()
        .zip(reference.means())
        .zip(reference.sds())
        .map(|((m, r), s)| (m - r).abs() / s)
        .collect())
}

/// Draws of a posterior in the unconstrained space: all of NUTS's draws, or [`CHECK_DRAWS`]
/// draws (seed 0) of a variational posterior.
///
/// # Errors
/// From drawing the posterior.
pub fn posterior_draws(posterior: &Posterior) -> Result<Matrix> {
    match posterior.as_draws() {
        Some(d) => Ok(d.clone()),
        None => posterior.sample(CHECK_DRAWS, &mut ChaCha8Rng::seed_from_u64(0)),
    }
}

/// A mean-field Gaussian's distance from the exact mean-field optimum, per unconstrained
/// coordinate.
#[derive(Clone, Debug)]
pub struct MeanFieldErrors {
    /// |location − reference mean| / reference sd (all in the unconstrained space).
    pub mean: Vec<f64>,
    /// scale / exact mean-field sd − 1 ([`UnconstrainedMoments::mean_field_sd`]).
    pub sd: Vec<f64>,
}

impl MeanFieldErrors {
    /// The largest |mean error| (in reference sds).
    pub fn max_mean(&self) -> f64 {
        self.mean.iter().fold(0.0, |a, v| a.max(v.abs()))
    }

    /// The largest |relative sd error|.
    pub fn max_sd(&self) -> f64 {
        self.sd.iter().fold(0.0, |a, v| a.max(v.abs()))
    }
}

/// Compares a one-component Normal posterior (OVI's) with the reference's unconstrained
/// moments.
///
/// # Errors
/// [`Error::Unsupported`] for a posterior that is not a single Normal guide.
pub fn mean_field_errors(
    moments: &UnconstrainedMoments,
    posterior: &Posterior,
) -> Result<MeanFieldErrors> {
    let mixture = posterior
        .as_mixture()
        .filter(|m| m.num_particles() == 1)
        .ok_or_else(|| Error::Unsupported("not a single-guide posterior".into()))?;
    let (loc, scale) = (mixture.locations(), mixture.scales());
    let mean = (0..moments.mean.len())
        .map(|c| (loc.get(0, c) - moments.mean[c]).abs() / moments.sd[c])
        .collect();
    let sd = (0..moments.mean.len())
        .map(|c| scale.get(0, c) / moments.mean_field_sd[c] - 1.0)
        .collect();
    Ok(MeanFieldErrors { mean, sd })
}

/// The largest value of `v` (0 for none).
pub fn max_of(v: &[f64]) -> f64 {
    v.iter().fold(0.0, |a, x| a.max(*x))
}

/// The library's defaults for `method` as the acceptance tests use them: the method's preset
/// ([`smi::Method::preset`]; SVGD with m = 20 particles) and
/// [`smi::RunSettings::until_converged`] with the cap [`DEFAULT_CAP`].
pub fn library_defaults(method: smi::Method) -> (smi::MethodSettings, smi::RunSettings) {
    let settings = method.preset(DEFAULT_CAP);
    let settings = if method == smi::Method::Svgd {
        settings.with_particles(20)
    } else {
        settings
    };
    (settings, smi::RunSettings::until_converged(DEFAULT_CAP))
}

/// The step cap of the default runs (the defaults converge within 22 500–49 000 steps on the
/// four posteriors, docs/defaults.md).
pub const DEFAULT_CAP: u64 = 100_000;
