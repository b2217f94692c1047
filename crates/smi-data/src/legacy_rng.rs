//! numpy's legacy `RandomState` (MT19937), reimplemented bit-exactly for the draws the paper uses.
//!
//! The paper's data scripts call `np.random.seed(s)` and then `uniform`, `randn`, `binomial` and
//! (through scikit-learn's `train_test_split`) `permutation`. This module reproduces exactly those
//! routines of numpy's *legacy* generator so the same numbers come out:
//!
//! * seeding an integer `s` is MT19937's `init_genrand(s)` (numpy's `_legacy_seeding`), and it
//!   clears the cached Gaussian;
//! * [`LegacyRandomState::random_sample`] is `(a >> 5) · 2²⁶ + (b >> 6)) / 2⁵³` from two 32-bit outputs;
//! * [`LegacyRandomState::uniform`] is `lo + (hi − lo) · random_sample()`;
//! * [`LegacyRandomState::standard_normal`] is numpy's `legacy_gauss`: the polar Box–Muller method,
//!   which returns `f·x2` and caches `f·x1` for the next call;
//! * [`LegacyRandomState::binomial`] is numpy's inversion algorithm (`random_binomial_inversion`),
//!   which numpy uses whenever `n · min(p, 1 − p) ≤ 30`; the BTPE branch for larger products is not
//!   implemented and returns an error;
//! * [`LegacyRandomState::permutation`] is `RandomState.permutation(n)`: a Fisher–Yates shuffle of
//!   `0..n` from the last position down, drawing each swap partner by masked rejection
//!   (`random_interval`).
//!
//! The values are checked against numpy 2.4 in this file's tests.

use crate::error::{Error, Result};

/// Number of 32-bit words of MT19937 state.
const STATE_LEN: usize = 624;
/// MT19937 middle word offset.
const SHIFT: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// numpy's legacy `RandomState` over MT19937 (see the module docs for which routines exist).
///
/// This generator exists only to reproduce the paper's data bit-exactly; all other randomness in the
/// workspace uses a seeded `ChaCha8Rng`.
#[derive(Clone, Debug)]
pub struct LegacyRandomState {
    key: [u32; STATE_LEN],
    pos: usize,
    gauss: Option<f64>,
}

impl LegacyRandomState {
    /// Creates a generator seeded like `np.random.seed(seed)` / `np.random.RandomState(seed)`.
    pub fn new(seed: u32) -> Self {
        let mut rs = LegacyRandomState {
            key: [0; STATE_LEN],
            pos: STATE_LEN,
            gauss: None,
        };
        rs.seed(seed);
        rs
    }

    /// Reseeds in place, exactly like `np.random.seed(seed)` (MT19937 `init_genrand`; the cached
    /// Gaussian is discarded).
    pub fn seed(&mut self, seed: u32) {
        let mut s = seed;
        for (i, k) in self.key.iter_mut().enumerate() {
            *k = s;
            // i + 1 < 625, so the cast cannot truncate.
            s = 1_812_433_253u32
                .wrapping_mul(s ^ (s >> 30))
                .wrapping_add(i as u32 + 1);
        }
        self.pos = STATE_LEN;
        self.gauss = None;
    }

    fn generate(&mut self) {
        for i in 0..STATE_LEN {
            let y = (self.key[i] & UPPER_MASK) | (self.key[(i + 1) % STATE_LEN] & LOWER_MASK);
            let mut v = self.key[(i + SHIFT) % STATE_LEN] ^ (y >> 1);
            if y & 1 == 1 {
                v ^= MATRIX_A;
            }
            self.key[i] = v;
        }
        self.pos = 0;
    }

    /// The next raw 32-bit MT19937 output (tempered).
    pub fn next_u32(&mut self) -> u32 {
        if self.pos >= STATE_LEN {
            self.generate();
        }
        let mut y = self.key[self.pos];
        self.pos += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    /// A double in [0, 1) with 53 random bits: `np.random.random_sample()`.
    pub fn random_sample(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) / 9_007_199_254_740_992.0
    }

    /// `np.random.uniform(lo, hi)`: `lo + (hi − lo) · random_sample()`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.random_sample()
    }

    /// `n` draws of [`Self::uniform`], i.e. `np.random.uniform(lo, hi, size=n)`.
    pub fn uniform_vec(&mut self, lo: f64, hi: f64, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.uniform(lo, hi)).collect()
    }

    /// A standard normal draw, numpy's `legacy_gauss` (polar Box–Muller with one cached value):
    /// `np.random.randn()` / `np.random.standard_normal()`.
    pub fn standard_normal(&mut self) -> f64 {
        if let Some(g) = self.gauss.take() {
            return g;
        }
        loop {
            let x1 = 2.0 * self.random_sample() - 1.0;
            let x2 = 2.0 * self.random_sample() - 1.0;
            let r2 = x1 * x1 + x2 * x2;
            if r2 < 1.0 && r2 != 0.0 {
                let f = (-2.0 * r2.ln() / r2).sqrt();
                self.gauss = Some(f * x1);
                return f * x2;
            }
        }
    }

    /// `n` standard normals, i.e. `np.random.randn(n)`.
    pub fn randn(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.standard_normal()).collect()
    }

    /// `np.random.binomial(n, p)` for the inversion branch numpy takes when `n·min(p, 1−p) ≤ 30`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `p` is not in [0, 1] or if `n·min(p, 1−p) > 30` (numpy's BTPE
    /// branch, not implemented here).
    pub fn binomial(&mut self, n: u64, p: f64) -> Result<u64> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::invalid("p", format!("must be in [0, 1], got {p}")));
        }
        if n == 0 || p == 0.0 {
            return Ok(0);
        }
        // n as f64 is exact for every n this branch accepts (n·p ≤ 30 with p ≥ 2^-1074 still
        // allows huge n, but the comparison below is what numpy does as well).
        let nf = n as f64;
        if p <= 0.5 {
            if p * nf <= 30.0 {
                Ok(self.binomial_inversion(n, p))
            } else {
                Err(Error::invalid(
                    "n",
                    format!(
                        "n·p = {} > 30 needs numpy's BTPE algorithm, not implemented",
                        p * nf
                    ),
                ))
            }
        } else {
            let q = 1.0 - p;
            if q * nf <= 30.0 {
                Ok(n - self.binomial_inversion(n, q))
            } else {
                Err(Error::invalid(
                    "n",
                    format!(
                        "n·(1−p) = {} > 30 needs numpy's BTPE algorithm, not implemented",
                        q * nf
                    ),
                ))
            }
        }
    }

    /// numpy's `random_binomial_inversion` (requires p ≤ 0.5 and n·p ≤ 30).
    fn binomial_inversion(&mut self, n: u64, p: f64) -> u64 {
        let nf = n as f64;
        let q = 1.0 - p;
        let qn = (nf * q.ln()).exp();
        let np = nf * p;
        let bound_f = (np + 10.0 * (np * q + 1.0).sqrt()).min(nf);
        // bound_f is finite and within [0, n]; truncation toward zero is numpy's (int64_t) cast.
        let bound = bound_f as u64;
        let mut x: u64 = 0;
        let mut px = qn;
        let mut u = self.random_sample();
        while u > px {
            x += 1;
            if x > bound {
                x = 0;
                px = qn;
                u = self.random_sample();
            } else {
                u -= px;
                let xf = x as f64;
                px = ((nf - xf + 1.0) * p * px) / (xf * q);
            }
        }
        x
    }

    /// numpy's `random_interval(max)`: a uniform integer in `0..=max` by masked rejection on
    /// 32-bit outputs (64-bit outputs for `max ≥ 2³²`).
    pub fn interval(&mut self, max: u64) -> u64 {
        if max == 0 {
            return 0;
        }
        let mut mask = max;
        mask |= mask >> 1;
        mask |= mask >> 2;
        mask |= mask >> 4;
        mask |= mask >> 8;
        mask |= mask >> 16;
        mask |= mask >> 32;
        if max <= u64::from(u32::MAX) {
            loop {
                let v = u64::from(self.next_u32()) & mask;
                if v <= max {
                    return v;
                }
            }
        } else {
            loop {
                let hi = u64::from(self.next_u32());
                let lo = u64::from(self.next_u32());
                let v = ((hi << 32) | lo) & mask;
                if v <= max {
                    return v;
                }
            }
        }
    }

    /// Shuffles `items` in place like `RandomState.shuffle` on a 1-D array: for `i = n−1 … 1`,
    /// swap `items[i]` with `items[interval(i)]`.
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            // usize -> u64 -> usize round-trips on every supported platform, and j <= i.
            let j = self.interval(i as u64) as usize;
            items.swap(i, j);
        }
    }

    /// `RandomState.permutation(n)`: a shuffled `0..n`.
    pub fn permutation(&mut self, n: usize) -> Vec<usize> {
        let mut v: Vec<usize> = (0..n).collect();
        self.shuffle(&mut v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values from numpy 2.4.6 (legacy RandomState):
    //   import numpy as np
    //   np.random.seed(52); print(np.random.random_sample(3).tolist())
    //   np.random.seed(52); print(np.random.randn(4).tolist())
    //   print(np.random.RandomState(10).permutation(10).tolist())
    //   rs = np.random.RandomState(10); p = rs.permutation(455); print(p[:8].tolist(), p[-3:].tolist())
    //   print(np.random.RandomState(7).binomial(2, 0.5, size=30).tolist())

    #[test]
    fn random_sample_matches_numpy() {
        let mut rs = LegacyRandomState::new(52);
        let got: Vec<f64> = (0..3).map(|_| rs.random_sample()).collect();
        assert_eq!(
            got,
            vec![
                0.8231103407097919,
                0.026117981569867332,
                0.21077063993129397
            ]
        );
    }

    #[test]
    fn gauss_matches_numpy_including_cache() {
        let mut rs = LegacyRandomState::new(52);
        assert_eq!(
            rs.randn(4),
            vec![
                0.5194758406141622,
                -1.2687503807549025,
                0.24042002619621033,
                -0.8039574317979851
            ]
        );
        // Reseeding clears the cached value.
        rs.standard_normal();
        rs.seed(52);
        assert_eq!(rs.standard_normal(), 0.5194758406141622);
    }

    #[test]
    fn permutation_matches_numpy() {
        assert_eq!(
            LegacyRandomState::new(10).permutation(10),
            vec![8, 2, 5, 6, 3, 1, 0, 7, 4, 9]
        );
        let p = LegacyRandomState::new(10).permutation(455);
        assert_eq!(&p[..8], &[226, 131, 116, 307, 65, 78, 172, 207]);
        assert_eq!(&p[452..], &[15, 125, 265]);
    }

    #[test]
    fn binomial_matches_numpy() {
        let mut rs = LegacyRandomState::new(7);
        let got: Vec<u64> = (0..30).map(|_| rs.binomial(2, 0.5).unwrap()).collect();
        assert_eq!(
            got,
            vec![
                0, 2, 1, 1, 2, 1, 1, 0, 1, 1, 1, 2, 1, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2,
                1, 1
            ]
        );
    }

    #[test]
    fn binomial_rejects_btpe_branch_and_bad_p() {
        let mut rs = LegacyRandomState::new(1);
        assert!(rs.binomial(100, 0.5).is_err());
        assert!(rs.binomial(2, 1.5).is_err());
        assert_eq!(rs.binomial(0, 0.5).unwrap(), 0);
        assert_eq!(rs.binomial(5, 1.0).unwrap(), 5);
    }
}
