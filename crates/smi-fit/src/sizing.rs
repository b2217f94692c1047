//! The default step budget of `smi fit`, sized to the data so that a default fit ends in about
//! a minute on two cores.
//!
//! A step evaluates the network on `b` rows (the mini-batch, or every row of a smaller
//! training set) for each of its θ draws: m·S for SMI (m particles, S ELBO draws each), m for
//! SVGD and ASVGD, 1 for MAP and OVI. Its time is close to
//!
//! t_step ≈ draws · b · (c₁ · d + c₀)
//!
//! with d the network's parameters; c₁ (forward and backward multiply-adds, per parameter and
//! row) and c₀ (per row: the likelihood, activations, bookkeeping) were measured on the
//! development machine (2 cores, AMD EPYC) with m = 5, S = 10, b = 100: 5 ms a step for
//! 50–50 hidden units (d ≈ 3000), 0.8 ms for 20 (d ≈ 160). The default budget is
//! [`TARGET_SECONDS`] / t_step steps, in hundreds, between [`MIN_STEPS`] and [`MAX_STEPS`];
//! early stopping may end the fit sooner. `--max-steps` overrides it.

use smi::Method;

/// Seconds a default fit aims at.
pub const TARGET_SECONDS: f64 = 60.0;
/// c₁: seconds per multiply-add of a step, per draw, row and network parameter.
pub const SECONDS_PER_PARAMETER: f64 = 3e-10;
/// c₀: seconds per draw and row of a step besides the network's products.
pub const SECONDS_PER_ROW: f64 = 1e-7;
/// The smallest default budget (below it the fit would not converge).
pub const MIN_STEPS: u64 = 1000;
/// The largest default budget (the UCI protocol's, docs/algorithms.md §7.3).
pub const MAX_STEPS: u64 = 20_000;

/// Training rows from which the default network has two hidden layers of [`MAX_WIDTH`].
pub const TWO_LAYERS_FROM: usize = 500;
/// Training rows per hidden unit of the default one-layer network (below [`TWO_LAYERS_FROM`]).
pub const ROWS_PER_UNIT: usize = 10;
/// The narrowest default hidden layer.
pub const MIN_WIDTH: usize = 10;
/// The widest default hidden layer.
pub const MAX_WIDTH: usize = 50;

/// The hidden widths of `--hidden auto` for `rows` training rows: two layers of
/// [`MAX_WIDTH`] from [`TWO_LAYERS_FROM`] rows, below that one layer of rows /
/// [`ROWS_PER_UNIT`] units within [`MIN_WIDTH`]..=[`MAX_WIDTH`] (docs/calibration.md: on small
/// sets the larger network fits no better, is worse calibrated and takes far longer).
pub fn default_hidden(rows: usize) -> Vec<usize> {
    if rows >= TWO_LAYERS_FROM {
        vec![MAX_WIDTH, MAX_WIDTH]
    } else {
        vec![(rows / ROWS_PER_UNIT).clamp(MIN_WIDTH, MAX_WIDTH)]
    }
}

/// θ draws of one step of `method` with `particles` particles and `elbo_draws` ELBO draws.
pub fn draws_per_step(method: Method, particles: usize, elbo_draws: usize) -> usize {
    match method {
        Method::Smi => particles.saturating_mul(elbo_draws),
        Method::Svgd | Method::Asvgd => particles,
        Method::Ovi | Method::Map | Method::Nuts => 1,
    }
}

/// The estimated seconds of one step (see the module docs).
pub fn step_seconds(draws: usize, batch_rows: usize, dim: usize) -> f64 {
    draws as f64 * batch_rows as f64 * (SECONDS_PER_PARAMETER * dim as f64 + SECONDS_PER_ROW)
}

/// The default step budget: [`TARGET_SECONDS`] of steps of `draws` draws on `batch_rows` rows
/// of a network of `dim` parameters, in hundreds, within [`MIN_STEPS`]..=[`MAX_STEPS`].
pub fn default_max_steps(draws: usize, batch_rows: usize, dim: usize) -> u64 {
    let steps = TARGET_SECONDS / step_seconds(draws, batch_rows, dim).max(1e-12);
    let hundreds = (steps / 100.0).floor().clamp(0.0, 1e9) as u64 * 100;
    hundreds.clamp(MIN_STEPS, MAX_STEPS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_network_grows_with_the_rows() {
        assert_eq!(default_hidden(30), [MIN_WIDTH]);
        assert_eq!(default_hidden(142), [14]);
        assert_eq!(default_hidden(499), [49]);
        assert_eq!(default_hidden(500), [50, 50]);
        assert_eq!(default_hidden(100_000), [50, 50]);
    }

    #[test]
    fn the_budget_shrinks_with_the_work_of_a_step() {
        // The measured configurations: m = 5, S = 10, b = 100.
        let draws = draws_per_step(Method::Smi, 5, 10);
        assert_eq!(draws, 50);
        // 50–50 hidden units on 8 inputs: d = 8·50 + 50 + 50·50 + 50 + 50 + 1 = 3051.
        let t = step_seconds(draws, 100, 3051);
        assert!((t - 5.1e-3).abs() < 1e-4, "{t}");
        assert_eq!(default_max_steps(draws, 100, 3051), 11_800);
        // A small network or data set: the cap; a huge one: the floor.
        assert_eq!(default_max_steps(draws, 100, 160), MAX_STEPS);
        assert_eq!(default_max_steps(draws, 30, 3051), MAX_STEPS);
        assert_eq!(default_max_steps(draws, 100, 80_000), MIN_STEPS);
        // SVGD takes one draw per particle, so more steps.
        let svgd = draws_per_step(Method::Svgd, 5, 10);
        assert_eq!(default_max_steps(svgd, 100, 3051), MAX_STEPS);
    }
}
