//! The full-rank Normal guide (docs/algorithms.md §2.12): ψ = [loc (d) | ρ (d) | the strictly
//! lower triangle of U, row by row (d(d − 1)/2)], θ = loc + S U ε with U unit lower triangular,
//! S = diag(σ), σ = softplus(ρ), so q(θ|ψ) = N(loc, L Lᵀ) with L = S U: the Cholesky factor,
//! each row stored relative to its diagonal σ_c (L_cj = σ_c u_cj). Every covariance has
//! exactly one such (σ, U), so no direction of ψ leaves q unchanged; and U is dimensionless,
//! so an additive optimizer step on it means the same whatever the coordinates' scales (with
//! the absolute L, SMI's sd ratios reached 32–37 on the validation set's kidiq momhsiq and
//! interaction_c regressions, whose scales differ by orders of magnitude: measured).
//!
//! Densities: with u = θ − loc and z = L⁻¹u (forward substitution),
//! log q = −½‖z‖² − Σ_c ln σ_c − d/2·ln 2π and ∇_θ log q = −L⁻ᵀz. A (draw, component) pair
//! costs O(d²): the guide is for small d.

use super::structured;
use super::{Columns, Directions};
use crate::matrix::Matrix;
use crate::model::{sigmoid, softplus};

const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// The offset of row `c`'s strictly lower entries L_c0 … L_c,c−1 in the packed triangle.
pub(crate) fn tri(c: usize) -> usize {
    c * c.saturating_sub(1) / 2
}

/// p = 2d + d(d − 1)/2 parameters of dimension d (saturating).
pub(crate) fn param_dim(d: usize) -> usize {
    d.saturating_mul(d.saturating_add(3)) / 2
}

/// p as [`param_dim`], `None` on overflow.
pub(crate) fn checked_param_dim(d: usize) -> Option<usize> {
    d.checked_mul(d.checked_add(3)?).map(|v| v / 2)
}

/// d of a particle of `p` parameters (the d with `param_dim(d) = p`).
pub(crate) fn dim_of(p: usize) -> usize {
    // d² + 3d − 2p = 0
    let d = (((9 + 8 * p) as f64).sqrt() - 3.0) / 2.0;
    let mut d = d.round() as usize;
    while param_dim(d) > p {
        d -= 1;
    }
    while param_dim(d + 1) <= p {
        d += 1;
    }
    d
}

/// One component: its location, σ and packed strictly lower triangle of U.
struct Component<'a> {
    loc: &'a [f64],
    sigma: Vec<f64>,
    lower: &'a [f64],
    constant: f64,
}

impl<'a> Component<'a> {
    fn new(psi: &'a [f64], d: usize) -> Self {
        let sigma: Vec<f64> = psi[d..2 * d].iter().map(|r| softplus(*r)).collect();
        let log_det: f64 = sigma.iter().map(|s| s.ln()).sum();
        Component {
            loc: &psi[..d],
            lower: &psi[2 * d..],
            constant: -log_det - 0.5 * d as f64 * LN_2PI,
            sigma,
        }
    }
}

impl structured::Component for Component<'_> {
    type Scratch = Vec<f64>;

    fn scratch(&self) -> Vec<f64> {
        vec![0.0; self.sigma.len()]
    }

    /// log N(θ), and ∇_θ of it into `g`; `z` scratch of d.
    fn log_density(&self, theta: &[f64], g: &mut [f64], z: &mut Vec<f64>) -> f64 {
        let d = self.sigma.len();
        let mut quad = 0.0;
        // z_c = (θ_c − loc_c)/σ_c − Σ_{j<c} u_cj z_j (L_cj = σ_c u_cj, L_cc = σ_c)
        for c in 0..d {
            let row = &self.lower[tri(c)..tri(c) + c];
            let uz: f64 = row.iter().zip(&z[..c]).map(|(a, b)| a * b).sum();
            z[c] = (theta[c] - self.loc[c]) / self.sigma[c] - uz;
            quad += z[c] * z[c];
        }
        // g = −L⁻ᵀ z (back substitution): g_c = (z_c − Σ_{k>c} σ_k u_kc g_k)/σ_c
        for c in (0..d).rev() {
            let mut s = z[c];
            for (k, gk) in g.iter().enumerate().skip(c + 1) {
                s -= self.sigma[k] * self.lower[tri(k) + c] * gk;
            }
            g[c] = s / self.sigma[c];
        }
        for v in g.iter_mut() {
            *v = -*v;
        }
        self.constant - 0.5 * quad
    }
}

/// Reparameterised draws of one particle: `theta` (S×d) from `eps` (S×d).
pub fn sample(psi: &[f64], eps: &[f64], theta: &mut [f64]) {
    let d = dim_of(psi.len());
    if d == 0 {
        return;
    }
    let (loc, rest) = psi.split_at(d);
    let (rho, lower) = rest.split_at(d);
    for (t, e) in theta.chunks_exact_mut(d).zip(eps.chunks_exact(d)) {
        for c in 0..d {
            let row = &lower[tri(c)..tri(c) + c];
            let ue: f64 = row.iter().zip(&e[..c]).map(|(a, b)| a * b).sum();
            t[c] = loc[c] + softplus(rho[c]) * (e[c] + ue);
        }
    }
}

/// log q_mix and ∇_θ log q_mix of K draws θ (K×d) under the m full-rank Normals of
/// `particles`, the particles held constant. Rows run in parallel chunks.
pub fn mixture_log_density(particles: &Matrix, theta: &[f64], logq: &mut [f64], grad: &mut [f64]) {
    let d = dim_of(particles.cols());
    let comps: Vec<Component<'_>> = (0..particles.rows())
        .map(|j| Component::new(particles.row(j), d))
        .collect();
    structured::mixture_log_density(&comps, d, theta, logq, grad);
}

/// The columns `out` (c0 .. c0 + w) of the pull-back of the directions `dirs`, with
/// `dirs.eps` the S noise rows: ∂/∂loc = mean δ,
/// ∂/∂ρ_c = mean(δ_c (ε_c + Σ_{j<c} u_cj ε_j))·sigmoid(ρ_c), ∂/∂u_cj = mean(δ_c ε_j)·σ_c for
/// j < c (into `tri_out`: the packed rows c0 .. c0 + w of the triangle,
/// `tri(c0 + w) − tri(c0)` values).
pub(crate) fn pullback_cols(psi: &[f64], dirs: &Directions, out: Columns, tri_out: &mut [f64]) {
    let (eps, grad, gradq, tau) = (dirs.eps, dirs.grad, dirs.gradq, dirs.tau);
    let (c0, loc_out, rho_out) = (out.c0, out.loc, out.rho);
    let d = dim_of(psi.len());
    let w = loc_out.len();
    let s = grad.len() / d.max(1);
    loc_out.fill(0.0);
    rho_out.fill(0.0);
    tri_out.fill(0.0);
    let base = tri(c0);
    let lower = &psi[2 * d..];
    for row in 0..s {
        let e = &eps[row * d..(row + 1) * d];
        for j in 0..w {
            let c = c0 + j;
            let delta = tau * grad[row * d + c] - gradq[row * d + c];
            let u = &lower[tri(c)..tri(c) + c];
            let ue: f64 = u.iter().zip(&e[..c]).map(|(a, b)| a * b).sum();
            loc_out[j] += delta;
            rho_out[j] += delta * (e[c] + ue);
            let off = tri(c) - base;
            for (t, ek) in tri_out[off..off + c].iter_mut().zip(&e[..c]) {
                *t += delta * ek;
            }
        }
    }
    let n = s.max(1) as f64;
    for j in 0..w {
        let c = c0 + j;
        let rho = psi[d + c];
        loc_out[j] /= n;
        rho_out[j] *= sigmoid(rho) / n;
        let sc = softplus(rho) / n;
        let off = tri(c) - base;
        for t in &mut tri_out[off..off + c] {
            *t *= sc;
        }
    }
}

/// The whole pull-back of stored directions `delta` (S×d).
pub fn pullback(psi: &[f64], eps: &[f64], delta: &[f64], out: &mut [f64]) {
    let d = dim_of(psi.len());
    let zeros = vec![0.0; delta.len()];
    let (loc, rest) = out.split_at_mut(d);
    let (rho, lower) = rest.split_at_mut(d);
    let dirs = Directions::stored(eps, delta, &zeros);
    pullback_cols(psi, &dirs, Columns { c0: 0, loc, rho }, lower);
}

/// The entropy Σ ln σ_c + d/2·ln(2πe).
pub fn entropy(psi: &[f64]) -> f64 {
    let d = dim_of(psi.len());
    psi[d..2 * d].iter().map(|r| softplus(*r).ln()).sum::<f64>() + 0.5 * d as f64 * (LN_2PI + 1.0)
}

/// Adds ∇_ψ of the entropy: sigmoid(ρ_c)/σ_c on ρ, nothing on loc or the triangle.
pub fn add_entropy_grad(psi: &[f64], out: &mut [f64]) {
    let d = dim_of(psi.len());
    for c in 0..d {
        let r = psi[d + c];
        out[d + c] += sigmoid(r) / softplus(r);
    }
}

/// The marginal sd σ_c √(1 + Σ_{j<c} u_cj²) of coordinate `c`.
pub(crate) fn marginal_sd(psi: &[f64], c: usize) -> f64 {
    let d = dim_of(psi.len());
    let row = &psi[2 * d + tri(c)..2 * d + tri(c) + c];
    softplus(psi[d + c]) * (1.0 + row.iter().map(|v| v * v).sum::<f64>()).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// d = 3: loc, ρ, then L10, L20, L21.
    fn particle() -> Vec<f64> {
        vec![0.3, -0.5, 1.2, -0.4, 0.2, -1.0, 0.6, -0.3, 0.8]
    }

    #[test]
    fn sizes_round_trip() {
        for d in 0..50 {
            assert_eq!(dim_of(param_dim(d)), d);
            assert_eq!(checked_param_dim(d), Some(param_dim(d)));
        }
        assert_eq!(param_dim(3), 9);
    }

    #[test]
    fn the_density_matches_the_dense_formula_and_its_gradient_the_differences() {
        let psi = particle();
        let d = 3;
        let s: Vec<f64> = psi[d..2 * d].iter().map(|r| softplus(*r)).collect();
        let l = [
            [s[0], 0.0, 0.0],
            [s[1] * psi[6], s[1], 0.0],
            [s[2] * psi[7], s[2] * psi[8], s[2]],
        ];
        let theta = [0.9, 0.1, -0.7];
        let parts = Matrix::from_rows(std::slice::from_ref(&psi)).unwrap();
        let logq = |t: &[f64]| {
            let (mut lq, mut g) = (vec![0.0], vec![0.0; d]);
            mixture_log_density(&parts, t, &mut lq, &mut g);
            (lq[0], g)
        };
        // z = L⁻¹u by hand
        let u: Vec<f64> = (0..d).map(|c| theta[c] - psi[c]).collect();
        let z0 = u[0] / l[0][0];
        let z1 = (u[1] - l[1][0] * z0) / l[1][1];
        let z2 = (u[2] - l[2][0] * z0 - l[2][1] * z1) / l[2][2];
        let want = -0.5 * (z0 * z0 + z1 * z1 + z2 * z2)
            - s.iter().map(|v| v.ln()).sum::<f64>()
            - 1.5 * LN_2PI;
        let (lq, g) = logq(&theta);
        assert!((lq - want).abs() < 1e-12, "{lq} vs {want}");
        for c in 0..d {
            let h = 1e-6;
            let (mut up, mut dn) = (theta, theta);
            up[c] += h;
            dn[c] -= h;
            let fd = (logq(&up).0 - logq(&dn).0) / (2.0 * h);
            assert!((fd - g[c]).abs() < 1e-7, "c={c}: {fd} vs {}", g[c]);
        }
    }

    #[test]
    fn the_pullback_is_the_chain_rule_of_the_draws() {
        structured::assert_pullback_is_the_chain_rule(&particle(), 3, 3, sample, pullback);
    }
}
