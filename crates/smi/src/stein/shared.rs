//! Shared (non-mixture) parameters of the Stein engine (docs/algorithms.md §2.7): which columns
//! of θ and of a particle are the shared point η, and the gathers and scatters between the full
//! particles and their Stein part. The derivation of η's gradient is on
//! [`crate::SteinSettings::with_shared`].

use crate::error::{Error, Result};
use crate::guide::GuideSettings;
use crate::matrix::Matrix;
use crate::model::Layout;

use super::SteinSettings;

/// How the columns of θ (length d) and of a particle (length p) split into the Stein part and
/// the shared point.
#[derive(Clone, Debug)]
pub(crate) struct Shared {
    /// d, the model's dimension.
    dim: usize,
    /// Columns of θ in the shared blocks, ascending: η's columns in θ, and in a particle (the
    /// location columns come first for both guides).
    theta_shared: Vec<usize>,
    /// Columns of θ in the Stein blocks, ascending.
    theta_stein: Vec<usize>,
    /// Particle columns of the Stein part, in the Stein sub-particle's order.
    psi_stein: Vec<usize>,
    /// Particle columns fixed at [`SteinSettings::SHARED_RHO`] (the Normal guide's ρ of the
    /// shared blocks; none for Delta).
    psi_frozen: Vec<usize>,
    /// The names of the Stein sub-particle's columns (what the kernel sees).
    kernel_layout: Layout,
}

impl Shared {
    /// The split of `names` (blocks of `model_layout`, a model of dimension `dim`) for `guide`;
    /// `None` when no block is shared.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] (field `shared`) for a name that is not a block of the
    /// layout (listing the blocks), a layout that does not cover `0..dim`, or every column
    /// shared (no mixture left). Names given twice are caught by [`SteinSettings::validate`].
    pub(crate) fn new(
        model_layout: &Layout,
        dim: usize,
        names: &[String],
        guide: GuideSettings,
    ) -> Result<Option<Self>> {
        if names.is_empty() {
            return Ok(None);
        }
        if matches!(
            guide,
            GuideSettings::LowRank { .. } | GuideSettings::FullRank { .. }
        ) {
            return Err(Error::invalid(
                "shared",
                format!(
                    "shared (non-mixture) parameters need the mean-field Normal or the Delta \
                     guide; the {} guide couples the shared and the Stein coordinates",
                    guide.name()
                ),
            ));
        }
        if model_layout.dim() != dim {
            return Err(Error::invalid(
                "shared",
                format!(
                    "the model's layout covers {} columns, its dimension is {dim}: shared \
                     blocks need a layout that names every column",
                    model_layout.dim()
                ),
            ));
        }
        let blocks = model_layout.blocks();
        let mut is_shared = vec![false; blocks.len()];
        for name in names {
            let b = blocks.iter().position(|b| &b.name == name).ok_or_else(|| {
                let known: Vec<&str> = blocks.iter().map(|b| b.name.as_str()).collect();
                Error::invalid(
                    "shared",
                    format!(
                        "the model has no block {name:?}; its blocks: {}",
                        known.join(", ")
                    ),
                )
            })?;
            is_shared[b] = true;
        }
        let (mut theta_shared, mut theta_stein) = (Vec::new(), Vec::new());
        let mut stein_blocks = Layout::default();
        for (b, shared) in blocks.iter().zip(&is_shared) {
            if *shared {
                theta_shared.extend(b.range());
            } else {
                theta_stein.extend(b.range());
                stein_blocks.push(b.name.clone(), vec![b.len()]);
            }
        }
        if theta_stein.is_empty() {
            return Err(Error::invalid(
                "shared",
                "every column of the model is shared: at least one block must stay a Stein \
                 (mixture) block; for a single point estimate of everything use MAP",
            ));
        }
        let psi_frozen = match guide {
            GuideSettings::Normal { .. } => theta_shared.iter().map(|c| dim + c).collect(),
            _ => Vec::new(),
        };
        Ok(Some(Shared {
            dim,
            psi_stein: guide.param_columns(&theta_stein, dim),
            kernel_layout: guide.layout(&stein_blocks),
            theta_shared,
            theta_stein,
            psi_frozen,
        }))
    }

    /// d_T, the Stein part's share of θ.
    pub(crate) fn stein_dim(&self) -> usize {
        self.theta_stein.len()
    }

    /// The names of the Stein sub-particle's columns.
    pub(crate) fn kernel_layout(&self) -> &Layout {
        &self.kernel_layout
    }

    /// The m×p_T Stein part of the m×p particles.
    pub(crate) fn stein_particles(&self, particles: &Matrix) -> Matrix {
        Matrix::from_fn(particles.rows(), self.psi_stein.len(), |i, j| {
            particles.get(i, self.psi_stein[j])
        })
    }

    /// η: particle 0's shared columns (all rows hold the same; an empty vector for no rows).
    pub(crate) fn point(&self, particles: &Matrix) -> Vec<f64> {
        if particles.rows() == 0 {
            return Vec::new();
        }
        let row = particles.row(0);
        self.theta_shared.iter().map(|&c| row[c]).collect()
    }

    /// Makes freshly initialised particles a state of the shared engine: every row's shared
    /// columns take particle 0's values, and the frozen ρ columns hold
    /// [`SteinSettings::SHARED_RHO`].
    pub(crate) fn tie(&self, particles: &mut Matrix) {
        let eta = self.point(particles);
        for i in 0..particles.rows() {
            let row = particles.row_mut(i);
            for (&c, &v) in self.theta_shared.iter().zip(&eta) {
                row[c] = v;
            }
            for &c in &self.psi_frozen {
                row[c] = SteinSettings::SHARED_RHO;
            }
        }
    }

    /// Whether `particles` are tied as [`Shared::tie`] leaves them (a checkpoint of this engine
    /// always is): `None`, or the first particle and column that differ.
    pub(crate) fn untied(&self, particles: &Matrix) -> Option<String> {
        let eta = self.point(particles);
        for i in 0..particles.rows() {
            let row = particles.row(i);
            let loc = self.theta_shared.iter().zip(&eta).map(|(&c, &v)| (c, v));
            let rho = self
                .psi_frozen
                .iter()
                .map(|&c| (c, SteinSettings::SHARED_RHO));
            for (c, want) in loc.chain(rho) {
                if row[c].to_bits() != want.to_bits() {
                    return Some(format!(
                        "particle {i}, column {c} is {} where the shared parameters need {want}",
                        row[c]
                    ));
                }
            }
        }
        None
    }

    /// Full draws θ (K×d) from the Stein part's draws `theta_stein` (K×d_T) and η.
    pub(crate) fn scatter_draws(&self, theta_stein: &[f64], eta: &[f64], theta: &mut [f64]) {
        let (d, dt) = (self.dim, self.stein_dim());
        for (full, part) in theta.chunks_exact_mut(d).zip(theta_stein.chunks_exact(dt)) {
            for (&c, &v) in self.theta_stein.iter().zip(part) {
                full[c] = v;
            }
            for (&c, &v) in self.theta_shared.iter().zip(eta) {
                full[c] = v;
            }
        }
    }

    /// Splits the model's gradients `grad` (K×d): their Stein columns into `grad_stein`
    /// (K×d_T), and returns τ times the mean of their shared columns over the K draws,
    /// ∇_η L (see [`SteinSettings::with_shared`]).
    pub(crate) fn split_gradients(
        &self,
        grad: &[f64],
        tau: f64,
        grad_stein: &mut [f64],
    ) -> Vec<f64> {
        let (d, dt) = (self.dim, self.stein_dim());
        let mut g_eta = vec![0.0; self.theta_shared.len()];
        let mut k = 0usize;
        for (full, part) in grad.chunks_exact(d).zip(grad_stein.chunks_exact_mut(dt)) {
            for (p, &c) in part.iter_mut().zip(&self.theta_stein) {
                *p = full[c];
            }
            for (g, &c) in g_eta.iter_mut().zip(&self.theta_shared) {
                *g += full[c];
            }
            k += 1;
        }
        let scale = tau / k.max(1) as f64;
        g_eta.iter_mut().for_each(|g| *g *= scale);
        g_eta
    }

    /// The ascent direction on the full particles (m×`p`): the Stein force `phi_stein` (m×p_T)
    /// in the Stein columns, ∇_η L in every row's shared columns, 0 in the frozen ρ columns.
    pub(crate) fn direction(&self, phi_stein: &Matrix, grad_eta: &[f64], p: usize) -> Matrix {
        let mut out = Matrix::zeros(phi_stein.rows(), p);
        for i in 0..phi_stein.rows() {
            let row = out.row_mut(i);
            for (&c, &v) in self.psi_stein.iter().zip(phi_stein.row(i)) {
                row[c] = v;
            }
            for (&c, &v) in self.theta_shared.iter().zip(grad_eta) {
                row[c] = v;
            }
        }
        out
    }
}
