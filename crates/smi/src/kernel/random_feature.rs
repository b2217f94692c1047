//! The random-feature kernel k(x, y) = Σ_l Σ_c φ_l(x)_c φ_l(y)_c with fixed seeded features
//! (docs/algorithms.md §3).

use std::f64::consts::TAU;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use rayon::prelude::*;

use super::bandwidth::{median_bandwidth, BandwidthFactor};
use super::{check_particles, Gram, Kernel, Weights};
use crate::error::{Error, Result};
use crate::linalg::{gemm, Op};
use crate::matrix::Matrix;
use crate::model::Layout;

/// Random Fourier feature kernel (NumPyro's `RandomFeatureKernel`), norm mode only.
///
/// With features W ~ N(0, 1) (m×d, row w_l) and b ~ U[0, 2π) (m×d, row b_l), and the median
/// bandwidth h of the particles:
/// - φ_l(z) = √2·cos((zᵀw_l + b_l)/h), a d-vector (b_l is a vector);
/// - k(x, y) = Σ_{l=1..m} Σ_c φ_l(x)_c φ_l(y)_c (a sum, not a mean);
/// - ∇_x k(x, y) = −(2/h) Σ_l w_l Σ_c sin(a_lc(x))·cos(a_lc(y)), a_lc(z) = (zᵀw_l + b_lc)/h.
///
/// The features are drawn from a `ChaCha8Rng` seeded with `seed` on every call, so they are the
/// same at every step for a given particle shape m×d (they are never redrawn).
///
/// Defaults: seed 0, f(m) = 1/ln m, bandwidth on all particles.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct RandomFeatureKernel {
    /// Seed of the features W and b (and of the bandwidth subset). Default 0.
    pub seed: u64,
    /// f(m) in h = median² · f(m) + eps. Default 1/ln m.
    pub bandwidth_factor: BandwidthFactor,
    /// Compute the bandwidth on this many particles, chosen once from the seed (NumPyro's
    /// `bandwidth_subset`); `None` (default) or a count ≥ m uses all particles.
    pub bandwidth_subset: Option<usize>,
}

impl RandomFeatureKernel {
    /// Checks the options.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] for an invalid bandwidth factor or a bandwidth subset of 0.
    pub fn validate(&self) -> Result<()> {
        self.bandwidth_factor.validate()?;
        if self.bandwidth_subset == Some(0) {
            return Err(Error::invalid(
                "bandwidth_subset",
                "must hold at least one particle",
            ));
        }
        Ok(())
    }

    /// The features (W, b) for m particles of dimension d: both m×d, W ~ N(0, 1),
    /// b ~ U[0, 2π), drawn from `ChaCha8Rng::seed_from_u64(seed)` (W first, row-major).
    pub fn features(&self, m: usize, d: usize) -> (Matrix, Matrix) {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let w = Matrix::from_fn(m, d, |_, _| StandardNormal.sample(&mut rng));
        let b = Matrix::from_fn(m, d, |_, _| rng.random::<f64>() * TAU);
        (w, b)
    }

    /// The bandwidth h used on these particles (m×d): the median bandwidth, on the seeded
    /// subset when `bandwidth_subset` is set.
    ///
    /// # Errors
    /// [`Error::Shape`] when m = 0; [`Error::InvalidSettings`] for invalid options.
    pub fn bandwidth(&self, particles: &Matrix) -> Result<f64> {
        self.validate()?;
        let m = particles.rows();
        match self.bandwidth_subset {
            Some(n) if n < m => {
                let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
                rng.set_stream(1);
                let mut idx = rand::seq::index::sample(&mut rng, m, n).into_vec();
                idx.sort_unstable();
                let sub = Matrix::from_fn(n, particles.cols(), |r, c| particles.get(idx[r], c));
                median_bandwidth(&sub, self.bandwidth_factor)
            }
            _ => median_bandwidth(particles, self.bandwidth_factor),
        }
    }
}

impl Kernel for RandomFeatureKernel {
    fn name(&self) -> &'static str {
        "random_feature"
    }

    /// # Errors
    /// [`Error::Shape`] when m = 0, p = 0 or `layout.dim() != p`; [`Error::NonFinite`] for
    /// non-finite particles; [`Error::InvalidSettings`] for invalid options.
    fn compute(&self, particles: &Matrix, layout: &Layout) -> Result<Gram> {
        self.validate()?;
        let (m, d) = check_particles(self.name(), particles, layout)?;
        let h = self.bandwidth(particles)?;
        let (w, b) = self.features(m, d);
        // z[i, l] = x_iᵀ w_l
        let mut z = Matrix::zeros(m, m);
        gemm(
            z.as_mut_slice(),
            particles.as_slice(),
            Op::N,
            w.as_slice(),
            Op::T,
            m,
            d,
            m,
            1.0,
            false,
        );
        // Per feature l: C_l[i, c] = cos(a_lc(x_i)), s_l = Σ_i sin(a_l(x_i)).
        // k += 2 C_l C_lᵀ; coef[t, l] = Σ_c s_l[c] C_l[t, c].
        let (k, coef) = (0..m)
            .into_par_iter()
            .map(|l| {
                let bl = b.row(l);
                let mut cos = vec![0.0; m * d];
                let mut sin_sum = vec![0.0; d];
                for i in 0..m {
                    let zil = z.get(i, l);
                    for (c, (cv, s)) in cos[i * d..(i + 1) * d]
                        .iter_mut()
                        .zip(sin_sum.iter_mut())
                        .enumerate()
                    {
                        let (sn, cs) = ((zil + bl[c]) / h).sin_cos();
                        *cv = cs;
                        *s += sn;
                    }
                }
                let mut kl = vec![0.0; m * m];
                gemm(&mut kl, &cos, Op::N, &cos, Op::T, m, d, m, 2.0, false);
                let mut col = vec![0.0; m];
                gemm(&mut col, &cos, Op::N, &sin_sum, Op::N, m, d, 1, 1.0, false);
                let mut coef = vec![0.0; m * m];
                for (t, v) in col.into_iter().enumerate() {
                    coef[t * m + l] = v;
                }
                (kl, coef)
            })
            .reduce(
                || (vec![0.0; m * m], vec![0.0; m * m]),
                |(mut ka, mut ca), (kb, cb)| {
                    ka.iter_mut().zip(kb).for_each(|(a, b)| *a += b);
                    ca.iter_mut().zip(cb).for_each(|(a, b)| *a += b);
                    (ka, ca)
                },
            );
        // R_t = −(2/h) Σ_l coef[t, l] w_l
        let mut repulsion = Matrix::zeros(m, d);
        gemm(
            repulsion.as_mut_slice(),
            &coef,
            Op::N,
            w.as_slice(),
            Op::N,
            m,
            m,
            d,
            -2.0 / h,
            false,
        );
        Ok(Gram {
            weights: Weights::Scalar(Matrix::from_vec(m, m, k)?),
            repulsion,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::testutil::{check_kernel, diag_scalar, pseudo, x4};
    use std::f64::consts::SQRT_2;

    fn pointwise(x: &[f64], y: &[f64], w: &Matrix, b: &Matrix, h: f64) -> f64 {
        let mut k = 0.0;
        for l in 0..w.rows() {
            let zx: f64 = x.iter().zip(w.row(l)).map(|(a, c)| a * c).sum();
            let zy: f64 = y.iter().zip(w.row(l)).map(|(a, c)| a * c).sum();
            for bc in b.row(l) {
                k += SQRT_2 * ((zx + bc) / h).cos() * SQRT_2 * ((zy + bc) / h).cos();
            }
        }
        k
    }

    #[test]
    fn attraction_and_repulsion_match_naive_and_finite_differences() {
        for (x, subset) in [
            (x4(), None),
            (pseudo(5, 3, 4, 1.0), None),
            (pseudo(6, 2, 5, 1.0), Some(4)),
        ] {
            let p = x.cols();
            let kernel = RandomFeatureKernel {
                seed: 11,
                bandwidth_subset: subset,
                ..Default::default()
            };
            let h = kernel.bandwidth(&x).unwrap();
            let (w, b) = kernel.features(x.rows(), p);
            check_kernel(
                &kernel,
                &x,
                &Layout::flat(p),
                &|a, c| diag_scalar(pointwise(a, c, &w, &b, h), p),
                1e-6,
            );
        }
    }

    #[test]
    fn features_are_fixed_by_the_seed_and_subset_changes_bandwidth() {
        let k = RandomFeatureKernel::default();
        assert_eq!(k.features(4, 2), k.features(4, 2));
        let other = RandomFeatureKernel {
            seed: 1,
            ..Default::default()
        };
        assert_ne!(k.features(4, 2), other.features(4, 2));
        let x = x4();
        let g1 = k.compute(&x, &Layout::flat(2)).unwrap();
        let g2 = k.compute(&x, &Layout::flat(2)).unwrap();
        assert_eq!(g1, g2);
        let (w, b) = k.features(4, 2);
        for (lo, hi) in [(w.as_slice(), 10.0), (b.as_slice(), TAU)] {
            assert!(lo.iter().all(|v| v.abs() < hi && v.is_finite()));
        }
        assert!(b.as_slice().iter().all(|v| *v >= 0.0));
        let all = k.bandwidth(&x).unwrap();
        let sub = RandomFeatureKernel {
            bandwidth_subset: Some(2),
            ..Default::default()
        };
        assert!(sub.bandwidth(&x).unwrap() != all);
        let big = RandomFeatureKernel {
            bandwidth_subset: Some(10),
            ..Default::default()
        };
        assert_eq!(big.bandwidth(&x).unwrap(), all);
    }

    #[test]
    fn errors() {
        let k = RandomFeatureKernel::default();
        assert!(k.compute(&Matrix::zeros(0, 2), &Layout::flat(2)).is_err());
        assert!(k.compute(&x4(), &Layout::flat(3)).is_err());
        let bad = RandomFeatureKernel {
            bandwidth_subset: Some(0),
            ..Default::default()
        };
        assert!(matches!(
            bad.compute(&x4(), &Layout::flat(2)),
            Err(Error::InvalidSettings { .. })
        ));
    }
}
