//! `State`: every mutable piece of a run (particles, optimizer moments, RNG, step counters,
//! early-stopping averages, the learning-rate schedule's and the convergence rule's
//! accumulators), so saving the state is the checkpoint.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::engine::convergence::ConvergenceState;
use crate::engine::early_stop::EarlyStopState;
use crate::engine::verdict::ElboTrack;
use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::optim::{LrScheduleState, OptimizerState};

/// Format tag written into checkpoints; bumped when the layout of `State` changes in a way old
/// checkpoints cannot be read into. Fields added since (the schedule's and the convergence
/// rule's accumulators) default to their fresh values, so `smi-state-v1` files written before
/// them still load.
pub const CHECKPOINT_FORMAT: &str = "smi-state-v1";

/// The mutable state of a Stein or SVI run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// m×p unconstrained particles (m = 1 for SVI), one per row.
    pub particles: Matrix,
    /// Optimizer moments over the flattened particles.
    pub optimizer: OptimizerState,
    /// The run's only source of randomness.
    pub rng: ChaCha8Rng,
    /// Steps taken (including skipped ones).
    pub step: u64,
    /// Steps skipped because a value was non-finite.
    pub skipped_steps: u64,
    /// Running averages of the early-stopping rule.
    pub early_stop: EarlyStopState,
    /// The learning-rate schedule's accumulators (reduce-on-plateau), fresh by default.
    #[serde(default)]
    pub lr_schedule: LrScheduleState,
    /// The convergence rule's accumulators, fresh by default.
    #[serde(default)]
    pub convergence: ConvergenceState,
    /// The recent ELBO estimates and block means the run's verdict is drawn from
    /// (docs/convergence.md), fresh by default.
    #[serde(default)]
    pub elbo_track: ElboTrack,
    /// The engine configuration this state belongs to (settings and model shape), checked on
    /// load.
    pub fingerprint: String,
}

#[derive(Serialize, Deserialize)]
struct Envelope<S> {
    format: String,
    state: S,
}

/// Distinguishes the temporary files of one process's saves (with the process id in the name,
/// no two writers share one).
static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl State {
    /// Checks that the state can be saved and resumed: every optimizer buffer holds one value per
    /// particle entry (m·p), every number — particles, optimizer buffers, early-stopping
    /// averages, schedule and convergence accumulators — is finite, and the optimizer's
    /// accumulated squares are not negative.
    /// [`State::save`] and [`State::load`] run it.
    ///
    /// # Errors
    /// [`Error::Shape`] naming the buffer of the wrong length; [`Error::NonFinite`] naming the
    /// first non-finite value (the particle and column, or the optimizer buffer and index);
    /// [`Error::Data`] for a negative accumulated square.
    pub fn validate(&self) -> Result<()> {
        self.optimizer.check_len(self.particles.as_slice().len())?;
        let cols = self.particles.cols().max(1);
        if let Some(i) = self
            .particles
            .as_slice()
            .iter()
            .position(|v| !v.is_finite())
        {
            return Err(Error::non_finite(format!(
                "particles: particle {}, column {} = {}",
                i / cols,
                i % cols,
                self.particles.as_slice()[i]
            )));
        }
        self.optimizer.check_values()?;
        for (name, v) in [
            ("fast", self.early_stop.fast),
            ("slow", self.early_stop.slow),
        ] {
            if !v.is_finite() {
                return Err(Error::non_finite(format!(
                    "early-stopping state: {name} average = {v}"
                )));
            }
        }
        self.lr_schedule.validate()?;
        self.elbo_track.validate()?;
        self.convergence.validate()
    }

    /// Writes the state to `path` atomically: into a temporary file of a name unique to this
    /// process and call (`<name>.<pid>.<n>.tmp`, in the same folder), then renamed over `path`.
    ///
    /// A state that [`State::validate`] rejects is not written (JSON has no NaN or infinity, so
    /// such a checkpoint could never be loaded): the file at `path` stays as it was.
    ///
    /// # Errors
    /// [`Error::NonFinite`] naming the non-finite value (particles, which optimizer buffer, or
    /// the early-stopping averages); [`Error::Checkpoint`] for buffers of inconsistent lengths
    /// or a path without a file name; [`Error::Io`] when the file cannot be written.
    pub fn save(&self, path: &Path) -> Result<()> {
        self.validate().map_err(|e| match e {
            Error::NonFinite { context } => Error::non_finite(format!(
                "the state to save to {p}: {context} (a checkpoint holds only finite numbers; \
                 {p} is left as it was)",
                p = path.display()
            )),
            other => Error::Checkpoint(format!(
                "refusing to save an inconsistent state to {}: {other}",
                path.display()
            )),
        })?;
        let env = Envelope {
            format: CHECKPOINT_FORMAT.to_string(),
            state: self,
        };
        let bytes = serde_json::to_vec(&env)
            .map_err(|e| Error::Checkpoint(format!("cannot serialise the state: {e}")))?;
        write_atomic(path, &bytes)
    }

    /// Reads a state written by [`State::save`], checks that it belongs to an engine with
    /// `fingerprint` (see `Engine::fingerprint`) and that it is consistent
    /// ([`State::validate`]).
    ///
    /// Any file content gives either such a state or an error, never a panic.
    ///
    /// # Errors
    /// [`Error::Io`] if unreadable, [`Error::Checkpoint`] for a corrupt file (including buffers
    /// whose lengths disagree and non-finite numbers), another format version or another
    /// configuration.
    pub fn load(path: &Path, fingerprint: &str) -> Result<State> {
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: path.display().to_string(),
            source,
        })?;
        let env: Envelope<State> = serde_json::from_slice(&bytes).map_err(|e| {
            Error::Checkpoint(format!("{} is not a valid checkpoint: {e}", path.display()))
        })?;
        if env.format != CHECKPOINT_FORMAT {
            return Err(Error::Checkpoint(format!(
                "{} has format {}, this program reads {CHECKPOINT_FORMAT}",
                path.display(),
                env.format
            )));
        }
        if env.state.fingerprint != fingerprint {
            return Err(Error::Checkpoint(format!(
                "{} was written by another configuration:\n  checkpoint: {}\n  this run:   {}",
                path.display(),
                env.state.fingerprint,
                fingerprint
            )));
        }
        env.state.validate().map_err(|e| {
            Error::Checkpoint(format!("{} is not a valid checkpoint: {e}", path.display()))
        })?;
        Ok(env.state)
    }
}

/// Writes `bytes` to `path` atomically: into a temporary file next to it ([`create_temp`]),
/// synced, then renamed over `path`.
///
/// # Errors
/// [`Error::Checkpoint`] for a path without a file name; [`Error::Io`] when the file cannot be
/// written.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let (tmp, mut file) = create_temp(path)?;
    let written = file.write_all(bytes).and_then(|()| file.sync_all());
    drop(file);
    let written = written.and_then(|()| std::fs::rename(&tmp, path));
    if let Err(source) = written {
        // Best effort: the error that matters is the write's.
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::Io {
            path: path.display().to_string(),
            source,
        });
    }
    sync_parent(path);
    Ok(())
}

/// Creates a new temporary file next to `path`, named `<name>.<pid>.<n>.tmp` with a per-process
/// counter `n`; a name left behind by an earlier process is skipped, never overwritten.
fn create_temp(path: &Path) -> Result<(PathBuf, File)> {
    let name = path.file_name().ok_or_else(|| {
        Error::Checkpoint(format!(
            "cannot save a checkpoint to {}: the path has no file name",
            path.display()
        ))
    })?;
    let pid = std::process::id();
    let mut last = None;
    for _ in 0..64 {
        let mut tmp_name = name.to_os_string();
        tmp_name.push(format!(
            ".{pid}.{}.tmp",
            TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let tmp = path.with_file_name(tmp_name);
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => last = Some(e),
            Err(source) => {
                return Err(Error::Io {
                    path: tmp.display().to_string(),
                    source,
                })
            }
        }
    }
    Err(Error::Io {
        path: path.display().to_string(),
        source: last.unwrap_or_else(|| ErrorKind::AlreadyExists.into()),
    })
}

/// Flushes the rename to disk by syncing the folder (Unix; best effort: the data is already
/// written, and some file systems refuse to sync a folder).
fn sync_parent(path: &Path) {
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optim::SgdState;
    use rand::SeedableRng;

    fn tiny() -> State {
        State {
            particles: Matrix::zeros(1, 2),
            optimizer: OptimizerState::Sgd(SgdState),
            rng: ChaCha8Rng::seed_from_u64(0),
            step: 0,
            skipped_steps: 0,
            early_stop: EarlyStopState::default(),
            lr_schedule: LrScheduleState::default(),
            convergence: ConvergenceState::default(),
            elbo_track: ElboTrack::default(),
            fingerprint: "tiny".into(),
        }
    }

    #[test]
    fn temporary_names_are_unique_per_process_and_call_and_beside_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        let (a, _fa) = create_temp(&path).unwrap();
        let (b, _fb) = create_temp(&path).unwrap();
        assert_ne!(a, b);
        let prefix = format!("run.json.{}.", std::process::id());
        for t in [&a, &b] {
            assert_eq!(t.parent(), path.parent());
            let name = t.file_name().unwrap().to_str().unwrap();
            assert!(
                name.starts_with(&prefix) && name.ends_with(".tmp"),
                "{name}"
            );
        }
        // The save itself leaves only the target.
        tiny().save(&path).unwrap();
        assert_eq!(State::load(&path, "tiny").unwrap(), tiny());
    }

    #[test]
    fn a_path_without_a_file_name_is_a_checkpoint_error() {
        assert!(matches!(
            tiny().save(Path::new("..")),
            Err(Error::Checkpoint(_))
        ));
    }

    #[test]
    fn non_finite_early_stopping_averages_are_not_saved() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        let mut st = tiny();
        st.early_stop.slow = f64::INFINITY;
        match st.save(&path) {
            Err(Error::NonFinite { context }) => assert!(context.contains("slow"), "{context}"),
            other => panic!("{other:?}"),
        }
        assert!(!path.exists());
        let mut st = tiny();
        st.convergence.windows.reference = Some(f64::NAN);
        assert!(matches!(st.save(&path), Err(Error::NonFinite { .. })));
        let mut st = tiny();
        st.lr_schedule.plateau.sum = f64::NEG_INFINITY;
        assert!(matches!(st.save(&path), Err(Error::NonFinite { .. })));
        assert!(!path.exists());
    }
}
