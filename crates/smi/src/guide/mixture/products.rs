//! The mixture's sums for small d (below [`super::SMALL_D`]) as faer matrix products, as
//! before the column-blocked kernel: at d ≈ 100 with m = 20 particles the products' register
//! tiling beats the blocked kernel's per-row reductions. A row's values do not depend on the
//! other rows of a call of two rows or more (faer's one-row path differs, and the callers never
//! pass one row unless S = 1).

use std::cell::RefCell;

use crate::guide::normal::accumulate_directions;
use crate::guide::{Columns, Directions};
use crate::linalg::{gemm, Op};

thread_local! {
    /// The n×d squares (or products W·h) and the n×d gradient of a call, kept per thread
    /// between calls (every value is written before it is read).
    static SCRATCH: RefCell<[Vec<f64>; 2]> = const { RefCell::new([Vec::new(), Vec::new()]) };
}

/// The coefficients of the mixture: h and b (m×d, row stride d), m and d.
pub(super) struct Coeffs<'a> {
    pub(super) h: &'a [f64],
    pub(super) b: &'a [f64],
    pub(super) m: usize,
    pub(super) d: usize,
}

impl Coeffs<'_> {
    /// l = θ·bᵀ − θ²·hᵀ (n×m) of the n rows `theta` (n×d), written.
    pub(super) fn log_components(&self, theta: &[f64], l: &mut [f64]) {
        let (m, d) = (self.m, self.d);
        let n = l.len() / m.max(1);
        SCRATCH.with(|sc| {
            let sq = &mut sc.borrow_mut()[0];
            sq.clear();
            sq.extend(theta.iter().map(|u| u * u));
            gemm(l, sq, Op::N, self.h, Op::T, n, d, m, -1.0, false);
            gemm(l, theta, Op::N, self.b, Op::T, n, d, m, 1.0, true);
        });
    }

    /// ∇log q_mix = W·b − θ ⊙ (2·W·h) (n×d) of the rows `theta` with responsibilities `w`
    /// (n×m), written into `q`.
    pub(super) fn gradient(&self, theta: &[f64], w: &[f64], q: &mut [f64]) {
        SCRATCH.with(|sc| self.gradient_in(theta, w, q, &mut sc.borrow_mut()[0]));
    }

    fn gradient_in(&self, theta: &[f64], w: &[f64], q: &mut [f64], wh: &mut Vec<f64>) {
        let (m, d) = (self.m, self.d);
        let n = theta.len() / d.max(1);
        wh.resize(n * d, 0.0);
        let wh = &mut wh[..n * d];
        gemm(wh, w, Op::N, self.h, Op::N, n, m, d, 2.0, false);
        gemm(q, w, Op::N, self.b, Op::N, n, m, d, 1.0, false);
        for ((g, u), v) in q.iter_mut().zip(theta).zip(wh.iter()) {
            *g -= u * v;
        }
    }

    /// [`Coeffs::gradient`] pulled back as [`super::MixtureCoeffs::rows_pullback`] does
    /// (through the stored gradient: [`accumulate_directions`] over all columns).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pullback(
        &self,
        theta: &[f64],
        w: &[f64],
        eps: &[f64],
        grad: &[f64],
        tau: f64,
        dloc: &mut [f64],
        drho: &mut [f64],
    ) {
        SCRATCH.with(|sc| {
            let [wh, q] = &mut *sc.borrow_mut();
            q.resize(theta.len(), 0.0);
            let q = &mut q[..theta.len()];
            self.gradient_in(theta, w, q, wh);
            let dirs = Directions {
                eps,
                grad,
                gradq: q,
                tau,
            };
            let out = Columns {
                c0: 0,
                loc: dloc,
                rho: drho,
            };
            accumulate_directions(self.d, &dirs, out);
        });
    }
}
