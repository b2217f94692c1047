//! The step's draws, model, mixture density and pull-back fused per chunk of draws, for the
//! Normal guide without shared parameters (docs/algorithms.md §2.2): one parallel task per
//! (group, particle, chunk of draws, [`normal::draw_chunks`]). A task takes its draws through ε
//! (drawn there, from the step's noise key), θ = loc + σ⊙ε and the model in sub-blocks of a few
//! rows, keeping ε, θ and ∇log p of the whole chunk; then the mixture density and the pull-back
//! run once over all the chunk's rows, block of columns by block of columns
//! ([`MixtureCoeffs::rows_pullback`]: the coefficients are read once per chunk, not once per
//! sub-block, and ∇log q is never stored). With the noise drawn from the key, d in the
//! mixture's blocked kernel (d ≥ 1 024) and a chunk too long to stay in cache
//! ([`DRAWN_MIN_BYTES`]), ε is kept in `f32`, as drawn, and θ only for the model call that
//! needs it: the mixture's passes form θ again, block by block, with the same
//! operations ([`MixtureCoeffs::rows_pullback_drawn`]), so a chunk streams 12 bytes per value
//! through them instead of 24. Each chunk sums its draws' directions into a partial
//! ĝ of its own; the partials are added in chunk order.
//!
//! Every value is computed by the same operations as the unfused passes of
//! [`super::force::elbo_gradients`]: each ε, θ and each model and mixture row alike (a mixture
//! row's values depend on that row alone), and each column of ĝ sums its chunks' partial sums
//! in order (see [`normal::draw_chunks`]). The chunk size does not depend on the threads, so
//! neither does the result.

use std::cell::RefCell;
use std::ops::Range;

use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::guide::mixture::{MixtureCoeffs, PullbackSums};
use crate::guide::normal;
use crate::matrix::{try_resize, Matrix};
use crate::model::LogDensity;

use super::force::{Draws, ElboGradients, Noise};

/// Sets the rows of the model's calls: a quarter of this many bytes per call (9 rows at
/// boston's d = 3 302, two, the least, at MNIST's d = 79 510; the sizes of the sub-blocks that
/// went through the whole pipeline before the mixture took whole chunks).
const SUB_BLOCK_BYTES: usize = 1 << 20;

/// A task's buffers: ε, θ and ∇log p of the chunk's rows, or with the noise drawn from a key
/// at d of the mixture's blocked kernel, ε in `f32` for the chunk and θ for one model call only
/// (the mixture's passes form θ again where they read it).
#[derive(Default)]
struct Buffers {
    /// ε (f64, noise given by the caller or d below the blocked kernel's).
    eps: Vec<f64>,
    /// ε (f32, as drawn).
    eps32: Vec<f32>,
    /// θ.
    theta: Vec<f64>,
    /// ∇log p.
    grad: Vec<f64>,
}

/// Buffer sets a thread keeps at most (a task waiting on the model's parallel work may run
/// other tasks on its thread meanwhile, each of which takes a set of its own).
const KEPT_BUFFERS: usize = 4;

/// Bytes of kept buffer sets per thread: fewer sets are kept when a chunk's rows are long
/// (MNIST's d = 79 510: a set of 8 rows is 15 MB, two are kept; boston's: 0.7 MB, four).
const KEPT_BYTES: usize = 40 << 20;

thread_local! {
    /// A thread's chunk buffers, kept between tasks and steps: every row is written before
    /// it is read, so they are never zeroed once allocated.
    static BLOCK_SCRATCH: RefCell<Vec<Buffers>> = const { RefCell::new(Vec::new()) };
}

/// Bytes of a chunk's θ and ε (in f64) from which θ is formed again in the mixture's passes
/// instead of stored (see the module's doc): about half of a core's L2 here (2 MiB), beyond
/// which the chunk's rows stream from L3. Below it (boston's chunks of 9 draws of d = 3 302:
/// 0.45 MB) the rows stay in cache and forming θ again would only add work.
const DRAWN_MIN_BYTES: usize = 1 << 20;

/// Values below which the tasks stay on the calling thread.
const MIN_PAR_VALUES: usize = 1 << 15;

/// One task: block `blk` (group·m + particle), its draws `rows` (within the block), their log
/// densities and mixture densities, and the chunk's partial ĝ (p).
type Task<'a> = (
    usize,
    Range<usize>,
    &'a mut [f64],
    &'a mut [f64],
    &'a mut [f64],
);

/// The fused step's buffers, kept between steps (sized on first use; every value is written
/// before it is read, ĝ's zeroed each step): no m×d-sized allocation per step.
#[derive(Default, Debug)]
pub(crate) struct Scratch {
    /// The chunks' partial ĝ (groups·m·chunks·p).
    partials: Vec<f64>,
    /// The mixture's coefficients.
    coeffs: MixtureCoeffs,
    /// σ of every particle (m×d).
    sigma: Vec<f64>,
    /// dσ/dρ = sigmoid(ρ) of every particle (m×d).
    slope: Vec<f64>,
    /// ĝ of every block (groups·m×p), lent to the step's result with one group and given back
    /// by [`Scratch::keep_ghat`].
    ghat: Vec<f64>,
}

impl Scratch {
    /// Computes the mixture's coefficients and σ (m×d) of `particles` (m×2d) ahead of the step
    /// that uses them, which then skips that work: so it can run beside the step's batch draw.
    /// The coefficients are those of `denominator` when given (the same shape; the
    /// double-transform defect, docs/algorithms.md §2.9).
    ///
    /// # Errors
    /// [`Error::Shape`] when a buffer cannot be allocated.
    pub(crate) fn prepare(
        &mut self,
        particles: &Matrix,
        denominator: Option<&Matrix>,
    ) -> Result<()> {
        let (m, d) = (particles.rows(), particles.cols() / 2);
        try_resize(&mut self.sigma, m * d, "the particles' m×d scales")?;
        try_resize(&mut self.slope, m * d, "the particles' m×d scale slopes")?;
        self.sigma
            .par_chunks_mut(d.max(1))
            .zip(self.slope.par_chunks_mut(d.max(1)))
            .with_min_len(MIN_PAR_VALUES.div_ceil(16 * d.max(1)))
            .enumerate()
            .for_each(|(i, (si, gi))| normal::scales_and_slopes_into(particles.row(i), si, gi));
        match denominator {
            Some(q) => self.coeffs.set(q, None),
            None => self.coeffs.set(particles, Some(&self.sigma[..m * d])),
        }
    }

    /// Takes back the buffer of a step's ĝ (one group: `ghats[0]`) once the step is done with it.
    pub(crate) fn keep_ghat(&mut self, mut ghats: Vec<Matrix>) {
        if ghats.len() == 1 {
            if let Some(g) = ghats.pop() {
                self.ghat = g.into_vec();
            }
        }
    }
}

/// Makes `buf` at least `len` long (the values already there kept; new ones zero).
fn grow<T: Clone + Default>(buf: &mut Vec<T>, len: usize, what: &str) -> Result<()> {
    if buf.len() < len {
        try_resize(buf, len, what)?;
    }
    Ok(())
}

/// [`super::force::elbo_gradients`] for the Normal guide without shared parameters and with
/// S ≥ 2 draws per particle; `noise` gives the K×d noise rows (drawn per sub-block from the
/// key), `logp` and `logq` (K) receive the model's and the mixture's log densities, `scratch`
/// holds the step's buffers (the chunks' partial ĝ, groups·m·chunks·p values, the mixture's
/// coefficients, σ, its slopes and ĝ; resized here), with the coefficients, σ and the slopes
/// of these `particles` already in it when `prepared` ([`Scratch::prepare`]). ε, θ and ∇log p of a chunk live in buffers of the
/// task's own, never in K×d arrays; ∇log q is not stored at all.
pub(crate) fn elbo_gradients_normal<M: LogDensity + ?Sized>(
    model: &M,
    draws: &Draws,
    logp: &mut [f64],
    logq: &mut [f64],
    scratch: &mut Scratch,
    prepared: bool,
) -> Result<ElboGradients> {
    let (particles, s, groups) = (draws.particles, draws.per_particle, draws.groups);
    let (noise, batch, tau) = (draws.noise, draws.batch, draws.tau);
    let m = particles.rows();
    let d = model.dim();
    let p = particles.cols();
    let k = groups * m * s;
    if !prepared {
        scratch.prepare(particles, draws.denominator)?;
    }
    let Scratch {
        partials,
        coeffs,
        sigma,
        slope,
        ghat,
        ..
    } = scratch;
    let slope = &slope[..m * d];
    let (coeffs, sigma) = (&*coeffs, &sigma[..m * d]);
    // rows per model call, at least 2; a last sub-block of one row joins the one before
    let sub = (SUB_BLOCK_BYTES / (32 * d.max(1))).max(2);
    let chunks: Vec<Range<usize>> = normal::draw_chunks(s, d).collect();
    let longest = chunks.iter().map(|r| r.len()).max().unwrap_or(0);
    // noise drawn from a key at the blocked kernel's d, chunks beyond the cache: ε kept in f32
    // and θ formed again by the mixture's passes (bit for bit the stored θ), so a chunk's rows
    // stream 12 bytes per value through the passes instead of 24 (θ and ε in f64, ∇log p),
    // and θ lives in a buffer of one model call, in cache
    let drawn = matches!(noise, Noise::Key(_))
        && coeffs.is_blocked()
        && longest * d * 16 >= DRAWN_MIN_BYTES;
    let nc = chunks.len();
    let kept_sets = (KEPT_BYTES / (24 * longest * d).max(1)).clamp(1, KEPT_BUFFERS);
    try_resize(
        partials,
        groups * m * nc * p,
        "the chunks' partial gradients",
    )?;
    let mut tasks: Vec<Task<'_>> = Vec::with_capacity(groups * m * nc);
    let (mut lp_rest, mut lq_rest) = (&mut logp[..k], &mut logq[..k]);
    let mut pt_rest = &mut partials[..groups * m * nc * p];
    for blk in 0..groups * m {
        for r in &chunks {
            let (lp, lp_next) = std::mem::take(&mut lp_rest).split_at_mut(r.len());
            let (lq, lq_next) = std::mem::take(&mut lq_rest).split_at_mut(r.len());
            let (pt, pt_next) = std::mem::take(&mut pt_rest).split_at_mut(p);
            (lp_rest, lq_rest, pt_rest) = (lp_next, lq_next, pt_next);
            tasks.push((blk, r.clone(), lp, lq, pt));
        }
    }
    tasks
        .into_par_iter()
        .with_min_len(MIN_PAR_VALUES.div_ceil(longest.max(1) * d.max(1)))
        .try_for_each(|(blk, rows, lp, lq, pt)| {
            let i = blk % m;
            let loc = &particles.row(i)[..d];
            // the chunk's partial sums: written by its first row's pull-back (`fresh`), not
            // zeroed first (MNIST: 1.3 MB a chunk; memset 1.6–1.7 % → 0.6 % of the step)
            let (dloc, drho) = pt.split_at_mut(d);
            // a set of the thread's buffers, taken (not borrowed: the model's own parallel work
            // may run another task on this thread meanwhile, which takes another) and put back
            let mut bufs = BLOCK_SCRATCH.with(|c| c.borrow_mut().pop().unwrap_or_default());
            let all = rows.len() * d;
            // sized for the longest chunk, never shrunk: a shorter chunk uses a prefix, so a
            // set is not zero-filled again when it passes from a short chunk to a long one
            let most = longest * d;
            let key = match noise {
                Noise::Key(key) if drawn => Some(key),
                _ => None,
            };
            match (key, noise) {
                (Some(_), _) => grow(&mut bufs.eps32, most, "a chunk's noise")?,
                (None, Noise::Key(_)) => grow(&mut bufs.eps, most, "a chunk's noise")?,
                (None, Noise::Given(_)) => {}
            }
            // θ of the whole chunk, or (drawn) of the longest model call
            let theta_rows = if drawn { longest.min(2 * sub) } else { longest };
            grow(&mut bufs.theta, theta_rows * d, "a chunk's draws")?;
            grow(&mut bufs.grad, most, "a chunk's gradients")?;
            let first = blk * s + rows.start;
            let sig = &sigma[i * d..(i + 1) * d];
            let mut r0 = 0;
            while r0 < rows.len() {
                let r1 = if rows.len() - r0 < 2 * sub {
                    rows.len()
                } else {
                    r0 + sub
                };
                let span = r0 * d..r1 * d;
                let g = &mut bufs.grad[span.clone()];
                let t = if let Some(key) = key {
                    let e = &mut bufs.eps32[span.clone()];
                    key.fill_rows_f32((first + r0) as u64, d, e);
                    let t = &mut bufs.theta[..span.len()];
                    for (t, e) in t.chunks_exact_mut(d).zip(e.chunks_exact(d)) {
                        normal::draw_row_f32(loc, sig, e, t);
                    }
                    t
                } else {
                    let e: &[f64] = match noise {
                        Noise::Given(eps) => &eps[first * d + span.start..first * d + span.end],
                        Noise::Key(key) => {
                            key.fill_rows((first + r0) as u64, d, &mut bufs.eps[span.clone()]);
                            &bufs.eps[span.clone()]
                        }
                    };
                    let t = &mut bufs.theta[span];
                    for (t, e) in t.chunks_exact_mut(d).zip(e.chunks_exact(d)) {
                        normal::draw_row(loc, sig, e, t);
                    }
                    t
                };
                let sub_batch = batch.draws(first + r0, r1 - r0);
                model.log_density_and_grad(t, &sub_batch, &mut lp[r0..r1], g)?;
                r0 = r1;
            }
            let sums = PullbackSums {
                grad: &bufs.grad[..all],
                tau,
                logq: lq,
                dloc,
                drho,
                fresh: true,
            };
            if key.is_some() {
                coeffs.rows_pullback_drawn(loc, sig, &bufs.eps32[..all], sums);
            } else {
                let e: &[f64] = match noise {
                    Noise::Given(eps) => &eps[first * d..first * d + all],
                    Noise::Key(_) => &bufs.eps[..all],
                };
                coeffs.rows_pullback(&bufs.theta[..all], e, sums);
            }
            BLOCK_SCRATCH.with(|c| {
                let mut kept = c.borrow_mut();
                if kept.len() < kept_sets {
                    kept.push(bufs);
                }
            });
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
    // ĝ of each block: its chunks' partial sums added in chunk order, then the pull-back's last
    // step (the same operations as the unfused pull-back, column by column), in the kept
    // buffer (one group: lent to the result and given back after the step)
    let mut buf = std::mem::take(ghat);
    try_resize(&mut buf, groups * m * p, "the step's ĝ")?;
    buf.fill(0.0);
    let mut all = Matrix::from_vec(groups * m, p, buf)?;
    all.as_mut_slice()
        .par_chunks_mut(p.max(1))
        .zip(partials.par_chunks(nc * p.max(1)))
        .with_min_len(MIN_PAR_VALUES.div_ceil(nc * p.max(1)))
        .enumerate()
        .for_each(|(blk, (out, parts))| {
            let (dloc, drho) = out.split_at_mut(d);
            for part in parts.chunks_exact(p) {
                let (ploc, prho) = part.split_at(d);
                normal::add_partial(dloc, drho, ploc, prho);
            }
            let i = blk % m;
            normal::finish_pullback_with_slopes(&slope[i * d..(i + 1) * d], s as f64, dloc, drho);
        });
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
