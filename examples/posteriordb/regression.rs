//! Gaussian linear regressions y_n ~ N(x_n·β, σ²) with σ > 0: kidiq, sblrc and arK are each
//! one [`RegressionSpec`] (the design matrix built from the data, the names of the
//! coefficients and the priors) inside the one [`Regression`] model.

use smi::rand::RngCore;
use smi::{Error, Layout, PerDraw, Result};

use super::density::{positive, GaussianRows};
use super::StanPosterior;

/// What distinguishes one regression posterior: its data, coefficient blocks and priors.
pub trait RegressionSpec: Send + Sync + Sized {
    /// The posteriordb name.
    const NAME: &'static str;
    /// The short name.
    const SHORT: &'static str;

    /// The spec and the likelihood's rows from the posterior's `data.json`.
    ///
    /// # Errors
    /// [`Error::Data`] for a missing or malformed field.
    fn from_data(data: &serde_json::Value) -> Result<(Self, GaussianRows)>;

    /// The blocks of the coefficient vector β in Stan's declaration order, as (name, length):
    /// a block of length 1 is a scalar (`alpha`), longer ones are vectors (`beta[1]`, …).
    fn blocks(&self) -> Vec<(&'static str, usize)>;

    /// log p(β) + log p(σ) with σ = exp(u) (+ u with the Jacobian); adds the gradient in β
    /// into `g_beta` and in u into `g_u`.
    fn log_prior(
        &self,
        beta: &[f64],
        u: f64,
        jacobian: bool,
        g_beta: &mut [f64],
        g_u: &mut f64,
    ) -> f64;

    /// One prior draw of (β, u) into `out` (length p + 1).
    ///
    /// # Errors
    /// [`Error::Unsupported`] by default (an improper prior cannot be drawn from).
    fn sample_prior(&self, _rng: &mut dyn RngCore, _out: &mut [f64]) -> Result<()> {
        Err(Error::Unsupported(format!(
            "{} has an improper prior; use a uniform initialisation",
            Self::NAME
        )))
    }
}

/// A Gaussian linear regression posterior: unconstrained θ = (β (p), u = log σ), d = p + 1;
/// the data rows are the rows of the design matrix.
#[derive(Clone, Debug)]
pub struct Regression<S> {
    spec: S,
    rows: GaussianRows,
}

impl<S: RegressionSpec> Regression<S> {
    /// p, the number of coefficients.
    pub fn coefficients(&self) -> usize {
        self.rows.width()
    }

    /// The likelihood's rows.
    pub fn rows(&self) -> &GaussianRows {
        &self.rows
    }
}

impl<S: RegressionSpec> PerDraw for Regression<S> {
    fn dim(&self) -> usize {
        self.coefficients() + 1
    }

    fn num_data(&self) -> usize {
        self.rows.len()
    }

    fn log_prior(&self, t: &[f64], jacobian: bool, g: &mut [f64]) -> Result<f64> {
        let p = self.coefficients();
        let (g_beta, g_u) = g.split_at_mut(p);
        Ok(self
            .spec
            .log_prior(&t[..p], t[p], jacobian, g_beta, &mut g_u[0]))
    }

    fn log_likelihood(&self, t: &[f64], rows: &[usize], scale: f64, g: &mut [f64]) -> Result<f64> {
        let p = self.coefficients();
        let (g_beta, g_u) = g.split_at_mut(p);
        Ok(self
            .rows
            .log_likelihood(&t[..p], t[p], rows, scale, g_beta, &mut g_u[0]))
    }

    /// The coefficient blocks (a scalar for length 1) and sigma, declared positive (its
    /// column holds log sigma).
    fn layout(&self) -> Layout {
        let mut l = Layout::default();
        for (name, len) in self.spec.blocks() {
            l.push(name, if len == 1 { vec![] } else { vec![len] });
        }
        positive(&mut l, "sigma");
        l
    }

    fn sample_prior(&self, rng: &mut dyn RngCore, out: &mut [f64]) -> Result<()> {
        self.spec.sample_prior(rng, out)
    }
}

impl<S: RegressionSpec> StanPosterior for Regression<S> {
    const NAME: &'static str = S::NAME;
    const SHORT: &'static str = S::SHORT;

    fn from_data(data: &serde_json::Value) -> Result<Self> {
        let (spec, rows) = S::from_data(data)?;
        let p: usize = spec.blocks().iter().map(|b| b.1).sum();
        if p != rows.width() || rows.is_empty() {
            return Err(Error::Data(format!(
                "{}: {} coefficients for design rows of width {} ({} rows)",
                S::NAME,
                p,
                rows.width(),
                rows.len()
            )));
        }
        Ok(Regression { spec, rows })
    }

    /// The layout's constrained names: the coefficients and sigma.
    fn reference_names(&self) -> Vec<String> {
        PerDraw::layout(self).constrained_names()
    }

    fn constrain(&self, t: &[f64], out: &mut [f64]) {
        let p = self.coefficients();
        out[..p].copy_from_slice(&t[..p]);
        out[p] = t[p].exp();
    }

    fn unconstrain(&self, r: &[f64], out: &mut [f64]) {
        let p = self.coefficients();
        out[..p].copy_from_slice(&r[..p]);
        out[p] = r[p].ln();
    }
}
