//! The inverse multi-quadratic kernel k(x, y) = (c² + ‖x − y‖²)^β (docs/algorithms.md §3).

use super::bandwidth::squared_distances;
use super::rbf::vector_gram;
use super::{check_particles, radial_repulsion, Gram, Kernel, Mode, Weights};
use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::model::Layout;

/// Inverse multi-quadratic kernel (NumPyro's `IMQKernel`).
///
/// - norm: k(x, y) = (c² + ‖x − y‖²)^β; ∇_x k = 2β(x − y)(c² + ‖x − y‖²)^(β−1).
/// - vector: k_c(x, y) = (c² + (x_c − y_c)²)^β, per coordinate.
///
/// Defaults: norm mode, c = 1.0 (> 0), β = −0.5 (∈ (−1, 0)). Matrix modes are not supported.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImqKernel {
    /// Norm or vector. Default norm.
    pub mode: Mode,
    /// c > 0. Default 1.0.
    pub c: f64,
    /// β ∈ (−1, 0). Default −0.5.
    pub beta: f64,
}

impl Default for ImqKernel {
    fn default() -> Self {
        ImqKernel {
            mode: Mode::Norm,
            c: 1.0,
            beta: -0.5,
        }
    }
}

impl ImqKernel {
    /// Checks the options.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] when c is not finite and > 0 (`c`), β ∉ (−1, 0) (`beta`) or
    /// the mode is a matrix mode (`mode`).
    pub fn validate(&self) -> Result<()> {
        if !(self.c.is_finite() && self.c > 0.0) {
            return Err(Error::invalid(
                "c",
                format!("IMQ c must be > 0, got {}", self.c),
            ));
        }
        if !(self.beta > -1.0 && self.beta < 0.0) {
            return Err(Error::invalid(
                "beta",
                format!("IMQ β must lie in (−1, 0), got {}", self.beta),
            ));
        }
        if matches!(self.mode, Mode::Matrix(_)) {
            return Err(Error::invalid(
                "mode",
                "the IMQ kernel supports norm and vector modes only",
            ));
        }
        Ok(())
    }
}

impl Kernel for ImqKernel {
    fn name(&self) -> &'static str {
        "imq"
    }

    /// # Errors
    /// As [`ImqKernel::validate`]; [`Error::Shape`] when m = 0, p = 0 or `layout.dim() != p`;
    /// [`Error::NonFinite`] for non-finite particles.
    fn compute(&self, particles: &Matrix, layout: &Layout) -> Result<Gram> {
        self.validate()?;
        check_particles(self.name(), particles, layout)?;
        let (c2, beta) = (self.c * self.c, self.beta);
        if self.mode == Mode::Norm {
            let mut k = squared_distances(particles);
            let mut w = k.clone();
            k.as_mut_slice()
                .iter_mut()
                .for_each(|v| *v = (c2 + *v).powf(beta));
            w.as_mut_slice()
                .iter_mut()
                .for_each(|v| *v = 2.0 * beta * (c2 + *v).powf(beta - 1.0));
            let repulsion = radial_repulsion(&w, particles);
            Ok(Gram {
                weights: Weights::Scalar(k),
                repulsion,
            })
        } else {
            Ok(vector_gram(particles, |d| {
                let base = c2 + d * d;
                let k = base.powf(beta);
                (k, 2.0 * beta * d * k / base)
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::testutil::{check_kernel, diag_scalar, diag_vector, pseudo, x4};

    fn k_norm(x: &[f64], y: &[f64], c: f64, beta: f64) -> f64 {
        let r2: f64 = x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum();
        (c * c + r2).powf(beta)
    }

    #[test]
    fn spec_test_vectors() {
        let x = x4();
        let g = ImqKernel::default().compute(&x, &Layout::flat(2)).unwrap();
        assert!((g.weights.scalar(0, 1).unwrap() - 0.104828484).abs() < 1e-8);
        let v = ImqKernel {
            mode: Mode::Vector,
            ..Default::default()
        };
        match v.compute(&x, &Layout::flat(2)).unwrap().weights {
            Weights::Vector { m, p, k } => {
                assert_eq!((m, p), (4, 2));
                let k01 = &k[p..2 * p];
                assert!((k01[0] - 0.11043153).abs() < 1e-8);
                assert!((k01[1] - 0.31622777).abs() < 1e-8);
            }
            w => panic!("{w:?}"),
        }
    }

    #[test]
    fn attraction_and_repulsion_match_naive_and_finite_differences() {
        for (x, p) in [(x4(), 2), (pseudo(5, 3, 3, 2.0), 3)] {
            for (c, beta) in [(1.0, -0.5), (0.7, -0.2)] {
                let norm = ImqKernel {
                    mode: Mode::Norm,
                    c,
                    beta,
                };
                check_kernel(
                    &norm,
                    &x,
                    &Layout::flat(p),
                    &|a, b| diag_scalar(k_norm(a, b, c, beta), p),
                    1e-6,
                );
                let vector = ImqKernel {
                    mode: Mode::Vector,
                    c,
                    beta,
                };
                check_kernel(
                    &vector,
                    &x,
                    &Layout::flat(p),
                    &|a, b| {
                        let k: Vec<f64> = a
                            .iter()
                            .zip(b)
                            .map(|(u, v)| k_norm(&[*u], &[*v], c, beta))
                            .collect();
                        diag_vector(&k)
                    },
                    1e-6,
                );
            }
        }
    }

    #[test]
    fn errors() {
        let bad = ImqKernel {
            beta: -1.0,
            ..Default::default()
        };
        assert!(matches!(
            bad.compute(&x4(), &Layout::flat(2)),
            Err(Error::InvalidSettings { field: "beta", .. })
        ));
        assert!(ImqKernel::default()
            .compute(&Matrix::zeros(0, 2), &Layout::flat(2))
            .is_err());
        assert!(ImqKernel::default()
            .compute(&x4(), &Layout::flat(1))
            .is_err());
    }
}
