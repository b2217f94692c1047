//! The step's draws, model, mixture density and pull-back fused per block of draws, for the
//! Normal guide without shared parameters (docs/algorithms.md §2.2): one (group, particle) block
//! of S draws per parallel task, its draws in sub-blocks of a few rows, each taken through
//! θ = loc + σ⊙ε, the model, the mixture density and the pull-back while its rows are in cache.
//!
//! Every value is computed by the same operations as the unfused passes of
//! [`super::force::elbo_gradients`]: each θ and each model and mixture row alike, and each
//! column of ĝ sums its S draws in order. The mixture's products see sub-blocks of at least two
//! rows (never the one-row path of the products).

use std::cell::RefCell;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::guide::normal;
use crate::matrix::{try_resize, Matrix};
use crate::model::{Batch, LogDensity};

use super::force::ElboGradients;

/// Bytes of a sub-block's rows of ε, θ, ∇log p and ∇log q that should stay in cache together
/// (well inside a 2 MiB L2; 9 rows at boston's d = 3 302, one at MNIST's d = 79 510).
const SUB_BLOCK_BYTES: usize = 1 << 20;

thread_local! {
    /// A thread's sub-block buffers of θ, ∇log p and ∇log q (a few rows each), kept between
    /// blocks and steps: every row is written before it is read, so they are never zeroed.
    static BLOCK_SCRATCH: RefCell<[Vec<f64>; 3]> = const {
        RefCell::new([Vec::new(), Vec::new(), Vec::new()])
    };
}

/// Values below which the blocks stay on the calling thread.
const MIN_PAR_VALUES: usize = 1 << 15;

/// [`super::force::elbo_gradients`] for the Normal guide without shared parameters and with
/// S ≥ 2 draws per particle; `eps` holds the K×d noise rows, `logp` and `logq` (K) receive
/// the model's and the mixture's log densities. θ and the two gradients of a sub-block live in
/// buffers of the task's own (a few rows), never in K×d arrays.
#[allow(clippy::too_many_arguments)]
pub(crate) fn elbo_gradients_normal<M: LogDensity + ?Sized>(
    model: &M,
    particles: &Matrix,
    eps: &[f64],
    batch: &Batch,
    tau: f64,
    s: usize,
    groups: usize,
    logp: &mut [f64],
    logq: &mut [f64],
) -> Result<ElboGradients> {
    let m = particles.rows();
    let d = model.dim();
    let p = particles.cols();
    let k = groups * m * s;
    let coeffs = normal::MixtureCoeffs::new(particles);
    let sigma: Vec<Vec<f64>> = (0..m)
        .into_par_iter()
        .with_min_len(MIN_PAR_VALUES.div_ceil(16 * d.max(1)))
        .map(|i| normal::scales(particles.row(i)))
        .collect();
    // rows per sub-block, at least 2; a last sub-block of one row joins the one before
    let sub = (SUB_BLOCK_BYTES / (32 * d.max(1))).clamp(2, s.max(2));
    let mut all = Matrix::try_zeros(groups * m, p)?;
    let max_rows = s.min(2 * sub - 1);
    all.as_mut_slice()
        .par_chunks_mut(p)
        .zip(logp[..k].par_chunks_mut(s))
        .zip(logq[..k].par_chunks_mut(s))
        .with_min_len(MIN_PAR_VALUES.div_ceil(s * d.max(1)))
        .enumerate()
        .try_for_each(|(blk, ((out, lp), lq))| {
            let i = blk % m;
            let (loc, rho) = particles.row(i).split_at(d);
            let (dloc, drho) = out.split_at_mut(d);
            let e_blk = &eps[blk * s * d..(blk + 1) * s * d];
            // the thread's buffers, taken (not borrowed: the model's own parallel work may run
            // another block on this thread meanwhile, which then allocates its own) and put back
            let [mut th, mut gr, mut gq] =
                BLOCK_SCRATCH.with(|c| std::mem::take(&mut *c.borrow_mut()));
            try_resize(&mut th, max_rows * d, "a block's draws")?;
            try_resize(&mut gr, max_rows * d, "a block's gradients")?;
            try_resize(&mut gq, max_rows * d, "a block's mixture gradients")?;
            let mut r0 = 0;
            while r0 < s {
                let r1 = if s - r0 < 2 * sub { s } else { r0 + sub };
                let n = (r1 - r0) * d;
                let e = &e_blk[r0 * d..r1 * d];
                let (th, g, q) = (&mut th[..n], &mut gr[..n], &mut gq[..n]);
                for (t, e) in th.chunks_exact_mut(d).zip(e.chunks_exact(d)) {
                    normal::draw_row(loc, &sigma[i], e, t);
                }
                let sub_batch = batch.draws(blk * s + r0, r1 - r0);
                model.log_density_and_grad(th, &sub_batch, &mut lp[r0..r1], g)?;
                coeffs.rows(th, &mut lq[r0..r1], q);
                normal::accumulate_directions(d, e, g, q, tau, 0, dloc, drho);
                r0 = r1;
            }
            normal::finish_pullback(rho, s as f64, dloc, drho);
            BLOCK_SCRATCH.with(|c| *c.borrow_mut() = [th, gr, gq]);
            Ok::<(), Error>(())
        })?;
    if let Some(bad) = logp[..k].iter().position(|v| !v.is_finite()) {
        return Err(Error::non_finite(format!(
            "model log density of draw {bad}"
        )));
    }
    let mut elbo = 0.0;
    for (lp, lq) in logp[..k].iter().zip(logq[..k].iter()) {
        elbo += tau * lp - lq;
    }
    elbo /= k as f64;
    let ghats = if groups == 1 {
        vec![all]
    } else {
        let rows = all.as_slice();
        (0..groups)
            .map(|g| Matrix::from_vec(m, p, rows[g * m * p..(g + 1) * m * p].to_vec()))
            .collect::<Result<Vec<_>>>()?
    };
    Ok(ElboGradients {
        ghats,
        elbo,
        grad_eta: Vec::new(),
    })
}
