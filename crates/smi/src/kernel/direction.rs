//! The Stein direction φ = c_att·A + c_rep·R of a step (docs/algorithms.md §2.1), with the
//! attraction A_ℓ = Σ_i k(x_i, x_ℓ) ⊙ ĝ_i and the kernel's repulsion R, in one pass over
//! blocks of columns, in parallel.

use rayon::prelude::*;

use super::Weights;
use crate::matrix::Matrix;

/// Columns per task: the m rows of ĝ, R and φ of a block stay in the core's cache while every
/// target is summed (m = 5: 15 rows of 8 KB), so ĝ is read once per step instead of once per
/// target.
const COLS: usize = 1024;

/// Values below which the blocks stay on the calling thread.
const MIN_PAR_VALUES: usize = 1 << 15;

impl Weights {
    /// φ (m×p) with row ℓ = `c_att`·Σ_i k(x_i, x_ℓ) ⊙ g_i + `c_rep`·`repulsion` row ℓ, for
    /// `g` and `repulsion` m×p.
    ///
    /// Every value is computed by the same operations as [`Weights::attract`] followed by
    /// `c_att·a + c_rep·r` (the attraction summed over i in order from zero, then one product
    /// each and their sum), so the result is the same bits; only the order in which columns
    /// are visited differs. Scalar and vector weights run in blocks of columns in parallel;
    /// block weights (the graphical kernel) one target row at a time.
    pub fn direction(&self, g: &Matrix, c_att: f64, repulsion: &Matrix, c_rep: f64) -> Matrix {
        let (m, p) = (g.rows(), g.cols());
        let mut out = Matrix::zeros(m, p);
        if m == 0 || p == 0 {
            return out;
        }
        let width = match self {
            Weights::Blocks(_) => p,
            _ => COLS,
        };
        // task b holds block b of every target row
        let mut rows: Vec<_> = out
            .as_mut_slice()
            .chunks_mut(p)
            .map(|r| r.chunks_mut(width))
            .collect();
        let tasks: Vec<(usize, Vec<&mut [f64]>)> = (0..p.div_ceil(width))
            .map(|b| (b, rows.iter_mut().filter_map(Iterator::next).collect()))
            .collect();
        tasks
            .into_par_iter()
            .with_min_len(MIN_PAR_VALUES.div_ceil(m * width))
            .for_each(|(b, mut outs)| {
                let start = b * width;
                for (l, ol) in outs.iter_mut().enumerate() {
                    let cols = start..start + ol.len();
                    let k0 = if width == p { 0 } else { start };
                    self.attract_row(g, cols.clone(), k0, l, ol);
                    combine(c_att, c_rep, &repulsion.row(l)[cols], ol);
                }
            });
        out
    }
}

crate::multiversion! {
    /// o ← c_att·o + c_rep·r, element by element, in the CPU's widest vector build.
    fn combine(c_att: f64, c_rep: f64, r: &[f64], o: &mut [f64]) {
        for (o, r) in o.iter_mut().zip(r) {
            *o = c_att * *o + c_rep * r;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// φ by the two passes it replaces: the attraction, then c_att·a + c_rep·r.
    fn two_passes(w: &Weights, g: &Matrix, c_att: f64, r: &Matrix, c_rep: f64) -> Matrix {
        let mut phi = w.attract(g);
        for (f, v) in phi.as_mut_slice().iter_mut().zip(r.as_slice()) {
            *f = c_att * *f + c_rep * v;
        }
        phi
    }

    fn values(m: usize, p: usize, seed: f64) -> Matrix {
        Matrix::from_fn(m, p, |i, c| ((i * p + c) as f64 * 0.618 + seed).sin())
    }

    #[test]
    fn direction_is_the_two_passes_bit_for_bit() {
        // p spans several column blocks and a partial last one; one scalar weight is zero
        // (skipped by both); vector weights; block weights over two column ranges
        let (m, p) = (3, 2 * COLS + 37);
        let (g, r) = (values(m, p, 0.1), values(m, p, 0.7));
        let mut k = values(m, m, 0.3);
        k.set(1, 2, 0.0);
        let vector = Weights::Vector {
            m,
            p,
            k: values(m * m, p, 0.9).into_vec(),
        };
        let split = 700;
        let blocks = Weights::Blocks(vec![
            (0..split, Weights::Scalar(values(m, m, 0.2))),
            (
                split..p,
                Weights::Vector {
                    m,
                    p: p - split,
                    k: values(m * m, p - split, 0.4).into_vec(),
                },
            ),
        ]);
        for w in [Weights::Scalar(k), vector, blocks] {
            let want = two_passes(&w, &g, 0.2, &r, 1.5);
            let got = w.direction(&g, 0.2, &r, 1.5);
            assert_eq!(
                got.as_slice()
                    .iter()
                    .map(|v| v.to_bits())
                    .collect::<Vec<_>>(),
                want.as_slice()
                    .iter()
                    .map(|v| v.to_bits())
                    .collect::<Vec<_>>()
            );
        }
        // and no columns: an empty φ
        let empty = Matrix::zeros(2, 0);
        let w = Weights::Scalar(values(2, 2, 0.0));
        assert_eq!(w.direction(&empty, 1.0, &empty, 1.0).cols(), 0);
    }
}
