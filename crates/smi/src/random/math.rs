//! ln and sin/cos in `f32` arithmetic for the Box–Muller transform, as fixed sequences of IEEE
//! operations.
//!
//! Every multiply-add is an `f32::mul_add` (one rounding, the same in every build), every
//! integer-to-float conversion is exact (integers below 2^24, or multiples of a power of two
//! with at most 24 significant bits), and there is no table and no branch on the value (only
//! selects), so a loop over lanes of these functions vectorises (16 lanes with AVX-512, 8 with
//! AVX2) and every vector build gives the bits of the scalar one. The arguments are reduced
//! exactly in integers from the 32-bit words; the polynomials are Cephes' single-precision
//! minimax fits (Stephen L. Moshier, Cephes Math Library 2.2, `logf.c`, `sinf.c`; the same
//! coefficients as in `sse_mathfun`), evaluated with fused multiply-adds. The tests measure
//! them against the platform's `f64` libm.

/// ln 2, upper part: 355/512 = 0.693359375 exactly, so k·`LN2_HI` is exact for |k| < 2^15
/// (Cephes `logf`).
const LN2_HI: f32 = 0.693_359_4;
/// ln 2 − `LN2_HI` (Cephes `logf`: −2.12194440e-4).
const LN2_LO: f32 = -0.000_212_194_44;
/// ln(1 + f) = f − f²/2 + f³·P(f) on f ∈ [√2/2 − 1, √2 − 1], P's coefficients from the highest
/// degree down (Cephes `logf`: 7.0376836292E-2, −1.1514610310E-1, 1.1676998740E-1,
/// −1.2420140846E-1, 1.4249322787E-1, −1.6668057665E-1, 2.0000714765E-1, −2.4999993993E-1,
/// 3.3333331174E-1, here as the nearest `f32`s).
const LOG_P: [f32; 9] = [
    0.070_376_836,
    -0.115_146_1,
    0.116_769_984,
    -0.124_201_41,
    0.142_493_23,
    -0.166_680_57,
    0.200_007_14,
    -0.249_999_94,
    0.333_333_3,
];
/// sin x = x + x³·S(x²) on |x| ≤ π/4, S's coefficients from the highest degree down (Cephes
/// `sinf`: −1.9515295891E-4, 8.3321608736E-3, −1.6666654611E-1).
const SIN_S: [f32; 3] = [-0.000_195_152_96, 0.008_332_161, -0.166_666_55];
/// cos x = 1 − x²/2 + x⁴·C(x²) on |x| ≤ π/4, C's coefficients from the highest degree down
/// (Cephes `cosf`: 2.443315711809948E-5, −1.388731625493765E-3, 4.166664568298827E-2).
const COS_C: [f32; 3] = [2.443_315_7e-5, -0.001_388_731_6, 0.041_666_646];
/// 2π·2^-32 rounded to `f32` (the angle of one unit of a 32-bit word).
const TURN_HI: f32 = 1.462_918_1e-9;
/// 2π·2^-32 − `TURN_HI` (4.07e-17: the pair carries 2π·2^-32 to about 2^-48 relative).
const TURN_LO: f32 = -4.070_940_3e-17;

/// x + 1/2 for an integer `x`, |x| < 2^31, as two `f32`s whose sum it is, exactly: the multiple
/// of 256 (at most 23 significant bits) and the rest plus 1/2 (below 256), so that every
/// conversion is exact. Their sum rounded once is x + 1/2 rounded to nearest.
#[inline(always)]
fn split_plus_half(x: i32) -> (f32, f32) {
    ((x & !0xff) as f32, (x & 0xff) as f32 + 0.5)
}

/// ln u for u = (a + 1/2)·2^-32, the Box–Muller u1 of a 32-bit word `a`.
///
/// u = 2^k·(1 + f) with 1 + f ∈ [√2/2, √2) and k ∈ [−33, 0] (k is read from the exponent of
/// u rounded to `f32`); f = (a + 1/2 − 2^(32+k))·2^(−32−k) is made from the exact integer
/// a − 2^(32+k) with one rounding. So f has a relative error ≤ 2^-24 for every word, and near
/// u = 1 (k = 0, f = −(1 − u)) ln u keeps its relative accuracy down to 1 − u = 2^-33; at the
/// other end, u = 2^-33 (a = 0, k = −33, f = 0) gives −33 ln 2 to the rounding of two
/// multiply-adds. Then ln u = k ln 2 + ln(1 + f) with Cephes' polynomial.
#[inline(always)]
pub(super) fn ln_unit(a: u32) -> f32 {
    // u rounded to f32 once (a >> 8 < 2^24 and the rest are exact), for its exponent only
    let u = ((a >> 8) as i32 as f32).mul_add(
        1.0 / 16_777_216.0,
        ((a & 0xff) as i32 as f32 + 0.5) * (1.0 / 4_294_967_296.0),
    );
    // move the mantissa's top bits so that the exponent of 1 + f comes out as k
    let k = (u.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3) >> 23) as i32 - 127;
    // a − 2^(32+k) in 32-bit two's complement (2^32 ≡ 0 for k = 0); |·| < 0.42·2^(32+k) ≤ 2^31
    let shift = (32 + k) as u32 & 31;
    let power = if k == 0 { 0 } else { 1u32 << shift };
    let e = a.wrapping_sub(power) as i32;
    // (e + 1/2)·2^(−32−k); for a = 0 (k = −33, 2^(32+k) = 1/2) f is exactly 0
    let scale = f32::from_bits(((95 - k) as u32) << 23);
    let f = if k == -33 {
        0.0
    } else {
        let (hi, lo) = split_plus_half(e);
        (hi + lo) * scale
    };
    let mut p = LOG_P[0];
    for c in &LOG_P[1..] {
        p = p.mul_add(f, *c);
    }
    let dk = k as f32;
    let y = dk.mul_add(LN2_LO, (f * f * f) * p);
    let y = (-0.5 * f).mul_add(f, y);
    dk.mul_add(LN2_HI, f + y)
}

/// sin x on |x| ≤ π/4.
#[inline(always)]
fn sin_kernel(x: f32) -> f32 {
    let z = x * x;
    let s = SIN_S[0].mul_add(z, SIN_S[1]).mul_add(z, SIN_S[2]);
    (z * x).mul_add(s, x)
}

/// cos x on |x| ≤ π/4.
#[inline(always)]
fn cos_kernel(x: f32) -> f32 {
    let z = x * x;
    let c = COS_C[0].mul_add(z, COS_C[1]).mul_add(z, COS_C[2]);
    // 1 − x²/2 rounded once, plus its rounding error (1 − w is exact: w ∈ [0.69, 1])
    let w = (-0.5 * x).mul_add(x, 1.0);
    let err = (-0.5 * x).mul_add(x, 1.0 - w);
    w + (z * z).mul_add(c, err)
}

/// (sin, cos) of the angle 2π·u, u = (b + 1/2)·2^-32 ∈ (0, 1), for a 32-bit word `b`.
///
/// Reduced by whole quarter turns exactly, in integers: u = q/4 + t·2^-32 with q = round(4u)
/// and t + 1/2 an integer, |t| < 2^29, so the angle x = 2π·t·2^-32 of the kernels lies in
/// (−π/4, π/4); t is held exactly as the sum of two `f32`s and x carries one rounding (of t
/// times 2π·2^-32 held in two floats, to ~2^-48 relative). Then (sin, cos) of qπ/2 + x are ±
/// the kernels' values, swapped for odd q.
#[inline(always)]
pub(super) fn sin_cos_turn(b: u32) -> (f32, f32) {
    // b + 2^29 = q·2^30 + (t + 2^29 − 1/2), q only matters mod 4
    let shifted = b.wrapping_add(1 << 29);
    let q = shifted >> 30;
    let d = (shifted & ((1 << 30) - 1)) as i32 - (1 << 29);
    // t = hi + lo exactly, t ≈ th, t = th + tl (Fast2Sum: |hi| ≥ 256 > lo unless hi = 0, and
    // then th = lo, tl = 0)
    let (hi, lo) = split_plus_half(d);
    let th = hi + lo;
    let tl = lo - (th - hi);
    let x = th.mul_add(TURN_HI, tl.mul_add(TURN_HI, th * TURN_LO));
    let (s, c) = (sin_kernel(x), cos_kernel(x));
    let (s, c) = if q & 1 == 1 { (c, s) } else { (s, c) };
    let sin = if q & 2 == 2 { -s } else { s };
    let cos = if (q + 1) & 2 == 2 { -c } else { c };
    (sin, cos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rand::{ChaCha8Rng, SeedableRng};
    use rand::Rng;
    use std::f64::consts::TAU;

    /// |a − b| in units of the last place of b rounded to f32 (the spacing of the f32s at |b|).
    fn ulps(a: f32, b: f64) -> f64 {
        let r = (b as f32).abs();
        let ulp = f64::from(f32::from_bits(r.to_bits() + 1) - r);
        (f64::from(a) - b).abs() / ulp
    }

    /// The u of the Box–Muller transform for a 32-bit word.
    fn unit(a: u32) -> f64 {
        (f64::from(a) + 0.5) * 2f64.powi(-32)
    }

    /// Words near the ends, near 1/2 and √2/2 (seams of the reduction) and near 2^-k·√2/2 for
    /// small k (where the integer a − 2^(32+k) grows past 2^24), then `n` random words.
    fn words(seed: u64, seams: &[u32], n: usize) -> Vec<u32> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        seams
            .iter()
            .flat_map(|&s| (0..2000u32).map(move |i| s.wrapping_add(i).wrapping_sub(1000)))
            .chain((0..n).map(|_| rng.random()))
            .collect()
    }

    #[test]
    fn ln_is_within_two_ulp_of_libm() {
        let seams = [
            1000,
            1 << 31,
            0xb504_f334,
            0x5a82_799a,
            0x2d41_3ccd,
            1 << 30,
            1 << 24,
            1 << 23,
            u32::MAX - 999,
        ];
        let mut worst = (0.0, 0);
        for a in words(5, &seams, 1_000_000) {
            let e = ulps(ln_unit(a), unit(a).ln());
            if e > worst.0 {
                worst = (e, a);
            }
        }
        // Cephes' polynomial is within ~1 ulp of ln(1 + f) and f has a relative error
        // ≤ 2^-24, which moves ln(1 + f) by ≤ 1.2·2^-24 relative: 2 ulp is asked
        assert!(worst.0 <= 2.0, "{} ulp at a = {}", worst.0, worst.1);
        eprintln!(
            "ln: largest difference from libm {} ulp at a = {}",
            worst.0, worst.1
        );
        // the extremes u1 = 2^-33 and 1 − 2^-33 (ln ≈ −2^-33: relative accuracy kept)
        for a in [0, 1, u32::MAX - 1, u32::MAX] {
            assert!(ulps(ln_unit(a), unit(a).ln()) <= 1.0, "{a}");
        }
        // the largest radius, at a = 0, is √(66 ln 2) rounded to f32, 6.7637057 (9.5e-8 above
        // it); any other word has |ln u1| ≤ −ln(1.5·2^-32) ≈ 21.8 < 33 ln 2 ≈ 22.9 by far more
        // than 2 ulp, and |sin|, |cos| ≤ 1 below: so |z| ≤ that f32
        let rad = (-2.0 * ln_unit(0)).sqrt();
        assert_eq!(rad, (66.0 * std::f64::consts::LN_2).sqrt() as f32);
    }

    #[test]
    fn sin_cos_kernels_are_within_one_ulp_of_libm() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let quarter = std::f32::consts::FRAC_PI_4;
        let mut worst = 0.0f64;
        for i in 0..1_000_000 {
            // uniform on [−π/4, π/4], and tiny angles on a log scale
            let x: f32 = if i % 4 == 0 {
                rng.random_range(-1.0f32..1.0) * 2f32.powi(rng.random_range(-40..0))
            } else {
                rng.random_range(-quarter..=quarter)
            };
            worst = worst.max(ulps(sin_kernel(x), f64::from(x).sin()));
            worst = worst.max(ulps(cos_kernel(x), f64::from(x).cos()));
        }
        assert!(worst <= 1.0, "{worst} ulp");
        eprintln!("sin/cos kernels: largest difference from libm {worst} ulp");
    }

    #[test]
    fn turns_are_reduced_exactly() {
        // against libm's f64 sin/cos of 2πu, reduced by the quarter turns in exact arithmetic
        // (u − q/4 is exact in f64): the kernels' own error plus the roundings of t and x
        let edges = [
            0u32,
            1 << 29,
            1 << 30,
            3 << 29,
            1 << 31,
            5 << 29,
            3 << 30,
            7 << 29,
            1 << 22,
            1 << 23,
        ];
        let mut worst = 0.0f64;
        for b in words(7, &edges, 500_000) {
            let u = unit(b);
            let q = (4.0 * u).round();
            let x = (u - q / 4.0) * TAU;
            let (s, c) = (x.sin(), x.cos());
            let (ws, wc) = match q as u32 % 4 {
                0 => (s, c),
                1 => (c, -s),
                2 => (-s, -c),
                _ => (-c, s),
            };
            let (gs, gc) = sin_cos_turn(b);
            assert!(gs.abs() <= 1.0 && gc.abs() <= 1.0, "b = {b}");
            worst = worst.max(ulps(gs, ws)).max(ulps(gc, wc));
        }
        assert!(worst <= 2.0, "{worst} ulp");
        eprintln!("sin/cos of turns: largest difference from libm {worst} ulp");
    }
}
