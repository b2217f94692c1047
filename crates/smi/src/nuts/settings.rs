//! The settings of a NUTS run.

use nuts_rs::{
    DiagNutsSettings, EuclideanAdaptOptions, LowRankNutsSettings, LowRankSettings, StepSizeSettings,
};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The mass matrix (metric) that nuts-rs adapts during warm-up.
///
/// Serialised as `"diagonal"`, `"dense"` or `{"low_rank": {"eigval_cutoff": .., "gamma": ..}}`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MassMatrix {
    /// A diagonal mass matrix (the default, as Stan's and NumPyro's): one scale per
    /// coordinate, estimated from the draws and gradients of the warm-up windows. Correlated
    /// coordinates keep a small step size and long trees.
    #[default]
    Diagonal,
    /// nuts-rs's low-rank adaptation (nutpie's `low_rank_modified_mass_matrix`): the diagonal
    /// scaling plus a correction along the eigen-directions of the draw/gradient covariance
    /// whose eigenvalues λ lie outside [1/`eigval_cutoff`, `eigval_cutoff`]. It captures a few
    /// strong correlations at O(d·k) cost per leapfrog step for k kept directions.
    LowRank {
        /// Eigenvalues λ with 1/cutoff ≤ λ ≤ cutoff are dropped; ≥ 1, finite (nuts-rs's
        /// default 2).
        eigval_cutoff: f64,
        /// Regularisation of the draw and gradient covariances (they are scaled by 1/γ and
        /// added to the identity); > 0, finite (nuts-rs's default 1e-5).
        gamma: f64,
    },
    /// A dense (full-rank) mass matrix. nuts-rs 0.19 has no separate dense adaptation; this
    /// is its low-rank adaptation keeping every eigen-direction (`eigval_cutoff` = 1, γ =
    /// 1e-5), which is full rank once a warm-up window holds at least d draws. Costs O(d²) per
    /// leapfrog step; for large d prefer [`MassMatrix::LowRank`].
    Dense,
}

impl MassMatrix {
    /// [`MassMatrix::LowRank`] with nuts-rs's defaults: cutoff 2, γ = 1e-5.
    pub fn low_rank() -> Self {
        let d = LowRankSettings::default();
        MassMatrix::LowRank {
            eigval_cutoff: d.eigval_cutoff,
            gamma: d.gamma,
        }
    }

    /// The nuts-rs low-rank settings; `None` for [`MassMatrix::Diagonal`].
    fn low_rank_settings(&self) -> Option<LowRankSettings> {
        let defaults = LowRankSettings::default();
        match *self {
            MassMatrix::Diagonal => None,
            MassMatrix::LowRank {
                eigval_cutoff,
                gamma,
            } => Some(LowRankSettings {
                eigval_cutoff,
                gamma,
                ..defaults
            }),
            MassMatrix::Dense => Some(LowRankSettings {
                eigval_cutoff: 1.0,
                ..defaults
            }),
        }
    }
}

/// Settings of a NUTS run (docs/algorithms.md §5; §7.3 for the UCI preset).
///
/// The defaults are Stan's: 4 chains of 1000 warm-up and 1000 kept draws, target acceptance
/// 0.8, maximum tree depth 10, a diagonal mass matrix adapted in warm-up by nuts-rs's schedule,
/// step size by dual averaging to `target_accept`. Construct with struct update syntax:
/// `NutsSettings { num_draws: 3000, ..NutsSettings::default() }`. Every field has a serde
/// default, so settings stored before a field existed still load (as the default value).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NutsSettings {
    /// Warm-up (tuning) iterations per chain (default 1000); discarded unless `keep_warmup`.
    pub num_warmup: usize,
    /// Kept draws per chain (default 1000; 3000 in the UCI preset [`NutsSettings::uci`]).
    pub num_draws: usize,
    /// Number of chains, run in parallel with rayon (default 4).
    pub num_chains: usize,
    /// Target mean acceptance probability of the step-size adaptation, in (0, 1) (default 0.8).
    pub target_accept: f64,
    /// Maximum tree depth: at most 2^max_depth − 1 leapfrog steps per draw, 1..=30 (default 10).
    pub max_depth: u64,
    /// Seed; chain c uses stream c of a ChaCha8 generator seeded with it (default 0).
    pub seed: u64,
    /// Initial points are uniform(−r, r) in every unconstrained coordinate, r ≥ 0 (default 2,
    /// NumPyro's `init_to_uniform(radius=2)`, Stan's too); 0 starts at the origin.
    pub init_radius: f64,
    /// The adapted mass matrix (default [`MassMatrix::Diagonal`]).
    pub mass_matrix: MassMatrix,
    /// Return the warm-up draws and their statistics ([`crate::NutsResult::warmup_draws`],
    /// [`crate::ChainDiagnostics::warmup_stats`]), apart from the kept draws (default false).
    pub keep_warmup: bool,
}

impl Default for NutsSettings {
    /// Stan's defaults: 1000 warm-up, 1000 draws, 4 chains, target accept 0.8, max depth 10;
    /// seed 0, init radius 2, diagonal mass matrix, warm-up draws not kept.
    fn default() -> Self {
        NutsSettings {
            num_warmup: 1000,
            num_draws: 1000,
            num_chains: 4,
            target_accept: 0.8,
            max_depth: 10,
            seed: 0,
            init_radius: 2.0,
            mass_matrix: MassMatrix::Diagonal,
            keep_warmup: false,
        }
    }
}

impl NutsSettings {
    /// NumPyro's `NUTS`/`MCMC` defaults (docs/algorithms.md §5): 500 warm-up, 1000 draws, one
    /// chain, target accept 0.8, max depth 10, init radius 2, diagonal mass matrix. These were
    /// [`NutsSettings::default`] before it followed Stan.
    pub fn numpyro() -> Self {
        NutsSettings {
            num_warmup: 500,
            num_draws: 1000,
            num_chains: 1,
            ..NutsSettings::default()
        }
    }

    /// The UCI preset of docs/algorithms.md §7.3: 500 warm-up, 3000 draws, one chain, full data
    /// ([`NutsSettings::numpyro`] with 3000 draws).
    pub fn uci() -> Self {
        NutsSettings {
            num_draws: 3000,
            ..NutsSettings::numpyro()
        }
    }

    /// Checks every field's range.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] naming the first field out of range: `num_draws` or
    /// `num_chains` zero, `target_accept` outside (0, 1), `max_depth` outside 1..=30,
    /// `init_radius` negative or not finite, `mass_matrix` with a low-rank `eigval_cutoff`
    /// below 1 or a `gamma` not positive (either not finite).
    pub fn validate(&self) -> Result<()> {
        if self.num_draws == 0 {
            return Err(Error::invalid("num_draws", "must be at least 1"));
        }
        if self.num_chains == 0 {
            return Err(Error::invalid("num_chains", "must be at least 1"));
        }
        if !(self.target_accept > 0.0 && self.target_accept < 1.0) {
            return Err(Error::invalid(
                "target_accept",
                format!("must lie in (0, 1), got {}", self.target_accept),
            ));
        }
        if !(1..=30).contains(&self.max_depth) {
            return Err(Error::invalid(
                "max_depth",
                format!("must lie in 1..=30, got {}", self.max_depth),
            ));
        }
        if !(self.init_radius.is_finite() && self.init_radius >= 0.0) {
            return Err(Error::invalid(
                "init_radius",
                format!("must be finite and ≥ 0, got {}", self.init_radius),
            ));
        }
        if let MassMatrix::LowRank {
            eigval_cutoff,
            gamma,
        } = self.mass_matrix
        {
            if !(eigval_cutoff.is_finite() && eigval_cutoff >= 1.0) {
                return Err(Error::invalid(
                    "mass_matrix",
                    format!(
                        "the low-rank eigval_cutoff must be finite and ≥ 1, got {eigval_cutoff}"
                    ),
                ));
            }
            if !(gamma.is_finite() && gamma > 0.0) {
                return Err(Error::invalid(
                    "mass_matrix",
                    format!("the low-rank gamma must be finite and > 0, got {gamma}"),
                ));
            }
        }
        Ok(())
    }

    /// `defaults` (nuts-rs's for one adaptation) with these draws, depth, chains, seed, target
    /// acceptance and mass-matrix options.
    fn apply<A: std::fmt::Debug + Default + Copy + Serialize>(
        &self,
        defaults: nuts_rs::NutsSettings<EuclideanAdaptOptions<A>>,
        mass_matrix_options: A,
    ) -> nuts_rs::NutsSettings<EuclideanAdaptOptions<A>> {
        nuts_rs::NutsSettings {
            num_tune: self.num_warmup as u64,
            num_draws: self.num_draws as u64,
            maxdepth: self.max_depth,
            num_chains: self.num_chains,
            seed: self.seed,
            adapt_options: EuclideanAdaptOptions {
                step_size_settings: StepSizeSettings {
                    target_accept: self.target_accept,
                    ..defaults.adapt_options.step_size_settings
                },
                mass_matrix_options,
                ..defaults.adapt_options
            },
            ..defaults
        }
    }

    /// The nuts-rs settings for a diagonal mass matrix (whatever `mass_matrix` says).
    pub(super) fn to_diag(&self) -> DiagNutsSettings {
        let defaults = DiagNutsSettings::default();
        let options = defaults.adapt_options.mass_matrix_options;
        self.apply(defaults, options)
    }

    /// The nuts-rs settings for a low-rank mass matrix; `None` for [`MassMatrix::Diagonal`].
    pub(super) fn to_low_rank(&self) -> Option<LowRankNutsSettings> {
        let options = self.mass_matrix.low_rank_settings()?;
        Some(self.apply(LowRankNutsSettings::default(), options))
    }
}
