//! The convergence rule of the run loop: stop when the ELBO estimate has stopped improving
//! (docs/convergence.md).
//!
//! The ELBO estimates of the steps are cut into windows of W finite values. A window *changes*
//! when its mean differs from the reference (the mean of the last window that changed; the
//! first window sets it) by more than tol = max(abs_tol, rel_tol·|ref|, z·√2·se), se being the
//! standard error of the window mean (the step noise σ̂ estimated from successive differences,
//! divided by √W). The run has converged once `patience` consecutive windows have not changed
//! (and at least `min_steps` steps are done).
//!
//! Since the reference only moves on a significant change, a steady climb (or decline) of g per
//! window is never stopped when patience·g exceeds tol: the rule stops when the ELBO moved less
//! than about tol over the last patience·W steps, i.e. when it can no longer tell the movement
//! from the noise. Decreases count as changes because not every engine's estimate climbs
//! monotonically (SVGD's particles lower the mean log density as they spread).
//!
//! A cut of the learning rate by a reduce-on-plateau schedule restarts the patience count: the
//! run converges only once the schedule has stopped cutting (its rate at the floor), or the
//! objective has stayed flat for `patience` windows since its last cut.

use serde::{Deserialize, Serialize};

use crate::engine::window::{ImprovementRule, ObjectiveWindows};
use crate::error::{Error, Result};

/// Parameters of the convergence rule (see the module docs).
///
/// Defaults: window 500, patience 10, rel_tol 0, abs_tol 1e-3 nats, noise_multiplier 2,
/// min_steps 0, chosen by measurement on four posteriordb posteriors with the presets'
/// reduce-on-plateau schedule (docs/defaults.md: the rule must be more patient than the
/// schedule, or it ends the run before the schedule can cut). A stationary ELBO then stops
/// about 10 windows (5000 steps) after it levels off (a flat window moves from the reference by
/// 2 noise sds with probability ≈ 0.046), and a climb or decline of more than ≈ 0.28·σ/√W per
/// window (2·√2/patience noise sds of a window mean) is not stopped.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConvergenceSettings {
    /// W, finite ELBO estimates per window (≥ 2).
    pub window: u64,
    /// Consecutive windows without improvement that end the run (≥ 1).
    pub patience: u64,
    /// Tolerance relative to |reference window mean|.
    pub rel_tol: f64,
    /// Absolute tolerance, in nats (what a deterministic objective is judged by).
    pub abs_tol: f64,
    /// z, the tolerance in units of the noise of a difference of two window means.
    pub noise_multiplier: f64,
    /// No convergence before this many steps (counted in the state, so across resumes).
    pub min_steps: u64,
}

impl Default for ConvergenceSettings {
    fn default() -> Self {
        ConvergenceSettings {
            window: 500,
            patience: 10,
            rel_tol: 0.0,
            abs_tol: 1e-3,
            noise_multiplier: 2.0,
            min_steps: 0,
        }
    }
}

impl ConvergenceSettings {
    /// Checks the parameters.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] for a window below 2, a patience of 0, or a negative or
    /// non-finite tolerance.
    pub fn validate(&self) -> Result<()> {
        if self.patience == 0 {
            return Err(Error::invalid("patience", "must be at least 1"));
        }
        self.rule().validate()
    }

    fn rule(&self) -> ImprovementRule {
        ImprovementRule {
            window: self.window,
            rel_tol: self.rel_tol,
            abs_tol: self.abs_tol,
            noise_multiplier: self.noise_multiplier,
            two_sided: true,
        }
    }
}

/// The rule's accumulators, part of [`crate::State`] (a resumed run continues them exactly).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ConvergenceState {
    /// The settings the accumulators were built under (`None`: never used). A run under other
    /// settings starts them afresh.
    pub settings: Option<ConvergenceSettings>,
    /// The windowed ELBO estimates.
    pub windows: ObjectiveWindows,
    /// Whether the rule has fired.
    pub converged: bool,
    /// The reduce-on-plateau cuts seen so far ([`crate::LrScheduleState::cuts`]): a new cut
    /// restarts the patience count.
    pub cuts_seen: u32,
}

impl ConvergenceState {
    /// Makes the accumulators belong to `settings`: a state built under other settings (or
    /// none) starts afresh.
    pub fn prepare(&mut self, settings: &ConvergenceSettings) {
        if self.settings != Some(*settings) {
            *self = ConvergenceState {
                settings: Some(*settings),
                ..ConvergenceState::default()
            };
        }
    }

    /// Feeds the ELBO estimate of the step that made the state's step count `step` (non-finite
    /// estimates are ignored), with the learning-rate cuts made so far (`lr_cuts`, see
    /// [`crate::LrScheduleState::cuts`]), and returns whether the run has converged.
    pub fn update(
        &mut self,
        settings: &ConvergenceSettings,
        step: u64,
        elbo: f64,
        lr_cuts: u32,
    ) -> bool {
        self.prepare(settings);
        if self.converged {
            return true;
        }
        if lr_cuts != self.cuts_seen {
            self.cuts_seen = lr_cuts;
            self.windows.wait = 0;
        }
        if let Some(end) = self.windows.push(&settings.rule(), elbo) {
            self.converged = end.wait >= settings.patience && step >= settings.min_steps;
        }
        self.converged
    }

    /// Checks that every number is finite.
    ///
    /// # Errors
    /// [`Error::NonFinite`] naming the value.
    pub fn validate(&self) -> Result<()> {
        self.windows.check("convergence rule")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flat_objective_converges_after_patience_windows_and_min_steps() {
        let s = ConvergenceSettings {
            window: 10,
            patience: 3,
            ..ConvergenceSettings::default()
        };
        let mut st = ConvergenceState::default();
        // Window 1 (steps 1–10) sets the reference; windows 2, 3, 4 do not change: step 40.
        let stop = (1..=100u64).find(|&t| st.update(&s, t, 1.0, 0));
        assert_eq!(stop, Some(40));
        assert!(st.update(&s, 41, 1e9, 0), "stays converged");
        let late = ConvergenceSettings { min_steps: 65, ..s };
        let mut st = ConvergenceState::default();
        // The first window end at or after step 65 with wait ≥ 3: step 70.
        assert_eq!(
            (1..=100u64).find(|&t| st.update(&late, t, 1.0, 0)),
            Some(70)
        );
    }

    #[test]
    fn a_learning_rate_cut_restarts_the_patience() {
        let s = ConvergenceSettings {
            window: 10,
            patience: 3,
            ..ConvergenceSettings::default()
        };
        let mut st = ConvergenceState::default();
        // A cut during window 4 (step 35): the count restarts, windows 4, 5, 6 wait: step 60.
        let cuts = |t: u64| u32::from(t >= 35);
        assert_eq!(
            (1..=100u64).find(|&t| st.update(&s, t, 1.0, cuts(t))),
            Some(60)
        );
    }

    #[test]
    fn other_settings_restart_the_accumulators() {
        let s = ConvergenceSettings::default();
        let mut st = ConvergenceState::default();
        for t in 1..=750 {
            st.update(&s, t, 2.0, 0);
        }
        assert_eq!(st.windows.count, 250);
        let other = ConvergenceSettings { window: 20, ..s };
        st.prepare(&other);
        assert_eq!(st.windows, ObjectiveWindows::default());
        assert_eq!(st.settings, Some(other));
        assert!(ConvergenceSettings { patience: 0, ..s }.validate().is_err());
        assert!(s.validate().is_ok());
    }
}
