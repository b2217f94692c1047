//! Training one MNIST unit through `smi::run_with_checkpoint` with epochs of shuffled batches:
//! the core's [`FileCheckpoint`] saves the state, its gzipped copy and the progress file (its
//! sidecar) after every epoch, and a rerun resumes from them.

use std::io::{Read, Write};

use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;

use super::*;
use crate::cpu_time::process_cpu_seconds;
use smi::FileCheckpoint;

/// The state and progress files of a unit; `tag` ([`Plan::file_tag`]) keeps a variant of the
/// paper's settings apart from the paper's own unit.
fn checkpoint_paths(out: &Path, layers: usize, method: Method, tag: &str) -> (PathBuf, PathBuf) {
    let dir = out.join("checkpoints");
    (
        dir.join(format!("mnist-{layers}-{method}{tag}.json")),
        dir.join(format!("mnist-{layers}-{method}{tag}.progress.json")),
    )
}

/// The compressed copy of checkpoint `ckpt`: `<ckpt>.gz` (the JSON state gzipped, ≈ 2.2×
/// smaller), written after every epoch beside the state itself. It is the file a repository of
/// records keeps (the state itself is large and git-ignored) so that a unit resumes on another
/// machine: where the state is missing, [`restore_compressed`] writes it back from this copy.
fn compressed_path(ckpt: &Path) -> PathBuf {
    let name = ckpt
        .file_name()
        .map_or_else(|| "checkpoint".into(), |s| s.to_string_lossy());
    ckpt.with_file_name(format!("{name}.gz"))
}

/// Writes [`compressed_path`]`(ckpt)` from the state just saved at `ckpt`, atomically: the
/// checkpoint's copy hook ([`smi::FileCheckpoint::with_copy`]), so the copy is written before
/// the progress file that names its step.
fn write_compressed(ckpt: &Path) -> std::io::Result<()> {
    let bytes = std::fs::read(ckpt)?;
    let mut enc = GzEncoder::new(Vec::with_capacity(bytes.len() / 2), Compression::default());
    enc.write_all(&bytes)?;
    smi_fit::files::write_atomic(&compressed_path(ckpt), &enc.finish()?)
}

/// Where the state `ckpt` is missing and its compressed copy is present (a unit carried to
/// another machine by its records), writes the state back from the copy.
/// An unreadable copy is reported and left alone (the unit then starts afresh).
fn restore_compressed(ckpt: &Path, label: &str) {
    let gz = compressed_path(ckpt);
    if ckpt.exists() || !gz.is_file() {
        return;
    }
    let restored = std::fs::File::open(&gz).and_then(|f| {
        let mut bytes = Vec::new();
        GzDecoder::new(std::io::BufReader::new(f)).read_to_end(&mut bytes)?;
        smi_fit::files::write_atomic(ckpt, &bytes)
    });
    match restored {
        Ok(()) => eprintln!("{label}: restored {} from {}", ckpt.display(), gz.display()),
        Err(e) => eprintln!("{label}: cannot restore from {} ({e})", gz.display()),
    }
}

/// What a checkpoint that fits this run restores.
struct Resumed {
    state: State,
    /// Mean loss of the checkpoint's last epoch (`epoch_loss` of the progress file; NaN when
    /// absent).
    epoch_loss: f64,
}

/// A resumable state, if the checkpoint `files` fits this run (its progress file names the
/// training configuration `key` and the state's step); `files`' clock then continues from the
/// progress file's seconds.
fn try_resume(
    engine: &dyn Engine,
    files: &mut FileCheckpoint,
    key: &str,
    total: u64,
    label: &str,
) -> Result<Option<Resumed>> {
    let ckpt = files.path().to_path_buf();
    if !ckpt.is_file() {
        return Ok(None);
    }
    let Some(meta) = files.read_sidecar().ok().flatten() else {
        eprintln!(
            "{label}: {} has no readable progress file; starting afresh",
            ckpt.display()
        );
        return Ok(None);
    };
    if meta.fields.get("train_key").and_then(Value::as_str) != Some(key) {
        eprintln!(
            "{label}: the checkpoint {} belongs to another training configuration; starting \
             afresh (it will be overwritten)",
            ckpt.display()
        );
        return Ok(None);
    }
    let resumed = match files.load(engine) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{label}: cannot resume ({e}); starting afresh");
            return Ok(None);
        }
    };
    let Some(resumed) = resumed else {
        return Ok(None);
    };
    let Some(sidecar) = resumed.sidecar else {
        eprintln!(
            "{label}: the checkpoint and its progress file disagree on the step count; \
             starting afresh"
        );
        return Ok(None);
    };
    if resumed.state.step > total {
        bail!(
            "{label}: the checkpoint {} is at step {}, beyond this run's {total} steps; ask for \
             more --epochs, use another --out, or --resume false to overwrite it",
            ckpt.display(),
            resumed.state.step
        );
    }
    Ok(Some(Resumed {
        state: resumed.state,
        epoch_loss: sidecar.epoch_loss.unwrap_or(f64::NAN),
    }))
}

/// The per-epoch bookkeeping of a training run: a progress bar per epoch and the epoch line
/// (the checkpoint writes the state, its copy and the progress file).
struct EpochLog<'a> {
    plan: &'a Plan,
    layers: usize,
    method: Method,
    label: String,
    spe: u64,
    bar: Option<Bar>,
    /// Finite losses of the current epoch so far (sum, count) and its steps in this run.
    running: (f64, u64),
    steps: u64,
    mark: Instant,
    cpu_mark: Option<f64>,
    final_loss: f64,
}

impl Observer for EpochLog<'_> {
    fn on_start(&mut self, _total: u64) {
        self.mark = Instant::now();
        self.cpu_mark = process_cpu_seconds();
    }

    fn on_step(&mut self, p: &Progress) {
        let epoch = (p.step - 1) / self.spe;
        let pos = p.step - epoch * self.spe;
        if self.steps == 0 && self.plan.progress {
            let mut bar = Bar::new(
                &format!(
                    "{}L {} ep {}/{}",
                    self.layers,
                    self.method,
                    epoch + 1,
                    self.plan.epochs
                ),
                1,
            );
            bar.on_start(self.spe);
            self.bar = Some(bar);
        }
        self.steps += 1;
        if p.loss.is_finite() {
            self.running.0 += p.loss;
            self.running.1 += 1;
        }
        let mean = if self.running.1 > 0 {
            self.running.0 / self.running.1 as f64
        } else {
            f64::NAN
        };
        if let Some(bar) = &mut self.bar {
            bar.on_step(&Progress::new(pos, self.spe, mean, "fit"));
        }
    }

    fn on_epoch_end(&mut self, end: &EpochEnd<'_>) -> smi::Result<()> {
        if let Some(mut bar) = self.bar.take() {
            bar.on_finish();
        }
        let secs = self.mark.elapsed().as_secs_f64();
        let now = process_cpu_seconds();
        let cpu = self.cpu_mark.zip(now).map(|(a, b)| b - a);
        self.final_loss = end.mean_loss;
        eprintln!(
            "{}: epoch {}/{} mean loss {:.4}, {secs:.1} s ({:.3} s per step, {} CPU s)",
            self.label,
            end.epoch,
            self.plan.epochs,
            end.mean_loss,
            secs / self.steps.max(1) as f64,
            cpu.map_or("?".to_string(), |c| format!("{c:.1}"))
        );
        self.mark = Instant::now();
        self.cpu_mark = now;
        self.running = (0.0, 0);
        self.steps = 0;
        Ok(())
    }
}

/// Trains `engine` for the plan's epochs with a checkpoint and a progress file after every
/// epoch, resuming from them when they belong to this training configuration (`key`).
pub(super) fn train(
    plan: &Plan,
    engine: &dyn Engine,
    layers: usize,
    method: Method,
    n: usize,
    key: &str,
) -> Result<Trained> {
    let rows = epochs(plan, n);
    let spe = rows.steps_per_epoch();
    let total = plan.total_steps(n)?;
    let label = format!("mnist {layers}-layer {method}");
    let (ckpt, progress_path) = checkpoint_paths(&plan.out, layers, method, &plan.file_tag(method));
    if let Some(dir) = ckpt.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    if plan.resume {
        restore_compressed(&ckpt, &label);
    }
    // Its clock starts here (or where `try_resume` loads a state): training time.
    let mut files = FileCheckpoint::new(&ckpt)
        .with_sidecar(progress_path)
        .with_copy(write_compressed)
        .with_fields(json!({"train_key": key, "steps_per_epoch": spe}))?;
    let resumed = if plan.resume {
        try_resume(engine, &mut files, key, total, &label)?
    } else {
        None
    };
    let (state, final_loss) = match resumed {
        Some(r) => {
            eprintln!(
                "{label}: resuming from {} at epoch {} of {} (step {})",
                ckpt.display(),
                r.state.step / spe,
                plan.epochs,
                r.state.step
            );
            // When nothing is left to train, the checkpoint's last epoch is the final one.
            (r.state, r.epoch_loss)
        }
        None => (
            engine.init().context("cannot initialise the particles")?,
            f64::NAN,
        ),
    };
    let mut log = EpochLog {
        plan,
        layers,
        method,
        label,
        spe,
        bar: None,
        running: (0.0, 0),
        steps: 0,
        mark: Instant::now(),
        cpu_mark: None,
        final_loss,
    };
    let settings = RunSettings {
        max_steps: total,
        checkpoint_every: spe,
        rows: RowSource::Epochs(rows),
        ..Default::default()
    };
    let result = smi::run_with_checkpoint(engine, state, &settings, &mut log, &mut files)
        .with_context(|| format!("training {} (checkpoint {})", log.label, ckpt.display()))?;
    // The seconds of the last save (the end of the last epoch): a unit resumed at its end
    // reports its progress file's seconds to the bit.
    let elapsed = files.at_last_save();
    Ok(Trained {
        state: result.state,
        train_seconds: elapsed.seconds,
        final_loss: log.final_loss,
        cpu_seconds: elapsed.cpu_seconds,
    })
}
