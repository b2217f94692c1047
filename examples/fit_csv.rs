//! A Bayesian neural network fitted by SMI to a CSV file, end to end through the library:
//! read `examples/data/regression_train.csv` (target column `y`, every other column a numeric
//! feature), standardise with the training statistics, fit [`smi_models::BnnRegression`]
//! (one hidden layer of 20 relu units, learned noise precision) with SMI, then predict
//! `examples/data/regression_test.csv` and report the test RMSE, NLL and the coverage of 90 %
//! central predictive intervals.
//!
//! ```text
//! cargo run --release --example fit_csv
//! ```
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

use anyhow::{ensure, Context, Result};
use smi::metrics::{central_interval_per_point, regression_metrics};
use smi::rand::{ChaCha8Rng, Rng, SeedableRng};
use smi::{fit, Init, LogDensity, Matrix, Method, NoObserver, OptimizerSettings, RunSettings};
use smi_models::{Activation, BnnRegression, Mlp, Noise};

/// The target column.
const TARGET: &str = "y";
/// Hidden units of the network's one hidden layer.
const HIDDEN: usize = 20;
/// Predictive draws for the test metrics.
const PREDICTIVE_DRAWS: usize = 1000;
/// Mass of the central predictive intervals.
const MASS: f64 = 0.9;

/// A numeric table split into features and target.
struct Table {
    features: Vec<String>,
    x: Matrix,
    y: Vec<f64>,
}

/// Reads a CSV with a header row; `target` is the target column, every other column a feature.
fn read_csv(path: &Path, target: &str) -> Result<Table> {
    let mut reader =
        csv::Reader::from_path(path).with_context(|| format!("cannot open {}", path.display()))?;
    let headers = reader.headers()?.clone();
    let target_col = headers
        .iter()
        .position(|h| h.trim() == target)
        .with_context(|| format!("{}: no column named {target:?}", path.display()))?;
    let features: Vec<String> = headers
        .iter()
        .enumerate()
        .filter(|&(c, _)| c != target_col)
        .map(|(_, h)| h.trim().to_string())
        .collect();
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for (r, record) in reader.records().enumerate() {
        let record = record.with_context(|| format!("{}: bad row {}", path.display(), r + 1))?;
        for (c, field) in record.iter().enumerate() {
            let v: f64 = field.trim().parse().with_context(|| {
                format!(
                    "{}: row {}, column {:?}: {field:?} is not a number",
                    path.display(),
                    r + 1,
                    &headers[c]
                )
            })?;
            if c == target_col {
                y.push(v);
            } else {
                x.push(v);
            }
        }
    }
    ensure!(!y.is_empty(), "{}: no data rows", path.display());
    let x = Matrix::from_vec(y.len(), features.len(), x)?;
    Ok(Table { features, x, y })
}

/// Per-column mean and standard deviation (ddof 0; 1 for a constant column).
struct Standardizer {
    mean: Vec<f64>,
    std: Vec<f64>,
}

impl Standardizer {
    fn fit(m: &Matrix) -> Self {
        let mean = m.col_means();
        let std = m
            .col_variances()
            .into_iter()
            .map(|v| if v > 0.0 { v.sqrt() } else { 1.0 })
            .collect();
        Standardizer { mean, std }
    }

    fn apply(&self, m: &Matrix) -> Matrix {
        Matrix::from_fn(m.rows(), m.cols(), |i, c| {
            (m.get(i, c) - self.mean[c]) / self.std[c]
        })
    }
}

/// A column vector as an n×1 matrix.
fn column(v: &[f64]) -> Result<Matrix> {
    Ok(Matrix::from_vec(v.len(), 1, v.to_vec())?)
}

/// A standard normal draw (Box–Muller).
fn std_normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

fn main() -> Result<()> {
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data");
    let train = read_csv(&data.join("regression_train.csv"), TARGET)?;
    let test = read_csv(&data.join("regression_test.csv"), TARGET)?;
    ensure!(
        test.features == train.features,
        "the test file's features {:?} differ from the training file's {:?}",
        test.features,
        train.features
    );
    println!(
        "data: {} training rows, {} test rows, features {:?}, target {TARGET:?}",
        train.y.len(),
        test.y.len(),
        train.features
    );

    // Standardise inputs and target with the training statistics.
    let x_scaler = Standardizer::fit(&train.x);
    let y_scaler = Standardizer::fit(&column(&train.y)?);
    let (y_mean, y_std) = (y_scaler.mean[0], y_scaler.std[0]);
    let y_train: Vec<f64> = train.y.iter().map(|v| (v - y_mean) / y_std).collect();
    let mlp = Mlp::new(&[train.x.cols(), HIDDEN, 1], Activation::Relu)?;
    let model = BnnRegression::new(mlp, x_scaler.apply(&train.x), y_train, Noise::uci())?;

    // SMI: m = 5 Normal guides, S = 10 ELBO draws, Adam(5e-3), weights started near 0. The data
    // is small, so every step uses all rows; for a large file set `.with_batch_size(Some(b))`.
    let steps = 2000;
    let settings = Method::Smi
        .preset(steps)
        .with_particles(5)
        .with_elbo_draws(10)
        .with_optimizer(OptimizerSettings::adam(5e-3))
        .with_init(Init::Uniform { radius: 0.1 })
        .with_seed(0);
    let result = fit(
        &model,
        &settings,
        &RunSettings::steps(steps),
        &mut NoObserver,
    )?;
    println!(
        "fit: SMI, d = {}, {} steps in {:.2} s ({} skipped), final ‖φ‖ = {:.3e}",
        model.dim(),
        result.steps,
        result.seconds,
        result.skipped_steps,
        result.final_loss().unwrap_or(f64::NAN)
    );

    // Predict the test set: y_loc and σ per draw, back in the target's units.
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let theta = result
        .posterior
        .predictive_draws(PREDICTIVE_DRAWS, &mut rng)?;
    let mut pred = model.predict(theta.as_slice(), &x_scaler.apply(&test.x))?;
    pred.y_loc
        .as_mut_slice()
        .iter_mut()
        .for_each(|v| *v = *v * y_std + y_mean);
    pred.noise_scale.iter_mut().for_each(|s| *s *= y_std);
    let metrics = regression_metrics(&pred.y_loc, &pred.noise_scale, &test.y)?;

    // 90 % central intervals of the predictive distribution of y (noise included).
    let y_draws = Matrix::from_fn(pred.y_loc.rows(), pred.y_loc.cols(), |s, i| {
        pred.y_loc.get(s, i) + pred.noise_scale[s] * std_normal(&mut rng)
    });
    let intervals = central_interval_per_point(&y_draws, MASS)?;
    let inside = intervals
        .iter()
        .zip(&test.y)
        .filter(|(iv, y)| iv.contains(**y))
        .count();
    let coverage = inside as f64 / test.y.len() as f64;
    let width = intervals.iter().map(|iv| iv.width()).sum::<f64>() / intervals.len() as f64;
    let baseline =
        (test.y.iter().map(|v| (v - y_mean).powi(2)).sum::<f64>() / test.y.len() as f64).sqrt();
    let noise = pred.noise_scale.iter().sum::<f64>() / pred.noise_scale.len() as f64;

    println!(
        "test ({} rows, {} predictive draws):",
        test.y.len(),
        theta.rows()
    );
    println!(
        "  RMSE of the predictive mean  {:.4}   (predicting the training mean: {baseline:.4})",
        metrics.rmse_of_mean
    );
    println!("  NLL (mixture predictive)     {:.4}", metrics.nll);
    println!(
        "  90 % interval coverage       {coverage:.3}   (mean width {width:.3}; mean noise σ {noise:.3})"
    );
    Ok(())
}
