//! Whitening by the Laplace start (docs/algorithms.md §2.5): the engine runs on x with
//! θ = c + A x, where c and A are the mean and a square root of the covariance of the started
//! mixture, so the optimizer's steps (Adam's are about its learning rate in every coordinate,
//! whatever the coordinate's scale) are measured in posterior standard deviations.
//!
//! A is lower triangular for the full-rank guide (the Cholesky factor of the mixture's
//! covariance) and diagonal for the others (the mixture's sds), so a guide on x maps to a guide
//! of the same family on θ exactly: loc_θ = c + A loc_x and L_θ = A L_x (a lower-triangular
//! product), or σ_θ = a ⊙ σ_x with the low-rank factor unchanged.

use crate::error::Result;
use crate::guide::fullrank;
use crate::matrix::Matrix;
use crate::model::{inv_softplus, softplus, Batch, Layout, LogDensity};
use crate::GuideSettings;

/// θ = shift + factor · x, with `factor` lower triangular (d×d) and a positive diagonal.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Affine {
    shift: Vec<f64>,
    factor: Matrix,
    inverse: Matrix,
    log_det: f64,
}

impl Affine {
    /// The map of the mixture of `guide`s that `particles` (m×p) parameterise over dimension
    /// `d`: shift its mean, factor a square root of its covariance (module docs). `None` for
    /// point masses, low-rank guides whose factor is not the identity's, a covariance that is
    /// not positive definite, or any non-finite value: the engine then runs on θ.
    pub(crate) fn of_mixture(guide: &GuideSettings, particles: &Matrix, d: usize) -> Option<Self> {
        let m = particles.rows();
        if m == 0 || d == 0 || matches!(guide, GuideSettings::Delta) {
            return None;
        }
        let mut mean = vec![0.0; d];
        for i in 0..m {
            mean.iter_mut()
                .zip(&particles.row(i)[..d])
                .for_each(|(a, v)| *a += v / m as f64);
        }
        // E[Σ_i + (loc_i − mean)(loc_i − mean)ᵀ], the mixture's covariance.
        let full = matches!(guide, GuideSettings::FullRank { .. });
        let mut cov = Matrix::zeros(d, d);
        for i in 0..m {
            let psi = particles.row(i);
            let l = lower_factor(guide, psi, d);
            for r in 0..d {
                let cols = if full { 0..=r } else { r..=r };
                for c in cols {
                    let within: f64 = (0..=c.min(r)).map(|k| l.get(r, k) * l.get(c, k)).sum();
                    let between = (psi[r] - mean[r]) * (psi[c] - mean[c]);
                    cov.set(r, c, cov.get(r, c) + (within + between) / m as f64);
                }
            }
        }
        if let GuideSettings::LowRank { rank, .. } = guide {
            // σ_c² (1 + Σ_k V_ck²) on the diagonal.
            for i in 0..m {
                let psi = particles.row(i);
                for c in 0..d {
                    let s = softplus(psi[d + c]);
                    let v: f64 = psi[2 * d + c * rank..2 * d + (c + 1) * rank]
                        .iter()
                        .map(|w| w * w)
                        .sum();
                    cov.set(c, c, cov.get(c, c) + s * s * v / m as f64);
                }
            }
        }
        let factor = if full {
            for r in 0..d {
                for c in 0..r {
                    cov.set(c, r, cov.get(r, c));
                }
            }
            cholesky(&cov)?
        } else {
            let mut a = Matrix::zeros(d, d);
            for c in 0..d {
                let v = cov.get(c, c);
                if !(v > 0.0 && v.is_finite()) {
                    return None;
                }
                a.set(c, c, v.sqrt());
            }
            a
        };
        let inverse = lower_inverse(&factor);
        let log_det = (0..d).map(|c| factor.get(c, c).ln()).sum::<f64>();
        let finite = |x: &Matrix| x.as_slice().iter().all(|v| v.is_finite());
        (finite(&factor)
            && finite(&inverse)
            && log_det.is_finite()
            && mean.iter().all(|v| v.is_finite()))
        .then_some(Affine {
            shift: mean,
            factor,
            inverse,
            log_det,
        })
    }

    /// Particles on θ → on x (m×p each).
    pub(crate) fn whiten(&self, guide: &GuideSettings, particles: &Matrix) -> Matrix {
        let offset = mat_vec(&self.inverse, &self.shift);
        let offset: Vec<f64> = offset.iter().map(|v| -v).collect();
        map_particles(guide, particles, &self.inverse, &offset)
    }

    /// Particles on x → on θ.
    pub(crate) fn unwhiten(&self, guide: &GuideSettings, particles: &Matrix) -> Matrix {
        map_particles(guide, particles, &self.factor, &self.shift)
    }
}

/// The lower factor L of one particle's covariance (d×d): L = S U for the full-rank guide,
/// diag σ for the others (the low-rank factor's part is not in it).
fn lower_factor(guide: &GuideSettings, psi: &[f64], d: usize) -> Matrix {
    let mut l = Matrix::zeros(d, d);
    for c in 0..d {
        let s = softplus(psi[d + c]);
        l.set(c, c, s);
        if let GuideSettings::FullRank { .. } = guide {
            for j in 0..c {
                l.set(c, j, s * psi[2 * d + fullrank::tri(c) + j]);
            }
        }
    }
    l
}

/// loc' = offset + B loc and L' = B L for each particle (B lower triangular; only its
/// diagonal for guides other than full rank).
fn map_particles(guide: &GuideSettings, particles: &Matrix, b: &Matrix, offset: &[f64]) -> Matrix {
    let d = offset.len();
    let mut out = particles.clone();
    for i in 0..particles.rows() {
        let psi = particles.row(i);
        let loc = mat_vec(b, &psi[..d]);
        let row = out.row_mut(i);
        for c in 0..d {
            row[c] = offset[c] + loc[c];
        }
        match guide {
            GuideSettings::FullRank { .. } => {
                let l = lower_factor(guide, psi, d);
                for r in 0..d {
                    let mut diag = 0.0;
                    let mut entries = vec![0.0; r];
                    for (c, e) in entries.iter_mut().enumerate() {
                        *e = (c..=r).map(|k| b.get(r, k) * l.get(k, c)).sum();
                    }
                    diag += b.get(r, r) * l.get(r, r);
                    row[d + r] = inv_softplus(diag);
                    for (c, e) in entries.iter().enumerate() {
                        row[2 * d + fullrank::tri(r) + c] = e / diag;
                    }
                }
            }
            GuideSettings::Normal { .. } | GuideSettings::LowRank { .. } => {
                for c in 0..d {
                    row[d + c] = inv_softplus(b.get(c, c) * softplus(psi[d + c]));
                }
            }
            GuideSettings::Delta => {}
        }
    }
    out
}

fn mat_vec(a: &Matrix, x: &[f64]) -> Vec<f64> {
    (0..a.rows())
        .map(|r| (0..=r).map(|c| a.get(r, c) * x[c]).sum())
        .collect()
}

/// The lower Cholesky factor of a symmetric matrix, by faer; `None` unless positive definite.
fn cholesky(a: &Matrix) -> Option<Matrix> {
    let d = a.rows();
    let m = faer::Mat::<f64>::from_fn(d, d, |i, j| a.get(i, j));
    let l = m.llt(faer::Side::Lower).ok()?;
    let l = l.L();
    let mut out = Matrix::zeros(d, d);
    for i in 0..d {
        for j in 0..=i {
            out.set(i, j, l[(i, j)]);
        }
    }
    Some(out)
}

/// The inverse of a lower-triangular matrix with a nonzero diagonal (forward substitution).
fn lower_inverse(l: &Matrix) -> Matrix {
    let d = l.rows();
    let mut inv = Matrix::zeros(d, d);
    for c in 0..d {
        for r in c..d {
            let s: f64 = (c..r).map(|k| l.get(r, k) * inv.get(k, c)).sum();
            let rhs = if r == c { 1.0 } else { 0.0 };
            inv.set(r, c, (rhs - s) / l.get(r, r));
        }
    }
    inv
}

/// `model` seen on x: log p(c + A x) + log|A| and its gradient Aᵀ ∇log p, so ELBOs on x equal
/// those on θ.
pub(crate) struct Whitened<'a, M: ?Sized> {
    pub(crate) model: &'a M,
    pub(crate) map: &'a Affine,
}

impl<M: LogDensity + ?Sized> LogDensity for Whitened<'_, M> {
    fn dim(&self) -> usize {
        self.model.dim()
    }

    fn num_data(&self) -> usize {
        self.model.num_data()
    }

    fn log_density_and_grad(
        &self,
        x: &[f64],
        batch: &Batch,
        logp: &mut [f64],
        grad: &mut [f64],
    ) -> Result<()> {
        let d = self.dim();
        let a = &self.map.factor;
        let mut theta = vec![0.0; x.len()];
        for (t, xr) in theta.chunks_exact_mut(d).zip(x.chunks_exact(d)) {
            let ax = mat_vec(a, xr);
            t.iter_mut()
                .zip(ax.iter().zip(&self.map.shift))
                .for_each(|(t, (v, s))| *t = s + v);
        }
        let mut g_theta = vec![0.0; grad.len()];
        self.model
            .log_density_and_grad(&theta, batch, logp, &mut g_theta)?;
        logp.iter_mut().for_each(|v| *v += self.map.log_det);
        // ∇_x = Aᵀ ∇_θ, A lower triangular: (Aᵀg)_c = Σ_{r ≥ c} A_rc g_r.
        for (gx, gt) in grad.chunks_exact_mut(d).zip(g_theta.chunks_exact(d)) {
            for (c, out) in gx.iter_mut().enumerate() {
                *out = (c..d).map(|r| a.get(r, c) * gt[r]).sum();
            }
        }
        Ok(())
    }

    fn one_call_per_step(&self) -> bool {
        self.model.one_call_per_step()
    }

    fn layout(&self) -> Layout {
        Layout::flat(self.dim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::check_gradient;

    fn particles(guide: &GuideSettings, d: usize, seed: u64) -> Matrix {
        use rand::SeedableRng;
        use rand_distr::Distribution;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let p = guide.param_dim(d);
        let mut x = Matrix::zeros(3, p);
        for v in x.as_mut_slice() {
            let e: f64 = rand_distr::StandardNormal.sample(&mut rng);
            *v = e;
        }
        x
    }

    #[test]
    fn whitening_maps_particles_there_and_back() {
        for guide in [
            GuideSettings::normal(),
            GuideSettings::low_rank(2),
            GuideSettings::full_rank(),
        ] {
            let d = 4;
            let psi = particles(&guide, d, 1);
            let map = Affine::of_mixture(&guide, &psi, d).unwrap();
            let back = map.unwhiten(&guide, &map.whiten(&guide, &psi));
            for (a, b) in psi.as_slice().iter().zip(back.as_slice()) {
                assert!(
                    (a - b).abs() < 1e-9 * a.abs().max(1.0),
                    "{guide:?}: {a} vs {b}"
                );
            }
            // On x the mixture has mean 0 and covariance I (diagonal 1 where A is diagonal).
            let white = map.whiten(&guide, &psi);
            let again = Affine::of_mixture(&guide, &white, d).unwrap();
            for c in 0..d {
                assert!(
                    again.shift[c].abs() < 1e-9,
                    "{guide:?}: mean {}",
                    again.shift[c]
                );
                assert!((again.factor.get(c, c) - 1.0).abs() < 1e-9, "{guide:?}");
            }
        }
    }

    #[test]
    fn the_whitened_model_has_the_pulled_back_gradient() {
        let target =
            crate::testing::DiagNormal::new(vec![1.0, -2.0, 3.0], vec![0.5, 2.0, 10.0]).unwrap();
        let guide = GuideSettings::full_rank();
        let psi = particles(&guide, 3, 2);
        let map = Affine::of_mixture(&guide, &psi, 3).unwrap();
        let white = Whitened {
            model: &target,
            map: &map,
        };
        let err = check_gradient(&white, &[0.3, -0.7, 1.1], &Batch::full(), 1e-5).unwrap();
        assert!(err < 1e-5, "{err}");
    }
}
