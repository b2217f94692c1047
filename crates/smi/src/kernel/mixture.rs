//! The mixture kernel k(x, y) = Σ_i w_i k_i(x, y) (docs/algorithms.md §3).

use super::{Gram, Kernel, Weights};
use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::model::Layout;

/// Weighted sum of kernels (NumPyro's `MixtureKernel`): k = Σ_i w_i k_i, ∇k = Σ_i w_i ∇k_i.
///
/// Needs at least two kernels, one finite weight ≥ 0 per kernel, and every kernel in the same
/// mode (all scalar, all vector, or all block-diagonal on the same blocks).
#[derive(Debug)]
pub struct MixtureKernel {
    weights: Vec<f64>,
    kernels: Vec<Box<dyn Kernel>>,
}

impl MixtureKernel {
    /// A mixture of `kernels` with weights `weights`.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] for fewer than two kernels (`kernels`), a weight count that
    /// differs from the kernel count, or a weight that is not finite and ≥ 0 (`weights`).
    pub fn new(weights: Vec<f64>, kernels: Vec<Box<dyn Kernel>>) -> Result<Self> {
        if kernels.len() < 2 {
            return Err(Error::invalid(
                "kernels",
                format!(
                    "a mixture needs at least two kernels, got {}",
                    kernels.len()
                ),
            ));
        }
        if weights.len() != kernels.len() {
            return Err(Error::invalid(
                "weights",
                format!("{} weights for {} kernels", weights.len(), kernels.len()),
            ));
        }
        if let Some(w) = weights.iter().find(|w| !(w.is_finite() && **w >= 0.0)) {
            return Err(Error::invalid(
                "weights",
                format!("mixture weights must be finite and ≥ 0, got {w}"),
            ));
        }
        Ok(MixtureKernel { weights, kernels })
    }

    /// The weights w_i.
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// The kernels k_i.
    pub fn kernels(&self) -> &[Box<dyn Kernel>] {
        &self.kernels
    }
}

fn scale(w: &mut Weights, s: f64) {
    match w {
        Weights::Scalar(k) => k.as_mut_slice().iter_mut().for_each(|v| *v *= s),
        Weights::Vector { k, .. } => k.iter_mut().for_each(|v| *v *= s),
        Weights::Blocks(blocks) => blocks.iter_mut().for_each(|(_, b)| scale(b, s)),
    }
}

fn add_scaled(acc: &mut Weights, s: f64, other: &Weights) -> Result<()> {
    let mismatch = || {
        Error::invalid(
            "kernels",
            "all kernels of a mixture must have the same mode",
        )
    };
    match (acc, other) {
        (Weights::Scalar(a), Weights::Scalar(b)) if a.rows() == b.rows() => {
            add_slices(a.as_mut_slice(), s, b.as_slice());
        }
        (
            Weights::Vector { m, p, k },
            Weights::Vector {
                m: mb,
                p: pb,
                k: kb,
            },
        ) if m == mb && p == pb => add_slices(k, s, kb),
        (Weights::Blocks(a), Weights::Blocks(b)) if a.len() == b.len() => {
            for ((ra, wa), (rb, wb)) in a.iter_mut().zip(b) {
                if ra != rb {
                    return Err(mismatch());
                }
                add_scaled(wa, s, wb)?;
            }
        }
        _ => return Err(mismatch()),
    }
    Ok(())
}

fn add_slices(a: &mut [f64], s: f64, b: &[f64]) {
    a.iter_mut().zip(b).for_each(|(x, y)| *x += s * y);
}

impl Kernel for MixtureKernel {
    fn name(&self) -> &'static str {
        "mixture"
    }

    /// # Errors
    /// Any error of a component kernel; [`Error::InvalidSettings`] when the components produce
    /// weights of different modes.
    fn compute(&self, particles: &Matrix, layout: &Layout) -> Result<Gram> {
        let mut acc: Option<Gram> = None;
        for (w, k) in self.weights.iter().zip(&self.kernels) {
            let g = k.compute(particles, layout)?;
            match acc.as_mut() {
                None => {
                    let mut g = g;
                    scale(&mut g.weights, *w);
                    g.repulsion.as_mut_slice().iter_mut().for_each(|v| *v *= w);
                    acc = Some(g);
                }
                Some(a) => {
                    add_scaled(&mut a.weights, *w, &g.weights)?;
                    add_slices(a.repulsion.as_mut_slice(), *w, g.repulsion.as_slice());
                }
            }
        }
        acc.ok_or_else(|| Error::invalid("kernels", "a mixture needs at least two kernels"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::testutil::{check_kernel, diag_scalar, diag_vector, pseudo, x4};
    use crate::kernel::{
        median_bandwidth, BandwidthFactor, ImqKernel, LinearKernel, Mode, RbfKernel,
    };

    fn sq(x: &[f64], y: &[f64]) -> f64 {
        x.iter().zip(y).map(|(a, b)| (a - b) * (a - b)).sum()
    }

    #[test]
    fn norm_mixture_matches_naive_and_finite_differences() {
        for x in [x4(), pseudo(5, 3, 6, 1.0)] {
            let p = x.cols();
            let h = median_bandwidth(&x, BandwidthFactor::InverseLog).unwrap();
            let k = MixtureKernel::new(
                vec![0.3, 0.7, 0.01],
                vec![
                    Box::new(RbfKernel::default()),
                    Box::new(ImqKernel::default()),
                    Box::new(LinearKernel),
                ],
            )
            .unwrap();
            check_kernel(
                &k,
                &x,
                &Layout::flat(p),
                &|a, b| {
                    let lin: f64 = a.iter().zip(b).map(|(u, v)| u * v).sum::<f64>() + 1.0;
                    let v =
                        0.3 * (-sq(a, b) / h).exp() + 0.7 / (1.0 + sq(a, b)).sqrt() + 0.01 * lin;
                    diag_scalar(v, p)
                },
                1e-6,
            );
        }
    }

    #[test]
    fn vector_mixture_matches_naive_and_finite_differences() {
        let x = pseudo(4, 3, 7, 1.0);
        let h = median_bandwidth(&x, BandwidthFactor::InverseLog).unwrap();
        let k = MixtureKernel::new(
            vec![0.5, 2.0],
            vec![
                Box::new(RbfKernel {
                    mode: Mode::Vector,
                    ..Default::default()
                }),
                Box::new(ImqKernel {
                    mode: Mode::Vector,
                    ..Default::default()
                }),
            ],
        )
        .unwrap();
        check_kernel(
            &k,
            &x,
            &Layout::flat(3),
            &|a, b| {
                let v: Vec<f64> = a
                    .iter()
                    .zip(b)
                    .map(|(u, w)| {
                        let d2 = (u - w) * (u - w);
                        0.5 * (-d2 / h).exp() + 2.0 / (1.0 + d2).sqrt()
                    })
                    .collect();
                diag_vector(&v)
            },
            1e-6,
        );
    }

    #[test]
    fn errors() {
        assert!(MixtureKernel::new(vec![1.0], vec![Box::new(LinearKernel)]).is_err());
        assert!(MixtureKernel::new(
            vec![1.0],
            vec![Box::new(LinearKernel), Box::new(LinearKernel)]
        )
        .is_err());
        assert!(MixtureKernel::new(
            vec![1.0, f64::NAN],
            vec![Box::new(LinearKernel), Box::new(LinearKernel)]
        )
        .is_err());
        let mixed = MixtureKernel::new(
            vec![1.0, 1.0],
            vec![
                Box::new(LinearKernel),
                Box::new(RbfKernel {
                    mode: Mode::Vector,
                    ..Default::default()
                }),
            ],
        )
        .unwrap();
        assert!(matches!(
            mixed.compute(&x4(), &Layout::flat(2)),
            Err(Error::InvalidSettings { .. })
        ));
        let ok = MixtureKernel::new(
            vec![1.0, 1.0],
            vec![Box::new(LinearKernel), Box::new(RbfKernel::default())],
        )
        .unwrap();
        assert!(ok.compute(&Matrix::zeros(0, 2), &Layout::flat(2)).is_err());
    }
}
