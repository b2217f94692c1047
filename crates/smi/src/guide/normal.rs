//! The mean-field Normal guide (AutoNormal): ψ = [loc (d) | ρ (d)], σ = softplus(ρ).

use rayon::prelude::*;

use super::{Columns, Directions};
use crate::matrix::Matrix;
use crate::model::{sigmoid, softplus};

use super::mixture::MixtureCoeffs;

/// ln 2π.
pub(super) const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// θ_s = loc + σ ⊙ ε_s for every row s of `eps` (S×d).
pub fn sample(psi: &[f64], eps: &[f64], theta: &mut [f64]) {
    let d = psi.len() / 2;
    let sigma = scales(psi);
    for (t, e) in theta.chunks_exact_mut(d).zip(eps.chunks_exact(d)) {
        draw_row(&psi[..d], &sigma, e, t);
    }
}

/// σ = softplus(ρ) of one particle ψ = [loc | ρ] (length d).
pub(crate) fn scales(psi: &[f64]) -> Vec<f64> {
    let mut sigma = vec![0.0; psi.len() / 2];
    scales_into(psi, &mut sigma);
    sigma
}

/// [`scales`] into `sigma` (length d; the same values).
pub(crate) fn scales_into(psi: &[f64], sigma: &mut [f64]) {
    for (s, r) in sigma.iter_mut().zip(&psi[psi.len() / 2..]) {
        *s = softplus(*r);
    }
}

smi_simd::multiversion! {
    /// [`draw_row`] of noise given in `f32` (widened exactly: the same θ as [`draw_row`] of the
    /// widened ε).
    pub(crate) fn draw_row_f32(loc: &[f64], sigma: &[f64], eps: &[f32], theta: &mut [f64]) {
        for (((t, &l), &s), &e) in theta.iter_mut().zip(loc).zip(sigma).zip(eps) {
            *t = l + s * f64::from(e);
        }
    }
}

smi_simd::multiversion! {
    /// One draw θ = loc + σ ⊙ ε (all of length d), in the CPU's widest vector build.
    pub(crate) fn draw_row(loc: &[f64], sigma: &[f64], eps: &[f64], theta: &mut [f64]) {
        for (((t, &l), &s), &e) in theta.iter_mut().zip(loc).zip(sigma).zip(eps) {
            *t = l + s * e;
        }
    }
}

/// log q_mix and ∇_θ log q_mix for K draws under m diagonal Gaussians (docs/algorithms.md §2.2).
///
/// Uses the expanded square: with h_j = 1/(2σ_j²), b_j = μ_j/σ_j²,
/// log N(u; μ_j, σ_j) = Σ_i (b_ji − h_ji·u_i)·u_i + c_j, c_j = −½ μ_j·b_j − Σ ln σ_j − d/2 ln 2π;
/// the gradient −Σ_j w_j (u − μ_j)/σ_j² = Σ_j w_j (b_j − 2h_j ⊙ u), W the responsibilities
/// (the column-blocked kernel of [`super::mixture`]; each row's values depend on that row alone).
pub fn mixture_log_density(particles: &Matrix, theta: &[f64], logq: &mut [f64], grad: &mut [f64]) {
    let coeffs = MixtureCoeffs::new(particles);
    let (k, d) = (logq.len(), particles.cols() / 2);
    if d == 0 {
        coeffs.rows(theta, logq, grad);
        return;
    }
    // Rows are independent: split the K draws into chunks over rayon's threads (a chunk's rows
    // share each pass over the coefficients).
    let chunk = k
        .div_ceil(rayon::current_num_threads())
        .min((32_768 / d.max(1)).max(CHUNK_DRAWS))
        .max(1);
    theta
        .par_chunks(chunk * d)
        .zip(logq.par_chunks_mut(chunk))
        .zip(grad.par_chunks_mut(chunk * d))
        .for_each(|((th, lq), g)| coeffs.rows(th, lq, g));
}

/// ∂/∂loc = mean_s δ_s; ∂/∂ρ = mean_s(δ_s ⊙ ε_s) ⊙ sigmoid(ρ).
pub fn pullback(psi: &[f64], eps: &[f64], delta: &[f64], out: &mut [f64]) {
    let d = psi.len() / 2;
    let s_count = (delta.len() / d).max(1) as f64;
    out.fill(0.0);
    let (dloc, drho) = out.split_at_mut(d);
    for (dl, e) in delta.chunks_exact(d).zip(eps.chunks_exact(d)) {
        for c in 0..d {
            dloc[c] += dl[c];
            drho[c] += dl[c] * e[c];
        }
    }
    let rho = &psi[d..];
    for c in 0..d {
        dloc[c] /= s_count;
        drho[c] *= sigmoid(rho[c]) / s_count;
    }
}

/// The fewest draws per chunk of a particle's S draws in the SMI step's pull-back: each chunk's
/// directions are summed into a partial sum of their own, and the partial sums are added in
/// chunk order (a size fixed by d, so that the step's chunks, its parallel tasks, do not depend
/// on the threads).
pub(crate) const CHUNK_DRAWS: usize = 8;

/// Values of a chunk of draws for small d (more draws than [`CHUNK_DRAWS`] per chunk, so that the
/// mixture's products of a chunk are not tiny).
const CHUNK_VALUES: usize = 1 << 15;

/// The chunks of S draws (S ≥ 1) of dimension `d`: max([`CHUNK_DRAWS`], 32 768 / d) draws each,
/// the last one the rest; a last chunk of one draw joins the one before (no chunk has one draw
/// unless S = 1).
pub(crate) fn draw_chunks(s: usize, d: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let size = (CHUNK_VALUES / d.max(1)).max(CHUNK_DRAWS);
    let n = if s > 1 && s % size == 1 {
        s / size
    } else {
        s.div_ceil(size)
    }
    .max(1);
    (0..n).map(move |c| c * size..if c + 1 == n { s } else { (c + 1) * size })
}

/// The columns `out` of the SMI step's pull-back for the directions `dirs`, formed on the fly
/// instead of stored. [`pullback`]'s formula, its sums over the S draws taken per chunk of
/// [`draw_chunks`] and the chunks' sums added in order (the fused step's order: both give the
/// same bits).
pub(crate) fn pullback_cols(psi: &[f64], dirs: &Directions, out: Columns) {
    let d = psi.len() / 2;
    let (c0, w) = (out.c0, out.loc.len());
    let s = dirs.grad.len() / d.max(1);
    out.loc.fill(0.0);
    out.rho.fill(0.0);
    let mut part = vec![0.0; 2 * w];
    for rows in draw_chunks(s, d) {
        part.fill(0.0);
        let (loc, rho) = part.split_at_mut(w);
        let r = rows.start * d..rows.end * d;
        let chunk = Directions {
            eps: &dirs.eps[r.clone()],
            grad: &dirs.grad[r.clone()],
            gradq: &dirs.gradq[r],
            tau: dirs.tau,
        };
        accumulate_directions(d, &chunk, Columns { c0, loc, rho });
        add_partial(out.loc, out.rho, loc, rho);
    }
    finish_pullback(&psi[d + c0..d + c0 + w], s.max(1) as f64, out.loc, out.rho);
}

smi_simd::multiversion! {
    /// Adds one chunk's partial sums (`part_loc`, `part_rho`) to the totals.
    pub(crate) fn add_partial(loc: &mut [f64], rho: &mut [f64], part_loc: &[f64], part_rho: &[f64]) {
        for (t, v) in loc.iter_mut().zip(part_loc) {
            *t += v;
        }
        for (t, v) in rho.iter_mut().zip(part_rho) {
            *t += v;
        }
    }
}

/// Adds Σ_s δ_s and Σ_s δ_s ⊙ ε_s over the S rows of `dirs` (d wide, ε of the Normal guide)
/// in the columns `out` to `out.loc` and `out.rho`, the rows in order.
pub(crate) fn accumulate_directions(d: usize, dirs: &Directions, out: Columns) {
    let cols = out.c0..out.c0 + out.loc.len();
    for ((g, gq), e) in dirs
        .grad
        .chunks_exact(d)
        .zip(dirs.gradq.chunks_exact(d))
        .zip(dirs.eps.chunks_exact(d))
    {
        let (g, gq, e) = (&g[cols.clone()], &gq[cols.clone()], &e[cols.clone()]);
        pull_back_row::<_, false>(dirs.tau, g, gq, e, out.loc, out.rho);
    }
}

/// One draw's direction δ = τ·`grad` − `gradq` on some columns, added to `dloc` and, times ε
/// (`eps`, widened where it is `f32`), to `drho` (all the same length): the pull-back's
/// operations, in their order, wherever a row is pulled back. With `FIRST` (the first row of
/// sums that hold nothing yet) δ and δ·ε are written instead of added to zeros: the same
/// values, except that a direction of −0 is kept as −0 where 0 + (−0) gives +0; the sums it
/// starts are only ever added to a +0, so no result differs.
#[inline(always)]
pub(crate) fn pull_back_row<E: Copy + Into<f64>, const FIRST: bool>(
    tau: f64,
    grad: &[f64],
    gradq: &[f64],
    eps: &[E],
    dloc: &mut [f64],
    drho: &mut [f64],
) {
    for ((((dl, dr), &gv), &qv), &ev) in dloc
        .iter_mut()
        .zip(drho.iter_mut())
        .zip(grad)
        .zip(gradq)
        .zip(eps)
    {
        let delta = tau * gv - qv;
        let scaled = delta * ev.into();
        if FIRST {
            *dl = delta;
            *dr = scaled;
        } else {
            *dl += delta;
            *dr += scaled;
        }
    }
}

/// The last step of [`pullback`] on the sums of [`accumulate_directions`] over `s_count` draws:
/// ∂/∂loc = sum/S, ∂/∂ρ = sum·sigmoid(ρ)/S (`rho` the particle's ρ of these columns).
pub(crate) fn finish_pullback(rho: &[f64], s_count: f64, loc_out: &mut [f64], rho_out: &mut [f64]) {
    for ((dl, dr), &r) in loc_out.iter_mut().zip(rho_out.iter_mut()).zip(rho) {
        *dl /= s_count;
        *dr *= sigmoid(r) / s_count;
    }
}

/// [`finish_pullback`] with the slopes sigmoid(ρ) given (`slope`, length d; the same values).
pub(crate) fn finish_pullback_with_slopes(
    slope: &[f64],
    s_count: f64,
    loc_out: &mut [f64],
    rho_out: &mut [f64],
) {
    for ((dl, dr), &g) in loc_out.iter_mut().zip(rho_out.iter_mut()).zip(slope) {
        *dl /= s_count;
        *dr *= g / s_count;
    }
}

/// σ = softplus(ρ) and its slope sigmoid(ρ) of a particle `psi` (2d: loc, ρ) into `sigma` and
/// `slope` (d each): one exponential per coordinate for both, the same values as
/// [`scales_into`] and `sigmoid`.
pub(crate) fn scales_and_slopes_into(psi: &[f64], sigma: &mut [f64], slope: &mut [f64]) {
    for ((s, g), &r) in sigma
        .iter_mut()
        .zip(slope.iter_mut())
        .zip(&psi[psi.len() / 2..])
    {
        (*s, *g) = crate::model::softplus_and_sigmoid(r);
    }
}

/// Adds ∂/∂ρ Σ ln σ = sigmoid(ρ)/softplus(ρ) to the ρ half of `out`.
pub fn add_entropy_grad(psi: &[f64], out: &mut [f64]) {
    let d = psi.len() / 2;
    for (o, r) in out[d..].iter_mut().zip(&psi[d..]) {
        *o += sigmoid(*r) / softplus(*r);
    }
}

/// Σ ln σ + d/2·ln(2πe).
pub fn entropy(psi: &[f64]) -> f64 {
    let d = psi.len() / 2;
    psi[d..].iter().map(|r| softplus(*r).ln()).sum::<f64>() + 0.5 * d as f64 * (LN_2PI + 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::inv_softplus;

    fn log_normal(u: f64, mu: f64, s: f64) -> f64 {
        -0.5 * ((u - mu) / s).powi(2) - s.ln() - 0.5 * LN_2PI
    }

    /// (f(x + h e_i) − f(x − h e_i)) / 2h.
    fn central_diff(f: impl Fn(&[f64]) -> f64, x: &[f64], i: usize, h: f64) -> f64 {
        let (mut up, mut dn) = (x.to_vec(), x.to_vec());
        up[i] += h;
        dn[i] -= h;
        (f(&up) - f(&dn)) / (2.0 * h)
    }

    /// log q(u) of the uniform mixture of Normal `parts` (m×2d), summed directly, and each
    /// component's responsibility.
    fn direct_mixture(parts: &Matrix, u: &[f64]) -> (f64, Vec<f64>) {
        let d = u.len();
        let comps: Vec<f64> = (0..parts.rows())
            .map(|j| {
                let p = parts.row(j);
                (0..d)
                    .map(|c| log_normal(u[c], p[c], softplus(p[d + c])))
                    .sum::<f64>()
            })
            .collect();
        let mx = comps.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = comps.iter().map(|v| (v - mx).exp()).sum();
        let resp = comps.iter().map(|v| (v - mx).exp() / sum).collect();
        (mx + sum.ln() - (parts.rows() as f64).ln(), resp)
    }

    #[test]
    fn mixture_density_matches_direct_sum_and_gradient_matches_fd() {
        let d = 3;
        let parts = Matrix::from_rows(&[
            vec![
                0.1,
                -1.0,
                2.0,
                inv_softplus(0.5),
                inv_softplus(1.5),
                inv_softplus(0.3),
            ],
            vec![
                1.0,
                0.0,
                -0.5,
                inv_softplus(2.0),
                inv_softplus(0.7),
                inv_softplus(1.1),
            ],
        ])
        .unwrap();
        let theta = vec![0.3, -0.2, 1.0, 5.0, 4.0, -3.0];
        let direct = |u: &[f64]| direct_mixture(&parts, u).0;
        let mut lq = vec![0.0; 2];
        let mut g = vec![0.0; 6];
        mixture_log_density(&parts, &theta, &mut lq, &mut g);
        for k in 0..2 {
            let u = &theta[k * d..(k + 1) * d];
            assert!((lq[k] - direct(u)).abs() < 1e-10);
            for c in 0..d {
                let fd = central_diff(direct, u, c, 1e-6);
                assert!((fd - g[k * d + c]).abs() < 1e-6, "k={k} c={c}");
            }
        }
    }

    #[test]
    fn large_mixture_matches_the_direct_formula() {
        // K = 400 rows and d = 1000: many row chunks of the expanded-square products, each
        // checked against the direct sum of Gaussian log densities.
        let (m, d, k) = (3, 1000, 400);
        let parts = Matrix::from_fn(m, 2 * d, |j, c| {
            if c < d {
                ((j * 31 + c * 7) as f64 * 0.13).sin()
            } else {
                inv_softplus(0.4 + 0.3 * ((j + c) as f64 * 0.7).cos().abs())
            }
        });
        let theta: Vec<f64> = (0..k * d).map(|v| (v as f64 * 0.011).sin() * 1.5).collect();
        let mut lq = vec![0.0; k];
        let mut g = vec![0.0; k * d];
        mixture_log_density(&parts, &theta, &mut lq, &mut g);
        for r in (0..k).step_by(37) {
            let u = &theta[r * d..(r + 1) * d];
            let (want, resp) = direct_mixture(&parts, u);
            // sums of 1000 terms of size ≈ 10: 1e-9 relative to |log q| ≈ 1e4 is rounding
            assert!((lq[r] - want).abs() < 1e-9 * want.abs(), "row {r}");
            for c in (0..d).step_by(53) {
                // ∂/∂u_c = −Σ_j w_j (u_c − μ_jc)/σ_jc²
                let gw: f64 = (0..m)
                    .map(|j| {
                        let p = parts.row(j);
                        let s = softplus(p[d + c]);
                        -resp[j] * (u[c] - p[c]) / (s * s)
                    })
                    .sum();
                assert!(
                    (g[r * d + c] - gw).abs() < 1e-9 * (1.0 + gw.abs()),
                    "{r},{c}"
                );
            }
        }
    }

    #[test]
    fn chunks_of_draws_cover_the_draws_in_order_and_never_leave_one_draw_alone() {
        let chunks = |s: usize, d: usize| draw_chunks(s, d).collect::<Vec<_>>();
        // boston's d = 3 302: 32 768 / d = 9 draws a chunk; the last one takes the 10 left
        let boston = chunks(100, 3302);
        assert_eq!(boston.len(), 11);
        assert_eq!(boston[10], 90..100);
        // large d: 8 draws a chunk, a last draw of its own joins the chunk before
        assert_eq!(chunks(17, 20_000), vec![0..8, 8..17]);
        assert_eq!(chunks(19, 20_000), vec![0..8, 8..16, 16..19]);
        // small d: one chunk; S = 1 is a chunk of one draw
        assert_eq!(chunks(100, 100), vec![0..100]);
        assert_eq!(chunks(1, 20_000), vec![0..1]);
    }

    #[test]
    fn pullback_is_the_chain_rule() {
        // f(θ) = Σ_s Σ_c w_c θ_sc with θ = loc + softplus(ρ) ε; check against FD in ψ.
        let psi = vec![0.2, -0.4, 0.3, -1.0];
        let eps = vec![0.5, -1.2, 1.5, 0.1, -0.3, 0.8];
        let w = [1.3, -0.7];
        let f = |p: &[f64]| {
            let mut th = vec![0.0; 6];
            sample(p, &eps, &mut th);
            th.chunks_exact(2)
                .map(|t| t[0] * w[0] + t[1] * w[1])
                .sum::<f64>()
                / 3.0
        };
        let delta: Vec<f64> = (0..3).flat_map(|_| w).collect();
        let mut out = vec![0.0; 4];
        pullback(&psi, &eps, &delta, &mut out);
        for (i, o) in out.iter().enumerate() {
            assert!((central_diff(f, &psi, i, 1e-6) - o).abs() < 1e-7);
        }
    }
}
