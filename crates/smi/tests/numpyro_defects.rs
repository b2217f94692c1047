//! The two reproduced NumPyro defects (`SteinSettings::defect`, docs/algorithms.md §2.9,
//! §2.11) show the signatures derived for them, and only with the switch set.

mod common;

use smi::testing::DiagNormal;
use smi::{Engine, NumpyroDefect, SteinSettings, SteinVi};

/// One-particle SMI on N(0, I_d) (S = 100, Adam(0.05), 3000 steps, the §2.9 set-up) with
/// `defect`: the fitted scales σ of the particle.
fn one_particle_scales(d: usize, defect: Option<NumpyroDefect>) -> Vec<f64> {
    let target = DiagNormal::standard(d).unwrap();
    let settings = SteinSettings {
        defect,
        ..common::smi_one_particle(0.05, 7)
    };
    let engine = SteinVi::new(&target, settings).unwrap();
    common::posterior_after(&engine, 3000)
        .scales()
        .row(0)
        .to_vec()
}

#[test]
fn the_double_transform_stalls_at_variance_0_293() {
    // docs/algorithms.md §2.9: with the denominator's scale softplus(σ), the stop-gradient
    // attraction on ρ is E[ε(−θ + σε/softplus(σ)²)]·sigmoid(ρ) = σ(1/softplus(σ)² − 1)·sigmoid(ρ),
    // zero at softplus(σ) = 1: σ = ln(e − 1) = 0.5413, a variance of 0.293. The Adam iterates
    // fluctuate by ~0.01 around the fixed point (as in variance_collapse.rs); 0.03 keeps them
    // far from the correct σ = 1. d = 2 takes the unfused step, d = 200 the fused one (K·d =
    // 100·200 ≥ 2^14).
    let stall = (std::f64::consts::E - 1.0).ln();
    for d in [2, 200] {
        for (c, s) in one_particle_scales(d, Some(NumpyroDefect::DoubleTransform))
            .iter()
            .enumerate()
        {
            assert!((s - stall).abs() < 0.03, "d={d} σ_{c} = {s}, want {stall}");
        }
    }
}

#[test]
fn without_the_chain_rule_one_particle_still_recovers_the_standard_normal() {
    // docs/algorithms.md §2.11: the defect multiplies ĝ's ρ entries by 1 + e^(−ρ) > 0, which
    // moves no zero of ĝ: one particle (no repulsion) has the correct fixed point σ = 1, unlike
    // the double transform. Tolerance as in variance_collapse.rs (iterates within ~0.01).
    for d in [2, 200] {
        for (c, s) in one_particle_scales(d, Some(NumpyroDefect::NoChainRule))
            .iter()
            .enumerate()
        {
            assert!((s - 1.0).abs() < 0.05, "d={d} σ_{c} = {s}");
        }
    }
}

#[test]
fn without_the_chain_rule_the_scale_force_is_the_correct_one_over_sigmoid_rho() {
    // The defect's signature in one step: with the same seed (the same noise), the loc entries
    // of φ are unchanged and each ρ entry is the correct one times 1 + e^(−ρ) (10.5 at the
    // initial σ = 0.1). One particle, so φ is its attraction alone. Exact up to rounding.
    let target = DiagNormal::new(vec![0.5, -1.0, 2.0], vec![1.0, 0.3, 2.0]).unwrap();
    let force = |defect| {
        let settings = SteinSettings {
            defect,
            ..common::smi_one_particle(0.05, 3)
        };
        let engine = SteinVi::new(&target, settings).unwrap();
        let mut state = engine.init().unwrap();
        let rho = state.particles.row(0)[3..].to_vec();
        (engine.force(&mut state, None).unwrap().0, rho)
    };
    let (right, rho) = force(None);
    let (wrong, _) = force(Some(NumpyroDefect::NoChainRule));
    for (c, r) in rho.iter().enumerate() {
        assert_eq!(right.get(0, c), wrong.get(0, c), "loc {c}");
        let want = right.get(0, 3 + c) * (1.0 + (-r).exp());
        let got = wrong.get(0, 3 + c);
        assert!(
            (got - want).abs() <= 1e-12 * want.abs(),
            "ρ {c}: {got} vs {want}"
        );
    }
}

#[test]
fn a_defect_needs_the_normal_guide_and_stays_out_of_default_records() {
    let mut svgd = SteinSettings::svgd();
    svgd.defect = Some(NumpyroDefect::NoChainRule);
    let err = svgd.validate().unwrap_err().to_string();
    assert!(err.contains("defect"), "{err}");
    // Unset, the field is not serialised (fingerprints of earlier runs unchanged); set, it is.
    let plain = serde_json::to_string(&SteinSettings::smi()).unwrap();
    assert!(!plain.contains("defect"), "{plain}");
    let set = SteinSettings {
        defect: Some(NumpyroDefect::DoubleTransform),
        ..SteinSettings::smi()
    };
    let json = serde_json::to_string(&set).unwrap();
    assert!(json.contains("\"defect\":\"double_transform\""), "{json}");
    let back: SteinSettings = serde_json::from_str(&json).unwrap();
    assert_eq!(back, set);
    for name in ["no-chain-rule", "double-transform", "No_Chain_Rule"] {
        let d: NumpyroDefect = name.parse().unwrap();
        assert_eq!(d.name(), name.to_ascii_lowercase().replace('_', "-"));
    }
    assert!("chain".parse::<NumpyroDefect>().is_err());
}
