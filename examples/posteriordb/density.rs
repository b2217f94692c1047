//! The pieces of log density the four posteriors share: Normal and half-Cauchy/half-Normal
//! priors (the latter on a positive parameter kept as its log) and a Gaussian likelihood over
//! the rows of a design matrix. Constant terms are dropped, as Stan's `~` drops them.

use smi::rand::{Rng, RngCore};
use smi::{Constraint, Error, Layout, Result, Transform};

/// Appends the scalar block `name` to `l`, declared [`Constraint::Positive`]: its column holds
/// u = log x and summaries show x = exp(u) ([`Transform::Exp`], the transform the densities
/// here use).
pub fn positive(l: &mut Layout, name: &str) {
    // A positive constraint accepts every shape, so this push cannot fail.
    if l.push_constrained(name, vec![], Constraint::Positive)
        .is_err()
    {
        l.push(name, vec![]);
    }
}

/// One standard Normal draw (Box–Muller), for the models' prior draws.
pub(crate) fn std_normal(rng: &mut dyn RngCore) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// The log of one half-Cauchy(0, s) draw: ln(s·|tan(π(v − ½))|), v uniform.
pub(crate) fn log_half_cauchy_draw(rng: &mut dyn RngCore, scale: f64) -> f64 {
    let v: f64 = rng.random::<f64>();
    (scale * (std::f64::consts::PI * (v - 0.5)).tan().abs()).ln()
}

/// log N(x; 0, s²) up to a constant, −½(x/s)², adding its derivative −x/s² into `g`.
pub fn normal(x: f64, scale: f64, g: &mut f64) -> f64 {
    *g += -x / (scale * scale);
    -0.5 * (x / scale).powi(2)
}

/// A prior on x = exp(u) > 0 seen as a function of the unconstrained u: `lpdf(x)` gives
/// (log p(x), d log p/dx); with `jacobian` log|dx/du| = u is added. Adds d/du into `g`.
fn on_positive(u: f64, jacobian: bool, g: &mut f64, lpdf: impl Fn(f64) -> (f64, f64)) -> f64 {
    let t = Transform::Exp;
    let x = t.forward(u);
    let (lp, dlp_dx) = lpdf(x);
    *g += dlp_dx * t.derivative(u);
    if jacobian {
        *g += t.log_abs_det_jacobian_grad(u);
        lp + t.log_abs_det_jacobian(u)
    } else {
        lp
    }
}

/// Stan's `x ~ cauchy(0, s)` on `real<lower=0> x` (a half-Cauchy), with x = exp(u):
/// −ln(1 + (x/s)²) [+ u], adding its derivative in u into `g`.
pub fn half_cauchy(u: f64, scale: f64, jacobian: bool, g: &mut f64) -> f64 {
    on_positive(u, jacobian, g, |x| {
        (
            -(x / scale).powi(2).ln_1p(),
            -2.0 * x / (scale * scale + x * x),
        )
    })
}

/// Stan's `x ~ normal(0, s)` on `real<lower=0> x` (a half-Normal), with x = exp(u):
/// −½(x/s)² [+ u], adding its derivative in u into `g`.
pub fn half_normal(u: f64, scale: f64, jacobian: bool, g: &mut f64) -> f64 {
    on_positive(u, jacobian, g, |x| {
        (-0.5 * (x / scale).powi(2), -x / (scale * scale))
    })
}

/// The likelihood y_n ~ N(x_n·β, σ²), n = 1..N, of a linear regression on a design matrix
/// (N × p, row-major), with σ = exp(u). Kidiq, sblrc and arK are all of this form; they
/// differ in their design matrices and priors.
#[derive(Clone, Debug)]
pub struct GaussianRows {
    x: Vec<f64>,
    y: Vec<f64>,
    p: usize,
}

impl GaussianRows {
    /// The rows `x` (N × p, row-major) and responses `y` (N).
    ///
    /// # Errors
    /// [`Error::Data`] when `x` does not hold N rows of p values or p is 0.
    pub fn new(x: Vec<f64>, y: Vec<f64>, p: usize) -> Result<Self> {
        if p == 0 || x.len() != y.len() * p {
            return Err(Error::Data(format!(
                "a design matrix of {} values is not {} rows of {p}",
                x.len(),
                y.len()
            )));
        }
        Ok(GaussianRows { x, y, p })
    }

    /// N, the number of rows.
    pub fn len(&self) -> usize {
        self.y.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.y.is_empty()
    }

    /// p, the coefficients per row.
    pub fn width(&self) -> usize {
        self.p
    }

    /// `scale` × Σ_{n ∈ rows} (−½ r_n²/σ² − u), r_n = y_n − x_n·β, σ = exp(u) (Stan's
    /// `y ~ normal(X * beta, sigma)` without its constant); adds `scale` × the gradient in β
    /// (length p) into `g_beta` and in u into `g_u`.
    pub fn log_likelihood(
        &self,
        beta: &[f64],
        u: f64,
        rows: &[usize],
        scale: f64,
        g_beta: &mut [f64],
        g_u: &mut f64,
    ) -> f64 {
        let inv_var = (-2.0 * u).exp();
        let (mut ll, mut du) = (0.0, 0.0);
        for &n in rows {
            let xn = &self.x[n * self.p..(n + 1) * self.p];
            let r = self.y[n] - xn.iter().zip(beta).map(|(a, b)| a * b).sum::<f64>();
            let r2 = r * r * inv_var;
            ll += -0.5 * r2 - u;
            du += r2 - 1.0;
            let w = scale * r * inv_var;
            g_beta.iter_mut().zip(xn).for_each(|(g, a)| *g += w * a);
        }
        *g_u += scale * du;
        scale * ll
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priors_match_finite_differences() {
        let h = 1e-6;
        for &u in &[-2.0, 0.3, 1.7] {
            for jac in [false, true] {
                for f in [half_cauchy, half_normal] {
                    let mut g = 0.0;
                    f(u, 2.5, jac, &mut g);
                    let mut s = 0.0;
                    let fd = (f(u + h, 2.5, jac, &mut s) - f(u - h, 2.5, jac, &mut s)) / (2.0 * h);
                    // Central differences of a smooth function: error O(h²) ≈ 1e-12 plus
                    // rounding ≈ 1e-10.
                    assert!((fd - g).abs() < 1e-7, "u {u} jacobian {jac}: {fd} vs {g}");
                }
            }
        }
    }
}
