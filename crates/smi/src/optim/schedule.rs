//! Temperature schedules for the attraction: constant, and ASVGD's cyclical annealing (docs/algorithms.md §4.2).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// γ(t), multiplying the loss temperature τ at step t.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Schedule {
    /// γ(t) = 1.
    Constant,
    /// D'Angelo & Fortuin's cyclical annealing (ASVGD): C cycles over T steps, transition
    /// speed p. Defaults C = 10, p = 10 ([`Schedule::cyclical`]).
    Cyclical {
        /// T, the total number of steps the schedule spans.
        total_steps: u64,
        /// C, the number of cycles (≥ 2; C = 1 is degenerate).
        num_cycles: u64,
        /// p, the transition speed.
        transition_speed: f64,
    },
}

impl Schedule {
    /// Cyclical annealing over `total_steps` with C = 10 cycles and p = 10.
    pub fn cyclical(total_steps: u64) -> Self {
        Schedule::Cyclical {
            total_steps,
            num_cycles: 10,
            transition_speed: 10.0,
        }
    }

    /// Checks the parameters.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] if C < 2, T < C or p ≤ 0.
    pub fn validate(&self) -> Result<()> {
        if let Schedule::Cyclical {
            total_steps,
            num_cycles,
            transition_speed,
        } = *self
        {
            if num_cycles < 2 {
                return Err(Error::invalid("num_cycles", "needs at least 2 cycles"));
            }
            if total_steps < num_cycles {
                return Err(Error::invalid(
                    "total_steps",
                    format!("{total_steps} steps cannot hold {num_cycles} cycles"),
                ));
            }
            if transition_speed.is_nan() || transition_speed <= 0.0 {
                return Err(Error::invalid("transition_speed", "must be positive"));
            }
        }
        Ok(())
    }

    /// γ(t) for step t (from 0).
    ///
    /// L = ⌊T/C⌋, norm = (T+1)/C, last_start = max((C−1)L, 1), last = ⌊t/last_start⌋ capped at 1,
    /// γ = (1 − last)·(((t mod L) + 1)/norm)^p + last.
    pub fn value(&self, t: u64) -> f64 {
        match *self {
            Schedule::Constant => 1.0,
            Schedule::Cyclical {
                total_steps,
                num_cycles,
                transition_speed,
            } => {
                let l = (total_steps / num_cycles).max(1);
                let norm = (total_steps as f64 + 1.0) / num_cycles as f64;
                let last_start = ((num_cycles - 1) * l).max(1);
                let last = (t / last_start).min(1) as f64;
                (1.0 - last) * (((t % l) as f64 + 1.0) / norm).powf(transition_speed) + last
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_spec_values() {
        // docs/algorithms.md §4.2, verified against NumPyro: T = 100, C = 10, p = 10.
        let s = Schedule::cyclical(100);
        let rel = |a: f64, b: f64| ((a - b) / b).abs();
        assert!(rel(s.value(0), 9.0529e-11) < 1e-4);
        assert!(rel(s.value(5), 0.0054739) < 1e-4);
        assert!(rel(s.value(9), 0.905287) < 1e-5);
        assert!(rel(s.value(10), 9.05e-11) < 1e-3);
        assert!(rel(s.value(89), 0.905287) < 1e-5);
        assert_eq!(s.value(90), 1.0);
        assert_eq!(s.value(99), 1.0);
        assert_eq!(s.value(5000), 1.0);
    }

    #[test]
    fn rejects_degenerate_cycles() {
        let bad = Schedule::Cyclical {
            total_steps: 100,
            num_cycles: 1,
            transition_speed: 10.0,
        };
        assert!(bad.validate().is_err());
        assert!(Schedule::cyclical(100).validate().is_ok());
    }
}
