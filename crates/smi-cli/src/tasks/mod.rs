//! One file per paper experiment. Each defines its clap `Args`, a `run` that appends records
//! to `<out>/<experiment>.jsonl`, and a `report` that rebuilds its tables and figures from them.

pub mod mnist;
pub mod recovery;
pub mod toy;
pub mod uci;
pub mod variance;
pub mod wave;
pub mod wave_common;

use clap::Subcommand;

/// The experiments `smi reproduce` knows.
#[derive(Subcommand, Debug)]
pub enum Experiment {
    /// Variance collapse on N(0, I_d): SMI-1, SMI-20, SVGD-20, ASVGD-20 over dimensions (§7.1).
    Variance(variance::Args),
    /// 1-D wave regression: LPPD and 90 % HDI in and between the data clusters (§7.2).
    Wave(wave::Args),
    /// Recovery point: how many SVGD particles match 5-particle SMI's LPPD (§7.2).
    Recovery(recovery::Args),
    /// The paper's appendix figure: converged 2-particle SMI and SVGD on a 2-D Gaussian.
    Toy(toy::Args),
    /// UCI regression, standard and Gap10 splits, all six methods (§7.3).
    Uci(uci::Args),
    /// MNIST classification with 1- and 2-hidden-layer BNNs (§7.4).
    Mnist(mnist::Args),
}

/// Runs one experiment.
pub fn run(experiment: Experiment) -> anyhow::Result<()> {
    match experiment {
        Experiment::Variance(a) => variance::run(&a),
        Experiment::Wave(a) => wave::run(&a),
        Experiment::Recovery(a) => recovery::run(&a),
        Experiment::Toy(a) => toy::run(&a),
        Experiment::Uci(a) => uci::run(&a),
        Experiment::Mnist(a) => mnist::run(&a),
    }
}
