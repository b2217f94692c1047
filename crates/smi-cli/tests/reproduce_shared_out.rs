//! `smi reproduce` runs sharing one output folder, and absurd sizes, through the binary: two
//! processes started on the same plan split the units between them (no unit computed twice, no
//! failure), and sizes no machine could hold are refused up front with an error naming the flag.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{fails, p, records, stderr};
use tempfile::TempDir;

/// Starts `smi args` twice at once and waits for both; returns their outputs.
fn twice_at_once(args: &[&str]) -> [Output; 2] {
    let start = || {
        Command::new(env!("CARGO_BIN_EXE_smi"))
            .args(args)
            .env("SMI_NO_PROGRESS", "1")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("cannot start the smi binary")
    };
    let (a, b) = (start(), start());
    [a, b].map(|c| c.wait_with_output().expect("cannot wait for smi"))
}

/// Runs `smi reproduce <experiment> --quick <extra> --data-dir DATA --out OUT` twice at once on
/// one fresh folder OUT, requires both runs to succeed and returns the folder.
fn quick_twice_at_once(experiment: &str, extra: &[&str], data: &Path) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["reproduce", experiment, "--quick"];
    args.extend_from_slice(extra);
    args.extend(["--data-dir", p(data), "--out", p(dir.path())]);
    for o in twice_at_once(&args) {
        assert!(o.status.success(), "a run failed:\n{}", stderr(&o));
    }
    dir
}

/// The distinct values of `f` over the records of `<out>/<name>.jsonl`, and the record count.
fn distinct(out: &Path, name: &str, f: impl Fn(&serde_json::Value) -> String) -> (usize, usize) {
    let recs = records(out, name);
    let keys: BTreeSet<String> = recs.iter().map(f).collect();
    (keys.len(), recs.len())
}

fn uci_data() -> PathBuf {
    common::data_dir("uci/yacht/data.txt")
}

#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn two_uci_runs_on_one_folder_split_the_units() {
    let data = uci_data();
    let dir = quick_twice_at_once("uci", &["--methods", "map,ovi", "--splits", "0-3"], &data);
    let out = dir.path();
    let (units, recs) = distinct(out, "uci", |r| format!("{}|{}", r["split"], r["method"]));
    assert_eq!(units, 8, "every unit recorded");
    assert_eq!(recs, 8, "no unit computed twice");
}

#[test]
#[cfg_attr(
    smi_no_mnist_data,
    ignore = "needs the MNIST data: ../shared/data or `smi data fetch mnist`"
)]
fn two_mnist_runs_on_one_folder_split_the_units() {
    let data = common::data_dir("mnist/train-images-idx3-ubyte.gz");
    let dir = quick_twice_at_once("mnist", &[], &data);
    let out = dir.path();
    let (units, recs) = distinct(out, "mnist", |r| r["method"].to_string());
    assert_eq!(units, 5, "every unit recorded");
    assert_eq!(recs, 5, "no unit trained twice");
}

#[test]
fn absurd_sizes_are_refused_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = p(dir.path());
    let none = dir.path().join("no-data");
    fails(
        &[
            "reproduce",
            "variance",
            "--dims",
            "1000000000",
            "--out",
            out,
        ],
        &["--dims", "memory"],
    );
    fails(
        &[
            "reproduce",
            "mnist",
            "--quick",
            "--draws",
            "1000000000",
            "--data-dir",
            p(&none),
            "--out",
            out,
        ],
        &["--draws", "memory"],
    );
    if cfg!(smi_no_uci_data) {
        return; // the rest needs the UCI data (the command must read it before refusing)
    }
    let data = uci_data();
    fails(
        &[
            "reproduce",
            "uci",
            "--quick",
            "--splits",
            "0-4294967295",
            "--list",
            "--data-dir",
            p(&data),
            "--out",
            out,
        ],
        &["--splits", "4294967295"],
    );
    // A data folder whose n_splits.txt announces 2^64 − 1 splits.
    let fake = dir.path().join("data");
    let yacht = fake.join("uci/yacht");
    std::fs::create_dir_all(&yacht).unwrap();
    for entry in std::fs::read_dir(data.join("uci/yacht")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), yacht.join(entry.file_name())).unwrap();
    }
    std::fs::write(yacht.join("n_splits.txt"), "18446744073709551615\n").unwrap();
    fails(
        &[
            "reproduce",
            "uci",
            "--datasets",
            "yacht",
            "--list",
            "--data-dir",
            p(&fake),
            "--out",
            out,
        ],
        &["n_splits.txt", "18446744073709551615"],
    );
}
