//! A variational fit that saves its engine state every so many steps and, when run again after
//! an interruption, continues from the last save: the wave and recovery experiments' fits and
//! the UCI units ([`crate::uci`]). The files are the core's [`smi::FileCheckpoint`].
//!
//! The state (`<file>.json`: particles, optimizer moments, RNG, step counter; the engine's
//! [`smi::State`]) and its sidecar (`<file>.progress.json`: the step, wall and CPU seconds at
//! the save) live in `<out>/checkpoints/` and are removed when the fit ends. A state the engine
//! refuses (another configuration, a torn file) is reported and the fit starts afresh. The
//! seconds of the pieces add up; a sidecar that does not match the state's step (an
//! interruption between the two writes) adds nothing.
//!
//! These states can be large (an SVGD fit at m = 256 of the moderate wave net: ≈ 8 million
//! numbers) and stay on the machine (git-ignored): they bridge an interruption there, not a move
//! elsewhere.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use smi::{Engine, FileCheckpoint, MethodSettings, Observer, RunSettings, State, Termination};

/// Where a fit keeps its state and how often it saves it.
#[derive(Clone, Debug, PartialEq)]
pub struct FitCheckpoint {
    /// The state's file (`….json`); the sidecar is `….progress.json` beside it.
    pub path: PathBuf,
    /// Steps between saves (at least 1).
    pub every: u64,
}

impl FitCheckpoint {
    /// Steps between saves of the wave experiments' fits: at the moderate size an SVGD step at
    /// m = 256 took 121–138 ms on 2 threads (measured 2026-11-27, in the history of
    /// BENCHMARKS.md), so an interruption
    /// loses at most about two minutes of such a fit. The cost of a save at that size was not
    /// measured.
    pub const EVERY: u64 = 1_000;

    /// The checkpoint `<out>/checkpoints/<name>.json`, saved every [`FitCheckpoint::EVERY`] steps.
    pub fn in_folder(out: &Path, name: &str) -> Self {
        FitCheckpoint {
            path: out.join("checkpoints").join(format!("{name}.json")),
            every: Self::EVERY,
        }
    }

    /// The same checkpoint saved every `every` steps instead.
    pub fn every(self, every: u64) -> Self {
        FitCheckpoint { every, ..self }
    }

    /// The core's checkpoint in these files, its clock at zero.
    fn files(&self) -> FileCheckpoint {
        FileCheckpoint::new(&self.path)
    }

    /// The step of the saved state as its sidecar gives it, for listings (`None` when there is
    /// no state or no readable sidecar). The state itself is not read: whether a fit resumes
    /// it is decided when the fit starts ([`fit`]).
    pub fn saved_step(&self) -> Option<u64> {
        self.files().saved_step()
    }
}

/// A finished fit: the engine's posterior and state, and the seconds of all its pieces.
pub struct Finished {
    /// The engine's posterior at the last step.
    pub posterior: smi::Mixture,
    /// The final state.
    pub state: State,
    /// Why the run ended (a resumed state whose early-stopping rule had fired ends at once,
    /// [`Termination::EarlyStopped`]).
    pub termination: Termination,
    /// Wall-clock seconds, the earlier pieces included.
    pub seconds: f64,
    /// CPU seconds (all threads), the earlier pieces included; `None` where unreadable.
    pub cpu_seconds: Option<f64>,
    /// Wall-clock seconds of the earlier pieces alone (0 for a fit that did not resume), for a
    /// caller that times more than the fit (an evaluation after it, say).
    pub earlier_seconds: f64,
    /// CPU seconds of the earlier pieces alone; `None` where unreadable.
    pub earlier_cpu_seconds: Option<f64>,
}

/// Runs the variational method of `settings` on `model` under `run` (its step budget and
/// stopping rules; its checkpoint interval is replaced by `ckpt`'s), saving its state to `ckpt`
/// every `ckpt.every` steps and continuing from a saved state the engine accepts; removes the
/// state once the fit ends.
///
/// # Errors
/// Settings, engine or model errors, and a checkpoint that cannot be written (with context).
pub fn fit<M: smi::LogDensity + ?Sized>(
    model: &M,
    settings: &MethodSettings,
    run: &RunSettings,
    ckpt: &FitCheckpoint,
    observer: &mut dyn Observer,
    label: &str,
) -> Result<Finished> {
    let engine = settings.build(model)?;
    fit_engine(engine.as_ref(), run, ckpt, observer, label)
}

/// [`fit`] with a built engine (one on a GPU, say): the same checkpoints, resumption and
/// result.
///
/// # Errors
/// As [`fit`].
pub fn fit_engine(
    engine: &dyn Engine,
    run: &RunSettings,
    ckpt: &FitCheckpoint,
    observer: &mut dyn Observer,
    label: &str,
) -> Result<Finished> {
    anyhow::ensure!(ckpt.every >= 1, "checkpoint interval must be at least 1");
    if let Some(dir) = ckpt.path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut files = ckpt.files();
    let state = match files.load(engine) {
        Ok(Some(r)) => {
            eprintln!(
                "{label}: resuming from {} at step {}",
                ckpt.path.display(),
                r.state.step
            );
            r.state
        }
        Ok(None) => engine.init()?,
        Err(e) => {
            eprintln!("{label}: not resuming ({e}); starting afresh");
            engine.init()?
        }
    };
    let run_settings = RunSettings {
        checkpoint_every: ckpt.every,
        ..run.clone()
    };
    let res = smi::run_with_checkpoint(engine, state, &run_settings, observer, &mut files)?;
    let (earlier, all) = (files.earlier(), files.elapsed());
    // Best effort: a file left behind is refused by the next fit's fingerprint check or
    // resumed at its last step, never mistaken for another fit.
    let _ = files.remove();
    Ok(Finished {
        posterior: engine.posterior(&res.state),
        state: res.state,
        termination: res.termination,
        seconds: earlier.seconds + res.seconds,
        cpu_seconds: all.cpu_seconds,
        earlier_seconds: earlier.seconds,
        earlier_cpu_seconds: earlier.cpu_seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wave::common::{method_settings, FitSpec, Method, PhaseArg, Problem, Size};

    /// SVGD with 4 particles on the low-size wave net, 60 steps, saved every 20 to a file in
    /// `dir`.
    struct Case {
        problem: Problem,
        settings: MethodSettings,
        ckpt: FitCheckpoint,
    }

    impl Case {
        fn new(dir: &Path) -> Self {
            std::fs::create_dir_all(dir.join("checkpoints")).unwrap();
            let spec = FitSpec {
                method: Method::Svgd,
                steps: 60,
                particles: 4,
                elbo_draws: 1,
                draws: 10,
                seed: 7,
                nuts: smi::NutsSettings::numpyro(),
            };
            Case {
                problem: Problem::new(Size::Low, PhaseArg::Code).unwrap(),
                settings: method_settings(&spec),
                ckpt: FitCheckpoint {
                    path: dir.join("checkpoints/f.json"),
                    every: 20,
                },
            }
        }

        /// The whole fit through [`fit`], resuming what is saved.
        fn fit(&self) -> Finished {
            let p = &self.problem.model;
            let run = RunSettings::steps(60);
            fit(
                p,
                &self.settings,
                &run,
                &self.ckpt,
                &mut smi::NoObserver,
                "t",
            )
            .unwrap()
        }

        /// Leaves the state of `settings` after `steps` saved, as an interrupted fit does.
        fn interrupted(&self, settings: &MethodSettings, steps: u64) {
            let engine = settings.build(&self.problem.model).unwrap();
            let run = RunSettings {
                checkpoint: Some(self.ckpt.path.clone()),
                checkpoint_every: self.ckpt.every,
                ..RunSettings::steps(steps)
            };
            let state = engine.init().unwrap();
            smi::run(engine.as_ref(), state, &run, &mut smi::NoObserver).unwrap();
        }

        /// A sidecar as the interrupted fit's observer leaves it.
        fn sidecar(&self, step: u64, seconds: f64, cpu: f64) {
            let v = serde_json::json!({"step": step, "seconds": seconds, "cpu_seconds": cpu});
            std::fs::write(self.sidecar_path(), serde_json::to_vec(&v).unwrap()).unwrap();
        }

        fn sidecar_path(&self) -> PathBuf {
            self.ckpt.path.with_extension("progress.json")
        }
    }

    #[test]
    fn an_interrupted_fit_continues_to_the_same_bits() {
        let dir = tempfile::tempdir().unwrap();
        let c = Case::new(dir.path());
        let whole = c.fit();
        assert_eq!(whole.state.step, 60);
        let gone = !c.ckpt.path.exists() && !c.sidecar_path().exists();
        assert!(gone, "a finished fit leaves nothing");

        // stopped at step 40 (its last save), then run again
        c.interrupted(&c.settings, 40);
        assert!(c.ckpt.path.is_file());
        let resumed = c.fit();
        assert_eq!(resumed.state.step, 60);
        assert_eq!(
            resumed.state.particles.as_slice(),
            whole.state.particles.as_slice(),
            "the continued fit runs the same steps"
        );
        assert!(!c.ckpt.path.exists());

        // the saved state is what the continuation starts from: move it and the end moves
        c.interrupted(&c.settings, 40);
        let engine = c.settings.build(&c.problem.model).unwrap();
        let mut state = engine.load_state(&c.ckpt.path).unwrap();
        state.particles.as_mut_slice()[0] += 0.5;
        state.save(&c.ckpt.path).unwrap();
        let moved = c.fit();
        assert_ne!(
            moved.state.particles.as_slice(),
            whole.state.particles.as_slice()
        );
    }

    #[test]
    fn a_state_of_another_fit_is_not_resumed() {
        let dir = tempfile::tempdir().unwrap();
        let c = Case::new(dir.path());
        let whole = c.fit().state.particles;
        // another seed's state at the same path: refused by the engine, the fit starts afresh
        c.interrupted(&c.settings.clone().with_seed(8), 40);
        assert_eq!(c.fit().state.particles.as_slice(), whole.as_slice());
        // a torn file: the same
        std::fs::write(&c.ckpt.path, b"{\"format\": ").unwrap();
        assert_eq!(c.fit().state.particles.as_slice(), whole.as_slice());
    }

    #[test]
    fn the_seconds_of_the_pieces_add_up() {
        let dir = tempfile::tempdir().unwrap();
        let c = Case::new(dir.path());
        assert_eq!(c.ckpt.saved_step(), None, "nothing saved");
        c.interrupted(&c.settings, 40);
        assert_eq!(c.ckpt.saved_step(), None, "a state without its sidecar");
        c.sidecar(40, 1000.0, 2000.0);
        assert_eq!(c.ckpt.saved_step(), Some(40));
        let f = c.fit();
        assert!(f.seconds >= 1000.0 && f.seconds < 1100.0, "{}", f.seconds);
        if let Some(cpu) = f.cpu_seconds {
            assert!((2000.0..2100.0).contains(&cpu), "{cpu}");
        }
        // a sidecar of another step adds nothing
        c.interrupted(&c.settings, 40);
        c.sidecar(20, 1000.0, 2000.0);
        let f = c.fit();
        assert!(f.seconds < 1000.0, "{}", f.seconds);
    }
}
