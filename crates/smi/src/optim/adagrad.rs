//! NumPyro's Adagrad with momentum (`jax.example_libraries.optimizers.adagrad`), docs/algorithms.md §2.4.

use serde::{Deserialize, Serialize};

use super::{for_each_block, Block};

use crate::error::Result;

/// Adagrad's accumulated squared gradients G and its momentum n.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdagradState {
    /// Σ g² so far.
    pub g_sq: Vec<f64>,
    /// Momentum of the normalised gradient.
    pub n: Vec<f64>,
}

impl AdagradState {
    /// Zero accumulators for `n` parameters.
    pub fn new(n: usize) -> Self {
        AdagradState {
            g_sq: vec![0.0; n],
            n: vec![0.0; n],
        }
    }

    pub(crate) fn step(&mut self, lr: f64, momentum: f64, x: &mut [f64], g: &[f64]) -> Result<()> {
        // The caller, `OptimizerState::step`, has checked every buffer's length against `x`: the
        // update zips them, so a short one would leave parameters unmoved.
        let update = |blk: Block<'_>| update(lr, momentum, blk);
        for_each_block(x, g, &mut self.g_sq, &mut self.n, update);
        Ok(())
    }
}

smi_simd::multiversion! {
    /// One block of the update, in the CPU's widest vector build (the same IEEE operations per
    /// coordinate in each).
    fn update(lr: f64, momentum: f64, blk: Block<'_>) {
        let (((x, g), gs), n) = blk;
        for (((x, g), gs), n) in x.iter_mut().zip(g).zip(gs).zip(n) {
            *gs += g * g;
            // JAX: where(G > 0, g / sqrt(G), 0)
            let scaled = if *gs > 0.0 { g / gs.sqrt() } else { 0.0 };
            *n = (1.0 - momentum) * scaled + momentum * *n;
            *x -= lr * *n;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::optim::{after_steps, OptimizerSettings};

    #[test]
    fn hand_computed_two_steps() {
        // step 1: G = 4, g/√G = 1, n = 0.1, x = 1 − 0.5·0.1 = 0.95
        // step 2: g = 1, G = 5, g/√G = 0.4472136, n = 0.1·0.4472136 + 0.9·0.1 = 0.13472136
        //         x = 0.95 − 0.5·0.13472136 = 0.88263932
        let s = OptimizerSettings::adagrad(0.5);
        let x = after_steps(&s, &[1.0], &[&[2.0]]);
        assert!((x[0] - 0.95).abs() < 1e-12);
        let x = after_steps(&s, &[1.0], &[&[2.0], &[1.0]]);
        assert!((x[0] - 0.882_639_320_225).abs() < 1e-10);
    }

    #[test]
    fn zero_gradient_is_a_zero_step() {
        let x = after_steps(&OptimizerSettings::adagrad(0.5), &[1.0], &[&[0.0]]);
        assert_eq!(x[0], 1.0);
    }

    #[test]
    fn rejects_bad_settings() {
        assert!(OptimizerSettings::adagrad(-1.0).validate().is_err());
        assert!(OptimizerSettings::adam(f64::NAN).validate().is_err());
        assert!(OptimizerSettings::Adagrad {
            lr: 0.1,
            momentum: 1.5,
            schedule: Default::default(),
        }
        .validate()
        .is_err());
    }
}
