//! Reproducibility: the same seed gives identical results, and a run resumed from a checkpoint
//! is bit-identical to an uninterrupted one.

mod common;

use std::path::{Path, PathBuf};

use common::{run_from, run_steps};
use smi::testing::BayesLinReg;
use smi::{
    run, Engine, Error, GradientReuse, Matrix, NoObserver, OptimizerSettings, OptimizerState,
    RunSettings, State, SteinSettings, SteinVi, Svi, SviSettings,
};

/// A fresh temporary directory and the path of a file `name` in it (the directory lives as
/// long as the returned guard).
fn temp_file(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    (dir, path)
}

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
        // Adagrad's buffers are what the corrupted-checkpoint cases edit (the preset is Adam).
        optimizer: OptimizerSettings::adagrad(0.05),
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
    let (_dir, path) = temp_file("run.json");
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
        // As the run loop does: the step, then its ELBO estimate into the verdict's track.
        let info = e.step(&mut st, None).unwrap();
        st.elbo_track.push(info.elbo);
    }
    st.save(&path).unwrap();
    let rest = run_from(&e, e.load_state(&path).unwrap(), 40);
    assert_eq!(rest.state, full.state);
}

#[test]
fn checkpoint_of_another_configuration_or_corrupt_file_is_a_clear_error() {
    let (dir, path) = temp_file("run.json");
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

/// The SMI settings above with Adam, whose moments a test can push out of range.
fn adam_settings() -> SteinSettings {
    SteinSettings {
        optimizer: OptimizerSettings::adam(0.01),
        ..settings()
    }
}

/// The files in `dir`, sorted.
fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_non_finite_state_is_not_saved_and_the_previous_checkpoint_stays() {
    let (dir, path) = temp_file("run.json");
    let m = model();
    let e = SteinVi::new(&m, adam_settings()).unwrap();
    let mut st = e.init().unwrap();
    e.step(&mut st, None).unwrap();
    st.save(&path).unwrap();
    let before = std::fs::read(&path).unwrap();

    // A direction of 1e200 squares to inf in Adam's second moment while the particles stay
    // finite (the update divides by √v = inf): the state a long run can reach.
    let mut big = st.clone();
    let n = big.particles.as_slice().len();
    let adam = OptimizerSettings::adam(0.01);
    big.optimizer
        .step(&adam, big.particles.as_mut_slice(), &vec![1e200; n])
        .unwrap();
    assert!(big.particles.is_finite());
    let mut nan = st.clone();
    nan.particles.set(2, 1, f64::NAN);
    for (state, names) in [(&big, "`v`[0] = inf"), (&nan, "particle 2, column 1 = NaN")] {
        match state.save(&path) {
            Err(Error::NonFinite { context }) => {
                assert!(context.contains(names), "{context}");
                assert!(context.contains("run.json"), "{context}");
            }
            other => panic!("expected a non-finite error, got {other:?}"),
        }
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "checkpoint unchanged"
        );
        assert_eq!(files_in(dir.path()), ["run.json"], "no temporary file left");
    }
    assert_eq!(e.load_state(&path).unwrap(), st);
}

#[test]
fn concurrent_saves_to_one_path_never_share_a_temporary_file() {
    // With one fixed temporary name, a writer could truncate another's half-written file or
    // rename it away first (the other's rename then fails).
    let (dir, path) = temp_file("run.json");
    let m = model();
    let e = SteinVi::new(&m, settings()).unwrap();
    let states: Vec<_> = (0..4u64)
        .map(|i| {
            let mut st = e.init().unwrap();
            for _ in 0..i {
                e.step(&mut st, None).unwrap();
            }
            st
        })
        .collect();
    std::thread::scope(|scope| {
        for st in &states {
            let path = &path;
            scope.spawn(move || {
                for _ in 0..25 {
                    st.save(path).unwrap();
                }
            });
        }
    });
    assert!(states.contains(&e.load_state(&path).unwrap()));
    assert_eq!(files_in(dir.path()), ["run.json"], "no temporary file left");
}

/// A saved checkpoint of `engine`'s state after two steps, as JSON.
fn saved_json<E: Engine>(engine: &E, path: &Path) -> serde_json::Value {
    let mut st = engine.init().unwrap();
    engine.step(&mut st, None).unwrap();
    engine.step(&mut st, None).unwrap();
    st.save(path).unwrap();
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn a_checkpoint_whose_lengths_disagree_is_rejected_on_load() {
    let (_dir, path) = temp_file("run.json");
    let m = model();
    type Edit = fn(&mut serde_json::Value);
    let cases: [(SteinSettings, Edit, &str); 7] = [
        // Particles shorter than rows × cols: used to panic in the first step.
        (
            settings(),
            |j| {
                drop(
                    j["state"]["particles"]["data"]
                        .as_array_mut()
                        .unwrap()
                        .pop(),
                )
            },
            "shape mismatch",
        ),
        // One particle fewer, consistently: used to load, then fail only at the step.
        (
            settings(),
            |j| {
                let p = &mut j["state"]["particles"];
                let keep = 3 * p["cols"].as_u64().unwrap() as usize;
                p["rows"] = 3.into();
                p["data"].as_array_mut().unwrap().truncate(keep);
                let o = &mut j["state"]["optimizer"];
                o["g_sq"].as_array_mut().unwrap().truncate(keep);
                o["n"].as_array_mut().unwrap().truncate(keep);
            },
            "does not fit this engine",
        ),
        // Short Adam moments: used to load and silently leave parameters unmoved.
        (
            adam_settings(),
            |j| drop(j["state"]["optimizer"]["v"].as_array_mut().unwrap().pop()),
            "`v`",
        ),
        (
            adam_settings(),
            |j| {
                j["state"]["optimizer"]["m"]
                    .as_array_mut()
                    .unwrap()
                    .truncate(1)
            },
            "`m`",
        ),
        (
            settings(),
            |j| {
                j["state"]["optimizer"]["n"]
                    .as_array_mut()
                    .unwrap()
                    .push(0.0.into())
            },
            "`n`",
        ),
        // A second moment sums squares: a negative one would make the next update NaN.
        (
            adam_settings(),
            |j| j["state"]["optimizer"]["v"][0] = (-1.0).into(),
            "is negative",
        ),
        // JSON has no NaN: a non-finite number reads as null (what a broken writer leaves).
        (
            settings(),
            |j| j["state"]["particles"]["data"][5] = serde_json::Value::Null,
            "not a valid checkpoint",
        ),
    ];
    for (s, edit, needle) in cases {
        let e = SteinVi::new(&m, s).unwrap();
        let mut json = saved_json(&e, &path);
        edit(&mut json);
        std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
        let fp = e.fingerprint();
        for got in [e.load_state(&path), State::load(&path, &fp)] {
            match got {
                Err(Error::Checkpoint(msg)) => assert!(msg.contains(needle), "{msg}"),
                // A consistent state of another shape passes `State::load` (the fingerprint is
                // the engine's), and the engine's step refuses it.
                Ok(mut st) if needle == "does not fit this engine" => {
                    let before = st.clone();
                    assert!(matches!(e.step(&mut st, None), Err(Error::Shape { .. })));
                    assert_eq!(st, before, "a refused step changes nothing");
                }
                other => panic!("{needle}: expected a checkpoint error, got {other:?}"),
            }
        }
    }
}

#[test]
fn a_step_refuses_a_state_whose_optimizer_buffers_are_short() {
    let m = model();
    for e in [
        SteinVi::new(&m, adam_settings()).unwrap(),
        SteinVi::new(&m, settings()).unwrap(),
    ] {
        let mut st = e.init().unwrap();
        match &mut st.optimizer {
            OptimizerState::Adam(a) => drop(a.v.pop()),
            OptimizerState::Adagrad(a) => drop(a.n.pop()),
            OptimizerState::Sgd(_) => unreachable!(),
        }
        let before = st.clone();
        assert!(matches!(e.step(&mut st, None), Err(Error::Shape { .. })));
        assert_eq!(
            st, before,
            "nothing moves, not even the step counter or the RNG"
        );
        assert!(matches!(st.validate(), Err(Error::Shape { .. })));
    }
}

#[test]
fn a_hand_written_v1_checkpoint_still_loads_and_resumes() {
    // The `smi-state-v1` layout, field by field, as runs before this version wrote it.
    let (_dir, path) = temp_file("v1.json");
    let m = model();
    let e = Svi::new(
        &m,
        SviSettings {
            optimizer: OptimizerSettings::adam(0.01),
            ..SviSettings::ovi()
        },
    )
    .unwrap();
    let fresh = e.init().unwrap();
    let (cols, zeros) = (fresh.particles.cols(), vec![0.0; fresh.particles.cols()]);
    let v1 = serde_json::json!({
        "format": "smi-state-v1",
        "state": {
            "particles": {"rows": 1, "cols": cols, "data": fresh.particles.as_slice()},
            "optimizer": {"kind": "adam", "m": zeros, "v": zeros, "t": 0},
            "rng": serde_json::to_value(&fresh.rng).unwrap(),
            "step": 0,
            "skipped_steps": 0,
            "early_stop": {"fast": 0.0, "slow": 0.0, "t": 0, "stopped": false},
            "fingerprint": e.fingerprint(),
        }
    });
    std::fs::write(&path, serde_json::to_vec(&v1).unwrap()).unwrap();
    let loaded = e.load_state(&path).unwrap();
    assert_eq!(loaded, fresh);
    assert_eq!(run_from(&e, loaded, 20).state, run_steps(&e, 20).state);
}
