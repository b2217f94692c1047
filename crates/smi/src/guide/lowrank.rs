//! The low-rank-plus-diagonal Normal guide (docs/algorithms.md §2.12): ψ = [loc (d) | ρ (d) |
//! V (d×r, row-major)], θ = loc + σ ⊙ (ε + V η) with σ = softplus(ρ), ε ~ N(0, I_d) and
//! η ~ N(0, I_r), so q(θ|ψ) = N(loc, Σ) with Σ = S (I + V Vᵀ) S, S = diag(σ): the factor
//! W = S V of the usual diag(σ²) + WWᵀ form, stored relative to the scales.
//!
//! Why relative: the factor V is dimensionless, and the Woodbury system M = I_r + VᵀV does not
//! involve σ, so its condition number is 1 + ‖V‖² whatever the scales do. In the absolute form
//! M = I + WᵀD⁻¹W grows like 1/σ², and a scale that the ELBO leaves free (a covariance that
//! several diagonals represent exactly) drifts to 0 under Adam and ruins the density in a few
//! thousand steps (measured on a 2-D correlated Gaussian, rank 1 and 2).
//!
//! Densities: with z = (θ − loc)/σ, b = Vᵀz and M = L Lᵀ (Cholesky),
//! (I + VVᵀ)⁻¹z = z − V M⁻¹ b, zᵀ(I + VVᵀ)⁻¹z = zᵀz − ‖L⁻¹b‖²,
//! log det Σ = 2 Σ_c ln σ_c + 2 Σ_k ln L_kk, ∇_θ log q = −((I + VVᵀ)⁻¹z)/σ.
//! One (draw, component) pair costs O(d·r).

use super::structured;
use super::{Columns, Directions};
use crate::matrix::Matrix;
use crate::model::{sigmoid, softplus};

const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// d of a particle of `p` = d·(2 + r) parameters.
pub(crate) fn dim_of(p: usize, rank: usize) -> usize {
    p / (2 + rank)
}

/// One component's precomputed terms.
struct Component<'a> {
    loc: &'a [f64],
    /// σ (d).
    sigma: Vec<f64>,
    /// V (d×r, row-major).
    v: &'a [f64],
    /// The Cholesky factor L of M = I + VᵀV (r×r, row-major, lower).
    chol: Vec<f64>,
    /// log N's constant: −½(log det Σ + d ln 2π).
    constant: f64,
}

impl<'a> Component<'a> {
    fn new(psi: &'a [f64], d: usize, r: usize) -> Self {
        let loc = &psi[..d];
        let sigma: Vec<f64> = psi[d..2 * d].iter().map(|x| softplus(*x)).collect();
        let v = &psi[2 * d..2 * d + d * r];
        let mut log_det: f64 = sigma.iter().map(|s| 2.0 * s.ln()).sum();
        // M = I + VᵀV (r×r, lower triangle)
        let mut mm = vec![0.0; r * r];
        for c in 0..d {
            let vc = &v[c * r..(c + 1) * r];
            for i in 0..r {
                for j in 0..=i {
                    mm[i * r + j] += vc[i] * vc[j];
                }
            }
        }
        for i in 0..r {
            mm[i * r + i] += 1.0;
        }
        let chol = cholesky(&mm, r);
        for i in 0..r {
            log_det += 2.0 * chol[i * r + i].ln();
        }
        Component {
            loc,
            sigma,
            v,
            chol,
            constant: -0.5 * (log_det + d as f64 * LN_2PI),
        }
    }
}

impl structured::Component for Component<'_> {
    /// z (d) and b (r).
    type Scratch = (Vec<f64>, Vec<f64>);

    fn scratch(&self) -> Self::Scratch {
        let d = self.sigma.len();
        (vec![0.0; d], vec![0.0; self.v.len() / d.max(1)])
    }

    /// log N(θ; loc, Σ), and −Σ⁻¹(θ − loc) into `g` (d).
    fn log_density(&self, theta: &[f64], g: &mut [f64], scratch: &mut Self::Scratch) -> f64 {
        let (z, b) = scratch;
        let r = b.len();
        let mut quad = 0.0;
        b.fill(0.0);
        for (c, ((zc, &t), &l)) in z.iter_mut().zip(theta).zip(self.loc).enumerate() {
            *zc = (t - l) / self.sigma[c];
            quad += *zc * *zc;
            for (bk, &vk) in b.iter_mut().zip(&self.v[c * r..(c + 1) * r]) {
                *bk += vk * *zc;
            }
        }
        // y = L⁻¹b: bᵀM⁻¹b = yᵀy; then b ← M⁻¹b
        forward(&self.chol, r, b);
        quad -= b.iter().map(|y| y * y).sum::<f64>();
        backward(&self.chol, r, b);
        for (c, gc) in g.iter_mut().enumerate() {
            let vb: f64 = self.v[c * r..(c + 1) * r]
                .iter()
                .zip(b.iter())
                .map(|(x, y)| x * y)
                .sum();
            *gc = -(z[c] - vb) / self.sigma[c];
        }
        self.constant - 0.5 * quad
    }
}

/// The lower Cholesky factor of the symmetric positive definite `a` (n×n, row-major; only its
/// lower triangle read). M = I + VᵀV has eigenvalues ≥ 1, so the pivots are ≥ 1 in exact
/// arithmetic; a pivot that rounding drives below 1e-300 is clamped there.
fn cholesky(a: &[f64], n: usize) -> Vec<f64> {
    let mut l = vec![0.0; n * n];
    for j in 0..n {
        let mut s = a[j * n + j];
        for k in 0..j {
            s -= l[j * n + k] * l[j * n + k];
        }
        let pivot = s.max(1e-300).sqrt();
        l[j * n + j] = pivot;
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            l[i * n + j] = s / pivot;
        }
    }
    l
}

/// x ← L⁻¹ x.
fn forward(l: &[f64], n: usize, x: &mut [f64]) {
    for i in 0..n {
        let mut s = x[i];
        for k in 0..i {
            s -= l[i * n + k] * x[k];
        }
        x[i] = s / l[i * n + i];
    }
}

/// x ← L⁻ᵀ x.
fn backward(l: &[f64], n: usize, x: &mut [f64]) {
    for i in (0..n).rev() {
        let mut s = x[i];
        for k in i + 1..n {
            s -= l[k * n + i] * x[k];
        }
        x[i] = s / l[i * n + i];
    }
}

/// Reparameterised draws of one particle: `theta` (S×d) from `eps` (S×(d + r): ε then η).
pub fn sample(psi: &[f64], rank: usize, eps: &[f64], theta: &mut [f64]) {
    let d = dim_of(psi.len(), rank);
    if d == 0 {
        return;
    }
    let (loc, rest) = psi.split_at(d);
    let (rho, v) = rest.split_at(d);
    for (t, e) in theta.chunks_exact_mut(d).zip(eps.chunks_exact(d + rank)) {
        let (eps, eta) = e.split_at(d);
        for c in 0..d {
            let vc = &v[c * rank..(c + 1) * rank];
            let ve: f64 = vc.iter().zip(eta).map(|(x, y)| x * y).sum();
            t[c] = loc[c] + softplus(rho[c]) * (eps[c] + ve);
        }
    }
}

/// log q_mix and ∇_θ log q_mix of K draws θ (K×d) under the m low-rank Normals of `particles`
/// (m×d(2 + r)), the particles held constant. Rows run in parallel chunks.
pub fn mixture_log_density(
    particles: &Matrix,
    rank: usize,
    theta: &[f64],
    logq: &mut [f64],
    grad: &mut [f64],
) {
    let d = dim_of(particles.cols(), rank);
    let comps: Vec<Component<'_>> = (0..particles.rows())
        .map(|j| Component::new(particles.row(j), d, rank))
        .collect();
    structured::mixture_log_density(&comps, d, theta, logq, grad);
}

/// The columns `out` (c0 .. c0 + w) of the pull-back of the directions `dirs` to one particle,
/// with `dirs.eps` its S noise rows (d + r each: ε, η): ∂/∂loc = mean δ,
/// ∂/∂ρ_c = mean(δ_c (ε_c + v_c·η))·sigmoid(ρ_c), ∂/∂V_ck = mean(δ_c η_k)·σ_c (into `fac_out`,
/// w·r values: rows c0 .. c0 + w of V).
pub(crate) fn pullback_cols(
    psi: &[f64],
    rank: usize,
    dirs: &Directions,
    out: Columns,
    fac_out: &mut [f64],
) {
    let (eps, grad, gradq, tau) = (dirs.eps, dirs.grad, dirs.gradq, dirs.tau);
    let (c0, loc_out, rho_out) = (out.c0, out.loc, out.rho);
    let d = dim_of(psi.len(), rank);
    let w = loc_out.len();
    let nd = d + rank;
    let s = grad.len() / d.max(1);
    let v = &psi[2 * d..];
    loc_out.fill(0.0);
    rho_out.fill(0.0);
    fac_out.fill(0.0);
    for row in 0..s {
        let e = &eps[row * nd..(row + 1) * nd];
        let eta = &e[d..];
        for j in 0..w {
            let c = c0 + j;
            let delta = tau * grad[row * d + c] - gradq[row * d + c];
            let vc = &v[c * rank..(c + 1) * rank];
            let ve: f64 = vc.iter().zip(eta).map(|(x, y)| x * y).sum();
            loc_out[j] += delta;
            rho_out[j] += delta * (e[c] + ve);
            for (f, h) in fac_out[j * rank..(j + 1) * rank].iter_mut().zip(eta) {
                *f += delta * h;
            }
        }
    }
    let n = s.max(1) as f64;
    for j in 0..w {
        let rho = psi[d + c0 + j];
        loc_out[j] /= n;
        rho_out[j] *= sigmoid(rho) / n;
        let sc = softplus(rho) / n;
        for f in &mut fac_out[j * rank..(j + 1) * rank] {
            *f *= sc;
        }
    }
}

/// The whole pull-back (length d(2 + r)) of stored directions `delta` (S×d).
pub fn pullback(psi: &[f64], rank: usize, eps: &[f64], delta: &[f64], out: &mut [f64]) {
    let d = dim_of(psi.len(), rank);
    let zeros = vec![0.0; delta.len()];
    let (loc, rest) = out.split_at_mut(d);
    let (rho, fac) = rest.split_at_mut(d);
    let dirs = Directions::stored(eps, delta, &zeros);
    pullback_cols(psi, rank, &dirs, Columns { c0: 0, loc, rho }, fac);
}

/// The entropy of one particle's guide: ½ log det Σ + d/2·ln(2πe).
pub fn entropy(psi: &[f64], rank: usize) -> f64 {
    let d = dim_of(psi.len(), rank);
    let comp = Component::new(psi, d, rank);
    // constant = −½(log det Σ + d ln 2π)
    -comp.constant + 0.5 * d as f64
}

/// Adds ∇_ψ of the entropy ½ log det Σ = Σ ln σ + ½ ln det(I + VᵀV) to `out`:
/// ∂/∂ρ_c = sigmoid(ρ_c)/σ_c and ∂/∂V = V M⁻¹.
pub fn add_entropy_grad(psi: &[f64], rank: usize, out: &mut [f64]) {
    let d = dim_of(psi.len(), rank);
    let comp = Component::new(psi, d, rank);
    let mut x = vec![0.0; rank];
    for c in 0..d {
        let rho = psi[d + c];
        out[d + c] += sigmoid(rho) / comp.sigma[c];
        x.copy_from_slice(&comp.v[c * rank..(c + 1) * rank]);
        forward(&comp.chol, rank, &mut x);
        backward(&comp.chol, rank, &mut x);
        for (o, v) in out[2 * d + c * rank..2 * d + (c + 1) * rank]
            .iter_mut()
            .zip(&x)
        {
            *o += v;
        }
    }
}

/// The marginal sd √(σ_c² (1 + ‖v_c‖²)) of coordinate `c` of one particle's guide.
pub(crate) fn marginal_sd(psi: &[f64], rank: usize, c: usize) -> f64 {
    let d = dim_of(psi.len(), rank);
    let v = &psi[2 * d + c * rank..2 * d + (c + 1) * rank];
    softplus(psi[d + c]) * (1.0 + v.iter().map(|x| x * x).sum::<f64>()).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A particle of d = 3, r = 2 with non-trivial factor.
    fn particle() -> Vec<f64> {
        vec![
            0.3, -0.5, 1.2, // loc
            -0.4, 0.2, -1.0, // ρ
            0.5, -0.3, 0.1, 0.8, -0.6, 0.2, // W (3×2)
        ]
    }

    /// Σ = S(I + VVᵀ)S written out, its inverse and log-det by Gaussian elimination.
    fn dense(psi: &[f64], d: usize, r: usize) -> (Vec<f64>, Vec<f64>, f64) {
        let mut s = vec![0.0; d * d];
        for i in 0..d {
            for j in 0..d {
                let vv: f64 = (0..r)
                    .map(|k| psi[2 * d + i * r + k] * psi[2 * d + j * r + k])
                    .sum();
                let id = if i == j { 1.0 } else { 0.0 };
                s[i * d + j] = softplus(psi[d + i]) * softplus(psi[d + j]) * (id + vv);
            }
        }
        // inverse and determinant by Gauss–Jordan (small, well conditioned)
        let mut a = s.clone();
        let mut inv = vec![0.0; d * d];
        for i in 0..d {
            inv[i * d + i] = 1.0;
        }
        let mut det = 1.0;
        for col in 0..d {
            let p = a[col * d + col];
            det *= p;
            for j in 0..d {
                a[col * d + j] /= p;
                inv[col * d + j] /= p;
            }
            for row in 0..d {
                if row != col {
                    let f = a[row * d + col];
                    for j in 0..d {
                        a[row * d + j] -= f * a[col * d + j];
                        inv[row * d + j] -= f * inv[col * d + j];
                    }
                }
            }
        }
        (s, inv, det.ln())
    }

    #[test]
    fn the_density_and_its_gradient_match_the_dense_formula() {
        let (d, r) = (3, 2);
        let psi = particle();
        let (_, inv, log_det) = dense(&psi, d, r);
        let theta = [0.9, 0.1, -0.7];
        let parts = Matrix::from_rows(std::slice::from_ref(&psi)).unwrap();
        let (mut lq, mut g) = (vec![0.0], vec![0.0; d]);
        mixture_log_density(&parts, r, &theta, &mut lq, &mut g);
        let u: Vec<f64> = (0..d).map(|c| theta[c] - psi[c]).collect();
        let pu: Vec<f64> = (0..d)
            .map(|i| (0..d).map(|j| inv[i * d + j] * u[j]).sum())
            .collect();
        let quad: f64 = u.iter().zip(&pu).map(|(a, b)| a * b).sum();
        let want = -0.5 * (quad + log_det + d as f64 * LN_2PI);
        assert!((lq[0] - want).abs() < 1e-12, "{} vs {want}", lq[0]);
        for c in 0..d {
            assert!((g[c] + pu[c]).abs() < 1e-12, "c={c}");
        }
        let h = 0.5 * log_det + 0.5 * d as f64 * (LN_2PI + 1.0);
        assert!((entropy(&psi, r) - h).abs() < 1e-12);
    }

    #[test]
    fn the_entropy_gradient_matches_finite_differences() {
        let r = 2;
        let psi = particle();
        let mut g = vec![0.0; psi.len()];
        add_entropy_grad(&psi, r, &mut g);
        for i in 0..psi.len() {
            let h = 1e-6;
            let (mut up, mut dn) = (psi.clone(), psi.clone());
            up[i] += h;
            dn[i] -= h;
            let fd = (entropy(&up, r) - entropy(&dn, r)) / (2.0 * h);
            assert!((fd - g[i]).abs() < 1e-7, "param {i}: {fd} vs {}", g[i]);
        }
    }

    #[test]
    fn the_pullback_is_the_chain_rule_of_the_draws() {
        let r = 2;
        structured::assert_pullback_is_the_chain_rule(
            &particle(),
            3,
            3 + r,
            |p, e, t| sample(p, r, e, t),
            |p, e, dl, o| pullback(p, r, e, dl, o),
        );
    }

    #[test]
    fn a_mixture_is_the_log_mean_of_its_components() {
        let r = 2;
        let a = particle();
        let mut b = particle();
        b[0] = -1.0;
        b[7] = 0.9;
        let parts = Matrix::from_rows(&[a.clone(), b.clone()]).unwrap();
        let theta = [0.2, -0.4, 0.5];
        let one = |p: &Vec<f64>| {
            let (mut lq, mut g) = (vec![0.0], vec![0.0; 3]);
            mixture_log_density(
                &Matrix::from_rows(std::slice::from_ref(p)).unwrap(),
                r,
                &theta,
                &mut lq,
                &mut g,
            );
            (lq[0], g)
        };
        let ((la, ga), (lb, gb)) = (one(&a), one(&b));
        let (mut lq, mut g) = (vec![0.0], vec![0.0; 3]);
        mixture_log_density(&parts, r, &theta, &mut lq, &mut g);
        let want = (0.5 * (la.exp() + lb.exp())).ln();
        assert!((lq[0] - want).abs() < 1e-12);
        let (wa, wb) = (
            la.exp() / (la.exp() + lb.exp()),
            lb.exp() / (la.exp() + lb.exp()),
        );
        for c in 0..3 {
            assert!((g[c] - (wa * ga[c] + wb * gb[c])).abs() < 1e-12);
        }
    }
}
