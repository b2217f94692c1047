//! The column-blocked kernel of the mixture's sums for d of [`super::SMALL_D`] and up: all rows of
//! a call against one block of [`BLOCK`] columns (pass 2: [`GRADIENT_BLOCK`]) of the coefficients
//! at a time (the block of all m particles stays in cache while every row passes), in two passes:
//! the m sums of every row (pass 1: rows in pairs against [`TILE`] particles at a time, the
//! pair's and the tile's sums in registers), then the gradient, handed block by block to a
//! [`Sink`] that stores it or pulls it back at once (pass 2). Each row's sums run over the same
//! blocks in the same order, and within a block in the same [`LANES`] lanes, whatever the number
//! of rows passed together: a row's values depend on the row alone. The rows are θ itself or,
//! for the fused step at large d, a particle's θ = μ + σε formed block by block from ε in `f32`
//! ([`Rows`]).

use std::ops::Range;

use super::MixtureCoeffs;
use crate::guide::normal::pull_back_row;

/// Columns of a block: the block's h and b of m = 5 particles are 40 KB (L1/L2), of m = 20
/// 160 KB (L2). A multiple of [`LANES`].
const BLOCK: usize = 512;

/// Columns of a block in pass 2 (at most [`BLOCK`], a multiple of [`LANES`]): each column's
/// gradient is computed alone, so this changes no value. Narrower than pass 1's blocks because
/// pass 2 streams more through the cache per column (∇log p and ε of each row, the pull-back's
/// sums): measured with `perf record` on `smi bench --method smi --threads 2` (this file's
/// pass 2 as a share of the step, several runs each), MNIST S = 55: 15.0–15.6 % at 512 columns,
/// 13.8 % at 256, 12.7–13.2 % at 128; boston: no change beyond the measure's noise (±0.5 %).
const GRADIENT_BLOCK: usize = 128;

/// Independent partial sums per row within a block (vectorised: two AVX-512 or four AVX2
/// registers of f64); the coefficients' row stride is a multiple of it.
pub(super) const LANES: usize = 16;

/// The rows the passes read (n of them, d values each).
#[derive(Clone, Copy)]
pub(crate) enum Rows<'a> {
    /// The draws θ themselves (n×d).
    Theta(&'a [f64]),
    /// The draws θ = `loc` + `sigma` ⊙ ε of one particle (`loc`, `sigma`: d each), formed block
    /// by block from their noise `eps` (n×d, `f32`): the same values as stored θ formed by
    /// [`crate::guide::normal::draw_row`] from the widened ε, without storing them.
    Drawn {
        loc: &'a [f64],
        sigma: &'a [f64],
        eps: &'a [f32],
    },
}

/// Asks the CPU to bring `values` into cache (one hint per 64-byte line; a hint only: no value
/// changes, and nothing on other architectures).
#[inline(always)]
fn prefetch<T>(values: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let per_line = (64 / std::mem::size_of::<T>().max(1)).max(1);
        for v in values.iter().step_by(per_line) {
            // SAFETY: SSE is part of every x86-64 CPU, and a prefetch reads nothing the
            // program sees (the address is within `values` besides).
            unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(v).cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = values;
}

impl Rows<'_> {
    /// Asks the CPU to bring row `r`'s values (θ or ε) on `cols` into cache ahead of their
    /// [`Rows::block`] (nothing where `r` is past the last row).
    #[inline(always)]
    fn prefetch(&self, d: usize, r: usize, cols: &Range<usize>) {
        let span = r * d + cols.start..r * d + cols.end;
        match self {
            Rows::Theta(t) => prefetch(t.get(span).unwrap_or(&[])),
            Rows::Drawn { eps, .. } => prefetch(eps.get(span).unwrap_or(&[])),
        }
    }

    /// The number of rows (d > 0).
    fn count(&self, d: usize) -> usize {
        match self {
            Rows::Theta(t) => t.len() / d,
            Rows::Drawn { eps, .. } => eps.len() / d,
        }
    }

    /// Row `r`'s values on the columns `cols` (at most [`BLOCK`] of them): a slice of θ, or
    /// formed into `buf`.
    #[inline(always)]
    fn block<'s>(
        &'s self,
        r: usize,
        d: usize,
        cols: &Range<usize>,
        buf: &'s mut [f64; BLOCK],
    ) -> &'s [f64] {
        match *self {
            Rows::Theta(t) => &t[r * d + cols.start..r * d + cols.end],
            Rows::Drawn { loc, sigma, eps } => {
                let out = &mut buf[..cols.len()];
                let e = &eps[r * d + cols.start..r * d + cols.end];
                for (((t, &l), &s), &e) in out
                    .iter_mut()
                    .zip(&loc[cols.clone()])
                    .zip(&sigma[cols.clone()])
                    .zip(e)
                {
                    *t = l + s * f64::from(e);
                }
                out
            }
        }
    }
}

/// l_rj = Σ_i (b_ji − h_ji·θ_ri)·θ_ri (without c_j) of every row r and particle j into `l`
/// (n×m, zero on entry), in the widest build the CPU has ([`smi_simd::level`]). Every build
/// computes the same fused multiply-adds (`f64::mul_add`, one rounding each: the hardware's
/// FMA, or the C library's exact `fma` on CPUs without one), so all give the same bits.
pub(super) fn log_components(k: &MixtureCoeffs, rows: Rows<'_>, l: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    match smi_simd::level() {
        // SAFETY: the CPU supports AVX-512F (AVX2 and FMA), checked by `smi_simd::level`.
        smi_simd::Level::Avx512 => return unsafe { log_components_avx512(k, rows, l) },
        smi_simd::Level::Avx2Fma => return unsafe { log_components_avx2(k, rows, l) },
        smi_simd::Level::Baseline => {}
    }
    log_components_impl(k, rows, l);
}

/// Pass 2: ∇log q_mix of every row, block by block of columns, into `sink` (the rows of a
/// block in order, the blocks in order).
pub(super) fn gradient_blocks(k: &MixtureCoeffs, rows: Rows<'_>, w: &[f64], sink: &mut Sink<'_>) {
    #[cfg(target_arch = "x86_64")]
    match smi_simd::level() {
        // SAFETY: the CPU supports AVX-512F (AVX2 and FMA), checked by `smi_simd::level`.
        smi_simd::Level::Avx512 => return unsafe { gradient_blocks_avx512(k, rows, w, sink) },
        smi_simd::Level::Avx2Fma => return unsafe { gradient_blocks_avx2(k, rows, w, sink) },
        smi_simd::Level::Baseline => {}
    }
    gradient_blocks_impl::<8>(k, rows, w, sink);
}

/// [`log_components_impl`] compiled for AVX-512F.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn log_components_avx512(k: &MixtureCoeffs, rows: Rows<'_>, l: &mut [f64]) {
    log_components_impl(k, rows, l);
}

/// [`log_components_impl`] compiled for AVX2 and FMA.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn log_components_avx2(k: &MixtureCoeffs, rows: Rows<'_>, l: &mut [f64]) {
    log_components_impl(k, rows, l);
}

/// [`gradient_blocks_impl`] compiled for AVX-512F.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn gradient_blocks_avx512(
    k: &MixtureCoeffs,
    rows: Rows<'_>,
    w: &[f64],
    sink: &mut Sink<'_>,
) {
    gradient_blocks_impl::<16>(k, rows, w, sink);
}

/// [`gradient_blocks_impl`] compiled for AVX2 and FMA.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn gradient_blocks_avx2(k: &MixtureCoeffs, rows: Rows<'_>, w: &[f64], sink: &mut Sink<'_>) {
    gradient_blocks_impl::<8>(k, rows, w, sink);
}

/// Where pass 2 puts each row's gradient on a block of columns.
pub(super) enum Sink<'a> {
    /// Stored: the n×d gradient.
    Store(&'a mut [f64]),
    /// Pulled back at once (τ·∇log p − ∇log q into the loc and ρ sums of length d; with
    /// `fresh`, the sums hold nothing yet and row 0 writes them).
    Pullback {
        eps: Eps<'a>,
        grad: &'a [f64],
        tau: f64,
        dloc: &'a mut [f64],
        drho: &'a mut [f64],
        fresh: bool,
    },
}

impl Sink<'_> {
    /// Asks the CPU to bring row `r`'s ∇log p (and ε) on columns `cols` into cache ahead of
    /// its [`Sink::take`] (nothing where the sink stores or `r` is past the last row).
    #[inline(always)]
    fn prefetch(&self, d: usize, r: usize, cols: &Range<usize>) {
        if let Sink::Pullback { grad, eps, .. } = self {
            let span = r * d + cols.start..r * d + cols.end;
            prefetch(grad.get(span.clone()).unwrap_or(&[]));
            if let Eps::F64(e) = eps {
                prefetch(e.get(span).unwrap_or(&[]));
            }
        }
    }

    /// Row `r`'s gradient `q` on columns `cols` (rows of length `d`).
    #[inline(always)]
    fn take(&mut self, d: usize, r: usize, cols: &Range<usize>, q: &[f64]) {
        let row = r * d + cols.start..r * d + cols.end;
        match self {
            Sink::Store(grad) => grad[row].copy_from_slice(q),
            Sink::Pullback {
                eps,
                grad,
                tau,
                dloc,
                drho,
                fresh,
            } => {
                let (g, dl, dr) = (
                    &grad[row.clone()],
                    &mut dloc[cols.clone()],
                    &mut drho[cols.clone()],
                );
                match (eps, *fresh && r == 0) {
                    (Eps::F64(e), false) => pull_back_row::<_, false>(*tau, g, q, &e[row], dl, dr),
                    (Eps::F64(e), true) => pull_back_row::<_, true>(*tau, g, q, &e[row], dl, dr),
                    (Eps::F32(e), false) => pull_back_row::<_, false>(*tau, g, q, &e[row], dl, dr),
                    (Eps::F32(e), true) => pull_back_row::<_, true>(*tau, g, q, &e[row], dl, dr),
                }
            }
        }
    }
}

/// The noise ε of the rows a [`Sink::Pullback`] pulls back (n×d).
#[derive(Clone, Copy)]
pub(super) enum Eps<'a> {
    /// As `f64`.
    F64(&'a [f64]),
    /// As `f32` (widened exactly where used).
    F32(&'a [f32]),
}

/// The column blocks of d: `size` columns each, the last one the rest.
fn blocks(d: usize, size: usize) -> impl Iterator<Item = Range<usize>> {
    (0..d.div_ceil(size)).map(move |t| t * size..((t + 1) * size).min(d))
}

/// Columns `cols` of particle j's h and b (their padding included up to whole lanes: `cols`
/// rounded up to a multiple of [`LANES`], within the row stride), as whole lanes.
#[inline(always)]
#[allow(clippy::type_complexity)]
fn coeff_lanes<'a, const G: usize>(
    k: &'a MixtureCoeffs,
    j: usize,
    cols: &Range<usize>,
) -> (&'a [[f64; G]], &'a [[f64; G]]) {
    let r = j * k.stride + cols.start..j * k.stride + cols.start + cols.len().next_multiple_of(G);
    (k.b[r.clone()].as_chunks::<G>().0, k.h[r].as_chunks::<G>().0)
}

/// A row's values on a block of columns as whole lanes: the chunks of `G`, and the rest padded
/// with zeros.
#[inline(always)]
fn row_lanes<const G: usize>(block: &[f64]) -> (&[[f64; G]], [f64; G]) {
    let (whole, rest) = block.as_chunks::<G>();
    let mut pad = [0.0; G];
    pad[..rest.len()].copy_from_slice(rest);
    (whole, pad)
}

/// Particles per register tile of pass 1: two rows' sums for 4 particles are 16 AVX-512
/// registers of f64 (two per row and particle), beside the rows' 4 and the coefficients'.
/// Measured (`perf record` of `smi bench --config boston --method smi --threads 2`, pass 1 as a
/// share of the step): 6.7–7.1 % with one particle at a time, 5.1–5.6 % with tiles of 3,
/// 5.4 % of 4, 6.1 % of 5 (whose sums no longer all fit in registers).
const TILE: usize = 4;

// `log_components_impl` dispatches the widths 1 to 4 of a tile.
const _: () = assert!(TILE == 4);

#[inline(always)]
fn log_components_impl(k: &MixtureCoeffs, rows: Rows<'_>, l: &mut [f64]) {
    let (m, d) = (k.m, k.d);
    if d == 0 || m == 0 {
        return;
    }
    let n = rows.count(d);
    let (mut buf0, mut buf1) = ([0.0; BLOCK], [0.0; BLOCK]);
    for cols in blocks(d, BLOCK) {
        // rows in pairs, particles in tiles of up to TILE: each pair reads the block's
        // coefficients once, and each row's lanes once per tile; each row's lanes are its own,
        // so a row's sums do not depend on its partner or the tiles
        for r in (0..n).step_by(2) {
            let two = r + 1 < n;
            let t0 = row_lanes::<LANES>(rows.block(r, d, &cols, &mut buf0));
            let t1 = if two {
                row_lanes::<LANES>(rows.block(r + 1, d, &cols, &mut buf1))
            } else {
                t0
            };
            let mut j0 = 0;
            while j0 < m {
                let width = (m - j0).min(TILE);
                let mut s = [(0.0, 0.0); TILE];
                smi_simd::unrolled!(width; [4, 3, 2] else 1 => |W| {
                    tile_sums::<W>(k, j0, &cols, t0, t1, &mut s)
                });
                for (jj, &(s0, s1)) in s[..width].iter().enumerate() {
                    l[r * m + j0 + jj] += s0;
                    if two {
                        l[(r + 1) * m + j0 + jj] += s1;
                    }
                }
                j0 += width;
            }
        }
    }
}

/// [`tile_sums`] on chunk `c` of the block: the two rows' lanes there (`x`) into their sums `a`
/// for each of the tile's particles (`coeffs`: their h and b lanes on the block).
#[inline(always)]
#[allow(clippy::type_complexity)]
fn tile_step<const J: usize>(
    coeffs: &[(&[[f64; LANES]], &[[f64; LANES]]); J],
    c: usize,
    (x0, x1): (&[f64; LANES], &[f64; LANES]),
    (a0, a1): (&mut [[f64; LANES]; J], &mut [[f64; LANES]; J]),
) {
    for jj in 0..J {
        let (bb, hh) = (&coeffs[jj].0[c], &coeffs[jj].1[c]);
        for l in 0..LANES {
            a0[jj][l] = (-hh[l]).mul_add(x0[l], bb[l]).mul_add(x0[l], a0[jj][l]);
            a1[jj][l] = (-hh[l]).mul_add(x1[l], bb[l]).mul_add(x1[l], a1[jj][l]);
        }
    }
}

/// Σ_i (b_ji − h_ji·t_i)·t_i of two rows over one block of columns `cols`, for the J particles
/// j0 .. j0 + J, into `out[..J]` (row 0's, row 1's): each row given as its whole lanes and its
/// zero-padded rest, each sum in [`LANES`] lanes (lane ℓ: columns ≡ ℓ mod LANES, in order), the
/// lanes added pairwise. Every sum is the same sequence of fused multiply-adds whatever J, so
/// the tiles do not change a value: they only keep the rows' lanes in registers across the
/// particles (a pass per particle loaded them again for each).
#[inline(always)]
#[allow(clippy::type_complexity)]
fn tile_sums<const J: usize>(
    k: &MixtureCoeffs,
    j0: usize,
    cols: &Range<usize>,
    t0: (&[[f64; LANES]], [f64; LANES]),
    t1: (&[[f64; LANES]], [f64; LANES]),
    out: &mut [(f64, f64)],
) {
    let coeffs: [_; J] = std::array::from_fn(|jj| coeff_lanes::<LANES>(k, j0 + jj, cols));
    let (mut a0, mut a1) = ([[0.0; LANES]; J], [[0.0; LANES]; J]);
    // the whole lanes, then the padded rest where the block has one
    let whole = t0.0.len();
    for (c, (x0, x1)) in t0.0.iter().zip(t1.0).enumerate() {
        tile_step(&coeffs, c, (x0, x1), (&mut a0, &mut a1));
    }
    if cols.len() > whole * LANES {
        tile_step(&coeffs, whole, (&t0.1, &t1.1), (&mut a0, &mut a1));
    }
    for jj in 0..J {
        out[jj] = (reduce_lanes(a0[jj]), reduce_lanes(a1[jj]));
    }
}

/// The sum of the lanes, pairwise (lane ℓ + lane ℓ + 8, then + 4, + 2, + 1).
#[inline(always)]
fn reduce_lanes(mut a: [f64; LANES]) -> f64 {
    let mut half = LANES / 2;
    while half > 0 {
        for l in 0..half {
            a[l] += a[l + half];
        }
        half /= 2;
    }
    a[0]
}

/// [`gradient_block2`] on the `n`-th `G` columns of `cols` (each row: its responsibilities and
/// θ there; `coeffs`: every particle's b and h lanes on `cols`, in order).
#[inline(always)]
#[allow(clippy::type_complexity)]
fn gradient_step<const G: usize, const M: usize>(
    coeffs: &Coeffs<'_, G, M>,
    n: usize,
    (w0, t0): (&[f64], &[f64; G]),
    (w1, t1): (&[f64], &[f64; G]),
) -> ([f64; G], [f64; G]) {
    let (mut sb0, mut sh0, mut sb1, mut sh1) = ([0.0; G], [0.0; G], [0.0; G], [0.0; G]);
    match coeffs {
        Coeffs::Fixed(c) => {
            for j in 0..M {
                add_particle(
                    &c[j],
                    n,
                    (w0[j], w1[j]),
                    (&mut sb0, &mut sh0, &mut sb1, &mut sh1),
                );
            }
        }
        Coeffs::Any(k, cols) => {
            for (j, (&u0, &u1)) in w0.iter().zip(w1).enumerate() {
                let c = coeff_lanes::<G>(k, j, cols);
                add_particle(&c, n, (u0, u1), (&mut sb0, &mut sh0, &mut sb1, &mut sh1));
            }
        }
    }
    let (mut g0, mut g1) = ([0.0; G], [0.0; G]);
    for l in 0..G {
        g0[l] = (-(sh0[l] + sh0[l])).mul_add(t0[l], sb0[l]);
        g1[l] = (-(sh1[l] + sh1[l])).mul_add(t1[l], sb1[l]);
    }
    (g0, g1)
}

/// One particle's term of [`gradient_step`]'s sums on its `n`-th `G` columns: s_b += u·b_j and
/// s_h += u·h_j for each row's responsibility u, one fused multiply-add each (a function, not a
/// closure: a closure the compiler left out of line lost the CPU's FMA build).
#[inline(always)]
#[allow(clippy::type_complexity)]
fn add_particle<const G: usize>(
    (bj, hj): &(&[[f64; G]], &[[f64; G]]),
    n: usize,
    (u0, u1): (f64, f64),
    (sb0, sh0, sb1, sh1): (&mut [f64; G], &mut [f64; G], &mut [f64; G], &mut [f64; G]),
) {
    let (bj, hj) = (&bj[n], &hj[n]);
    for l in 0..G {
        sb0[l] = u0.mul_add(bj[l], sb0[l]);
        sh0[l] = u0.mul_add(hj[l], sh0[l]);
        sb1[l] = u1.mul_add(bj[l], sb1[l]);
        sh1[l] = u1.mul_add(hj[l], sh1[l]);
    }
}

/// The particles' coefficient lanes on a block of pass 2: for M particles (M > 0), looked up
/// once per block and the loop over them unrolled; for any other m, looked up at each step.
#[allow(clippy::type_complexity)]
enum Coeffs<'a, const G: usize, const M: usize> {
    /// Every particle's (b, h) lanes on the block, in order.
    Fixed([(&'a [[f64; G]], &'a [[f64; G]]); M]),
    /// The coefficients and the block's columns.
    Any(&'a MixtureCoeffs, Range<usize>),
}

/// The largest particle count with its own build of pass 2 (the loop over the particles
/// unrolled, their coefficients looked up once per block); larger m take the general loop.
const UNROLLED_M: usize = 8;

/// Pass 2 with `G` columns per vector step (any G dividing [`LANES`]: each column's value is
/// computed alone, so G does not change it): dispatched on m, each build the same operations.
#[inline(always)]
fn gradient_blocks_impl<const G: usize>(
    k: &MixtureCoeffs,
    rows: Rows<'_>,
    w: &[f64],
    sink: &mut Sink<'_>,
) {
    smi_simd::unrolled!(k.m; [1, 2, 3, 4, 5, 6, 7, UNROLLED_M] else 0 => |M| {
        gradient_blocks_m::<G, M>(k, rows, w, sink)
    });
}

/// [`gradient_blocks_impl`] for m = M particles (M = 0: any m).
#[inline(always)]
fn gradient_blocks_m<const G: usize, const M: usize>(
    k: &MixtureCoeffs,
    rows: Rows<'_>,
    w: &[f64],
    sink: &mut Sink<'_>,
) {
    let (m, d) = (k.m, k.d);
    if d == 0 || m == 0 {
        return;
    }
    let n = rows.count(d);
    let (mut q0, mut q1) = ([0.0; BLOCK], [0.0; BLOCK]);
    let (mut buf0, mut buf1) = ([0.0; BLOCK], [0.0; BLOCK]);
    for cols in blocks(d, GRADIENT_BLOCK) {
        let (q0, q1) = (&mut q0[..cols.len()], &mut q1[..cols.len()]);
        // rows in pairs, as in pass 1; each column's rows reach the sink in order
        for r in (0..n).step_by(2) {
            // the next pair's rows on this block, on their way while this pair is computed
            // (MNIST, measured as GRADIENT_BLOCK was, three runs each: 12.7–13.1 % → 12.2–12.4 %)
            for next in r + 2..r + 4 {
                rows.prefetch(d, next, &cols);
                sink.prefetch(d, next, &cols);
            }
            let t0 = rows.block(r, d, &cols, &mut buf0);
            let w0 = &w[r * m..(r + 1) * m];
            if r + 1 < n {
                let t1 = rows.block(r + 1, d, &cols, &mut buf1);
                let w1 = &w[(r + 1) * m..(r + 2) * m];
                gradient_block2::<G, M>(k, &cols, (t0, w0, q0), (t1, w1, q1));
                sink.take(k.d, r, &cols, q0);
                sink.take(k.d, r + 1, &cols, q1);
            } else {
                gradient_block2::<G, M>(k, &cols, (t0, w0, q0), (t0, w0, q1));
                sink.take(k.d, r, &cols, q0);
            }
        }
    }
}

/// Two rows' ∇log q_mix on columns `cols` (each row: its θ on those columns, its
/// responsibilities w and the output q, `cols.len()` values): per column, s_b = Σ_j w_j b_ji and s_h = Σ_j w_j h_ji
/// (j in order), q = s_b − (s_h + s_h)·θ, each step one fused multiply-add.
#[inline(always)]
#[allow(clippy::type_complexity)]
fn gradient_block2<const G: usize, const M: usize>(
    k: &MixtureCoeffs,
    cols: &Range<usize>,
    r0: (&[f64], &[f64], &mut [f64]),
    r1: (&[f64], &[f64], &mut [f64]),
) {
    let (x0, p0) = row_lanes::<G>(r0.0);
    let (x1, p1) = row_lanes::<G>(r1.0);
    let (w0, w1) = (r0.1, r1.1);
    let coeffs: Coeffs<'_, G, M> = if M > 0 {
        Coeffs::Fixed(std::array::from_fn(|j| coeff_lanes::<G>(k, j, cols)))
    } else {
        Coeffs::Any(k, cols.clone())
    };
    let (q0, q0_rest) = r0.2.as_chunks_mut::<G>();
    let (q1, q1_rest) = r1.2.as_chunks_mut::<G>();
    for (n, (((t0, t1), g0), g1)) in x0.iter().zip(x1).zip(q0).zip(q1).enumerate() {
        (*g0, *g1) = gradient_step(&coeffs, n, (w0, t0), (w1, t1));
    }
    if !q0_rest.is_empty() {
        let (g0, g1) = gradient_step(&coeffs, x0.len(), (w0, &p0), (w1, &p1));
        let rest = q0_rest.len();
        q0_rest.copy_from_slice(&g0[..rest]);
        q1_rest.copy_from_slice(&g1[..rest]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Matrix;

    /// The mixture coefficients of m particles of d (loc, then ρ: any values will do).
    fn coeffs(m: usize, d: usize) -> MixtureCoeffs {
        MixtureCoeffs::new(&Matrix::from_fn(m, 2 * d, |j, c| {
            if c < d {
                ((j * 17 + c * 3) as f64 * 0.21).sin()
            } else {
                ((j + 2 * c) as f64 * 0.3).cos()
            }
        }))
    }

    /// Pass 1 as it ran before the particle tiles: one particle at a time over each block, the
    /// pair's rows loaded again for every particle (the same fused multiply-adds per lane).
    fn per_particle(k: &MixtureCoeffs, theta: &[f64], l: &mut [f64]) {
        let (m, d) = (k.m, k.d);
        let n = theta.len() / d;
        for cols in blocks(d, BLOCK) {
            for r in 0..n {
                let (x, p) = row_lanes::<LANES>(&theta[r * d + cols.start..r * d + cols.end]);
                for j in 0..m {
                    let (b, h) = coeff_lanes::<LANES>(k, j, &cols);
                    let mut a = [0.0; LANES];
                    for ((x, bb), hh) in x.iter().chain(std::iter::once(&p)).zip(b).zip(h) {
                        for l in 0..LANES {
                            a[l] = (-hh[l]).mul_add(x[l], bb[l]).mul_add(x[l], a[l]);
                        }
                    }
                    l[r * m + j] += reduce_lanes(a);
                }
            }
        }
    }

    #[test]
    fn pass_2_unrolled_for_m_gives_the_bits_of_the_general_loop() {
        // the gradient of n = 3 rows (a pair and a lone row) at every m to 10 (each build up to
        // UNROLLED_M and the general loop beyond), d with a partial block and rest of lanes,
        // against the general loop (M = 0) on the same responsibilities
        let d = 1100;
        for m in 1..=10 {
            let k = coeffs(m, d);
            let n = 3;
            let theta: Vec<f64> = (0..n * d).map(|v| (v as f64 * 0.017).cos() * 1.2).collect();
            let w: Vec<f64> = (0..n * m).map(|v| 1.0 / (1.0 + v as f64)).collect();
            let (mut got, mut want) = (vec![0.0; n * d], vec![0.0; n * d]);
            gradient_blocks(&k, Rows::Theta(&theta), &w, &mut Sink::Store(&mut got));
            gradient_blocks_m::<16, 0>(&k, Rows::Theta(&theta), &w, &mut Sink::Store(&mut want));
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "m = {m}");
        }
    }

    #[test]
    fn particle_tiles_give_the_bits_of_one_particle_at_a_time() {
        // m = 1 … 12 (whole tiles of 4 and every rest), n = 1 … 4 (pairs and a lone row), d with
        // a block's end on a lane boundary (1 024 + 512) and not (1 100: a rest of 12 columns)
        for d in [1100, 1536] {
            for m in 1..=12 {
                let k = coeffs(m, d);
                for n in 1..=4 {
                    let theta: Vec<f64> = (0..n * d)
                        .map(|v| (v as f64 * 0.017 + m as f64).cos() * 1.2)
                        .collect();
                    let (mut got, mut want) = (vec![0.0; n * m], vec![0.0; n * m]);
                    log_components(&k, Rows::Theta(&theta), &mut got);
                    per_particle(&k, &theta, &mut want);
                    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&got), bits(&want), "d = {d}, m = {m}, n = {n}");
                }
            }
        }
    }
}
