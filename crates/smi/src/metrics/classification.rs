//! Classification metrics per posterior draw (docs/algorithms.md §8, MNIST): NLL, sampled-label accuracy and
//! confidence, Brier, the paper's ECE/MCE (with its empty-bin artifacts), argmax accuracy and
//! the standard count-weighted ECE.

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::stats::MeanStd;
use crate::error::{Error, Result};

/// Number of confidence bins the paper's ECE/MCE use.
pub const PAPER_BINS: usize = 100;

/// Tolerance on |Σ_k p_k − 1| accepted by [`ClassProbs::new`].
const SUM_TOLERANCE: f64 = 1e-6;

/// Class probabilities of S draws × n points × C classes.
///
/// Stored row-major: entry (s, i, k) is `data[(s·n + i)·C + k]`, i.e. one (S·n)×C matrix whose
/// row s·n + i is the probability vector p_{s,i} of point i under draw s.
/// Invariant (checked by the constructors): S, n, C ≥ 1, every entry is in [0, 1] and every
/// row sums to 1 within 1e-6.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassProbs {
    draws: usize,
    n: usize,
    classes: usize,
    data: Vec<f64>,
}

impl ClassProbs {
    /// Wraps S·n·C probabilities (layout in the type doc).
    ///
    /// # Errors
    /// [`Error::Data`] if a size is zero, an entry is outside [0, 1] (or NaN), or a row does
    /// not sum to 1 within 1e-6; [`Error::Shape`] if `data.len() != draws·n·classes`.
    pub fn new(draws: usize, n: usize, classes: usize, data: Vec<f64>) -> Result<Self> {
        if draws == 0 || n == 0 || classes == 0 {
            return Err(Error::Data(format!(
                "ClassProbs: need S, n, C ≥ 1, got {draws}, {n}, {classes}"
            )));
        }
        let want = draws * n * classes;
        if data.len() != want {
            return Err(Error::shape(
                "ClassProbs::new",
                format!("S·n·C = {draws}·{n}·{classes} = {want} values"),
                data.len(),
            ));
        }
        for (r, row) in data.chunks_exact(classes).enumerate() {
            if let Some(v) = row.iter().find(|v| !(0.0..=1.0).contains(*v)) {
                return Err(Error::Data(format!(
                    "ClassProbs: probability {v} outside [0, 1] (draw {}, point {})",
                    r / n,
                    r % n
                )));
            }
            let sum: f64 = row.iter().sum();
            if (sum - 1.0).abs() > SUM_TOLERANCE {
                return Err(Error::Data(format!(
                    "ClassProbs: probabilities sum to {sum}, not 1 (draw {}, point {})",
                    r / n,
                    r % n
                )));
            }
        }
        Ok(ClassProbs {
            draws,
            n,
            classes,
            data,
        })
    }

    /// Softmax of S·n·C logits (same layout), computed stably as exp(z − max z)/Σ exp(z − max z).
    ///
    /// # Errors
    /// [`Error::Data`] if a size is zero or a logit is NaN or +∞ (−∞ means probability 0,
    /// but not all of a row); [`Error::Shape`] if `logits.len() != draws·n·classes`.
    pub fn from_logits(draws: usize, n: usize, classes: usize, logits: &[f64]) -> Result<Self> {
        if classes == 0 || logits.len() != draws * n * classes {
            return Err(Error::shape(
                "ClassProbs::from_logits",
                format!(
                    "S·n·C = {draws}·{n}·{classes} = {} values",
                    draws * n * classes
                ),
                logits.len(),
            ));
        }
        let mut data = Vec::with_capacity(logits.len());
        for row in logits.chunks_exact(classes) {
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if row.iter().any(|v| v.is_nan()) || !max.is_finite() {
                return Err(Error::Data(
                    "ClassProbs::from_logits: a logit row holds NaN, +inf or only -inf".into(),
                ));
            }
            let start = data.len();
            data.extend(row.iter().map(|z| (z - max).exp()));
            let sum: f64 = data[start..].iter().sum();
            data[start..].iter_mut().for_each(|p| *p /= sum);
        }
        ClassProbs::new(draws, n, classes, data)
    }

    /// Number of draws S.
    pub fn draws(&self) -> usize {
        self.draws
    }

    /// Number of points n.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Number of classes C.
    pub fn classes(&self) -> usize {
        self.classes
    }

    /// The S·n·C buffer (layout in the type doc).
    pub fn as_slice(&self) -> &[f64] {
        &self.data
    }

    /// p_{s,i}, the C probabilities of point i under draw s. Panics when out of bounds, like
    /// slice indexing.
    pub fn probs(&self, s: usize, i: usize) -> &[f64] {
        let start = (s * self.n + i) * self.classes;
        &self.data[start..start + self.classes]
    }

    /// The mixture predictive (1/S) Σ_s p_{s,i} as a single-draw `ClassProbs` (S = 1).
    pub fn mean_over_draws(&self) -> ClassProbs {
        let width = self.n * self.classes;
        let mut data = vec![0.0; width];
        for draw in self.data.chunks_exact(width) {
            for (d, p) in data.iter_mut().zip(draw) {
                *d += p;
            }
        }
        let s = self.draws as f64;
        data.iter_mut().for_each(|d| *d /= s);
        ClassProbs {
            draws: 1,
            n: self.n,
            classes: self.classes,
            data,
        }
    }

    fn check_labels(&self, labels: &[usize]) -> Result<()> {
        if labels.len() != self.n {
            return Err(Error::shape("classification labels", self.n, labels.len()));
        }
        if let Some(i) = labels.iter().position(|&y| y >= self.classes) {
            return Err(Error::Data(format!(
                "label {} of point {i} is not below C = {}",
                labels[i], self.classes
            )));
        }
        Ok(())
    }

    /// Per draw: (conf_i = max_k p_{s,i,k}, correct_i = [argmax_k p_{s,i,k} = y_i]); the first
    /// maximum wins, as numpy's `argmax`.
    fn conf_correct(&self, s: usize, labels: &[usize]) -> (Vec<f64>, Vec<bool>) {
        (0..self.n)
            .map(|i| {
                let (k, c) = argmax(self.probs(s, i));
                (c, k == labels[i])
            })
            .unzip()
    }
}

/// (index, value) of the first maximum.
fn argmax(p: &[f64]) -> (usize, f64) {
    let mut best = (0, f64::NEG_INFINITY);
    for (k, &v) in p.iter().enumerate() {
        if v > best.1 {
            best = (k, v);
        }
    }
    best
}

/// Per-draw NLL_s = `−(1/n) Σ_i ln p_{s,i}[y_i]` (docs/algorithms.md §8). Returns S values (+∞ where a true
/// label has probability 0).
///
/// # Errors
/// [`Error::Shape`] if `labels.len() != n`; [`Error::Data`] if a label is ≥ C.
pub fn nll_per_draw(probs: &ClassProbs, labels: &[usize]) -> Result<Vec<f64>> {
    mean_per_draw(probs, labels, |p, y| -p[y].ln())
}

/// (1/n) Σ_i f(p_{s,i}, y_i) for every draw s, after checking the labels.
fn mean_per_draw(
    probs: &ClassProbs,
    labels: &[usize],
    f: impl Fn(&[f64], usize) -> f64,
) -> Result<Vec<f64>> {
    probs.check_labels(labels)?;
    Ok((0..probs.draws)
        .map(|s| {
            let total: f64 = labels
                .iter()
                .enumerate()
                .map(|(i, &y)| f(probs.probs(s, i), y))
                .sum();
            total / probs.n as f64
        })
        .collect())
}

/// Accuracy and confidence per draw with sampled labels (see [`sampled_accuracy_confidence`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SampledAccuracy {
    /// Acc_s = (1/n) Σ_i 1[ỹ_{s,i} = y_i] (S values).
    pub accuracy: Vec<f64>,
    /// Conf_s = `(1/n) Σ_i p_{s,i}[ỹ_{s,i}]` (S values).
    pub confidence: Vec<f64>,
}

/// The paper's accuracy and confidence (docs/algorithms.md §8): a label ỹ_{s,i} ~ Cat(p_{s,i}) is **sampled**
/// (not the argmax) for every draw and point, then Acc_s = (1/n) Σ_i 1[ỹ_{s,i} = y_i] and
/// Conf_s = `(1/n) Σ_i p_{s,i}[ỹ_{s,i}]` with the same labels.
///
/// Sampling is by inversion: one `rng.random::<f64>()` per (s, i), in draw-major order.
///
/// # Errors
/// [`Error::Shape`] if `labels.len() != n`; [`Error::Data`] if a label is ≥ C.
pub fn sampled_accuracy_confidence(
    probs: &ClassProbs,
    labels: &[usize],
    rng: &mut impl Rng,
) -> Result<SampledAccuracy> {
    probs.check_labels(labels)?;
    let n = probs.n as f64;
    let mut accuracy = Vec::with_capacity(probs.draws);
    let mut confidence = Vec::with_capacity(probs.draws);
    for s in 0..probs.draws {
        let (mut hits, mut conf) = (0usize, 0.0);
        for (i, &y) in labels.iter().enumerate() {
            let p = probs.probs(s, i);
            let k = sample_categorical(p, rng.random::<f64>());
            hits += usize::from(k == y);
            conf += p[k];
        }
        accuracy.push(hits as f64 / n);
        confidence.push(conf / n);
    }
    Ok(SampledAccuracy {
        accuracy,
        confidence,
    })
}

/// Inverse-CDF draw from Cat(p) with u ∈ [0, 1); never returns a zero-probability class.
fn sample_categorical(p: &[f64], u: f64) -> usize {
    let total: f64 = p.iter().sum();
    let target = u * total;
    let mut acc = 0.0;
    let mut last_positive = 0;
    for (k, &pk) in p.iter().enumerate() {
        if pk > 0.0 {
            last_positive = k;
            acc += pk;
            if target < acc {
                return k;
            }
        }
    }
    // Only reached through rounding when u·total ≥ the running sum.
    last_positive
}

/// Per-draw Brier_s = (1/n) Σ_i Σ_k (p_{s,i,k} − 1[k = y_i])² (docs/algorithms.md §8). Returns S values.
///
/// # Errors
/// [`Error::Shape`] if `labels.len() != n`; [`Error::Data`] if a label is ≥ C.
pub fn brier_per_draw(probs: &ClassProbs, labels: &[usize]) -> Result<Vec<f64>> {
    mean_per_draw(probs, labels, |p, y| {
        p.iter()
            .enumerate()
            .map(|(k, &pk)| {
                let t = if k == y { 1.0 } else { 0.0 };
                (pk - t) * (pk - t)
            })
            .sum::<f64>()
    })
}

/// Standard per-draw accuracy with the argmax label: (1/n) Σ_i 1[argmax_k p_{s,i,k} = y_i]
/// (first maximum on ties). Returns S values.
///
/// # Errors
/// [`Error::Shape`] if `labels.len() != n`; [`Error::Data`] if a label is ≥ C.
pub fn argmax_accuracy_per_draw(probs: &ClassProbs, labels: &[usize]) -> Result<Vec<f64>> {
    probs.check_labels(labels)?;
    Ok((0..probs.draws)
        .map(|s| {
            let (_, correct) = probs.conf_correct(s, labels);
            correct.iter().filter(|&&c| c).count() as f64 / probs.n as f64
        })
        .collect())
}

/// Expected and maximum calibration error of one draw.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Expected calibration error.
    pub ece: f64,
    /// Maximum calibration error.
    pub mce: f64,
}

fn check_conf_correct(context: &str, conf: &[f64], correct: &[bool], bins: usize) -> Result<()> {
    if bins == 0 {
        return Err(Error::invalid("bins", "need at least one bin"));
    }
    if conf.is_empty() {
        return Err(Error::Data(format!("{context}: no points")));
    }
    if correct.len() != conf.len() {
        return Err(Error::shape(
            format!("{context}, correct"),
            conf.len(),
            correct.len(),
        ));
    }
    if let Some(v) = conf.iter().find(|v| !(0.0..=1.0).contains(*v)) {
        return Err(Error::Data(format!(
            "{context}: confidence {v} outside [0, 1]"
        )));
    }
    Ok(())
}

/// Bin index of x ∈ [0, 1] in `bins` equal-width bins on [0, 1], the last bin closed, with
/// numpy's `np.histogram` rule (edges b·(1/bins), last edge exactly 1; the float index
/// x·bins is corrected against the edges).
fn bin_index(x: f64, bins: usize) -> usize {
    let step = 1.0 / bins as f64;
    let edge = |b: usize| if b == bins { 1.0 } else { b as f64 * step };
    let mut b = ((x * bins as f64) as usize).min(bins - 1);
    if b > 0 && x < edge(b) {
        b -= 1;
    }
    if b + 1 < bins && x >= edge(b + 1) {
        b += 1;
    }
    b
}

fn histogram(conf: &[f64], bins: usize) -> Vec<usize> {
    let mut counts = vec![0usize; bins];
    for &c in conf {
        counts[bin_index(c, bins)] += 1;
    }
    counts
}

/// The paper's ECE/MCE of one draw, following docs/algorithms.md §8 steps 1–6 exactly, artifacts included.
///
/// `conf[i]` = max_k p_i (in [0, 1]), `correct[i]` = [argmax_k p_i = y_i]; `bins` is 100 in the
/// paper ([`PAPER_BINS`]).
/// 1. Sort (conf, acc) by conf (stable sort).
/// 2. c_b = counts of a `bins`-bin histogram of conf on [0, 1] (last bin closed).
/// 3. E_b = Σ_{b'≤b} c_b'; e_b = E_b − 1 if c_b > 0 else E_b, clamped to [0, n − 1].
/// 4. With P the inclusive prefix sum of a sorted array: `T_0 = P[e_0]`,
///    `T_b = P[e_b] − P[e_{b−1}]`.
/// 5. Bin mean = T_b / c_b if c_b > 0 else T_b (for conf and acc alike).
/// 6. ECE = unweighted mean over all bins of |mean_conf − mean_acc|; MCE = their maximum.
///
/// Artifacts: the first empty bin of a run of empty bins (and an empty bin 0) takes the
/// values of one point (the next sorted point), so it contributes a non-zero gap; the
/// following non-empty bin loses its first point from its sum but is still divided by its
/// full count; and empty bins still count in the average.
///
/// # Errors
/// [`Error::Data`] if `conf` is empty or a confidence is outside [0, 1] (or NaN);
/// [`Error::Shape`] if `correct.len() != conf.len()`; [`Error::InvalidSettings`] (`bins`) if
/// `bins == 0`.
pub fn paper_calibration(conf: &[f64], correct: &[bool], bins: usize) -> Result<Calibration> {
    check_conf_correct("paper_calibration", conf, correct, bins)?;
    let n = conf.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| conf[a].total_cmp(&conf[b]));
    let prefix = |f: &dyn Fn(usize) -> f64| {
        let mut acc = 0.0;
        order
            .iter()
            .map(|&i| {
                acc += f(i);
                acc
            })
            .collect::<Vec<f64>>()
    };
    let p_conf = prefix(&|i| conf[i]);
    let p_acc = prefix(&|i| if correct[i] { 1.0 } else { 0.0 });
    let counts = histogram(conf, bins);

    let mut cum = 0usize;
    let mut prev_e = 0usize;
    let mut sum_gap = 0.0;
    let mut max_gap = f64::NEG_INFINITY;
    for (b, &c) in counts.iter().enumerate() {
        cum += c;
        let e = if c > 0 { cum - 1 } else { cum }.min(n - 1);
        let (t_conf, t_acc) = if b == 0 {
            (p_conf[e], p_acc[e])
        } else {
            (p_conf[e] - p_conf[prev_e], p_acc[e] - p_acc[prev_e])
        };
        let denom = if c > 0 { c as f64 } else { 1.0 };
        let gap = (t_conf / denom - t_acc / denom).abs();
        sum_gap += gap;
        max_gap = max_gap.max(gap);
        prev_e = e;
    }
    Ok(Calibration {
        ece: sum_gap / bins as f64,
        mce: max_gap,
    })
}

/// The standard (count-weighted) ECE and MCE of one draw over `bins` equal-width confidence
/// bins on [0, 1] (same binning as [`paper_calibration`]):
/// ECE = Σ_b (c_b/n)·|mean_conf_b − mean_acc_b| over non-empty bins, MCE = max over non-empty
/// bins.
///
/// # Errors
/// As [`paper_calibration`].
pub fn standard_calibration(conf: &[f64], correct: &[bool], bins: usize) -> Result<Calibration> {
    check_conf_correct("standard_calibration", conf, correct, bins)?;
    let mut count = vec![0usize; bins];
    let mut sum_conf = vec![0.0; bins];
    let mut sum_acc = vec![0.0; bins];
    for (&c, &ok) in conf.iter().zip(correct) {
        let b = bin_index(c, bins);
        count[b] += 1;
        sum_conf[b] += c;
        sum_acc[b] += if ok { 1.0 } else { 0.0 };
    }
    let n = conf.len() as f64;
    let mut ece = 0.0;
    let mut mce: f64 = 0.0;
    for b in 0..bins {
        if count[b] == 0 {
            continue;
        }
        let k = count[b] as f64;
        let gap = (sum_conf[b] / k - sum_acc[b] / k).abs();
        ece += k / n * gap;
        mce = mce.max(gap);
    }
    Ok(Calibration { ece, mce })
}

/// [`paper_calibration`] of every draw with conf = max_k p and the argmax prediction.
/// Returns S values.
///
/// # Errors
/// [`Error::Shape`] if `labels.len() != n`; [`Error::Data`] if a label is ≥ C;
/// [`Error::InvalidSettings`] if `bins == 0`.
pub fn paper_calibration_per_draw(
    probs: &ClassProbs,
    labels: &[usize],
    bins: usize,
) -> Result<Vec<Calibration>> {
    calibration_per_draw(probs, labels, bins, paper_calibration)
}

/// `calibration` of every draw with conf = max_k p and the argmax prediction.
fn calibration_per_draw(
    probs: &ClassProbs,
    labels: &[usize],
    bins: usize,
    calibration: fn(&[f64], &[bool], usize) -> Result<Calibration>,
) -> Result<Vec<Calibration>> {
    probs.check_labels(labels)?;
    (0..probs.draws)
        .map(|s| {
            let (conf, correct) = probs.conf_correct(s, labels);
            calibration(&conf, &correct, bins)
        })
        .collect()
}

/// [`standard_calibration`] of every draw with conf = max_k p and the argmax prediction.
/// Returns S values.
///
/// # Errors
/// As [`paper_calibration_per_draw`].
pub fn standard_calibration_per_draw(
    probs: &ClassProbs,
    labels: &[usize],
    bins: usize,
) -> Result<Vec<Calibration>> {
    calibration_per_draw(probs, labels, bins, standard_calibration)
}

/// Every classification metric as mean ± std (ddof 0) over the S draws (docs/algorithms.md §8, MNIST).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClassificationMetrics {
    /// [`nll_per_draw`].
    pub nll: MeanStd,
    /// Sampled-label accuracy ([`sampled_accuracy_confidence`]).
    pub accuracy: MeanStd,
    /// Sampled-label confidence ([`sampled_accuracy_confidence`]).
    pub confidence: MeanStd,
    /// [`brier_per_draw`].
    pub brier: MeanStd,
    /// Paper ECE ([`paper_calibration`], 100 bins).
    pub ece: MeanStd,
    /// Paper MCE ([`paper_calibration`], 100 bins).
    pub mce: MeanStd,
    /// Argmax accuracy ([`argmax_accuracy_per_draw`]).
    pub argmax_accuracy: MeanStd,
    /// Count-weighted ECE ([`standard_calibration`], 100 bins).
    pub standard_ece: MeanStd,
    /// MCE over non-empty bins ([`standard_calibration`], 100 bins).
    pub standard_mce: MeanStd,
}

/// All [`ClassificationMetrics`] of `probs` (S×n×C) against `labels` (n), with
/// [`PAPER_BINS`] bins; `rng` drives the label sampling of [`sampled_accuracy_confidence`].
///
/// # Errors
/// [`Error::Shape`] if `labels.len() != n`; [`Error::Data`] if a label is ≥ C or a per-draw
/// metric is NaN.
pub fn classification_metrics(
    probs: &ClassProbs,
    labels: &[usize],
    rng: &mut impl Rng,
) -> Result<ClassificationMetrics> {
    let sampled = sampled_accuracy_confidence(probs, labels, rng)?;
    let paper = paper_calibration_per_draw(probs, labels, PAPER_BINS)?;
    let standard = standard_calibration_per_draw(probs, labels, PAPER_BINS)?;
    let pick = |v: &[Calibration], f: fn(&Calibration) -> f64| v.iter().map(f).collect::<Vec<_>>();
    Ok(ClassificationMetrics {
        nll: MeanStd::of(&nll_per_draw(probs, labels)?)?,
        accuracy: MeanStd::of(&sampled.accuracy)?,
        confidence: MeanStd::of(&sampled.confidence)?,
        brier: MeanStd::of(&brier_per_draw(probs, labels)?)?,
        ece: MeanStd::of(&pick(&paper, |c| c.ece))?,
        mce: MeanStd::of(&pick(&paper, |c| c.mce))?,
        argmax_accuracy: MeanStd::of(&argmax_accuracy_per_draw(probs, labels)?)?,
        standard_ece: MeanStd::of(&pick(&standard, |c| c.ece))?,
        standard_mce: MeanStd::of(&pick(&standard, |c| c.mce))?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol * (1.0 + b.abs()), "{a} vs {b}");
    }

    /// S = 2 draws, n = 3 points, C = 3 classes; labels (0, 1, 2).
    fn toy() -> (ClassProbs, Vec<usize>) {
        #[rustfmt::skip]
        let data = vec![
            // draw 0
            0.7, 0.2, 0.1,
            0.3, 0.6, 0.1,
            0.5, 0.4, 0.1,
            // draw 1
            0.4, 0.4, 0.2,
            0.1, 0.1, 0.8,
            0.0, 0.0, 1.0,
        ];
        (ClassProbs::new(2, 3, 3, data).unwrap(), vec![0, 1, 2])
    }

    #[test]
    fn construction_checks() {
        assert!(ClassProbs::new(1, 1, 2, vec![0.5]).is_err());
        assert!(ClassProbs::new(1, 1, 2, vec![0.5, 0.6]).is_err());
        assert!(ClassProbs::new(1, 1, 2, vec![-0.1, 1.1]).is_err());
        assert!(ClassProbs::new(0, 1, 2, vec![]).is_err());
        let p = ClassProbs::from_logits(1, 1, 2, &[0.0, 2f64.ln()]).unwrap();
        close(p.probs(0, 0)[0], 1.0 / 3.0, 1e-15);
        close(p.probs(0, 0)[1], 2.0 / 3.0, 1e-15);
        let big = ClassProbs::from_logits(1, 1, 2, &[1000.0, 1000.0]).unwrap();
        assert_eq!(big.probs(0, 0), &[0.5, 0.5]);
        assert!(ClassProbs::from_logits(1, 1, 2, &[f64::NAN, 0.0]).is_err());
        assert!(ClassProbs::from_logits(1, 1, 2, &[0.0]).is_err());
        let (p, labels) = toy();
        assert!(nll_per_draw(&p, &labels[..2]).is_err());
        assert!(nll_per_draw(&p, &[0, 1, 3]).is_err());
    }

    #[test]
    fn nll_brier_argmax() {
        let (p, y) = toy();
        // draw 0: −(ln 0.7 + ln 0.6 + ln 0.1)/3; draw 1: −(ln 0.4 + ln 0.1 + ln 1)/3.
        let nll = nll_per_draw(&p, &y).unwrap();
        close(
            nll[0],
            -(0.7f64.ln() + 0.6f64.ln() + 0.1f64.ln()) / 3.0,
            1e-15,
        );
        close(nll[1], -(0.4f64.ln() + 0.1f64.ln()) / 3.0, 1e-15);
        // Brier draw 0: (0.09+0.04+0.01) + (0.09+0.16+0.01) + (0.25+0.16+0.81) = 1.62 → 0.54.
        // draw 1: (0.36+0.16+0.04) + (0.01+0.81+0.64) + 0 = 2.02 → 2.02/3.
        let b = brier_per_draw(&p, &y).unwrap();
        close(b[0], 0.54, 1e-14);
        close(b[1], 2.02 / 3.0, 1e-14);
        // Argmax: draw 0 predicts (0, 1, 0) → 2/3; draw 1 predicts (0 [first of tie], 2, 2)
        // → 2/3.
        assert_eq!(
            argmax_accuracy_per_draw(&p, &y).unwrap(),
            vec![2.0 / 3.0; 2]
        );
        // Mixture predictive of point 2: (0.25, 0.2, 0.55).
        let mix = p.mean_over_draws();
        assert_eq!(mix.draws(), 1);
        close(mix.probs(0, 2)[2], 0.55, 1e-15);
    }

    #[test]
    fn sampled_labels() {
        // One-hot probabilities make sampling deterministic: acc = argmax acc, conf = 1.
        let data = vec![1.0, 0.0, 0.0, 1.0, 1.0, 0.0];
        let p = ClassProbs::new(1, 3, 2, data).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(0);
        let r = sampled_accuracy_confidence(&p, &[0, 1, 1], &mut rng).unwrap();
        close(r.accuracy[0], 2.0 / 3.0, 1e-15);
        close(r.confidence[0], 1.0, 1e-15);
        // Frequencies: n = 20 000 points with p = (0.2, 0.8), label 1. Acc ~ 0.8 and
        // Conf ~ E[p_ỹ] = 0.2² + 0.8² = 0.68. SE(acc) = sqrt(0.16/20000) = 0.0028, SE(conf)
        // = 0.6·0.4/√20000 = 0.0017 ; 5 SE ⇒ tolerance 0.015.
        let n = 20_000;
        let p = ClassProbs::new(1, n, 2, [0.2, 0.8].repeat(n)).unwrap();
        let r = sampled_accuracy_confidence(&p, &vec![1; n], &mut rng).unwrap();
        assert!((r.accuracy[0] - 0.8).abs() < 0.015, "{}", r.accuracy[0]);
        assert!((r.confidence[0] - 0.68).abs() < 0.01, "{}", r.confidence[0]);
        assert_eq!(sample_categorical(&[0.0, 1.0, 0.0], 0.0), 1);
        assert_eq!(sample_categorical(&[0.5, 0.5, 0.0], 0.999_999_999_999), 1);
    }

    #[test]
    fn histogram_bins_like_numpy() {
        assert_eq!(bin_index(0.0, 100), 0);
        assert_eq!(bin_index(0.005, 100), 0);
        assert_eq!(bin_index(0.01, 100), 1);
        // 0.29·100 = 28.999999999999996 but 0.29 ≥ edge 29·0.01 = 0.29 → bin 29.
        assert_eq!(bin_index(0.29, 100), 29);
        assert_eq!(bin_index(0.999, 100), 99);
        assert_eq!(bin_index(1.0, 100), 99);
    }

    #[test]
    fn paper_ece_without_empty_bins() {
        // Two bins, both filled: bin 0 gets conf 0.2 (wrong), 0.4 (right); bin 1 gets 0.8
        // (right). Means: bin 0 conf 0.3, acc 0.5 → 0.2; bin 1 conf 0.8, acc 1 → 0.2.
        // ECE = (0.2 + 0.2)/2 = 0.2 (unweighted), MCE = 0.2; standard ECE = 2/3·0.2 + 1/3·0.2.
        let conf = [0.8, 0.2, 0.4];
        let ok = [true, false, true];
        let c = paper_calibration(&conf, &ok, 2).unwrap();
        close(c.ece, 0.2, 1e-14);
        close(c.mce, 0.2, 1e-14);
        let s = standard_calibration(&conf, &ok, 2).unwrap();
        close(s.ece, 0.2, 1e-14);
        close(s.mce, 0.2, 1e-14);
    }

    #[test]
    fn paper_ece_empty_bin_artifacts() {
        // 10 bins of width 0.1. Points (conf, correct), unsorted as passed:
        //   (0.55, 1) (0.15, 1) (0.95, 0) (0.58, 1) (0.18, 0) (0.52, 0)
        // Bins: 0.15, 0.18 → bin 1; 0.52, 0.55, 0.58 → bin 5; 0.95 → bin 9.
        // Sorted by conf: [0.15/1, 0.18/0, 0.52/0, 0.55/1, 0.58/1, 0.95/0], n = 6.
        // Counts c = [0, 2, 0, 0, 0, 3, 0, 0, 0, 1]; E = [0, 2, 2, 2, 2, 5, 5, 5, 5, 6].
        // e = [0, 1, 2, 2, 2, 4, 5, 5, 5, 5] (E−1 where c > 0, clamped to 5).
        // Prefix sums  Pconf = [0.15, 0.33, 0.85, 1.40, 1.98, 2.93],
        //              Pacc  = [1, 1, 1, 2, 3, 3].
        // bin 0 (empty, first):  T = P[0]         → conf 0.15, acc 1     → gap 0.85
        // bin 1 (c = 2):          P[1] − P[0]      → conf 0.18/2, acc 0/2 → gap 0.09
        //                         (the artifact drops point 0 from bin 1's sums)
        // bin 2 (empty, first of run): P[2] − P[1] → conf 0.52, acc 0     → gap 0.52
        // bins 3, 4 (empty):      P[2] − P[2] = 0                          → gap 0
        // bin 5 (c = 3):          P[4] − P[2]      → conf (0.55+0.58)/3, acc 2/3
        //                                           → |0.376667 − 0.666667| = 0.29
        // bin 6 (empty, first of run): P[5] − P[4] → conf 0.95, acc 0     → gap 0.95
        // bins 7, 8 (empty):      0
        // bin 9 (c = 1):          P[5] − P[5] = 0  → gap 0 (its only point was "used" by bin 6)
        // ECE = (0.85 + 0.09 + 0.52 + 0.29 + 0.95)/10 = 2.70/10 = 0.27; MCE = 0.95.
        let conf = [0.55, 0.15, 0.95, 0.58, 0.18, 0.52];
        let ok = [true, true, false, true, false, false];
        let c = paper_calibration(&conf, &ok, 10).unwrap();
        close(c.ece, 0.27, 1e-12);
        close(c.mce, 0.95, 1e-12);
        // Standard ECE on the same data: bin 1: conf 0.165, acc 0.5 → 0.335·2/6;
        // bin 5: conf 1.65/3 = 0.55, acc 2/3 → 0.116667·3/6; bin 9: 0.95·1/6.
        let s = standard_calibration(&conf, &ok, 10).unwrap();
        let expected = 0.335 * 2.0 / 6.0 + (2.0 / 3.0 - 0.55) * 3.0 / 6.0 + 0.95 / 6.0;
        close(s.ece, expected, 1e-12);
        close(s.mce, 0.95, 1e-12);
        assert!(paper_calibration(&conf, &ok[..2], 10).is_err());
        assert!(paper_calibration(&[], &[], 10).is_err());
        assert!(paper_calibration(&[1.5], &[true], 10).is_err());
        assert!(paper_calibration(&conf, &ok, 0).is_err());
    }

    #[test]
    fn paper_ece_100_bins_single_point() {
        // One point with conf 0.5, wrong, in bin 50 of 100. e_0 = 0 → bin 0 (empty) gets
        // the point: gap 0.5. Bins 1..49: 0. Bin 50 (c = 1): P[0] − P[0] = 0 → gap 0.
        // Bins 51..99: e = 0 → 0. ECE = 0.5/100 = 0.005, MCE = 0.5.
        let c = paper_calibration(&[0.5], &[false], PAPER_BINS).unwrap();
        close(c.ece, 0.005, 1e-15);
        close(c.mce, 0.5, 1e-15);
        let s = standard_calibration(&[0.5], &[false], PAPER_BINS).unwrap();
        close(s.ece, 0.5, 1e-15);
    }

    #[test]
    fn summary_over_draws() {
        let (p, y) = toy();
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let m = classification_metrics(&p, &y, &mut rng).unwrap();
        let nll = nll_per_draw(&p, &y).unwrap();
        close(m.nll.mean, (nll[0] + nll[1]) / 2.0, 1e-15);
        close(m.nll.std, (nll[0] - nll[1]).abs() / 2.0, 1e-14);
        close(m.argmax_accuracy.mean, 2.0 / 3.0, 1e-15);
        close(m.argmax_accuracy.std, 0.0, 1e-15);
        assert!(m.ece.mean >= 0.0 && m.mce.mean >= m.ece.mean);
        let per = paper_calibration_per_draw(&p, &y, PAPER_BINS).unwrap();
        close(m.ece.mean, (per[0].ece + per[1].ece) / 2.0, 1e-15);
    }
}
