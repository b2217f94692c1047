//! What the structured Normal guides ([`super::lowrank`], [`super::fullrank`]) share: the
//! mixture density of K draws from the per-component densities, and (in tests) the check that
//! a pull-back is the chain rule of the draws.

use rayon::prelude::*;

/// Draws per parallel task of the mixture density.
const CHUNK_DRAWS: usize = 16;

/// The density of one component at one draw: `(θ, ∇ out, scratch) → log N(θ)`, writing
/// ∇_θ log N(θ) into the second argument; the scratch is a buffer of the component's own
/// (allocated once per task by `scratch`).
pub(crate) trait Component: Sync {
    /// Per-task scratch buffer.
    type Scratch;
    /// A fresh scratch buffer.
    fn scratch(&self) -> Self::Scratch;
    /// log N(θ), and its θ-gradient into `g` (d).
    fn log_density(&self, theta: &[f64], g: &mut [f64], scratch: &mut Self::Scratch) -> f64;
}

/// `logq[k] = log((1/m) Σ_j N_j(θ_k))` and `grad[k] = ∇_θ log q_mix(θ_k)` = the
/// responsibility-weighted component gradients, for K draws θ (K×d) and the m `comps`; rows
/// in parallel chunks (each row's values depend on that row alone). With d = 0 every logq is
/// −ln m.
pub(crate) fn mixture_log_density<C: Component>(
    comps: &[C],
    d: usize,
    theta: &[f64],
    logq: &mut [f64],
    grad: &mut [f64],
) {
    let m = comps.len();
    let ln_m = (m.max(1) as f64).ln();
    if d == 0 || m == 0 {
        logq.fill(-ln_m);
        return;
    }
    theta
        .par_chunks(CHUNK_DRAWS * d)
        .zip(logq.par_chunks_mut(CHUNK_DRAWS))
        .zip(grad.par_chunks_mut(CHUNK_DRAWS * d))
        .for_each(|((th, lq), g)| {
            let mut scratch = comps[0].scratch();
            let mut gj = vec![0.0; m * d];
            let mut lj = vec![0.0; m];
            for ((t, l), gr) in th
                .chunks_exact(d)
                .zip(lq.iter_mut())
                .zip(g.chunks_exact_mut(d))
            {
                for (j, comp) in comps.iter().enumerate() {
                    lj[j] = comp.log_density(t, &mut gj[j * d..(j + 1) * d], &mut scratch);
                }
                let mx = lj.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                let mut total = 0.0;
                for v in lj.iter_mut() {
                    *v = (*v - mx).exp();
                    total += *v;
                }
                *l = mx + total.ln() - ln_m;
                gr.fill(0.0);
                for (j, wj) in lj.iter().enumerate() {
                    let wj = wj / total;
                    for (o, v) in gr.iter_mut().zip(&gj[j * d..(j + 1) * d]) {
                        *o += wj * v;
                    }
                }
            }
        });
}

/// Test helper: checks that `pullback(ψ, ε, δ)` is the ψ-gradient of
/// f(ψ) = (1/S) Σ_s v·θ_s(ψ, ε) with θ = `sample(ψ, ε)` (δ_s = v for every draw), by
/// central differences.
#[cfg(test)]
pub(crate) fn assert_pullback_is_the_chain_rule(
    psi: &[f64],
    d: usize,
    noise_dim: usize,
    sample: impl Fn(&[f64], &[f64], &mut [f64]),
    pullback: impl Fn(&[f64], &[f64], &[f64], &mut [f64]),
) {
    let s = 4;
    let eps: Vec<f64> = (0..s * noise_dim)
        .map(|i| ((i as f64) * 0.9).sin())
        .collect();
    let v: Vec<f64> = (0..d).map(|c| 0.7 - 0.6 * c as f64).collect();
    let delta: Vec<f64> = (0..s).flat_map(|_| v.clone()).collect();
    let mut out = vec![0.0; psi.len()];
    pullback(psi, &eps, &delta, &mut out);
    let f = |p: &[f64]| {
        let mut th = vec![0.0; s * d];
        sample(p, &eps, &mut th);
        th.chunks(d)
            .map(|t| t.iter().zip(&v).map(|(a, b)| a * b).sum::<f64>())
            .sum::<f64>()
            / s as f64
    };
    for i in 0..psi.len() {
        let h = 1e-6;
        let (mut up, mut dn) = (psi.to_vec(), psi.to_vec());
        up[i] += h;
        dn[i] -= h;
        let fd = (f(&up) - f(&dn)) / (2.0 * h);
        assert!((fd - out[i]).abs() < 1e-8, "param {i}: {fd} vs {}", out[i]);
    }
}
