//! Four posteriors of posteriordb (stan-dev/posteriordb) written as `smi` models, each following
//! its Stan program line by line with hand-written gradients, and their gold-standard reference
//! draws.
//!
//! | posterior | model | unconstrained θ (d) | data rows |
//! |---|---|---|---|
//! | `eight_schools-eight_schools_noncentered` | [`EightSchools`] | `theta_trans[1..8], mu, log tau` (10) | 8 schools |
//! | `kidiq-kidscore_momiq` | [`Kidiq`] | `beta[1], beta[2], log sigma` (3) | 434 children |
//! | `sblrc-blr` | [`Sblrc`] | `beta[1..5], log sigma` (6) | 100 observations |
//! | `arK-arK` | [`ArK`] | `alpha, beta[1..5], log sigma` (7) | 195 time points |
//!
//! Each model works on unconstrained θ: a positive parameter (τ, σ) is its log, mapped back by
//! [`smi::Transform::Exp`], and the log-Jacobian log|dσ/du| = u is added when the engine asks
//! for it ([`smi::Batch::jacobian`]). Every likelihood sums over data rows, so any engine can
//! mini-batch them ([`smi::PerDraw::num_data`], the rows and the N/b scale of a
//! [`smi::Batch`]).
//!
//! The data are read from `$SMI_DATA_DIR/posteriordb/<posterior>/` or, without that variable,
//! from the repository's `../shared/data/posteriordb/` ([`data_dir`]).

mod ark;
mod check;
mod density;
mod eight_schools;
mod kidiq;
mod linalg;
mod mean_field;
mod reference;
mod regression;
mod sblrc;

pub use ark::{ArK, ArKSpec};
pub use check::{
    library_defaults, max_of, mean_field_errors, posterior_draws, standardised_errors,
    MeanFieldErrors, CHECK_DRAWS, DEFAULT_CAP,
};
pub use density::{half_cauchy, half_normal, normal, positive, GaussianRows};
pub use eight_schools::EightSchools;
pub use kidiq::{Kidiq, KidiqSpec};
pub use mean_field::{mean_field_optimum, mean_field_target, MeanFieldOptimum, TARGET_DRAWS};
pub use reference::{constrained_moments, Reference, UnconstrainedMoments};
pub use regression::{Regression, RegressionSpec};
pub use sblrc::{Sblrc, SblrcSpec};

use std::path::{Path, PathBuf};

use smi::{Error, PerDraw, Result};

/// The four posteriors' names, in the order of this crate's tables.
pub const POSTERIORS: [&str; 4] = [EightSchools::NAME, Kidiq::NAME, Sblrc::NAME, ArK::NAME];

/// A posteriordb posterior written as a [`PerDraw`] model on unconstrained θ, with the maps
/// between θ and the quantities its reference draws hold (constrained, by Stan name).
pub trait StanPosterior: PerDraw + Sized {
    /// The posteriordb name, e.g. `"kidiq-kidscore_momiq"` (the data folder's name).
    const NAME: &'static str;

    /// The short name of tests and the command line, e.g. `"kidiq"`.
    const SHORT: &'static str;

    /// Whether the posterior is close to Gaussian in the unconstrained space, so that the
    /// reference covariance gives its exact mean-field optimum ([`mean_field_target`]). True
    /// by default; eight schools (log tau) is not.
    const NEAR_GAUSSIAN: bool = true;

    /// Builds the model from the posterior's `data.json`.
    ///
    /// # Errors
    /// [`Error::Data`] for a missing or malformed field.
    fn from_data(data: &serde_json::Value) -> Result<Self>;

    /// The Stan names of the reference draws' columns (e.g. `"theta[1]"`, `"tau"`), in the
    /// order of [`StanPosterior::constrain`]'s output.
    fn reference_names(&self) -> Vec<String>;

    /// Maps one unconstrained θ (length d) to the reference quantities (length
    /// `reference_names().len()`): positives exponentiated, transformed parameters computed.
    fn constrain(&self, theta: &[f64], out: &mut [f64]);

    /// Maps one reference draw (in [`StanPosterior::reference_names`] order) to unconstrained
    /// θ (length d): the inverse of [`StanPosterior::constrain`].
    fn unconstrain(&self, reference: &[f64], out: &mut [f64]);
}

/// A model and its reference draws.
pub struct Loaded<M> {
    /// The model, built from `data.json`.
    pub model: M,
    /// The reference draws (10 chains × 1000), in the model's [`StanPosterior::reference_names`]
    /// order.
    pub reference: Reference,
}

/// The folder of the posteriordb data: `$SMI_DATA_DIR/posteriordb` when the variable is set,
/// else `shared/data/posteriordb` beside the repository (`<workspace>/../shared/data`).
pub fn data_dir() -> PathBuf {
    let root = std::env::var_os("SMI_DATA_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"),
        PathBuf::from,
    );
    root.join("posteriordb")
}

/// Loads posterior `M` (model and reference draws) from [`data_dir`].
///
/// # Errors
/// [`Error::Data`] naming the file and `SMI_DATA_DIR` when a file is missing or malformed.
pub fn load<M: StanPosterior>() -> Result<Loaded<M>> {
    load_from(&data_dir().join(M::NAME))
}

/// Loads posterior `M` from the folder `dir` holding its `data.json` and
/// `reference_draws.json`.
///
/// # Errors
/// [`Error::Data`] naming the file when one is missing or malformed.
pub fn load_from<M: StanPosterior>(dir: &Path) -> Result<Loaded<M>> {
    let model = M::from_data(&read_json(&dir.join("data.json"))?)?;
    let reference = Reference::from_json(
        &read_json(&dir.join("reference_draws.json"))?,
        &model.reference_names(),
    )?;
    Ok(Loaded { model, reference })
}

/// Reads and parses one JSON file.
fn read_json(path: &Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Error::Data(format!(
            "cannot read {}: {e} (the posteriordb data live in $SMI_DATA_DIR/posteriordb, \
             default <workspace>/../shared/data/posteriordb; set SMI_DATA_DIR to the folder \
             holding posteriordb/)",
            path.display()
        ))
    })?;
    serde_json::from_str(&text)
        .map_err(|e| Error::Data(format!("{} is not valid JSON: {e}", path.display())))
}

/// The numbers of field `key` of a data object (an array of numbers).
pub(crate) fn numbers(data: &serde_json::Value, key: &str) -> Result<Vec<f64>> {
    let bad = || {
        Error::Data(format!(
            "data field {key:?} is missing or not an array of numbers"
        ))
    };
    data.get(key)
        .and_then(|v| v.as_array())
        .ok_or_else(bad)?
        .iter()
        .map(|v| v.as_f64().ok_or_else(bad))
        .collect()
}

/// The non-negative integer field `key` of a data object.
pub(crate) fn count(data: &serde_json::Value, key: &str) -> Result<usize> {
    data.get(key)
        .and_then(|v| v.as_u64())
        .and_then(|v| usize::try_from(v).ok())
        .ok_or_else(|| Error::Data(format!("data field {key:?} is missing or not a count")))
}

/// Stan's flattened names of a vector: `name[1]`, …, `name[n]`.
pub(crate) fn indexed(name: &str, n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("{name}[{i}]")).collect()
}

/// Checks that a data vector has the length the data declare.
pub(crate) fn check_len(what: &str, v: &[f64], n: usize) -> Result<()> {
    if v.len() == n {
        Ok(())
    } else {
        Err(Error::Data(format!(
            "data field {what:?} has {} values, the data declare {n}",
            v.len()
        )))
    }
}
