//! The linear kernel k(x, y) = xᵀy + 1 (docs/algorithms.md §3).

use super::{check_particles, Gram, Kernel, Weights};
use crate::error::Result;
use crate::linalg::{gemm, Op};
use crate::matrix::Matrix;
use crate::model::Layout;

/// Linear kernel (NumPyro's `LinearKernel`): k(x, y) = xᵀy + 1, ∇_x k(x, y) = y.
///
/// Norm mode only. The repulsion on target ℓ is Σ_i x_ℓ = m·x_ℓ. No options.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct LinearKernel;

impl Kernel for LinearKernel {
    fn name(&self) -> &'static str {
        "linear"
    }

    /// # Errors
    /// [`crate::Error::Shape`] when m = 0, p = 0 or `layout.dim() != p`;
    /// [`crate::Error::NonFinite`] for non-finite particles.
    fn compute(&self, particles: &Matrix, layout: &Layout) -> Result<Gram> {
        let (m, p) = check_particles(self.name(), particles, layout)?;
        let mut k = Matrix::from_fn(m, m, |_, _| 1.0);
        gemm(
            k.as_mut_slice(),
            particles.as_slice(),
            Op::N,
            particles.as_slice(),
            Op::T,
            m,
            p,
            m,
            1.0,
            true,
        );
        let mut repulsion = particles.clone();
        repulsion
            .as_mut_slice()
            .iter_mut()
            .for_each(|v| *v *= m as f64);
        Ok(Gram {
            weights: Weights::Scalar(k),
            repulsion,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::testutil::{check_kernel, diag_scalar, pseudo, x4};

    #[test]
    fn spec_test_vector() {
        let g = LinearKernel.compute(&x4(), &Layout::flat(2)).unwrap();
        assert!((g.weights.scalar(0, 1).unwrap() - 21.0).abs() < 1e-12);
    }

    #[test]
    fn attraction_and_repulsion_match_naive_and_finite_differences() {
        for (x, p) in [(x4(), 2), (pseudo(3, 4, 8, 1.0), 4)] {
            check_kernel(
                &LinearKernel,
                &x,
                &Layout::flat(p),
                &|a, b| diag_scalar(a.iter().zip(b).map(|(u, v)| u * v).sum::<f64>() + 1.0, p),
                1e-6,
            );
        }
    }

    #[test]
    fn errors() {
        assert!(LinearKernel
            .compute(&Matrix::zeros(0, 2), &Layout::flat(2))
            .is_err());
        assert!(LinearKernel.compute(&x4(), &Layout::flat(3)).is_err());
    }
}
