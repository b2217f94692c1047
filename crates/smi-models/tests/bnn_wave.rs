//! SMI fits a Bayesian neural network to the 1-D wave data: the predictive mean interpolates the
//! 40 training points.

mod common;

use common::{rmse, wave, wave_bnn, wave_inputs};
use smi::{run, Engine, NoObserver, OptimizerSettings, RunSettings, SteinSettings, SteinVi};

#[test]
fn smi_bnn_interpolates_the_wave_data() {
    // 20 points in [−1.5, −0.5] and 20 in [1.3, 1.7] (docs/algorithms.md §7.2), evenly spaced, with a fixed
    // pseudo-noise of sd ≈ 0.1. The noise alone gives an RMSE ≈ 0.1 around f; a fit that
    // interpolates must reach < 0.2 (the threshold), while the best straight line through
    // these points has RMSE ≈ 1.0, so the test cannot pass without learning the wave.
    let xs = wave_inputs();
    let ys: Vec<f64> = xs
        .iter()
        .enumerate()
        .map(|(i, &x)| wave(x) + 0.1 * ((i as f64) * 2.3).sin() * 1.4)
        .collect();
    let (x, model) = wave_bnn(&xs, &ys, 20);
    let mut s = SteinSettings::smi();
    s.num_particles = 5;
    s.num_elbo_particles = 10;
    s.init = smi::Init::Uniform { radius: 0.5 };
    s.optimizer = OptimizerSettings::adam(0.01);
    s.seed = 3;
    let e = SteinVi::new(&model, s).unwrap();
    let state = e.init().unwrap();
    let fit = run(&e, state, &RunSettings::steps(2500), &mut NoObserver).unwrap();
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0);
    let draws = e
        .posterior(&fit.state)
        .predictive_draws(500, &mut rng)
        .unwrap();
    let pred = model.predict(draws.as_slice(), &x).unwrap();
    let rmse = rmse(&pred.y_loc.col_means(), &ys);
    assert!(rmse < 0.2, "in-sample RMSE of the predictive mean: {rmse}");
}
