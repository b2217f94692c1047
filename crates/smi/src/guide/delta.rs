//! The point-mass guide (AutoDelta): ψ = θ.

use super::Directions;

/// Every draw is the particle itself: each row of `theta` (S×d) is set to `psi`.
pub fn sample(psi: &[f64], theta: &mut [f64]) {
    for t in theta.chunks_exact_mut(psi.len()) {
        t.copy_from_slice(psi);
    }
}

/// out = mean_s δ_s.
pub fn pullback(delta: &[f64], out: &mut [f64]) {
    let d = out.len();
    let s = (delta.len() / d).max(1) as f64;
    out.fill(0.0);
    for dl in delta.chunks_exact(d) {
        out.iter_mut().zip(dl).for_each(|(o, v)| *o += v);
    }
    out.iter_mut().for_each(|o| *o /= s);
}

/// Columns `c0 .. c0 + out.len()` of [`pullback`] for the directions `dirs` (d wide), formed
/// on the fly; bit-identical to `pullback` on the stored δ.
pub(crate) fn pullback_cols(d: usize, dirs: &Directions, c0: usize, out: &mut [f64]) {
    let Directions {
        grad, gradq, tau, ..
    } = *dirs;
    let w = out.len();
    let s = (grad.len() / d.max(1)).max(1) as f64;
    out.fill(0.0);
    for (g, gq) in grad.chunks_exact(d).zip(gradq.chunks_exact(d)) {
        for ((o, &gv), &qv) in out.iter_mut().zip(&g[c0..c0 + w]).zip(&gq[c0..c0 + w]) {
            *o += tau * gv - qv;
        }
    }
    out.iter_mut().for_each(|o| *o /= s);
}
