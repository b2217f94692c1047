//! The verdict on a run's ELBO estimates: whether the run may claim what its termination says
//! (docs/convergence.md, "When a fit cannot be trusted").
//!
//! The run loop feeds every step's ELBO estimate to an [`ElboTrack`] (part of [`crate::State`],
//! so a resumed run continues it) and asks it, when the run ends, whether the estimates show a
//! fit gone wrong. The checks, in order (the first that holds decides):
//!
//! 1. **Non-finite estimates.** Of the last [`ElboTrack::RECENT`] = 500 estimates, all or at
//!    least half non-finite: *diverged*; more than 1 %: *unstable*. A step whose model value or
//!    gradient is NaN or ±∞ is skipped by the engine and leaves a non-finite estimate, so a fit
//!    whose steps are all skipped can no longer end as if it had run.
//! 2. **Absurd magnitude.** The median of the recent finite estimates below −1e10 nats:
//!    *diverged*. No data set a fit can use has a log density that small where the
//!    approximation has its mass; such values come from draws far outside the posterior.
//! 3. **Heavy tails** (Monte Carlo estimates of a guide with a density: SMI, OVI). A recent
//!    estimate more than 50 robust sds (1.4826·MAD) from the recent median: *unstable*. The
//!    ELBO estimate is an average over m·S draws; for an approximation that covers its target
//!    it is close to Normal, and a 50-sd value means some draws land where the density
//!    vanishes.
//! 4. **A fall** (updates that ascend the estimate: OVI, MAP). The mean of the recent estimates lies below the mean of the
//!    first block of [`ElboTrack::BLOCK`] = 100 estimates, or below the best block mean by more
//!    than a tenth of the climb from the first block to the best, by more than 1 nat and
//!    6·σ̂/√100 in each case (σ̂ the step noise by successive differences; 6 sds of a block
//!    mean, so the maximum over the blocks of a flat run stays inside it; 1 nat, a factor e of
//!    density, so an optimizer's jitter at the optimum is not a fall): *unstable*.
//!
//! Separately, [`ElboTrack::trend`] tells the run loop that the recent estimates still trend
//! (the OLS slope over the last 500 more than 5 standard errors from 0, with the step noise
//! σ̂); the convergence rule does not fire while it does.
//!
//! Which of checks 3 and 4 apply is the engine's [`crate::Engine::elbo_checks`]. The Stein
//! updates are not ascents of their estimate: SVGD's particles lower their mean log density as
//! they spread, and SMI's repulsion pushes the guides apart at some cost in mixture ELBO (on
//! N(0, I₃) with the defaults the estimate settles ≈ 0.16 nats below its best block), so
//! check 4 does not apply to them.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::engine::runner::Termination;
use crate::engine::ElboChecks;
use crate::error::{Error, Result};

/// The accumulators of the verdict: the recent ELBO estimates and block means (see the module
/// docs). Part of [`crate::State`]; fresh by default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct ElboTrack {
    /// The last [`ElboTrack::RECENT`] estimates, oldest first (`None`: non-finite).
    pub recent: VecDeque<Option<f64>>,
    /// Finite estimates in the current block so far.
    pub block_count: u64,
    /// Their sum.
    pub block_sum: f64,
    /// The mean of the first completed block (`None` before it completes).
    pub first_block: Option<f64>,
    /// The highest completed block mean.
    pub best_block: Option<f64>,
    /// Estimates fed so far, finite or not.
    pub seen: u64,
}

/// The ELBO's value at the end of a run: the mean of the recent finite estimates and its Monte
/// Carlo standard error.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElboEstimate {
    /// Mean of the finite estimates among the last [`ElboTrack::RECENT`].
    pub mean: f64,
    /// σ̂/√n, with σ̂ the step noise by successive differences (von Neumann), which a slow
    /// drift barely inflates; `NaN` for fewer than 2 estimates.
    pub mcse: f64,
    /// n, the finite estimates averaged.
    pub count: usize,
}

/// Summary statistics of the recent finite estimates.
struct Recent {
    finite: Vec<f64>,
    non_finite: usize,
    /// Step noise by successive differences over consecutive finite estimates.
    sigma: f64,
}

impl ElboTrack {
    /// Estimates kept for the verdict.
    pub const RECENT: usize = 500;
    /// Finite estimates per block mean.
    pub const BLOCK: u64 = 100;

    /// Feeds the ELBO estimate of one step.
    pub fn push(&mut self, elbo: f64) {
        self.seen = self.seen.saturating_add(1);
        if self.recent.len() == Self::RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back(elbo.is_finite().then_some(elbo));
        if !elbo.is_finite() {
            return;
        }
        self.block_sum += elbo;
        self.block_count += 1;
        if self.block_count == Self::BLOCK {
            let mean = self.block_sum / Self::BLOCK as f64;
            self.first_block.get_or_insert(mean);
            if self.best_block.is_none_or(|b| mean > b) {
                self.best_block = Some(mean);
            }
            (self.block_sum, self.block_count) = (0.0, 0);
        }
    }

    fn recent_stats(&self) -> Recent {
        let finite: Vec<f64> = self.recent.iter().flatten().copied().collect();
        let non_finite = self.recent.len() - finite.len();
        let diffs: Vec<f64> = finite.windows(2).map(|w| w[1] - w[0]).collect();
        let sigma = if diffs.is_empty() {
            f64::NAN
        } else {
            (diffs.iter().map(|d| d * d).sum::<f64>() / (2.0 * diffs.len() as f64)).sqrt()
        };
        Recent {
            finite,
            non_finite,
            sigma,
        }
    }

    /// The ELBO at the end: the mean of the recent finite estimates and its Monte Carlo
    /// standard error; `None` when none is finite.
    pub fn estimate(&self) -> Option<ElboEstimate> {
        let r = self.recent_stats();
        if r.finite.is_empty() {
            return None;
        }
        let n = r.finite.len();
        let mean = r.finite.iter().sum::<f64>() / n as f64;
        Some(ElboEstimate {
            mean,
            mcse: r.sigma / (n as f64).sqrt(),
            count: n,
        })
    }

    /// Whether the recent estimates still trend: `Some(reason)` when the OLS slope over the
    /// last [`ElboTrack::RECENT`] finite estimates is more than 5 standard errors from 0 (its
    /// standard error from the step noise σ̂). `None` with fewer than 50 finite estimates.
    pub fn trend(&self) -> Option<String> {
        let r = self.recent_stats();
        let n = r.finite.len();
        if n < 50 || !(r.sigma.is_finite() && r.sigma > 0.0) {
            return None;
        }
        let xbar = (n as f64 - 1.0) / 2.0;
        let ybar = r.finite.iter().sum::<f64>() / n as f64;
        let (mut sxy, mut sxx) = (0.0, 0.0);
        for (i, y) in r.finite.iter().enumerate() {
            let x = i as f64 - xbar;
            sxy += x * (y - ybar);
            sxx += x * x;
        }
        let slope = sxy / sxx;
        let t = slope / (r.sigma / sxx.sqrt());
        (t.abs() > 5.0).then(|| {
            format!(
                "the ELBO estimate was still {} by {:.3e} per step over the last {n} steps \
                 ({:.1} standard errors)",
                if slope > 0.0 { "rising" } else { "falling" },
                slope.abs(),
                t.abs()
            )
        })
    }

    /// The verdict on the run so far: `Some((Diverged | Unstable, reason))` when a check of
    /// the module docs holds, else `None`; `checks` says whether checks 3 and 4 apply.
    pub fn verdict(&self, checks: ElboChecks) -> Option<(Termination, String)> {
        let r = self.recent_stats();
        let total = self.recent.len();
        if total == 0 {
            return None;
        }
        let bad = r.non_finite;
        if bad == total {
            return Some((
                Termination::Diverged,
                format!(
                    "all of the last {total} ELBO estimates were non-finite: the model's log \
                     density or gradient was NaN or infinite at the approximation's draws, so \
                     those steps were skipped and the particles did not move"
                ),
            ));
        }
        if 2 * bad >= total || 100 * bad > total {
            let kind = if 2 * bad >= total {
                Termination::Diverged
            } else {
                Termination::Unstable
            };
            return Some((
                kind,
                format!(
                    "{bad} of the last {total} ELBO estimates were non-finite: the \
                     approximation puts mass where the model's log density or gradient is NaN \
                     or infinite (outside its support?)"
                ),
            ));
        }
        let mut sorted = r.finite.clone();
        sorted.sort_by(f64::total_cmp);
        let median = median_sorted(&sorted);
        if median < -1e10 {
            return Some((
                Termination::Diverged,
                format!(
                    "the ELBO estimates are of order {median:.1e} nats: the approximation's \
                     draws lie where the model's density is vanishingly small"
                ),
            ));
        }
        let mut dev: Vec<f64> = sorted.iter().map(|v| (v - median).abs()).collect();
        dev.sort_by(f64::total_cmp);
        let robust_sd = 1.4826 * median_sorted(&dev);
        let worst = dev.last().copied().unwrap_or(0.0);
        if checks.heavy_tails && robust_sd > 0.0 && worst > 50.0 * robust_sd {
            return Some((
                Termination::Unstable,
                format!(
                    "the ELBO estimates are heavy-tailed: one of the last {total} lies {:.0} \
                     robust sds from their median {median:.4e}, so some of the approximation's \
                     draws land where the model's density nearly vanishes",
                    worst / robust_sd
                ),
            ));
        }
        if !checks.falls {
            return None;
        }
        let mean = r.finite.iter().sum::<f64>() / r.finite.len() as f64;
        let noise = if r.sigma.is_finite() {
            (6.0 * r.sigma / (Self::BLOCK as f64).sqrt()).max(1.0)
        } else {
            1.0
        };
        if let Some(first) = self.first_block {
            if mean < first - noise {
                return Some((
                    Termination::Unstable,
                    format!(
                        "the ELBO ended below where it started ({mean:.4e} against {first:.4e} \
                         over the first {} steps): the optimizer made the fit worse",
                        Self::BLOCK
                    ),
                ));
            }
            if let Some(best) = self.best_block {
                let climb = best - first;
                if climb > 0.0 && mean < best - noise.max(0.1 * climb) {
                    return Some((
                        Termination::Unstable,
                        format!(
                            "the ELBO fell from its best block mean {best:.4e} to {mean:.4e} \
                             (more than a tenth of its climb of {climb:.3e} from the start): \
                             the optimizer is unstable at this learning rate"
                        ),
                    ));
                }
            }
        }
        None
    }

    /// Checks that every number is finite (a checkpoint holds only finite numbers).
    ///
    /// # Errors
    /// [`Error::NonFinite`] naming the value.
    pub fn validate(&self) -> Result<()> {
        let named = [
            ("block_sum", Some(self.block_sum)),
            ("first_block", self.first_block),
            ("best_block", self.best_block),
        ];
        for (name, v) in named {
            if let Some(v) = v.filter(|v| !v.is_finite()) {
                return Err(Error::non_finite(format!("ELBO track: {name} = {v}")));
            }
        }
        Ok(())
    }
}

fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, Normal};

    const ALL: ElboChecks = ElboChecks {
        heavy_tails: true,
        falls: true,
    };
    const NONE: ElboChecks = ElboChecks {
        heavy_tails: false,
        falls: false,
    };

    fn track(values: impl IntoIterator<Item = f64>) -> ElboTrack {
        let mut t = ElboTrack::default();
        for v in values {
            t.push(v);
        }
        t
    }

    fn noisy(n: usize, seed: u64, f: impl Fn(usize) -> f64) -> Vec<f64> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let z = Normal::new(0.0, 1.0).unwrap();
        (0..n).map(|i| f(i) + z.sample(&mut rng)).collect()
    }

    #[test]
    fn a_healthy_climb_that_levels_off_passes_every_check() {
        // −100 rising to −10 over 2000 steps, then flat, unit noise: every check stays quiet
        // for each of 20 seeds (the fall check's margin is 6 sds of a block mean; the maximum
        // of 40 flat block means exceeds their mean by ≈ 2.2 sds).
        for seed in 0..20 {
            let v = noisy(6000, seed, |i| -10.0 - 90.0 * (-(i as f64) / 300.0).exp());
            let t = track(v);
            assert_eq!(t.verdict(ALL), None, "seed {seed}");
            assert_eq!(t.trend(), None, "seed {seed}");
            let e = t.estimate().unwrap();
            assert!((e.mean + 10.0).abs() < 0.25, "{e:?}");
            // σ = 1 over 500 estimates: se = 1/√500 ≈ 0.045.
            assert!((e.mcse - 1.0 / 500f64.sqrt()).abs() < 0.01, "{e:?}");
        }
    }

    #[test]
    fn non_finite_estimates_diverge_or_are_unstable() {
        let all = track(vec![f64::NAN; 300]);
        assert_eq!(all.verdict(ALL).unwrap().0, Termination::Diverged);
        assert!(all.estimate().is_none());
        let half = track((0..600).map(|i| if i % 2 == 0 { f64::NEG_INFINITY } else { -1.0 }));
        assert_eq!(half.verdict(NONE).unwrap().0, Termination::Diverged);
        let few = track((0..600).map(|i| if i % 40 == 0 { f64::NAN } else { -1.0 }));
        let (kind, reason) = few.verdict(NONE).unwrap();
        assert_eq!(kind, Termination::Unstable);
        // Indices 100–599 hold the multiples of 40 from 120 to 560: 12.
        assert!(reason.contains("12 of the last 500"), "{reason}");
    }

    #[test]
    fn absurd_and_heavy_tailed_estimates_are_caught() {
        // The time-series failure: estimates between −1e99 and −1e103.
        let absurd = track((0..500).map(|i| -(10f64.powi(99 + i % 5))));
        let (kind, reason) = absurd.verdict(NONE).unwrap();
        assert_eq!(kind, Termination::Diverged);
        assert!(reason.contains("e10"), "{reason}");
        // Unit noise with one estimate at −1e4 below: heavy-tailed for a Monte Carlo estimate,
        // not judged for a point mass's.
        let mut v = noisy(1000, 3, |_| -5.0);
        v[900] = -1e4;
        let t = track(v);
        assert_eq!(t.verdict(ALL).unwrap().0, Termination::Unstable);
        assert_eq!(t.verdict(NONE), None);
    }

    #[test]
    fn falls_below_the_start_or_from_the_best_are_unstable() {
        // A fall within 1 nat (an optimizer's jitter at the optimum) is not one.
        let jitter = track((0..1000).map(|i| if i < 500 { 0.0 } else { -0.5 }));
        assert_eq!(jitter.verdict(ALL), None);
        // Starts at −10, ends at −20.
        let below = track(noisy(2000, 1, |i| if i < 1000 { -10.0 } else { -20.0 }));
        let (kind, reason) = below.verdict(ALL).unwrap();
        assert_eq!(kind, Termination::Unstable);
        assert!(reason.contains("below where it started"), "{reason}");
        // Climbs from −100 to 0, then falls to −30 (30 % of the climb).
        let fell = track(noisy(3000, 2, |i| match i {
            0..1000 => -100.0 + 0.1 * i as f64,
            1000..2000 => 0.0,
            _ => -30.0,
        }));
        let (kind, reason) = fell.verdict(ALL).unwrap();
        assert_eq!(kind, Termination::Unstable);
        assert!(reason.contains("fell from its best"), "{reason}");
        assert_eq!(
            fell.verdict(NONE),
            None,
            "a Stein update's estimate may fall"
        );
        let smi = ElboChecks {
            heavy_tails: true,
            falls: false,
        };
        assert_eq!(fell.verdict(smi), None);
    }

    #[test]
    fn a_trend_is_seen_and_noise_is_not() {
        // 0.01 per step with unit noise over 500 steps: slope se = 1/√(Σx²) ≈ 1/√(1.04e7)
        // ≈ 3.1e-4, so t ≈ 32.
        let t = track(noisy(500, 4, |i| 0.01 * i as f64));
        assert!(t.trend().unwrap().contains("rising"));
        for seed in 0..20 {
            assert_eq!(
                track(noisy(500, seed, |_| 0.0)).trend(),
                None,
                "seed {seed}"
            );
        }
    }

    #[test]
    fn the_track_round_trips_and_rejects_non_finite_sums() {
        let t = track([1.0, f64::NAN, 2.0]);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<ElboTrack>(&json).unwrap(), t);
        let bad = ElboTrack {
            best_block: Some(f64::INFINITY),
            ..t
        };
        assert!(bad.validate().is_err());
    }
}
