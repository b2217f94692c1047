//! Shared checks for the kernel unit tests: naive attraction and finite-difference repulsion.

use super::{Gram, Kernel};
use crate::matrix::Matrix;
use crate::model::Layout;

/// The spec's 4×2 test particles.
pub fn x4() -> Matrix {
    Matrix::from_rows(&[
        vec![1.0, 2.0],
        vec![10.0, 5.0],
        vec![7.0, 3.0],
        vec![2.0, -1.0],
    ])
    .unwrap()
}

/// Deterministic pseudo-random m×p matrix with entries in [−scale, scale].
pub fn pseudo(m: usize, p: usize, seed: u64, scale: f64) -> Matrix {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    Matrix::from_fn(m, p, |_, _| {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0) * scale
    })
}

/// A pointwise kernel K(x, y) as a dense p×p row-major matrix (norm: k·I, vector: diag).
pub type Pointwise<'a> = &'a dyn Fn(&[f64], &[f64]) -> Vec<f64>;

/// Checks a built Gram against a pointwise kernel:
/// - `attract(g)` row ℓ equals Σ_i K(x_i, x_ℓ) g_i (naive double loop);
/// - repulsion row ℓ, entry a equals Σ_i Σ_b ∂K_ab(x_i, x_ℓ)/∂x_ib by central differences.
pub fn check_gram(gram: &Gram, x: &Matrix, k: Pointwise, tol: f64) {
    let (m, p) = (x.rows(), x.cols());
    let g = pseudo(m, p, 99, 1.0);
    let a = gram.weights.attract(&g);
    assert_eq!((a.rows(), a.cols()), (m, p));
    for l in 0..m {
        let mut want = vec![0.0; p];
        for i in 0..m {
            let kk = k(x.row(i), x.row(l));
            for (r, w) in want.iter_mut().enumerate() {
                *w += (0..p).map(|b| kk[r * p + b] * g.get(i, b)).sum::<f64>();
            }
        }
        for (c, w) in want.iter().enumerate() {
            let got = a.get(l, c);
            assert!(
                (got - w).abs() <= tol * (1.0 + w.abs()),
                "attract ({l},{c}): {got} vs {w}"
            );
        }
    }
    let eps = 1e-5;
    assert_eq!((gram.repulsion.rows(), gram.repulsion.cols()), (m, p));
    for l in 0..m {
        for a_ in 0..p {
            let mut want = 0.0;
            for i in 0..m {
                for b in 0..p {
                    let mut xp = x.row(i).to_vec();
                    let mut xm = xp.clone();
                    xp[b] += eps;
                    xm[b] -= eps;
                    want +=
                        (k(&xp, x.row(l))[a_ * p + b] - k(&xm, x.row(l))[a_ * p + b]) / (2.0 * eps);
                }
            }
            let got = gram.repulsion.get(l, a_);
            assert!(
                (got - want).abs() <= tol * (1.0 + want.abs()),
                "repulsion ({l},{a_}): {got} vs {want}"
            );
        }
    }
}

/// Builds `kernel` on `x` and runs [`check_gram`].
pub fn check_kernel(kernel: &dyn Kernel, x: &Matrix, layout: &Layout, k: Pointwise, tol: f64) {
    let gram = kernel.compute(x, layout).unwrap();
    check_gram(&gram, x, k, tol);
}

/// Norm-mode pointwise: k·I.
pub fn diag_scalar(k: f64, p: usize) -> Vec<f64> {
    let mut out = vec![0.0; p * p];
    for c in 0..p {
        out[c * p + c] = k;
    }
    out
}

/// Vector-mode pointwise: diag(k).
pub fn diag_vector(k: &[f64]) -> Vec<f64> {
    let p = k.len();
    let mut out = vec![0.0; p * p];
    for (c, v) in k.iter().enumerate() {
        out[c * p + c] = *v;
    }
    out
}
