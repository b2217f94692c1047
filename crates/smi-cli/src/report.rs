//! `smi report`: rebuilds every table and figure from the records in `--out`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// Options of `smi report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Folder holding the `.jsonl` records; tables and figures are written next to them.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
}

/// The record files (`<experiment>.jsonl`, not empty) in `out`, sorted by name.
///
/// # Errors
/// A missing or unreadable folder, or one without records, naming what was looked for.
pub fn record_files(out: &Path) -> anyhow::Result<Vec<String>> {
    let shown = out.display();
    if !out.is_dir() {
        bail!(
            "--out {shown}: no such folder (smi report reads the <experiment>.jsonl records \
             that `smi reproduce … --out {shown}` writes there)"
        );
    }
    let mut names = Vec::new();
    for entry in std::fs::read_dir(out).with_context(|| format!("cannot read {shown}"))? {
        let entry = entry.with_context(|| format!("cannot read {shown}"))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let nonempty = entry.metadata().is_ok_and(|m| m.is_file() && m.len() > 0);
        if name.ends_with(".jsonl") && nonempty {
            names.push(name);
        }
    }
    if names.is_empty() {
        bail!(
            "--out {shown}: no records to report on (looked for non-empty <experiment>.jsonl \
             files, written by `smi reproduce … --out {shown}`)"
        );
    }
    names.sort();
    Ok(names)
}

/// Rebuilds the reports of every experiment that has records.
pub fn run(args: &Args) -> anyhow::Result<()> {
    let names = record_files(&args.out)?;
    smi_experiments::report_all(&args.out)?;
    eprintln!(
        "reports written to {} from {}",
        args.out.display(),
        names.join(", ")
    );
    Ok(())
}
