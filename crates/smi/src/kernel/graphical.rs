//! The graphical kernel: block-diagonal matrix kernel with one local kernel per parameter block
//! (docs/algorithms.md §3).

use super::{check_particles, Gram, Kernel, RbfKernel, Weights};
use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::model::Layout;

/// Block-diagonal matrix-mode kernel (NumPyro's `GraphicalKernel`).
///
/// For every block of the particle layout (`layout.blocks()`, e.g. `"w.loc"`, `"w.scale"`) a
/// local kernel is built on that column block alone, with its own bandwidth. A norm local
/// kernel contributes k·I on its block, a vector one diag(k). The result is
/// [`Weights::Blocks`], and the repulsion row a is Σ_b ∂K_ab/∂x_b, i.e. each local kernel's
/// repulsion on its own columns.
///
/// Defaults: every block uses [`RbfKernel::default()`]; [`GraphicalKernel::with_local`] sets
/// the kernel of one block by name.
#[derive(Debug)]
pub struct GraphicalKernel {
    default: Box<dyn Kernel>,
    local: Vec<(String, Box<dyn Kernel>)>,
}

impl Default for GraphicalKernel {
    /// RBF (norm) on every block.
    fn default() -> Self {
        GraphicalKernel::new(Box::new(RbfKernel::default()))
    }
}

impl GraphicalKernel {
    /// A graphical kernel using `default` on every block without its own local kernel.
    pub fn new(default: Box<dyn Kernel>) -> Self {
        GraphicalKernel {
            default,
            local: Vec::new(),
        }
    }

    /// Uses `kernel` on the block named `name` (replacing an earlier choice for that name).
    pub fn with_local(mut self, name: impl Into<String>, kernel: Box<dyn Kernel>) -> Self {
        let name = name.into();
        self.local.retain(|(n, _)| *n != name);
        self.local.push((name, kernel));
        self
    }

    /// The local kernel for a block name.
    pub fn kernel_for(&self, name: &str) -> &dyn Kernel {
        self.local
            .iter()
            .find(|(n, _)| n == name)
            .map_or(self.default.as_ref(), |(_, k)| k.as_ref())
    }
}

impl Kernel for GraphicalKernel {
    fn name(&self) -> &'static str {
        "graphical"
    }

    /// # Errors
    /// [`Error::Shape`] when m = 0, p = 0 or `layout.dim() != p`; [`Error::NonFinite`] for
    /// non-finite particles; any error of a local kernel (with the block name in
    /// [`Error::InvalidSettings`] reasons); [`Error::InvalidSettings`] when a local kernel
    /// returns weights of the wrong size.
    fn compute(&self, particles: &Matrix, layout: &Layout) -> Result<Gram> {
        let (m, p) = check_particles(self.name(), particles, layout)?;
        let mut blocks = Vec::with_capacity(layout.blocks().len());
        let mut repulsion = Matrix::zeros(m, p);
        for block in layout.blocks() {
            let range = block.range();
            if range.is_empty() {
                continue;
            }
            let n = range.len();
            let sub = Matrix::from_fn(m, n, |i, c| particles.get(i, range.start + c));
            let mut sub_layout = Layout::default();
            // The block's columns are unconstrained: a constrained block (a K-simplex has K − 1
            // columns) is passed as a vector of its columns.
            let shape = if block.constraint.is_real() {
                block.shape.clone()
            } else {
                vec![n]
            };
            sub_layout.push(block.name.clone(), shape);
            let gram = self
                .kernel_for(&block.name)
                .compute(&sub, &sub_layout)
                .map_err(|e| match e {
                    Error::InvalidSettings { field, reason } => Error::InvalidSettings {
                        field,
                        reason: format!("block `{}`: {reason}", block.name),
                    },
                    e => e,
                })?;
            if gram.repulsion.rows() != m || gram.repulsion.cols() != n {
                return Err(Error::invalid(
                    "local_kernel",
                    format!(
                        "block `{}`: local kernel returned {}×{} repulsion, expected {m}×{n}",
                        block.name,
                        gram.repulsion.rows(),
                        gram.repulsion.cols()
                    ),
                ));
            }
            for i in 0..m {
                repulsion.row_mut(i)[range.clone()].copy_from_slice(gram.repulsion.row(i));
            }
            blocks.push((range, gram.weights));
        }
        Ok(Gram {
            weights: Weights::Blocks(blocks),
            repulsion,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::testutil::{check_kernel, pseudo};
    use crate::kernel::{median_bandwidth, BandwidthFactor, ImqKernel, Mode};

    fn layout() -> Layout {
        let mut l = Layout::default();
        l.push("a", vec![2]);
        l.push("b", vec![1]);
        l.push("c", vec![2]);
        l
    }

    fn sq(x: &[f64], y: &[f64]) -> f64 {
        x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum()
    }

    #[test]
    fn block_diagonal_matches_naive_and_finite_differences() {
        let x = pseudo(5, 5, 21, 1.0);
        let cols =
            |r: std::ops::Range<usize>| Matrix::from_fn(5, r.len(), |i, c| x.get(i, r.start + c));
        let ha = median_bandwidth(&cols(0..2), BandwidthFactor::InverseLog).unwrap();
        let hb = median_bandwidth(&cols(2..3), BandwidthFactor::InverseLog).unwrap();
        assert!(
            (ha - hb).abs() > 1e-6,
            "blocks should get their own bandwidths"
        );
        let k = GraphicalKernel::default()
            .with_local(
                "c",
                Box::new(ImqKernel {
                    mode: Mode::Vector,
                    ..Default::default()
                }),
            )
            .with_local("b", Box::new(RbfKernel::default()));
        let pointwise = |u: &[f64], v: &[f64]| {
            let mut out = vec![0.0; 25];
            let ka = (-sq(&u[0..2], &v[0..2]) / ha).exp();
            out[0] = ka;
            out[6] = ka;
            out[2 * 5 + 2] = (-sq(&u[2..3], &v[2..3]) / hb).exp();
            for c in 3..5 {
                out[c * 5 + c] = 1.0 / (1.0 + (u[c] - v[c]).powi(2)).sqrt();
            }
            out
        };
        check_kernel(&k, &x, &layout(), &pointwise, 1e-6);
        match k.compute(&x, &layout()).unwrap().weights {
            Weights::Blocks(b) => {
                assert_eq!(b.len(), 3);
                assert_eq!(b[2].0, 3..5);
                assert!(matches!(b[0].1, Weights::Scalar(_)));
                assert!(matches!(b[2].1, Weights::Vector { .. }));
            }
            w => panic!("{w:?}"),
        }
    }

    #[test]
    fn errors() {
        let k = GraphicalKernel::default();
        assert!(k.compute(&pseudo(3, 4, 1, 1.0), &layout()).is_err());
        assert!(k.compute(&Matrix::zeros(0, 5), &layout()).is_err());
        let bad = GraphicalKernel::default().with_local(
            "a",
            Box::new(ImqKernel {
                beta: 2.0,
                ..Default::default()
            }),
        );
        match bad.compute(&pseudo(3, 5, 1, 1.0), &layout()) {
            Err(Error::InvalidSettings { reason, .. }) => assert!(reason.contains("block `a`")),
            r => panic!("{r:?}"),
        }
    }
}
