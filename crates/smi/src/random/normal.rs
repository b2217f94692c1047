//! Standard normals from Philox4x32-10 counters by the Box–Muller transform in `f32`
//! arithmetic, 128 at a time on lane arrays, in the build the CPU runs best (AVX-512, AVX2 +
//! FMA, or generic; all give the same bits).

use super::math::{ln_unit, sin_cos_turn};
use super::philox::philox_lanes;

/// Philox blocks per chunk of the main loop (4 normals each): 64 word pairs, 4 AVX-512 vectors
/// of `f32` lanes, enough independent work to hide the latency of the square roots (measured
/// with the `f32` transform on a busy machine: 32 blocks ≈ 5–10 % faster than 16 and ≈ 20 %
/// faster than 8, 64 no faster).
const BLOCKS: usize = 32;
/// Blocks per chunk at the end of a row (and of short rows): 16 word pairs, one AVX-512 vector
/// of `f32` lanes (measured: rows of 1000 normals ≈ 20 % faster than with 4 blocks).
const TAIL_BLOCKS: usize = 8;
/// Blocks per chunk of short rows (shorter than 32 normals): any 16 (row, block) items, two
/// AVX-512 vectors of Philox lanes and of `f32` lanes, whose chains of rounds and of the
/// transform run side by side. Measured (`cargo bench -p smi --bench normals -- short_rows`, one
/// thread, 200 rows of 10): 8.8 µs, against 10.9 with one block position of 8 rows per chunk
/// (three chunks for eight rows of 10, each a single chain of dependent vector steps); 10 rows
/// of 10: 0.47 µs against 0.80.
const SHORT_BLOCKS: usize = 16;

/// Normals `0..out.len()` of row `row` under `key`, into `out`.
///
/// Normal i comes from the Philox4x32-10 block ([`philox4x32`](super::philox4x32)) of counter
/// [i/4 low word, i/4 high word, `row` low word, `row` high word] under key [`key` low word,
/// `key` high word]: its words (r0, r1) give normals 4j (cos) and 4j + 1 (sin), (r2, r3) give
/// 4j + 2 and 4j + 3, by the Box–Muller transform
/// z = √(−2 ln u1)·cos(2π u2) or ·sin(2π u2), u1 = (a + 1/2)·2^-32, u2 = (b + 1/2)·2^-32 for
/// the pair of words (a, b), computed in `f32` arithmetic (for speed: twice the lanes of
/// `f64` and cheaper square roots) and stored widened, exactly, to `f64`. Each value is within
/// 6·2^-24 of its radius √(−2 ln u1) of the exact one (a few `f32` ulp; the tests measure
/// ≈ 2.8·2^-24). For rows below 2^32 this is, to those few `f32` ulp, the GPU backend's stream
/// `row` of seed `key` (`smi-models`, `cuda::philox::normal_at`, which computes it in `f64`
/// with CUDA's libm and rounds to `f32`).
///
/// Since u1 ≥ 2^-33, |z| ≤ √(66 ln 2) ≈ 6.76 (rounded to `f32`: 6.7637057): the tails beyond
/// that are cut (probability 1.4·10⁻¹¹ under the normal law). Each value depends only on
/// (`key`, `row`, i), so a shorter `out` gets a prefix of a longer one, and rows can be drawn
/// in any order on any thread. ln, sin and cos are polynomials (within 2 `f32` ulp of the
/// exact values; ln u1 is reduced from the integer word, so it keeps its relative accuracy at
/// both ends, u1 → 0 and u1 → 1), with fused multiply-adds in every build, so the values are
/// the same bits on every x86-64 CPU and in the generic build.
pub fn fill_normals(key: u64, row: u64, out: &mut [f64]) {
    fill(key, row, out);
}

/// [`fill_normals`]'s values before their widening to `f64`: the same normals, as computed.
pub fn fill_normals_f32(key: u64, row: u64, out: &mut [f32]) {
    fill(key, row, out);
}

/// Rows `first`, `first + 1`, … of [`fill_normals`] under `key`, `row_len` normals each, into
/// `out` (a whole number of rows; a partial last row gets its prefix): the same values, bit for
/// bit, as filling each row alone. Rows shorter than a chunk of the generator (32 normals)
/// share its vector lanes: alone, a row of 10 normals computes a whole chunk and keeps 10;
/// here a chunk computes the same block of eight rows, so eight rows of 10 take three chunks.
pub fn fill_normal_rows(key: u64, first: u64, row_len: usize, out: &mut [f64]) {
    fill_rows(key, first, row_len, out);
}

/// [`fill_normal_rows`]'s values before their widening to `f64`.
pub fn fill_normal_rows_f32(key: u64, first: u64, row_len: usize, out: &mut [f32]) {
    fill_rows(key, first, row_len, out);
}

/// What the normals are stored as: `f32` as computed, or `f64` widened exactly.
trait Store: Copy + Default {
    /// `z` stored.
    fn of(z: f32) -> Self;
}

impl Store for f32 {
    #[inline(always)]
    fn of(z: f32) -> Self {
        z
    }
}

impl Store for f64 {
    #[inline(always)]
    fn of(z: f32) -> Self {
        f64::from(z)
    }
}

/// [`fill_normals`] into either type, in the widest build the CPU runs.
fn fill<T: Store>(key: u64, row: u64, out: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU has the features `fill_avx512` is compiled for, checked above.
            unsafe { fill_avx512(key, row, out) };
            return;
        }
        if has_avx2() {
            // SAFETY: the CPU has the features `fill_avx2` is compiled for, checked above.
            unsafe { fill_avx2(key, row, out) };
            return;
        }
    }
    fill_generic(key, row, out);
}

/// [`fill_normal_rows`] into either type, in the widest build the CPU runs.
fn fill_rows<T: Store>(key: u64, first: u64, row_len: usize, out: &mut [T]) {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512() {
            // SAFETY: the CPU has the features `rows_avx512` is compiled for, checked above.
            unsafe { rows_avx512(key, first, row_len, out) };
            return;
        }
        if has_avx2() {
            // SAFETY: the CPU has the features `rows_avx2` is compiled for, checked above.
            unsafe { rows_avx2(key, first, row_len, out) };
            return;
        }
    }
    rows_chunks(key, first, row_len, out);
}

/// [`fill_normal_rows`] compiled for AVX-512.
///
/// # Safety
/// The CPU must have AVX-512F, DQ and VL, AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
unsafe fn rows_avx512<T: Store>(key: u64, first: u64, row_len: usize, out: &mut [T]) {
    rows_chunks(key, first, row_len, out);
}

/// [`fill_normal_rows`] compiled for AVX2 with FMA.
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_avx2<T: Store>(key: u64, first: u64, row_len: usize, out: &mut [T]) {
    rows_chunks(key, first, row_len, out);
}

/// The body of every build of [`fill_normal_rows`]: rows of a chunk or longer one by one; the
/// blocks of shorter rows ([`SHORT_BLOCKS`] to a chunk, whatever their rows and positions).
#[inline(always)]
fn rows_chunks<T: Store>(key: u64, first: u64, row_len: usize, out: &mut [T]) {
    if row_len == 0 {
        return;
    }
    if row_len >= 4 * TAIL_BLOCKS {
        for (r, row) in out.chunks_mut(row_len).enumerate() {
            fill_chunks(key, first + r as u64, row);
        }
        return;
    }
    let key = [key as u32, (key >> 32) as u32];
    let rows = out.len().div_ceil(row_len);
    let per_row = row_len.div_ceil(4);
    let items = rows * per_row;
    let mut z = [T::default(); 4 * SHORT_BLOCKS];
    // the (row, block) items in order, SHORT_BLOCKS to a chunk: lane l of a chunk is block b of
    // row r (spare lanes of the last chunk repeat its last item, computed and never stored)
    let (mut r, mut b) = (0usize, 0usize);
    let mut k0 = 0;
    while k0 < items {
        let lanes = SHORT_BLOCKS.min(items - k0);
        let mut c = [[0u64; SHORT_BLOCKS]; 4];
        let mut at = [(0usize, 0usize); SHORT_BLOCKS];
        for l in 0..SHORT_BLOCKS {
            let row = first + r as u64;
            (c[0][l], c[2][l], c[3][l]) = (b as u64, row & 0xffff_ffff, row >> 32);
            at[l] = (r, b);
            if l + 1 < lanes {
                b += 1;
                if b == per_row {
                    (r, b) = (r + 1, 0);
                }
            }
        }
        normals::<SHORT_BLOCKS, { 2 * SHORT_BLOCKS }, { 4 * SHORT_BLOCKS }, T, true>(
            key, c, &mut z,
        );
        let (zs, _) = z.as_chunks::<4>();
        for (four, &(r, b)) in zs.iter().zip(&at).take(lanes) {
            let (i, start) = (4 * b, r * row_len + 4 * b);
            match out.get_mut(start..start + 4) {
                // whole blocks as one copy of four (a copy of n values was a memcpy call)
                Some(o) if i + 4 <= row_len => o.copy_from_slice(four),
                _ => {
                    let end = out.len().min((r + 1) * row_len);
                    for (o, &v) in out[start.min(end)..end].iter_mut().zip(four) {
                        *o = v;
                    }
                }
            }
        }
        // the next chunk starts after this one's last item
        b += 1;
        if b == per_row {
            (r, b) = (r + 1, 0);
        }
        k0 += lanes;
    }
}

/// Whether the CPU runs [`fill_avx512`] (AVX-512 F/DQ/VL, AVX2, FMA: [`smi_simd::level`]).
#[cfg(target_arch = "x86_64")]
fn has_avx512() -> bool {
    smi_simd::level() >= smi_simd::Level::Avx512
}

/// Whether the CPU runs [`fill_avx2`] (AVX2 and FMA: [`smi_simd::level`]).
#[cfg(target_arch = "x86_64")]
fn has_avx2() -> bool {
    smi_simd::level() >= smi_simd::Level::Avx2Fma
}

/// [`fill_normals`] compiled for AVX-512 (16 lanes of f32).
///
/// # Safety
/// The CPU must have AVX-512F, DQ and VL, AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
unsafe fn fill_avx512<T: Store>(key: u64, row: u64, out: &mut [T]) {
    fill_chunks(key, row, out);
}

/// [`fill_normals`] compiled for AVX2 with FMA (8 lanes of f32).
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn fill_avx2<T: Store>(key: u64, row: u64, out: &mut [T]) {
    fill_chunks(key, row, out);
}

/// [`fill_normals`] in the build's baseline instruction set (on x86-64 without FMA each
/// `mul_add` is a call to libm's correctly rounded `fmaf`: slow, but the same bits).
fn fill_generic<T: Store>(key: u64, row: u64, out: &mut [T]) {
    fill_chunks(key, row, out);
}

/// The body of every build: whole chunks, small chunks for the rest of the row, then one small
/// chunk of which the last normals are the prefix.
#[inline(always)]
fn fill_chunks<T: Store>(key: u64, row: u64, out: &mut [T]) {
    let key = [key as u32, (key >> 32) as u32];
    let (chunks, rest) = out.as_chunks_mut::<{ 4 * BLOCKS }>();
    let mut block = 0u64;
    for c in chunks {
        chunk::<BLOCKS, { 2 * BLOCKS }, { 4 * BLOCKS }, T>(key, row, block, c);
        block += BLOCKS as u64;
    }
    let (chunks, rest) = rest.as_chunks_mut::<{ 4 * TAIL_BLOCKS }>();
    for c in chunks {
        chunk::<TAIL_BLOCKS, { 2 * TAIL_BLOCKS }, { 4 * TAIL_BLOCKS }, T>(key, row, block, c);
        block += TAIL_BLOCKS as u64;
    }
    if !rest.is_empty() {
        let mut last = [T::default(); 4 * TAIL_BLOCKS];
        chunk::<TAIL_BLOCKS, { 2 * TAIL_BLOCKS }, { 4 * TAIL_BLOCKS }, T>(
            key, row, block, &mut last,
        );
        rest.copy_from_slice(&last[..rest.len()]);
    }
}

/// Normals 4·`block` .. 4·(`block` + B) of row `row` into `out` (P = 2B word pairs, N = 4B
/// normals; stable Rust cannot write 2B and 4B in the types).
#[inline(always)]
fn chunk<const B: usize, const P: usize, const N: usize, T: Store>(
    key: [u32; 2],
    row: u64,
    block: u64,
    out: &mut [T; N],
) {
    // (plain loops: `array::map` is not always inlined, and its narrow stores then stall the
    // wide loads of the rounds)
    let (mut c0, mut c1) = ([0; B], [0; B]);
    for (l, (w0, w1)) in c0.iter_mut().zip(&mut c1).enumerate() {
        let b = block + l as u64;
        (*w0, *w1) = (b & 0xffff_ffff, b >> 32);
    }
    let c = [c0, c1, [row & 0xffff_ffff; B], [row >> 32; B]];
    normals::<B, P, N, T, false>(key, c, out);
}

/// The four normals of each of B Philox blocks into `out` (block l's at 4l .. 4l + 4): lane l
/// of `c` holds the counter's words (block low, block high, row low, row high), one per `u64`,
/// each below 2^32.
///
/// `MASK`: every word masked to its 32 bits first (a no-op on the values). With lanes of
/// different rows the compiler no longer saw that the words fit 32 bits and multiplied in the
/// three-µop `vpmullq` instead of `vpmuludq` (criterion, 200 rows of 10 on one thread:
/// 13.2–13.9 µs, masked in the caller too, against 10.3–10.6 with the masks here). The one-row
/// chunks go without: with the same masks `fill_normals` of 4 096 took 10.0 µs against 6.3.
#[inline(always)]
fn normals<const B: usize, const P: usize, const N: usize, T: Store, const MASK: bool>(
    key: [u32; 2],
    mut c: [[u64; B]; 4],
    out: &mut [T; N],
) {
    debug_assert!(P == 2 * B && N == 4 * B);
    if MASK {
        for w in c.iter_mut().flatten() {
            *w &= 0xffff_ffff;
        }
    }
    // every word to 32 bits (they are): with lanes of different rows the compiler could no
    // longer see it and multiplied in the three-µop `vpmullq` instead of `vpmuludq`
    philox_lanes(&mut c, key);
    // lanes 0..B: the pairs (r0, r1) of the blocks, lanes B..2B: their (r2, r3)
    let (mut a, mut b) = ([0u32; P], [0u32; P]);
    for l in 0..B {
        (a[l], a[B + l]) = (c[0][l] as u32, c[2][l] as u32);
        (b[l], b[B + l]) = (c[1][l] as u32, c[3][l] as u32);
    }
    let mut zs = [0.0f32; P];
    let mut zc = [0.0f32; P];
    for l in 0..P {
        let rad = (-2.0 * ln_unit(a[l])).sqrt();
        let (sin, cos) = sin_cos_turn(b[l]);
        (zs[l], zc[l]) = (rad * sin, rad * cos);
    }
    for l in 0..B {
        out[4 * l] = T::of(zc[l]);
        out[4 * l + 1] = T::of(zs[l]);
        out[4 * l + 2] = T::of(zc[B + l]);
        out[4 * l + 3] = T::of(zs[B + l]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::philox4x32;
    use std::f64::consts::TAU;

    /// Normal `i` of row `row` by the definition, with libm's ln, sin and cos.
    fn libm_normal(key: u64, row: u64, i: u64) -> f64 {
        let block = i / 4;
        let r = philox4x32(
            [
                block as u32,
                (block >> 32) as u32,
                row as u32,
                (row >> 32) as u32,
            ],
            [key as u32, (key >> 32) as u32],
        );
        let (a, b) = if i % 4 < 2 {
            (r[0], r[1])
        } else {
            (r[2], r[3])
        };
        let (u1, u2) = (
            (f64::from(a) + 0.5) / 2f64.powi(32),
            (f64::from(b) + 0.5) / 2f64.powi(32),
        );
        let rad = (-2.0 * u1.ln()).sqrt();
        rad * if i.is_multiple_of(2) {
            (TAU * u2).cos()
        } else {
            (TAU * u2).sin()
        }
    }

    /// The radius √(−2 ln u1) behind normal `i` (for the tolerance below).
    fn radius(key: u64, row: u64, i: u64) -> f64 {
        let (c, s) = (libm_normal(key, row, i & !1), libm_normal(key, row, i | 1));
        c.hypot(s)
    }

    /// The rows the tests draw: small, large and one beyond 2^32 (the counter's high word).
    const ROWS: [u64; 4] = [0, 1, 977, (7 << 32) + 5];

    #[test]
    fn values_follow_the_definition_within_f32_rounding() {
        // |z − z_libm| ≤ 6·2^-24·rad, for f32 arithmetic with ulp ≤ 2^-23 relative and 2^-24
        // absolute below 1: ln within 2 ulp of libm's (math.rs), so −2 ln u1 within 2^-22
        // relative and the radius within 2^-23 + 2^-24 (sqrt halves, then rounds) = 3·2^-24;
        // sin/cos within 2 ulp, 2·2^-24 absolute (math.rs); the product rounds by 2^-24·|z|.
        // libm's f64 reference is off by ~2^-50: nothing at this scale. 6·2^-24·rad ≤ 2.4e-6
        // at the largest radius, 6.76. Every value is an f32, widened.
        //
        // For rows below 2^32 libm_normal is the GPU backend's normal_at (smi-models,
        // cuda::philox) before its rounding to f32.
        let mut worst = 0.0f64;
        let key = 0x0123_4567_89ab_cdef;
        for row in ROWS {
            let mut z = vec![0.0; 4099];
            fill_normals(key, row, &mut z);
            for (i, &v) in z.iter().enumerate() {
                assert_eq!(f64::from(v as f32), v);
                let want = libm_normal(key, row, i as u64);
                let err = (v - want).abs() / radius(key, row, i as u64) * 2f64.powi(24);
                worst = worst.max(err);
                assert!(err <= 6.0, "row {row}, i {i}: {v} against {want}");
            }
        }
        eprintln!("largest error: {worst}·2^-24 of the radius");
    }

    #[test]
    fn every_build_gives_the_same_bits() {
        let bits = |f: &dyn Fn(&mut [f64]), n: usize| {
            let mut z = vec![0.0; n];
            f(&mut z);
            z.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        };
        for row in ROWS {
            let n = 3001; // 23 chunks of 128, 1 of 32 and a rest of 25
            let want = bits(&|z| fill_generic(9, row, z), n);
            assert_eq!(bits(&|z| fill_normals(9, row, z), n), want, "row {row}");
            #[cfg(target_arch = "x86_64")]
            {
                if has_avx2() {
                    // SAFETY: the CPU has AVX2 and FMA, checked just above.
                    assert_eq!(bits(&|z| unsafe { fill_avx2(9, row, z) }, n), want);
                }
                if has_avx512() {
                    // SAFETY: the CPU has the AVX-512 features, checked just above.
                    assert_eq!(bits(&|z| unsafe { fill_avx512(9, row, z) }, n), want);
                }
            }
        }
    }

    #[test]
    fn rows_together_are_rows_alone_in_every_build() {
        // short rows packed into shared lanes (from row 2^32 − 3: the counter's high word
        // changes inside a chunk), long rows one by one, and a partial last row
        let first = (1u64 << 32) - 3;
        for row_len in [1usize, 2, 3, 4, 5, 7, 10, 16, 31, 32, 33, 100] {
            for len in [
                row_len,
                6 * row_len,
                13 * row_len,
                13 * row_len - row_len.div_ceil(2),
            ] {
                let mut want = vec![0.0; len];
                for (r, row) in want.chunks_mut(row_len).enumerate() {
                    fill_normals(21, first + r as u64, row);
                }
                let bits = |z: &[f64]| z.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                let mut z = vec![0.0; len];
                rows_chunks(21, first, row_len, &mut z);
                assert_eq!(
                    bits(&z),
                    bits(&want),
                    "generic, rows of {row_len}, {len} values"
                );
                #[cfg(target_arch = "x86_64")]
                {
                    if has_avx2() {
                        // SAFETY: the CPU has AVX2 and FMA, checked just above.
                        unsafe { rows_avx2(21, first, row_len, &mut z) };
                        assert_eq!(bits(&z), bits(&want), "avx2, rows of {row_len}");
                    }
                    if has_avx512() {
                        // SAFETY: the CPU has the AVX-512 features, checked just above.
                        unsafe { rows_avx512(21, first, row_len, &mut z) };
                        assert_eq!(bits(&z), bits(&want), "avx512, rows of {row_len}");
                    }
                }
                let mut z32 = vec![0.0f32; len];
                fill_normal_rows_f32(21, first, row_len, &mut z32);
                assert!(z32
                    .iter()
                    .zip(&want)
                    .all(|(&a, b)| f64::from(a).to_bits() == b.to_bits()));
            }
        }
    }

    #[test]
    fn the_f32_normals_are_the_f64_ones_before_widening() {
        for n in [0, 1, 5, 31, 32, 127, 128, 129, 1000, 3302] {
            let (mut wide, mut narrow) = (vec![0.0f64; n], vec![0.0f32; n]);
            fill_normals(11, 7, &mut wide);
            fill_normals_f32(11, 7, &mut narrow);
            assert!(
                wide.iter()
                    .zip(&narrow)
                    .all(|(w, &z)| w.to_bits() == f64::from(z).to_bits()),
                "n = {n}"
            );
        }
    }

    #[test]
    fn a_short_row_is_the_prefix_of_a_long_one() {
        let mut long = vec![0.0; 300];
        fill_normals(3, 5, &mut long);
        for n in [
            0, 1, 3, 15, 16, 17, 31, 32, 33, 127, 128, 129, 160, 200, 255,
        ] {
            let mut short = vec![0.0; n];
            fill_normals(3, 5, &mut short);
            assert_eq!(short, long[..n]);
        }
        let mut other = vec![0.0; 300];
        fill_normals(3, 6, &mut other);
        assert!(other.iter().zip(&long).all(|(a, b)| a != b));
        fill_normals(4, 5, &mut other);
        assert!(other.iter().zip(&long).all(|(a, b)| a != b));
    }

    #[test]
    fn a_million_draws_have_the_normal_moments() {
        let (rows, d) = (1000usize, 1000usize);
        let mut z = vec![0.0; rows * d];
        for (r, row) in z.chunks_mut(d).enumerate() {
            fill_normals(0x5eed, r as u64, row);
        }
        let n = z.len() as f64;
        let mean = z.iter().sum::<f64>() / n;
        let var = z.iter().map(|v| v * v).sum::<f64>() / n;
        let m4 = z.iter().map(|v| v.powi(4)).sum::<f64>() / n;
        let tail2 = z.iter().filter(|v| v.abs() > 2.0).count() as f64 / n;
        let tail35 = z.iter().filter(|v| v.abs() > 3.5).count() as f64 / n;
        // neighbours in a row (the cos/sin pair of one u1 and across pairs) and across rows
        let lag1 = z.windows(2).map(|w| w[0] * w[1]).sum::<f64>() / n;
        let across = (0..(rows - 1) * d).map(|i| z[i] * z[i + d]).sum::<f64>() / n;
        // bounds of 5 standard errors with n = 10⁶: mean 1/√n = 1e-3, E z² √(2/n) = 1.4e-3,
        // E z⁴ √(96/n) = 9.8e-3, P(|z| > 2) = 0.0455 with √(p(1−p)/n) = 2.1e-4,
        // P(|z| > 3.5) = 4.65e-4 with 2.2e-5, products of neighbours 1/√n = 1e-3
        assert!(mean.abs() < 5e-3, "mean {mean}");
        assert!((var - 1.0).abs() < 7e-3, "E z² {var}");
        assert!((m4 - 3.0).abs() < 0.049, "E z⁴ {m4}");
        assert!((tail2 - 0.045_500).abs() < 1.05e-3, "P(|z| > 2) {tail2}");
        assert!((tail35 - 4.653e-4).abs() < 1.1e-4, "P(|z| > 3.5) {tail35}");
        assert!(lag1.abs() < 5e-3 && across.abs() < 5e-3, "{lag1} {across}");
        // the cut tails: |z| ≤ √(66 ln 2) rounded to f32 (math.rs)
        let cut = f64::from((66.0 * 2f64.ln()).sqrt() as f32);
        assert!(z.iter().all(|v| v.abs() <= cut));
    }
}
