//! Regression metrics (docs/algorithms.md §8): RMSE, NLL, LPPD (proper and the paper's artifacts), HDI and
//! central intervals.
//!
//! Shapes: S posterior/predictive draws (rows) × n test points (columns). `y_loc` is the
//! network mean of each draw (ŷ_{s,i}), `noise_scale` the Gaussian noise standard deviation
//! σ_s of each draw, `y` the n targets. Metrics that depend only on a likelihood take the S×n
//! matrix of log p(y_i | x_i, θ_s) (see [`gaussian_log_lik`]).

use serde::{Deserialize, Serialize};

use super::stats::logsumexp;
use crate::error::{Error, Result};
use crate::matrix::Matrix;

/// ln √(2π).
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

fn check_draws(context: &str, draws: &Matrix) -> Result<()> {
    if draws.rows() == 0 || draws.cols() == 0 {
        return Err(Error::Data(format!(
            "{context}: need at least one draw and one point, got {}×{}",
            draws.rows(),
            draws.cols()
        )));
    }
    if !draws.is_finite() {
        return Err(Error::Data(format!("{context}: non-finite draw value")));
    }
    Ok(())
}

fn check_targets(context: &str, draws: &Matrix, y: &[f64]) -> Result<()> {
    check_draws(context, draws)?;
    if y.len() != draws.cols() {
        return Err(Error::shape(
            format!("{context}, targets y"),
            format!("n = {} (columns of the draws)", draws.cols()),
            y.len(),
        ));
    }
    if y.iter().any(|v| !v.is_finite()) {
        return Err(Error::Data(format!("{context}: non-finite target")));
    }
    Ok(())
}

/// Checks a log-likelihood matrix: non-empty, no NaN and no +∞ (−∞ is allowed: p = 0).
fn check_log_lik(context: &str, log_lik: &Matrix) -> Result<()> {
    if log_lik.rows() == 0 || log_lik.cols() == 0 {
        return Err(Error::Data(format!(
            "{context}: need at least one draw and one point, got {}×{}",
            log_lik.rows(),
            log_lik.cols()
        )));
    }
    if log_lik
        .as_slice()
        .iter()
        .any(|v| v.is_nan() || *v == f64::INFINITY)
    {
        return Err(Error::Data(format!(
            "{context}: log-likelihood is NaN or +inf"
        )));
    }
    Ok(())
}

/// The S×n matrix of Gaussian log-likelihoods log N(y_i; ŷ_{s,i}, σ_s²).
///
/// log N(y; μ, σ²) = −ln σ − ½ ln 2π − (y − μ)²/(2σ²).
///
/// # Errors
/// [`Error::Data`] if `y_loc` is empty or any input is non-finite;
/// [`Error::Shape`] if `noise_scale.len() != S` or `y.len() != n`;
/// [`Error::Data`] if some σ_s ≤ 0.
pub fn gaussian_log_lik(y_loc: &Matrix, noise_scale: &[f64], y: &[f64]) -> Result<Matrix> {
    check_targets("gaussian_log_lik", y_loc, y)?;
    if noise_scale.len() != y_loc.rows() {
        return Err(Error::shape(
            "gaussian_log_lik, noise_scale",
            format!("S = {} (rows of y_loc)", y_loc.rows()),
            noise_scale.len(),
        ));
    }
    if let Some(s) = noise_scale
        .iter()
        .position(|v| !(v.is_finite() && *v > 0.0))
    {
        return Err(Error::Data(format!(
            "gaussian_log_lik: noise scale of draw {s} must be finite and > 0, got {}",
            noise_scale[s]
        )));
    }
    let mut out = Matrix::zeros(y_loc.rows(), y_loc.cols());
    for (s, &sigma) in noise_scale.iter().enumerate() {
        let norm = -sigma.ln() - LN_SQRT_2PI;
        let inv_var = 1.0 / (sigma * sigma);
        for ((o, mu), yi) in out.row_mut(s).iter_mut().zip(y_loc.row(s)).zip(y) {
            let r = yi - mu;
            *o = norm - 0.5 * r * r * inv_var;
        }
    }
    Ok(out)
}

/// The paper's RMSE: sqrt(mean_{s,i} (y_i − ŷ_{s,i})²), over draws and points jointly (docs/algorithms.md §8).
///
/// This is **not** the RMSE of the posterior-mean prediction (see [`rmse_of_mean`]).
///
/// # Errors
/// [`Error::Data`] if `y_loc` (S×n) is empty or non-finite; [`Error::Shape`] if `y.len() != n`.
pub fn rmse(y_loc: &Matrix, y: &[f64]) -> Result<f64> {
    check_targets("rmse", y_loc, y)?;
    let mut ss = 0.0;
    for row in y_loc.iter_rows() {
        for (mu, yi) in row.iter().zip(y) {
            ss += (yi - mu) * (yi - mu);
        }
    }
    Ok((ss / (y_loc.rows() * y_loc.cols()) as f64).sqrt())
}

/// RMSE of the predictive mean: sqrt((1/n) Σ_i (y_i − ȳ_i)²) with ȳ_i = (1/S) Σ_s ŷ_{s,i}.
///
/// # Errors
/// [`Error::Data`] if `y_loc` (S×n) is empty or non-finite; [`Error::Shape`] if `y.len() != n`.
pub fn rmse_of_mean(y_loc: &Matrix, y: &[f64]) -> Result<f64> {
    check_targets("rmse_of_mean", y_loc, y)?;
    let mean = y_loc.col_means();
    let ss: f64 = mean.iter().zip(y).map(|(m, yi)| (yi - m) * (yi - m)).sum();
    Ok((ss / y.len() as f64).sqrt())
}

/// Per-point log predictive density: log((1/S) Σ_s p(y_i|θ_s)) = logsumexp_s ℓ_{s,i} − ln S,
/// from the S×n log-likelihood matrix ℓ. Returns n values.
///
/// # Errors
/// [`Error::Data`] if `log_lik` is empty or holds NaN or +∞.
pub fn pointwise_log_predictive(log_lik: &Matrix) -> Result<Vec<f64>> {
    check_log_lik("pointwise_log_predictive", log_lik)?;
    let ln_s = (log_lik.rows() as f64).ln();
    Ok(column_logsumexp(log_lik)
        .into_iter()
        .map(|v| v - ln_s)
        .collect())
}

fn column_logsumexp(log_lik: &Matrix) -> Vec<f64> {
    let mut col = vec![0.0; log_lik.rows()];
    (0..log_lik.cols())
        .map(|i| {
            for (s, c) in col.iter_mut().enumerate() {
                *c = log_lik.get(s, i);
            }
            logsumexp(&col)
        })
        .collect()
}

/// The proper mixture NLL: −(1/n) Σ_i [logsumexp_s ℓ_{s,i} − ln S] (docs/algorithms.md §8), the per-point
/// negative log predictive density of the mixture of the S draws. ℓ is S×n.
///
/// # Errors
/// [`Error::Data`] if `log_lik` is empty or holds NaN or +∞.
pub fn mixture_nll(log_lik: &Matrix) -> Result<f64> {
    let lp = pointwise_log_predictive(log_lik)?;
    Ok(-lp.iter().sum::<f64>() / lp.len() as f64)
}

/// The paper's SVGD/ASVGD NLL artifact: mean_{s,i}[−ℓ_{s,i}], the average per-draw
/// (per-particle) NLL rather than the mixture predictive (docs/algorithms.md §8). Always ≥ [`mixture_nll`]
/// by Jensen's inequality.
///
/// # Errors
/// [`Error::Data`] if `log_lik` is empty or holds NaN or +∞.
pub fn per_draw_nll(log_lik: &Matrix) -> Result<f64> {
    check_log_lik("per_draw_nll", log_lik)?;
    let s: f64 = log_lik.as_slice().iter().sum();
    Ok(-s / log_lik.as_slice().len() as f64)
}

fn region_sum(context: &str, per_point: &[f64], region: Option<&[usize]>) -> Result<f64> {
    match region {
        None => Ok(per_point.iter().sum()),
        Some(idx) => {
            let mut total = 0.0;
            for &i in idx {
                let v = per_point.get(i).ok_or_else(|| {
                    Error::shape(
                        format!("{context}, region index"),
                        format!("< n = {}", per_point.len()),
                        i,
                    )
                })?;
                total += v;
            }
            Ok(total)
        }
    }
}

/// LPPD over a region: Σ_{i∈region} log((1/S) Σ_s p(y_i|θ_s)) (docs/algorithms.md §8), from the S×n
/// log-likelihood matrix. `region` lists point (column) indices; `None` means all n points.
///
/// # Errors
/// [`Error::Data`] if `log_lik` is empty or holds NaN or +∞; [`Error::Shape`] if a region index
/// is ≥ n.
pub fn lppd(log_lik: &Matrix, region: Option<&[usize]>) -> Result<f64> {
    let lp = pointwise_log_predictive(log_lik)?;
    region_sum("lppd", &lp, region)
}

/// The paper's SVGD LPPD artifact: Σ_{i∈region} log Σ_s p(y_i|θ_s), without the 1/S
/// (a log-sum; docs/algorithms.md §8). Equals [`lppd`] + |region|·ln S.
///
/// # Errors
/// As [`lppd`].
pub fn lppd_log_sum(log_lik: &Matrix, region: Option<&[usize]>) -> Result<f64> {
    check_log_lik("lppd_log_sum", log_lik)?;
    let lse = column_logsumexp(log_lik);
    region_sum("lppd_log_sum", &lse, region)
}

/// A closed interval [lower, upper].
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower end.
    pub lower: f64,
    /// Upper end.
    pub upper: f64,
}

impl Interval {
    /// upper − lower.
    pub fn width(&self) -> f64 {
        self.upper - self.lower
    }

    /// Whether lower ≤ v ≤ upper.
    pub fn contains(&self, v: f64) -> bool {
        self.lower <= v && v <= self.upper
    }
}

fn check_mass(mass: f64) -> Result<()> {
    if !(mass > 0.0 && mass < 1.0) {
        return Err(Error::invalid(
            "mass",
            format!("must be in (0, 1), got {mass}"),
        ));
    }
    Ok(())
}

fn sorted_sample(context: &str, samples: &[f64]) -> Result<Vec<f64>> {
    if samples.is_empty() {
        return Err(Error::Data(format!("{context}: empty sample")));
    }
    if samples.iter().any(|v| !v.is_finite()) {
        return Err(Error::Data(format!("{context}: non-finite sample")));
    }
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    Ok(s)
}

fn hdi_sorted(sorted: &[f64], mass: f64) -> Result<Interval> {
    let n = sorted.len();
    let w = (mass * n as f64).floor() as usize;
    if w >= n {
        return Err(Error::invalid(
            "mass",
            format!("⌊mass·S⌋ = {w} must be < S = {n}"),
        ));
    }
    // widths_j = sorted[j + w] − sorted[j], j = 0..S−w; first minimum wins.
    let mut best = 0;
    let mut best_width = f64::INFINITY;
    for j in 0..n - w {
        let width = sorted[j + w] - sorted[j];
        if width < best_width {
            best_width = width;
            best = j;
        }
    }
    Ok(Interval {
        lower: sorted[best],
        upper: sorted[best + w],
    })
}

/// Highest-density interval of a sample, exactly as docs/algorithms.md §8 (NumPyro's `hpdi`):
/// sort the S values, w = ⌊mass·S⌋, `widths_j = sorted[j + w] − sorted[j]` for j = 0..S−w,
/// take the first j of minimum width; the interval is `[sorted[j], sorted[j + w]]`.
/// The paper uses mass 0.9 on y_loc (not noisy y).
///
/// # Errors
/// [`Error::Data`] if `samples` is empty or non-finite; [`Error::InvalidSettings`] (`mass`)
/// unless 0 < mass < 1 and ⌊mass·S⌋ < S.
pub fn hdi(samples: &[f64], mass: f64) -> Result<Interval> {
    check_mass(mass)?;
    let sorted = sorted_sample("hdi", samples)?;
    hdi_sorted(&sorted, mass)
}

/// [`hdi`] of every column of an S×n draw matrix (one interval per point).
///
/// # Errors
/// As [`hdi`], for any column; [`Error::Data`] if `draws` has no rows or columns.
pub fn hdi_per_point(draws: &Matrix, mass: f64) -> Result<Vec<Interval>> {
    check_mass(mass)?;
    check_draws("hdi_per_point", draws)?;
    (0..draws.cols())
        .map(|i| {
            let mut col: Vec<f64> = (0..draws.rows()).map(|s| draws.get(s, i)).collect();
            col.sort_by(f64::total_cmp);
            hdi_sorted(&col, mass)
        })
        .collect()
}

/// numpy's `lerp` as used by `np.quantile` (method 'linear').
fn lerp(a: f64, b: f64, t: f64) -> f64 {
    let diff = b - a;
    if t >= 0.5 {
        b - diff * (1.0 - t)
    } else {
        a + diff * t
    }
}

fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q;
    let lo = h.floor();
    let i = lo as usize;
    if i + 1 >= sorted.len() {
        return sorted[sorted.len() - 1];
    }
    lerp(sorted[i], sorted[i + 1], h - lo)
}

/// The q-quantile of a sample with linear interpolation (numpy's default `np.quantile`
/// method): with the sorted values x_(0..S−1), h = (S − 1)·q and the result
/// x_⌊h⌋ + (h − ⌊h⌋)(x_⌊h⌋+1 − x_⌊h⌋).
///
/// # Errors
/// [`Error::Data`] if `samples` is empty or non-finite; [`Error::InvalidSettings`] (`q`) unless
/// 0 ≤ q ≤ 1.
pub fn quantile(samples: &[f64], q: f64) -> Result<f64> {
    if !(0.0..=1.0).contains(&q) {
        return Err(Error::invalid("q", format!("must be in [0, 1], got {q}")));
    }
    let sorted = sorted_sample("quantile", samples)?;
    Ok(quantile_sorted(&sorted, q))
}

/// Central (equal-tailed) interval holding `mass`: the quantiles (1 − mass)/2 and
/// (1 + mass)/2 of the sample (see [`quantile`]); e.g. mass 0.9 gives the 5 % and 95 %
/// quantiles.
///
/// # Errors
/// [`Error::Data`] if `samples` is empty or non-finite; [`Error::InvalidSettings`] (`mass`)
/// unless 0 < mass < 1.
pub fn central_interval(samples: &[f64], mass: f64) -> Result<Interval> {
    check_mass(mass)?;
    let sorted = sorted_sample("central_interval", samples)?;
    Ok(Interval {
        lower: quantile_sorted(&sorted, (1.0 - mass) / 2.0),
        upper: quantile_sorted(&sorted, (1.0 + mass) / 2.0),
    })
}

/// [`central_interval`] of every column of an S×n draw matrix (one interval per point).
///
/// # Errors
/// As [`central_interval`]; [`Error::Data`] if `draws` has no rows or columns.
pub fn central_interval_per_point(draws: &Matrix, mass: f64) -> Result<Vec<Interval>> {
    check_mass(mass)?;
    check_draws("central_interval_per_point", draws)?;
    Ok((0..draws.cols())
        .map(|i| {
            let mut col: Vec<f64> = (0..draws.rows()).map(|s| draws.get(s, i)).collect();
            col.sort_by(f64::total_cmp);
            Interval {
                lower: quantile_sorted(&col, (1.0 - mass) / 2.0),
                upper: quantile_sorted(&col, (1.0 + mass) / 2.0),
            }
        })
        .collect())
}

/// The regression metrics of one evaluation (one split, one method).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegressionMetrics {
    /// The paper's RMSE over draws and points jointly ([`rmse`]).
    pub rmse: f64,
    /// RMSE of the predictive mean ([`rmse_of_mean`]).
    pub rmse_of_mean: f64,
    /// Proper mixture NLL ([`mixture_nll`]).
    pub nll: f64,
    /// The paper's SVGD/ASVGD per-draw NLL artifact ([`per_draw_nll`]).
    pub per_draw_nll: f64,
}

/// All [`RegressionMetrics`] for Gaussian draws: y_loc (S×n), σ (S), y (n).
///
/// For the paper's tables use `per_draw_nll` for SVGD/ASVGD and `nll` for every other method.
///
/// # Errors
/// As [`gaussian_log_lik`].
pub fn regression_metrics(
    y_loc: &Matrix,
    noise_scale: &[f64],
    y: &[f64],
) -> Result<RegressionMetrics> {
    let ll = gaussian_log_lik(y_loc, noise_scale, y)?;
    Ok(RegressionMetrics {
        rmse: rmse(y_loc, y)?,
        rmse_of_mean: rmse_of_mean(y_loc, y)?,
        nll: mixture_nll(&ll)?,
        per_draw_nll: per_draw_nll(&ll)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol * (1.0 + b.abs()), "{a} vs {b}");
    }

    fn m(rows: &[Vec<f64>]) -> Matrix {
        Matrix::from_rows(rows).unwrap()
    }

    #[test]
    fn rmse_joint_vs_mean() {
        // S = 2, n = 2; y = (0, 1).
        // residuals: draw 0: (0−1, 1−1) = (−1, 0); draw 1: (0−(−1), 1−3) = (1, −2).
        // joint: sqrt((1 + 0 + 1 + 4)/4) = sqrt(1.5).
        // mean prediction (0, 2): residuals (0, −1) → sqrt(1/2).
        let y_loc = m(&[vec![1.0, 1.0], vec![-1.0, 3.0]]);
        let y = [0.0, 1.0];
        close(rmse(&y_loc, &y).unwrap(), 1.5f64.sqrt(), 1e-15);
        close(rmse_of_mean(&y_loc, &y).unwrap(), 0.5f64.sqrt(), 1e-15);
        assert!(rmse(&y_loc, &[0.0]).is_err());
        assert!(rmse(&Matrix::zeros(0, 2), &[0.0, 0.0]).is_err());
    }

    #[test]
    fn gaussian_log_lik_values() {
        // log N(1; 0, 2²) = −ln 2 − ½ ln 2π − 1/8.
        let ll = gaussian_log_lik(&m(&[vec![0.0]]), &[2.0], &[1.0]).unwrap();
        close(ll.get(0, 0), -(2f64.ln()) - LN_SQRT_2PI - 0.125, 1e-15);
        assert!(gaussian_log_lik(&m(&[vec![0.0]]), &[0.0], &[1.0]).is_err());
        assert!(gaussian_log_lik(&m(&[vec![0.0]]), &[1.0, 1.0], &[1.0]).is_err());
        assert!(gaussian_log_lik(&m(&[vec![f64::NAN]]), &[1.0], &[1.0]).is_err());
    }

    #[test]
    fn nll_proper_vs_artifact() {
        // Likelihoods p_{s,i}: draw 0: (0.5, 0.1), draw 1: (0.1, 0.3). S = 2, n = 2.
        // proper: −½[ln((0.5+0.1)/2) + ln((0.1+0.3)/2)] = −½[ln 0.3 + ln 0.2]
        // artifact: −¼[ln 0.5 + ln 0.1 + ln 0.1 + ln 0.3]
        let p = [[0.5, 0.1], [0.1, 0.3]];
        let ll = Matrix::from_fn(2, 2, |s, i| f64::ln(p[s][i]));
        let proper = -(0.3f64.ln() + 0.2f64.ln()) / 2.0;
        let artifact = -(0.5f64.ln() + 0.1f64.ln() + 0.1f64.ln() + 0.3f64.ln()) / 4.0;
        close(mixture_nll(&ll).unwrap(), proper, 1e-14);
        close(per_draw_nll(&ll).unwrap(), artifact, 1e-14);
        assert!(per_draw_nll(&ll).unwrap() > mixture_nll(&ll).unwrap());
        // With one draw the two agree.
        let one = Matrix::from_fn(1, 2, |_, i| f64::ln(p[0][i]));
        close(
            mixture_nll(&one).unwrap(),
            per_draw_nll(&one).unwrap(),
            1e-15,
        );
        // A zero likelihood in one draw only is fine for the mixture.
        let z = m(&[vec![f64::NEG_INFINITY], vec![0.5f64.ln()]]);
        close(mixture_nll(&z).unwrap(), -(0.25f64.ln()), 1e-15);
        assert_eq!(per_draw_nll(&z).unwrap(), f64::INFINITY);
        assert!(mixture_nll(&m(&[vec![f64::NAN]])).is_err());
    }

    #[test]
    fn gaussian_metrics_bundle() {
        // Two draws, equal σ = 1, one point y = 0, means ±1: both draws have density
        // N(0; ±1, 1) = e^{−½}/√(2π), so proper and per-draw NLL are both ½ + ln √(2π).
        let r = regression_metrics(&m(&[vec![1.0], vec![-1.0]]), &[1.0, 1.0], &[0.0]).unwrap();
        close(r.nll, 0.5 + LN_SQRT_2PI, 1e-15);
        close(r.per_draw_nll, 0.5 + LN_SQRT_2PI, 1e-15);
        close(r.rmse, 1.0, 1e-15);
        close(r.rmse_of_mean, 0.0, 1e-15);
    }

    #[test]
    fn lppd_artifact_is_proper_plus_n_ln_s() {
        let p = [[0.5, 0.1, 0.2], [0.1, 0.3, 0.2], [0.4, 0.2, 0.05]];
        let ll = Matrix::from_fn(3, 3, |s, i| f64::ln(p[s][i]));
        // proper over all: ln(1.0/3) + ln(0.6/3) + ln(0.45/3)
        let expected = (1.0f64 / 3.0).ln() + (0.6f64 / 3.0).ln() + (0.45f64 / 3.0).ln();
        close(lppd(&ll, None).unwrap(), expected, 1e-14);
        // region {0, 2}
        let region = [0usize, 2];
        let proper = lppd(&ll, Some(&region)).unwrap();
        close(proper, (1.0f64 / 3.0).ln() + (0.45f64 / 3.0).ln(), 1e-14);
        let artifact = lppd_log_sum(&ll, Some(&region)).unwrap();
        close(artifact, proper + 2.0 * 3f64.ln(), 1e-14);
        close(
            lppd_log_sum(&ll, None).unwrap(),
            lppd(&ll, None).unwrap() + 3.0 * 3f64.ln(),
            1e-14,
        );
        assert!(lppd(&ll, Some(&[3])).is_err());
        // mixture NLL = −lppd / n.
        close(mixture_nll(&ll).unwrap(), -expected / 3.0, 1e-14);
    }

    #[test]
    fn hdi_known_sample() {
        // S = 10, w = ⌊0.9·10⌋ = 9: one candidate (j = 0 only, S − w = 1), so the 90 % HDI
        // of 10 values spans all of them: sorted = [0, 1, …, 8, 20] → [0, 20].
        let x = [5.0, 3.0, 20.0, 0.0, 1.0, 8.0, 2.0, 7.0, 6.0, 4.0];
        assert_eq!(
            hdi(&x, 0.9).unwrap(),
            Interval {
                lower: 0.0,
                upper: 20.0
            }
        );
        // S = 20: sorted = [−1, 0, 1, …, 17, 18], w = 18, candidates j ∈ {0, 1}:
        // widths 17 − (−1) = 18 and 18 − 0 = 18, a tie → the first, j = 0 → [−1, 17].
        let z: Vec<f64> = std::iter::once(-1.0)
            .chain((0..=18).map(f64::from))
            .rev()
            .collect();
        assert_eq!(
            hdi(&z, 0.9).unwrap(),
            Interval {
                lower: -1.0,
                upper: 17.0
            }
        );
        // mass 0.5: w = 5, widths sorted[j+5] − sorted[j] for j = 0..5: 5,5,5,5,16
        // → first minimum j = 0 → [0, 5].
        assert_eq!(
            hdi(&x, 0.5).unwrap(),
            Interval {
                lower: 0.0,
                upper: 5.0
            }
        );
        // Skewed: sorted [−30, 0, 0.5, 1, 1.2, 1.3, 1.4, 2, 3, 4].
        // mass 0.7: w = 7, widths: 2 − (−30) = 32, 3 − 0 = 3, 4 − 0.5 = 3.5 → [0, 3].
        let y = [1.0, -30.0, 0.5, 4.0, 1.2, 0.0, 3.0, 1.3, 2.0, 1.4];
        assert_eq!(
            hdi(&y, 0.7).unwrap(),
            Interval {
                lower: 0.0,
                upper: 3.0
            }
        );
        assert!(hdi(&y, 1.0).is_err());
        assert!(hdi(&y, 0.0).is_err());
        assert!(hdi(&[], 0.9).is_err());
        // Per point: column 0 is x, column 1 is y.
        let d = Matrix::from_fn(10, 2, |s, i| if i == 0 { x[s] } else { y[s] });
        let h = hdi_per_point(&d, 0.7).unwrap();
        assert_eq!(
            h[1],
            Interval {
                lower: 0.0,
                upper: 3.0
            }
        );
        // x sorted, w = 7: widths 7, 7, 18 → [0, 7].
        assert_eq!(
            h[0],
            Interval {
                lower: 0.0,
                upper: 7.0
            }
        );
    }

    #[test]
    fn quantiles_like_numpy() {
        // np.quantile([0,1,2,3,4,5,6,7,8,20], [0.05, 0.95]) = [0.45, 14.6]
        // (h = 0.45 → 0 + 0.45·1; h = 8.55 → 8 + 0.55·12 = 14.6)
        let x = [5.0, 3.0, 20.0, 0.0, 1.0, 8.0, 2.0, 7.0, 6.0, 4.0];
        close(quantile(&x, 0.05).unwrap(), 0.45, 1e-14);
        close(quantile(&x, 0.95).unwrap(), 14.6, 1e-14);
        close(quantile(&x, 0.5).unwrap(), 4.5, 1e-15);
        close(quantile(&x, 0.0).unwrap(), 0.0, 0.0);
        close(quantile(&x, 1.0).unwrap(), 20.0, 0.0);
        let c = central_interval(&x, 0.9).unwrap();
        close(c.lower, 0.45, 1e-14);
        close(c.upper, 14.6, 1e-14);
        assert!(c.contains(4.0) && !c.contains(15.0));
        close(c.width(), 14.15, 1e-14);
        let d = Matrix::from_fn(10, 1, |s, _| x[s]);
        assert_eq!(central_interval_per_point(&d, 0.9).unwrap()[0], c);
        assert!(quantile(&x, 1.5).is_err());
        assert!(central_interval(&x, 1.0).is_err());
    }
}
