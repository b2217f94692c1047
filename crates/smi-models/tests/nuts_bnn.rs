//! NUTS runs end to end on a Bayesian neural network (the wave BNN, low size) and its draws feed
//! the model's predictions.

mod common;

use common::{rmse, wave, wave_bnn, wave_inputs};
use smi::{NoObserver, Nuts, NutsSettings};

#[test]
fn nuts_on_the_low_size_wave_bnn_feeds_predictions() {
    let xs = wave_inputs();
    let ys: Vec<f64> = xs.iter().map(|&x| wave(x)).collect();
    let (x, model) = wave_bnn(&xs, &ys, 5);
    let settings = NutsSettings {
        num_warmup: 150,
        num_draws: 100,
        seed: 4,
        ..NutsSettings::numpyro()
    };
    let res = Nuts::new(settings).sample(&model, &mut NoObserver).unwrap();
    assert_eq!((res.draws.rows(), res.draws.cols()), (100, 46));
    assert!(res.draws.is_finite());
    let pred = model.predict(res.draws.as_slice(), &x).unwrap();
    assert_eq!((pred.y_loc.rows(), pred.y_loc.cols()), (100, 40));
    // The posterior predictive mean must follow the data far better than the prior (whose
    // predictive mean is ≈ 0, RMSE ≈ 3.7 on these targets); 1.0 leaves room for a short chain.
    let rmse = rmse(&pred.y_loc.col_means(), &ys);
    assert!(rmse < 1.0, "posterior predictive RMSE {rmse}");
}
