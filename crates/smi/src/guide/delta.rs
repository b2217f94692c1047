//! The point-mass guide (AutoDelta): ψ = θ.

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
