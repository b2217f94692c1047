//! Neal's funnel, a small hierarchical target: v ~ N(0, 3²) and x_i | v ~ N(0, e^v) for
//! i = 1..d−1 (θ = [v, x_1, …, x_{d−1}]). The scale of the x_i depends on v, the shape that makes
//! hierarchical posteriors hard; its marginal of v is N(0, 3²) exactly.

use rand::RngCore;
use rand_distr::{Distribution, StandardNormal};

use crate::error::{Error, Result};
use crate::model::PerDraw;

const LN_2PI: f64 = 1.837_877_066_409_345_5;
/// The prior scale of v.
const V_SCALE: f64 = 3.0;

/// Neal's funnel of dimension d ≥ 2 (see the module docs). No data.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Funnel {
    dim: usize,
}

impl Funnel {
    /// The funnel of dimension `dim` (v and `dim − 1` x's).
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] for `dim < 2`.
    pub fn new(dim: usize) -> Result<Self> {
        if dim < 2 {
            return Err(Error::invalid(
                "dim",
                "the funnel needs v and at least one x",
            ));
        }
        Ok(Funnel { dim })
    }
}

impl PerDraw for Funnel {
    fn dim(&self) -> usize {
        self.dim
    }

    fn log_prior(&self, t: &[f64], _jacobian: bool, g: &mut [f64]) -> Result<f64> {
        let v = t[0];
        let mut lp = -0.5 * (v / V_SCALE).powi(2) - V_SCALE.ln() - 0.5 * LN_2PI;
        g[0] += -v / (V_SCALE * V_SCALE);
        // log N(x; 0, e^v) = −x² e^{−v}/2 − v/2 − ln √(2π).
        let inv_var = (-v).exp();
        let (g_v, g_x) = g.split_at_mut(1);
        for (x, gx) in t[1..].iter().zip(g_x) {
            lp += -0.5 * x * x * inv_var - 0.5 * v - 0.5 * LN_2PI;
            *gx += -x * inv_var;
            g_v[0] += 0.5 * x * x * inv_var - 0.5;
        }
        Ok(lp)
    }

    fn sample_prior(&self, rng: &mut dyn RngCore, out: &mut [f64]) -> Result<()> {
        let z: f64 = StandardNormal.sample(rng);
        out[0] = V_SCALE * z;
        let sd = (0.5 * out[0]).exp();
        for o in &mut out[1..] {
            let z: f64 = StandardNormal.sample(rng);
            *o = sd * z;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Batch, LogDensity};

    #[test]
    fn gradient_matches_finite_differences() {
        let f = Funnel::new(4).unwrap();
        let t = [0.7, -1.2, 0.4, 2.0];
        let (mut lp, mut g) = ([0.0], [0.0; 4]);
        f.log_density_and_grad(&t, &Batch::full(), &mut lp, &mut g)
            .unwrap();
        for c in 0..4 {
            let h = 1e-6;
            let (mut up, mut dn) = (t, t);
            up[c] += h;
            dn[c] -= h;
            let (mut lu, mut ld, mut s) = ([0.0], [0.0], [0.0; 4]);
            f.log_density_and_grad(&up, &Batch::full(), &mut lu, &mut s)
                .unwrap();
            f.log_density_and_grad(&dn, &Batch::full(), &mut ld, &mut s)
                .unwrap();
            let fd = (lu[0] - ld[0]) / (2.0 * h);
            assert!((fd - g[c]).abs() < 1e-6, "coordinate {c}: {fd} vs {}", g[c]);
        }
        assert!(Funnel::new(1).is_err());
    }
}
