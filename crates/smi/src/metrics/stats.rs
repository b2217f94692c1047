//! Summary statistics (mean, std, logsumexp) and the Mann–Whitney U test used for table marks.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The significance level the paper uses to mark a method as worse than the best (docs/algorithms.md §8).
pub const PAPER_ALPHA: f64 = 0.05;

/// Largest sample size (of the smaller sample) for which `Auto` uses the exact distribution,
/// as in SciPy's `mannwhitneyu(method='auto')`.
const EXACT_MAX_SIZE: usize = 8;

/// Largest C(n1 + n2, min(n1, n2)) the exact distribution is counted for in `i128`; beyond it
/// the normal approximation is used (only reachable with one sample of ≤ 8 values and the other
/// of more than about 10⁵ values).
const EXACT_MAX_CONFIGURATIONS: f64 = 1.0e36;

fn check_sample(what: &str, x: &[f64]) -> Result<()> {
    if x.is_empty() {
        return Err(Error::Data(format!("{what}: empty sample")));
    }
    if let Some(i) = x.iter().position(|v| v.is_nan()) {
        return Err(Error::Data(format!("{what}: NaN at index {i}")));
    }
    Ok(())
}

/// Arithmetic mean (1/n) Σ x_i. Infinite values propagate (as in numpy).
///
/// # Errors
/// [`Error::Data`] if `x` is empty or holds a NaN.
pub fn mean(x: &[f64]) -> Result<f64> {
    check_sample("mean", x)?;
    Ok(x.iter().sum::<f64>() / x.len() as f64)
}

/// Population standard deviation (ddof 0): sqrt((1/n) Σ (x_i − x̄)²), like `numpy.std`
/// (an infinite value gives NaN, as in numpy).
///
/// # Errors
/// [`Error::Data`] if `x` is empty or holds a NaN.
///
/// Computed by the corrected two-pass algorithm (Chan, Golub & LeVeque 1983): the rounding of
/// the mean is removed by subtracting (Σ (x_i − x̄))²/n, so equal values give exactly 0.
pub fn std(x: &[f64]) -> Result<f64> {
    let m = mean(x)?;
    let n = x.len() as f64;
    let (ss, s) = x.iter().fold((0.0, 0.0), |(ss, s), v| {
        let e = v - m;
        (ss + e * e, s + e)
    });
    Ok(((ss - s * s / n) / n).max(0.0).sqrt())
}

/// A mean ± standard deviation (ddof 0) pair, the aggregate reported in the paper's tables
/// (over splits for UCI, over draws for MNIST; docs/algorithms.md §8 "Aggregation").
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MeanStd {
    /// (1/n) Σ x_i.
    pub mean: f64,
    /// sqrt((1/n) Σ (x_i − mean)²), ddof 0.
    pub std: f64,
}

impl MeanStd {
    /// Mean and ddof-0 standard deviation of `x` (see [`mean()`], [`std()`]).
    ///
    /// # Errors
    /// [`Error::Data`] if `x` is empty or holds a NaN.
    pub fn of(x: &[f64]) -> Result<Self> {
        Ok(MeanStd {
            mean: mean(x)?,
            std: std(x)?,
        })
    }
}

/// Numerically stable log Σ_i exp(x_i).
///
/// Shifts by the maximum before exponentiating. Conventions: an empty slice gives −∞ (the log
/// of an empty sum); all −∞ gives −∞; any +∞ gives +∞; any NaN gives NaN.
pub fn logsumexp(x: &[f64]) -> f64 {
    if x.iter().any(|v| v.is_nan()) {
        return f64::NAN;
    }
    let max = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        // Empty, all −∞ (→ −∞) or some +∞ (→ +∞).
        return max;
    }
    let s: f64 = x.iter().map(|v| (v - max).exp()).sum();
    max + s.ln()
}

/// The alternative hypothesis of [`mann_whitney_u`], as SciPy's `alternative` argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Alternative {
    /// H₁: the distribution of `x` is stochastically less than that of `y` (`'less'`).
    Less,
    /// H₁: the distribution of `x` is stochastically greater than that of `y` (`'greater'`).
    Greater,
    /// H₁: the distributions differ (`'two-sided'`).
    TwoSided,
}

/// How [`mann_whitney_u_with`] computes the p-value, as SciPy's `method` argument.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum MwuMethod {
    /// SciPy's `'auto'`: [`MwuMethod::Exact`] when at least one sample has ≤ 8 values and there
    /// are no ties, otherwise [`MwuMethod::Asymptotic`].
    #[default]
    Auto,
    /// The exact null distribution of U (valid only without ties).
    Exact,
    /// Normal approximation with tie-corrected variance and continuity correction 0.5.
    Asymptotic,
}

/// Result of a Mann–Whitney U test.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct MannWhitney {
    /// U₁ = R₁ − n₁(n₁+1)/2, the statistic for `x` (R₁ = sum of the average ranks of `x` in the
    /// pooled sample). SciPy's `statistic`.
    pub statistic: f64,
    /// The p-value for the chosen alternative, clipped to [0, 1].
    pub p_value: f64,
    /// The method actually used ([`MwuMethod::Exact`] or [`MwuMethod::Asymptotic`]).
    pub method: MwuMethod,
}

/// Mann–Whitney U test of `x` against `y`, like
/// `scipy.stats.mannwhitneyu(x, y, alternative=..., method='auto')` (continuity correction on).
///
/// With n₁ = |x|, n₂ = |y| and U₁ the statistic of `x` (see [`MannWhitney::statistic`]),
/// U₂ = n₁n₂ − U₁; the p-value is P(U ≥ U₁) for `Greater`, P(U ≥ U₂) for `Less` and
/// 2·P(U ≥ max(U₁, U₂)) for `TwoSided`, under the null distribution of U.
/// - Exact (no ties and min(n₁, n₂) ≤ 8): the null distribution is counted exactly (the
///   coefficients of the Gaussian binomial [n₁+n₂ choose n₁]_q).
/// - Asymptotic: z = (U − n₁n₂/2 − 0.5)/σ with
///   σ² = n₁n₂/12 · ((n + 1) − Σ_k (t_k³ − t_k)/(n(n − 1))), n = n₁ + n₂, t_k the tie-group
///   sizes; p = 1 − Φ(z).
///
/// Deviation from SciPy: when C(n₁ + n₂, min(n₁, n₂)) exceeds 10³⁶ (one sample of ≤ 8 values
/// and the other of more than about 10⁵), `Auto` falls back to the normal approximation.
///
/// ±∞ are ranked like any value (equal infinities tie).
///
/// # Errors
/// [`Error::Data`] if either sample is empty or holds a NaN.
pub fn mann_whitney_u(x: &[f64], y: &[f64], alternative: Alternative) -> Result<MannWhitney> {
    mann_whitney_u_with(x, y, alternative, MwuMethod::Auto)
}

/// [`mann_whitney_u`] with an explicit [`MwuMethod`].
///
/// # Errors
/// [`Error::Data`] if either sample is empty or holds a NaN;
/// [`Error::InvalidSettings`] (`method`) if [`MwuMethod::Exact`] is asked for with tied values.
pub fn mann_whitney_u_with(
    x: &[f64],
    y: &[f64],
    alternative: Alternative,
    method: MwuMethod,
) -> Result<MannWhitney> {
    check_sample("mann_whitney_u, x", x)?;
    check_sample("mann_whitney_u, y", y)?;
    let n1 = x.len();
    let n2 = y.len();
    let pooled: Vec<f64> = x.iter().chain(y).copied().collect();
    let (ranks, ties) = average_ranks(&pooled);
    let r1: f64 = ranks[..n1].iter().sum();
    let u1 = r1 - (n1 * (n1 + 1)) as f64 / 2.0;
    let nn = (n1 * n2) as f64;
    let u2 = nn - u1;
    let (u, factor) = match alternative {
        Alternative::Greater => (u1, 1.0),
        Alternative::Less => (u2, 1.0),
        Alternative::TwoSided => (u1.max(u2), 2.0),
    };
    let has_ties = ties.iter().any(|&t| t > 1);
    let small = n1.min(n2);
    let large = n1.max(n2);
    let exact_fits = ln_binomial(small + large, small) < EXACT_MAX_CONFIGURATIONS.ln();
    let method = match method {
        MwuMethod::Auto => {
            if (n1 > EXACT_MAX_SIZE && n2 > EXACT_MAX_SIZE) || has_ties || !exact_fits {
                MwuMethod::Asymptotic
            } else {
                MwuMethod::Exact
            }
        }
        MwuMethod::Exact if has_ties => {
            return Err(Error::invalid(
                "method",
                "the exact Mann–Whitney distribution needs samples without ties",
            ))
        }
        MwuMethod::Exact if !exact_fits => {
            return Err(Error::invalid(
                "method",
                format!("exact Mann–Whitney distribution too large for sizes {n1} and {n2}"),
            ))
        }
        m => m,
    };
    let p = match method {
        MwuMethod::Exact => {
            // Without ties U is an integer; round guards against float noise in the rank sum.
            exact_sf(u.round() as usize, small, large)
        }
        _ => {
            let n = (n1 + n2) as f64;
            let tie_term: f64 = ties
                .iter()
                .map(|&t| {
                    let t = t as f64;
                    t * t * t - t
                })
                .sum();
            let var = nn / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
            let z = (u - nn / 2.0 - 0.5) / var.sqrt();
            // When every value is tied, σ = 0 and z = −∞ → p = 1, as in SciPy.
            normal_sf(z)
        }
    };
    Ok(MannWhitney {
        statistic: u1,
        p_value: (p * factor).clamp(0.0, 1.0),
        method,
    })
}

/// Average (mid) ranks, 1-based, and the sizes of all tie groups (size-1 groups included).
fn average_ranks(x: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut order: Vec<usize> = (0..x.len()).collect();
    order.sort_by(|&a, &b| x[a].total_cmp(&x[b]));
    let mut ranks = vec![0.0; x.len()];
    let mut ties = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && x[order[end]] == x[order[start]] {
            end += 1;
        }
        // Positions start..end (0-based) share the rank mean((start+1)..=end).
        let r = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = r;
        }
        ties.push(end - start);
        start = end;
    }
    (ranks, ties)
}

/// ln C(n, k) via ln Γ.
fn ln_binomial(n: usize, k: usize) -> f64 {
    use statrs::function::gamma::ln_gamma;
    ln_gamma(n as f64 + 1.0) - ln_gamma(k as f64 + 1.0) - ln_gamma((n - k) as f64 + 1.0)
}

/// Upper tail P(U ≥ k) of the null distribution of U for sample sizes m ≤ n (no ties).
///
/// The number of arrangements with U = u is the coefficient of q^u in the Gaussian binomial
/// [m+n choose m]_q = Π_{i=1..m} (1 − q^{n+i})/(1 − q^i), built one factor at a time in exact
/// integer arithmetic (each partial product is itself a Gaussian binomial, so nonnegative and
/// bounded by C(m+n, m)).
fn exact_sf(k: usize, m: usize, n: usize) -> f64 {
    let max_u = m * n;
    if k == 0 {
        return 1.0;
    }
    if k > max_u {
        return 0.0;
    }
    let mut c = vec![0i128; max_u + 1];
    c[0] = 1;
    for i in 1..=m {
        // Multiply by (1 − q^{n+i}): descending so each term uses the old coefficient.
        let a = n + i;
        for u in (a..=max_u).rev() {
            c[u] -= c[u - a];
        }
        // Divide by (1 − q^i): c[u] += c[u − i], ascending (a geometric-series product).
        for u in i..=max_u {
            c[u] += c[u - i];
        }
    }
    let total: i128 = c.iter().sum();
    // Use the symmetry c[u] = c[mn − u] to sum the shorter tail exactly.
    let tail: i128 = if 2 * k > max_u {
        c[k..].iter().sum()
    } else {
        total - c[..k].iter().sum::<i128>()
    };
    tail as f64 / total as f64
}

/// Standard normal survival function 1 − Φ(z) = erfc(z/√2)/2.
fn normal_sf(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    0.5 * statrs::function::erf::erfc(z / std::f64::consts::SQRT_2)
}

/// Whether a lower or a higher value of a metric is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Better {
    /// Lower is better (RMSE, NLL, ECE, Brier, …).
    Lower,
    /// Higher is better (accuracy, LPPD, …).
    Higher,
}

/// Which methods are "not worse than the best" (docs/algorithms.md §8 "Significance"), for bold/underline
/// marks in tables.
///
/// `samples[k]` holds method k's per-split (or per-draw) values. The best method is the one with
/// the best mean (the first on ties). Every other method k is tested with
/// `mann_whitney_u(best, samples[k], Less)` when lower is better and `Greater` otherwise; a
/// p-value below `alpha` marks it as worse. The returned vector has one entry per method:
/// `true` for the best and for every method not found worse. The paper uses
/// `alpha = `[`PAPER_ALPHA`] (0.05). For the underline (best variational method) call it again
/// with NUTS left out.
///
/// # Errors
/// [`Error::Data`] if `samples` is empty or any sample is empty or holds a NaN;
/// [`Error::InvalidSettings`] (`alpha`) unless 0 < alpha < 1.
pub fn not_worse_than_best<S: AsRef<[f64]>>(
    samples: &[S],
    better: Better,
    alpha: f64,
) -> Result<Vec<bool>> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(Error::invalid(
            "alpha",
            format!("must be in (0, 1), got {alpha}"),
        ));
    }
    if samples.is_empty() {
        return Err(Error::Data("not_worse_than_best: no methods".into()));
    }
    let means = samples
        .iter()
        .map(|s| mean(s.as_ref()))
        .collect::<Result<Vec<f64>>>()?;
    let mut best = 0;
    for (k, &m) in means.iter().enumerate() {
        let improves = match better {
            Better::Lower => m < means[best],
            Better::Higher => m > means[best],
        };
        if improves {
            best = k;
        }
    }
    let alternative = match better {
        Better::Lower => Alternative::Less,
        Better::Higher => Alternative::Greater,
    };
    samples
        .iter()
        .enumerate()
        .map(|(k, s)| {
            if k == best {
                return Ok(true);
            }
            let test = mann_whitney_u(samples[best].as_ref(), s.as_ref(), alternative)?;
            Ok(test.p_value >= alpha)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "{a} vs {b} (tol {tol})"
        );
    }

    #[test]
    fn std_of_equal_values_is_exactly_zero() {
        // copies of values whose summed mean is off by an ulp for some n (0.1 × 7, 1e10/3 × 7,
        // −7.25e-3 × 5): the plain two-pass formula then gives a small positive std
        for v in [2.302_585_092_994_045_6, 0.1, 1e10 / 3.0, -7.25e-3] {
            assert_eq!(std(&[v; 5]).unwrap(), 0.0, "{v}");
            assert_eq!(std(&[v; 7]).unwrap(), 0.0, "{v}");
        }
    }

    #[test]
    fn mean_std_ddof0() {
        let x = [1.0, 2.0, 3.0, 4.0];
        // mean 2.5; squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5 → var 1.25.
        let ms = MeanStd::of(&x).unwrap();
        close(ms.mean, 2.5, 1e-15);
        close(ms.std, 1.25f64.sqrt(), 1e-15);
        assert!(mean(&[]).is_err());
        assert!(std(&[1.0, f64::NAN]).is_err());
    }

    #[test]
    fn logsumexp_is_stable() {
        close(logsumexp(&[0.0, 0.0]), std::f64::consts::LN_2, 1e-15);
        close(
            logsumexp(&[1000.0, 1000.0]),
            1000.0 + std::f64::consts::LN_2,
            1e-15,
        );
        close(
            logsumexp(&[-1000.0, -1000.0]),
            -1000.0 + std::f64::consts::LN_2,
            1e-15,
        );
        // ln(e^1 + e^2 + e^3) = 3 + ln(1 + e^-1 + e^-2) = 3.40760596444438
        close(logsumexp(&[1.0, 2.0, 3.0]), 3.40760596444438, 1e-14);
        assert_eq!(logsumexp(&[]), f64::NEG_INFINITY);
        assert_eq!(logsumexp(&[f64::NEG_INFINITY; 3]), f64::NEG_INFINITY);
        assert_eq!(logsumexp(&[1.0, f64::INFINITY]), f64::INFINITY);
        assert!(logsumexp(&[1.0, f64::NAN]).is_nan());
    }

    #[test]
    fn ranks_with_ties() {
        let (r, t) = average_ranks(&[3.0, 1.0, 3.0, 2.0, 3.0]);
        assert_eq!(r, vec![4.0, 1.0, 4.0, 2.0, 4.0]);
        assert_eq!(t, vec![1, 1, 3]);
    }

    #[test]
    fn exact_distribution_small() {
        // m = n = 2: C(4,2) = 6 arrangements, U ∈ {0,1,2,2,3,4} → counts [1,1,2,1,1].
        close(exact_sf(0, 2, 2), 1.0, 0.0);
        close(exact_sf(1, 2, 2), 5.0 / 6.0, 1e-15);
        close(exact_sf(2, 2, 2), 4.0 / 6.0, 1e-15);
        close(exact_sf(3, 2, 2), 2.0 / 6.0, 1e-15);
        close(exact_sf(4, 2, 2), 1.0 / 6.0, 1e-15);
        close(exact_sf(5, 2, 2), 0.0, 0.0);
    }

    // Reference values from SciPy 1.17.1:
    //
    // from scipy.stats import mannwhitneyu
    // cases = {
    //   "exact_a": ([1.1, 2.3, 0.4, 3.9, 2.8], [4.2, 5.1, 3.3, 6.0, 4.4, 7.2]),
    //   "exact_unequal": ([0.31, 0.12, 0.77], [0.52, 0.91, 0.05, 0.66, 0.88, 0.43, 0.99,
    //                      0.24, 0.71, 0.58, 0.62, 0.35]),
    //   "ties_small": ([1, 2, 2, 3, 4], [2, 3, 3, 5, 6, 6]),
    //   "asym_large": ([0.5 * i for i in range(12)], [0.35 * i + 1.1 for i in range(10)]),
    //   "asym_ties": ([1, 1, 2, 2, 2, 3, 3, 4, 5, 5], [2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7]),
    //   "all_tied": ([1, 1, 1], [1, 1]),
    // }
    // for k, (x, y) in cases.items():
    //     for alt in ["less", "greater", "two-sided"]:
    //         r = mannwhitneyu(x, y, alternative=alt, method="auto")
    //         print(k, alt, repr(float(r.statistic)), repr(float(r.pvalue)))
    use Alternative::{Greater, Less, TwoSided};
    const SCIPY: &[(&str, Alternative, f64, f64)] = &[
        ("exact_a", Less, 1.0, 0.004329004329004329),
        ("exact_a", Greater, 1.0, 0.9978354978354979),
        ("exact_a", TwoSided, 1.0, 0.008658008658008658),
        ("exact_unequal", Less, 12.0, 0.22417582417582418),
        ("exact_unequal", Greater, 12.0, 0.8175824175824176),
        ("exact_unequal", TwoSided, 12.0, 0.44835164835164837),
        ("ties_small", Less, 6.0, 0.05652498942816145),
        ("ties_small", Greater, 6.0, 0.9617245753150733),
        ("ties_small", TwoSided, 6.0, 0.1130499788563229),
        ("asym_large", Less, 61.5, 0.5524735824872773),
        ("asym_large", Greater, 61.5, 0.4737061608052977),
        ("asym_large", TwoSided, 61.5, 0.9474123216105954),
        ("asym_ties", Less, 21.5, 0.009330892493006428),
        ("asym_ties", Greater, 21.5, 0.992314088314623),
        ("asym_ties", TwoSided, 21.5, 0.018661784986012855),
        ("all_tied", Less, 3.0, 1.0),
        ("all_tied", Greater, 3.0, 1.0),
        ("all_tied", TwoSided, 3.0, 1.0),
    ];

    fn case(name: &str) -> (Vec<f64>, Vec<f64>) {
        match name {
            "exact_a" => (
                vec![1.1, 2.3, 0.4, 3.9, 2.8],
                vec![4.2, 5.1, 3.3, 6.0, 4.4, 7.2],
            ),
            "exact_unequal" => (
                vec![0.31, 0.12, 0.77],
                vec![
                    0.52, 0.91, 0.05, 0.66, 0.88, 0.43, 0.99, 0.24, 0.71, 0.58, 0.62, 0.35,
                ],
            ),
            "ties_small" => (
                vec![1.0, 2.0, 2.0, 3.0, 4.0],
                vec![2.0, 3.0, 3.0, 5.0, 6.0, 6.0],
            ),
            "asym_large" => (
                (0..12).map(|i| 0.5 * i as f64).collect(),
                (0..10).map(|i| 0.35 * i as f64 + 1.1).collect(),
            ),
            "asym_ties" => (
                vec![1.0, 1.0, 2.0, 2.0, 2.0, 3.0, 3.0, 4.0, 5.0, 5.0],
                vec![2.0, 3.0, 3.0, 4.0, 4.0, 5.0, 5.0, 6.0, 6.0, 7.0, 7.0],
            ),
            "all_tied" => (vec![1.0; 3], vec![1.0; 2]),
            _ => unreachable!(),
        }
    }

    #[test]
    fn mann_whitney_matches_scipy() {
        assert!(!SCIPY.is_empty());
        for &(name, alt, stat, p) in SCIPY {
            let (x, y) = case(name);
            let r = mann_whitney_u(&x, &y, alt).unwrap();
            close(r.statistic, stat, 1e-12);
            close(r.p_value, p, 1e-10);
        }
    }

    #[test]
    fn mann_whitney_method_choice() {
        let (x, y) = case("exact_unequal");
        // n1 = 3 ≤ 8, no ties → exact even though n2 = 12 > 8 (SciPy's rule).
        assert_eq!(
            mann_whitney_u(&x, &y, Alternative::Less).unwrap().method,
            MwuMethod::Exact
        );
        let (x, y) = case("ties_small");
        assert_eq!(
            mann_whitney_u(&x, &y, Alternative::Less).unwrap().method,
            MwuMethod::Asymptotic
        );
        assert!(mann_whitney_u_with(&x, &y, Alternative::Less, MwuMethod::Exact).is_err());
        let (x, y) = case("asym_large");
        assert_eq!(
            mann_whitney_u(&x, &y, Alternative::Less).unwrap().method,
            MwuMethod::Asymptotic
        );
        assert!(mann_whitney_u(&[], &y, Alternative::Less).is_err());
        assert!(mann_whitney_u(&x, &[f64::NAN], Alternative::Less).is_err());
    }

    #[test]
    fn exact_large_other_sample() {
        // One sample of 8 and one of 400: exact path, p for complete separation is 1/C(408, 8).
        let x: Vec<f64> = (0..8).map(|i| i as f64).collect();
        let y: Vec<f64> = (0..400).map(|i| 100.0 + i as f64).collect();
        let r = mann_whitney_u(&x, &y, Alternative::Less).unwrap();
        assert_eq!(r.method, MwuMethod::Exact);
        assert_eq!(r.statistic, 0.0);
        let expected = (-ln_binomial(408, 8)).exp();
        close(r.p_value, expected, 1e-9);
    }

    #[test]
    fn table_marks() {
        // Lower is better. "a" has the best mean; "b" is clearly worse (exact test,
        // p = 1/C(10,5) = 1/252 < 0.05); "c" overlaps with "a". SciPy 1.17.1:
        // mannwhitneyu(a, b, alternative='less').pvalue = 0.003968253968253968
        // mannwhitneyu(a, c, alternative='less').pvalue = 0.34523809523809523
        // mannwhitneyu(b, a, alternative='greater').pvalue = 0.003968253968253968
        // mannwhitneyu(b, c, alternative='greater').pvalue = 0.003968253968253968
        let a = vec![1.0, 1.1, 1.2, 1.3, 1.4];
        let b = vec![2.0, 2.1, 2.2, 2.3, 2.4];
        let c = vec![1.05, 1.15, 1.25, 1.35, 1.6];
        let marks =
            not_worse_than_best(&[a.clone(), b.clone(), c.clone()], Better::Lower, 0.05).unwrap();
        assert_eq!(marks, vec![true, false, true]);
        // Higher is better: now "b" is best and both others are worse.
        let marks = not_worse_than_best(&[a, b, c], Better::Higher, PAPER_ALPHA).unwrap();
        assert_eq!(marks, vec![false, true, false]);
        let none: [Vec<f64>; 0] = [];
        assert!(not_worse_than_best(&none, Better::Lower, 0.05).is_err());
        assert!(not_worse_than_best(&[vec![1.0]], Better::Lower, 0.0).is_err());
        assert!(not_worse_than_best(&[vec![1.0], vec![]], Better::Lower, 0.05).is_err());
    }
}
