//! The device's random streams computed on the host: Philox4x32-10 normals and the Feistel
//! row permutation of the kernels `sample_theta` and `sample_rows` (see `kernels.rs`).
//!
//! Counter-based, so value i of a stream costs the same anywhere: the device draws ε (K×d)
//! and the mini-batch rows (K×b) itself, and nothing of that size crosses PCIe. The host
//! versions let tests check the device streams and reproduce a step without a GPU. The block
//! function is the core's [`philox4x32`], whose normals ([`smi::random::fill_normals`], the
//! same Box–Muller transform of the same words in `f32` arithmetic) agree with this module's
//! [`normal_at`] to a few `f32` ulp.

use smi::random::philox4x32;

/// The Philox key of a 64-bit seed.
fn key_of(seed: u64) -> [u32; 2] {
    [seed as u32, (seed >> 32) as u32]
}

/// Standard normal number `i` of stream `stream` under `seed`, as the device's `normal_at`
/// computes it (Box–Muller in `f64` on the lane pairs of counter (i/4, stream), rounded to
/// `f32`; device and host libm may differ in the last bit of the `f64` before that rounding).
/// The core's [`smi::random::fill_normals`] computes the same transform in `f32` arithmetic:
/// the two agree to a few `f32` ulp (within 8·2^-24 of the radius √(−2 ln u1), tested).
pub fn normal_at(seed: u64, stream: u32, i: u64) -> f32 {
    let block = i >> 2;
    let r = philox4x32(
        [block as u32, (block >> 32) as u32, stream, 0],
        key_of(seed),
    );
    let lane = (i & 3) as usize;
    let (a, b) = if lane < 2 { (r[0], r[1]) } else { (r[2], r[3]) };
    let u1 = (f64::from(a) + 0.5) * 2.328_306_436_538_696_3e-10;
    let u2 = (f64::from(b) + 0.5) * 2.328_306_436_538_696_3e-10;
    let rad = (-2.0 * u1.ln()).sqrt();
    let angle = std::f64::consts::TAU * u2;
    let z = if lane & 1 == 1 {
        rad * angle.sin()
    } else {
        rad * angle.cos()
    };
    z as f32
}

/// Half the bit width of the Feistel domain for n rows: the smallest h with 2^(2h) ≥ n
/// (at least 1).
pub fn feistel_half_bits(n: u32) -> u32 {
    let bits = 32 - n.saturating_sub(1).leading_zeros();
    bits.div_ceil(2).max(1)
}

/// murmur3's 32-bit finaliser.
fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^ (h >> 16)
}

/// Position `i` of the pseudo-random permutation of `0..n` keyed by `key` (n ≥ 2, i < n):
/// a 4-round Feistel network on 2·`half` bits, cycle-walking until the value is below n.
fn feistel_perm(i: u32, n: u32, half: u32, key: [u32; 4]) -> u32 {
    let mask = (1u32 << half) - 1;
    let mut x = i;
    loop {
        let (mut l, mut r) = (x >> half, x & mask);
        for k in key {
            let f = fmix32(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        x = (l << half) | r;
        if x < n {
            return x;
        }
    }
}

/// The rows of draw `k` of the device's `sample_rows` (b distinct rows of `0..n`, n ≥ 2,
/// b ≤ n): the first b positions of a permutation keyed by Philox(counter (k, 0, 1, 0), seed).
pub fn draw_rows(seed: u64, k: u32, b: u32, n: u32) -> Vec<u32> {
    let key = philox4x32([k, 0, 1, 0], key_of(seed));
    let half = feistel_half_bits(n);
    (0..b).map(|i| feistel_perm(i, n, half, key)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normals_are_the_cores_to_a_few_f32_ulp() {
        // normal_at is the exact value to ~2^-50 (f64 libm) rounded to f32, within 2^-24·|z|
        // ≤ 2^-24·rad of it; the core's f32 arithmetic is within 6·2^-24·rad of the exact value
        // (smi's random::normal tests), rad = √(−2 ln u1) the pair's radius: together
        // ≤ 7·2^-24·rad. rad is taken here from the two f32 values of the pair (relative error
        // ≤ 2^-24), so 8·2^-24 of it is asked. Most values are equal or one ulp apart.
        let mut z = vec![0.0; 1 << 14];
        let mut worst = 0.0f64;
        for (seed, stream) in [(7u64, 0u32), (7, 3), (u64::MAX, u32::MAX)] {
            smi::random::fill_normals(seed, u64::from(stream), &mut z);
            for (i, &v) in z.iter().enumerate() {
                let i = i as u64;
                let want = f64::from(normal_at(seed, stream, i));
                let (c, s) = (
                    normal_at(seed, stream, i & !1),
                    normal_at(seed, stream, i | 1),
                );
                let rad = f64::from(c).hypot(f64::from(s));
                let err = (v - want).abs() / rad * 2f64.powi(24);
                worst = worst.max(err);
                assert!(err <= 8.0, "{seed} {stream} {i}: {v} against {want}");
            }
        }
        eprintln!("largest difference: {worst}·2^-24 of the radius");
    }

    #[test]
    fn normals_have_unit_moments() {
        let n = 200_000u64;
        let (mut s1, mut s2, mut s4) = (0.0f64, 0.0f64, 0.0f64);
        for i in 0..n {
            let z = f64::from(normal_at(7, 0, i));
            s1 += z;
            s2 += z * z;
            s4 += z.powi(4);
        }
        let nf = n as f64;
        // SE of the mean 1/√n = 0.0022, of E z² √2/√n = 0.0032, of E z⁴ √96/√n = 0.022;
        // bounds of 5 SE
        assert!((s1 / nf).abs() < 0.012, "mean {}", s1 / nf);
        assert!((s2 / nf - 1.0).abs() < 0.016, "E z² {}", s2 / nf);
        assert!((s4 / nf - 3.0).abs() < 0.11, "E z⁴ {}", s4 / nf);
        // another stream or seed gives other numbers
        assert_ne!(normal_at(7, 0, 5), normal_at(7, 1, 5));
        assert_ne!(normal_at(7, 0, 5), normal_at(8, 0, 5));
    }

    #[test]
    fn rows_are_distinct_in_range_and_cover_the_data() {
        assert_eq!(feistel_half_bits(2), 1);
        assert_eq!(feistel_half_bits(4), 1);
        assert_eq!(feistel_half_bits(5), 2);
        assert_eq!(feistel_half_bits(455), 5);
        for n in [2u32, 3, 455, 1000, 60_000] {
            let b = n.min(100);
            let mut counts = vec![0u32; n as usize];
            for k in 0..200 {
                let mut r = draw_rows(11, k, b, n);
                assert!(r.iter().all(|&v| v < n));
                r.sort_unstable();
                r.dedup();
                assert_eq!(r.len() as u32, b, "n = {n}: rows repeat within a draw");
                r.iter().for_each(|&v| counts[v as usize] += 1);
            }
            // every row is used at the expected rate 200·b/n; for n = 455 check the spread:
            // counts ~ Binomial(200, 100/455), sd 5.9 around 44: none beyond 7 sd
            if n == 455 {
                let want = 200.0 * f64::from(b) / f64::from(n);
                assert!(counts
                    .iter()
                    .all(|&c| (f64::from(c) - want).abs() < 7.0 * 5.9));
            }
        }
        // a whole permutation when b = n
        let mut all = draw_rows(3, 0, 455, 455);
        all.sort_unstable();
        assert_eq!(all, (0..455).collect::<Vec<_>>());
    }
}
