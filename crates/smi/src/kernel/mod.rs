//! Stein kernels k(x, y) on particles (spec §3), with closed-form gradients.
//!
//! A kernel is built once per step from the current particles X (m×p) and returns a [`Gram`]:
//! the kernel weights k(x_i, x_ℓ) and the repulsion Σ_i ∇_{x_i} k(x_i, x_ℓ) for every target ℓ.
//! The first argument of k is the source i, the second the target ℓ. Nothing is differentiated
//! through the construction (the bandwidth is a constant).

use std::fmt::Debug;
use std::ops::Range;

use crate::error::Result;
use crate::layout::Layout;
use crate::matrix::Matrix;

/// How a kernel value combines with a gradient (spec §3).
#[derive(Clone, Debug, PartialEq)]
pub enum Weights {
    /// `norm` mode (and matrix `norm_diag`): a scalar k(x_i, x_ℓ) per pair, stored m×m with
    /// entry (i, ℓ).
    Scalar(Matrix),
    /// `vector` mode (and matrix `vector_diag`): a p-vector per pair, element-wise;
    /// `k[(i * m + l) * p + c]` is k_c(x_i, x_ℓ).
    Vector {
        /// Number of particles m.
        m: usize,
        /// Particle dimension p.
        p: usize,
        /// m×m×p values.
        k: Vec<f64>,
    },
    /// Block-diagonal matrix mode (the graphical kernel): one weight per column block.
    Blocks(Vec<(Range<usize>, Weights)>),
}

impl Weights {
    /// A[ℓ] = Σ_i k(x_i, x_ℓ) ⊙ g_i for every target ℓ (the attractive force before scaling).
    ///
    /// `g` is m×p (row i = ĝ_i); the result is m×p.
    pub fn attract(&self, g: &Matrix) -> Matrix {
        let mut out = Matrix::zeros(g.rows(), g.cols());
        self.attract_into(g, 0..g.cols(), &mut out);
        out
    }

    fn attract_into(&self, g: &Matrix, cols: Range<usize>, out: &mut Matrix) {
        let m = g.rows();
        match self {
            Weights::Scalar(k) => {
                for l in 0..m {
                    for i in 0..m {
                        let w = k.get(i, l);
                        if w == 0.0 {
                            continue;
                        }
                        let (gi, ol) = (&g.row(i)[cols.clone()], &mut out.row_mut(l)[cols.clone()]);
                        for (o, v) in ol.iter_mut().zip(gi) {
                            *o += w * v;
                        }
                    }
                }
            }
            Weights::Vector { m: mm, p, k } => {
                for l in 0..m {
                    for i in 0..m {
                        let kv = &k[(i * mm + l) * p..(i * mm + l + 1) * p][..cols.len()];
                        let (gi, ol) = (&g.row(i)[cols.clone()], &mut out.row_mut(l)[cols.clone()]);
                        for ((o, v), w) in ol.iter_mut().zip(gi).zip(kv) {
                            *o += w * v;
                        }
                    }
                }
            }
            Weights::Blocks(blocks) => {
                for (range, w) in blocks {
                    let start = cols.start + range.start;
                    w.attract_into(g, start..start + range.len(), out);
                }
            }
        }
    }

    /// The scalar kernel value k(x_i, x_ℓ) for norm-mode weights; `None` for vector or block
    /// weights.
    pub fn scalar(&self, i: usize, l: usize) -> Option<f64> {
        match self {
            Weights::Scalar(k) => Some(k.get(i, l)),
            _ => None,
        }
    }
}

/// The kernel evaluated on the current particles.
#[derive(Clone, Debug, PartialEq)]
pub struct Gram {
    /// k(x_i, x_ℓ) for every pair.
    pub weights: Weights,
    /// m×p; row ℓ is Σ_i ∇_{x_i} k(x_i, x_ℓ) (norm mode), Σ_i ∂k_c/∂x_{i,c} per coordinate c
    /// (vector mode), or row a of Σ_b ∂K_ab/∂x_b (matrix mode). Not yet scaled by α/m.
    pub repulsion: Matrix,
}

/// A Stein kernel.
pub trait Kernel: Send + Sync + Debug {
    /// A short name for records and errors (e.g. `"rbf"`).
    fn name(&self) -> &'static str;

    /// Builds the kernel on particles X (m×p, one particle per row). `layout` names the column
    /// blocks of a particle (used by the graphical and probability-product kernels).
    ///
    /// # Errors
    /// [`crate::Error::InvalidSettings`] or [`crate::Error::Shape`] when the kernel cannot be
    /// built on these particles (e.g. a probability-product kernel on a point-mass guide).
    fn compute(&self, particles: &Matrix, layout: &Layout) -> Result<Gram>;
}
