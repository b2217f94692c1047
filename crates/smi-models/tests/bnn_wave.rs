//! SMI fits a Bayesian neural network to the 1-D wave data: the predictive mean interpolates the
//! 40 training points.

use smi::{
    run, Engine, Matrix, NoObserver, OptimizerSettings, RunSettings, SteinSettings, SteinVi,
};
use smi_models::BnnRegression;

fn wave(x: f64) -> f64 {
    1.5 * (2.0 * std::f64::consts::PI * (x + 1.0 / 3.0)).sin() + 3.0 * x + 1.0
}

#[test]
fn smi_bnn_interpolates_the_wave_data() {
    // 20 points in [−1.5, −0.5] and 20 in [1.3, 1.7] (docs/algorithms.md §7.2), evenly spaced, with a fixed
    // pseudo-noise of sd ≈ 0.1. The noise alone gives an RMSE ≈ 0.1 around f; a fit that
    // interpolates must reach < 0.2 (the threshold), while the best straight line through
    // these points has RMSE ≈ 1.0, so the test cannot pass without learning the wave.
    let xs: Vec<f64> = (0..20)
        .map(|i| -1.5 + i as f64 / 19.0)
        .chain((0..20).map(|i| 1.3 + 0.4 * i as f64 / 19.0))
        .collect();
    let ys: Vec<f64> = xs
        .iter()
        .enumerate()
        .map(|(i, &x)| wave(x) + 0.1 * ((i as f64) * 2.3).sin() * 1.4)
        .collect();
    let x = Matrix::from_vec(40, 1, xs.clone()).unwrap();
    let model = BnnRegression::wave(x.clone(), ys.clone(), 20).unwrap();
    let mut s = SteinSettings::smi();
    s.num_particles = 5;
    s.num_elbo_particles = 10;
    s.init = smi::Init::Uniform { radius: 0.5 };
    s.optimizer = OptimizerSettings::adam(0.01);
    s.seed = 3;
    let e = SteinVi::new(&model, s).unwrap();
    let fit = run(
        &e,
        e.init().unwrap(),
        &RunSettings::steps(2500),
        &mut NoObserver,
    )
    .unwrap();
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0);
    let draws = e
        .posterior(&fit.state)
        .predictive_draws(500, &mut rng)
        .unwrap();
    let pred = model.predict(draws.as_slice(), &x).unwrap();
    let mean = pred.y_loc.col_means();
    let rmse = (mean
        .iter()
        .zip(&ys)
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        / 40.0)
        .sqrt();
    assert!(rmse < 0.2, "in-sample RMSE of the predictive mean: {rmse}");
}
