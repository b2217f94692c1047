//! The measurement behind docs/defaults.md's "The guide and α of SMI": SMI's preset on N(0, I_d) at
//! several α, printing each coordinate's worst variance, the termination and k̂. Ignored by
//! default (a measurement, not a test):
//!
//! ```sh
//! DIMS=1,3,10,100 ALPHAS=1,0.3,0.1,0.03,0.01 cargo test --release -p smi --test alpha_sweep -- --ignored --nocapture
//! ```

use smi::testing::DiagNormal;
use smi::{fit, Method, MethodSettings, NoObserver, RunSettings};

fn list<T: std::str::FromStr>(var: &str, default: &str) -> Vec<T> {
    std::env::var(var)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

#[test]
#[ignore = "a measurement: run it by hand (see the module docs)"]
fn alpha_sweep() {
    for d in list::<usize>("DIMS", "1,3,10") {
        for alpha in list::<f64>("ALPHAS", "1,0.1") {
            for seed in 0..2 {
                let MethodSettings::Stein(mut s) = Method::Smi.preset(100_000) else {
                    unreachable!("SMI's preset is a Stein method")
                };
                s.repulsion_temperature = alpha;
                s.seed = seed;
                let f = fit(
                    &DiagNormal::standard(d).unwrap(),
                    &MethodSettings::Stein(s),
                    &RunSettings::until_converged(100_000),
                    &mut NoObserver,
                )
                .unwrap();
                let v = f.posterior.variance();
                let (lo, hi) = v
                    .iter()
                    .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
                println!(
                    "d={d} alpha={alpha} seed={seed}: variance {lo:.3}..{hi:.3}, {} after {} steps, k-hat {:?}",
                    f.termination,
                    f.steps,
                    f.quality.as_ref().and_then(|q| q.khat)
                );
            }
        }
    }
}
