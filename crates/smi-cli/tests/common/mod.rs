//! Helpers shared by the end-to-end tests of the `smi` binary: running it, reading what it
//! writes (JSONL records, PNG figures) and finding the shared data folder.
#![allow(dead_code)]

pub mod fit;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tempfile::TempDir;

/// Runs the `smi` binary with `args` (progress bars off: `SMI_NO_PROGRESS=1`) and returns its
/// output, whatever its exit status.
pub fn smi(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_smi"))
        .args(args)
        .env("SMI_NO_PROGRESS", "1")
        .output()
        .expect("cannot run the smi binary")
}

/// Runs `smi args` and requires success (the failure message shows stderr).
pub fn smi_ok(args: &[&str]) -> Output {
    let out = smi(args);
    assert!(
        out.status.success(),
        "smi {args:?} failed:\n{}",
        stderr(&out)
    );
    out
}

/// Runs `smi args` and requires a clean failure (no panic) whose stderr contains every one of
/// `needles`; returns stderr.
pub fn fails(args: &[&str], needles: &[&str]) -> String {
    let o = smi(args);
    let err = stderr(&o);
    assert!(!o.status.success(), "smi {args:?} should fail");
    assert_ne!(o.status.code(), Some(101), "smi {args:?} panicked:\n{err}");
    assert!(!err.contains("panicked"), "smi {args:?} panicked:\n{err}");
    for n in needles {
        assert!(
            err.contains(n),
            "smi {args:?}: {n:?} not in the error:\n{err}"
        );
    }
    err
}

/// The standard error of a run, lossily decoded.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The standard output of a run, lossily decoded.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `path` as a command-line argument.
pub fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// `args` followed by the words of `opts` (options without spaces in their values, written as
/// on a command line: `"--steps 50 --seed 3"`).
pub fn args_with<'a>(args: &[&'a str], opts: &'a str) -> Vec<&'a str> {
    let mut all = args.to_vec();
    all.extend(opts.split_whitespace());
    all
}

/// `smi reproduce <experiment> --quick --out <out>`, then `--data-dir <data>` when given, then
/// `extra`; requires success.
pub fn reproduce_quick(
    experiment: &str,
    out: &Path,
    data: Option<&Path>,
    extra: &[&str],
) -> Output {
    let mut args = vec!["reproduce", experiment, "--quick", "--out", p(out)];
    if let Some(data) = data {
        args.extend(["--data-dir", p(data)]);
    }
    args.extend_from_slice(extra);
    smi_ok(&args)
}

/// Runs `smi reproduce <experiment> --quick` (on `data` when given) into a fresh temporary
/// folder and requires every record of its `<experiment>.jsonl` to have each key of `keys`
/// (whitespace-separated) and `experiment` as its experiment; returns the folder and the records.
pub fn quick_run(experiment: &str, data: Option<&Path>, keys: &str) -> (TempDir, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    reproduce_quick(experiment, dir.path(), data, &[]);
    let recs = records(dir.path(), experiment);
    assert_records(&recs, experiment, keys);
    (dir, recs)
}

/// `smi report --out <out>` (rebuilds tables and figures from the records); requires success.
pub fn report(out: &Path) {
    smi_ok(&["report", "--out", p(out)]);
}

/// The data folder the build script found (`SMI_TEST_DATA_DIR`, see `crates/smi-data/build.rs`).
/// Tests that call it carry `#[cfg_attr(smi_no_uci_data, ignore = …)]` (or the MNIST one), so
/// without data they are listed as ignored; with the cfg unset a missing `probe` file fails.
pub fn data_dir(probe: &str) -> PathBuf {
    let d = PathBuf::from(env!("SMI_TEST_DATA_DIR"));
    assert!(
        d.join(probe).is_file(),
        "{probe} not found under {} although the build found the data there",
        d.display()
    );
    d
}

/// The records of `<out>/<name>.jsonl`: the file must exist and every line be a JSON object.
pub fn records(out: &Path, name: &str) -> Vec<Value> {
    let path = out.join(format!("{name}.jsonl"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .map(|l| match serde_json::from_str::<Value>(l) {
            Ok(v) if v.is_object() => v,
            other => panic!("{}: not a JSON object: {l:?} ({other:?})", path.display()),
        })
        .collect()
}

/// The string field `key` of every record, in order.
pub fn column<'a>(recs: &'a [Value], key: &str) -> Vec<&'a str> {
    recs.iter()
        .map(|r| {
            r[key]
                .as_str()
                .unwrap_or_else(|| panic!("{key} is not a string in {r}"))
        })
        .collect()
}

/// The `method` of every record, sorted.
pub fn sorted_methods(recs: &[Value]) -> Vec<&str> {
    let mut methods = column(recs, "method");
    methods.sort_unstable();
    methods
}

/// Requires record `r` to have every key of `keys` (whitespace-separated).
pub fn assert_keys(r: &Value, keys: &str) {
    for key in keys.split_whitespace() {
        assert!(r.get(key).is_some(), "missing {key} in {r}");
    }
}

/// Requires every record to have each key of `keys` (whitespace-separated) and its
/// `experiment` to be `experiment`.
pub fn assert_records(recs: &[Value], experiment: &str, keys: &str) {
    for r in recs {
        assert_keys(r, keys);
        assert_eq!(r["experiment"], experiment, "{r}");
    }
}

/// Requires `metrics.<key>` of record `r` to be a finite number for every key of `keys`
/// (whitespace-separated).
pub fn assert_finite_metrics(r: &Value, keys: &str) {
    for key in keys.split_whitespace() {
        let v = r["metrics"][key].as_f64();
        assert!(
            v.is_some_and(f64::is_finite),
            "metrics.{key} = {v:?} in {r}"
        );
    }
}

/// Whether `path` is a PNG file of more than 1000 bytes.
pub fn is_png(path: &Path) -> bool {
    const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    std::fs::read(path)
        .map(|b| b.len() > 1000 && b.starts_with(&SIGNATURE))
        .unwrap_or(false)
}
