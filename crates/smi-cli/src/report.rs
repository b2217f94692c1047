//! `smi report`: rebuilds every table and figure from the records in `--out`.

use std::path::PathBuf;

/// Options of `smi report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Folder holding the `.jsonl` records; tables and figures are written next to them.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
}

/// Rebuilds the reports of every experiment that has records.
pub fn run(args: &Args) -> anyhow::Result<()> {
    smi_experiments::report_all(&args.out)?;
    eprintln!("reports written to {}", args.out.display());
    Ok(())
}
