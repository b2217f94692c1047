//! Learning-rate schedules and the convergence rule: the engines apply the scheduled rate, a
//! checkpoint taken mid-schedule (mid-warm-up, after a plateau cut, mid-window of the
//! convergence rule) resumes bit-identically, and the rule stops a converged run but not a
//! climbing one.

use smi::testing::{BayesLinReg, DiagNormal};
use smi::{
    fit, run, ConvergenceSettings, Engine, Error, LrSchedule, Matrix, Method, MethodSettings,
    NoObserver, OptimizerSettings, PlateauSettings, RunSettings, State, SteinSettings, Svi,
    SviSettings, Termination,
};

fn model() -> BayesLinReg {
    let x = Matrix::from_fn(40, 3, |i, j| ((i * 5 + j * 11) as f64 * 0.21).cos());
    let y = (0..40)
        .map(|i| x.get(i, 0) - 2.0 * x.get(i, 2) + 0.1 * (i as f64).sin())
        .collect();
    BayesLinReg::new(x, y, 0.3, 1.0).unwrap()
}

fn smi(optimizer: OptimizerSettings) -> MethodSettings {
    MethodSettings::Stein(SteinSettings {
        num_particles: 3,
        num_elbo_particles: 4,
        batch_size: Some(10),
        optimizer,
        seed: 42,
        ..SteinSettings::smi()
    })
}

/// An engine family's settings for an optimizer ([`smi`], [`ovi`]).
type Family = fn(OptimizerSettings) -> MethodSettings;

fn ovi(optimizer: OptimizerSettings) -> MethodSettings {
    MethodSettings::Svi(SviSettings {
        num_elbo_particles: 2,
        batch_size: Some(10),
        optimizer,
        seed: 7,
        ..SviSettings::ovi()
    })
}

/// A plateau rule that cuts often in a short run: windows of 5, one window of patience.
/// The convergence rule on windows of 100 steps with a patience of 5 (shorter than the
/// defaults, so that the tests stay short and a premature stop could happen within them).
fn quick_rule() -> ConvergenceSettings {
    ConvergenceSettings {
        window: 100,
        patience: 5,
        ..ConvergenceSettings::default()
    }
}

fn quick_plateau() -> LrSchedule {
    LrSchedule::plateau(
        PlateauSettings {
            window: 5,
            patience: 1,
            ..PlateauSettings::default()
        },
        1e-4,
    )
    .with_warmup(10)
}

#[test]
fn the_engines_step_at_the_scheduled_rate() {
    // Step 0 of a 4-step warm-up from lr 0.1 is lr/4 = 0.025 (exact in binary): the same first
    // step as a constant 0.025, for both engine families.
    let m = model();
    for family in [smi, ovi] {
        let warm = family(
            OptimizerSettings::sgd(0.1).with_schedule(LrSchedule::constant().with_warmup(4)),
        );
        let flat = family(OptimizerSettings::sgd(0.025));
        let one = |s: &MethodSettings| {
            let e = s.build(&m).unwrap();
            let mut st = e.init().unwrap();
            e.step(&mut st, None).unwrap();
            st.particles
        };
        assert_eq!(one(&warm), one(&flat));
        assert_ne!(one(&warm), one(&family(OptimizerSettings::sgd(0.1))));
    }
}

#[test]
fn a_checkpoint_mid_schedule_resumes_bit_identically() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let m = model();
    let total = 120;
    let conv = ConvergenceSettings {
        window: 7,
        patience: 1000,
        ..ConvergenceSettings::default()
    };
    let schedules = [
        quick_plateau(),
        LrSchedule::cosine(60, 1e-3).with_warmup(10),
        LrSchedule::step(0.5, 17),
        LrSchedule::exponential(0.3, 50).with_warmup(3),
    ];
    // the late split of each family: after the quick plateau rule's first cut and before its
    // last (chosen for these seeds when the noise became one stream per draw: SMI's first cut
    // then came at step 84–90, OVI's at 6–37)
    let families: [(Family, u64); 2] = [(smi, 95), (ovi, 83)];
    for (family, late) in families {
        for schedule in schedules {
            let settings = family(OptimizerSettings::adam(0.05).with_schedule(schedule));
            let e = settings.build(&m).unwrap();
            let full_settings = RunSettings::steps(total).with_convergence(conv);
            let full = run(
                e.as_ref(),
                e.init().unwrap(),
                &full_settings,
                &mut NoObserver,
            )
            .unwrap();
            if schedule == quick_plateau() {
                assert!(
                    full.state.lr_schedule.cuts >= 2,
                    "{:?}",
                    full.state.lr_schedule
                );
            }
            // Split mid-warm-up (5), mid-window of both rules (37), and late.
            let mut split_cuts = Vec::new();
            for split in [5, 37, late] {
                let first = RunSettings {
                    max_steps: split,
                    checkpoint: Some(path.clone()),
                    ..full_settings.clone()
                };
                let half = run(e.as_ref(), e.init().unwrap(), &first, &mut NoObserver).unwrap();
                split_cuts.push(half.state.lr_schedule.cuts);
                let loaded: State = e.load_state(&path).unwrap();
                assert_eq!(loaded, half.state);
                let rest = run(e.as_ref(), loaded, &full_settings, &mut NoObserver).unwrap();
                assert_eq!(
                    rest.state.particles, full.state.particles,
                    "{schedule:?} at {split}"
                );
                assert_eq!(rest.state, full.state, "{schedule:?} at {split}");
                assert_eq!(rest.elbos[..], full.elbos[split as usize..]);
            }
            if schedule == quick_plateau() {
                // The late checkpoints were taken with the rate already cut, and more cuts
                // followed them.
                assert!(split_cuts[2] >= 1, "{split_cuts:?}");
                assert!(
                    split_cuts[2] < full.state.lr_schedule.cuts,
                    "{split_cuts:?}"
                );
            }
        }
    }
}

#[test]
fn a_checkpoint_resumes_only_under_the_same_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let m = model();
    let svi = |o: OptimizerSettings| {
        Svi::new(
            &m,
            SviSettings {
                optimizer: o,
                ..SviSettings::ovi()
            },
        )
        .unwrap()
    };
    let a = svi(OptimizerSettings::adam(0.01).with_schedule(LrSchedule::step(0.5, 10)));
    a.init().unwrap().save(&path).unwrap();
    let b = svi(OptimizerSettings::adam(0.01).with_schedule(LrSchedule::step(0.5, 11)));
    assert!(matches!(b.load_state(&path), Err(Error::Checkpoint(_))));
    assert!(a.load_state(&path).is_ok());
    // A constant schedule is left out of the settings, so fingerprints of runs without a
    // schedule are those written before schedules existed.
    assert!(!svi(OptimizerSettings::adam(0.01))
        .fingerprint()
        .contains("schedule"));
    assert!(a.fingerprint().contains("\"schedule\""));
}

#[test]
fn the_rule_stops_a_converged_gaussian_fit_well_before_the_cap() {
    // OVI on N(0, I₃) from a uniform init of radius 2: Adam(0.05) reaches the optimum's noise
    // floor within a few hundred steps, reduce-on-plateau then halves the rate down to 1e-3 (6
    // cuts, 3 flat windows each), and the rule (windows of 100, patience 5, restarted by each
    // cut) stops it about 500 steps after the last cut: ≈ 2400 steps (measured).
    let target = DiagNormal::standard(3).unwrap();
    let plateau = LrSchedule::plateau(PlateauSettings::default(), 1e-3);
    let settings = Method::Ovi
        .preset(0)
        .with_elbo_draws(4)
        .with_optimizer(OptimizerSettings::adam(0.05).with_schedule(plateau))
        .with_seed(3);
    let cap = 20_000;
    let until = RunSettings::steps(cap).with_convergence(quick_rule());
    let f = fit(&target, &settings, &until, &mut NoObserver).unwrap();
    assert_eq!(f.termination, Termination::Converged);
    assert!(f.steps < 4000, "{} steps", f.steps);
    assert_eq!(f.elbos.len() as u64, f.steps);
    assert_eq!(f.losses.len(), f.elbos.len());
    // The fixed point: mean 0 and variance 1 (mean-field is exact on this target); the final
    // iterate wanders around it at the floor rate 1e-3 (measured within 0.02 of the mean, 0.05
    // of the variance), so 0.1 on each.
    for (mu, var) in f.posterior.mean().iter().zip(f.posterior.variance()) {
        assert!(mu.abs() < 0.1 && (var - 1.0).abs() < 0.1, "{mu} {var}");
    }
    // SMI's mixture ELBO converges too (NumPyro's Adagrad(0.05) at a constant rate).
    let smi = Method::Smi
        .preset(0)
        .with_optimizer(OptimizerSettings::adagrad(0.05))
        .with_seed(1);
    let f = fit(&target, &smi, &until, &mut NoObserver).unwrap();
    assert_eq!(f.termination, Termination::Converged, "{} steps", f.steps);
    assert!(f.steps < cap / 2, "{} steps", f.steps);
    assert!(f.elbos.iter().all(|e| e.is_finite()));
}

#[test]
fn the_rule_does_not_fire_during_a_steady_climb() {
    // A target 50 away from the init with Adam(1e-3): the location moves at most 1e-3 per step,
    // so the ELBO −(50 − μ)²/2 + … climbs by ≈ 5 nats per 100-step window for all 3000 steps,
    // far above the rule's tolerance (2·√2 noise sds of a window mean ≈ 1.4 nats); the rule
    // could fire from step 600 (windows of 100, patience 5).
    let target = DiagNormal::new(vec![50.0, -50.0], vec![1.0, 1.0]).unwrap();
    let settings = Method::Ovi
        .preset(0)
        .with_elbo_draws(1)
        .with_optimizer(OptimizerSettings::adam(1e-3))
        .with_seed(2);
    let cap = 3000;
    let until = RunSettings::steps(cap).with_convergence(quick_rule());
    let f = fit(&target, &settings, &until, &mut NoObserver).unwrap();
    assert_eq!(f.termination, Termination::MaxSteps);
    assert_eq!(f.steps, cap);
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len() as f64;
    let (first, last) = (mean(&f.elbos[..100]), mean(&f.elbos[2900..]));
    assert!(last - first > 100.0, "the ELBO climbed {first} → {last}");
}

#[test]
fn a_run_resumed_before_convergence_converges_at_the_same_step() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let target = DiagNormal::standard(2).unwrap();
    let plateau = LrSchedule::plateau(PlateauSettings::default(), 1e-3);
    let settings = Method::Ovi
        .preset(0)
        .with_elbo_draws(1)
        .with_optimizer(OptimizerSettings::adam(0.05).with_schedule(plateau));
    let e = settings.build(&target).unwrap();
    let until = RunSettings::steps(20_000).with_convergence(quick_rule());
    let full = run(e.as_ref(), e.init().unwrap(), &until, &mut NoObserver).unwrap();
    assert_eq!(full.termination, Termination::Converged);
    let split = full.state.step / 2 + 17;
    let first = RunSettings {
        max_steps: split,
        checkpoint: Some(path.clone()),
        ..until.clone()
    };
    let half = run(e.as_ref(), e.init().unwrap(), &first, &mut NoObserver).unwrap();
    assert_eq!(half.termination, Termination::MaxSteps);
    let rest = run(
        e.as_ref(),
        e.load_state(&path).unwrap(),
        &until,
        &mut NoObserver,
    )
    .unwrap();
    assert_eq!(rest.termination, Termination::Converged);
    assert_eq!(rest.state, full.state);
    // A converged state returns at once under the same rule.
    let again = run(e.as_ref(), rest.state.clone(), &until, &mut NoObserver).unwrap();
    assert_eq!(
        (again.termination, again.losses.len()),
        (Termination::Converged, 0)
    );
}
