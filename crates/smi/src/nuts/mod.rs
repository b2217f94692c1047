//! NUTS, the reference sampler: nuts-rs's No-U-Turn sampler on a [`LogDensity`] (docs/algorithms.md §5).
//!
//! Stan's defaults ([`NutsSettings::default`]: 4 chains, 1000 warm-up + 1000 draws, target
//! acceptance 0.8, depth 10); a diagonal, low-rank or dense mass matrix ([`MassMatrix`]); per
//! draw the statistics Stan reports ([`DrawStats`]: divergent, energy, tree depth, step size,
//! leapfrog steps), per chain the E-BFMI ([`e_bfmi`]), and the warm-up draws on request
//! ([`NutsSettings::keep_warmup`]).
//!
//! ```
//! use smi::{FnDensity, NoObserver, Nuts, NutsSettings};
//! // A 2-d standard normal.
//! let model = FnDensity::new(2, |x: &[f64], g: &mut [f64]| {
//!     g.iter_mut().zip(x).for_each(|(g, x)| *g = -x);
//!     -0.5 * x.iter().map(|v| v * v).sum::<f64>()
//! });
//! let settings = NutsSettings { num_warmup: 200, num_draws: 300, num_chains: 2, ..NutsSettings::default() };
//! let result = Nuts::new(settings).sample(&model, &mut NoObserver).unwrap();
//! assert_eq!((result.draws.rows(), result.draws.cols()), (600, 2));
//! assert!(result.rhat.unwrap().iter().all(|r| *r < 1.1));
//! ```

mod adapter;
mod chain;
mod diagnostics;
mod gather;
mod result;
mod settings;
mod stats;
#[cfg(test)]
mod tests;

pub use result::{ChainDiagnostics, NutsResult};
pub use settings::{MassMatrix, NutsSettings};
pub use stats::{e_bfmi, DrawStats, E_BFMI_THRESHOLD};

use std::sync::atomic::AtomicBool;

use rayon::prelude::*;

use crate::engine::Observer;
use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::model::LogDensity;

use chain::{run_chain, ChainOutput};
pub(crate) use diagnostics::quantile_sorted;
pub use diagnostics::{ess_bulk, ess_mean, ess_tail, split_rhat};

/// The NUTS engine: immutable settings; [`Nuts::sample`] does the run.
#[derive(Clone, Debug)]
pub struct Nuts {
    settings: NutsSettings,
}

impl Nuts {
    /// A sampler with these settings; they are validated by [`Nuts::sample`].
    pub fn new(settings: NutsSettings) -> Self {
        Nuts { settings }
    }

    /// The settings.
    pub fn settings(&self) -> &NutsSettings {
        &self.settings
    }

    /// Runs `num_chains` chains of `num_warmup + num_draws` iterations on `model` (called with
    /// K = 1 and [`crate::Batch::full`]), in parallel with rayon; the result depends only on the
    /// seed. For a model with a large fixed cost per call
    /// ([`LogDensity::one_call_per_step`]) each chain has its own thread and the chains'
    /// positions are evaluated together, one call of K = `num_chains` rows per round of
    /// leapfrog steps (rows of chains that finished are padded with a copy of the first).
    ///
    /// The observer gets `on_start(num_warmup + num_draws)`, then after every iteration of chain
    /// 0 (on the calling thread) `on_step(Progress { step, total, loss: −log p, phase })` with
    /// phase `"warmup"` or `"sampling"`, then `on_finish`.
    ///
    /// Non-finite log densities or gradients (and other recoverable errors,
    /// [`Error::is_recoverable`]) end the trajectory as a divergence.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] from [`NutsSettings::validate`] or for a model with d = 0;
    /// the model's first unrecoverable error (which stops all chains); [`Error::NonFinite`] when
    /// no finite initial point is found in 100 uniform draws; [`Error::Model`] for a nuts-rs
    /// failure.
    pub fn sample(
        &self,
        model: &dyn LogDensity,
        observer: &mut dyn Observer,
    ) -> Result<NutsResult> {
        let s = &self.settings;
        s.validate()?;
        let dim = model.dim();
        if dim == 0 {
            return Err(Error::invalid("dim", "the model has no parameters"));
        }
        let total = (s.num_warmup + s.num_draws) as u64;
        observer.on_start(total);
        let abort = AtomicBool::new(false);
        let mut slots: Vec<Option<Result<Option<ChainOutput>>>> =
            (0..s.num_chains).map(|_| None).collect();
        if model.one_call_per_step() && s.num_chains > 1 {
            // One call per round for all chains, on this thread (gather.rs); each chain needs
            // a thread of its own, since a round waits for every running chain.
            let gather = gather::Gather::new(model, s.num_chains);
            std::thread::scope(|scope| {
                for (i, slot) in slots.iter_mut().enumerate() {
                    let (abort, gather) = (&abort, &gather);
                    scope.spawn(move || {
                        let seat = gather.seat(i);
                        let mut relay = gather.relay();
                        let observer = (i == 0).then_some(&mut relay as &mut dyn Observer);
                        *slot = Some(run_chain(&seat, s, i, abort, observer));
                    });
                }
                gather.serve(&mut *observer);
            });
        } else {
            rayon::in_place_scope(|scope| {
                let Some((first, rest)) = slots.split_first_mut() else {
                    return;
                };
                for (i, slot) in rest.iter_mut().enumerate() {
                    let abort = &abort;
                    scope.spawn(move |_| {
                        *slot = Some(run_chain(model, s, i + 1, abort, None));
                    });
                }
                *first = Some(run_chain(model, s, 0, &abort, Some(&mut *observer)));
            });
        }
        observer.on_finish();

        let mut outputs = Vec::with_capacity(s.num_chains);
        for slot in slots {
            match slot {
                Some(Ok(Some(out))) => outputs.push(out),
                Some(Err(e)) => return Err(e),
                _ => {}
            }
        }
        if outputs.len() != s.num_chains {
            return Err(Error::Model(
                "a NUTS chain stopped without a result".to_string().into(),
            ));
        }
        Ok(assemble(s, dim, outputs))
    }
}

/// Joins the chains' outputs and computes the cross-chain diagnostics.
fn assemble(s: &NutsSettings, dim: usize, outputs: Vec<ChainOutput>) -> NutsResult {
    let n = s.num_draws;
    let mut data = Vec::with_capacity(s.num_chains * n * dim);
    let mut warmup = Vec::new();
    let mut log_density = Vec::with_capacity(s.num_chains * n);
    let mut chains = Vec::with_capacity(s.num_chains);
    for out in outputs {
        data.extend_from_slice(&out.draws);
        warmup.extend_from_slice(&out.warmup_draws);
        log_density.extend_from_slice(&out.log_density);
        chains.push(out.diagnostics);
    }
    let draws = Matrix::from_fn(s.num_chains * n, dim, |i, j| data[i * dim + j]);
    let warmup_draws = s
        .keep_warmup
        .then(|| Matrix::from_fn(s.num_chains * s.num_warmup, dim, |i, j| warmup[i * dim + j]));
    let divergences = chains.iter().map(|c| c.divergences).sum();
    let mean_tree_depth =
        chains.iter().map(|c| c.mean_tree_depth).sum::<f64>() / chains.len().max(1) as f64;
    let mut result = NutsResult {
        draws,
        log_density,
        num_chains: s.num_chains,
        num_draws: n,
        chains,
        divergences,
        mean_tree_depth,
        rhat: None,
        ess_bulk: None,
        num_warmup: s.num_warmup,
        warmup_draws,
    };
    if s.num_chains > 1 && n >= 4 {
        let per_coord: Vec<(f64, f64)> = (0..dim)
            .into_par_iter()
            .map(|j| {
                let c = result.coordinate_chains(j);
                let refs: Vec<&[f64]> = c.iter().map(Vec::as_slice).collect();
                (diagnostics::split_rhat(&refs), diagnostics::ess_bulk(&refs))
            })
            .collect();
        result.rhat = Some(per_coord.iter().map(|p| p.0).collect());
        result.ess_bulk = Some(per_coord.iter().map(|p| p.1).collect());
    }
    result
}
