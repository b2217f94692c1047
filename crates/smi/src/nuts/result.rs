//! What a NUTS run returns: the draws of every chain, per-chain diagnostics and per-draw
//! statistics, R̂ and bulk ESS.

use serde::{Deserialize, Serialize};

use super::stats::DrawStats;
use crate::error::{Error, Result};
use crate::matrix::Matrix;

/// Per-chain diagnostics of a NUTS run (sampling phase unless said otherwise).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChainDiagnostics {
    /// Divergent transitions among the kept draws (non-finite log densities count).
    pub divergences: usize,
    /// Divergent transitions during warm-up.
    pub warmup_divergences: usize,
    /// Mean tree depth of the kept draws.
    pub mean_tree_depth: f64,
    /// Kept draws whose tree reached `max_depth`.
    pub max_depth_hits: usize,
    /// The adapted step size at the end of the run.
    pub step_size: f64,
    /// The initial position (length d, unconstrained).
    pub init: Vec<f64>,
    /// The statistics of every kept draw, in order (length num_draws; row
    /// `chain_range(c).start + i` of `draws` has `draw_stats[i]`).
    #[serde(default)]
    pub draw_stats: Vec<DrawStats>,
    /// The statistics of every warm-up iteration (length num_warmup) when the settings ask
    /// for `keep_warmup`, else empty.
    #[serde(default)]
    pub warmup_stats: Vec<DrawStats>,
    /// E-BFMI of the kept draws ([`crate::e_bfmi`]); `None` when undefined (fewer than 2
    /// draws, or constant energy).
    #[serde(default)]
    pub e_bfmi: Option<f64>,
    /// Whether `e_bfmi` is below [`crate::E_BFMI_THRESHOLD`] (0.3).
    #[serde(default)]
    pub e_bfmi_warning: bool,
}

impl ChainDiagnostics {
    /// Mean leapfrog steps (gradient evaluations) per kept draw; NaN without draw statistics.
    pub fn mean_leapfrog_steps(&self) -> f64 {
        let total: u64 = self.draw_stats.iter().map(|s| s.n_leapfrog).sum();
        total as f64 / self.draw_stats.len() as f64
    }
}

/// The draws and diagnostics of [`crate::Nuts::sample`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NutsResult {
    /// (num_chains·num_draws) × d draws in unconstrained space; chain c occupies rows
    /// `c·num_draws .. (c+1)·num_draws` (see [`NutsResult::chain_range`]).
    pub draws: Matrix,
    /// log p of every draw (length num_chains·num_draws, same order as `draws`).
    pub log_density: Vec<f64>,
    /// Number of chains.
    pub num_chains: usize,
    /// Draws per chain.
    pub num_draws: usize,
    /// Diagnostics of each chain (length num_chains).
    pub chains: Vec<ChainDiagnostics>,
    /// Divergent transitions among the kept draws of all chains.
    pub divergences: usize,
    /// Mean tree depth over the kept draws of all chains.
    pub mean_tree_depth: f64,
    /// Rank-normalised split-R̂ per coordinate (length d, [`crate::split_rhat`]); `Some`
    /// when num_chains > 1 and num_draws ≥ 4.
    pub rhat: Option<Vec<f64>>,
    /// Bulk ESS per coordinate (length d, [`crate::ess_bulk`]); `Some` when
    /// num_chains > 1 and num_draws ≥ 4.
    pub ess_bulk: Option<Vec<f64>>,
    /// Warm-up iterations per chain.
    #[serde(default)]
    pub num_warmup: usize,
    /// The warm-up draws, (num_chains·num_warmup) × d, chain c in rows
    /// `c·num_warmup .. (c+1)·num_warmup` ([`NutsResult::warmup_range`]); `Some` only when the
    /// settings ask for `keep_warmup`. Not part of `draws`, R̂ or ESS.
    #[serde(default)]
    pub warmup_draws: Option<Matrix>,
}

impl NutsResult {
    /// The rows of `draws` holding chain `c`.
    pub fn chain_range(&self, c: usize) -> std::ops::Range<usize> {
        c * self.num_draws..(c + 1) * self.num_draws
    }

    /// The rows of `warmup_draws` holding chain `c`'s warm-up.
    pub fn warmup_range(&self, c: usize) -> std::ops::Range<usize> {
        c * self.num_warmup..(c + 1) * self.num_warmup
    }

    /// E-BFMI of each chain's kept draws (see [`ChainDiagnostics::e_bfmi`]).
    pub fn e_bfmi(&self) -> Vec<Option<f64>> {
        self.chains.iter().map(|c| c.e_bfmi).collect()
    }

    /// Whether any chain's E-BFMI is below [`crate::E_BFMI_THRESHOLD`].
    pub fn e_bfmi_warning(&self) -> bool {
        self.chains.iter().any(|c| c.e_bfmi_warning)
    }

    /// Mean leapfrog steps (gradient evaluations) per kept draw over all chains.
    pub fn mean_leapfrog_steps(&self) -> f64 {
        let (steps, draws) = self.chains.iter().fold((0u64, 0usize), |(s, n), c| {
            let chain: u64 = c.draw_stats.iter().map(|d| d.n_leapfrog).sum();
            (s + chain, n + c.draw_stats.len())
        });
        steps as f64 / draws as f64
    }

    /// The chain that produced row `row` of `draws`.
    pub fn chain_of_draw(&self, row: usize) -> usize {
        row / self.num_draws.max(1)
    }

    /// The draws of chain `c` as one row-major num_draws × d slice.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] (`chain`) when `c >= num_chains`.
    pub fn chain_draws(&self, c: usize) -> Result<&[f64]> {
        if c >= self.num_chains {
            return Err(Error::invalid(
                "chain",
                format!(
                    "{c} is out of range: the run has {} chains",
                    self.num_chains
                ),
            ));
        }
        let d = self.draws.cols();
        let r = self.chain_range(c);
        Ok(&self.draws.as_slice()[r.start * d..r.end * d])
    }

    /// Coordinate `j` of every draw, one vector per chain: the input of [`crate::split_rhat`] and [`crate::ess_bulk`].
    pub fn coordinate_chains(&self, j: usize) -> Vec<Vec<f64>> {
        (0..self.num_chains)
            .map(|c| self.chain_range(c).map(|i| self.draws.get(i, j)).collect())
            .collect()
    }
}
