//! `smi bench` (placeholder until the benchmark lands).

/// Options of `smi bench`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Configuration name.
    #[arg(long)]
    pub config: String,
}

/// Runs the benchmark.
pub fn run(_args: &Args) -> anyhow::Result<()> {
    anyhow::bail!("smi bench is not available in this build yet")
}
