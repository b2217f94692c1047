//! The toy experiment (placeholder until its implementation lands).

use std::path::{Path, PathBuf};

/// Options of `smi reproduce toy`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Output folder for records, tables and figures.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
}

/// Runs the experiment.
pub fn run(_args: &Args) -> anyhow::Result<()> {
    anyhow::bail!("smi reproduce toy is not available in this build yet")
}

/// Rebuilds the experiment's tables and figures from its records (nothing yet).
pub fn report(_out: &Path) -> anyhow::Result<()> {
    Ok(())
}
