//! The settings of a NUTS run.

use nuts_rs::{DiagNutsSettings, EuclideanAdaptOptions, StepSizeSettings};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Settings of a NUTS run (docs/algorithms.md §5: NumPyro's defaults; §7.3 for the UCI preset).
///
/// Mass matrix: diagonal, adapted during warm-up by nuts-rs's default schedule; step size: dual
/// averaging to `target_accept`. Construct with struct update syntax:
/// `NutsSettings { num_draws: 3000, ..NutsSettings::default() }`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NutsSettings {
    /// Warm-up (tuning) iterations per chain, discarded (default 500).
    pub num_warmup: usize,
    /// Kept draws per chain (default 1000; 3000 in the UCI preset [`NutsSettings::uci`]).
    pub num_draws: usize,
    /// Number of chains, run in parallel with rayon (default 1).
    pub num_chains: usize,
    /// Target mean acceptance probability of the step-size adaptation, in (0, 1) (default 0.8).
    pub target_accept: f64,
    /// Maximum tree depth: at most 2^max_depth − 1 leapfrog steps per draw, 1..=30 (default 10).
    pub max_depth: u64,
    /// Seed; chain c uses stream c of a ChaCha8 generator seeded with it (default 0).
    pub seed: u64,
    /// Initial points are uniform(−r, r) in every unconstrained coordinate, r ≥ 0 (default 2,
    /// NumPyro's `init_to_uniform(radius=2)`); 0 starts at the origin.
    pub init_radius: f64,
}

impl Default for NutsSettings {
    /// 500 warm-up, 1000 draws, 1 chain, target accept 0.8, max depth 10, seed 0, init radius 2.
    fn default() -> Self {
        NutsSettings {
            num_warmup: 500,
            num_draws: 1000,
            num_chains: 1,
            target_accept: 0.8,
            max_depth: 10,
            seed: 0,
            init_radius: 2.0,
        }
    }
}

impl NutsSettings {
    /// The UCI preset of docs/algorithms.md §7.3: 500 warm-up, 3000 draws, one chain, full data.
    pub fn uci() -> Self {
        NutsSettings {
            num_draws: 3000,
            ..NutsSettings::default()
        }
    }

    /// Checks every field's range.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] naming the first field out of range: `num_draws` or
    /// `num_chains` zero, `target_accept` outside (0, 1), `max_depth` outside 1..=30,
    /// `init_radius` negative or not finite.
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
        Ok(())
    }

    /// The nuts-rs settings these map to.
    pub(super) fn to_nuts_rs(&self) -> DiagNutsSettings {
        let defaults = DiagNutsSettings::default();
        DiagNutsSettings {
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
                ..defaults.adapt_options
            },
            ..defaults
        }
    }
}
