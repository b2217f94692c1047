//! The attractive-force estimator of spec §2.2: per-particle gradients ĝ_i of the component
//! ELBO with reparameterised draws and a stop-gradient mixture denominator.

use crate::data::Batch;
use crate::error::{Error, Result};
use crate::guide::GuideSettings;
use crate::matrix::Matrix;
use crate::model::LogDensity;

/// Reusable buffers for one step (sized on first use).
#[derive(Default, Debug)]
pub(crate) struct Scratch {
    theta: Vec<f64>,
    logp: Vec<f64>,
    grad: Vec<f64>,
    logq: Vec<f64>,
    gradq: Vec<f64>,
}

/// The ELBO gradients of `groups` independent sets of draws.
///
/// `eps` holds `groups·m·S` rows of noise (row (g·m + i)·S + s is draw s of particle i in group
/// g); `batch` covers the same `groups·m·S` draws. Returns one m×p matrix of ĝ per group and the
/// mixture-ELBO estimate mean(τ·log p − log q_mix) over all draws.
///
/// ĝ_i = (1/S) Σ_s (∂θ_s/∂ψ_i)ᵀ [τ ∇log p(θ_s) − ∇log q_mix(θ_s)], the mixture's parameters held
/// constant; E[ĝ_i] = m·∇_{ψ_i} L (spec §2.2).
#[allow(clippy::too_many_arguments)]
pub(crate) fn elbo_gradients<M: LogDensity + ?Sized>(
    model: &M,
    guide: &GuideSettings,
    particles: &Matrix,
    eps: &[f64],
    batch: &Batch,
    tau: f64,
    draws_per_particle: usize,
    groups: usize,
    scratch: &mut Scratch,
) -> Result<(Vec<Matrix>, f64)> {
    let m = particles.rows();
    let p = particles.cols();
    let d = model.dim();
    let s = draws_per_particle;
    let k = groups * m * s;
    let nd = guide.noise_dim(d);
    let sc = scratch;
    sc.theta.resize(k * d, 0.0);
    sc.logp.resize(k, 0.0);
    sc.grad.resize(k * d, 0.0);
    sc.logq.resize(k, 0.0);
    sc.gradq.resize(k * d, 0.0);
    for g in 0..groups {
        for i in 0..m {
            let blk = (g * m + i) * s;
            guide.sample(
                particles.row(i),
                &eps[blk * nd..(blk + s) * nd],
                &mut sc.theta[blk * d..(blk + s) * d],
            );
        }
    }
    model.log_density_and_grad(&sc.theta, batch, &mut sc.logp, &mut sc.grad)?;
    if let Some(bad) = sc.logp.iter().position(|v| !v.is_finite()) {
        return Err(Error::non_finite(format!("model log density of draw {bad}")));
    }
    if sc.grad.iter().any(|v| !v.is_finite()) {
        return Err(Error::non_finite("model gradient"));
    }
    guide.mixture_log_density(particles, &sc.theta, &mut sc.logq, &mut sc.gradq);
    let mut elbo = 0.0;
    for (lp, lq) in sc.logp.iter().zip(&sc.logq) {
        elbo += tau * lp - lq;
    }
    elbo /= k as f64;
    for (g, gq) in sc.grad.iter_mut().zip(&sc.gradq) {
        *g = tau * *g - gq;
    }
    let mut out = Vec::with_capacity(groups);
    for g in 0..groups {
        let mut ghat = Matrix::zeros(m, p);
        for i in 0..m {
            let blk = (g * m + i) * s;
            guide.pullback(
                particles.row(i),
                &eps[blk * nd..(blk + s) * nd],
                &sc.grad[blk * d..(blk + s) * d],
                ghat.row_mut(i),
            );
        }
        out.push(ghat);
    }
    Ok((out, elbo))
}
