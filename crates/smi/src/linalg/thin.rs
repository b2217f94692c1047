//! Products with a dimension of 1 — outer products (k = 1), matrix–vector products (n = 1 or
//! m = 1) and dot products — as plain loops over contiguous rows.
//!
//! Whatever the transposition flags, every operand of such a product is either a contiguous
//! vector or a row-major matrix read row by row, so each case is an `axpy` (c ← c + s·x) or a
//! `dot` over contiguous slices. Both vectorise (the dot keeps 16 partial sums); on x86-64 the
//! loops are compiled for AVX-512 and AVX2 too ([`smi_simd::multiversion!`]) and chosen at run time.

use super::Op;
use std::ops::{Add, Mul};

/// The real scalars the products run in (`f32`, `f64`); `Default` is zero.
pub trait Real:
    Copy + Default + Add<Output = Self> + Mul<Output = Self> + Send + Sync + 'static
{
}

impl Real for f32 {}

impl Real for f64 {}

smi_simd::multiversion! {
    /// [`super::gemm`] for `m == 1 || k == 1 || n == 1` (and m, n ≥ 1), same contract; in the
    /// CPU's widest vector build (AVX-512: 16 f32 lanes, AVX2: 8, SSE2: 4; same arithmetic).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn gemm<T: Real>(
        c: &mut [T],
        a: &[T],
        op_a: Op,
        b: &[T],
        op_b: Op,
        m: usize,
        k: usize,
        n: usize,
        alpha: T,
        accumulate: bool,
    ) {
        let c = &mut c[..m * n];
        let a = &a[..m * k];
        let b = &b[..k * n];
        if k == 0 {
            if !accumulate {
                c.fill(T::default());
            }
            return;
        }
        if m == 1 && n == 1 {
            // both operands are contiguous vectors of length k, whatever the flags
            let v = alpha * dot(a, b);
            c[0] = if accumulate { c[0] + v } else { v };
        } else if k == 1 {
            // outer product: op(A) is the column a[0..m], op(B) the row b[0..n]
            for (row, &ai) in c.chunks_exact_mut(n).zip(a) {
                scaled_add(row, alpha * ai, b, accumulate);
            }
        } else if n == 1 {
            // matrix–vector: c (m) = op(A) (m×k) · b (k)
            match op_a {
                Op::N => {
                    for (ci, row) in c.iter_mut().zip(a.chunks_exact(k)) {
                        let v = alpha * dot(row, b);
                        *ci = if accumulate { *ci + v } else { v };
                    }
                }
                // A stored k×m: c = Σ_l b_l · (row l of A)
                Op::T => accumulate_rows(c, a.chunks_exact(m), b, alpha, accumulate),
            }
        } else {
            // m == 1, vector–matrix: c (n) = a (k) · op(B) (k×n)
            match op_b {
                // B stored k×n: c = Σ_l a_l · (row l of B)
                Op::N => accumulate_rows(c, b.chunks_exact(n), a, alpha, accumulate),
                Op::T => {
                    for (cj, row) in c.iter_mut().zip(b.chunks_exact(k)) {
                        let v = alpha * dot(a, row);
                        *cj = if accumulate { *cj + v } else { v };
                    }
                }
            }
        }
    }
}

/// c ← (accumulate ? c : 0) + Σ_l alpha·w_l·(row l), every row of length `c.len()`.
///
/// Rows of 16 to [`NARROW_MAX`] columns (a hidden layer's bias gradient: 50 at the UCI net) go
/// in one sweep over the rows with every column's sum in registers ([`accumulate_narrow`]).
/// Wider rows take column blocks of 32, then of 16, 8 and 1 for the rest, that stay in
/// registers while all rows stream through, so each input value is loaded once and c is
/// written once per block (an axpy per row would reload and store c for every row). Every block
/// is of a fixed width, so that its sums vectorise and stay in registers (a last block of, e.g.,
/// 18 columns summed in a loop of variable length went through memory row by row; with
/// [`dot`]'s change, the thin products fell from 5.1–5.7 % to 4.3–4.5 % of boston's SMI step,
/// `perf record`). Each column's sum runs over the rows in order whatever its block or sweep.
#[inline(always)]
fn accumulate_rows<'a, T: Real>(
    c: &mut [T],
    rows: impl Iterator<Item = &'a [T]> + Clone,
    w: &[T],
    alpha: T,
    accumulate: bool,
) {
    let n = c.len();
    match n / 16 {
        1 => return accumulate_narrow::<T, 1>(c, rows, w, alpha, accumulate),
        2 => return accumulate_narrow::<T, 2>(c, rows, w, alpha, accumulate),
        3 => return accumulate_narrow::<T, 3>(c, rows, w, alpha, accumulate),
        4 if n == NARROW_MAX => return accumulate_narrow::<T, 4>(c, rows, w, alpha, accumulate),
        _ => {}
    }
    let mut start = 0;
    while n - start >= 32 {
        accumulate_block::<T, 32>(c, rows.clone(), w, alpha, accumulate, start);
        start += 32;
    }
    if n - start >= 16 {
        accumulate_block::<T, 16>(c, rows.clone(), w, alpha, accumulate, start);
        start += 16;
    }
    if n - start >= 8 {
        accumulate_block::<T, 8>(c, rows.clone(), w, alpha, accumulate, start);
        start += 8;
    }
    while start < n {
        accumulate_block::<T, 1>(c, rows.clone(), w, alpha, accumulate, start);
        start += 1;
    }
}

/// The widest rows [`accumulate_narrow`] takes: four blocks of 16 columns (the sums of 64 `f32`
/// are four AVX-512 registers, of `f64` eight).
const NARROW_MAX: usize = 64;

/// [`accumulate_rows`] for rows of 16·C ≤ n < 16·(C + 1) columns (n ≤ [`NARROW_MAX`]) in one
/// sweep over the rows: C blocks of 16 columns from 0 and, where 16·C < n, one block of the last
/// 16 columns (overlapping the others; only its columns from 16·C are kept). Each column's
/// sum is the same sequence of operations as in [`accumulate_block`], so the same bits; the
/// sums of all columns advance together, where column blocks one after the other waited on one
/// block's chain of additions at a time (measured: the bias gradients of boston's 50-wide layer,
/// 2.1–2.5 % of its SMI step in blocks of 32, 16, 1 and 1).
#[inline(always)]
fn accumulate_narrow<'a, T: Real, const C: usize>(
    c: &mut [T],
    rows: impl Iterator<Item = &'a [T]>,
    w: &[T],
    alpha: T,
    accumulate: bool,
) {
    let n = c.len();
    debug_assert!(16 * C <= n && n < 16 * (C + 1));
    // the last block only where 16·C < n (at n = 16·C it would repeat block C − 1)
    let (last, has_tail) = (n - 16, n > 16 * C);
    let mut acc = [[T::default(); 16]; C];
    let mut tail = [T::default(); 16];
    for (row, &wl) in rows.zip(w) {
        let s = alpha * wl;
        let (blocks, _) = row[..16 * C].as_chunks::<16>();
        for (a, r) in acc.iter_mut().zip(blocks) {
            for t in 0..16 {
                a[t] = a[t] + s * r[t];
            }
        }
        if has_tail {
            let r = &row[last..last + 16];
            for t in 0..16 {
                tail[t] = tail[t] + s * r[t];
            }
        }
    }
    let mut put = |j: usize, a: T| {
        c[j] = if accumulate { c[j] + a } else { a };
    };
    for (b, a) in acc.iter().enumerate() {
        for (t, &v) in a.iter().enumerate() {
            put(16 * b + t, v);
        }
    }
    for j in 16 * C..n {
        put(j, tail[j - last]);
    }
}

/// [`accumulate_rows`] on the `B` columns from `start` (`start + B ≤ c.len()`).
#[inline(always)]
fn accumulate_block<'a, T: Real, const B: usize>(
    c: &mut [T],
    rows: impl Iterator<Item = &'a [T]>,
    w: &[T],
    alpha: T,
    accumulate: bool,
    start: usize,
) {
    let mut acc = [T::default(); B];
    for (row, &wl) in rows.zip(w) {
        let s = alpha * wl;
        let r = &row[start..start + B];
        for t in 0..B {
            acc[t] = acc[t] + s * r[t];
        }
    }
    let out = &mut c[start..start + B];
    if accumulate {
        for (o, &a) in out.iter_mut().zip(&acc) {
            *o = *o + a;
        }
    } else {
        out.copy_from_slice(&acc);
    }
}

/// y ← (accumulate ? y : 0) + s·x (same lengths).
#[inline(always)]
fn scaled_add<T: Real>(y: &mut [T], s: T, x: &[T], accumulate: bool) {
    if accumulate {
        for (yi, &xi) in y.iter_mut().zip(x) {
            *yi = *yi + s * xi;
        }
    } else {
        for (yi, &xi) in y.iter_mut().zip(x) {
            *yi = s * xi;
        }
    }
}

/// Σ xᵢ·yᵢ with 16 independent partial sums, so that the loop vectorises.
#[inline(always)]
fn dot<T: Real>(x: &[T], y: &[T]) -> T {
    const L: usize = 16;
    let mut acc = [T::default(); L];
    // whole arrays of L, so that the compiler sees one vector of partial sums (slices of
    // length L were split into pairs of lanes)
    let (xc, xr) = x.as_chunks::<L>();
    let (yc, yr) = y.as_chunks::<L>();
    for (xs, ys) in xc.iter().zip(yc) {
        for i in 0..L {
            acc[i] = acc[i] + xs[i] * ys[i];
        }
    }
    let mut tail = T::default();
    for (&xi, &yi) in xr.iter().zip(yr) {
        tail = tail + xi * yi;
    }
    reduce_pairwise(acc) + tail
}

/// The sum of 16 partial sums, pairwise (lane i + lane i + 8, then + 4, + 2, + 1).
///
/// Not inlined: inlined, the compiler vectorised the partial sums of [`dot`] two lanes at a time
/// to suit this tree (seen in `perf annotate` of boston's SMI step: 2-lane registers); on its
/// own, the partial sums stay one vector.
#[inline(never)]
fn reduce_pairwise<T: Real>(mut acc: [T; 16]) -> T {
    let mut w = 16;
    while w > 1 {
        w /= 2;
        for i in 0..w {
            acc[i] = acc[i] + acc[i + w];
        }
    }
    acc[0]
}
