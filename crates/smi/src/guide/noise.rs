//! The Normal guide's standard-normal noise ε, one independent stream per draw (row) of a step.
//!
//! A step draws one 64-bit key from the state's RNG ([`NoiseKey::draw`]); row k of the step's
//! K×d noise (draw k, k = (group·m + particle)·S + s) is the first d standard normals of row k
//! of the Philox4x32-10 generator under that key ([`crate::random::fill_normals`]: normal i
//! comes from the counter (i/4, k), so distinct rows are distinct counters of the same key, and
//! for k < 2^32 row k is the GPU backend's stream k, to a few `f32` ulp; the normals are
//! computed in `f32` arithmetic, for speed, and stored as `f64`, exactly, so θ = μ + σε is
//! formed in `f64`). Any row can be drawn on its own, by any thread, in any order: a fused
//! step draws each block's rows where it uses them and an unfused one fills the whole K×d
//! array, and both get the same ε for the same row.

use rand::Rng;
use rayon::prelude::*;

use crate::random::{fill_normal_rows, fill_normal_rows_f32};

/// Values below which [`NoiseKey::fill_rows`] stays on the calling thread.
const MIN_PAR_VALUES: usize = 1 << 15;

/// One step's noise key: row k of the step's noise is row k of Philox4x32-10 under this key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NoiseKey(u64);

impl NoiseKey {
    /// A fresh key: one `u64` from `rng`.
    pub fn draw<R: Rng + ?Sized>(rng: &mut R) -> Self {
        NoiseKey(rng.next_u64())
    }

    /// Row `row` of the noise: `out.len()` standard normals (the first ones of row `row`).
    #[cfg(test)]
    pub fn fill_row(&self, row: u64, out: &mut [f64]) {
        crate::random::fill_normals(self.0, row, out);
    }

    /// Rows `first`, `first + 1`, … of length `row_len` into `out` (a whole number of rows), in
    /// parallel when there are many values; the values do not depend on the threads.
    pub fn fill_rows(&self, first: u64, row_len: usize, out: &mut [f64]) {
        rows(first, row_len, out, |row, o| {
            fill_normal_rows(self.0, row, row_len, o)
        });
    }

    /// [`NoiseKey::fill_rows`] as computed, in `f32` (the same values before their exact
    /// widening to `f64`).
    pub fn fill_rows_f32(&self, first: u64, row_len: usize, out: &mut [f32]) {
        rows(first, row_len, out, |row, o| {
            fill_normal_rows_f32(self.0, row, row_len, o)
        });
    }
}

/// Rows `first`, `first + 1`, … of length `row_len` of `out`, filled by `fill(row, values)`
/// for runs of whole rows starting at `row` (one run, on the calling thread, below
/// [`MIN_PAR_VALUES`] values; in parallel runs of at least that many values above).
fn rows<T: Send>(first: u64, row_len: usize, out: &mut [T], fill: impl Fn(u64, &mut [T]) + Sync) {
    if row_len == 0 {
        return;
    }
    let per_run = MIN_PAR_VALUES.div_ceil(row_len);
    out.par_chunks_mut(per_run * row_len)
        .enumerate()
        .for_each(|(r, run)| fill(first + (r * per_run) as u64, run));
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn a_row_is_its_own_stream_wherever_it_is_drawn() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let key = NoiseKey::draw(&mut rng);
        let d = 5000;
        // 12 rows at once (in parallel: 60 000 values) against rows 7.. drawn one by one
        let mut all = vec![0.0; 12 * d];
        key.fill_rows(0, d, &mut all);
        for r in 7..12 {
            let mut row = vec![0.0; d];
            key.fill_row(r as u64, &mut row);
            assert_eq!(row, all[r * d..(r + 1) * d]);
        }
        // a shorter row is the prefix of the longer one; distinct rows and keys differ
        let mut short = vec![0.0; 10];
        key.fill_row(3, &mut short);
        assert_eq!(short, all[3 * d..3 * d + 10]);
        assert_ne!(all[..d], all[d..2 * d]);
        let other = NoiseKey::draw(&mut rng);
        other.fill_row(0, &mut short);
        assert_ne!(short, all[..10]);
    }

    #[test]
    fn short_rows_drawn_together_are_the_rows_drawn_alone() {
        // rows shorter than a generator chunk (32 normals) share its lanes; 9 000 rows from row
        // 2^32 − 4 500 run in parallel runs and cross the counter's high word
        let key = NoiseKey(0x5eed_1234_5678_9abc);
        let first = (1u64 << 32) - 4_500;
        for d in [1, 3, 4, 5, 10, 31, 32, 33] {
            let rows = 9_000;
            let (mut all, mut all32) = (vec![0.0; rows * d], vec![0.0f32; rows * d]);
            key.fill_rows(first, d, &mut all);
            key.fill_rows_f32(first, d, &mut all32);
            let mut row = vec![0.0; d];
            for r in (0..rows).step_by(7).chain([rows - 1]) {
                key.fill_row(first + r as u64, &mut row);
                assert_eq!(row, all[r * d..(r + 1) * d], "d = {d}, row {r}");
            }
            assert!(all
                .iter()
                .zip(&all32)
                .all(|(a, &b)| a.to_bits() == f64::from(b).to_bits()));
        }
    }
}
