//! ln, sin and cos for the Box–Muller transform as fixed sequences of IEEE operations.
//!
//! Every multiply-add is an `f64::mul_add` (one rounding, the same in every build), and there is
//! no table and no branch on the value, so a loop over lanes of these functions vectorises
//! and every vector build gives the bits of the scalar one. The polynomials are fdlibm's
//! (Sun Microsystems 1993, as in musl's `log`, `__sin`, `__cos`), evaluated with fused
//! multiply-adds; the tests measure them against the platform's libm.

use std::f64::consts::TAU;

/// ln 2, upper part: its low bits are zero, so k·`LN2_HI` is exact for |k| < 2^11.
const LN2_HI: f64 = 6.931_471_803_691_238e-1;
/// ln 2 − `LN2_HI`.
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
/// Coefficients of ln((1 + s)/(1 − s)) = 2s + s·R(s²) (fdlibm's minimax fit, |s| ≤ 0.1716).
const LG: [f64; 7] = [
    6.666_666_666_666_735e-1,
    3.999_999_999_940_942e-1,
    2.857_142_874_366_239e-1,
    2.222_219_843_214_978_4e-1,
    1.818_357_216_161_805e-1,
    1.531_383_769_920_937_3e-1,
    1.479_819_860_511_658_6e-1,
];
/// sin x = x + x³·(S1 + x²·r(x²)) on |x| ≤ π/4 (fdlibm).
const S: [f64; 6] = [
    -1.666_666_666_666_663_2e-1,
    8.333_333_333_322_49e-3,
    -1.984_126_982_985_795e-4,
    2.755_731_370_707_006_8e-6,
    -2.505_076_025_340_686_3e-8,
    1.589_690_995_211_55e-10,
];
/// cos x = 1 − x²/2 + x⁴·r(x²) on |x| ≤ π/4 (fdlibm).
const C: [f64; 6] = [
    4.166_666_666_666_66e-2,
    -1.388_888_888_887_411e-3,
    2.480_158_728_947_673e-5,
    -2.755_731_435_139_066_3e-7,
    2.087_572_321_298_175e-9,
    -1.135_964_755_778_819_5e-11,
];

/// ln x for a positive normal finite `x` (here x ∈ [2^-33, 1)): x = 2^k·(1 + f) with
/// 1 + f ∈ [√2/2, √2), then ln(1 + f) = 2 atanh(s), s = f/(2 + f), from fdlibm's series.
/// Within 1 ulp of libm's `ln` over the inputs tested (see the tests).
#[inline(always)]
pub(super) fn ln(x: f64) -> f64 {
    let bits = x.to_bits();
    // move the mantissa's top bits so that the exponent of 1 + f comes out as 0 or −1
    let hx = ((bits >> 32) as u32).wrapping_add(0x3ff0_0000 - 0x3fe6_a09e);
    let k = (hx >> 20) as i32 - 0x3ff;
    let hx = (hx & 0x000f_ffff) + 0x3fe6_a09e;
    let f = f64::from_bits((u64::from(hx) << 32) | (bits & 0xffff_ffff)) - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let even = w * w.mul_add(w.mul_add(LG[5], LG[3]), LG[1]);
    let odd = w.mul_add(w.mul_add(w.mul_add(LG[6], LG[4]), LG[2]), LG[0]);
    let r = z.mul_add(odd, even);
    let dk = f64::from(k);
    dk.mul_add(LN2_HI, (s.mul_add(hfsq + r, dk * LN2_LO) - hfsq) + f)
}

/// sin x on |x| ≤ π/4.
#[inline(always)]
fn sin_kernel(x: f64) -> f64 {
    let z = x * x;
    let w = z * z;
    let r = (z * w).mul_add(
        z.mul_add(S[5], S[4]),
        z.mul_add(z.mul_add(S[3], S[2]), S[1]),
    );
    (z * x).mul_add(z.mul_add(r, S[0]), x)
}

/// cos x on |x| ≤ π/4.
#[inline(always)]
fn cos_kernel(x: f64) -> f64 {
    let z = x * x;
    let w = z * z;
    let r = (w * w).mul_add(
        z.mul_add(z.mul_add(C[5], C[4]), C[3]),
        z * z.mul_add(z.mul_add(C[2], C[1]), C[0]),
    );
    let hz = 0.5 * z;
    let one_minus = 1.0 - hz;
    one_minus + z.mul_add(r, (1.0 - one_minus) - hz)
}

/// (sin, cos) of the angle 2π·u, u = (b + 1/2)·2^-32 ∈ (0, 1), for a 32-bit word `b` held in
/// a `u64` (the high bits zero).
///
/// Reduced by whole quarter turns exactly, in integers: u = q/4 + t·2^-32 with q = round(4u)
/// and t + 1/2 ∈ (−2^29, 2^29), so the angle x = 2π·t·2^-32 of the kernels lies in (−π/4, π/4)
/// and carries the one rounding of the product by 2π; then (sin, cos) of qπ/2 + x are ± the
/// kernels' values, swapped for odd q.
#[inline(always)]
pub(super) fn sin_cos_turn(b: u64) -> (f64, f64) {
    // b + 2^29 = q·2^30 + (t + 2^29), 0 ≤ t + 2^29 < 2^30; q only matters mod 4
    let shifted = (b + (1 << 29)) & 0xffff_ffff;
    let q = shifted >> 30;
    let t = small_to_f64(shifted & ((1 << 30) - 1)) - ((1 << 29) as f64 - 0.5);
    let x = t * (TAU / 4_294_967_296.0);
    let (s, c) = (sin_kernel(x), cos_kernel(x));
    let (s, c) = if q & 1 == 1 { (c, s) } else { (s, c) };
    let sin = if q & 2 == 2 { -s } else { s };
    let cos = if (q + 1) & 2 == 2 { -c } else { c };
    (sin, cos)
}

/// `x` < 2^52 as an `f64`, exactly: the bits of 2^52 + x less 2^52 (one subtraction, the same
/// in every build; 64-bit integer to float conversion has no AVX2 instruction).
#[inline(always)]
pub(super) fn small_to_f64(x: u64) -> f64 {
    const TWO52: f64 = 4_503_599_627_370_496.0;
    f64::from_bits(TWO52.to_bits() | x) - TWO52
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rand::{ChaCha8Rng, SeedableRng};
    use rand::Rng;

    /// |a − b| in units of the last place of b.
    fn ulps(a: f64, b: f64) -> f64 {
        let ulp = f64::from_bits(b.abs().to_bits() + 1) - b.abs();
        (a - b).abs() / ulp
    }

    /// The u of the Box–Muller transform for a 32-bit word.
    fn unit(a: u32) -> f64 {
        (f64::from(a) + 0.5) * 2f64.powi(-32)
    }

    #[test]
    fn ln_is_within_one_ulp_of_libm() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        // every u the generator makes at the extremes, near 1/2 and √2/2 (the reduction's
        // seams), powers of two, and 10⁶ random words; then 10⁵ positive normal numbers of any
        // exponent
        let seams = [0u32, 1 << 31, 0xb504_f334, 1 << 30, u32::MAX - 1000];
        let mut inputs: Vec<f64> = seams
            .iter()
            .flat_map(|&s| (0..2000u32).map(move |i| unit(s.wrapping_add(i))))
            .collect();
        inputs.extend((0..1_000_000).map(|_| unit(rng.random())));
        inputs.extend((0..100_000).map(|_| {
            let e: i32 = rng.random_range(-1000..1000);
            rng.random_range(1.0..2.0) * 2f64.powi(e)
        }));
        let mut worst = (0.0, 0.0);
        for x in inputs {
            let e = ulps(ln(x), x.ln());
            if e > worst.0 {
                worst = (e, x);
            }
        }
        // fdlibm's log is within 1 ulp of ln, so within 1.5 ulp of libm's; 1 ulp is asked
        assert!(worst.0 <= 1.0, "{} ulp at {}", worst.0, worst.1);
        eprintln!(
            "ln: largest difference from libm {} ulp at {}",
            worst.0, worst.1
        );
        // the extremes u1 = 2^-33 and 1 − 2^-33 (ln ≈ −2^-33: relative accuracy kept)
        for x in [unit(0), unit(u32::MAX)] {
            assert!(ulps(ln(x), x.ln()) <= 1.0, "{x}");
        }
    }

    #[test]
    fn sin_cos_kernels_are_within_one_ulp_of_libm() {
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let quarter = std::f64::consts::FRAC_PI_4;
        let mut worst = 0.0f64;
        for i in 0..1_000_000 {
            // uniform on [−π/4, π/4], and tiny angles on a log scale
            let x = if i % 4 == 0 {
                rng.random_range(-1.0f64..1.0) * 2f64.powi(rng.random_range(-40..0))
            } else {
                rng.random_range(-quarter..=quarter)
            };
            worst = worst.max(ulps(sin_kernel(x), x.sin()));
            worst = worst.max(ulps(cos_kernel(x), x.cos()));
        }
        assert!(worst <= 1.0, "{worst} ulp");
        eprintln!("sin/cos kernels: largest difference from libm {worst} ulp");
    }

    #[test]
    fn turns_are_reduced_exactly() {
        // the kernels' angle against libm's sin/cos of the same reduced angle, rotated by the
        // quarter turns in exact arithmetic: at most one ulp (the kernels' own error)
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let edges = [
            0u32,
            1 << 29,
            1 << 30,
            3 << 29,
            1 << 31,
            5 << 29,
            3 << 30,
            7 << 29,
        ];
        let words = edges
            .iter()
            .flat_map(|&e| {
                (0..200u32).flat_map(move |i| [e.wrapping_add(i), e.wrapping_sub(i + 1)])
            })
            .chain((0..200_000).map(|_| rng.random::<u32>()));
        let mut worst = 0.0f64;
        for b in words {
            let u = unit(b);
            let q = (4.0 * u).round();
            let x = (u - q / 4.0) * TAU; // u − q/4 is exact
            let (s, c) = (x.sin(), x.cos());
            let (ws, wc) = match q as u32 % 4 {
                0 => (s, c),
                1 => (c, -s),
                2 => (-s, -c),
                _ => (-c, s),
            };
            let (gs, gc) = sin_cos_turn(u64::from(b));
            worst = worst.max(ulps(gs, ws)).max(ulps(gc, wc));
            // and the plain formula sin(2πu) of libm, whose angle 2π·u is off by its rounding
            // (≤ 2^-51 for 2πu < 8) and by q quarter turns of the rounded 2π (≤ 4·(π/2)·2^-53
            // = 7.0e-16, exact here); with the kernels' and libm's own 1.5 ulp of 1:
            // ≤ 1.6e-15 < 2^-49 apart
            let (ls, lc) = ((TAU * u).sin(), (TAU * u).cos());
            let tol = 2f64.powi(-49);
            assert!((gs - ls).abs() <= tol && (gc - lc).abs() <= tol, "b = {b}");
        }
        assert!(worst <= 1.0, "{worst} ulp");
        eprintln!("sin/cos of turns: largest difference from libm {worst} ulp");
    }
}
