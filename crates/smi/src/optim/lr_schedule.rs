//! Learning-rate schedules: an optional linear warm-up followed by a constant rate, exponential,
//! step or cosine decay, or reduce-on-plateau on the ELBO estimate (docs/convergence.md).
//!
//! A schedule is part of [`crate::OptimizerSettings`] (so of the engine's fingerprint: a
//! checkpoint resumes only under the same schedule); its mutable part ([`LrScheduleState`]: the
//! plateau's accumulators and cuts) lives in [`crate::State`] and is saved in checkpoints. Every
//! variational engine applies it in its step.
//!
//! With base rate lr, step t (from 0, counting skipped steps) and w warm-up steps, the rate is
//! lr·(t+1)/w for t < w, then, with τ = t − w:
//!
//! | decay | rate at τ |
//! |---|---|
//! | constant | lr |
//! | exponential | max(lr·rate^(τ/every), min_lr) |
//! | step | max(lr·factor^⌊τ/every⌋, min_lr) |
//! | cosine | min_lr + (lr − min_lr)·½(1 + cos(π·min(τ, steps)/steps)) |
//! | plateau | max(lr·factor^cuts, min_lr), cuts += 1 after `patience` windows without improvement |

use serde::{Deserialize, Serialize};

use crate::engine::window::{ImprovementRule, ObjectiveWindows};
use crate::error::{Error, Result};

/// A learning-rate schedule: `warmup_steps` of linear warm-up, then `decay`, floored at `min_lr`
/// (see the module docs for the formulas). The default is a constant rate.
///
/// ```
/// use smi::{LrSchedule, OptimizerSettings, PlateauSettings};
/// // Adam(0.05): 200 warm-up steps, then halve the rate after 3 windows of 100 steps without
/// // a significant ELBO gain, down to 1e-4.
/// let opt = OptimizerSettings::adam(0.05)
///     .with_schedule(LrSchedule::plateau(PlateauSettings::default(), 1e-4).with_warmup(200));
/// assert!(opt.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct LrSchedule {
    /// w, steps of linear warm-up from lr/w to lr (0: none; the default).
    pub warmup_steps: u64,
    /// What follows the warm-up (default: a constant rate).
    pub decay: LrDecay,
    /// The floor of every decay, and the end point of the cosine (default 0). Must lie below the
    /// base rate when the rate decays, and be positive for reduce-on-plateau (which would
    /// otherwise cut forever).
    pub min_lr: f64,
}

/// The decay after the warm-up (τ: steps since its end).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LrDecay {
    /// The base rate (the default).
    #[default]
    Constant,
    /// lr·rate^(τ/every), smooth (rate ∈ (0, 1], every ≥ 1).
    Exponential {
        /// The factor per `every` steps.
        rate: f64,
        /// Steps over which the rate is multiplied by `rate`.
        every: u64,
    },
    /// lr·factor^⌊τ/every⌋, a staircase (factor ∈ (0, 1), every ≥ 1).
    Step {
        /// The factor of each stair.
        factor: f64,
        /// Steps per stair.
        every: u64,
    },
    /// Half a cosine from lr down to `min_lr` over `steps` steps, then `min_lr`.
    Cosine {
        /// Steps of the descent (≥ 1).
        steps: u64,
    },
    /// Multiply the rate by `factor` when the ELBO estimate stops improving.
    Plateau(PlateauSettings),
}

/// Reduce-on-plateau: the ELBO estimates of the steps after the warm-up are cut into windows of
/// `window` finite values; a window improves when its mean exceeds the reference (the mean of the
/// last improving window) by more than max(abs_tol, rel_tol·|ref|, noise_multiplier·√2·se), se
/// being the window mean's standard error estimated from successive differences
/// (docs/convergence.md). After `patience` windows without improvement the rate is multiplied by
/// `factor` (not below the schedule's `min_lr`) and the count restarts.
///
/// Defaults: factor 0.5, patience 3, window 100, rel_tol 0, abs_tol 1e-3, noise_multiplier 2.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PlateauSettings {
    /// The factor of each cut, in (0, 1).
    pub factor: f64,
    /// Windows without improvement before a cut (≥ 1).
    pub patience: u64,
    /// W, finite ELBO estimates per window (≥ 2).
    pub window: u64,
    /// Threshold relative to |reference window mean|.
    pub rel_tol: f64,
    /// Absolute threshold, in nats.
    pub abs_tol: f64,
    /// z, the threshold in units of the noise of a difference of two window means.
    pub noise_multiplier: f64,
}

impl Default for PlateauSettings {
    fn default() -> Self {
        PlateauSettings {
            factor: 0.5,
            patience: 3,
            window: 100,
            rel_tol: 0.0,
            abs_tol: 1e-3,
            noise_multiplier: 2.0,
        }
    }
}

impl PlateauSettings {
    fn rule(&self) -> ImprovementRule {
        ImprovementRule {
            window: self.window,
            rel_tol: self.rel_tol,
            abs_tol: self.abs_tol,
            noise_multiplier: self.noise_multiplier,
            two_sided: false,
        }
    }
}

/// The mutable part of a schedule, kept in [`crate::State`]: the reduce-on-plateau cuts so far
/// and its window accumulators (unused by the other schedules).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct LrScheduleState {
    /// Cuts made by reduce-on-plateau so far.
    pub cuts: u32,
    /// The windowed ELBO estimates the plateau rule watches.
    pub plateau: ObjectiveWindows,
}

impl LrScheduleState {
    /// Checks that every number is finite.
    ///
    /// # Errors
    /// [`Error::NonFinite`] naming the value.
    pub fn validate(&self) -> Result<()> {
        self.plateau.check("learning-rate schedule plateau")
    }
}

impl LrSchedule {
    /// A constant rate (the default).
    pub fn constant() -> Self {
        LrSchedule::default()
    }

    /// lr·rate^(τ/every).
    pub fn exponential(rate: f64, every: u64) -> Self {
        LrSchedule::decay(LrDecay::Exponential { rate, every })
    }

    /// lr·factor^⌊τ/every⌋.
    pub fn step(factor: f64, every: u64) -> Self {
        LrSchedule::decay(LrDecay::Step { factor, every })
    }

    /// Half a cosine from lr to `min_lr` over `steps` steps.
    pub fn cosine(steps: u64, min_lr: f64) -> Self {
        LrSchedule::decay(LrDecay::Cosine { steps }).with_min_lr(min_lr)
    }

    /// Reduce-on-plateau with `settings` (e.g. [`PlateauSettings::default`]) down to the floor
    /// `min_lr` (> 0).
    pub fn plateau(settings: PlateauSettings, min_lr: f64) -> Self {
        LrSchedule::decay(LrDecay::Plateau(settings)).with_min_lr(min_lr)
    }

    /// `decay` without warm-up, floor 0.
    pub fn decay(decay: LrDecay) -> Self {
        LrSchedule {
            decay,
            ..LrSchedule::default()
        }
    }

    /// The same schedule after `steps` of linear warm-up.
    pub fn with_warmup(mut self, steps: u64) -> Self {
        self.warmup_steps = steps;
        self
    }

    /// The same schedule with the floor `min_lr`.
    pub fn with_min_lr(mut self, min_lr: f64) -> Self {
        self.min_lr = min_lr;
        self
    }

    /// Whether the rate is the base rate at every step (no warm-up, no decay).
    pub fn is_constant(&self) -> bool {
        self.warmup_steps == 0 && self.decay == LrDecay::Constant
    }

    /// Checks the schedule against the base rate `lr`.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] naming the field: a negative or non-finite `min_lr`, or one
    /// not below `lr` when the rate decays, or zero under reduce-on-plateau; a factor or rate
    /// outside its range; zero steps.
    pub fn validate(&self, lr: f64) -> Result<()> {
        let m = self.min_lr;
        if !(m.is_finite() && m >= 0.0) {
            return Err(Error::invalid(
                "min_lr",
                format!("must be a finite number ≥ 0, got {m}"),
            ));
        }
        if self.decay != LrDecay::Constant && m >= lr {
            return Err(Error::invalid(
                "min_lr",
                format!("a decaying rate needs min_lr below the learning rate {lr}, got {m}"),
            ));
        }
        let positive = |field: &'static str, n: u64| {
            if n == 0 {
                Err(Error::invalid(field, "must be at least 1"))
            } else {
                Ok(())
            }
        };
        let factor = |field: &'static str, f: f64, one_ok: bool| {
            if f > 0.0 && (f < 1.0 || (one_ok && f == 1.0)) {
                Ok(())
            } else {
                let range = if one_ok { "(0, 1]" } else { "(0, 1)" };
                Err(Error::invalid(
                    field,
                    format!("must lie in {range}, got {f}"),
                ))
            }
        };
        match self.decay {
            LrDecay::Constant => Ok(()),
            LrDecay::Exponential { rate, every } => {
                factor("rate", rate, true)?;
                positive("every", every)
            }
            LrDecay::Step { factor: f, every } => {
                factor("factor", f, false)?;
                positive("every", every)
            }
            LrDecay::Cosine { steps } => positive("steps", steps),
            LrDecay::Plateau(p) => {
                if m == 0.0 {
                    return Err(Error::invalid(
                        "min_lr",
                        "reduce-on-plateau needs a positive floor (it would cut forever)",
                    ));
                }
                factor("factor", p.factor, false)?;
                positive("patience", p.patience)?;
                p.rule().validate()
            }
        }
    }

    /// The rate of step `t` (from 0) for the base rate `lr`, given the schedule's `state`.
    pub fn lr(&self, lr: f64, t: u64, state: &LrScheduleState) -> f64 {
        let w = self.warmup_steps;
        if t < w {
            return lr * (t + 1) as f64 / w as f64;
        }
        let tau = (t - w) as f64;
        let floor = |v: f64| v.max(self.min_lr);
        match self.decay {
            LrDecay::Constant => lr,
            LrDecay::Exponential { rate, every } => floor(lr * rate.powf(tau / every as f64)),
            LrDecay::Step { factor, every } => {
                floor(lr * factor.powf(((t - w) / every.max(1)) as f64))
            }
            LrDecay::Cosine { steps } => {
                let x = tau.min(steps as f64) / steps.max(1) as f64;
                self.min_lr + (lr - self.min_lr) * 0.5 * (1.0 + (std::f64::consts::PI * x).cos())
            }
            LrDecay::Plateau(p) => floor(lr * p.factor.powi(state.cuts as i32)),
        }
    }

    /// Feeds the ELBO estimate of step `t` (after the step's update) to the schedule's state:
    /// only reduce-on-plateau, after the warm-up, listens.
    pub(crate) fn observe(&self, lr: f64, t: u64, elbo: f64, state: &mut LrScheduleState) {
        let LrDecay::Plateau(p) = self.decay else {
            return;
        };
        if t < self.warmup_steps {
            return;
        }
        if let Some(end) = state.plateau.push(&p.rule(), elbo) {
            let current = lr * p.factor.powi(state.cuts as i32);
            if end.wait >= p.patience && current > self.min_lr && state.cuts < i32::MAX as u32 {
                state.cuts += 1;
                state.plateau.wait = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rates(s: &LrSchedule, lr: f64, ts: &[u64]) -> Vec<f64> {
        let st = LrScheduleState::default();
        ts.iter().map(|&t| s.lr(lr, t, &st)).collect()
    }

    #[test]
    fn closed_form_rates_match_the_formulas() {
        let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-15);
        // Warm-up over 4 steps: lr/4, lr/2, 3lr/4, lr; then constant.
        let w = LrSchedule::constant().with_warmup(4);
        assert!(close(
            &rates(&w, 0.4, &[0, 1, 2, 3, 4, 100]),
            &[0.1, 0.2, 0.3, 0.4, 0.4, 0.4]
        ));
        // Exponential 0.5 per 10 steps after 2 warm-up steps: τ = 10 halves, τ = 5 is 1/√2.
        let e = LrSchedule::exponential(0.5, 10).with_warmup(2);
        let want = [1.0, 1.0, 0.5f64.sqrt(), 0.5];
        assert!(close(&rates(&e, 1.0, &[1, 2, 7, 12]), &want));
        // Step 0.1 every 3: τ 0..2 → lr, 3..5 → lr/10, floored at 0.02 from τ = 6.
        let s = LrSchedule::step(0.1, 3).with_min_lr(0.02);
        let want = [1.0, 1.0, 0.1, 0.1, 0.02];
        assert!(close(&rates(&s, 1.0, &[0, 2, 3, 5, 6]), &want));
        // Cosine over 10 steps to 0.1: midpoint (1 + 0.1)/2, end and beyond 0.1.
        let c = LrSchedule::cosine(10, 0.1);
        assert!(close(
            &rates(&c, 1.0, &[0, 5, 10, 50]),
            &[1.0, 0.55, 0.1, 0.1]
        ));
        assert!(LrSchedule::default().is_constant() && !w.is_constant());
    }

    #[test]
    fn plateau_cuts_after_patience_flat_windows_and_stops_at_the_floor() {
        let p = PlateauSettings {
            window: 2,
            patience: 2,
            abs_tol: 0.0,
            noise_multiplier: 0.0,
            ..PlateauSettings::default()
        };
        let s = LrSchedule::plateau(p, 0.3).with_warmup(3);
        let mut st = LrScheduleState::default();
        // Warm-up values are ignored, even huge ones.
        for t in 0..3 {
            s.observe(1.0, t, 1e9, &mut st);
        }
        assert_eq!(st.plateau.count, 0);
        // A flat objective: window 1 sets the reference, windows 2 and 3 wait, the cut follows.
        for t in 3..9 {
            s.observe(1.0, t, 5.0, &mut st);
        }
        assert_eq!(st.cuts, 1);
        assert_eq!(s.lr(1.0, 9, &st), 0.5);
        for t in 9..13 {
            s.observe(1.0, t, 5.0, &mut st);
        }
        // 0.25 is floored at 0.3, and no further cut is made.
        assert_eq!((st.cuts, s.lr(1.0, 13, &st)), (2, 0.3));
        for t in 13..30 {
            s.observe(1.0, t, 5.0, &mut st);
        }
        assert_eq!(st.cuts, 2);
        // A climbing objective never cuts.
        let mut up = LrScheduleState::default();
        for t in 3..100 {
            s.observe(1.0, t, t as f64, &mut up);
        }
        assert_eq!(up.cuts, 0);
    }

    #[test]
    fn validation_names_the_field() {
        let field = |s: LrSchedule| match s.validate(0.1) {
            Err(Error::InvalidSettings { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(field(LrSchedule::step(1.0, 5)), "factor");
        assert_eq!(field(LrSchedule::exponential(0.5, 0)), "every");
        assert_eq!(field(LrSchedule::cosine(10, 0.2)), "min_lr");
        assert_eq!(field(LrSchedule::cosine(0, 0.0)), "steps");
        let bad = PlateauSettings {
            window: 1,
            ..PlateauSettings::default()
        };
        assert_eq!(field(LrSchedule::plateau(bad, 0.01)), "window");
        let floorless = LrSchedule::plateau(PlateauSettings::default(), 0.0);
        assert_eq!(field(floorless), "min_lr");
        assert!(LrSchedule::exponential(1.0, 5).validate(0.1).is_ok());
        assert!(LrSchedule::constant()
            .with_min_lr(5.0)
            .validate(0.1)
            .is_ok());
    }
}
