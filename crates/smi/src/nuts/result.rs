//! What a NUTS run returns: the draws of every chain, per-chain diagnostics, R̂ and bulk ESS.

use serde::{Deserialize, Serialize};

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
}

impl NutsResult {
    /// The rows of `draws` holding chain `c`.
    pub fn chain_range(&self, c: usize) -> std::ops::Range<usize> {
        c * self.num_draws..(c + 1) * self.num_draws
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
