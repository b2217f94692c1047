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

use crate::random::{fill_normals, fill_normals_f32};

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
    pub fn fill_row(&self, row: u64, out: &mut [f64]) {
        fill_normals(self.0, row, out);
    }

    /// Rows `first`, `first + 1`, … of length `row_len` into `out` (a whole number of rows), in
    /// parallel when there are many values; the values do not depend on the threads.
    pub fn fill_rows(&self, first: u64, row_len: usize, out: &mut [f64]) {
        rows(first, row_len, out, |row, o| self.fill_row(row, o));
    }

    /// [`NoiseKey::fill_rows`] as computed, in `f32` (the same values before their exact
    /// widening to `f64`).
    pub fn fill_rows_f32(&self, first: u64, row_len: usize, out: &mut [f32]) {
        rows(first, row_len, out, |row, o| {
            fill_normals_f32(self.0, row, o)
        });
    }
}

/// Rows `first`, `first + 1`, … of length `row_len` of `out` filled by `fill(row, values)`, in
/// parallel when there are many values.
fn rows<T: Send>(first: u64, row_len: usize, out: &mut [T], fill: impl Fn(u64, &mut [T]) + Sync) {
    if row_len == 0 {
        return;
    }
    out.par_chunks_mut(row_len)
        .with_min_len(MIN_PAR_VALUES.div_ceil(row_len))
        .enumerate()
        .for_each(|(r, row)| fill(first + r as u64, row));
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
}
