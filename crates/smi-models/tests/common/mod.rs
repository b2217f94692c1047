//! The 1-D wave data set-up shared by the Bayesian-neural-network tests.
#![allow(dead_code)]

use smi::Matrix;
use smi_models::BnnRegression;

/// The wave function f(x) = 1.5·sin(2π(x + 1/3)) + 3x + 1 (docs/algorithms.md §7.2).
pub fn wave(x: f64) -> f64 {
    1.5 * (2.0 * std::f64::consts::PI * (x + 1.0 / 3.0)).sin() + 3.0 * x + 1.0
}

/// The 40 training inputs: 20 evenly spaced points in [−1.5, −0.5] and 20 in [1.3, 1.7].
pub fn wave_inputs() -> Vec<f64> {
    (0..20)
        .map(|i| -1.5 + i as f64 / 19.0)
        .chain((0..20).map(|i| 1.3 + 0.4 * i as f64 / 19.0))
        .collect()
}

/// The inputs `xs` as an n × 1 matrix and the wave BNN with `hidden` units fitted to
/// (`xs`, `ys`).
pub fn wave_bnn(xs: &[f64], ys: &[f64], hidden: usize) -> (Matrix, BnnRegression) {
    let x = Matrix::from_vec(xs.len(), 1, xs.to_vec()).unwrap();
    let model = BnnRegression::wave(x.clone(), ys.to_vec(), hidden).unwrap();
    (x, model)
}

/// The root-mean-square difference of `pred` and `target` (of equal length).
pub fn rmse(pred: &[f64], target: &[f64]) -> f64 {
    assert_eq!(pred.len(), target.len());
    let sq: f64 = pred.iter().zip(target).map(|(a, b)| (a - b).powi(2)).sum();
    (sq / target.len() as f64).sqrt()
}
