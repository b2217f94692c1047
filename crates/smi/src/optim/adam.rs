//! Adam (Kingma & Ba), as in `jax.example_libraries.optimizers.adam`.

use serde::{Deserialize, Serialize};

use super::{for_each_block, Block};

use crate::error::Result;

/// Adam's first and second moments and its step counter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdamState {
    /// First moment m.
    pub m: Vec<f64>,
    /// Second moment v.
    pub v: Vec<f64>,
    /// Steps taken (i in the bias corrections).
    pub t: u64,
}

impl AdamState {
    /// Zero moments for `n` parameters.
    pub fn new(n: usize) -> Self {
        AdamState {
            m: vec![0.0; n],
            v: vec![0.0; n],
            t: 0,
        }
    }

    pub(crate) fn step(
        &mut self,
        lr: f64,
        b1: f64,
        b2: f64,
        eps: f64,
        x: &mut [f64],
        g: &[f64],
    ) -> Result<()> {
        // The caller, `OptimizerState::step`, has checked every buffer's length against `x`: the
        // update zips them, so a short one would leave parameters unmoved.
        let (step, inv_sqrt_c2) = self.advance(lr, b1, b2);
        let c = Coefs {
            b1,
            b2,
            step,
            inv_sqrt_c2,
            eps,
        };
        let update = |blk: Block<'_>| update(c, blk);
        for_each_block(x, g, &mut self.m, &mut self.v, update);
        Ok(())
    }

    /// [`AdamState::step`] with the spike guard c: from the second step each coordinate's
    /// gradient is clipped to ±c·√v̂, v̂ = v/(1 − b2^(t−1)) its running mean square before
    /// this step, before the moments take it ([`crate::OptimizerSettings::with_spike_guard`]).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn step_guarded(
        &mut self,
        lr: f64,
        b1: f64,
        b2: f64,
        eps: f64,
        c: f64,
        x: &mut [f64],
        g: &[f64],
    ) -> Result<()> {
        // 1/(1 − b2^(t−1)) for the moments as they stand (t − 1 steps taken); none at t = 1.
        let taken = self.t as f64;
        let bound_scale = (self.t > 0).then(|| c / (1.0 - b2.powf(taken)).sqrt());
        let (step, inv_sqrt_c2) = self.advance(lr, b1, b2);
        for (((x, &g), m), v) in x.iter_mut().zip(g).zip(&mut self.m).zip(&mut self.v) {
            let g = match bound_scale {
                Some(scale) => {
                    let bound = scale * v.sqrt();
                    if bound > 0.0 {
                        g.clamp(-bound, bound)
                    } else {
                        g
                    }
                }
                None => g,
            };
            *m = (1.0 - b1) * g + b1 * *m;
            *v = (1.0 - b2) * g * g + b2 * *v;
            *x -= step * *m / (v.sqrt() * inv_sqrt_c2 + eps);
        }
        Ok(())
    }

    /// Counts a step and gives its two scalars: lr/c1 and 1/√c2 with the bias corrections
    /// c1 = 1 − b1^t, c2 = 1 − b2^t of step t (from 1). The update of a coordinate is then
    /// m = (1 − b1)g + b1·m, v = (1 − b2)g² + b2·v, x −= (lr/c1)·m/(√v·(1/√c2) + eps): lr·m̂/(√v̂ + eps)
    /// with the corrections folded into two scalars, so each coordinate costs one square root
    /// and one division. Public for an engine that runs the update elsewhere (the CUDA engine
    /// of `smi-models`).
    pub fn advance(&mut self, lr: f64, b1: f64, b2: f64) -> (f64, f64) {
        let i = self.t as f64 + 1.0;
        let c1 = 1.0 - b1.powf(i);
        let c2 = 1.0 - b2.powf(i);
        self.t = self.t.saturating_add(1);
        (lr / c1, 1.0 / c2.sqrt())
    }
}

/// The per-step scalars of Adam's coordinate update.
#[derive(Clone, Copy)]
struct Coefs {
    b1: f64,
    b2: f64,
    step: f64,
    inv_sqrt_c2: f64,
    eps: f64,
}

smi_simd::multiversion! {
    /// One block of the update, in the CPU's widest vector build (AVX-512: 8 lanes of f64,
    /// AVX2: 4, SSE2: 2; the same IEEE operations per coordinate, so the same results).
    fn update(c: Coefs, blk: Block<'_>) {
        let (((x, g), m), v) = blk;
        for (((x, g), m), v) in x.iter_mut().zip(g).zip(m).zip(v) {
            *m = (1.0 - c.b1) * g + c.b1 * *m;
            *v = (1.0 - c.b2) * g * g + c.b2 * *v;
            *x -= c.step * *m / (v.sqrt() * c.inv_sqrt_c2 + c.eps);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::optim::{after_steps, OptimizerSettings};

    #[test]
    fn first_step_moves_by_lr_times_sign() {
        // With bias correction, the first Adam step is lr·g/(|g| + eps) ≈ lr·sign(g).
        let x = after_steps(&OptimizerSettings::adam(0.1), &[1.0, 1.0], &[&[3.0, -0.5]]);
        assert!((x[0] - 0.9).abs() < 1e-7 && (x[1] - 1.1).abs() < 1e-7);
    }

    #[test]
    fn the_spike_guard_clips_a_spike_and_leaves_ordinary_steps_alone() {
        let plain = OptimizerSettings::adam(0.1);
        let guarded = plain.with_spike_guard(10.0);
        // Ordinary gradients (within 10 RMS of each other): the same steps, bit for bit.
        let calm: Vec<[f64; 2]> = (0..3000)
            .map(|i| [1.0 + 0.1 * (i % 3) as f64, -0.5])
            .collect();
        let calm_refs: Vec<&[f64]> = calm.iter().map(|g| &g[..]).collect();
        assert_eq!(
            after_steps(&plain, &[0.0, 0.0], &calm_refs),
            after_steps(&guarded, &[0.0, 0.0], &calm_refs)
        );
        // A 10⁶ spike after them: plain Adam keeps moving for many steps; the guard bounds
        // the spike's push to a few ordinary steps' worth.
        let mut grads = calm_refs.clone();
        let spike = [1e6, -0.5];
        grads.push(&spike);
        let quiet = [0.0, 0.0];
        grads.extend(std::iter::repeat_n(&quiet[..], 100));
        let calm_end = after_steps(&plain, &[0.0, 0.0], &calm_refs)[0];
        let moved_plain = calm_end - after_steps(&plain, &[0.0, 0.0], &grads)[0];
        let moved_guarded = calm_end - after_steps(&guarded, &[0.0, 0.0], &grads)[0];
        assert!(moved_plain > 2.0, "plain Adam moved {moved_plain}");
        assert!(
            moved_guarded < 0.6 * moved_plain,
            "guarded Adam moved {moved_guarded}"
        );
        // Validation.
        assert!(plain.with_spike_guard(0.0).validate().is_err());
        assert!(plain.with_spike_guard(f64::NAN).validate().is_err());
        assert!(guarded.validate().is_ok());
        // Left out of the JSON when unset, so fingerprints of plain Adam are unchanged.
        assert!(!serde_json::to_string(&plain)
            .unwrap()
            .contains("spike_guard"));
    }

    #[test]
    fn minimises_a_quadratic() {
        let s = OptimizerSettings::adam(0.05);
        let mut st = s.init(1);
        let mut x = vec![3.0];
        for _ in 0..2000 {
            let g = vec![2.0 * (x[0] - 1.0)];
            st.step(&s, &mut x, &g).unwrap();
        }
        assert!((x[0] - 1.0).abs() < 1e-3);
    }
}
