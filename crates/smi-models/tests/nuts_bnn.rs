//! NUTS runs end to end on a Bayesian neural network (the wave BNN, low size) and its draws feed
//! the model's predictions.

use smi::{Matrix, NoObserver, Nuts, NutsSettings};
use smi_models::BnnRegression;

#[test]
fn nuts_on_the_low_size_wave_bnn_feeds_predictions() {
    let xs: Vec<f64> = (0..20)
        .map(|i| -1.5 + i as f64 / 19.0)
        .chain((0..20).map(|i| 1.3 + 0.4 * i as f64 / 19.0))
        .collect();
    let ys: Vec<f64> = xs
        .iter()
        .map(|x| 1.5 * (2.0 * std::f64::consts::PI * (x + 1.0 / 3.0)).sin() + 3.0 * x + 1.0)
        .collect();
    let x = Matrix::from_vec(40, 1, xs).unwrap();
    let model = BnnRegression::wave(x.clone(), ys.clone(), 5).unwrap();
    let settings = NutsSettings {
        num_warmup: 150,
        num_draws: 100,
        seed: 4,
        ..NutsSettings::default()
    };
    let res = Nuts::new(settings).sample(&model, &mut NoObserver).unwrap();
    assert_eq!((res.draws.rows(), res.draws.cols()), (100, 46));
    assert!(res.draws.is_finite());
    let pred = model.predict(res.draws.as_slice(), &x).unwrap();
    assert_eq!((pred.y_loc.rows(), pred.y_loc.cols()), (100, 40));
    // The posterior predictive mean must follow the data far better than the prior (whose
    // predictive mean is ≈ 0, RMSE ≈ 3.7 on these targets); 1.0 leaves room for a short chain.
    let mean = pred.y_loc.col_means();
    let rmse = (mean
        .iter()
        .zip(&ys)
        .map(|(a, b)| (a - b).powi(2))
        .sum::<f64>()
        / 40.0)
        .sqrt();
    assert!(rmse < 1.0, "posterior predictive RMSE {rmse}");
}
