//! The categorical log-likelihood of a block of network outputs (log-softmax at the labels and
//! its gradient), with the exponentials in a vectorised `f64` kernel.
//!
//! The scalar form calls libm's `exp` once per class and row and `ln` once per row; with few
//! classes those calls were a quarter of a classifier step. Here the shifted logits of a block
//! of rows go through a branch-free exp (compiled for AVX2 + FMA where the CPU has them, 4 lanes),
//! and the per-row normalisers are multiplied together (taking the exponent apart after each
//! block, so the product cannot overflow) so that one `ln` serves the whole call.

use super::MlpFloat;

/// Values per block of shifted logits (a stack buffer).
const BLOCK: usize = 512;

/// Σ_rows log softmax(z_i)\[label_i\] and its gradient, for `z` (n × `classes`, row-major) with
/// `label(i)` the class of row i.
///
/// Writes `dz` (n × `classes`) = `scale` · (onehot(label_i) − softmax(z_i)) and returns
/// `scale` · Σ_i (z_i\[label_i\] − logsumexp(z_i)); the arithmetic is in `f64`. A NaN logit
/// makes the sum NaN.
pub(crate) fn categorical_log_lik<T: MlpFloat>(
    z: &[T],
    classes: usize,
    label: impl Fn(usize) -> usize,
    scale: f64,
    dz: &mut [T],
) -> f64 {
    let c = classes;
    let rows_per_block = (BLOCK / c).max(1);
    let mut stack = [0.0f64; BLOCK];
    let mut heap = Vec::new();
    let buf: &mut [f64] = if c <= BLOCK {
        &mut stack
    } else {
        heap.resize(c, 0.0);
        &mut heap
    };
    // Σ (z_label − max) and Π s_i = 2^exponent · mantissa, s_i = Σ_j exp(z_ij − max_i)
    let mut picked = 0.0;
    let mut exponent = 0i64;
    let mut mantissa = 1.0f64;
    let mut row0 = 0;
    for (zb, db) in z
        .chunks(rows_per_block * c)
        .zip(dz.chunks_mut(rows_per_block * c))
    {
        let e = &mut buf[..zb.len()];
        for (i, (er, zr)) in e.chunks_exact_mut(c).zip(zb.chunks_exact(c)).enumerate() {
            let m = zr
                .iter()
                .map(|&v| v.to_f64())
                .fold(f64::NEG_INFINITY, f64::max);
            for (ev, &zv) in er.iter_mut().zip(zr) {
                *ev = zv.to_f64() - m;
            }
            picked += er[label(row0 + i)];
        }
        exp_in_place(e);
        // each s_i is in [1, classes] (the largest term is exp(0) = 1), so the product over a
        // block is at most classes^(BLOCK / classes) ≤ 2²⁷² and cannot overflow
        let mut product = mantissa;
        for (i, (er, dr)) in e.chunks_exact(c).zip(db.chunks_exact_mut(c)).enumerate() {
            let s: f64 = er.iter().sum();
            product *= s;
            let inv = scale / s;
            for (d, &ev) in dr.iter_mut().zip(er) {
                *d = T::of_f64(-ev * inv);
            }
            let lab = label(row0 + i);
            dr[lab] = T::of_f64(dr[lab].to_f64() + scale);
        }
        let (m, x) = split_exponent(product);
        mantissa = m;
        exponent += x;
        row0 += zb.len() / c;
    }
    scale * (picked - (mantissa.ln() + exponent as f64 * std::f64::consts::LN_2))
}

/// (m, e) with v = m · 2^e and m in [1, 2), for positive normal `v`; (v, 0) otherwise (NaN and
/// infinity pass through into the final `ln`).
#[inline(always)]
fn split_exponent(v: f64) -> (f64, i64) {
    let bits = v.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i64;
    if v > 0.0 && biased != 0 && biased != 0x7ff {
        let m = f64::from_bits((bits & !(0x7ff << 52)) | (1023 << 52));
        (m, biased - 1023)
    } else {
        (v, 0)
    }
}

/// exp of every entry, in place (AVX2 + FMA where the CPU has them); see [`exp_f64`] for
/// the accuracy.
pub(crate) fn exp_in_place(xs: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if smi_simd::level() >= smi_simd::Level::Avx2Fma {
        // SAFETY: the CPU supports AVX2 and FMA, checked just above.
        unsafe { exp_in_place_avx2_fma(xs) };
        return;
    }
    xs.iter_mut().for_each(|v| *v = exp_f64::<false>(*v));
}

/// [`exp_in_place`] compiled for AVX2 and FMA.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn exp_in_place_avx2_fma(xs: &mut [f64]) {
    xs.iter_mut().for_each(|v| *v = exp_f64::<true>(*v));
}

/// exp(x) without a libm call and without branches (it vectorises); relative error below
/// 3e-16 (measured by `exp_is_accurate`); 0 below −708 (where exp is subnormal), +∞ above
/// 709.78, NaN propagates.
///
/// x = n·ln 2 + r with |r| ≤ ln 2 / 2 (ln 2 in two parts, so r is exact to about 2⁻⁶⁰), exp(r)
/// by its Taylor polynomial of degree 13 (truncation below 4e-18), then 2ⁿ by building the
/// exponent bits.
#[inline(always)]
fn exp_f64<const FMA: bool>(x: f64) -> f64 {
    #[inline(always)]
    fn madd<const FMA: bool>(a: f64, b: f64, c: f64) -> f64 {
        if FMA {
            a.mul_add(b, c)
        } else {
            a * b + c
        }
    }
    // fdlibm's split of ln 2: the high part has 32 significant bits, so n·LN2_HI is exact
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    const SHIFTER: f64 = 6_755_399_441_055_744.0;
    // 1/k! for k = 13 down to 2
    const C: [f64; 12] = [
        1.0 / 6_227_020_800.0,
        1.0 / 479_001_600.0,
        1.0 / 39_916_800.0,
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
    ];
    // clamp keeps NaN; beyond the clamp the result is 0 or +∞ (selected below)
    let xc = x.clamp(-708.0, 709.78);
    // n = round(x / ln 2) in the low bits of t (adding 1.5·2⁵² rounds to an integer), so that
    // 2ⁿ is built with integer lane operations (AVX2 has no f64 → i64 conversion)
    let t = madd::<FMA>(xc, std::f64::consts::LOG2_E, SHIFTER);
    let n = t - SHIFTER;
    let r = madd::<FMA>(-n, LN2_LO, madd::<FMA>(-n, LN2_HI, xc));
    let p = C[1..].iter().fold(C[0], |acc, &k| madd::<FMA>(acc, r, k));
    let p = madd::<FMA>(madd::<FMA>(p, r, 1.0), r, 1.0);
    // n is in [−1021, 1024]: 2ⁿ = 2 · 2ⁿ⁻¹ keeps the exponent field in range
    let n_bits = t.to_bits().wrapping_sub(SHIFTER.to_bits());
    let scale = f64::from_bits(n_bits.wrapping_add(1022) << 52);
    let y = (p * 2.0) * scale;
    if x < -708.0 {
        0.0
    } else if x > 709.78 {
        f64::INFINITY
    } else {
        y
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exp_is_accurate() {
        let mut xs: Vec<f64> = (0..200_001).map(|i| -700.0 + i as f64 * 7.0e-3).collect();
        xs.extend([
            0.0,
            -0.0,
            1e-300,
            -1e-17,
            0.5 * std::f64::consts::LN_2,
            709.7,
        ]);
        let mut ys = xs.clone();
        exp_in_place(&mut ys);
        let mut worst = 0.0f64;
        for (&x, &y) in xs.iter().zip(&ys) {
            let want = x.exp();
            worst = worst.max((y - want).abs() / want);
        }
        // a few roundings of the polynomial and of r (≈ 1–2 ulp = 1.1e-16 each); 3e-16 bounds it
        assert!(worst < 3e-16, "worst relative error {worst}");
        let mut edge = [-800.0, -f64::INFINITY, 710.0, f64::INFINITY, f64::NAN];
        exp_in_place(&mut edge);
        assert_eq!(&edge[..4], &[0.0, 0.0, f64::INFINITY, f64::INFINITY]);
        assert!(edge[4].is_nan());
    }

    /// The scalar form this replaces.
    fn reference(z: &[f64], c: usize, labels: &[usize], scale: f64) -> (f64, Vec<f64>) {
        let mut ll = 0.0;
        let mut dz = vec![0.0; z.len()];
        for (i, (zr, dr)) in z.chunks_exact(c).zip(dz.chunks_exact_mut(c)).enumerate() {
            let m = zr.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = zr.iter().map(|v| (v - m).exp()).sum();
            ll += zr[labels[i]] - m - s.ln();
            for (d, v) in dr.iter_mut().zip(zr) {
                *d = -scale * (v - m).exp() / s;
            }
            dr[labels[i]] += scale;
        }
        (scale * ll, dz)
    }

    #[test]
    fn matches_the_scalar_log_softmax() {
        // several blocks (512 / 3 rows each), a wide row (more classes than a block holds),
        // and logits far apart (underflowing terms)
        for (n, c, spread) in [(1000, 3, 4.0), (7, 2, 1.0), (3, 600, 30.0), (50, 10, 800.0)] {
            let z: Vec<f64> = (0..n * c)
                .map(|i| spread * ((i as f64 * 0.731).sin() + 0.3 * (i as f64 * 0.07).cos()))
                .collect();
            let labels: Vec<usize> = (0..n).map(|i| (i * 7 + 3) % c).collect();
            let (want, want_dz) = reference(&z, c, &labels, 2.5);
            let mut dz = vec![0.0; n * c];
            let got = categorical_log_lik(&z, c, |i| labels[i], 2.5, &mut dz);
            // sums of n terms of size ≤ |z|: rounding ≈ n · 1e-16 relative
            assert!(
                (got - want).abs() <= 1e-12 * want.abs().max(1.0),
                "n={n} c={c}: {got} vs {want}"
            );
            for (a, b) in dz.iter().zip(&want_dz) {
                assert!((a - b).abs() <= 1e-14 * 2.5, "n={n} c={c}: {a} vs {b}");
            }
        }
    }
}
