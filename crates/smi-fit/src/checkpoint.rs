//! The checkpoint of `smi fit --save M`, the core's [`FileCheckpoint`]: the engine state in
//! `M.ckpt` (written atomically every `--checkpoint-every` seconds and when the fit stops at
//! `--max-time` or on Ctrl-C) and its sidecar `M.ckpt.json`, which holds what the fit decided
//! before training ([`Meta`]: the learning rate and its search, the ELBO draws, the training
//! CSV's checksum) beside the step and the seconds trained so far. `smi fit --resume` with the
//! same options reads both and continues; a fit that finishes removes them.

use std::path::{Path, PathBuf};

use crate::train::Recipe;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use smi::{FileCheckpoint, LogDensity, State};

use crate::options::LrScheduleKind;

/// The `format` of `M.ckpt.json`.
pub const META_FORMAT: &str = "smi-fit-checkpoint-v1";

/// The two files of the checkpoint of a model saved to `save`.
#[derive(Clone, Debug)]
pub struct Paths {
    /// `<save>.ckpt`: the engine state.
    pub state: PathBuf,
    /// `<save>.ckpt.json`: [`Meta`].
    pub meta: PathBuf,
}

impl Paths {
    /// The checkpoint files next to `save`.
    pub fn of(save: &Path) -> Self {
        let with = |ext: &str| {
            let mut s = save.as_os_str().to_os_string();
            s.push(ext);
            PathBuf::from(s)
        };
        Paths {
            state: with(".ckpt"),
            meta: with(".ckpt.json"),
        }
    }

    /// Whether either file exists.
    pub fn exist(&self) -> bool {
        self.state.exists() || self.meta.exists()
    }

    /// Removes both files (a missing one is fine).
    pub fn remove(&self) -> Result<()> {
        for p in [&self.state, &self.meta] {
            match std::fs::remove_file(p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e).with_context(|| format!("cannot remove {}", p.display())),
            }
        }
        Ok(())
    }

    /// The core's checkpoint in these files: the state, and `meta` as the fields of its
    /// sidecar (beside the sidecar's own step and seconds trained, [`smi::Sidecar`]).
    ///
    /// # Errors
    /// A `meta` that cannot be serialised.
    pub fn files(&self, meta: &Meta) -> Result<FileCheckpoint> {
        Ok(FileCheckpoint::new(&self.state)
            .with_sidecar(&self.meta)
            .with_fields(meta)?)
    }

    /// Reads the meta file, checking its format.
    ///
    /// # Errors
    /// A missing file (with what `--resume` needs), an unreadable or foreign one.
    pub fn read_meta(&self) -> Result<Meta> {
        let text = std::fs::read(&self.meta).map_err(|e| {
            anyhow::anyhow!(
                "--resume: cannot read the checkpoint {}: {e} (a checkpoint is written when a \
                 fit stops at --max-time, on Ctrl-C and every --checkpoint-every seconds, and \
                 removed when a fit finishes)",
                self.meta.display()
            )
        })?;
        let meta: Meta = serde_json::from_slice(&text)
            .with_context(|| format!("{} is not a checkpoint of smi fit", self.meta.display()))?;
        if meta.format != META_FORMAT {
            bail!(
                "{} has format {:?}; this program reads {META_FORMAT:?}",
                self.meta.display(),
                meta.format
            );
        }
        Ok(meta)
    }

    /// The engine state of `recipe` on `model` from `files` ([`Paths::files`]), checked
    /// against the engine (fingerprint: settings and data shape; particle and optimizer
    /// shapes); `files`' clock then continues from the sidecar's seconds.
    ///
    /// # Errors
    /// A missing, corrupt or foreign state file.
    pub fn read_state(
        &self,
        recipe: &Recipe,
        model: &dyn LogDensity,
        files: &mut FileCheckpoint,
    ) -> Result<State> {
        let engine = crate::train::method_settings(recipe)?.build(model)?;
        let context = || {
            format!(
                "--resume: cannot continue from {} (resume with the options of the \
                 interrupted fit)",
                self.state.display()
            )
        };
        match files.load(engine.as_ref()).with_context(context)? {
            Some(r) => Ok(r.state),
            None => {
                Err(anyhow::anyhow!("{} is missing", self.state.display())).with_context(context)
            }
        }
    }
}

/// What a fit decided before training, kept for `--resume`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// Always [`META_FORMAT`].
    pub format: String,
    /// The method's name.
    pub method: String,
    /// CRC-32 of the training CSV's bytes (a resumed fit must see the same data).
    pub csv_crc32: u32,
    /// The learning rate of the fit (`None` for NUTS).
    pub lr: Option<f64>,
    /// `"fixed"`, `"auto"` or `"none"`.
    pub lr_mode: String,
    /// The scores of the learning-rate search under `--lr auto`.
    pub lr_grid: Vec<(f64, Option<f64>)>,
    /// S, ELBO draws per particle.
    pub elbo_draws: usize,
    /// T, the likelihood temperature of the fit (`None` in checkpoints of an smi that did not
    /// record it).
    #[serde(default)]
    pub temperature: Option<f64>,
    /// The learning-rate schedule of the fit (`None` as for `temperature`).
    #[serde(default)]
    pub lr_schedule: Option<LrScheduleKind>,
    /// The options that define the model, as the fit resolved them, by flag (`--target`,
    /// `--features` in order, `--activation`, `--hidden`, `--prior-scale`,
    /// `--target-scaling`); `None` as for `temperature`.
    #[serde(default)]
    pub model_options: Option<std::collections::BTreeMap<String, String>>,
}

impl Meta {
    /// Checks that a fit whose model options are `now` may continue this checkpoint (read
    /// from `path`): every option the checkpoint records must have its value. A checkpoint
    /// that records none is continued with a warning.
    ///
    /// # Errors
    /// The first option that differs, with the value that resumes the fit.
    pub fn check_model_options(
        &self,
        path: &Path,
        now: &std::collections::BTreeMap<String, String>,
    ) -> Result<()> {
        let Some(then) = &self.model_options else {
            eprintln!(
                "warning: the checkpoint {} does not record the options of its model (written                  by an older smi); it is continued with the model these options give, which                  must be the one it was started with",
                path.display()
            );
            return Ok(());
        };
        // The target first: another target changes the features too.
        let mut flags: Vec<(&String, &String)> = then.iter().collect();
        flags.sort_by_key(|(flag, _)| flag.as_str() != "--target");
        for (flag, was) in flags {
            let is = now.get(flag).map_or("(none)", String::as_str);
            if is != was {
                bail!(
                    "--resume: the checkpoint {} is of a fit with {flag} {was}, not {is} (resume \
                     with the options of that fit)",
                    path.display()
                );
            }
        }
        Ok(())
    }

    /// Checks that a fit at likelihood temperature `temperature` with the learning-rate
    /// `schedule` may continue this checkpoint (read from `path`): both must be the
    /// checkpoint's. A checkpoint that does not record them is continued with a warning.
    ///
    /// # Errors
    /// A temperature or schedule other than the checkpoint's, with the option that resumes it.
    pub fn check_resume(
        &self,
        path: &Path,
        temperature: f64,
        schedule: LrScheduleKind,
    ) -> Result<()> {
        match self.temperature {
            Some(t) if t != temperature => bail!(
                "--resume: the checkpoint {} is of a fit at likelihood temperature {t}, not \
                 {temperature} (resume with the options of that fit: --temperature {t})",
                path.display()
            ),
            Some(_) => {}
            None => eprintln!(
                "warning: the checkpoint {} does not record its likelihood temperature \
                 (written by an older smi); it is continued at T = {temperature}, which must \
                 be the T it was started with",
                path.display()
            ),
        }
        if let Some(s) = self.lr_schedule.filter(|&s| s != schedule) {
            bail!(
                "--resume: the checkpoint {} is of a fit with --lr-schedule {}, not {} (resume \
                 with the options of that fit)",
                path.display(),
                s.name(),
                schedule.name()
            );
        }
        Ok(())
    }
}

/// CRC-32 of the file at `path`.
///
/// # Errors
/// An unreadable file.
pub fn file_crc32(path: &Path) -> Result<u32> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(crc32fast::hash(&bytes))
}
