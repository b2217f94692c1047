//! The uniform mixture of the particles' Normal guides as a density of the draws
//! (docs/algorithms.md §2.2): its per-particle coefficients, log q_mix, its gradient, and (the
//! fused SMI step) the gradient pulled back on the fly.
//!
//! With h_j = 1/(2σ_j²) and b_j = μ_j/σ_j² (m×d each),
//! log N(u; μ_j, σ_j) = Σ_i (b_ji − h_ji·u_i)·u_i + c_j, c_j = −½ μ_j·b_j − Σ ln σ_j − d/2 ln 2π,
//! and ∇_u log q_mix = Σ_j w_j (b_j − 2h_j ⊙ u), w the responsibilities. The sums over i are
//! the column-blocked kernel of [`blocked`] (a row's values depend on that row alone), or for d
//! below [`SMALL_D`] faer's products ([`products`]).

mod blocked;
mod products;

use rayon::prelude::*;

use crate::matrix::{try_resize, Matrix};
use crate::model::softplus;

use super::normal::LN_2PI;

use blocked::{Eps, Rows, Sink, LANES};

/// m·d from which the per-particle coefficients are computed in parallel blocks.
const COEFF_PAR_MIN: usize = 1 << 16;

/// Below COEFF_PAR_MIN, values per parallel task when the particles' rows run in parallel.
const COEFF_PAR_ROW_MIN: usize = 1 << 12;

/// d below which the sums are faer products ([`products`]) instead of the blocked kernel
/// (mvn-100's d = 100 with m = 20: the products are faster; boston's d = 3 302 and up: the
/// blocked kernel).
const SMALL_D: usize = 1024;

/// The inputs and sums of [`MixtureCoeffs::rows_pullback`] besides the draws: ∇log p of the
/// n draws (`grad`, n×d) and its factor `tau`; the draws' log q_mix into `logq` (n); the loc
/// and ρ sums into `dloc` and `drho` (d each). With `fresh`, `dloc` and `drho` hold nothing on
/// entry (any values) and receive the sums alone, as if they had been zeros.
#[derive(Debug)]
pub(crate) struct PullbackSums<'a> {
    /// ∇log p of the draws (n×d).
    pub grad: &'a [f64],
    /// τ, the factor on `grad`.
    pub tau: f64,
    /// log q_mix of the draws (n), written.
    pub logq: &'a mut [f64],
    /// Σ δ, added to (or, `fresh`, written).
    pub dloc: &'a mut [f64],
    /// Σ δ ⊙ ε, added to (or, `fresh`, written).
    pub drho: &'a mut [f64],
    /// The sums hold nothing yet.
    pub fresh: bool,
}

/// The per-particle coefficients of the mixture's expanded square: h_j = 1/(2σ_j²),
/// b_j = μ_j/σ_j² (m rows each, of d values and zeros up to the row stride, a multiple of
/// [`LANES`]) and c_j (m), computed once per step (kept between steps by the fused step's
/// scratch, [`MixtureCoeffs::set`]).
#[derive(Default, Debug)]
pub(crate) struct MixtureCoeffs {
    h: Vec<f64>,
    b: Vec<f64>,
    c: Vec<f64>,
    m: usize,
    d: usize,
    /// The row stride of h and b: d rounded up to a multiple of [`LANES`] (d below
    /// [`SMALL_D`]).
    stride: usize,
}

impl MixtureCoeffs {
    /// The coefficients of the m Normal `particles` (m×2d).
    pub(crate) fn new(particles: &Matrix) -> Self {
        let (m, d) = (particles.rows(), particles.cols() / 2);
        let stride = row_stride(d);
        let mut coeffs = MixtureCoeffs {
            h: vec![0.0; m * stride],
            b: vec![0.0; m * stride],
            c: vec![0.0; m],
            m,
            d,
            stride,
        };
        coeffs.fill(particles, None);
        coeffs
    }

    /// These coefficients set to those of the m Normal `particles` (m×2d), the buffers reused
    /// (the same values as [`MixtureCoeffs::new`]); the particles' scales σ = softplus(ρ) (m×d)
    /// taken from `sigma` when the caller has them.
    ///
    /// # Errors
    /// [`crate::Error::Shape`] when the m×d buffers cannot be allocated.
    pub(crate) fn set(&mut self, particles: &Matrix, sigma: Option<&[f64]>) -> crate::Result<()> {
        let (m, d) = (particles.rows(), particles.cols() / 2);
        let stride = row_stride(d);
        try_resize(&mut self.h, m * stride, "the mixture's m×d coefficients")?;
        try_resize(&mut self.b, m * stride, "the mixture's m×d coefficients")?;
        try_resize(&mut self.c, m, "the mixture's m constants")?;
        (self.m, self.d, self.stride) = (m, d, stride);
        self.fill(particles, sigma);
        Ok(())
    }

    /// Writes every coefficient of `particles` into the buffers (sized m×stride, m×stride and
    /// m), the padding of each row zero; σ from `sigma` (m×d) when given, else softplus(ρ).
    fn fill(&mut self, particles: &Matrix, sigma: Option<&[f64]>) {
        let MixtureCoeffs {
            h,
            b,
            c,
            m,
            d,
            stride,
        } = self;
        let (m, d, stride) = (*m, *d, *stride);
        for row in h.chunks_exact_mut(stride).chain(b.chunks_exact_mut(stride)) {
            row[d..].fill(0.0);
        }
        // Three transcendental calls per coordinate and particle (one with σ given) (≈ 8 ms serial at MNIST's
        // m·d = 400K): blocks of coordinates run in parallel when there are many. The partial sums
        // of c are collected in order and added sequentially, so c does not depend on the threads.
        let block = if m * d >= COEFF_PAR_MIN {
            4096
        } else {
            d.max(1)
        };
        let row_coeffs = |j: usize, hj: &mut [f64], bj: &mut [f64]| -> f64 {
            let (hj, bj) = (&mut hj[..d], &mut bj[..d]);
            let (loc, rho) = particles.row(j).split_at(d);
            let sig = sigma.map(|sg| &sg[j * d..(j + 1) * d]);
            let fill = |(t, (hb, bb)): (usize, (&mut [f64], &mut [f64]))| {
                let start = t * block;
                let mut part = 0.0;
                for (c, (((hv, bv), &l), &r)) in hb
                    .iter_mut()
                    .zip(bb.iter_mut())
                    .zip(&loc[start..])
                    .zip(&rho[start..])
                    .enumerate()
                {
                    let s = sig.map_or_else(|| softplus(r), |sg| sg[start + c]);
                    let inv = 1.0 / (s * s);
                    *hv = 0.5 * inv;
                    *bv = l * inv;
                    part -= 0.5 * l * l * inv + s.ln();
                }
                part
            };
            let parts: Vec<f64> = if block < d {
                hj.par_chunks_mut(block)
                    .zip(bj.par_chunks_mut(block))
                    .enumerate()
                    .map(fill)
                    .collect()
            } else {
                hj.chunks_mut(block)
                    .zip(bj.chunks_mut(block))
                    .enumerate()
                    .map(fill)
                    .collect()
            };
            -0.5 * d as f64 * LN_2PI + parts.iter().sum::<f64>()
        };
        if block < d || d == 0 {
            for (j, cj) in c.iter_mut().enumerate() {
                let rows = j * stride..(j + 1) * stride;
                *cj = row_coeffs(j, &mut h[rows.clone()], &mut b[rows]);
            }
        } else {
            // one block per particle: the particles' rows in parallel (each summed as above)
            h.par_chunks_mut(stride)
                .zip(b.par_chunks_mut(stride))
                .zip(c.par_iter_mut())
                .with_min_len(COEFF_PAR_ROW_MIN.div_ceil(d))
                .enumerate()
                .for_each(|(j, ((hj, bj), cj))| *cj = row_coeffs(j, hj, bj));
        }
    }

    /// log q_mix (`logq`, n) and ∇_θ log q_mix (`grad`, n×d) of the n draws `theta` (n×d), on
    /// the calling thread.
    pub(crate) fn rows(&self, theta: &[f64], logq: &mut [f64], grad: &mut [f64]) {
        let w = self.responsibilities(Rows::Theta(theta), logq);
        match self.products() {
            Some(p) => p.gradient(theta, &w, grad),
            None => blocked::gradient_blocks(self, Rows::Theta(theta), &w, &mut Sink::Store(grad)),
        }
    }

    /// log q_mix (`s.logq`, n) of the n draws `theta` (n×d) and their directions
    /// δ_r = τ·`grad`_r − ∇log q_mix(θ_r) pulled back without storing ∇log q_mix: adds
    /// Σ_r δ_r to `s.dloc` and Σ_r δ_r ⊙ `eps`_r to `s.drho` (length d each; `grad` and `eps`
    /// n×d), each column's rows in order. The same values as [`MixtureCoeffs::rows`] followed
    /// by [`super::normal::accumulate_directions`] over all d columns, bit for bit.
    pub(crate) fn rows_pullback(&self, theta: &[f64], eps: &[f64], s: PullbackSums) {
        let (grad, tau, logq, dloc, drho) = (s.grad, s.tau, s.logq, s.dloc, s.drho);
        let w = self.responsibilities(Rows::Theta(theta), logq);
        let fresh = self.start_sums(s.fresh, logq.len(), dloc, drho);
        if let Some(p) = self.products() {
            p.pullback(theta, &w, eps, grad, tau, dloc, drho);
            return;
        }
        let mut sink = Sink::Pullback {
            eps: Eps::F64(eps),
            grad,
            tau,
            dloc,
            drho,
            fresh,
        };
        blocked::gradient_blocks(self, Rows::Theta(theta), &w, &mut sink);
    }

    /// Whether the sums run in the column-blocked kernel (d of [`SMALL_D`] and up), which
    /// [`MixtureCoeffs::rows_pullback_drawn`] needs to be fast.
    pub(crate) fn is_blocked(&self) -> bool {
        self.products().is_none()
    }

    /// [`MixtureCoeffs::rows_pullback`] of one particle's n draws θ = `loc` + `sigma` ⊙ ε given
    /// by their noise `eps` (n×d, `f32`; `loc`, `sigma`: d each): the same values, bit for bit,
    /// as θ formed by [`super::normal::draw_row`] from the widened ε and passed with it, but θ
    /// is formed block by block where the passes read it and never stored (d below
    /// [`SMALL_D`]: formed and stored first).
    pub(crate) fn rows_pullback_drawn(
        &self,
        loc: &[f64],
        sigma: &[f64],
        eps: &[f32],
        s: PullbackSums,
    ) {
        if !self.is_blocked() {
            let (theta, e) = drawn(self.d, loc, sigma, eps);
            self.rows_pullback(&theta, &e, s);
            return;
        }
        let rows = Rows::Drawn { loc, sigma, eps };
        let w = self.responsibilities(rows, s.logq);
        let (grad, tau, dloc, drho) = (s.grad, s.tau, s.dloc, s.drho);
        let fresh = self.start_sums(s.fresh, s.logq.len(), dloc, drho);
        let mut sink = Sink::Pullback {
            eps: Eps::F32(eps),
            grad,
            tau,
            dloc,
            drho,
            fresh,
        };
        blocked::gradient_blocks(self, rows, &w, &mut sink);
    }

    /// Whether the pull-back of `n` rows may write the sums `dloc`, `drho` with its first row:
    /// when the caller asks for it (`fresh`: they hold nothing yet) and the blocked kernel
    /// pulls back at least one row. A fresh start it cannot take is zeros written here.
    fn start_sums(&self, fresh: bool, n: usize, dloc: &mut [f64], drho: &mut [f64]) -> bool {
        let writes = self.is_blocked() && self.m > 0 && n > 0;
        if fresh && !writes {
            dloc.fill(0.0);
            drho.fill(0.0);
        }
        fresh && writes
    }

    /// The coefficients as faer's operands when d is below [`SMALL_D`].
    fn products(&self) -> Option<products::Coeffs<'_>> {
        (self.d < SMALL_D).then_some(products::Coeffs {
            h: &self.h,
            b: &self.b,
            m: self.m,
            d: self.d,
        })
    }

    /// Pass 1: log q_mix of every row into `logq` (n) and the responsibilities w (n×m, returned).
    fn responsibilities(&self, rows: Rows<'_>, logq: &mut [f64]) -> Vec<f64> {
        let (m, n) = (self.m, logq.len());
        let mut l = vec![0.0; n * m];
        if m == 0 {
            logq.fill(f64::NEG_INFINITY);
            return l;
        }
        match (self.products(), rows) {
            (Some(p), Rows::Theta(theta)) => p.log_components(theta, &mut l),
            (Some(p), Rows::Drawn { loc, sigma, eps }) => {
                p.log_components(&drawn(self.d, loc, sigma, eps).0, &mut l);
            }
            (None, rows) => blocked::log_components(self, rows, &mut l),
        }
        normalise(&mut l, &self.c, logq);
        l
    }
}

smi_simd::multiversion! {
    /// Each row of `l` (n×m: the rows' log N(θ; μ_j, σ_j) without c_j) made its
    /// responsibilities softmax(row + c), and log q_mix = max + ln Σ exp(· − max) − ln m into
    /// `logq` (n), in the CPU's widest vector build. The exponentials and their sum run in
    /// order, as before this function (the vector build changes only the additions of c, the
    /// divisions and the maximum's accumulators; the maximum of a set does not depend on the
    /// order, and a ±0 maximum gives the same exponentials and log q_mix).
    fn normalise(l: &mut [f64], c: &[f64], logq: &mut [f64]) {
        let m = c.len();
        let ln_m = (m as f64).ln();
        for (row, lq) in l.chunks_exact_mut(m).zip(logq.iter_mut()) {
            for (v, cj) in row.iter_mut().zip(c) {
                *v += cj;
            }
            let mx = max_of(row);
            let mut sum = 0.0;
            for v in row.iter_mut() {
                *v = (*v - mx).exp();
                sum += *v;
            }
            for v in row.iter_mut() {
                *v /= sum;
            }
            *lq = mx + sum.ln() - ln_m;
        }
    }
}

/// The largest value of `row` (NaNs ignored, −∞ when empty or all NaN), in four running
/// maxima: one chain of `max` (with its NaN test) per value was the loop's latency.
#[inline(always)]
fn max_of(row: &[f64]) -> f64 {
    let mut acc = [f64::NEG_INFINITY; 4];
    let (quads, rest) = row.as_chunks::<4>();
    for q in quads {
        for (a, v) in acc.iter_mut().zip(q) {
            *a = a.max(*v);
        }
    }
    for v in rest {
        acc[0] = acc[0].max(*v);
    }
    acc[0].max(acc[1]).max(acc[2].max(acc[3]))
}

/// The draws θ = `loc` + `sigma` ⊙ ε (n×d) of the noise `eps` (n×d, `f32`) and the widened
/// noise, stored (as the unfused step forms them).
fn drawn(d: usize, loc: &[f64], sigma: &[f64], eps: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let e: Vec<f64> = eps.iter().map(|&v| f64::from(v)).collect();
    let mut theta = vec![0.0; e.len()];
    for (t, e) in theta
        .chunks_exact_mut(d.max(1))
        .zip(e.chunks_exact(d.max(1)))
    {
        super::normal::draw_row(loc, sigma, e, t);
    }
    (theta, e)
}

/// The row stride of the coefficients for dimension d.
fn row_stride(d: usize) -> usize {
    if d < SMALL_D {
        d
    } else {
        d.next_multiple_of(LANES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::inv_softplus;

    /// m = 3 particles of d = 1 100 (above SMALL_D: two full blocks and a partial one, lanes
    /// and a rest).
    fn particles() -> Matrix {
        let (m, d) = (3, 1100);
        Matrix::from_fn(m, 2 * d, |j, c| {
            if c < d {
                ((j * 17 + c * 3) as f64 * 0.21).sin()
            } else {
                inv_softplus(0.5 + 0.4 * ((j + 2 * c) as f64 * 0.3).cos().abs())
            }
        })
    }

    /// The coefficients of [`particles`] and n rows of draws.
    fn coeffs_and_rows(n: usize) -> (MixtureCoeffs, Vec<f64>) {
        let theta = (0..n * 1100)
            .map(|v| (v as f64 * 0.017).cos() * 1.2)
            .collect();
        (MixtureCoeffs::new(&particles()), theta)
    }

    #[test]
    fn the_blocked_kernel_matches_the_direct_formula() {
        // log q_mix = logsumexp_j Σ_i log N(θ_i; μ_ji, σ_ji) − ln m and its gradient
        // −Σ_j w_j (θ − μ_j)/σ_j², summed directly for each of 3 rows
        let (k, theta) = coeffs_and_rows(3);
        let (parts, d) = (particles(), k.d);
        let (mut lq, mut g) = (vec![0.0; 3], vec![0.0; 3 * d]);
        k.rows(&theta, &mut lq, &mut g);
        for (r, u) in theta.chunks_exact(d).enumerate() {
            let comps: Vec<f64> = (0..3)
                .map(|j| {
                    let p = parts.row(j);
                    (0..d)
                        .map(|c| {
                            let s = softplus(p[d + c]);
                            -0.5 * ((u[c] - p[c]) / s).powi(2) - s.ln() - 0.5 * LN_2PI
                        })
                        .sum::<f64>()
                })
                .collect();
            let mx = comps.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = comps.iter().map(|v| (v - mx).exp()).sum();
            let want = mx + sum.ln() - 3f64.ln();
            // sums of 1 100 terms of size ≈ 1–10: 1e-12 relative to |log q| ≈ 1e3 is rounding
            assert!((lq[r] - want).abs() < 1e-12 * want.abs(), "row {r}");
            for c in 0..d {
                let gw: f64 = (0..3)
                    .map(|j| {
                        let p = parts.row(j);
                        let s = softplus(p[d + c]);
                        -(comps[j] - mx).exp() / sum * (u[c] - p[c]) / (s * s)
                    })
                    .sum();
                // a sum of 3 terms of size ≤ 20: rounding
                assert!(
                    (g[r * d + c] - gw).abs() < 1e-12 * (1.0 + gw.abs()),
                    "{r},{c}"
                );
            }
        }
    }

    #[test]
    fn the_softmax_gives_the_bits_of_the_sequential_loop() {
        // the loop before `normalise`: one running maximum, in order
        fn sequential(row: &mut [f64], c: &[f64]) -> f64 {
            let mut mx = f64::NEG_INFINITY;
            for (v, cj) in row.iter_mut().zip(c) {
                *v += cj;
                mx = mx.max(*v);
            }
            let mut sum = 0.0;
            for v in row.iter_mut() {
                *v = (*v - mx).exp();
                sum += *v;
            }
            for v in row.iter_mut() {
                *v /= sum;
            }
            mx + sum.ln() - (c.len() as f64).ln()
        }
        let same = |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
        // ties at +0 and −0 (the four maxima may pick either), NaN, infinities, every m to 9
        let pool = [
            0.0,
            -0.0,
            1.5,
            -2.0,
            -700.0,
            f64::NAN,
            f64::NEG_INFINITY,
            f64::INFINITY,
        ];
        let mut seed = 7u64;
        let mut pick = || {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            pool[(seed >> 33) as usize % pool.len()]
        };
        for m in 1..=9 {
            for _ in 0..400 {
                let c: Vec<f64> = (0..m)
                    .map(|_| if pick() == 1.5 { 0.25 } else { 0.0 })
                    .collect();
                let row: Vec<f64> = (0..m).map(|_| pick()).collect();
                let (mut want, mut got) = (row.clone(), row.clone());
                let lq_want = sequential(&mut want, &c);
                let mut lq = [0.0];
                normalise(&mut got, &c, &mut lq);
                assert!(same(lq[0], lq_want), "{row:?}: {} against {lq_want}", lq[0]);
                assert!(want.iter().zip(&got).all(|(&a, &b)| same(a, b)), "{row:?}");
            }
        }
    }

    #[test]
    fn a_row_gets_the_same_bits_alone_or_with_other_rows() {
        // 7 rows at once (three pairs and one row alone) against each row passed by itself:
        // each row's sums run in its own lanes and blocks, so the values are equal bit for bit
        let (k, theta) = coeffs_and_rows(7);
        let d = k.d;
        let (mut lq, mut g) = (vec![0.0; 7], vec![0.0; 7 * d]);
        k.rows(&theta, &mut lq, &mut g);
        for r in 0..7 {
            let (mut lq1, mut g1) = ([0.0], vec![0.0; d]);
            k.rows(&theta[r * d..(r + 1) * d], &mut lq1, &mut g1);
            assert_eq!(lq1[0].to_bits(), lq[r].to_bits(), "row {r}");
            assert_eq!(g1, g[r * d..(r + 1) * d], "row {r}");
        }
    }

    #[test]
    fn the_fused_pullback_equals_the_gradient_then_the_pullback_bit_for_bit() {
        let n = 5;
        let (k, theta) = coeffs_and_rows(n);
        let d = k.d;
        let eps: Vec<f64> = (0..n * d).map(|v| (v as f64 * 0.7).sin()).collect();
        let grad: Vec<f64> = (0..n * d).map(|v| (v as f64 * 0.3).cos() * 2.0).collect();
        let tau = 0.75;
        let (mut lq, mut gq) = (vec![0.0; n], vec![0.0; n * d]);
        k.rows(&theta, &mut lq, &mut gq);
        let (mut want_l, mut want_r) = (vec![0.5; d], vec![-0.25; d]);
        let dirs = crate::guide::Directions {
            eps: &eps,
            grad: &grad,
            gradq: &gq,
            tau,
        };
        let out = crate::guide::Columns {
            c0: 0,
            loc: &mut want_l,
            rho: &mut want_r,
        };
        super::super::normal::accumulate_directions(d, &dirs, out);
        let mut lq2 = vec![0.0; n];
        let (mut got_l, mut got_r) = (vec![0.5; d], vec![-0.25; d]);
        let out = (&mut lq2[..], &mut got_l[..], &mut got_r[..]);
        k.rows_pullback(&theta, &eps, sums(&grad, tau, out, false));
        assert_eq!(lq, lq2);
        assert_eq!(got_l, want_l);
        assert_eq!(got_r, want_r);
    }

    /// The pull-back's sums `(logq, dloc, drho)` for ∇log p `grad` at factor `tau`.
    fn sums<'a>(
        grad: &'a [f64],
        tau: f64,
        (logq, dloc, drho): (&'a mut [f64], &'a mut [f64], &'a mut [f64]),
        fresh: bool,
    ) -> PullbackSums<'a> {
        PullbackSums {
            grad,
            tau,
            logq,
            dloc,
            drho,
            fresh,
        }
    }

    /// m particles (m×2d: loc, then ρ) for the drawn-rows tests.
    fn drawn_particles(m: usize, d: usize) -> Matrix {
        Matrix::from_fn(m, 2 * d, |j, c| {
            if c < d {
                ((j * 17 + c * 3) as f64 * 0.21).sin()
            } else {
                inv_softplus(0.5 + 0.4 * ((j + 2 * c) as f64 * 0.3).cos().abs())
            }
        })
    }

    #[test]
    fn drawn_rows_give_the_stored_rows_bits_at_every_d() {
        // d = 1 100 runs the blocked kernel (θ formed block by block), d = 40 the products
        // (θ formed and stored first); n = 5 rows: two pairs and a lone row; n = 1: a lone row
        for (d, n) in [(1100, 5), (1100, 1), (40, 5)] {
            let (m, tau) = (3, 0.75);
            let parts = drawn_particles(m, d);
            let k = MixtureCoeffs::new(&parts);
            assert_eq!(k.is_blocked(), d >= SMALL_D);
            let loc = &parts.row(1)[..d];
            let sigma = super::super::normal::scales(parts.row(1));
            let eps32: Vec<f32> = (0..n * d).map(|v| (v as f32 * 0.37).sin() * 1.7).collect();
            let grad: Vec<f64> = (0..n * d).map(|v| (v as f64 * 0.3).cos() * 2.0).collect();
            let (theta, eps) = drawn(d, loc, &sigma, &eps32);
            let stored = |lq: &mut [f64], l: &mut [f64], r: &mut [f64], fresh: bool| {
                k.rows_pullback(&theta, &eps, sums(&grad, tau, (lq, l, r), fresh));
            };
            let (mut lq, mut want_l, mut want_r) = (vec![0.0; n], vec![0.5; d], vec![-0.25; d]);
            stored(&mut lq, &mut want_l, &mut want_r, false);
            let (mut lq2, mut got_l, mut got_r) = (vec![0.0; n], vec![0.5; d], vec![-0.25; d]);
            k.rows_pullback_drawn(
                loc,
                &sigma,
                &eps32,
                sums(&grad, tau, (&mut lq2, &mut got_l, &mut got_r), false),
            );
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&lq2), bits(&lq), "d = {d}");
            assert_eq!(bits(&got_l), bits(&want_l), "d = {d}");
            assert_eq!(bits(&got_r), bits(&want_r), "d = {d}");
            // `fresh`: the first row writes the sums, so buffers holding NaN end with the sums
            // from zero (bit for bit, but for the sign of a zero: a −0 written where 0 + (−0)
            // gives +0, alike once the step adds the sums to +0)
            let (mut zero_l, mut zero_r) = (vec![0.0; d], vec![0.0; d]);
            stored(&mut lq, &mut zero_l, &mut zero_r, false);
            let same = |a: &[f64], b: &[f64]| {
                a.iter()
                    .zip(b)
                    .all(|(x, y)| x.to_bits() == y.to_bits() || (*x == 0.0 && *y == 0.0))
            };
            for from_theta in [true, false] {
                let (mut l, mut r) = (vec![f64::NAN; d], vec![f64::NAN; d]);
                if from_theta {
                    stored(&mut lq, &mut l, &mut r, true);
                } else {
                    k.rows_pullback_drawn(
                        loc,
                        &sigma,
                        &eps32,
                        sums(&grad, tau, (&mut lq, &mut l, &mut r), true),
                    );
                }
                assert!(same(&l, &zero_l) && same(&r, &zero_r), "d = {d}, n = {n}");
            }
        }
    }
}
