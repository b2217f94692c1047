//! The paper's headline as tests: 1-particle SMI recovers N(0, I) exactly (it must not stall at
//! NumPyro ≥ 0.16's σ = 0.5413), and 20-particle SVGD collapses in d = 100 while SMI does not.

mod common;

use smi::testing::DiagNormal;
use smi::{Mixture, OptimizerSettings, SteinSettings, SteinVi};

/// The posterior of a Stein engine with `settings` after `steps` steps on N(0, I_d).
fn fit_standard_normal(d: usize, settings: SteinSettings, steps: u64) -> Mixture {
    let target = DiagNormal::standard(d).unwrap();
    common::posterior_after(&SteinVi::new(&target, settings).unwrap(), steps)
}

fn smi_one_particle(d: usize) -> (Vec<f64>, Vec<f64>) {
    let post = fit_standard_normal(d, common::smi_one_particle(0.05, 7), 3000);
    (post.mean(), post.scales().row(0).to_vec())
}

#[test]
fn one_particle_smi_recovers_the_standard_normal() {
    // docs/algorithms.md §12.4. With S = 100 draws per step the STL gradient noise of each σ is small and the
    // Adam iterates fluctuate around (0, 1) by ~0.01 (measured); 0.05 is the tolerance
    // and leaves room while still excluding NumPyro's defective fixed point σ = 0.5413.
    for d in [2, 20, 100] {
        let (mu, sigma) = smi_one_particle(d);
        for c in 0..d {
            assert!(mu[c].abs() < 0.05, "d={d} μ_{c} = {}", mu[c]);
            assert!((sigma[c] - 1.0).abs() < 0.05, "d={d} σ_{c} = {}", sigma[c]);
        }
    }
}

fn mean_variance(settings: SteinSettings, d: usize, steps: u64) -> f64 {
    let v = fit_standard_normal(d, settings, steps).marginal_variance();
    v.iter().sum::<f64>() / d as f64
}

#[test]
fn svgd_collapses_in_high_dimension_and_smi_does_not() {
    // docs/algorithms.md §7.1 settings: SVGD m = 20, Adam 0.05, init radius 20; SMI m = 20, S = 100,
    // Adagrad 0.05, init radius 2. Measured here: SVGD reaches 0.030 by step 1 000 and stays
    // (NumPyro: 0.03 after 60 000 steps); SMI reaches 1.02 by step 3 000. The thresholds (0.1
    // and 0.9) are the and sit far from both values.
    let mut svgd = SteinSettings::svgd();
    svgd.num_particles = 20;
    svgd.init = smi::Init::Uniform { radius: 20.0 };
    svgd.optimizer = OptimizerSettings::adam(0.05);
    let v_svgd = mean_variance(svgd, 100, 2000);
    assert!(v_svgd < 0.1, "SVGD-20 mean variance {v_svgd}");

    let mut smi = SteinSettings::smi();
    smi.num_particles = 20;
    smi.num_elbo_particles = 100;
    smi.optimizer = OptimizerSettings::adagrad(0.05);
    let v_smi = mean_variance(smi, 100, 3000);
    assert!(v_smi >= 0.9, "SMI-20 mean variance {v_smi}");
}
