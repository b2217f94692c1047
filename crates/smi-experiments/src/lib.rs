//! # smi-experiments — the ELBOing-Stein paper's experiments as a library
//!
//! One module (or folder) per experiment. Each defines its options (`Args`, clap-derivable so
//! the `smi` command can offer them), a `run` that appends one JSON record per unit to
//! `<out>/<experiment>.jsonl` and resumes from them, and a `report` that rebuilds its tables
//! and figures from the records only. Methods and engines come from the method-layer
//! presets ([`smi::Method::preset`]); each experiment states only its deltas.
//!
//! Shared pieces: [`records`] (the JSONL records), [`locks`] (per-unit locks, so that runs
//! sharing an output folder split the work), [`tables`] (Markdown), [`plot`] (figure helpers),
//! and [`mod@bench`] (the benchmark cases of `smi bench`). The UCI fit protocol, progress bars,
//! memory checks, atomic writes and the embedded font come from the floor below, `smi-fit`
//! ([`smi_fit::protocol`], [`smi_fit::progress`], [`smi_fit::limits`], [`smi_fit::files`],
//! [`smi_fit::plot`]).
#![forbid(unsafe_code)]

pub mod bench;
pub mod cpu_time;
pub mod device;
pub mod locks;
pub mod mnist;
pub mod paper;
pub mod plot;
pub mod records;
pub mod resumable;
pub mod seeds;
pub mod tables;
pub mod toy;
pub mod uci;
pub mod variance;
pub mod wave;

/// The options `A` (a command's `clap::Args`) with `extra` on the command line.
#[cfg(test)]
pub(crate) fn parse_args<A: clap::Args + clap::FromArgMatches>(extra: &[&str]) -> A {
    let matches = A::augment_args(clap::Command::new("x"))
        .try_get_matches_from(std::iter::once("x").chain(extra.iter().copied()))
        .expect("options parse");
    A::from_arg_matches(&matches).expect("options parse")
}

use clap::Subcommand;

/// The experiments `smi reproduce` knows.
#[derive(Subcommand, Debug)]
pub enum Experiment {
    /// Variance collapse on N(0, I_d): SMI-1, SMI-20, SVGD-20, ASVGD-20 over dimensions
    /// (docs/algorithms.md §7.1).
    Variance(variance::Args),
    /// 1-D wave regression: LPPD and 90 % HDI in and between the data clusters
    /// (docs/algorithms.md §7.2).
    Wave(wave::Args),
    /// Recovery point: how many SVGD particles match 5-particle SMI's LPPD
    /// (docs/algorithms.md §7.2).
    Recovery(wave::recovery::Args),
    /// The paper's appendix figure: 2-particle SMI and SVGD on a 2-D Gaussian, their forces and
    /// variances (10 000 steps, converged; --quick: 1 000).
    Toy(toy::Args),
    /// UCI regression, standard and Gap10 splits, all six methods (docs/algorithms.md §7.3).
    Uci(uci::Args),
    /// MNIST classification with 1- and 2-hidden-layer BNNs (docs/algorithms.md §7.4).
    Mnist(mnist::Args),
}

/// Runs one experiment.
pub fn run(experiment: Experiment) -> anyhow::Result<()> {
    match experiment {
        Experiment::Variance(a) => variance::run(&a),
        Experiment::Wave(a) => wave::run(&a),
        Experiment::Recovery(a) => wave::recovery::run(&a),
        Experiment::Toy(a) => toy::run(&a),
        Experiment::Uci(a) => uci::run(&a),
        Experiment::Mnist(a) => mnist::run(&a),
    }
}

/// Rebuilds the reports of every experiment that has records in `out`; returns how many
/// experiments had records.
///
/// # Errors
/// A record file that cannot be read or a table or figure that cannot be written.
pub fn report_all(out: &std::path::Path) -> anyhow::Result<()> {
    variance::report(out)?;
    wave::report(out)?;
    wave::recovery::report(out)?;
    toy::report(out)?;
    uci::report(out)?;
    mnist::report(out)?;
    Ok(())
}
