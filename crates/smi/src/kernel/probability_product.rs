//! The probability-product kernel between the Normal components of two particles (docs/algorithms.md §3).

use rayon::prelude::*;

use super::{check_particles, Gram, Kernel, Weights};
use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::model::Layout;
use crate::model::{sigmoid, softplus};

/// Probability-product kernel for Normal-guide particles (NumPyro's experimental
/// `ProbabilityProductKernel`), norm mode only, unnormalised.
///
/// A particle is ψ = [loc | ρ]: the locs μ are the layout blocks whose names end in `".loc"`,
/// the scales are σ = softplus(ρ) from the matching `"<name>.scale"` blocks. With
/// Q_x = Σ(μ_x/σ_x)², Q_y likewise and C = Σ (μ_x/σ_x² + μ_y/σ_y²)² / (1/σ_x² + 1/σ_y²),
///
/// k(x, y) = exp(−(s/2)(Q_x + Q_y − C)) = exp(−(s/2) Σ_c (μ_xc − μ_yc)²/(σ_xc² + σ_yc²)).
///
/// Gradient (closed form), with E = Σ_c (μ_xc − μ_yc)²/(σ_xc² + σ_yc²):
/// ∂k/∂μ_xc = −s·k·(μ_xc − μ_yc)/(σ_xc² + σ_yc²) and
/// ∂k/∂ρ_xc = s·k·(μ_xc − μ_yc)²·σ_xc·sigmoid(ρ_xc)/(σ_xc² + σ_yc²)²; zero on other columns.
///
/// Default s = 1.0.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbabilityProductKernel {
    /// s > 0. Default 1.0.
    pub scale: f64,
}

impl Default for ProbabilityProductKernel {
    fn default() -> Self {
        ProbabilityProductKernel { scale: 1.0 }
    }
}

impl ProbabilityProductKernel {
    /// Checks the options.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] (`scale`) when s is not finite and > 0.
    pub fn validate(&self) -> Result<()> {
        if !(self.scale.is_finite() && self.scale > 0.0) {
            return Err(Error::invalid(
                "scale",
                format!("must be finite and > 0, got {}", self.scale),
            ));
        }
        Ok(())
    }

    /// The (loc column, ρ column) pairs of a Normal-guide layout, in loc-block order.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] (`kernel`) when the layout has no `".loc"` block, a loc block
    /// has no `".scale"` partner, or the two differ in length.
    pub fn loc_scale_columns(layout: &Layout) -> Result<Vec<(usize, usize)>> {
        let mut cols = Vec::new();
        let mut found = false;
        for block in layout.blocks() {
            let Some(stem) = block.name.strip_suffix(".loc") else {
                continue;
            };
            found = true;
            let scale = layout.get(&format!("{stem}.scale")).ok_or_else(|| {
                Error::invalid(
                    "kernel",
                    format!(
                        "probability-product kernel: block `{}` has no `{stem}.scale` partner",
                        block.name
                    ),
                )
            })?;
            if scale.len() != block.len() {
                return Err(Error::invalid(
                    "kernel",
                    format!(
                        "probability-product kernel: `{}` has {} values but `{}` has {}",
                        block.name,
                        block.len(),
                        scale.name,
                        scale.len()
                    ),
                ));
            }
            cols.extend(block.range().zip(scale.range()));
        }
        if !found {
            return Err(Error::invalid(
                "kernel",
                "the probability-product kernel needs Normal-guide particles (layout blocks \
                 `<name>.loc` and `<name>.scale`)",
            ));
        }
        Ok(cols)
    }
}

impl Kernel for ProbabilityProductKernel {
    fn name(&self) -> &'static str {
        "probability_product"
    }

    /// # Errors
    /// [`Error::Shape`] when m = 0, p = 0 or `layout.dim() != p`; [`Error::NonFinite`] for
    /// non-finite particles; [`Error::InvalidSettings`] for an invalid scale or a layout
    /// without `.loc`/`.scale` blocks (e.g. a point-mass guide).
    fn compute(&self, particles: &Matrix, layout: &Layout) -> Result<Gram> {
        self.validate()?;
        let (m, p) = check_particles(self.name(), particles, layout)?;
        let cols = Self::loc_scale_columns(layout)?;
        let q = cols.len();
        let s = self.scale;
        // Per particle: μ, σ², d(σ²)/dρ = 2σ·sigmoid(ρ).
        let mut mu = vec![0.0; m * q];
        let mut var = vec![0.0; m * q];
        let mut dvar = vec![0.0; m * q];
        for i in 0..m {
            let row = particles.row(i);
            for (c, &(lc, rc)) in cols.iter().enumerate() {
                let sigma = softplus(row[rc]);
                mu[i * q + c] = row[lc];
                var[i * q + c] = sigma * sigma;
                dvar[i * q + c] = 2.0 * sigma * sigmoid(row[rc]);
            }
        }
        // Target ℓ: column ℓ of K and row ℓ of the repulsion.
        let per_target: Vec<(Vec<f64>, Vec<f64>)> = (0..m)
            .into_par_iter()
            .map(|l| {
                let (mu_l, var_l) = (&mu[l * q..(l + 1) * q], &var[l * q..(l + 1) * q]);
                let mut kcol = vec![0.0; m];
                let mut rep = vec![0.0; p];
                for (i, kil) in kcol.iter_mut().enumerate() {
                    let (mu_i, var_i) = (&mu[i * q..(i + 1) * q], &var[i * q..(i + 1) * q]);
                    let e: f64 = (0..q)
                        .map(|c| (mu_i[c] - mu_l[c]).powi(2) / (var_i[c] + var_l[c]))
                        .sum();
                    let k = (-0.5 * s * e).exp();
                    *kil = k;
                    if i == l || k == 0.0 {
                        continue;
                    }
                    let dvar_i = &dvar[i * q..(i + 1) * q];
                    for (c, &(lc, rc)) in cols.iter().enumerate() {
                        let diff = mu_i[c] - mu_l[c];
                        let tot = var_i[c] + var_l[c];
                        rep[lc] -= s * k * diff / tot;
                        rep[rc] += 0.5 * s * k * diff * diff * dvar_i[c] / (tot * tot);
                    }
                }
                (kcol, rep)
            })
            .collect();
        let mut k = Matrix::zeros(m, m);
        let mut repulsion = Matrix::zeros(m, p);
        for (l, (kcol, rep)) in per_target.into_iter().enumerate() {
            for (i, v) in kcol.into_iter().enumerate() {
                k.set(i, l, v);
            }
            repulsion.row_mut(l).copy_from_slice(&rep);
        }
        Ok(Gram {
            weights: Weights::Scalar(k),
            repulsion,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::testutil::{check_kernel, diag_scalar, pseudo};

    fn normal_layout(d: &[(&str, usize)]) -> Layout {
        let mut model = Layout::default();
        for (n, len) in d {
            model.push(*n, vec![*len]);
        }
        let dim = model.dim();
        model
            .suffixed(".loc", 0)
            .concat(&model.suffixed(".scale", dim))
    }

    /// The spec's formula with Q_x, Q_y and C, written directly.
    fn pointwise(x: &[f64], y: &[f64], cols: &[(usize, usize)], s: f64) -> f64 {
        let (mut qx, mut qy, mut cc) = (0.0, 0.0, 0.0);
        for &(lc, rc) in cols {
            let (mx, my) = (x[lc], y[lc]);
            let (sx, sy) = (softplus(x[rc]), softplus(y[rc]));
            let (vx, vy) = (sx * sx, sy * sy);
            qx += (mx / sx).powi(2);
            qy += (my / sy).powi(2);
            cc += (mx / vx + my / vy).powi(2) / (1.0 / vx + 1.0 / vy);
        }
        (-0.5 * s * (qx + qy - cc)).exp()
    }

    #[test]
    fn spec_test_vector() {
        let layout = normal_layout(&[("z", 1)]);
        let x = Matrix::from_rows(&[vec![1.0, 2.0], vec![10.0, 5.0]]).unwrap();
        let g = ProbabilityProductKernel::default()
            .compute(&x, &layout)
            .unwrap();
        assert!((g.weights.scalar(0, 1).unwrap() - 0.2544481).abs() < 1e-7);
        assert!((g.weights.scalar(1, 0).unwrap() - 0.2544481).abs() < 1e-7);
        assert!((g.weights.scalar(0, 0).unwrap() - 1.0).abs() < 1e-15);
    }

    #[test]
    fn attraction_and_repulsion_match_naive_and_finite_differences() {
        let layout = normal_layout(&[("w", 2), ("b", 1)]);
        let cols = ProbabilityProductKernel::loc_scale_columns(&layout).unwrap();
        assert_eq!(cols, vec![(0, 3), (1, 4), (2, 5)]);
        let x = pseudo(5, 6, 31, 1.5);
        for s in [1.0, 0.4] {
            let k = ProbabilityProductKernel { scale: s };
            check_kernel(
                &k,
                &x,
                &layout,
                &|a, b| diag_scalar(pointwise(a, b, &cols, s), 6),
                1e-6,
            );
        }
    }

    #[test]
    fn errors() {
        let k = ProbabilityProductKernel::default();
        let x = pseudo(3, 2, 1, 1.0);
        assert!(matches!(
            k.compute(&x, &Layout::flat(2)),
            Err(Error::InvalidSettings { .. })
        ));
        let mut missing = Layout::default();
        missing.push("z.loc", vec![1]);
        missing.push("z.other", vec![1]);
        assert!(k.compute(&x, &missing).is_err());
        let mut uneven = Layout::default();
        uneven.push("z.loc", vec![1]);
        uneven.push("z.scale", vec![2]);
        assert!(k.compute(&pseudo(3, 3, 1, 1.0), &uneven).is_err());
        let layout = normal_layout(&[("z", 1)]);
        assert!(k.compute(&Matrix::zeros(0, 2), &layout).is_err());
        assert!(ProbabilityProductKernel { scale: -1.0 }
            .compute(&x, &layout)
            .is_err());
    }
}
