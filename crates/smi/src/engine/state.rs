//! `State`: every mutable piece of a run (particles, optimizer moments, RNG, step counters,
//! early-stopping averages), so saving the state is the checkpoint.

use std::io::Write;
use std::path::Path;

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::engine::early_stop::EarlyStopState;
use crate::error::{Error, Result};
use crate::matrix::Matrix;
use crate::optim::OptimizerState;

/// Format tag written into checkpoints; bumped when the layout of `State` changes.
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
    /// The engine configuration this state belongs to (settings and model shape), checked on
    /// load.
    pub fingerprint: String,
}

#[derive(Serialize, Deserialize)]
struct Envelope<S> {
    format: String,
    state: S,
}

impl State {
    /// Writes the state to `path` atomically (a temporary file in the same folder, then rename).
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written.
    pub fn save(&self, path: &Path) -> Result<()> {
        let io = |source| Error::Io {
            path: path.display().to_string(),
            source,
        };
        let tmp = path.with_extension("tmp");
        let env = Envelope {
            format: CHECKPOINT_FORMAT.to_string(),
            state: self,
        };
        let bytes = serde_json::to_vec(&env)
            .map_err(|e| Error::Checkpoint(format!("cannot serialise the state: {e}")))?;
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        f.write_all(&bytes).map_err(io)?;
        f.sync_all().map_err(io)?;
        drop(f);
        std::fs::rename(&tmp, path).map_err(io)
    }

    /// Reads a state written by [`State::save`] and checks that it belongs to an engine with
    /// `fingerprint` (see `Engine::fingerprint`).
    ///
    /// # Errors
    /// [`Error::Io`] if unreadable, [`Error::Checkpoint`] for a corrupt file, another format
    /// version or another configuration.
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
        Ok(env.state)
    }
}
