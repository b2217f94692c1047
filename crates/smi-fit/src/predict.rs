//! Predictions of a fitted model: the values every front end and report consumes (`smi
//! predict` on a CSV file is [`crate::predict_csv`]; `smi fit` scores its validation split
//! here).
//!
//! Regression: θ draws from the fitted approximation (SMI/OVI: `--draws` mixture draws; SVGD,
//! ASVGD, MAP: the particles; NUTS: the stored draws), mapped back to target units. Per row:
//! the predictive mean (mean of y_loc over draws), the predictive standard deviation
//! √(mean σ² + var y_loc) (the observation noise included), and the central interval of mass
//! `--interval` from max(`--draws`, #θ) draws of y = y_loc + σ·ε (θ draws used in turn).
//! Classification: the draw-averaged class probabilities and the most probable class.

use anyhow::{bail, Context, Result};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use smi::metrics::{central_interval, gaussian_log_lik, pointwise_log_predictive};
use smi::Matrix;
use smi_models::{BnnClassifier, BnnRegression, Mlp, Noise};

use super::calibration::{central_hits, COVERAGE_LEVELS};
use super::limits::Budget;
use super::model_file::{finite, Header, Metrics, Task};
use crate::protocol::prediction_rng;
use smi::Posterior;

/// Rows per forward-pass chunk (bounds memory at draws × CHUNK values).
pub const CHUNK: usize = 4096;

/// Regression predictions in target units.
#[derive(Clone, Debug, Default)]
pub struct RegressionOutput {
    /// Predictive mean per row.
    pub mean: Vec<f64>,
    /// Predictive standard deviation per row (noise included).
    pub std: Vec<f64>,
    /// Lower bound of the central interval per row.
    pub lower: Vec<f64>,
    /// Upper bound of the central interval per row.
    pub upper: Vec<f64>,
    /// Log predictive density of each target (when targets were given).
    pub log_pred: Vec<f64>,
    /// Per mass of [`COVERAGE_LEVELS`]: the rows whose target lies inside their central
    /// interval of that mass, from the same y draws as `lower`/`upper` (when targets were
    /// given; empty otherwise).
    pub inside: Vec<usize>,
}

/// Classification predictions.
#[derive(Clone, Debug, Default)]
pub struct ClassOutput {
    /// n × C draw-averaged probabilities.
    pub probs: Vec<Vec<f64>>,
    /// The most probable class per row.
    pub predicted: Vec<usize>,
}

fn mlp(h: &Header) -> Result<Mlp> {
    Mlp::new(&h.architecture.sizes, h.architecture.activation)
        .context("corrupt model header: bad architecture")
}

/// A standard normal draw (Box–Muller).
pub(crate) fn std_normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Refuses a prediction of `rows` rows with `draws` (`--draws`) whose biggest buffers cannot
/// fit in this machine's memory: the θ draws (K × d, K = `draws` for Normal particles, the
/// stored rows otherwise), the forward pass of one chunk of rows (K × chunk × outputs) and the
/// y draws of the interval (max(`draws`, K)).
pub fn check_memory(h: &Header, fitted: &Posterior, draws: usize, rows: usize) -> Result<()> {
    let k = match fitted {
        Posterior::Mixture(m) if m.guide().is_normal() => draws,
        Posterior::Mixture(m) => m.particles().rows(),
        Posterior::Draws(d) => d.rows(),
    };
    let flag = format!("--draws {draws}");
    let d = fitted.dim();
    let out = h.architecture.sizes.last().copied().unwrap_or(1);
    let mut b = Budget::new();
    b.add(
        "the parameter draws",
        &flag,
        &[(k, "draws"), (d, "parameters"), (8, "bytes")],
    );
    b.add(
        "the predictions of one chunk of rows",
        &flag,
        &[
            (k, "draws"),
            (rows.clamp(1, CHUNK), "rows"),
            (out, "outputs"),
            (8, "bytes"),
        ],
    );
    if h.task == Task::Regression {
        b.add(
            "the draws of the predictive interval",
            &flag,
            &[(draws.max(k), "draws"), (8, "bytes")],
        );
    }
    b.check()
}

/// Regression predictions at the standardised inputs `x` (n × in); `y` (target units) adds
/// the per-row log predictive density.
pub fn predict_regression(
    h: &Header,
    fitted: &Posterior,
    x: &Matrix,
    draws: usize,
    interval: f64,
    seed: u64,
    y: Option<&[f64]>,
) -> Result<RegressionOutput> {
    let noise: Noise = h
        .architecture
        .noise
        .context("corrupt model header: a regression model without a noise model")?;
    let model = BnnRegression::new(mlp(h)?, Matrix::zeros(1, x.cols()), vec![0.0], noise)?
        .with_prior_scale(h.architecture.prior_scale)?;
    check_memory(h, fitted, draws, x.rows())?;
    let mut rng = prediction_rng(seed);
    let theta = fitted.predictive_draws(draws, &mut rng)?;
    let k = theta.rows();
    let ydraws = draws.max(k);
    let mut noise_rng = ChaCha8Rng::seed_from_u64(seed ^ 0x0b5e_4fed);
    let (shift, scale) = match &h.y_scaler {
        Some(s) => match (s.mean.first(), s.std.first()) {
            (Some(&m), Some(&s)) => (m, s),
            _ => bail!("corrupt model header: an empty y_scaler"),
        },
        None => (0.0, 1.0),
    };
    let mut out = RegressionOutput::default();
    let mut col = vec![0.0; ydraws];
    for start in (0..x.rows()).step_by(CHUNK) {
        let end = (start + CHUNK).min(x.rows());
        let xc = Matrix::from_fn(end - start, x.cols(), |i, j| x.get(start + i, j));
        let mut pred = model.predict(theta.as_slice(), &xc)?;
        if h.y_scaler.is_some() {
            pred.y_loc
                .as_mut_slice()
                .iter_mut()
                .for_each(|v| *v = *v * scale + shift);
            pred.noise_scale.iter_mut().for_each(|v| *v *= scale);
        }
        if !pred.y_loc.is_finite() || pred.noise_scale.iter().any(|v| !v.is_finite()) {
            bail!("{}", not_finite(start, end));
        }
        let mean_var: f64 = pred.noise_scale.iter().map(|s| s * s).sum::<f64>() / k as f64;
        for i in 0..end - start {
            let m = (0..k).map(|s| pred.y_loc.get(s, i)).sum::<f64>() / k as f64;
            let v = (0..k)
                .map(|s| (pred.y_loc.get(s, i) - m).powi(2))
                .sum::<f64>()
                / k as f64;
            out.mean.push(m);
            out.std.push((mean_var + v).sqrt());
            for (s, c) in col.iter_mut().enumerate() {
                let t = s % k;
                *c = pred.y_loc.get(t, i) + pred.noise_scale[t] * std_normal(&mut noise_rng);
            }
            // Sorted once here, each interval below sorts it again in linear time.
            col.sort_by(f64::total_cmp);
            let iv = central_interval(&col, interval)?;
            out.lower.push(iv.lower);
            out.upper.push(iv.upper);
            if let Some(y) = y {
                let hits = central_hits(&col, y[start + i], &COVERAGE_LEVELS)?;
                out.inside.resize(hits.len(), 0);
                for (k, h) in out.inside.iter_mut().zip(hits) {
                    *k += usize::from(h);
                }
            }
        }
        if let Some(y) = y {
            let ll = gaussian_log_lik(&pred.y_loc, &pred.noise_scale, &y[start..end])?;
            out.log_pred.extend(pointwise_log_predictive(&ll)?);
        }
    }
    Ok(out)
}

/// The observation noise σ of a regression model in target units, one value per θ draw
/// (`draws` draws for Normal particles; the particles or NUTS draws otherwise), sorted.
///
/// # Errors
/// A header without a noise model, or draws the model cannot evaluate.
pub fn noise_scales(h: &Header, fitted: &Posterior, draws: usize, seed: u64) -> Result<Vec<f64>> {
    let noise: Noise = h
        .architecture
        .noise
        .context("corrupt model header: a regression model without a noise model")?;
    let inputs = h.architecture.sizes.first().copied().unwrap_or(1);
    let model = BnnRegression::new(mlp(h)?, Matrix::zeros(1, inputs), vec![0.0], noise)?
        .with_prior_scale(h.architecture.prior_scale)?;
    check_memory(h, fitted, draws, 1)?;
    let theta = fitted.predictive_draws(draws, &mut prediction_rng(seed))?;
    let pred = model.predict(theta.as_slice(), &Matrix::zeros(1, inputs))?;
    let scale = match &h.y_scaler {
        Some(s) => s.std.first().copied().unwrap_or(1.0),
        None => 1.0,
    };
    let mut sigma: Vec<f64> = pred.noise_scale.iter().map(|v| v * scale).collect();
    sigma.sort_by(f64::total_cmp);
    Ok(sigma)
}

/// The message for predictions of rows `start..end` (0-based) that are not finite: the
/// parameters are finite (the model file guarantees it), so the network overflowed.
fn not_finite(start: usize, end: usize) -> String {
    let rows = if end == start + 1 {
        format!("row {}", start + 1)
    } else {
        format!("rows {}–{}", start + 1, end)
    };
    format!(
        "the model's predictions for {rows} are not finite: the network overflowed, either \
         because inputs lie far outside the training data or because the fit diverged \
         (refit with a smaller --lr)"
    )
}

/// Regression metrics of `out` against `y`: NLL = −mean log predictive density (the same sum
/// as `smi::metrics::mixture_nll`), RMSE of the mean, interval coverage.
pub fn regression_metrics(out: &RegressionOutput, y: &[f64], interval: f64) -> Metrics {
    let n = y.len() as f64;
    let nll = -out.log_pred.iter().sum::<f64>() / out.log_pred.len() as f64;
    let ss: f64 = out.mean.iter().zip(y).map(|(m, v)| (v - m).powi(2)).sum();
    let inside = y
        .iter()
        .enumerate()
        .filter(|&(i, v)| out.lower[i] <= *v && *v <= out.upper[i])
        .count();
    Metrics {
        nll: finite(nll),
        rmse: finite((ss / n).sqrt()),
        accuracy: None,
        coverage: Some(inside as f64 / n),
        interval: Some(interval),
        skipped_rows: None,
    }
}

/// Classification predictions at the standardised inputs `x`.
pub fn predict_classes(
    h: &Header,
    fitted: &Posterior,
    x: &Matrix,
    draws: usize,
    seed: u64,
) -> Result<ClassOutput> {
    let net = mlp(h)?;
    let c = net.output_dim();
    check_memory(h, fitted, draws, x.rows())?;
    let model = BnnClassifier::new(net, Matrix::zeros(1, x.cols()), vec![0])?
        .with_prior_scale(h.architecture.prior_scale)?;
    let mut rng = prediction_rng(seed);
    let theta = fitted.predictive_draws(draws, &mut rng)?;
    let k = theta.rows();
    let mut out = ClassOutput::default();
    for start in (0..x.rows()).step_by(CHUNK) {
        let end = (start + CHUNK).min(x.rows());
        let n = end - start;
        let xc = Matrix::from_fn(n, x.cols(), |i, j| x.get(start + i, j));
        let p = model.predict_proba(theta.as_slice(), &xc)?;
        for i in 0..n {
            let mut row = vec![0.0; c];
            for s in 0..k {
                for (r, v) in row.iter_mut().zip(p.row(s * n + i)) {
                    *r += v / k as f64;
                }
            }
            if row.iter().any(|v| !v.is_finite()) {
                bail!("{}", not_finite(start + i, start + i + 1));
            }
            let best = (0..c)
                .max_by(|&a, &b| row[a].total_cmp(&row[b]))
                .unwrap_or(0);
            out.predicted.push(best);
            out.probs.push(row);
        }
    }
    Ok(out)
}

/// Classification metrics against `labels`: NLL of the averaged probabilities, accuracy.
pub fn class_metrics(out: &ClassOutput, labels: &[usize]) -> Metrics {
    let n = labels.len() as f64;
    let nll = -labels
        .iter()
        .zip(&out.probs)
        .map(|(&l, p)| p[l].max(f64::MIN_POSITIVE).ln())
        .sum::<f64>()
        / n;
    let acc = labels
        .iter()
        .zip(&out.predicted)
        .filter(|(a, b)| a == b)
        .count() as f64
        / n;
    Metrics {
        nll: finite(nll),
        accuracy: Some(acc),
        ..Metrics::default()
    }
}

/// The default mass of the central predictive interval.
pub const DEFAULT_INTERVAL: f64 = 0.9;

/// A one-line summary of metrics.
pub fn describe(m: &Metrics) -> String {
    let f = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), |v| format!("{v:.4}"));
    let mut s = format!("nll {}", f(m.nll));
    if m.rmse.is_some() {
        s.push_str(&format!(", rmse {}", f(m.rmse)));
    }
    if let (Some(c), Some(i)) = (m.coverage, m.interval) {
        s.push_str(&format!(
            ", coverage of the {:.0} % interval {:.1} %",
            i * 100.0,
            c * 100.0
        ));
    }
    if m.accuracy.is_some() {
        s.push_str(&format!(", accuracy {}", f(m.accuracy)));
    }
    if let Some(k) = m.skipped_rows {
        s.push_str(&format!(" ({k} rows with unknown labels not scored)"));
    }
    s
}
