//! Per-draw sampler statistics of NUTS (Stan's `lp__`, `accept_stat__`, `stepsize__`,
//! `treedepth__`, `n_leapfrog__`, `divergent__`, `energy__`) and the E-BFMI.

use serde::{Deserialize, Serialize};

/// E-BFMI below this flags a chain (Stan's and ArviZ's threshold): the momentum resampling
/// explores the energy distribution poorly, typical of heavy tails or funnels.
pub const E_BFMI_THRESHOLD: f64 = 0.3;

/// The sampler statistics of one NUTS iteration.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DrawStats {
    /// log p of the draw (Stan's `lp__`).
    pub log_density: f64,
    /// Whether the trajectory diverged (energy error above nuts-rs's limit of 1000, or a
    /// non-finite log density or gradient).
    pub divergent: bool,
    /// The Hamiltonian at the draw, −log p + ½‖v‖² − log|det J| in nuts-rs's adapted
    /// coordinates (Stan's `energy__` up to an additive constant that changes only when the
    /// mass matrix does, so it is fixed after warm-up). Input of [`e_bfmi`].
    pub energy: f64,
    /// Tree depth: the doublings of the trajectory the draw was taken from (nuts-rs's
    /// `depth`), ≤ `max_depth`. A last doubling abandoned because its new half U-turns is not
    /// counted (Stan counts it), so `n_leapfrog` ≤ 2^(tree_depth + 1) − 1.
    pub tree_depth: u64,
    /// Whether the tree reached `max_depth`.
    pub max_depth_reached: bool,
    /// The step size nuts-rs reports with the draw: the one in force after the draw's
    /// adaptation update, i.e. the step size of the next trajectory (nutpie's `step_size`;
    /// after warm-up nuts-rs jitters it by ±10 % per draw around the adapted value).
    pub step_size: f64,
    /// Leapfrog steps of the trajectory (= gradient evaluations; Stan's `n_leapfrog__`).
    pub n_leapfrog: u64,
    /// Mean Metropolis acceptance probability over the trajectory (Stan's `accept_stat__`).
    pub accept_prob: f64,
    /// Whether the iteration was a warm-up (tuning) iteration.
    pub warmup: bool,
}

/// Betancourt's energy Bayesian fraction of missing information of one chain,
/// Σₙ(Eₙ − Eₙ₋₁)² / Σₙ(Eₙ − Ē)² over its energies (Betancourt 2016, "Diagnosing suboptimal
/// cotangent disintegrations in Hamiltonian Monte Carlo"; ArviZ's `bfmi` takes means
/// instead of sums, N/(N − 1) times this).
///
/// Near 1 (for a Gaussian target, exactly 2(1 − ρ₁) = 1 in the limit, ρ₁ the lag-1
/// autocorrelation of the energy); below [`E_BFMI_THRESHOLD`] is a warning. `None` with fewer
/// than 2 energies, a non-finite one, or all equal.
pub fn e_bfmi(energy: &[f64]) -> Option<f64> {
    if energy.len() < 2 || energy.iter().any(|e| !e.is_finite()) {
        return None;
    }
    let mean = energy.iter().sum::<f64>() / energy.len() as f64;
    let spread: f64 = energy.iter().map(|e| (e - mean) * (e - mean)).sum();
    let steps: f64 = energy
        .windows(2)
        .map(|w| (w[1] - w[0]) * (w[1] - w[0]))
        .sum();
    (spread > 0.0).then(|| steps / spread)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e_bfmi_on_known_sequences() {
        // 0,1,0,1: Σ(ΔE)² = 3, Σ(E − Ē)² = 4·0.25 = 1.
        assert_eq!(e_bfmi(&[0.0, 1.0, 0.0, 1.0]), Some(3.0));
        // A slow drift 0..100: Σ(ΔE)² = 99, Σ(E − Ē)² = n(n² − 1)/12 = 83 325: far below 0.3.
        let drift: Vec<f64> = (0..100).map(f64::from).collect();
        let v = e_bfmi(&drift).unwrap();
        assert!((v - 99.0 / 83_325.0).abs() < 1e-15, "{v}");
        assert!(v < E_BFMI_THRESHOLD);
        // Undefined cases.
        assert_eq!(e_bfmi(&[1.0]), None);
        assert_eq!(e_bfmi(&[2.0, 2.0, 2.0]), None);
        assert_eq!(e_bfmi(&[0.0, f64::NAN, 1.0]), None);
    }
}
