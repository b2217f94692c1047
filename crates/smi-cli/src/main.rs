//! `smi`: reproduce the ELBOing-Stein experiments, benchmark the engines, fit users' data.

mod allocator;
mod bench;
mod data;
mod fit;
mod predict;
mod report;

use clap::{Parser, Subcommand};

/// Stein Mixture Inference: reproduce the paper's experiments, benchmark, fit data.
#[derive(Parser, Debug)]
#[command(
    name = "smi",
    version = smi_experiments::records::VERSION_AND_COMMIT,
    about,
    long_about = None
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one of the paper's experiments; records go to `<out>/<experiment>.jsonl`, tables and
    /// figures next to them.
    Reproduce {
        #[command(subcommand)]
        experiment: smi_experiments::Experiment,
    },
    /// Rebuild every table and figure from the records in `--out`.
    Report(report::Args),
    /// Time one step of an engine on a named configuration; prints one JSON line.
    Bench(bench::Args),
    /// Fit a Bayesian neural network (regression or classification) to a CSV file and save
    /// it as a `.smi` model (calibration on test rows is reported by predict --metrics).
    Fit(fit::FitArgs),
    /// Predict the rows of a CSV file with a saved model: mean, std and a central interval
    /// (regression) or class probabilities (classification); with the target column,
    /// --metrics reports accuracy and calibration (interval coverage, reliability, ECE).
    Predict(predict::PredictArgs),
    /// Describe a saved model: network, how it was fitted, validation metrics.
    Inspect(predict::InspectArgs),
    /// The data sets the experiments read: list them with their sources and SHA-256, fetch
    /// and verify them.
    Data(data::Args),
}

fn main() -> anyhow::Result<()> {
    allocator::keep_step_blocks();
    let cli = Cli::parse();
    match cli.command {
        Command::Reproduce { experiment } => smi_experiments::run(experiment),
        Command::Report(args) => report::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Fit(args) => {
            if fit::run(&args)? == smi_fit::Stop::Interrupted {
                // The model and a checkpoint were saved; the status says the fit was cut short.
                std::process::exit(smi_fit::INTERRUPTED_STATUS);
            }
            Ok(())
        }
        Command::Predict(args) => predict::predict(&args),
        Command::Inspect(args) => predict::inspect(&args),
        Command::Data(args) => data::run(&args),
    }
}
