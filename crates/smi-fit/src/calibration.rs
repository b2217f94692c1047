//! Calibration measures of predictions against test targets, as `smi predict --metrics`
//! reports them: the empirical coverage of central predictive intervals at several nominal
//! masses (regression), and the reliability table, expected calibration error (ECE) and mean
//! top-class confidence (classification). Pure functions of per-row values.

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};
use smi::metrics::central_interval;

/// The nominal masses of the central predictive intervals whose coverage is reported.
pub const COVERAGE_LEVELS: [f64; 4] = [0.5, 0.8, 0.9, 0.95];

/// Equal-width bins of top-class confidence on [0, 1] in the reliability table.
pub const RELIABILITY_BINS: usize = 10;

/// How many standard errors a difference must exceed to be called over- or underconfidence.
pub const VERDICT_SIGMAS: f64 = 2.0;

/// The smallest difference called over- or underconfidence whatever the number of rows (a
/// coverage or probability of 0.01: on many rows smaller differences are significant, but
/// matter to no one).
pub const VERDICT_FLOOR: f64 = 0.01;

/// The empirical coverage of the central predictive interval of one nominal mass.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    /// The nominal mass of the central interval, in (0, 1).
    pub level: f64,
    /// The fraction of the scored rows whose target lies inside its interval.
    pub observed: f64,
    /// The number of those rows.
    pub inside: usize,
}

/// One bin of a reliability table: the rows whose top-class confidence lies in
/// `[lower, upper)` (the last bin includes 1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReliabilityBin {
    /// The bin's lower edge.
    pub lower: f64,
    /// The bin's upper edge.
    pub upper: f64,
    /// Rows in the bin.
    pub count: usize,
    /// Their mean top-class confidence (`None` for an empty bin).
    pub mean_confidence: Option<f64>,
    /// The fraction of them whose top class is the true class (`None` for an empty bin).
    pub accuracy: Option<f64>,
}

/// For each mass in `levels` (each in (0, 1)), whether `y` lies inside the central interval
/// of that mass of the predictive sample `samples` (the interval of
/// [`smi::metrics::central_interval`], linearly interpolated quantiles, as `smi predict`
/// writes it). A sorted `samples` is fastest (it is sorted again in linear time).
///
/// # Errors
/// An empty or non-finite sample, or a mass outside (0, 1).
pub fn central_hits(samples: &[f64], y: f64, levels: &[f64]) -> Result<Vec<bool>> {
    levels
        .iter()
        .map(|&l| {
            let iv = central_interval(samples, l)?;
            Ok(iv.lower <= y && y <= iv.upper)
        })
        .collect()
}

/// The coverage table of `rows` scored rows of which `inside[j]` lay inside their central
/// interval of mass `levels[j]`.
///
/// # Errors
/// `levels` and `inside` of different lengths, no rows, or a count above `rows`.
pub fn coverage_table(levels: &[f64], inside: &[usize], rows: usize) -> Result<Vec<Coverage>> {
    if levels.len() != inside.len() {
        bail!("{} levels but {} counts", levels.len(), inside.len());
    }
    if rows == 0 {
        bail!("no rows to score");
    }
    if let Some(k) = inside.iter().find(|&&k| k > rows) {
        bail!("{k} rows inside an interval, of {rows}");
    }
    Ok(levels
        .iter()
        .zip(inside)
        .map(|(&level, &k)| Coverage {
            level,
            observed: k as f64 / rows as f64,
            inside: k,
        })
        .collect())
}

/// The mean absolute difference between observed and nominal coverage (`None` for an empty
/// table): 0 for intervals whose coverage matches their nominal mass at every level.
pub fn coverage_error(table: &[Coverage]) -> Option<f64> {
    mean(table.iter().map(|c| (c.observed - c.level).abs()))
}

/// The mean signed difference observed − nominal (positive: intervals too wide).
fn coverage_bias(table: &[Coverage]) -> Option<f64> {
    mean(table.iter().map(|c| c.observed - c.level))
}

/// One line that says whether the intervals of `table` (over `rows` rows) are too wide
/// (underconfident), too narrow (overconfident) or match their nominal masses within
/// sampling error: the mean signed difference observed − nominal against
/// [`VERDICT_SIGMAS`] times the mean binomial standard error √(level(1 − level)/rows), and at
/// least [`VERDICT_FLOOR`].
pub fn coverage_verdict(table: &[Coverage], rows: usize) -> String {
    let (Some(bias), Some(se)) = (
        coverage_bias(table),
        mean(
            table
                .iter()
                .map(|c| (c.level * (1.0 - c.level) / rows.max(1) as f64).sqrt()),
        ),
    ) else {
        return "no intervals scored".into();
    };
    let tol = (VERDICT_SIGMAS * se).max(VERDICT_FLOOR);
    let pts = |v: f64| format!("{:.1}", 100.0 * v);
    if bias > tol {
        format!(
            "underconfident: intervals too wide, coverage {} percentage points above nominal \
             on average (tolerance ± {})",
            pts(bias),
            pts(tol)
        )
    } else if bias < -tol {
        format!(
            "overconfident: intervals too narrow, coverage {} percentage points below nominal \
             on average (tolerance ± {})",
            pts(-bias),
            pts(tol)
        )
    } else {
        format!(
            "coverage matches nominal: {:+.1} percentage points on average (tolerance ± {})",
            100.0 * bias,
            pts(tol)
        )
    }
}

/// The reliability table of `bins` equal-width bins of `confidence` on [0, 1]: per bin the
/// count, mean confidence and accuracy of the rows (`correct[i]`: the top class of row i is
/// its true class). A confidence of exactly 1 falls in the last bin.
///
/// # Errors
/// No bins, slices of different lengths, or a confidence outside [0, 1].
pub fn reliability(
    confidence: &[f64],
    correct: &[bool],
    bins: usize,
) -> Result<Vec<ReliabilityBin>> {
    if bins == 0 {
        bail!("a reliability table needs at least one bin");
    }
    if confidence.len() != correct.len() {
        bail!(
            "{} confidences but {} outcomes",
            confidence.len(),
            correct.len()
        );
    }
    let mut sum = vec![(0usize, 0.0f64, 0usize); bins];
    for (&c, &ok) in confidence.iter().zip(correct) {
        if !(0.0..=1.0).contains(&c) {
            bail!("confidence {c} is not in [0, 1]");
        }
        let b = ((c * bins as f64) as usize).min(bins - 1);
        sum[b].0 += 1;
        sum[b].1 += c;
        sum[b].2 += usize::from(ok);
    }
    Ok(sum
        .into_iter()
        .enumerate()
        .map(|(b, (count, conf, hits))| ReliabilityBin {
            lower: b as f64 / bins as f64,
            upper: (b + 1) as f64 / bins as f64,
            count,
            mean_confidence: (count > 0).then(|| conf / count as f64),
            accuracy: (count > 0).then(|| hits as f64 / count as f64),
        })
        .collect())
}

/// The expected calibration error of a reliability table: the count-weighted mean of
/// |accuracy − mean confidence| over the bins (`None` when every bin is empty).
pub fn ece(table: &[ReliabilityBin]) -> Option<f64> {
    let n: usize = table.iter().map(|b| b.count).sum();
    if n == 0 {
        return None;
    }
    let sum: f64 = table
        .iter()
        .filter_map(|b| Some(b.count as f64 * (b.accuracy? - b.mean_confidence?).abs()))
        .sum();
    Some(sum / n as f64)
}

/// One line comparing the mean top-class `confidence` with the `accuracy` of the same rows:
/// "underconfident: mean confidence 0.910 < accuracy 0.970 (…)" when the confidence is lower
/// by more than [`VERDICT_SIGMAS`] standard errors (and [`VERDICT_FLOOR`]), "overconfident"
/// when higher, and a match otherwise. The standard error is that of the accuracy if the
/// confidences were right, √(Σ c(1 − c))/n.
pub fn confidence_verdict(confidence: &[f64], accuracy: f64) -> String {
    let n = confidence.len();
    let Some(mc) = mean(confidence.iter().copied()) else {
        return "no rows scored".into();
    };
    let se = confidence.iter().map(|c| c * (1.0 - c)).sum::<f64>().sqrt() / n as f64;
    let tol = (VERDICT_SIGMAS * se).max(VERDICT_FLOOR);
    let gap = mc - accuracy;
    let tail = format!("(by {:.3}; tolerance ± {tol:.3})", gap.abs());
    if gap < -tol {
        format!("underconfident: mean confidence {mc:.3} < accuracy {accuracy:.3} {tail}")
    } else if gap > tol {
        format!("overconfident: mean confidence {mc:.3} > accuracy {accuracy:.3} {tail}")
    } else {
        format!(
            "confidence matches accuracy: mean confidence {mc:.3}, accuracy {accuracy:.3} \
             {tail}"
        )
    }
}

/// The mean of `v` (`None` when empty).
fn mean(v: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, s) = v.fold((0usize, 0.0), |(n, s), x| (n + 1, s + x));
    (n > 0).then(|| s / n as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn normal(rng: &mut ChaCha8Rng) -> f64 {
        crate::predict::std_normal(rng)
    }

    /// The standard normal quantiles z with Φ(z) = (1 + level)/2 for [`COVERAGE_LEVELS`].
    const Z: [f64; 4] = [
        0.674_489_750_196_081_7,
        1.281_551_565_544_600_4,
        1.644_853_626_951_472_2,
        1.959_963_984_540_054,
    ];

    #[test]
    fn hand_computed_reliability_and_ece() {
        // Bin 9 (0.9–1]: four rows of confidence 0.95, three correct → acc 0.75, gap 0.2.
        // Bin 6 (0.6–0.7): two rows of confidence 0.65, both correct → gap 0.35.
        // ECE = (4·0.2 + 2·0.35)/6 = 1.5/6 = 0.25.
        let conf = [0.95, 0.95, 0.95, 0.95, 0.65, 0.65];
        let ok = [true, true, true, false, true, true];
        let t = reliability(&conf, &ok, 10).unwrap();
        assert_eq!(t.len(), 10);
        assert_eq!(t[9].count, 4);
        assert_eq!(t[9].accuracy, Some(0.75));
        assert_eq!(t[6].count, 2);
        assert_eq!(t[0].mean_confidence, None);
        assert!((ece(&t).unwrap() - 0.25).abs() < 1e-12);
        // Confidence 1 falls in the last bin; 0 in the first.
        let t = reliability(&[1.0, 0.0], &[true, false], 10).unwrap();
        assert_eq!((t[9].count, t[0].count), (1, 1));
        assert_eq!(ece(&t), Some(0.0));
        assert!(reliability(&[1.5], &[true], 10).is_err());
        assert!(reliability(&[0.5], &[true, true], 10).is_err());
        assert_eq!(ece(&reliability(&[], &[], 10).unwrap()), None);
    }

    /// Confidence c ~ U(0.5, 1), correct with probability c: calibrated by construction, so
    /// the ECE is only sampling noise. With n = 100 000 rows over 5 bins (≈ 20 000 each,
    /// accuracy sd ≤ √(0.25/20 000) ≈ 0.0035) the expected ECE is about √(2/π)·0.003 ≈ 0.0025;
    /// 0.01 is about 3 of those sds. The verdict is a match: the mean confidence differs from
    /// the accuracy by sampling noise only (sd ≈ 0.0013, below the 0.01 floor).
    #[test]
    fn calibrated_synthetic_classifier_has_ece_near_zero() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let n = 100_000;
        let conf: Vec<f64> = (0..n).map(|_| rng.random_range(0.5..1.0)).collect();
        let ok: Vec<bool> = conf.iter().map(|&c| rng.random::<f64>() < c).collect();
        let e = ece(&reliability(&conf, &ok, RELIABILITY_BINS).unwrap()).unwrap();
        assert!(e < 0.01, "ECE {e}");
        let acc = ok.iter().filter(|&&b| b).count() as f64 / n as f64;
        let v = confidence_verdict(&conf, acc);
        assert!(v.starts_with("confidence matches accuracy"), "{v}");
    }

    /// Every row claims 0.95 but is right with probability 0.75: ECE = 0.2 up to sampling
    /// noise (sd of the accuracy √(0.75·0.25/20 000) ≈ 0.003; tolerance 0.015 = 5 sd), and
    /// the verdict is overconfident; the mirror case (0.6 claimed, 0.9 right) underconfident.
    #[test]
    fn overconfident_and_underconfident_classifiers() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let n = 20_000;
        let conf = vec![0.95; n];
        let ok: Vec<bool> = (0..n).map(|_| rng.random::<f64>() < 0.75).collect();
        let e = ece(&reliability(&conf, &ok, RELIABILITY_BINS).unwrap()).unwrap();
        assert!((e - 0.2).abs() < 0.015, "ECE {e}");
        let acc = ok.iter().filter(|&&b| b).count() as f64 / n as f64;
        let v = confidence_verdict(&conf, acc);
        assert!(
            v.starts_with("overconfident: mean confidence 0.950 > accuracy"),
            "{v}"
        );

        let conf = vec![0.6; n];
        let ok: Vec<bool> = (0..n).map(|_| rng.random::<f64>() < 0.9).collect();
        let acc = ok.iter().filter(|&&b| b).count() as f64 / n as f64;
        let v = confidence_verdict(&conf, acc);
        assert!(
            v.starts_with("underconfident: mean confidence 0.600 < accuracy"),
            "{v}"
        );
    }

    /// Exact Gaussian intervals μ ± zσ on y ~ N(μ, σ²): each row is inside with probability
    /// `level`, so the coverage is Binomial(n, level)/n; n = 4000 gives sd ≤ 0.0079, and the
    /// tolerance is 4 sd of each level.
    #[test]
    fn exact_gaussian_intervals_cover_their_level() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let n = 4000;
        let mut inside = [0usize; 4];
        for _ in 0..n {
            let (mu, sigma) = (rng.random_range(-5.0..5.0), rng.random_range(0.1..3.0));
            let y = mu + sigma * normal(&mut rng);
            for (k, z) in inside.iter_mut().zip(Z) {
                *k += usize::from((y - mu).abs() <= z * sigma);
            }
        }
        let t = coverage_table(&COVERAGE_LEVELS, &inside, n).unwrap();
        for c in &t {
            let sd = (c.level * (1.0 - c.level) / n as f64).sqrt();
            assert!((c.observed - c.level).abs() < 4.0 * sd, "{c:?}");
        }
        assert!(coverage_error(&t).unwrap() < 0.02);
        let v = coverage_verdict(&t, n);
        assert!(v.starts_with("coverage matches nominal"), "{v}");
    }

    /// The intervals from predictive draws, as `smi predict` computes them: 400 draws from
    /// the true N(μ, σ²) per row. The draw-based quantiles add a little noise (the 0.95
    /// interval's coverage moves by about ±0.3 %), so the tolerance is 4 binomial sd plus 0.01.
    /// Intervals of half the width are overconfident: a 90 % interval then covers
    /// 2Φ(1.645/2) − 1 ≈ 0.59.
    #[test]
    fn draw_based_intervals_cover_their_level_and_narrow_ones_do_not() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let (n, s) = (1500, 400);
        let (mut good, mut narrow) = ([0usize; 4], [0usize; 4]);
        for _ in 0..n {
            let (mu, sigma) = (rng.random_range(-5.0..5.0), rng.random_range(0.1..3.0));
            let mut draws: Vec<f64> = (0..s).map(|_| mu + sigma * normal(&mut rng)).collect();
            draws.sort_by(f64::total_cmp);
            let y = mu + sigma * normal(&mut rng);
            let hits = central_hits(&draws, y, &COVERAGE_LEVELS).unwrap();
            let half: Vec<f64> = draws.iter().map(|d| mu + (d - mu) / 2.0).collect();
            let hits_narrow = central_hits(&half, y, &COVERAGE_LEVELS).unwrap();
            for j in 0..4 {
                good[j] += usize::from(hits[j]);
                narrow[j] += usize::from(hits_narrow[j]);
            }
        }
        let t = coverage_table(&COVERAGE_LEVELS, &good, n).unwrap();
        for c in &t {
            let sd = (c.level * (1.0 - c.level) / n as f64).sqrt();
            assert!((c.observed - c.level).abs() < 4.0 * sd + 0.01, "{c:?}");
        }
        let t = coverage_table(&COVERAGE_LEVELS, &narrow, n).unwrap();
        // 2Φ(z/2) − 1 for the four z: 0.2657, 0.4778, 0.5899, 0.6723 (sd ≤ 0.013 at n = 1500).
        for (c, want) in t.iter().zip([0.2657, 0.4778, 0.5899, 0.6723]) {
            assert!((c.observed - want).abs() < 0.06, "{c:?} vs {want}");
        }
        let v = coverage_verdict(&t, n);
        assert!(v.starts_with("overconfident: intervals too narrow"), "{v}");
        let e = coverage_error(&t).unwrap();
        // Mean of (0.5 − 0.2657, 0.8 − 0.4778, 0.9 − 0.5899, 0.95 − 0.6723) = 0.2861.
        assert!((e - 0.2861).abs() < 0.04, "{e}");
    }

    #[test]
    fn coverage_table_checks_its_inputs() {
        assert!(coverage_table(&[0.5], &[1, 2], 3).is_err());
        assert!(coverage_table(&[0.5], &[1], 0).is_err());
        assert!(coverage_table(&[0.5], &[4], 3).is_err());
        let t = coverage_table(&[0.5, 0.9], &[1, 3], 4).unwrap();
        assert_eq!(t[0].observed, 0.25);
        // |0.25 − 0.5| and |0.75 − 0.9|: mean 0.2.
        assert!((coverage_error(&t).unwrap() - 0.2).abs() < 1e-12);
        assert_eq!(coverage_error(&[]), None);
        assert!(central_hits(&[1.0, 2.0], 1.5, &[1.5]).is_err());
    }
}
