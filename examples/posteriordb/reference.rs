//! posteriordb's reference draws of a posterior: the constrained draws by Stan name, their
//! means and sds, and their moments mapped to the model's unconstrained space (with the
//! exact mean-field Gaussian sds of that space).

use smi::{Error, Matrix, Result};

use super::linalg::inverse_diagonal;
use super::StanPosterior;

/// The reference draws of one posterior: 10 chains × 1000 draws of the constrained
/// quantities named by the model ([`StanPosterior::reference_names`]), chain after chain.
#[derive(Clone, Debug)]
pub struct Reference {
    names: Vec<String>,
    num_chains: usize,
    draws: Matrix,
}

impl Reference {
    /// Reads `reference_draws.json` (an array of chains, each an object from Stan name to
    /// draws), keeping the columns `names` in that order.
    ///
    /// # Errors
    /// [`Error::Data`] when a name is missing from a chain or the chains differ in length.
    pub fn from_json(value: &serde_json::Value, names: &[String]) -> Result<Self> {
        let chains = value.as_array().filter(|c| !c.is_empty()).ok_or_else(|| {
            Error::Data("reference draws: not a non-empty array of chains".into())
        })?;
        let mut rows: Vec<Vec<f64>> = Vec::new();
        let mut per_chain = None;
        for (c, chain) in chains.iter().enumerate() {
            let mut columns = Vec::with_capacity(names.len());
            for name in names {
                columns.push(super::numbers(chain, name).map_err(|_| {
                    Error::Data(format!(
                        "reference draws: chain {c} has no draws of {name:?}"
                    ))
                })?);
            }
            let n = columns.first().map_or(0, Vec::len);
            if n == 0 || columns.iter().any(|col| col.len() != n) {
                return Err(Error::Data(format!(
                    "reference draws: chain {c} has columns of different lengths"
                )));
            }
            if *per_chain.get_or_insert(n) != n {
                return Err(Error::Data(
                    "reference draws: chains differ in length".into(),
                ));
            }
            rows.extend((0..n).map(|i| columns.iter().map(|col| col[i]).collect()));
        }
        Ok(Reference {
            names: names.to_vec(),
            num_chains: chains.len(),
            draws: Matrix::from_rows(&rows)?,
        })
    }

    /// The Stan names of the columns.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The number of chains (10 for posteriordb's references).
    pub fn num_chains(&self) -> usize {
        self.num_chains
    }

    /// All draws, (chains × draws per chain) × names, chain after chain.
    pub fn draws(&self) -> &Matrix {
        &self.draws
    }

    /// The mean of every column.
    pub fn means(&self) -> Vec<f64> {
        self.draws.col_means()
    }

    /// The sd of every column (divisor n − 1, as posteriordb's README computes them).
    pub fn sds(&self) -> Vec<f64> {
        moments(&self.draws).1
    }

    /// The reference draws mapped to `model`'s unconstrained space
    /// ([`StanPosterior::unconstrain`]) and their moments.
    pub fn unconstrained<M: StanPosterior>(&self, model: &M) -> Result<UnconstrainedMoments> {
        let d = smi::PerDraw::dim(model);
        let mut out = Matrix::try_zeros(self.draws.rows(), d)?;
        for (i, row) in self.draws.iter_rows().enumerate() {
            model.unconstrain(row, out.row_mut(i));
        }
        UnconstrainedMoments::of(&out)
    }
}

/// Moments of draws in a model's unconstrained space.
#[derive(Clone, Debug)]
pub struct UnconstrainedMoments {
    /// Mean of every coordinate.
    pub mean: Vec<f64>,
    /// Sd of every coordinate (divisor n − 1).
    pub sd: Vec<f64>,
    /// Covariance Σ (d × d, divisor n − 1).
    pub cov: Matrix,
    /// The sds of the best mean-field Gaussian for a Gaussian with covariance Σ:
    /// 1/√(Σ⁻¹)_ii, the exact optimum mean-field VI reaches on a Gaussian posterior
    /// (smaller than `sd` where coordinates are correlated).
    pub mean_field_sd: Vec<f64>,
}

impl UnconstrainedMoments {
    /// The moments of the rows of `draws` (n × d).
    ///
    /// # Errors
    /// [`Error::NonFinite`] when the covariance is not positive definite.
    pub fn of(draws: &Matrix) -> Result<Self> {
        let (mean, sd) = moments(draws);
        let (n, d) = (draws.rows(), draws.cols());
        let mut cov = Matrix::zeros(d, d);
        for row in draws.iter_rows() {
            for a in 0..d {
                for b in 0..=a {
                    let v = cov.get(a, b) + (row[a] - mean[a]) * (row[b] - mean[b]);
                    cov.set(a, b, v);
                }
            }
        }
        let denom = (n.max(2) - 1) as f64;
        for a in 0..d {
            for b in 0..=a {
                let v = cov.get(a, b) / denom;
                cov.set(a, b, v);
                cov.set(b, a, v);
            }
        }
        let mean_field_sd = inverse_diagonal(&cov)?
            .iter()
            .map(|p| 1.0 / p.sqrt())
            .collect();
        Ok(UnconstrainedMoments {
            mean,
            sd,
            cov,
            mean_field_sd,
        })
    }
}

/// Column means and sds (divisor n − 1) of the rows of `draws`.
pub(crate) fn moments(draws: &Matrix) -> (Vec<f64>, Vec<f64>) {
    let mean = draws.col_means();
    let n = draws.rows() as f64;
    let mut var = vec![0.0; draws.cols()];
    for row in draws.iter_rows() {
        for ((v, x), m) in var.iter_mut().zip(row).zip(&mean) {
            *v += (x - m) * (x - m);
        }
    }
    let sd = var
        .iter()
        .map(|v| (v / (n - 1.0).max(1.0)).sqrt())
        .collect();
    (mean, sd)
}

/// The means and sds (divisor n − 1) of the quantities of `model`'s reference names, over
/// draws in its unconstrained space (`draws`: n × d, e.g. a fit's posterior draws).
pub fn constrained_moments<M: StanPosterior>(model: &M, draws: &Matrix) -> (Vec<f64>, Vec<f64>) {
    let q = model.reference_names().len();
    let mut out = Matrix::zeros(draws.rows(), q);
    for (i, row) in draws.iter_rows().enumerate() {
        model.constrain(row, out.row_mut(i));
    }
    moments(&out)
}
