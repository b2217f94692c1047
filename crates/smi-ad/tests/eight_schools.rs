//! Eight schools through the adapter against its hand-derived gradient, a finite-difference
//! check, and a NUTS fit with the library's defaults.

use smi::testing::check_gradient;
use smi::{fit, Batch, Batcher, LogDensity, Method, NoObserver, Rows, RunSettings};
use smi_ad::testing::EightSchools;
use smi_ad::{Ad, AdModel};

const D: usize = 10;

/// K = 6 draws (6×10): the origin, points in the posterior bulk, a large τ and a tiny τ.
fn draws() -> Vec<f64> {
    let mut theta = vec![0.0; D];
    for (k, log_tau) in [(1.0, 1.2), (2.0, -0.7), (3.0, 3.5), (4.0, -6.0), (5.0, 0.3)] {
        theta.extend((0..8).map(|j| ((k * 8.0 + j as f64) * 0.61).sin() * 1.5));
        theta.extend([4.4 + (k - 3.0) * 2.0, log_tau]);
    }
    theta
}

/// Largest |a − b| / max(|b|, 1e-3): relative, except for entries of the hand-written value
/// below 1e-3 in magnitude, where it is absolute/1e-3 (a relative error of a near-zero
/// component measures only the rounding of a sum that cancels).
fn worst_relative(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(a, b)| (a - b).abs() / b.abs().max(1e-3))
        .fold(0.0, f64::max)
}

/// (log p, ∇ log p) of the K draws of `theta` on `batch`.
fn eval(model: &dyn LogDensity, theta: &[f64], batch: &Batch) -> (Vec<f64>, Vec<f64>) {
    let k = theta.len() / D;
    let (mut lp, mut g) = (vec![0.0; k], vec![0.0; k * D]);
    model
        .log_density_and_grad(theta, batch, &mut lp, &mut g)
        .unwrap();
    (lp, g)
}

#[test]
fn adapter_equals_the_hand_written_gradient_on_every_kind_of_batch() {
    let ad = Ad::new(EightSchools::new());
    let hand = ad.model().hand_written();
    let theta = draws();
    let mut rng = <smi::rand::ChaCha8Rng as smi::rand::SeedableRng>::seed_from_u64(3);
    let mut no_jacobian = Batch::full();
    no_jacobian.jacobian = false;
    let batches = [
        Batch::full(),
        no_jacobian,
        Batch::shared(vec![0, 3, 7], 8),
        // A different mini-batch of 3 schools for each of the 6 draws, scale 8/3.
        Batcher::new(8, Some(3)).draw(&mut rng, 6),
    ];
    assert!(matches!(batches[3].rows, Rows::PerDraw { .. }));
    for batch in &batches {
        let (lp_ad, g_ad) = eval(&ad, &theta, batch);
        let (lp_hand, g_hand) = eval(&hand, &theta, batch);
        // The brief's bar is 1e-10; both sides round differently (dual-number chain rule vs
        // the hand's factored products), which measures 1e-16 to 4e-15 here.
        let (e_lp, e_g) = (
            worst_relative(&lp_ad, &lp_hand),
            worst_relative(&g_ad, &g_hand),
        );
        assert!(e_lp < 1e-10 && e_g < 1e-10, "{batch:?}: {e_lp:e} {e_g:e}");
        // And the plain f64 evaluation gives the same log density as the dual one.
        if !matches!(batch.rows, Rows::PerDraw { .. }) {
            let plain = ad.log_density(&theta[D..2 * D], batch).unwrap();
            assert!(
                (plain - lp_ad[1]).abs() <= 1e-12 * lp_ad[1].abs(),
                "{plain} {}",
                lp_ad[1]
            );
        }
    }
}

#[test]
fn adapter_gradient_passes_the_finite_difference_check() {
    let ad = Ad::new(EightSchools::new());
    // Central differences with h = 1e-5 err by about h²·|f‴| ≈ 1e-8 here; a wrong gradient
    // errs by O(1). The draw with log τ = 3.5 has |f‴| large, so the first three draws only.
    let err = check_gradient(&ad, &draws()[..3 * D], &Batch::full(), 1e-5).unwrap();
    assert!(err < 1e-6, "{err}");
}

#[test]
fn bad_inputs_are_errors_not_panics() {
    let ad = Ad::new(EightSchools::new());
    let (mut lp, mut g) = (vec![0.0; 1], vec![0.0; D]);
    assert!(ad
        .log_density_and_grad(&[0.0; 9], &Batch::full(), &mut lp, &mut g)
        .is_err());
    let out_of_range = Batch::shared(vec![8], 8);
    assert!(ad
        .log_density_and_grad(&[0.0; D], &out_of_range, &mut lp, &mut g)
        .is_err());
    assert!(ad.log_density(&[0.0; 3], &Batch::full()).is_err());
    assert!(EightSchools::with_data(vec![1.0], vec![0.0]).is_err());
    assert_eq!(ad.model().layout().get("log_tau").unwrap().range(), 9..10);
}

#[test]
fn nuts_with_defaults_recovers_the_eight_schools_posterior() {
    let ad = Ad::new(EightSchools::new());
    let result = fit(
        &ad,
        &Method::Nuts.preset(0),
        &RunSettings::default(),
        &mut NoObserver,
    )
    .unwrap();
    let draws = result.posterior.as_draws().unwrap();
    let mu = draws.col_means()[8];
    let tau = draws.iter_rows().map(|r| r[9].exp()).sum::<f64>() / draws.rows() as f64;
    // posteriordb's reference draws (eight_schools_noncentered): E[μ] = 4.41 (sd 3.31), E[τ] = 3.60
    // (sd 3.20). With ≥ 1000 draws and an ESS of a few hundred the Monte Carlo error is about
    // 0.2 for both; the bounds are about 5 of those (τ's tail makes its error larger).
    assert!((mu - 4.4).abs() < 1.0, "E[mu] = {mu}");
    assert!((tau - 3.6).abs() < 1.5, "E[tau] = {tau}");
}
