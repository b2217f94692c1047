//! Helpers of the smi-experiments integration tests: running an experiment as `smi reproduce`
//! would, reading its records, and finding the shared data folder.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Parser;
use serde_json::{Map, Value};
use smi_experiments::{records, Experiment};
use tempfile::TempDir;

#[derive(Parser)]
struct Cli {
    #[command(subcommand)]
    experiment: Experiment,
}

/// Runs `smi reproduce <args>` in this process (the words as on a command line).
pub fn reproduce(args: &[&str]) -> anyhow::Result<()> {
    let cli = Cli::try_parse_from(std::iter::once("smi").chain(args.iter().copied()))
        .unwrap_or_else(|e| panic!("bad test arguments {args:?}: {e}"));
    smi_experiments::run(cli.experiment)
}

/// [`reproduce`] with `extra` appended to `args`.
pub fn reproduce_with(args: &[&str], extra: &[&str]) -> anyhow::Result<()> {
    let mut all = args.to_vec();
    all.extend_from_slice(extra);
    reproduce(&all)
}

/// `reproduce <experiment> --quick --out OUT --data-dir DATA` plus `extra`.
pub fn quick_run(experiment: &str, out: &Path, data: &Path, extra: &[&str]) -> anyhow::Result<()> {
    reproduce_with(
        &[
            experiment,
            "--quick",
            "--out",
            p(out),
            "--data-dir",
            p(data),
        ],
        extra,
    )
}

/// A fresh temporary output folder after one successful `reproduce <experiment> --quick
/// --methods map` on `data`.
pub fn map_run(experiment: &str, data: &Path) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    quick_run(experiment, dir.path(), data, &["--methods", "map"]).unwrap();
    dir
}

/// Requires that less than `secs` seconds have passed since `start` (a refusal up front).
pub fn assert_refused_within(start: Instant, secs: u64) {
    assert!(
        start.elapsed().as_secs() < secs,
        "refused only after {:?}",
        start.elapsed()
    );
}

/// The data folder the build script found (`crates/smi-data/build.rs`: `$SMI_TEST_DATA_DIR`,
/// `shared/data` beside the repository, or the per-user folder). Tests that need it carry
/// `#[cfg_attr(smi_no_uci_data, ignore = "…")]` (or `smi_no_mnist_data`), so they are listed as
/// ignored without the data; one that runs and finds `probe` missing fails.
pub fn data_dir(probe: &str) -> PathBuf {
    let d = PathBuf::from(env!("SMI_TEST_DATA_DIR"));
    assert!(
        d.join(probe).is_file(),
        "{} vanished since the tests were built; rebuild them",
        d.join(probe).display()
    );
    d
}

/// `path` as a command-line word.
pub fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// Every record of `<out>/<experiment>.jsonl`, failed ones included.
pub fn recs(out: &Path, experiment: &str) -> Vec<Map<String, Value>> {
    records::read(out, experiment).unwrap()
}

/// The full error chain of `e`.
pub fn chain(e: &anyhow::Error) -> String {
    format!("{e:#}")
}
