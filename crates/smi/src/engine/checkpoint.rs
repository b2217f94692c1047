//! Checkpoints: where a run keeps its state so that it continues after an interruption.
//!
//! [`crate::run_with_checkpoint`] calls [`Checkpoint::save`] every
//! [`crate::RunSettings::checkpoint_every`] steps, when an observer asks
//! ([`crate::Control::Checkpoint`]) and at the end. [`FileCheckpoint`] keeps it in files: the
//! state (the format of [`State::save`]), a sidecar JSON ([`Sidecar`]: the step, the seconds
//! trained so far, the caller's own fields) and, optionally, a copy of the state written by a
//! hook of the caller (a compressed copy, say). A state is resumed only when the engine accepts
//! it ([`Engine::load_state`]: same model and settings, seed included), so the continued run
//! takes the very steps an uninterrupted one would.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::engine::cpu_time::CpuClock;
use crate::engine::state::{write_atomic, State};
use crate::engine::Engine;
use crate::error::{Error, Result};

/// Where a run saves its state.
pub trait Checkpoint {
    /// Saves `state` (synced: its particles are the engine's); `at` is what the run knows
    /// besides.
    ///
    /// # Errors
    /// Whatever cannot be written; the run ends with that error.
    fn save(&mut self, state: &State, at: &SavePoint) -> Result<()>;
}

/// What the run knows at a save besides the state.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct SavePoint {
    /// Under [`crate::RowSource::Epochs`]: the epochs finished and the mean of the last
    /// finished epoch's finite step losses (NaN if none) — `None` before the first epoch's end
    /// of this run, and without epochs.
    pub epoch: Option<(u64, f64)>,
}

/// Wall-clock and CPU seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Elapsed {
    /// Wall-clock seconds.
    pub seconds: f64,
    /// CPU seconds of the process (all threads); `None` where unreadable.
    pub cpu_seconds: Option<f64>,
}

impl Elapsed {
    /// No time at all.
    pub const ZERO: Elapsed = Elapsed {
        seconds: 0.0,
        cpu_seconds: Some(0.0),
    };
}

/// The sidecar of a [`FileCheckpoint`]: what was true at the save, beside the state.
///
/// The names `steps` and `train_seconds` (MNIST's progress files before this format) are read
/// as `step` and `seconds`; a sidecar without a step (`smi fit`'s checkpoints before it) is
/// read with `step: None`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sidecar {
    /// The state's step at the save.
    #[serde(alias = "steps", default)]
    pub step: Option<u64>,
    /// Wall-clock seconds trained so far, every earlier piece of the run included.
    #[serde(alias = "train_seconds", default)]
    pub seconds: f64,
    /// CPU seconds trained so far; `None` where unreadable.
    #[serde(default)]
    pub cpu_seconds: Option<f64>,
    /// Epochs finished at the save (epoch runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch: Option<u64>,
    /// Mean loss of the last finished epoch (epoch runs only; `None` also for NaN).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub epoch_loss: Option<f64>,
    /// The caller's own fields ([`FileCheckpoint::with_fields`]).
    #[serde(flatten)]
    pub fields: Map<String, Value>,
}

impl Sidecar {
    /// Whether this sidecar describes a state at step `step` (one without a step is taken to).
    pub fn matches(&self, step: u64) -> bool {
        self.step.is_none_or(|s| s == step)
    }

    /// The time it records.
    pub fn elapsed(&self) -> Elapsed {
        Elapsed {
            seconds: self.seconds,
            cpu_seconds: self.cpu_seconds,
        }
    }
}

/// A state loaded by [`FileCheckpoint::load`].
#[derive(Clone, Debug)]
pub struct Resumed {
    /// The state, accepted by the engine.
    pub state: State,
    /// The sidecar, when it describes this state ([`Sidecar::matches`]); `None` when it is
    /// missing, unreadable or of another step (an interruption between the two writes).
    pub sidecar: Option<Sidecar>,
}

/// A caller's hook run after each state write, before the sidecar: it gets the state's path
/// (to write a compressed copy of it, say).
pub type CopyHook = fn(&Path) -> std::io::Result<()>;

/// A checkpoint in files: the state at [`FileCheckpoint::path`], the [`Sidecar`] at
/// [`FileCheckpoint::sidecar_path`] (default: the state's path with the extension
/// `progress.json`), written in that order, each atomically.
///
/// It keeps the run's clock: the seconds of the earlier pieces (from the sidecar of a loaded
/// state) plus those since it was created or loaded, written into every sidecar and given by
/// [`FileCheckpoint::elapsed`].
///
/// ```
/// use smi::testing::BayesLinReg;
/// use smi::{FileCheckpoint, Matrix, Method, NoObserver, RunSettings};
///
/// # fn main() -> smi::Result<()> {
/// let x = Matrix::from_fn(20, 2, |i, j| ((i + 3 * j) % 7) as f64 / 3.0 - 1.0);
/// let y: Vec<f64> = (0..20).map(|i| (i % 4) as f64 / 2.0).collect();
/// let model = BayesLinReg::new(x, y, 0.5, 1.0)?;
/// let engine = Method::Ovi.preset(0).build(&model)?;
/// let dir = std::env::temp_dir().join(format!("smi-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).ok();
/// let mut ckpt = FileCheckpoint::new(dir.join("fit.json"))
///     .with_fields(serde_json::json!({"experiment": "doc"}))?;
/// // Continue a saved state the engine accepts, or start afresh.
/// let state = match ckpt.load(engine.as_ref()) {
///     Ok(Some(resumed)) => resumed.state,
///     Ok(None) | Err(_) => engine.init()?,
/// };
/// let settings = RunSettings {
///     checkpoint_every: 50,
///     ..RunSettings::steps(200)
/// };
/// let run =
///     smi::run_with_checkpoint(engine.as_ref(), state, &settings, &mut NoObserver, &mut ckpt)?;
/// assert_eq!(ckpt.read_sidecar()?.and_then(|s| s.step), Some(run.state.step));
/// ckpt.remove()?;
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct FileCheckpoint {
    path: PathBuf,
    sidecar: Option<PathBuf>,
    copy: Option<CopyHook>,
    fields: Map<String, Value>,
    earlier: Elapsed,
    saved: Elapsed,
    last_epoch: Option<(u64, f64)>,
    wall: Instant,
    cpu: CpuClock,
}

impl FileCheckpoint {
    /// A checkpoint of the state at `path` with its sidecar at `path` with the extension
    /// `progress.json`; no copy, no fields, the clock at zero.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        let path = path.into();
        let sidecar = path.with_extension("progress.json");
        FileCheckpoint {
            path,
            sidecar: Some(sidecar),
            copy: None,
            fields: Map::new(),
            earlier: Elapsed::ZERO,
            saved: Elapsed::ZERO,
            last_epoch: None,
            wall: Instant::now(),
            cpu: CpuClock::start(),
        }
    }

    /// The state alone at `path`, no sidecar ([`crate::RunSettings::checkpoint`]).
    pub fn state_only(path: impl Into<PathBuf>) -> Self {
        FileCheckpoint {
            sidecar: None,
            ..FileCheckpoint::new(path)
        }
    }

    /// The same checkpoint with its sidecar at `sidecar`.
    pub fn with_sidecar(mut self, sidecar: impl Into<PathBuf>) -> Self {
        self.sidecar = Some(sidecar.into());
        self
    }

    /// The same checkpoint running `hook` after each state write.
    pub fn with_copy(mut self, hook: CopyHook) -> Self {
        self.copy = Some(hook);
        self
    }

    /// The same checkpoint writing the fields of `fields` (a JSON object) into every sidecar.
    /// The sidecar's own names (`step`, `seconds`, `cpu_seconds`, `epoch`, `epoch_loss`) are
    /// its own: fields of those names are dropped.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] when `fields` is not a JSON object.
    pub fn with_fields(mut self, fields: impl Serialize) -> Result<Self> {
        let value = serde_json::to_value(fields)
            .map_err(|e| Error::invalid("fields", format!("cannot serialise: {e}")))?;
        let Value::Object(mut map) = value else {
            return Err(Error::invalid("fields", "must be a JSON object"));
        };
        for own in ["step", "seconds", "cpu_seconds", "epoch", "epoch_loss"] {
            map.remove(own);
        }
        self.fields = map;
        Ok(self)
    }

    /// The state's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The sidecar's file (`None` for [`FileCheckpoint::state_only`]).
    pub fn sidecar_path(&self) -> Option<&Path> {
        self.sidecar.as_deref()
    }

    /// The sidecar as it is on disk: `Ok(None)` when there is none.
    ///
    /// # Errors
    /// [`Error::Io`] when it cannot be read, [`Error::Checkpoint`] when it is not a sidecar.
    pub fn read_sidecar(&self) -> Result<Option<Sidecar>> {
        let Some(path) = &self.sidecar else {
            return Ok(None);
        };
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(Error::Io {
                    path: path.display().to_string(),
                    source,
                })
            }
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| Error::Checkpoint(format!("{} is not readable: {e}", path.display())))
    }

    /// The step of the saved state as its sidecar gives it, for listings (`None` without a
    /// state or a readable sidecar). The state itself is not read.
    pub fn saved_step(&self) -> Option<u64> {
        if !self.path.is_file() {
            return None;
        }
        self.read_sidecar().ok().flatten().and_then(|s| s.step)
    }

    /// The saved state, if there is one, checked by `engine`; the clock then continues from
    /// its sidecar's seconds (from zero when the sidecar does not describe it). Whatever the
    /// outcome, this piece's clock starts when `load` returns: a run that starts afresh after a
    /// refused state times itself from there.
    ///
    /// # Errors
    /// What [`Engine::load_state`] says of a state it refuses (another configuration, a torn
    /// or foreign file); the earlier pieces' seconds are then left alone.
    pub fn load(&mut self, engine: &dyn Engine) -> Result<Option<Resumed>> {
        let resumed = self.read_state(engine);
        self.wall = Instant::now();
        self.cpu = CpuClock::start();
        resumed
    }

    /// [`FileCheckpoint::load`] without the clock's restart.
    fn read_state(&mut self, engine: &dyn Engine) -> Result<Option<Resumed>> {
        if !self.path.is_file() {
            return Ok(None);
        }
        let state = engine.load_state(&self.path)?;
        let sidecar = self
            .read_sidecar()
            .ok()
            .flatten()
            .filter(|s| s.matches(state.step));
        self.earlier = sidecar.as_ref().map_or(Elapsed::ZERO, Sidecar::elapsed);
        self.saved = self.earlier;
        self.last_epoch = sidecar
            .as_ref()
            .and_then(|s| Some((s.epoch?, s.epoch_loss.unwrap_or(f64::NAN))));
        Ok(Some(Resumed { state, sidecar }))
    }

    /// The seconds of the earlier pieces (from a loaded sidecar).
    pub fn earlier(&self) -> Elapsed {
        self.earlier
    }

    /// The seconds as of the last save: what the last sidecar says (the earlier pieces' before
    /// any save of this piece, and always for [`FileCheckpoint::state_only`]). A run resumed at
    /// its end and saved again reports the same.
    pub fn at_last_save(&self) -> Elapsed {
        self.saved
    }

    /// The seconds so far: the earlier pieces' plus this piece's.
    pub fn elapsed(&self) -> Elapsed {
        Elapsed {
            seconds: self.earlier.seconds + self.wall.elapsed().as_secs_f64(),
            cpu_seconds: self
                .earlier
                .cpu_seconds
                .zip(self.cpu.seconds())
                .map(|(a, b)| a + b),
        }
    }

    /// Removes the state and its sidecar (a finished run needs neither); a missing file is
    /// fine. What a copy hook wrote is the caller's to remove.
    ///
    /// # Errors
    /// [`Error::Io`] for a file that exists and cannot be removed.
    pub fn remove(&self) -> Result<()> {
        for p in [Some(&self.path), self.sidecar.as_ref()]
            .into_iter()
            .flatten()
        {
            match std::fs::remove_file(p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(Error::Io {
                        path: p.display().to_string(),
                        source,
                    })
                }
            }
        }
        Ok(())
    }
}

impl Checkpoint for FileCheckpoint {
    fn save(&mut self, state: &State, at: &SavePoint) -> Result<()> {
        state.save(&self.path)?;
        if let Some(copy) = self.copy {
            copy(&self.path).map_err(|source| Error::Io {
                path: self.path.display().to_string(),
                source,
            })?;
        }
        if at.epoch.is_some() {
            self.last_epoch = at.epoch;
        }
        let Some(path) = &self.sidecar else {
            return Ok(());
        };
        let now = self.elapsed();
        self.saved = now;
        let sidecar = Sidecar {
            step: Some(state.step),
            seconds: now.seconds,
            cpu_seconds: now.cpu_seconds,
            epoch: self.last_epoch.map(|(e, _)| e),
            epoch_loss: self
                .last_epoch
                .map(|(_, l)| l)
                .filter(|l: &f64| l.is_finite()),
            fields: self.fields.clone(),
        };
        let bytes = serde_json::to_vec_pretty(&sidecar)
            .map_err(|e| Error::Checkpoint(format!("cannot serialise the sidecar: {e}")))?;
        write_atomic(path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sidecars_of_every_earlier_format_read() {
        // MNIST's progress file, the experiments' sidecar, smi fit's meta
        let mnist = r#"{"cpu_seconds": 1045.73, "epoch": 5, "epoch_loss": 8734.17,
            "position": 0, "steps": 2340, "steps_per_epoch": 468, "train_key": "k",
            "train_seconds": 3764.47}"#;
        let s: Sidecar = serde_json::from_str(mnist).unwrap();
        assert_eq!(s.step, Some(2340));
        assert_eq!(s.seconds, 3764.47);
        assert_eq!(s.cpu_seconds, Some(1045.73));
        assert_eq!((s.epoch, s.epoch_loss), (Some(5), Some(8734.17)));
        assert_eq!(s.fields["train_key"], "k");
        assert_eq!(s.fields["steps_per_epoch"], 468);
        let uci = r#"{"cpu_seconds":null,"seconds":10946.4,"step":55000}"#;
        let s: Sidecar = serde_json::from_str(uci).unwrap();
        assert_eq!(
            (s.step, s.seconds, s.cpu_seconds),
            (Some(55000), 10946.4, None)
        );
        assert!(s.fields.is_empty());
        let fit = r#"{"format": "smi-fit-checkpoint-v1", "method": "smi", "seconds": 2.5}"#;
        let s: Sidecar = serde_json::from_str(fit).unwrap();
        assert_eq!((s.step, s.seconds), (None, 2.5));
        assert!(s.matches(7));
        assert_eq!(s.fields["format"], "smi-fit-checkpoint-v1");
        // a written sidecar reads back as itself, the caller's fields beside the own ones
        let back: Sidecar = serde_json::from_slice(&serde_json::to_vec(&s).unwrap()).unwrap();
        assert_eq!(back, s);
    }

    /// OVI with Adam(`lr`) on `model`.
    fn engine(model: &crate::testing::BayesLinReg, lr: f64) -> Box<dyn Engine + '_> {
        crate::Method::Ovi
            .preset(0)
            .with_optimizer(crate::OptimizerSettings::adam(lr))
            .build(model)
            .unwrap()
    }

    /// A linear regression on 40 rows of two deterministic features.
    fn model() -> crate::testing::BayesLinReg {
        let x = crate::Matrix::from_fn(40, 2, |i, j| ((i * 7 + j * 3) % 11) as f64 / 5.0 - 1.0);
        let y: Vec<f64> = (0..40).map(|i| (i % 5) as f64 / 2.0 - 1.0).collect();
        crate::testing::BayesLinReg::new(x, y, 0.5, 1.0).unwrap()
    }

    #[test]
    fn a_file_checkpoint_saves_the_sidecar_and_continues_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.json");
        let model = model();
        let e = engine(&model, 0.01);
        let rows = crate::Epochs {
            num_rows: 40,
            batch_size: 8,
            max_steps_per_epoch: None,
            seed: 1,
        };
        let settings = |steps| crate::RunSettings {
            max_steps: steps,
            checkpoint_every: 5,
            rows: crate::RowSource::Epochs(rows.clone()),
            ..Default::default()
        };
        let straight = crate::run(
            e.as_ref(),
            e.init().unwrap(),
            &settings(20),
            &mut crate::NoObserver,
        )
        .unwrap();

        fn copied(p: &Path) -> std::io::Result<()> {
            std::fs::copy(p, p.with_extension("copy")).map(|_| ())
        }
        let mut ckpt = FileCheckpoint::new(&path)
            .with_copy(copied)
            .with_fields(serde_json::json!({"key": "k", "step": 99}))
            .unwrap();
        assert_eq!(ckpt.load(e.as_ref()).unwrap().map(|r| r.state.step), None);
        let go = |state, steps, ckpt: &mut FileCheckpoint| {
            let s = settings(steps);
            crate::run_with_checkpoint(e.as_ref(), state, &s, &mut crate::NoObserver, ckpt)
        };
        let first = go(e.init().unwrap(), 12, &mut ckpt).unwrap();
        // saved at the end (step 12, not a multiple of 5); the copy hook ran; the caller's
        // "step" gave way to the sidecar's own
        let side = ckpt.read_sidecar().unwrap().unwrap();
        assert_eq!(side.step, Some(12));
        assert_eq!(side.epoch, Some(2), "two epochs of five steps ended");
        assert!(side.epoch_loss.is_some_and(f64::is_finite));
        assert_eq!(side.fields["key"], "k");
        assert!(side.fields.get("step").is_none());
        assert!(path.with_extension("copy").is_file());
        assert_eq!(ckpt.saved_step(), Some(12));

        // a sidecar claiming more seconds: a new checkpoint at the path continues from them
        let mut claimed = side.clone();
        claimed.seconds = 1000.0;
        claimed.cpu_seconds = Some(2000.0);
        let write = |s: &Sidecar| {
            std::fs::write(
                path.with_extension("progress.json"),
                serde_json::to_vec(s).unwrap(),
            )
            .unwrap()
        };
        write(&claimed);
        let mut again = FileCheckpoint::new(&path);
        let resumed = again.load(e.as_ref()).unwrap().unwrap();
        assert_eq!(resumed.state.particles, first.state.particles);
        assert_eq!(resumed.sidecar.map(|s| s.step), Some(Some(12)));
        assert!(again.elapsed().seconds >= 1000.0 && again.elapsed().seconds < 1100.0);
        let rest = go(resumed.state, 20, &mut again).unwrap();
        assert_eq!(rest.state.particles, straight.state.particles, "same bits");
        let end = again.read_sidecar().unwrap().unwrap();
        assert_eq!((end.step, end.epoch), (Some(20), Some(4)));
        assert!(end.seconds >= 1000.0);
        if let Some(cpu) = end.cpu_seconds {
            assert!((2000.0..2100.0).contains(&cpu), "{cpu}");
        }

        // another learning rate's engine refuses the state; a sidecar of another step adds no
        // seconds
        assert!(FileCheckpoint::new(&path)
            .load(engine(&model, 0.02).as_ref())
            .is_err());
        let mut stale = end.clone();
        stale.step = Some(15);
        write(&stale);
        let mut third = FileCheckpoint::new(&path);
        let r = third.load(e.as_ref()).unwrap().unwrap();
        assert!(r.sidecar.is_none());
        assert!(third.earlier().seconds == 0.0 && third.elapsed().seconds < 100.0);

        // giving the checkpoint twice is refused; remove leaves the copy
        let twice = crate::RunSettings {
            checkpoint: Some(path.clone()),
            ..settings(20)
        };
        assert!(crate::run_with_checkpoint(
            e.as_ref(),
            e.init().unwrap(),
            &twice,
            &mut crate::NoObserver,
            &mut third
        )
        .is_err());
        third.remove().unwrap();
        assert!(!path.exists() && !ckpt.sidecar_path().unwrap().exists());
        assert!(path.with_extension("copy").exists());
        third.remove().unwrap();
    }
}
