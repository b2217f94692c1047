use smi::{fit, testing::DiagNormal, Method, MethodSettings, NoObserver, RunSettings};

#[test]
#[ignore]
fn scratch() {
    let dims: Vec<usize> = std::env::var("DIMS")
        .unwrap_or("1,3,10".into())
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    let alphas: Vec<f64> = std::env::var("ALPHAS")
        .unwrap_or("1".into())
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    let ms: Vec<usize> = std::env::var("MS")
        .unwrap_or("5".into())
        .split(',')
        .map(|s| s.parse().unwrap())
        .collect();
    for &d in &dims {
        for &a in &alphas {
            for &m in &ms {
                for seed in 0..2 {
                    let target = DiagNormal::standard(d).unwrap();
                    let mut s = match Method::Smi.preset(100_000) {
                        MethodSettings::Stein(s) => s,
                        _ => unreachable!(),
                    };
                    s.repulsion_temperature = a;
                    s.num_particles = m;
                    s.seed = seed;
                    let f = fit(
                        &target,
                        &MethodSettings::Stein(s),
                        &RunSettings::until_converged(100_000),
                        &mut NoObserver,
                    )
                    .unwrap();
                    let v = f.posterior.variance();
                    let (lo, hi) = v
                        .iter()
                        .fold((f64::MAX, f64::MIN), |(l, h), &x| (l.min(x), h.max(x)));
                    eprintln!("d={d} a={a} m={m} seed={seed}: var min {lo:.3} max {hi:.3} steps {} term {} khat {:?}", f.steps, f.termination, f.quality.as_ref().and_then(|q| q.khat));
                }
            }
        }
    }
}

#[test]
#[ignore]
fn scratch_khat() {
    let d = 3;
    let target = DiagNormal::standard(d).unwrap();
    let mut s = match Method::Smi.preset(100_000) {
        MethodSettings::Stein(s) => s,
        _ => unreachable!(),
    };
    s.repulsion_temperature = 0.01;
    let f = fit(
        &target,
        &MethodSettings::Stein(s),
        &RunSettings::until_converged(100_000),
        &mut NoObserver,
    )
    .unwrap();
    let mix = f.posterior.as_mixture().unwrap();
    eprintln!("locs {:?}\nscales {:?}", mix.locations(), mix.scales());
    for seed in 0..6 {
        let q = smi::fit_quality(&target, mix, 2000, seed).unwrap();
        let q8 = smi::fit_quality(&target, mix, 8000, seed).unwrap();
        eprintln!(
            "seed {seed}: khat {:?} ess {:.0} | 8000: {:?}",
            q.khat, q.ess, q8.khat
        );
    }
}
