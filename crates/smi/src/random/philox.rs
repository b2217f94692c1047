//! The Philox4x32-10 block function (Salmon, Moraes, Dror, Shaw 2011, "Parallel random numbers:
//! as easy as 1, 2, 3"; the Random123 reference constants), one block or several lanes at once.

/// Multiplier of counter word 0.
const M0: u32 = 0xD251_1F53;
/// Multiplier of counter word 2.
const M1: u32 = 0xCD9E_8D57;
/// Weyl increment of key word 0.
const W0: u32 = 0x9E37_79B9;
/// Weyl increment of key word 1.
const W1: u32 = 0xBB67_AE85;

/// Philox4x32-10 of `counter` under `key`: four uniform `u32` words that are a bijective
/// function of the 128-bit counter for each 64-bit key.
///
/// This is the function the GPU backend's kernels compute (`smi-models`, module `cuda`), and
/// the one behind the Normal guide's noise ([`fill_normals`](super::fill_normals)).
pub fn philox4x32(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let mut c = counter.map(|w| [u64::from(w)]);
    philox_lanes(&mut c, key);
    c.map(|[w]| w as u32)
}

/// Low 32 bits of a `u64`.
const LOW: u64 = 0xffff_ffff;

/// [`philox4x32`] of N counters at once, word j of lane l in the low 32 bits of `c[j][l]` (the
/// high bits zero; in, then out): a plain loop over the lanes in each round, which the
/// compiler turns into vector code on 64-bit lanes (one 32×32 → 64-bit multiply instruction
/// per multiplier and vector, no packing; N = 8 fills one AVX-512 register).
#[inline(always)]
pub(super) fn philox_lanes<const N: usize>(c: &mut [[u64; N]; 4], key: [u32; 2]) {
    let [mut k0, mut k1] = key;
    let [c0, c1, c2, c3] = c;
    for _ in 0..10 {
        let (kk0, kk1) = (u64::from(k0), u64::from(k1));
        for l in 0..N {
            let p0 = u64::from(M0) * (c0[l] & LOW);
            let p1 = u64::from(M1) * (c2[l] & LOW);
            (c0[l], c1[l], c2[l], c3[l]) = (
                (p1 >> 32) ^ c1[l] ^ kk0,
                p1 & LOW,
                (p0 >> 32) ^ c3[l] ^ kk1,
                p0 & LOW,
            );
        }
        k0 = k0.wrapping_add(W0);
        k1 = k1.wrapping_add(W1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn philox_matches_the_random123_known_answers() {
        // kat_vectors of Random123 1.09 for philox4x32_10
        assert_eq!(
            philox4x32([0, 0, 0, 0], [0, 0]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }

    #[test]
    fn lanes_are_independent_blocks() {
        let key = [0x1234_5678, 0x9abc_def0];
        let lanes: [u64; 8] = std::array::from_fn(|l| l as u64);
        let mut c = [
            lanes.map(|l| 1000 + l),
            lanes.map(|l| l * 7),
            [3; 8],
            lanes.map(|l| u64::from(u32::MAX) - l),
        ];
        let want: Vec<[u64; 4]> = (0..8)
            .map(|l| philox4x32(c.map(|w| w[l] as u32), key).map(u64::from))
            .collect();
        philox_lanes(&mut c, key);
        for (l, w) in want.iter().enumerate() {
            assert_eq!([c[0][l], c[1][l], c[2][l], c[3][l]], *w, "lane {l}");
        }
    }
}
