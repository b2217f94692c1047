//! Windowed statistics of the noisy objective (the ELBO estimate of each step), shared by the
//! reduce-on-plateau learning-rate schedule and the convergence rule (docs/convergence.md).
//!
//! The values are cut into consecutive windows of W finite values. At the end of window k its
//! mean μ_k and the standard error of that mean, se_k = σ̂_k/√W, are computed, with the step
//! noise σ̂_k estimated from successive differences (von Neumann: σ̂² = Σ(e_t − e_{t−1})²/(2(W−1))
//! over the window), which a slow drift of the objective barely inflates. Window k *improves*
//! when μ_k > ref + tol (one-sided rule) or |μ_k − ref| > tol (two-sided: *changes*), with ref
//! the mean of the last window that did and tol = max(abs_tol, rel_tol·|ref|, z·√2·se_k)
//! (√2·se_k: the noise of a difference of two window means). `wait` counts the windows since
//! the last one that did.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// What counts as an improvement (or a change) of a window mean from the reference (see the
/// module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ImprovementRule {
    /// W, finite values per window (≥ 2).
    pub window: u64,
    /// Tolerance relative to |reference|.
    pub rel_tol: f64,
    /// Absolute tolerance (objective units, nats for the ELBO).
    pub abs_tol: f64,
    /// z, the multiple of the noise of a difference of window means.
    pub noise_multiplier: f64,
    /// Whether a significant decrease counts too (a change rather than an improvement).
    pub two_sided: bool,
}

impl ImprovementRule {
    /// Checks the rule's numbers.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.window < 2 {
            return Err(Error::invalid(
                "window",
                format!(
                    "needs at least 2 values per window (the noise estimate uses successive \
                     differences), got {}",
                    self.window
                ),
            ));
        }
        for (field, v) in [
            ("rel_tol", self.rel_tol),
            ("abs_tol", self.abs_tol),
            ("noise_multiplier", self.noise_multiplier),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::invalid(
                    field,
                    format!("must be a finite number ≥ 0, got {v}"),
                ));
            }
        }
        Ok(())
    }
}

/// The accumulators of the windowed objective: the current window's sums and the reference
/// window mean. Part of [`crate::State`] (resumes exactly from a checkpoint).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ObjectiveWindows {
    /// Finite values in the current window so far.
    pub count: u64,
    /// Their sum.
    pub sum: f64,
    /// Σ (e_t − e_{t−1})² over the consecutive values of the current window.
    pub sum_sq_diff: f64,
    /// The current window's latest value (`None` at a window's start).
    pub last: Option<f64>,
    /// The reference: the mean of the last window that improved (or, under a two-sided rule,
    /// changed); `None` before the first window ends.
    pub reference: Option<f64>,
    /// Windows ended since the reference was set.
    pub wait: u64,
    /// Windows ended so far.
    pub windows: u64,
    /// The last ended window's mean (`None` before the first).
    pub last_mean: Option<f64>,
    /// The standard error of that mean, se = σ̂/√W (`None` before the first window ends).
    pub last_se: Option<f64>,
}

/// What the end of a window decided.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct WindowEnd {
    /// Whether the window improved on (two-sided: changed from) the reference.
    pub improved: bool,
    /// Windows since the reference was set (0 when this window set it).
    pub wait: u64,
}

impl ObjectiveWindows {
    /// Feeds one value (non-finite values are ignored) and, when it completes a window, returns
    /// that window's verdict under `rule`.
    pub(crate) fn push(&mut self, rule: &ImprovementRule, value: f64) -> Option<WindowEnd> {
        if !value.is_finite() {
            return None;
        }
        if let Some(prev) = self.last {
            self.sum_sq_diff += (value - prev) * (value - prev);
        }
        self.last = Some(value);
        self.sum += value;
        self.count += 1;
        if self.count < rule.window.max(2) {
            return None;
        }
        let w = self.count as f64;
        let mean = self.sum / w;
        let se = (self.sum_sq_diff / (2.0 * (w - 1.0))).sqrt() / w.sqrt();
        let improved = match self.reference {
            None => true,
            Some(r) => {
                let tol = rule
                    .abs_tol
                    .max(rule.rel_tol * r.abs())
                    .max(rule.noise_multiplier * std::f64::consts::SQRT_2 * se);
                mean > r + tol || (rule.two_sided && mean < r - tol)
            }
        };
        if improved {
            self.reference = Some(mean);
            self.wait = 0;
        } else {
            self.wait = self.wait.saturating_add(1);
        }
        self.windows = self.windows.saturating_add(1);
        self.last_mean = Some(mean);
        self.last_se = Some(se);
        (self.count, self.sum, self.sum_sq_diff, self.last) = (0, 0.0, 0.0, None);
        Some(WindowEnd {
            improved,
            wait: self.wait,
        })
    }

    /// Checks that every number is finite (a checkpoint holds only finite numbers); `what`
    /// names the owner in the message.
    pub(crate) fn check(&self, what: &str) -> Result<()> {
        let named = [
            ("sum", Some(self.sum)),
            ("sum_sq_diff", Some(self.sum_sq_diff)),
            ("last", self.last),
            ("reference", self.reference),
            ("last_mean", self.last_mean),
            ("last_se", self.last_se),
        ];
        for (name, v) in named {
            if let Some(v) = v.filter(|v| !v.is_finite()) {
                return Err(Error::non_finite(format!("{what}: {name} = {v}")));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, Normal};

    fn rule(window: u64) -> ImprovementRule {
        ImprovementRule {
            window,
            rel_tol: 0.0,
            abs_tol: 0.0,
            noise_multiplier: 2.0,
            two_sided: false,
        }
    }

    #[test]
    fn window_mean_and_noise_are_the_hand_computed_ones() {
        // Values 1, 3, 2, 4: mean 2.5; successive differences 2, −1, 2 → Σ² = 9,
        // σ̂² = 9/(2·3) = 1.5, se = √1.5/2.
        let mut w = ObjectiveWindows::default();
        let r = rule(4);
        assert_eq!(w.push(&r, 1.0), None);
        assert_eq!(w.push(&r, f64::NAN), None, "non-finite values are skipped");
        assert_eq!(w.push(&r, 3.0), None);
        assert_eq!(w.push(&r, 2.0), None);
        let end = w.push(&r, 4.0).unwrap();
        assert!(end.improved && end.wait == 0);
        assert_eq!(w.last_mean, Some(2.5));
        assert!((w.last_se.unwrap() - 1.5f64.sqrt() / 2.0).abs() < 1e-15);
        assert_eq!((w.count, w.sum, w.last), (0, 0.0, None));
    }

    #[test]
    fn pure_noise_stops_improving_and_a_steady_climb_keeps_improving() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let noise = Normal::new(0.0, 1.0).unwrap();
        let r = rule(50);
        // Stationary N(0, 1): after the first window, an improvement needs a window mean
        // 2·√2·se ≈ 0.4 above the reference, a 2-sd event (p ≈ 0.023 per window).
        let mut flat = ObjectiveWindows::default();
        let ends: Vec<_> = (0..5000)
            .filter_map(|_| flat.push(&r, noise.sample(&mut rng)))
            .collect();
        assert_eq!(ends.len(), 100);
        let improved = ends.iter().filter(|e| e.improved).count();
        assert!(improved <= 8, "{improved} of 100 windows improved");
        // A climb of 0.02 per step gains 1.0 per window, 2.5 times the tolerance ≈ 0.4: every
        // window improves.
        let mut climb = ObjectiveWindows::default();
        let ends: Vec<_> = (0..5000)
            .filter_map(|t| climb.push(&r, 0.02 * t as f64 + noise.sample(&mut rng)))
            .collect();
        assert!(ends.iter().all(|e| e.improved));
        // A steady decline is a change only to a two-sided rule.
        let two = ImprovementRule {
            two_sided: true,
            ..r
        };
        let (mut one_sided, mut both) = (ObjectiveWindows::default(), ObjectiveWindows::default());
        for t in 0..5000 {
            let v = -0.02 * t as f64 + noise.sample(&mut rng);
            one_sided.push(&r, v);
            both.push(&two, v);
        }
        assert_eq!((one_sided.wait, both.wait), (99, 0));
    }

    #[test]
    fn rejects_bad_rules_and_non_finite_state() {
        assert!(rule(1).validate().is_err());
        let bad = ImprovementRule {
            abs_tol: -1.0,
            ..rule(10)
        };
        assert!(bad.validate().is_err());
        let w = ObjectiveWindows {
            reference: Some(f64::INFINITY),
            ..Default::default()
        };
        assert!(w.check("x").is_err());
        assert!(ObjectiveWindows::default().check("x").is_ok());
    }
}
