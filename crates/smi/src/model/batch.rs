//! Data batches for one model evaluation, and the seeded mini-batcher of docs/algorithms.md §2.6.

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Which data rows each parameter draw is evaluated on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Rows {
    /// Every row of the model's data (full batch).
    All,
    /// The same rows for every draw (e.g. MNIST's externally shuffled batches).
    Shared(Vec<usize>),
    /// A separate mini-batch for each draw: draw k uses `rows[k*size..(k+1)*size]`
    /// (NumPyro draws a fresh subsample for every ELBO draw, docs/algorithms.md §2.6).
    PerDraw {
        /// Mini-batch size b.
        size: usize,
        /// K·b row indices.
        rows: Vec<usize>,
    },
}

/// What one batched model call evaluates: the data rows, the likelihood scale and whether the
/// log-Jacobian of constrained latents is included.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Batch {
    /// The rows of the data used by each draw.
    pub rows: Rows,
    /// Multiplies the log-likelihood terms: N/b for a mini-batch of b of N rows, 1 for full data.
    pub scale: f64,
    /// Add log|T′(u)| for constrained latents (default `true`). MAP and NumPyro-parity SVGD
    /// target p(T(u)) without it (docs/algorithms.md §4.1, §5).
    pub jacobian: bool,
}

impl Default for Batch {
    fn default() -> Self {
        Batch::full()
    }
}

impl Batch {
    /// All rows, scale 1, with the Jacobian.
    pub const fn full() -> Self {
        Batch {
            rows: Rows::All,
            scale: 1.0,
            jacobian: true,
        }
    }

    /// The same `rows` for every draw, scale `num_data / rows.len()`.
    pub fn shared(rows: Vec<usize>, num_data: usize) -> Self {
        let scale = num_data as f64 / rows.len().max(1) as f64;
        Batch {
            rows: Rows::Shared(rows),
            scale,
            jacobian: true,
        }
    }

    /// The batch of draws `first .. first + count` alone (their per-draw rows; the same rows,
    /// scale and Jacobian flag otherwise), for evaluating a block of draws on its own.
    pub(crate) fn draws(&self, first: usize, count: usize) -> Batch {
        let rows = match &self.rows {
            Rows::All => Rows::All,
            Rows::Shared(r) => Rows::Shared(r.clone()),
            Rows::PerDraw { size, rows } => Rows::PerDraw {
                size: *size,
                rows: rows[first * size..(first + count) * size].to_vec(),
            },
        };
        Batch {
            rows,
            scale: self.scale,
            jacobian: self.jacobian,
        }
    }

    /// The rows draw `k` is evaluated on; `None` means all rows.
    pub fn rows_for_draw(&self, k: usize) -> Option<&[usize]> {
        match &self.rows {
            Rows::All => None,
            Rows::Shared(r) => Some(r),
            Rows::PerDraw { size, rows } => Some(&rows[k * size..(k + 1) * size]),
        }
    }

    /// Checks that every row index is below `num_data` and a per-draw batch covers `num_draws`.
    ///
    /// # Errors
    /// [`Error::Data`] naming the first bad index.
    pub fn validate(&self, num_data: usize, num_draws: usize) -> Result<()> {
        let rows = match &self.rows {
            Rows::All => return Ok(()),
            Rows::Shared(r) => r.as_slice(),
            Rows::PerDraw { size, rows } => {
                if rows.len() != size * num_draws {
                    return Err(Error::shape(
                        "per-draw batch",
                        format!("{num_draws} draws × {size} rows"),
                        rows.len(),
                    ));
                }
                rows.as_slice()
            }
        };
        if let Some(&bad) = rows.iter().find(|&&r| r >= num_data) {
            return Err(Error::Data(format!(
                "batch row {bad} is out of range: the model has {num_data} rows"
            )));
        }
        Ok(())
    }
}

/// Draws mini-batches of `batch_size` of `num_data` rows, without replacement within a batch.
///
/// With `batch_size >= num_data` (or `num_data == 0`) every batch is the full data, scale 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Batcher {
    /// N, the number of data rows.
    pub num_data: usize,
    /// b, the mini-batch size.
    pub batch_size: usize,
}

impl Batcher {
    /// A batcher for `batch_size` of `num_data` rows; `None` means full batch.
    pub fn new(num_data: usize, batch_size: Option<usize>) -> Self {
        Batcher {
            num_data,
            batch_size: batch_size.unwrap_or(num_data),
        }
    }

    /// Whether every batch is the full data.
    pub fn is_full(&self) -> bool {
        self.num_data == 0 || self.batch_size >= self.num_data
    }

    /// One batch for `num_draws` draws, each with its own subsample (docs/algorithms.md §2.6).
    pub fn draw<R: Rng + ?Sized>(&self, rng: &mut R, num_draws: usize) -> Batch {
        if self.is_full() {
            return Batch::full();
        }
        let b = self.batch_size;
        let mut rows = Vec::with_capacity(b * num_draws);
        for _ in 0..num_draws {
            rows.extend(rand::seq::index::sample(rng, self.num_data, b));
        }
        Batch {
            rows: Rows::PerDraw { size: b, rows },
            scale: self.num_data as f64 / b as f64,
            jacobian: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn per_draw_batches_have_distinct_rows_and_scale() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let b = Batcher::new(455, Some(100)).draw(&mut rng, 3);
        assert!((b.scale - 4.55).abs() < 1e-12);
        b.validate(455, 3).unwrap();
        for k in 0..3 {
            let mut r = b.rows_for_draw(k).unwrap().to_vec();
            r.sort_unstable();
            r.dedup();
            assert_eq!(r.len(), 100, "without replacement");
        }
        assert_ne!(b.rows_for_draw(0), b.rows_for_draw(1));
    }

    #[test]
    fn full_batch_when_batch_covers_data() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        assert_eq!(Batcher::new(40, None).draw(&mut rng, 5), Batch::full());
        assert!(Batch::shared(vec![0, 40], 40).validate(40, 1).is_err());
    }
}
