//! Stein kernels k(x, y) on particles (docs/algorithms.md §3), with closed-form gradients.
//!
//! A kernel is built once per step from the current particles X (m×p) and returns a [`Gram`]:
//! the kernel weights k(x_i, x_ℓ) and the repulsion Σ_i ∇_{x_i} k(x_i, x_ℓ) for every target ℓ.
//! The first argument of k is the source i, the second the target ℓ. Nothing is differentiated
//! through the construction (the bandwidth is a constant).

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::linalg::{gemm, Op};
use crate::matrix::Matrix;
use crate::model::Layout;

mod bandwidth;
mod direction;
mod graphical;
mod imq;
mod linear;
mod mixture;
mod probability_product;
mod random_feature;
mod rbf;

smi_simd::multiversion! {
    /// o ← o + w·v (one product and one addition per element), in the CPU's widest vector
    /// build.
    fn add_scaled(w: f64, v: &[f64], o: &mut [f64]) {
        for (o, v) in o.iter_mut().zip(v) {
            *o += w * v;
        }
    }
}

smi_simd::multiversion! {
    /// o ← o + w ⊙ v (one product and one addition per element), in the CPU's widest vector
    /// build.
    fn add_weighted(w: &[f64], v: &[f64], o: &mut [f64]) {
        for ((o, v), w) in o.iter_mut().zip(v).zip(w) {
            *o += w * v;
        }
    }
}

#[cfg(test)]
mod testutil;

pub use bandwidth::{
    bandwidth_from_squared_distances, median_bandwidth, squared_distances, BandwidthFactor,
};
pub use graphical::GraphicalKernel;
pub use imq::ImqKernel;
pub use linear::LinearKernel;
pub use mixture::MixtureKernel;
pub use probability_product::ProbabilityProductKernel;
pub use random_feature::RandomFeatureKernel;
pub use rbf::RbfKernel;

/// How a kernel value combines with a gradient (docs/algorithms.md §3).
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
    /// A_ℓ = Σ_i k(x_i, x_ℓ) ⊙ g_i for every target ℓ (the attractive force before scaling).
    ///
    /// `g` is m×p (row i = ĝ_i); the result is m×p.
    pub fn attract(&self, g: &Matrix) -> Matrix {
        let mut out = Matrix::zeros(g.rows(), g.cols());
        self.attract_into(g, 0..g.cols(), &mut out);
        out
    }

    fn attract_into(&self, g: &Matrix, cols: Range<usize>, out: &mut Matrix) {
        for l in 0..g.rows() {
            self.attract_row(g, cols.clone(), 0, l, &mut out.row_mut(l)[cols.clone()]);
        }
    }

    /// Adds Σ_i k(x_i, x_ℓ) ⊙ g_i to `ol`, on the columns `cols` of `g` (`ol` holds those
    /// columns of target ℓ; the sum runs over i = 0, 1, … in order, one product and one
    /// addition per term, a zero scalar weight skipped). `k0` is the weights' own column of
    /// `cols.start` (vector weights); block weights take their blocks' columns relative to
    /// `cols.start`, each block's weights from their column 0.
    pub(crate) fn attract_row(
        &self,
        g: &Matrix,
        cols: Range<usize>,
        k0: usize,
        l: usize,
        ol: &mut [f64],
    ) {
        let m = g.rows();
        match self {
            Weights::Scalar(k) => {
                for i in 0..m {
                    let w = k.get(i, l);
                    if w == 0.0 {
                        continue;
                    }
                    add_scaled(w, &g.row(i)[cols.clone()], ol);
                }
            }
            Weights::Vector { m: mm, p, k } => {
                for i in 0..m {
                    let row = (i * mm + l) * p + k0;
                    let kv = &k[row..row + cols.len()];
                    add_weighted(kv, &g.row(i)[cols.clone()], ol);
                }
            }
            Weights::Blocks(blocks) => {
                for (range, w) in blocks {
                    let start = cols.start + range.start;
                    w.attract_row(g, start..start + range.len(), 0, l, &mut ol[range.clone()]);
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

/// How the matrix mode of a kernel turns its value into a d×d matrix (docs/algorithms.md §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatrixMode {
    /// K = k·I with the scalar (norm-mode) value k. Default, as in NumPyro.
    #[default]
    NormDiag,
    /// K = diag(k_1, …, k_p) with the vector-mode values.
    VectorDiag,
}

/// How a kernel value combines with a gradient v (docs/algorithms.md §3).
///
/// Serialised as `"norm"`, `"vector"` or `{"matrix": "norm_diag" | "vector_diag"}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// A scalar k(x, y): k·v. Default.
    #[default]
    Norm,
    /// A p-vector k(x, y): k ⊙ v.
    Vector,
    /// A p×p matrix K(x, y): K @ v.
    Matrix(MatrixMode),
}

impl Mode {
    /// Whether this mode produces [`Weights::Scalar`] (norm, or matrix `norm_diag`) rather than
    /// [`Weights::Vector`].
    pub fn is_scalar(self) -> bool {
        matches!(self, Mode::Norm | Mode::Matrix(MatrixMode::NormDiag))
    }
}

/// Checks particles X (m×p) against `layout` before a kernel is built.
///
/// Returns (m, p).
///
/// # Errors
/// [`Error::Shape`] when m = 0, p = 0 or `layout.dim() != p`; [`Error::NonFinite`] when X holds
/// NaN or ±inf.
pub fn check_particles(
    kernel: &str,
    particles: &Matrix,
    layout: &Layout,
) -> Result<(usize, usize)> {
    let (m, p) = (particles.rows(), particles.cols());
    if m == 0 {
        return Err(Error::shape(
            format!("{kernel} kernel particles"),
            "at least one particle",
            format!("{m}×{p}"),
        ));
    }
    if p == 0 {
        return Err(Error::shape(
            format!("{kernel} kernel particles"),
            "at least one column",
            format!("{m}×{p}"),
        ));
    }
    if layout.dim() != p {
        return Err(Error::shape(
            format!("{kernel} kernel layout"),
            format!("layout of dimension p = {p}"),
            layout.dim(),
        ));
    }
    if !particles.is_finite() {
        return Err(Error::non_finite(format!("{kernel} kernel particles")));
    }
    Ok((m, p))
}

/// R_ℓ = Σ_i w_iℓ (x_i − x_ℓ) for every target ℓ, without an m×m×p buffer.
///
/// `w` is m×m (entry (i, ℓ)), `x` is m×p; the result is m×p. Computed as Wᵀ X − diag(Σ_i w_iℓ) X
/// (one m×m by m×p product). This is the repulsion of every radial kernel
/// k(x, y) = f(‖x − y‖²) with w_iℓ = 2 f′(‖x_i − x_ℓ‖²).
pub fn radial_repulsion(w: &Matrix, x: &Matrix) -> Matrix {
    let (m, p) = (x.rows(), x.cols());
    let mut out = Matrix::zeros(m, p);
    gemm(
        out.as_mut_slice(),
        w.as_slice(),
        Op::T,
        x.as_slice(),
        Op::N,
        m,
        m,
        p,
        1.0,
        false,
    );
    for l in 0..m {
        let s: f64 = (0..m).map(|i| w.get(i, l)).sum();
        if s != 0.0 {
            let (xl, ol) = (x.row(l), &mut out.row_mut(l)[..]);
            for (o, v) in ol.iter_mut().zip(xl) {
                *o -= s * v;
            }
        }
    }
    out
}

/// Serialisable choice of a Stein kernel and its options (docs/algorithms.md §3), stored in engine settings.
///
/// Tagged by `"kind"`, e.g. `{"kind": "rbf", "mode": "norm"}` or
/// `{"kind": "imq", "c": 1.0, "beta": -0.5}`; omitted fields take their defaults. The default is
/// the RBF kernel in norm mode with the median bandwidth (f(m) = 1/ln m).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum KernelSettings {
    /// [`RbfKernel`]: k = exp(−‖x − y‖²/h) with the median bandwidth h.
    Rbf {
        /// Norm, vector or matrix (`norm_diag` / `vector_diag`). Default norm.
        #[serde(default)]
        mode: Mode,
        /// f(m) in h = median² · f(m). Default 1/ln m.
        #[serde(default)]
        bandwidth_factor: BandwidthFactor,
    },
    /// [`ImqKernel`]: k = (c² + ‖x − y‖²)^β.
    Imq {
        /// Norm or vector. Default norm.
        #[serde(default)]
        mode: Mode,
        /// c > 0. Default 1.0.
        #[serde(default = "default_imq_c")]
        c: f64,
        /// β ∈ (−1, 0). Default −0.5.
        #[serde(default = "default_imq_beta")]
        beta: f64,
    },
    /// [`LinearKernel`]: k = xᵀy + 1 (norm only).
    Linear,
    /// [`RandomFeatureKernel`]: random Fourier features with a fixed seed (norm only).
    RandomFeature {
        /// Seed of the features W ~ N(0, 1), b ~ U[0, 2π). Default 0.
        #[serde(default)]
        seed: u64,
        /// f(m) in h = median² · f(m). Default 1/ln m.
        #[serde(default)]
        bandwidth_factor: BandwidthFactor,
        /// Compute the bandwidth on this many randomly chosen particles. Default all (`None`).
        #[serde(default)]
        bandwidth_subset: Option<usize>,
    },
    /// [`MixtureKernel`]: Σ_i w_i k_i with at least two kernels of the same mode.
    Mixture {
        /// The weights w_i (finite, ≥ 0), one per kernel.
        weights: Vec<f64>,
        /// The kernels k_i.
        kernels: Vec<KernelSettings>,
    },
    /// [`GraphicalKernel`]: block-diagonal matrix kernel, one local kernel per layout block.
    Graphical {
        /// Local kernel for blocks not named in `local`. Default RBF (norm).
        #[serde(default)]
        default: Box<KernelSettings>,
        /// Local kernel per block name (e.g. `"w.loc"`). Default none.
        #[serde(default)]
        local: BTreeMap<String, KernelSettings>,
    },
    /// [`ProbabilityProductKernel`]: for Normal-guide particles (norm only).
    ProbabilityProduct {
        /// s > 0 in k = exp(−(s/2)(Q_x + Q_y − C)). Default 1.0.
        #[serde(default = "default_ppk_scale")]
        scale: f64,
    },
}

fn default_imq_c() -> f64 {
    1.0
}

fn default_imq_beta() -> f64 {
    -0.5
}

fn default_ppk_scale() -> f64 {
    1.0
}

impl Default for KernelSettings {
    /// RBF, norm mode, f(m) = 1/ln m.
    fn default() -> Self {
        KernelSettings::Rbf {
            mode: Mode::Norm,
            bandwidth_factor: BandwidthFactor::default(),
        }
    }
}

impl KernelSettings {
    /// Builds the kernel after checking every option.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] for an option out of range: a bandwidth factor that is not
    /// finite and > 0, IMQ c ≤ 0, β ∉ (−1, 0) or a matrix mode, a bandwidth subset of 0, a
    /// mixture with fewer than two kernels, mismatched weights or modes, a PPK scale ≤ 0.
    pub fn build(&self) -> Result<Box<dyn Kernel>> {
        Ok(match self {
            KernelSettings::Rbf {
                mode,
                bandwidth_factor,
            } => {
                let k = RbfKernel {
                    mode: *mode,
                    bandwidth_factor: *bandwidth_factor,
                };
                k.validate()?;
                Box::new(k)
            }
            KernelSettings::Imq { mode, c, beta } => {
                let k = ImqKernel {
                    mode: *mode,
                    c: *c,
                    beta: *beta,
                };
                k.validate()?;
                Box::new(k)
            }
            KernelSettings::Linear => Box::new(LinearKernel),
            KernelSettings::RandomFeature {
                seed,
                bandwidth_factor,
                bandwidth_subset,
            } => {
                let k = RandomFeatureKernel {
                    seed: *seed,
                    bandwidth_factor: *bandwidth_factor,
                    bandwidth_subset: *bandwidth_subset,
                };
                k.validate()?;
                Box::new(k)
            }
            KernelSettings::Mixture { weights, kernels } => {
                let scalar = kernels
                    .iter()
                    .map(KernelSettings::output)
                    .collect::<Vec<_>>();
                if scalar.windows(2).any(|w| w[0] != w[1]) {
                    return Err(Error::invalid(
                        "kernels",
                        "all kernels of a mixture must have the same mode",
                    ));
                }
                let built = kernels
                    .iter()
                    .map(KernelSettings::build)
                    .collect::<Result<Vec<_>>>()?;
                Box::new(MixtureKernel::new(weights.clone(), built)?)
            }
            KernelSettings::Graphical { default, local } => {
                let mut k = GraphicalKernel::new(default.build()?);
                for (name, s) in local {
                    k = k.with_local(name.clone(), s.build()?);
                }
                Box::new(k)
            }
            KernelSettings::ProbabilityProduct { scale } => {
                let k = ProbabilityProductKernel { scale: *scale };
                k.validate()?;
                Box::new(k)
            }
        })
    }

    /// Which [`Weights`] variant the kernel produces: 0 scalar, 1 vector, 2 blocks.
    fn output(&self) -> u8 {
        match self {
            KernelSettings::Rbf { mode, .. } | KernelSettings::Imq { mode, .. } => {
                u8::from(!mode.is_scalar())
            }
            KernelSettings::Linear
            | KernelSettings::RandomFeature { .. }
            | KernelSettings::ProbabilityProduct { .. } => 0,
            KernelSettings::Mixture { kernels, .. } => kernels.first().map_or(0, Self::output),
            KernelSettings::Graphical { .. } => 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::testutil::x4;

    #[test]
    fn settings_default_is_rbf_norm_and_round_trips() {
        let s = KernelSettings::default();
        assert_eq!(
            s,
            KernelSettings::Rbf {
                mode: Mode::Norm,
                bandwidth_factor: BandwidthFactor::InverseLog
            }
        );
        let all = vec![
            s,
            KernelSettings::Rbf {
                mode: Mode::Matrix(MatrixMode::VectorDiag),
                bandwidth_factor: BandwidthFactor::Constant(0.5),
            },
            KernelSettings::Imq {
                mode: Mode::Vector,
                c: 2.0,
                beta: -0.3,
            },
            KernelSettings::Linear,
            KernelSettings::RandomFeature {
                seed: 7,
                bandwidth_factor: BandwidthFactor::InverseLogPlusOne,
                bandwidth_subset: Some(3),
            },
            KernelSettings::Mixture {
                weights: vec![0.5, 0.5],
                kernels: vec![KernelSettings::default(), KernelSettings::Linear],
            },
            KernelSettings::Graphical {
                default: Box::default(),
                local: [("a".to_string(), KernelSettings::Linear)].into(),
            },
            KernelSettings::ProbabilityProduct { scale: 1.0 },
        ];
        for s in all {
            let json = serde_json::to_string(&s).unwrap();
            let back: KernelSettings = serde_json::from_str(&json).unwrap();
            assert_eq!(back, s, "{json}");
            assert!(s.build().is_ok(), "{json}");
        }
        let imq: KernelSettings = serde_json::from_str(r#"{"kind":"imq"}"#).unwrap();
        assert_eq!(
            imq,
            KernelSettings::Imq {
                mode: Mode::Norm,
                c: 1.0,
                beta: -0.5
            }
        );
        let m: KernelSettings =
            serde_json::from_str(r#"{"kind":"rbf","mode":{"matrix":"vector_diag"}}"#).unwrap();
        assert!(matches!(
            m,
            KernelSettings::Rbf {
                mode: Mode::Matrix(MatrixMode::VectorDiag),
                ..
            }
        ));
    }

    #[test]
    fn build_rejects_bad_options() {
        let bad = [
            KernelSettings::Imq {
                mode: Mode::Norm,
                c: 1.0,
                beta: -1.5,
            },
            KernelSettings::Imq {
                mode: Mode::Norm,
                c: 1.0,
                beta: 0.0,
            },
            KernelSettings::Imq {
                mode: Mode::Norm,
                c: 0.0,
                beta: -0.5,
            },
            KernelSettings::Imq {
                mode: Mode::Matrix(MatrixMode::NormDiag),
                c: 1.0,
                beta: -0.5,
            },
            KernelSettings::Rbf {
                mode: Mode::Norm,
                bandwidth_factor: BandwidthFactor::Constant(-1.0),
            },
            KernelSettings::RandomFeature {
                seed: 0,
                bandwidth_factor: BandwidthFactor::InverseLog,
                bandwidth_subset: Some(0),
            },
            KernelSettings::Mixture {
                weights: vec![1.0],
                kernels: vec![KernelSettings::default()],
            },
            KernelSettings::Mixture {
                weights: vec![1.0],
                kernels: vec![KernelSettings::default(), KernelSettings::Linear],
            },
            KernelSettings::Mixture {
                weights: vec![1.0, 1.0],
                kernels: vec![
                    KernelSettings::default(),
                    KernelSettings::Rbf {
                        mode: Mode::Vector,
                        bandwidth_factor: BandwidthFactor::InverseLog,
                    },
                ],
            },
            KernelSettings::ProbabilityProduct { scale: 0.0 },
        ];
        for s in bad {
            assert!(
                matches!(s.build(), Err(Error::InvalidSettings { .. })),
                "{s:?}"
            );
        }
    }

    #[test]
    fn shared_input_checks_return_errors() {
        let k = KernelSettings::default().build().unwrap();
        let empty = Matrix::zeros(0, 2);
        assert!(matches!(
            k.compute(&empty, &Layout::flat(2)),
            Err(Error::Shape { .. })
        ));
        assert!(matches!(
            k.compute(&x4(), &Layout::flat(3)),
            Err(Error::Shape { .. })
        ));
        let mut nan = x4();
        nan.set(1, 1, f64::NAN);
        assert!(matches!(
            k.compute(&nan, &Layout::flat(2)),
            Err(Error::NonFinite { .. })
        ));
    }

    #[test]
    fn radial_repulsion_matches_direct_sum() {
        let x = x4();
        let w = Matrix::from_fn(4, 4, |i, l| (i as f64 + 1.0) * 0.3 - l as f64 * 0.1);
        let r = radial_repulsion(&w, &x);
        for l in 0..4 {
            for c in 0..2 {
                let want: f64 = (0..4)
                    .map(|i| w.get(i, l) * (x.get(i, c) - x.get(l, c)))
                    .sum();
                assert!((r.get(l, c) - want).abs() < 1e-12);
            }
        }
    }
}
