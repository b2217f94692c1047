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
        // scalar weights and at least a tile of targets: the targets in tiles of TILE_R rows
        // (the rest one by one), their weights packed tile by tile
        let tiled = match self {
            Weights::Scalar(k) if m >= TILE_R => Some(Tiles::new(k)),
            _ => None,
        };
        tasks
            .into_par_iter()
            .with_min_len(MIN_PAR_VALUES.div_ceil(m * width))
            .for_each(|(b, mut outs)| {
                let start = b * width;
                let k0 = if width == p { 0 } else { start };
                let tiled_rows = match &tiled {
                    Some(t) => {
                        t.attract(self, g, start, &mut outs);
                        t.rows
                    }
                    None => 0,
                };
                for (l, ol) in outs.iter_mut().enumerate() {
                    let cols = start..start + ol.len();
                    if l >= tiled_rows {
                        self.attract_row(g, cols.clone(), k0, l, ol);
                    }
                    combine(c_att, c_rep, &repulsion.row(l)[cols], ol);
                }
            });
        out
    }
}

/// Targets of the attraction's register tile (scalar weights).
const TILE_R: usize = 4;

/// Columns of the attraction's register tile: two AVX-512 registers of f64 per target.
const TILE_W: usize = 16;

/// Scalar weights packed for [`attract_tile`]: the targets `0..rows` (whole tiles of
/// [`TILE_R`]) tile by tile, each tile's weights k_{i,ℓ} for i = 0 … m − 1 in order, its
/// [`TILE_R`] targets side by side (so a tile reads them in one sequential stream).
struct Tiles {
    /// m × `rows` weights, tile-major.
    packed: Vec<f64>,
    /// Per tile: whether every one of its weights is non-zero (then [`attract_tile_dense`] sums
    /// it, with no test per weight).
    dense: Vec<bool>,
    /// Targets in whole tiles.
    rows: usize,
    /// m.
    m: usize,
}

impl Tiles {
    /// Packs the m×m weights `k` (entry (i, ℓ)), m ≥ [`TILE_R`].
    fn new(k: &Matrix) -> Tiles {
        let m = k.rows();
        let rows = m - m % TILE_R;
        let mut packed = Vec::with_capacity(m * rows);
        for l0 in (0..rows).step_by(TILE_R) {
            for i in 0..m {
                packed.extend_from_slice(&k.row(i)[l0..l0 + TILE_R]);
            }
        }
        let dense = packed
            .chunks_exact(m * TILE_R)
            .map(|w| w.iter().all(|&v| v != 0.0))
            .collect();
        Tiles {
            packed,
            dense,
            rows,
            m,
        }
    }

    /// The attraction of the targets `0..rows` on the columns of `outs` (`outs[ℓ]`: target
    /// ℓ's columns from `start` of `g`, zero on entry): tiles of [`TILE_R`] targets ×
    /// [`TILE_W`] columns summed in registers, each column tile's strip of ĝ (m × [`TILE_W`])
    /// copied out once and read by every target tile, so ĝ is read from memory once per step
    /// instead of once per target; the columns beyond the last whole tile by
    /// [`Weights::attract_row`] of `weights` (these scalar weights). Each value is the same
    /// sum as [`Weights::attract_row`]'s: over i in order from zero, one product and one
    /// addition per term, zero weights skipped.
    fn attract(&self, weights: &Weights, g: &Matrix, start: usize, outs: &mut [&mut [f64]]) {
        let m = self.m;
        let len = outs.first().map_or(0, |o| o.len());
        let whole = len - len % TILE_W;
        let mut strip = vec![0.0; m * TILE_W];
        for c in (0..whole).step_by(TILE_W) {
            for (s, i) in strip.chunks_exact_mut(TILE_W).zip(0..m) {
                s.copy_from_slice(&g.row(i)[start + c..start + c + TILE_W]);
            }
            for (t, w) in self.packed.chunks_exact(m * TILE_R).enumerate() {
                let acc = if self.dense[t] {
                    attract_tile_dense(w, &strip)
                } else {
                    attract_tile(w, &strip)
                };
                for (r, a) in acc.iter().enumerate() {
                    outs[t * TILE_R + r][c..c + TILE_W].copy_from_slice(a);
                }
            }
        }
        if whole < len {
            for (l, ol) in outs.iter_mut().enumerate().take(self.rows) {
                weights.attract_row(g, start + whole..start + len, 0, l, &mut ol[whole..]);
            }
        }
    }
}

smi_simd::multiversion! {
    /// One tile of the attraction: Σ_i w_{i,r}·g_i for r < [`TILE_R`] on [`TILE_W`] columns,
    /// `w` the tile's packed weights (m × [`TILE_R`], [`Tiles`]) and `g` the columns' strip of
    /// ĝ (m × [`TILE_W`]): each sum from zero over i in order, one product and one addition
    /// per term, a zero weight skipped; in the CPU's widest vector build.
    fn attract_tile(w: &[f64], g: &[f64]) -> [[f64; TILE_W]; TILE_R] {
        let mut acc = [[0.0; TILE_W]; TILE_R];
        for (w, gi) in w.chunks_exact(TILE_R).zip(g.chunks_exact(TILE_W)) {
            for (a, &w) in acc.iter_mut().zip(w) {
                if w != 0.0 {
                    for (a, &v) in a.iter_mut().zip(gi) {
                        *a += w * v;
                    }
                }
            }
        }
        acc
    }
}

smi_simd::multiversion! {
    /// [`attract_tile`] for a tile whose weights are all non-zero, without the test per weight
    /// (the same operations, so the same bits): the test kept each weight in a register to
    /// compare it before its broadcast, which ran on the port the products need; here each is
    /// broadcast from memory. SVGD at m = 256 on the moderate wave net (`smi bench --config
    /// wave-100 --method svgd --particles 256 --threads 2`, four rounds alternated with the
    /// binary before, up to 1953c8c, 2026-11-27): 120 → 102 ms a step.
    fn attract_tile_dense(w: &[f64], g: &[f64]) -> [[f64; TILE_W]; TILE_R] {
        let mut acc = [[0.0; TILE_W]; TILE_R];
        for (w, gi) in w.chunks_exact(TILE_R).zip(g.chunks_exact(TILE_W)) {
            for (a, &w) in acc.iter_mut().zip(w) {
                for (a, &v) in a.iter_mut().zip(gi) {
                    *a += w * v;
                }
            }
        }
        acc
    }
}

smi_simd::multiversion! {
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
        // p spans several column blocks and a partial last one (37 columns: two whole tiles
        // and a rest); scalar weights with zeros (skipped by both), m = 3 (below a tile of
        // targets) and m = 11 (two tiles and three targets one by one, zero weights inside a
        // tile, one of them on an infinite ĝ, where a product would give NaN), m = 12 (the same
        // zeros, and a third tile with none, summed by `attract_tile_dense`); vector weights;
        // block weights over two column ranges
        for m in [3, 11, 12] {
            check_direction(m);
        }
    }

    fn check_direction(m: usize) {
        let p = 2 * COLS + 37;
        let mut g = values(m, p, 0.1);
        let r = values(m, p, 0.7);
        let mut k = values(m, m, 0.3);
        k.set(1, 2, 0.0);
        if m > 5 {
            g.set(4, 3, f64::INFINITY);
            k.set(4, 5, 0.0);
            k.set(7, 0, 0.0);
        }
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
        let empty = Matrix::zeros(m, 0);
        let w = Weights::Scalar(values(m, m, 0.0));
        assert_eq!(w.direction(&empty, 1.0, &empty, 1.0).cols(), 0);
    }
}
