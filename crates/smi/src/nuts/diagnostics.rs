//! Convergence diagnostics of MCMC chains: rank-normalised split-R̂, bulk- and tail-ESS
//! (Vehtari et al. 2021).
//!
//! Every function takes the draws of one scalar quantity as `chains[c][i]` (M chains of n draws
//! each, all of the same length). The estimators follow Vehtari, Gelman, Simpson, Carpenter &
//! Bürkner (2021), "Rank-normalization, folding, and localization: an improved R̂ for assessing
//! convergence of MCMC", Bayesian Analysis 16(2), as implemented by Stan and the R package
//! `posterior`:
//!
//! * chains are split in halves (the middle draw of an odd-length chain is dropped), giving 2M
//!   chains of ⌊n/2⌋ draws;
//! * rank normalisation replaces every draw by Φ⁻¹((r − 3/8)/(S + 1/4)), r its average rank
//!   among all S pooled draws;
//! * ESS uses the multi-chain autocorrelation estimate with Geyer's initial monotone sequence.
//!
//! Degenerate input (fewer than 4 draws per chain, chains of unequal length, no chains, constant
//! or non-finite draws) gives `NaN`.

use statrs::distribution::{ContinuousCDF, Normal};

/// Rank-normalised split-R̂: the maximum of the bulk R̂ (split-R̂ of the rank-normalised draws)
/// and the tail R̂ (split-R̂ of the rank-normalised draws folded around their median), Vehtari et
/// al. (2021) §4.
///
/// `chains[c]` holds the n draws of chain c (M ≥ 1 chains: a single chain is split in two).
/// Values near 1 (below 1.01) indicate the chains agree; `NaN` for degenerate input (see the
/// module docs).
pub fn split_rhat(chains: &[&[f64]]) -> f64 {
    let Some(split) = split_chains(chains) else {
        return f64::NAN;
    };
    let bulk = rhat_basic(&rank_normalise(&split));
    let median = median(split.iter().flatten().copied());
    let folded: Vec<Vec<f64>> = split
        .iter()
        .map(|c| c.iter().map(|x| (x - median).abs()).collect())
        .collect();
    let tail = rhat_basic(&rank_normalise(&folded));
    if bulk.is_nan() || tail.is_nan() {
        f64::NAN
    } else {
        bulk.max(tail)
    }
}

/// Bulk effective sample size: the ESS of the rank-normalised split chains (Vehtari et al. 2021
/// §4.2), the ESS relevant for the location (mean, median) of the distribution.
///
/// `chains[c]` holds the n draws of chain c. At most M·n·log₁₀(M·n) (the cap of Stan and
/// `posterior`); ≈ M·n for independent draws. `NaN` for degenerate input.
pub fn ess_bulk(chains: &[&[f64]]) -> f64 {
    match split_chains(chains) {
        Some(split) => ess_of_chains(&rank_normalise(&split)),
        None => f64::NAN,
    }
}

/// Tail effective sample size: the minimum of the ESS of the 5 % and 95 % quantiles (Vehtari
/// et al. 2021 §4.3), each the ESS of the split chains of the indicator I(x ≤ q), q the
/// quantile of all pooled draws (R's default type 7, linear interpolation). The ESS relevant for
/// tail quantities (the 5 % and 95 % quantiles, a 90 % interval).
///
/// `chains[c]` holds the n draws of chain c. `NaN` for degenerate input, or when an indicator
/// is constant (e.g. more than 95 % of the draws tie).
pub fn ess_tail(chains: &[&[f64]]) -> f64 {
    let Some(split) = split_chains(chains) else {
        return f64::NAN;
    };
    let mut pooled: Vec<f64> = chains.iter().flat_map(|c| c.iter().copied()).collect();
    pooled.sort_by(f64::total_cmp);
    let ess_at = |p: f64| {
        let q = quantile_sorted(&pooled, p);
        let indicator: Vec<Vec<f64>> = split
            .iter()
            .map(|c| c.iter().map(|&x| f64::from(u8::from(x <= q))).collect())
            .collect();
        ess_of_chains(&indicator)
    };
    let (lo, hi) = (ess_at(0.05), ess_at(0.95));
    if lo.is_nan() || hi.is_nan() {
        f64::NAN
    } else {
        lo.min(hi)
    }
}

/// The `p`-quantile of ascending `sorted` values by linear interpolation between order
/// statistics (R's default type 7, NumPy's default `linear`): with h = (n − 1)p, the value
/// x₍⌊h⌋₎ + (h − ⌊h⌋)(x₍⌊h⌋+1₎ − x₍⌊h⌋₎) (0-based). `NaN` for no values; `p` is clamped to
/// [0, 1].
pub(crate) fn quantile_sorted(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    if n == 0 {
        return f64::NAN;
    }
    let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Effective sample size of the mean: the ESS of the split chains without rank normalisation
/// (`posterior::ess_mean`). Its Monte-Carlo standard error of the mean is sd/√ESS; use it for
/// expectations of functions of the draws (e.g. products for covariances).
///
/// `chains[c]` holds the n draws of chain c. `NaN` for degenerate input.
pub fn ess_mean(chains: &[&[f64]]) -> f64 {
    match split_chains(chains) {
        Some(split) => ess_of_chains(&split),
        None => f64::NAN,
    }
}

/// Splits each chain into its first and last ⌊n/2⌋ draws; `None` for degenerate input.
fn split_chains(chains: &[&[f64]]) -> Option<Vec<Vec<f64>>> {
    let n = chains.first()?.len();
    if n < 4
        || chains
            .iter()
            .any(|c| c.len() != n || c.iter().any(|x| !x.is_finite()))
    {
        return None;
    }
    let half = n / 2;
    Some(
        chains
            .iter()
            .flat_map(|c| [c[..half].to_vec(), c[n - half..].to_vec()])
            .collect(),
    )
}

/// Replaces each draw by Φ⁻¹((r − 3/8)/(S + 1/4)), r its average rank (1-based) among all S
/// pooled draws (Blom's offset, Vehtari et al. 2021 eq. 14).
fn rank_normalise(chains: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let pooled: Vec<f64> = chains.iter().flatten().copied().collect();
    let s = pooled.len();
    let mut order: Vec<usize> = (0..s).collect();
    order.sort_by(|&a, &b| pooled[a].total_cmp(&pooled[b]));
    let mut ranks = vec![0.0; s];
    let mut i = 0;
    while i < s {
        let mut j = i + 1;
        while j < s && pooled[order[j]] == pooled[order[i]] {
            j += 1;
        }
        // Ranks i+1 ..= j share their average.
        let avg = (i + 1 + j) as f64 / 2.0;
        for &k in &order[i..j] {
            ranks[k] = avg;
        }
        i = j;
    }
    let normal = Normal::standard();
    let denom = s as f64 + 0.25;
    let mut z = ranks
        .into_iter()
        .map(|r| normal.inverse_cdf((r - 0.375) / denom));
    chains
        .iter()
        .map(|c| z.by_ref().take(c.len()).collect())
        .collect()
}

/// The median of the values (mean of the middle two for an even count).
fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        0.5 * (v[n / 2 - 1] + v[n / 2])
    }
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

/// Sample variance with denominator n − 1.
fn variance(x: &[f64]) -> f64 {
    let m = mean(x);
    x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() as f64 - 1.0)
}

/// Split-R̂ of already split chains of equal length (Gelman et al., BDA3 eq. 11.4):
/// √((n−1)/n + B/(nW)), B/n the variance of the chain means, W the mean within-chain variance.
fn rhat_basic(chains: &[Vec<f64>]) -> f64 {
    let n = chains[0].len() as f64;
    let means: Vec<f64> = chains.iter().map(|c| mean(c)).collect();
    let within = chains.iter().map(|c| variance(c)).sum::<f64>() / chains.len() as f64;
    let between_over_n = if chains.len() > 1 {
        variance(&means)
    } else {
        0.0
    };
    let r = ((n - 1.0) / n + between_over_n / within).sqrt();
    if r.is_finite() {
        r
    } else {
        f64::NAN
    }
}

/// Biased autocovariance (denominator n) of one chain at `lag`, around its mean `m`.
fn autocovariance(x: &[f64], m: f64, lag: usize) -> f64 {
    let n = x.len();
    x[..n - lag]
        .iter()
        .zip(&x[lag..])
        .map(|(a, b)| (a - m) * (b - m))
        .sum::<f64>()
        / n as f64
}

/// ESS of chains of equal length (Stan's `compute_effective_sample_size`, `posterior::ess_rfun`).
///
/// Autocovariances are computed lazily, lag by lag, up to where Geyer's initial positive
/// sequence stops, so well-mixing chains cost O(M·n·lags).
fn ess_of_chains(chains: &[Vec<f64>]) -> f64 {
    let m_chains = chains.len();
    let n = chains[0].len();
    let means: Vec<f64> = chains.iter().map(|c| mean(c)).collect();
    // Mean over chains of the lag-t autocovariance.
    let mean_acov = |lag: usize| -> f64 {
        chains
            .iter()
            .zip(&means)
            .map(|(c, &m)| autocovariance(c, m, lag))
            .sum::<f64>()
            / m_chains as f64
    };
    let nf = n as f64;
    let mean_var = mean_acov(0) * nf / (nf - 1.0);
    let mut var_plus = mean_var * (nf - 1.0) / nf;
    if m_chains > 1 {
        var_plus += variance(&means);
    }
    if var_plus.is_nan() || var_plus <= 0.0 || !mean_var.is_finite() {
        return f64::NAN;
    }
    let rho = |lag: usize| 1.0 - (mean_var - mean_acov(lag)) / var_plus;

    let mut rho_hat = vec![0.0; n];
    rho_hat[0] = 1.0;
    let mut rho_even = 1.0;
    let mut rho_odd = rho(1);
    rho_hat[1] = rho_odd;
    let mut t = 0;
    // Geyer's initial positive sequence: sum pairs while they are positive.
    while t + 5 < n && (rho_even + rho_odd) > 0.0 {
        t += 2;
        rho_even = rho(t);
        rho_odd = rho(t + 1);
        if !(rho_even + rho_odd).is_finite() {
            break;
        }
        if rho_even + rho_odd >= 0.0 {
            rho_hat[t] = rho_even;
            rho_hat[t + 1] = rho_odd;
        }
    }
    let max_t = t;
    // The improved (less variable in the antithetic case) estimate of `posterior`.
    if rho_even > 0.0 {
        rho_hat[max_t] = rho_even;
    }
    // Geyer's initial monotone sequence.
    let mut t = 0;
    while t + 4 <= max_t {
        t += 2;
        if rho_hat[t] + rho_hat[t + 1] > rho_hat[t - 2] + rho_hat[t - 1] {
            rho_hat[t] = 0.5 * (rho_hat[t - 2] + rho_hat[t - 1]);
            rho_hat[t + 1] = rho_hat[t];
        }
    }
    let total = (m_chains * n) as f64;
    let tau = -1.0 + 2.0 * rho_hat[..max_t].iter().sum::<f64>() + rho_hat[max_t];
    // Safety cap: ESS at most S·log10(S).
    let tau = tau.max(1.0 / total.log10());
    total / tau
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_distr::{Distribution, StandardNormal};

    fn iid_chains(seed: u64, chains: usize, n: usize, offsets: &[f64]) -> Vec<Vec<f64>> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..chains)
            .map(|c| {
                (0..n)
                    .map(|_| {
                        let z: f64 = StandardNormal.sample(&mut rng);
                        z + offsets[c]
                    })
                    .collect()
            })
            .collect()
    }

    fn refs(c: &[Vec<f64>]) -> Vec<&[f64]> {
        c.iter().map(Vec::as_slice).collect()
    }

    /// AR(1) chains x_t = φ x_{t−1} + √(1−φ²) ε_t: stationary N(0,1), ESS ≈ S(1−φ)/(1+φ).
    fn ar1_chains(seed: u64, chains: usize, n: usize, phi: f64) -> Vec<Vec<f64>> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let s = (1.0 - phi * phi).sqrt();
        (0..chains)
            .map(|_| {
                let mut x: f64 = StandardNormal.sample(&mut rng);
                (0..n)
                    .map(|_| {
                        let e: f64 = StandardNormal.sample(&mut rng);
                        x = phi * x + s * e;
                        x
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn iid_normal_has_rhat_one_and_full_ess() {
        let c = iid_chains(1, 4, 1000, &[0.0; 4]);
        let r = split_rhat(&refs(&c));
        // For iid draws R̂ − 1 is O(1/S) ≈ 1e-3 in spread; 1.01 is the usual alarm threshold.
        assert!((r - 1.0).abs() < 0.01, "rhat {r}");
        let ess = ess_bulk(&refs(&c));
        // ESS of iid draws is S = 4000 up to the noise of the autocorrelation sum (≈ ±10%).
        assert!((ess / 4000.0 - 1.0).abs() < 0.15, "ess {ess}");
        let ess_m = ess_mean(&refs(&c));
        assert!((ess_m / 4000.0 - 1.0).abs() < 0.15, "ess_mean {ess_m}");
    }

    #[test]
    fn shifted_chains_have_large_rhat() {
        let c = iid_chains(2, 4, 500, &[0.0, 0.0, 0.0, 3.0]);
        let r = split_rhat(&refs(&c));
        assert!(r > 1.3, "rhat {r}");
        // Offsets make the chain means disagree: ESS collapses well below S.
        assert!(ess_bulk(&refs(&c)) < 200.0);
    }

    #[test]
    fn different_scales_are_caught_by_the_tail_rhat() {
        // Equal means, different spreads: bulk R̂ barely moves, the folded (tail) R̂ does.
        let mut c = iid_chains(3, 4, 1000, &[0.0; 4]);
        c[3].iter_mut().for_each(|x| *x *= 4.0);
        assert!(split_rhat(&refs(&c)) > 1.05);
    }

    #[test]
    fn trending_single_chain_has_large_split_rhat() {
        let c: Vec<f64> = (0..1000).map(|i| i as f64 / 100.0).collect();
        assert!(split_rhat(&[&c]) > 1.5);
    }

    #[test]
    fn autocorrelated_chains_have_reduced_ess() {
        let phi = 0.9;
        let c = ar1_chains(4, 4, 5000, phi);
        let expected = 20000.0 * (1.0 - phi) / (1.0 + phi);
        let ess = ess_bulk(&refs(&c));
        // ≈ 1053; the estimator's relative spread at this ESS is a few percent, allow 20%.
        assert!(
            (ess / expected - 1.0).abs() < 0.2,
            "ess {ess} vs {expected}"
        );
        assert!((split_rhat(&refs(&c)) - 1.0).abs() < 0.01);
    }

    #[test]
    fn antithetic_chains_have_ess_above_s() {
        let c = ar1_chains(5, 2, 4000, -0.5);
        // Negative lag-1 correlation: ESS ≈ S(1+0.5)/(1−0.5) = 3S before the log10 cap.
        assert!(ess_mean(&refs(&c)) > 8000.0);
    }

    #[test]
    fn rank_normalisation_is_monotone_with_ties() {
        let z = rank_normalise(&[vec![3.0, 1.0, 2.0, 2.0]]);
        assert!(z[0][1] < z[0][2] && z[0][2] < z[0][0]);
        assert_eq!(z[0][2], z[0][3]);
        assert!((z[0][2]).abs() < 1e-12, "middle ranks map to 0");
    }

    #[test]
    fn tail_ess_of_iid_draws_is_full_and_of_sticky_tails_is_small() {
        let c = iid_chains(6, 4, 1000, &[0.0; 4]);
        let ess = ess_tail(&refs(&c));
        // The ESS of an iid indicator is S up to the estimator's noise (≈ ±10 % here).
        assert!((ess / 4000.0 - 1.0).abs() < 0.15, "ess_tail {ess}");
        // Autocorrelated chains lose tail ESS as well (AR(1), φ = 0.9: ≈ S/19 for the mean;
        // the tail indicators mix a little faster but stay far below S).
        let c = ar1_chains(7, 4, 2000, 0.9);
        assert!(ess_tail(&refs(&c)) < 2000.0);
        // One chain stuck in the upper tail: the 95 % indicator sees it, ESS collapses.
        let mut c = iid_chains(8, 4, 1000, &[0.0; 4]);
        c[3].iter_mut().for_each(|x| *x = 2.0 + x.abs());
        assert!(ess_tail(&refs(&c)) < 200.0);
        assert!(ess_tail(&[&[1.0; 10], &[1.0; 10]]).is_nan());
    }

    #[test]
    fn quantiles_interpolate_as_r_type_7() {
        let v = [1.0, 2.0, 4.0, 8.0];
        // h = 3p: p = 0.5 → between 2 and 4; p = 0.05 → 1 + 0.15·1.
        assert_eq!(quantile_sorted(&v, 0.5), 3.0);
        assert!((quantile_sorted(&v, 0.05) - 1.15).abs() < 1e-15);
        assert_eq!(quantile_sorted(&v, 1.0), 8.0);
        assert_eq!(quantile_sorted(&v, 0.0), 1.0);
        assert!(quantile_sorted(&[], 0.5).is_nan());
    }

    #[test]
    fn degenerate_input_is_nan() {
        assert!(split_rhat(&[]).is_nan());
        assert!(split_rhat(&[&[1.0, 2.0, 3.0]]).is_nan());
        assert!(ess_bulk(&[&[1.0; 4], &[1.0; 5]]).is_nan());
        assert!(ess_mean(&[&[1.0; 10]]).is_nan());
        assert!(split_rhat(&[&[1.0, 2.0, f64::NAN, 4.0]]).is_nan());
    }
}
