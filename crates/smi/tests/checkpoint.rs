//! Reproducibility: the same seed gives identical results, and a run resumed from a checkpoint
//! is bit-identical to an uninterrupted one.

mod common;

use common::{run_from, run_steps};
use smi::testing::BayesLinReg;
use smi::{
    run, Engine, Error, GradientReuse, Matrix, NoObserver, RunSettings, SteinSettings, SteinVi,
    Svi, SviSettings,
};

fn model() -> BayesLinReg {
    let x = Matrix::from_fn(50, 3, |i, j| ((i * 5 + j * 11) as f64 * 0.21).cos());
    let y = (0..50)
        .map(|i| x.get(i, 0) - 2.0 * x.get(i, 2) + 0.1 * (i as f64).sin())
        .collect();
    BayesLinReg::new(x, y, 0.3, 1.0).unwrap()
}

fn settings() -> SteinSettings {
    SteinSettings {
        num_particles: 4,
        num_elbo_particles: 8,
        batch_size: Some(10),
        seed: 42,
        ..SteinSettings::smi()
    }
}

#[test]
fn same_seed_same_particles() {
    let m = model();
    let e = SteinVi::new(&m, settings()).unwrap();
    let a = run_steps(&e, 50);
    let b = run_steps(&e, 50);
    assert_eq!(a.state, b.state);
    let mut other = settings();
    other.seed = 43;
    let c = run_steps(&SteinVi::new(&m, other).unwrap(), 50);
    assert_ne!(a.state.particles, c.state.particles);
}

#[test]
fn resume_from_checkpoint_is_bit_identical() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let m = model();
    for s in [
        settings(),
        SteinSettings {
            gradient_reuse: GradientReuse::PerPair,
            ..settings()
        },
        SteinSettings {
            batch_size: Some(10),
            ..SteinSettings::asvgd(60)
        },
    ] {
        let e = SteinVi::new(&m, s).unwrap();
        let full = run_steps(&e, 60);
        let first = RunSettings {
            max_steps: 25,
            checkpoint: Some(path.clone()),
            checkpoint_every: 10,
            ..Default::default()
        };
        run(&e, e.init().unwrap(), &first, &mut NoObserver).unwrap();
        let resumed = e.load_state(&path).unwrap();
        assert_eq!(resumed.step, 25);
        let rest = run_from(&e, resumed, 60);
        assert_eq!(rest.state, full.state, "{}", e.name());
        assert_eq!(rest.losses, full.losses[25..].to_vec());
    }
    // SVI too.
    let e = Svi::new(
        &m,
        SviSettings {
            batch_size: Some(10),
            ..SviSettings::ovi()
        },
    )
    .unwrap();
    let full = run_steps(&e, 40);
    let mut st = e.init().unwrap();
    for _ in 0..17 {
        e.step(&mut st, None).unwrap();
    }
    st.save(&path).unwrap();
    let rest = run_from(&e, e.load_state(&path).unwrap(), 40);
    assert_eq!(rest.state, full.state);
}

#[test]
fn checkpoint_of_another_configuration_or_corrupt_file_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let m = model();
    let e = SteinVi::new(&m, settings()).unwrap();
    e.init().unwrap().save(&path).unwrap();
    let mut other = settings();
    other.num_particles = 5;
    let e2 = SteinVi::new(&m, other).unwrap();
    match e2.load_state(&path) {
        Err(Error::Checkpoint(msg)) => assert!(msg.contains("another configuration"), "{msg}"),
        other => panic!("expected a checkpoint error, got {other:?}"),
    }
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    assert!(matches!(e.load_state(&path), Err(Error::Checkpoint(_))));
    assert!(matches!(
        e.load_state(&dir.path().join("missing.json")),
        Err(Error::Io { .. })
    ));
}
