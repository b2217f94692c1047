//! Evaluating a fitted MNIST unit: predictive draws on the test set and every metric per draw.

use super::*;

/// Per-draw metric values of one fitted unit.
pub(super) struct Evaluation {
    /// (metric name, one value per draw), in record order.
    pub(super) per_draw: Vec<(&'static str, Vec<f64>)>,
    pub(super) draws: usize,
    pub(super) distinct: usize,
}

impl Evaluation {
    pub(super) fn mean(&self, name: &str) -> f64 {
        self.per_draw
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, v)| MeanStd::of(v).ok())
            .map_or(f64::NAN, |s| s.mean)
    }
}

/// Metric names of the records, in order.
pub(super) const METRICS: [&str; 9] = [
    "acc",
    "conf",
    "nll",
    "brier",
    "ece",
    "mce",
    "acc_argmax",
    "ece_weighted",
    "mce_weighted",
];

/// Predictive draws on the test set, `EVAL_CHUNK` at a time, and every metric per draw.
pub(super) fn evaluate(
    model: &BnnClassifier,
    post: &Mixture,
    method: Method,
    test: &TestSet,
    draws: usize,
    seed: u64,
) -> Result<Evaluation> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(EVAL_STREAM);
    let (theta, replicate) = match method {
        Method::Map => (post.locations(), draws),
        _ => (post.predictive_draws(draws, &mut rng)?, 1),
    };
    let d = post.dim();
    let distinct = theta.rows();
    let n = test.labels.len();
    let mut values: Vec<Vec<f64>> = vec![Vec::new(); METRICS.len()];
    for first in (0..distinct).step_by(EVAL_CHUNK) {
        let k = EVAL_CHUNK.min(distinct - first);
        let chunk = &theta.as_slice()[first * d..(first + k) * d];
        let probs = model
            .predict_proba(chunk, &test.x)
            .context("prediction on the test images failed")?
            .into_vec();
        for _ in 0..replicate {
            let cp = ClassProbs::new(k, n, CLASSES, probs.clone())
                .context("the predictions are not finite probabilities (the fit diverged)")?;
            let sampled = sampled_accuracy_confidence(&cp, &test.labels, &mut rng)?;
            let paper = paper_calibration_per_draw(&cp, &test.labels, PAPER_BINS)?;
            let standard = standard_calibration_per_draw(&cp, &test.labels, PAPER_BINS)?;
            let batch: [Vec<f64>; 9] = [
                sampled.accuracy,
                sampled.confidence,
                nll_per_draw(&cp, &test.labels)?,
                brier_per_draw(&cp, &test.labels)?,
                paper.iter().map(|c| c.ece).collect(),
                paper.iter().map(|c| c.mce).collect(),
                argmax_accuracy_per_draw(&cp, &test.labels)?,
                standard.iter().map(|c| c.ece).collect(),
                standard.iter().map(|c| c.mce).collect(),
            ];
            for (v, b) in values.iter_mut().zip(batch) {
                v.extend(b);
            }
        }
    }
    Ok(Evaluation {
        per_draw: METRICS.iter().copied().zip(values).collect(),
        draws: distinct * replicate,
        distinct,
    })
}
