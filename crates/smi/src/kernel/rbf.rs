//! The RBF kernel k(x, y) = exp(−‖x − y‖²/h) with the median bandwidth (docs/algorithms.md §3).

use rayon::prelude::*;

use super::bandwidth::{bandwidth_from_squared_distances, squared_distances, BandwidthFactor};
use super::{check_particles, radial_repulsion, Gram, Kernel, Mode, Weights};
use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::model::Layout;

/// Radial basis function kernel (NumPyro's `RBFKernel`).
///
/// - norm (and matrix `norm_diag`, K = k·I): k(x, y) = exp(−‖x − y‖²/h);
///   ∇_x k = −(2/h)(x − y)·k.
/// - vector (and matrix `vector_diag`, K = diag(k)): k_c(x, y) = exp(−(x_c − y_c)²/h) with the
///   same scalar h; ∂k_c/∂x_c = −(2/h)(x_c − y_c)·k_c.
///
/// h = median(D)² · f(m) + eps is the median bandwidth of the current particles
/// ([`super::median_bandwidth`]), a constant for differentiation. Norm mode needs O(m²)
/// memory beyond X; vector mode stores m×m×p weights.
///
/// Defaults: norm mode, f(m) = 1/ln m.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct RbfKernel {
    /// Norm, vector, or matrix (`norm_diag` ≡ norm weights as k·I, `vector_diag` ≡ vector
    /// weights as diag). Default norm.
    pub mode: Mode,
    /// f(m) in h = median² · f(m) + eps. Default 1/ln m.
    pub bandwidth_factor: BandwidthFactor,
}

impl RbfKernel {
    /// Checks the options.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] for an invalid bandwidth factor.
    pub fn validate(&self) -> Result<()> {
        self.bandwidth_factor.validate()
    }

    /// The kernel on particles X (m×p) with a given bandwidth h instead of the median one.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] when h is not finite and > 0; [`Error::Shape`] when m = 0 or
    /// p = 0; [`Error::NonFinite`] for non-finite particles.
    pub fn compute_with_bandwidth(&self, particles: &Matrix, h: f64) -> Result<Gram> {
        check_particles("rbf", particles, &Layout::flat(particles.cols()))?;
        if !(h.is_finite() && h > 0.0) {
            return Err(Error::invalid(
                "bandwidth",
                format!("must be finite and > 0, got {h}"),
            ));
        }
        Ok(self.gram(particles, None, h))
    }

    fn gram(&self, x: &Matrix, sq: Option<Matrix>, h: f64) -> Gram {
        if self.mode.is_scalar() {
            let mut k = sq.unwrap_or_else(|| squared_distances(x));
            k.as_mut_slice()
                .iter_mut()
                .for_each(|v| *v = (-*v / h).exp());
            let mut w = k.clone();
            w.as_mut_slice().iter_mut().for_each(|v| *v *= -2.0 / h);
            let repulsion = radial_repulsion(&w, x);
            Gram {
                weights: Weights::Scalar(k),
                repulsion,
            }
        } else {
            vector_gram(x, |d| {
                let k = (-d * d / h).exp();
                (k, -2.0 / h * d * k)
            })
        }
    }
}

/// Vector-mode Gram of a separable kernel: `f(x_c − y_c)` returns (k_c, ∂k_c/∂x_c).
///
/// Weights are m×m×p; repulsion row ℓ is Σ_i ∂k_c(x_i, x_ℓ)/∂x_ic. Parallel over sources.
pub(crate) fn vector_gram(x: &Matrix, f: impl Fn(f64) -> (f64, f64) + Sync) -> Gram {
    let (m, p) = (x.rows(), x.cols());
    let mut k = vec![0.0; m * m * p];
    let mut grad = vec![0.0; m * m * p];
    k.par_chunks_mut(m * p)
        .zip(grad.par_chunks_mut(m * p))
        .enumerate()
        .for_each(|(i, (ki, gi))| {
            let xi = x.row(i);
            for l in 0..m {
                let xl = x.row(l);
                let (kil, gil) = (&mut ki[l * p..(l + 1) * p], &mut gi[l * p..(l + 1) * p]);
                for c in 0..p {
                    let (v, d) = f(xi[c] - xl[c]);
                    kil[c] = v;
                    gil[c] = d;
                }
            }
        });
    let mut repulsion = Matrix::zeros(m, p);
    repulsion
        .as_mut_slice()
        .par_chunks_mut(p)
        .enumerate()
        .for_each(|(l, rl)| {
            for i in 0..m {
                let gil = &grad[(i * m + l) * p..(i * m + l + 1) * p];
                for (r, v) in rl.iter_mut().zip(gil) {
                    *r += v;
                }
            }
        });
    Gram {
        weights: Weights::Vector { m, p, k },
        repulsion,
    }
}

impl Kernel for RbfKernel {
    fn name(&self) -> &'static str {
        "rbf"
    }

    /// Builds the kernel with the median bandwidth.
    ///
    /// # Errors
    /// [`Error::Shape`] when m = 0, p = 0 or `layout.dim() != p`; [`Error::NonFinite`] for
    /// non-finite particles; [`Error::InvalidSettings`] for an invalid bandwidth factor.
    fn compute(&self, particles: &Matrix, layout: &Layout) -> Result<Gram> {
        self.validate()?;
        check_particles(self.name(), particles, layout)?;
        let sq = squared_distances(particles);
        let h = bandwidth_from_squared_distances(&sq, self.bandwidth_factor);
        Ok(self.gram(particles, Some(sq), h))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::testutil::{check_kernel, diag_scalar, diag_vector, pseudo, x4};
    use crate::kernel::{median_bandwidth, MatrixMode};
    use proptest::prelude::*;

    fn k_norm(x: &[f64], y: &[f64], h: f64) -> f64 {
        (-x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum::<f64>() / h).exp()
    }

    fn k_vec(x: &[f64], y: &[f64], h: f64) -> Vec<f64> {
        x.iter()
            .zip(y)
            .map(|(a, b)| (-(a - b) * (a - b) / h).exp())
            .collect()
    }

    const ALL_MODES: [Mode; 4] = [
        Mode::Norm,
        Mode::Vector,
        Mode::Matrix(MatrixMode::NormDiag),
        Mode::Matrix(MatrixMode::VectorDiag),
    ];

    #[test]
    fn spec_test_vectors() {
        let x = x4();
        let g = RbfKernel::default().compute(&x, &Layout::flat(2)).unwrap();
        assert!((g.weights.scalar(0, 1).unwrap() - 0.00490776).abs() < 1e-8);
        let kernel = RbfKernel {
            mode: Mode::Vector,
            ..Default::default()
        };
        match kernel.compute(&x, &Layout::flat(2)).unwrap().weights {
            Weights::Vector { m, p, k } => {
                assert_eq!((m, p), (4, 2));
                let k01 = &k[p..2 * p];
                assert!((k01[0] - 0.00835209).abs() < 1e-8, "{k01:?}");
                assert!((k01[1] - 0.5876088).abs() < 1e-7, "{k01:?}");
            }
            w => panic!("{w:?}"),
        }
    }

    #[test]
    fn matrix_modes_equal_norm_and_vector() {
        let x = x4();
        let l = Layout::flat(2);
        for (a, b) in [
            (Mode::Norm, MatrixMode::NormDiag),
            (Mode::Vector, MatrixMode::VectorDiag),
        ] {
            let ga = RbfKernel {
                mode: a,
                ..Default::default()
            }
            .compute(&x, &l)
            .unwrap();
            let gb = RbfKernel {
                mode: Mode::Matrix(b),
                ..Default::default()
            }
            .compute(&x, &l)
            .unwrap();
            assert_eq!(ga, gb);
        }
    }

    #[test]
    fn attraction_and_repulsion_match_naive_and_finite_differences() {
        for (x, layout) in [
            (x4(), Layout::flat(2)),
            (pseudo(5, 3, 1, 1.5), Layout::flat(3)),
            (pseudo(1, 2, 2, 1.0), Layout::flat(2)),
        ] {
            let h = median_bandwidth(&x, BandwidthFactor::InverseLog).unwrap();
            let p = x.cols();
            for mode in ALL_MODES {
                let kernel = RbfKernel {
                    mode,
                    ..Default::default()
                };
                if mode.is_scalar() {
                    check_kernel(
                        &kernel,
                        &x,
                        &layout,
                        &|a, b| diag_scalar(k_norm(a, b, h), p),
                        1e-6,
                    );
                } else {
                    check_kernel(
                        &kernel,
                        &x,
                        &layout,
                        &|a, b| diag_vector(&k_vec(a, b, h)),
                        1e-6,
                    );
                }
            }
        }
    }

    #[test]
    fn fixed_bandwidth_and_errors() {
        let x = x4();
        let g = RbfKernel::default()
            .compute_with_bandwidth(&x, 3.0)
            .unwrap();
        let want = k_norm(x.row(0), x.row(2), 3.0);
        assert!((g.weights.scalar(0, 2).unwrap() - want).abs() < 1e-14);
        assert!(RbfKernel::default()
            .compute_with_bandwidth(&x, 0.0)
            .is_err());
        assert!(RbfKernel::default()
            .compute(&Matrix::zeros(0, 2), &Layout::flat(2))
            .is_err());
        assert!(RbfKernel::default()
            .compute(&Matrix::zeros(3, 0), &Layout::flat(0))
            .is_err());
        assert!(RbfKernel::default().compute(&x, &Layout::flat(5)).is_err());
        let bad = RbfKernel {
            bandwidth_factor: BandwidthFactor::Constant(0.0),
            ..Default::default()
        };
        assert!(matches!(
            bad.compute(&x, &Layout::flat(2)),
            Err(Error::InvalidSettings { .. })
        ));
    }

    #[test]
    fn large_p_norm_mode_matches_direct_formula() {
        let x = pseudo(6, 2000, 5, 0.05);
        let g = RbfKernel::default()
            .compute(&x, &Layout::flat(2000))
            .unwrap();
        let h = median_bandwidth(&x, BandwidthFactor::InverseLog).unwrap();
        for l in 0..6 {
            for c in (0..2000).step_by(97) {
                let want: f64 = (0..6)
                    .map(|i| -2.0 / h * (x.get(i, c) - x.get(l, c)) * k_norm(x.row(i), x.row(l), h))
                    .sum();
                assert!((g.repulsion.get(l, c) - want).abs() < 1e-10);
            }
        }
    }

    /// The hot case (m = 20, p = 160 000) in norm mode: no m×m×p buffer, well under a second.
    #[test]
    #[ignore = "slow: timing of the large norm-mode case"]
    fn large_norm_mode_timing() {
        let (m, p) = (20, 160_000);
        let x = pseudo(m, p, 3, 0.01);
        let start = std::time::Instant::now();
        let g = RbfKernel::default().compute(&x, &Layout::flat(p)).unwrap();
        let t = start.elapsed();
        eprintln!("rbf norm m={m} p={p}: {t:?}");
        assert!(g.repulsion.is_finite());
        assert!(t.as_secs_f64() < 2.0);
    }

    /// Smallest eigenvalue of a symmetric matrix by cyclic Jacobi rotations.
    fn min_eigenvalue(a: &Matrix) -> f64 {
        let n = a.rows();
        let mut a = a.clone();
        for _ in 0..100 {
            let off: f64 = (0..n)
                .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
                .map(|(i, j)| a.get(i, j).powi(2))
                .sum();
            if off < 1e-24 {
                break;
            }
            for p in 0..n {
                for q in p + 1..n {
                    let apq = a.get(p, q);
                    if apq.abs() < 1e-300 {
                        continue;
                    }
                    let theta = (a.get(q, q) - a.get(p, p)) / (2.0 * apq);
                    let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                    let t = if theta == 0.0 { 1.0 } else { t };
                    let c = 1.0 / (t * t + 1.0).sqrt();
                    let s = t * c;
                    for k in 0..n {
                        let (akp, akq) = (a.get(k, p), a.get(k, q));
                        a.set(k, p, c * akp - s * akq);
                        a.set(k, q, s * akp + c * akq);
                    }
                    for k in 0..n {
                        let (apk, aqk) = (a.get(p, k), a.get(q, k));
                        a.set(p, k, c * apk - s * aqk);
                        a.set(q, k, s * apk + c * aqk);
                    }
                }
            }
        }
        (0..n).map(|i| a.get(i, i)).fold(f64::INFINITY, f64::min)
    }

    #[test]
    fn jacobi_finds_a_negative_eigenvalue() {
        let a = Matrix::from_rows(&[vec![1.0, 2.0], vec![2.0, 1.0]]).unwrap();
        assert!((min_eigenvalue(&a) + 1.0).abs() < 1e-10);
    }

    proptest! {
        #[test]
        fn rbf_gram_is_symmetric_and_psd(
            m in 1usize..7,
            p in 1usize..4,
            vals in proptest::collection::vec(-5.0f64..5.0, 18),
        ) {
            let x = Matrix::from_vec(m, p, vals[..m * p].to_vec()).unwrap();
            let g = RbfKernel::default().compute(&x, &Layout::flat(p)).unwrap();
            let k = match g.weights {
                Weights::Scalar(k) => k,
                w => panic!("{w:?}"),
            };
            for i in 0..m {
                prop_assert!((k.get(i, i) - 1.0).abs() < 1e-12);
                for j in 0..m {
                    prop_assert!((k.get(i, j) - k.get(j, i)).abs() < 1e-12);
                }
            }
            prop_assert!(min_eigenvalue(&k) >= -1e-10);
            // Vector mode: every coordinate's m×m matrix is a 1-D RBF Gram, also PSD.
            let gv = RbfKernel { mode: Mode::Vector, ..Default::default() }
                .compute(&x, &Layout::flat(p))
                .unwrap();
            if let Weights::Vector { k, .. } = gv.weights {
                for c in 0..p {
                    let kc = Matrix::from_fn(m, m, |i, l| k[(i * m + l) * p + c]);
                    for i in 0..m {
                        for j in 0..m {
                            prop_assert!((kc.get(i, j) - kc.get(j, i)).abs() < 1e-12);
                        }
                    }
                    prop_assert!(min_eigenvalue(&kc) >= -1e-10);
                }
            }
        }
    }
}
