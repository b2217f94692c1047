//! The library's SMI defaults on the simplest target: `Method::Smi.preset` under
//! `RunSettings::until_converged` on N(0, I_d) converges with every coordinate's variance
//! within 10 % of 1 for d = 10 and 100. At d = 1 and 3 the preset's α = 1 over-disperses (1.55
//! and 1.48 in one coordinate, docs/defaults.md "The repulsion α"): not gated here until a
//! default that fixes it without losing the correlated posteriors is chosen.

use smi::testing::DiagNormal;
use smi::{fit, Method, NoObserver, RunSettings, Termination};

#[test]
fn default_smi_keeps_the_variance_of_a_standard_normal() {
    // Measured (tests/alpha_sweep.rs, seeds 0–1): the worst coordinate 1.061–1.062 at d = 10
    // and 1.059–1.072 at d = 100; the gate is 10 %.
    for d in [10, 100] {
        let target = DiagNormal::standard(d).unwrap();
        let settings = Method::Smi.preset(100_000).with_seed(0);
        let f = fit(
            &target,
            &settings,
            &RunSettings::until_converged(100_000),
            &mut NoObserver,
        )
        .unwrap();
        assert_eq!(f.termination, Termination::Converged, "d = {d}");
        for (c, v) in f.posterior.variance().iter().enumerate() {
            assert!(
                (v - 1.0).abs() < 0.1,
                "d = {d}, coordinate {c}: variance {v}"
            );
        }
        assert!(f.quality.as_ref().and_then(|q| q.khat).is_some());
    }
}
