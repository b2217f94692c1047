//! `smi report`: rebuilds every table and figure from the records in `--out`.

pub mod figures;
pub mod tables;

use std::path::PathBuf;

use crate::tasks;

/// Options of `smi report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Folder holding the `.jsonl` records; tables and figures are written next to them.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
}

/// Rebuilds the reports of every experiment that has records.
pub fn run(args: &Args) -> anyhow::Result<()> {
    tasks::variance::report(&args.out)?;
    tasks::wave::report(&args.out)?;
    tasks::recovery::report(&args.out)?;
    tasks::toy::report(&args.out)?;
    tasks::uci::report(&args.out)?;
    tasks::mnist::report(&args.out)?;
    eprintln!("reports written to {}", args.out.display());
    Ok(())
}
