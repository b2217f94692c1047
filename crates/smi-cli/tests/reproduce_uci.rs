//! `smi reproduce uci --quick`: records, report, resuming and sharding, through the binary.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn data_dir() -> Option<PathBuf> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    if d.join("uci").join("yacht").join("data.txt").is_file() {
        Some(d)
    } else {
        eprintln!(
            "skipping: UCI data not found at {} (the shared data folder is absent)",
            d.display()
        );
        None
    }
}

fn smi(args: &[&str]) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_smi"))
        .args(args)
        .env("SMI_NO_PROGRESS", "1")
        .output()
        .expect("cannot run the smi binary");
    assert!(
        out.status.success(),
        "smi {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn records(out: &Path) -> Vec<serde_json::Map<String, Value>> {
    let text = std::fs::read_to_string(out.join("uci.jsonl")).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| match serde_json::from_str::<Value>(l).unwrap() {
            Value::Object(m) => m,
            other => panic!("not an object: {other}"),
        })
        .collect()
}

fn quick(out: &Path, data: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "reproduce",
        "uci",
        "--quick",
        "--out",
        out.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    smi(&args)
}

#[test]
fn quick_run_records_reports_and_resumes() {
    let Some(data) = data_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    quick(out, &data, &[]);
    let recs = records(out);
    assert_eq!(recs.len(), 6, "one record per method");
    let methods: BTreeSet<&str> = recs.iter().map(|r| r["method"].as_str().unwrap()).collect();
    assert_eq!(
        methods,
        ["asvgd", "map", "nuts", "ovi", "smi", "svgd"].into()
    );
    for r in &recs {
        for k in [
            "experiment",
            "dataset",
            "split_kind",
            "split",
            "method",
            "seed",
            "config",
            "version",
            "seconds",
        ] {
            assert!(r.contains_key(k), "record lacks {k}: {r:?}");
        }
        assert_eq!(r["experiment"], "uci");
        assert_eq!(r["dataset"], "yacht");
        assert_eq!(r["split_kind"], "standard");
        assert_eq!(r["split"], 0);
        let m = r["metrics"].as_object().unwrap();
        for k in [
            "rmse",
            "nll",
            "rmse_paper",
            "nll_paper",
            "seconds_per_step",
            "steps",
        ] {
            let v = m[k].as_f64().unwrap_or(f64::NAN);
            assert!(v.is_finite(), "metrics.{k} = {v} in {r:?}");
        }
        // RMSE over draws and points ≥ RMSE of the mean; per-particle NLL ≥ mixture NLL.
        assert!(m["rmse_paper"].as_f64().unwrap() >= m["rmse"].as_f64().unwrap() - 1e-9);
        assert!(m["nll_paper"].as_f64().unwrap() >= m["nll"].as_f64().unwrap() - 1e-9);
    }
    let md = std::fs::read_to_string(out.join("uci.md")).unwrap();
    assert!(
        md.contains("Paper metrics") && md.contains("Proper metrics"),
        "{md}"
    );
    assert!(md.contains("| yacht |") && md.contains("NUTS"), "{md}");
    assert!(md.contains("Seconds per step"), "{md}");

    // Rerunning skips every unit: no new records.
    let again = quick(out, &data, &[]);
    assert_eq!(records(out).len(), 6);
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(err.contains("6 skipped"), "{err}");
    // `smi report` rebuilds the same table.
    std::fs::remove_file(out.join("uci.md")).unwrap();
    smi(&["report", "--out", out.to_str().unwrap()]);
    assert!(out.join("uci.md").is_file());
}

#[test]
fn shards_partition_the_units() {
    let Some(data) = data_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let list = |extra: &[&str]| -> Vec<String> {
        let mut a = vec!["--splits", "0,1", "--methods", "smi,map,ovi", "--list"];
        a.extend_from_slice(extra);
        let o = quick(dir.path(), &data, &a);
        String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .map(|l| l.split('\t').take(2).collect::<Vec<_>>().join(" "))
            .collect()
    };
    let all = list(&[]);
    assert_eq!(all.len(), 6, "{all:?}");
    let a = list(&["--shard", "0/2"]);
    let b = list(&["--shard", "1/2"]);
    let mut union: Vec<String> = a.iter().chain(&b).cloned().collect();
    union.sort();
    let mut sorted = all.clone();
    sorted.sort();
    assert_eq!(union, sorted);
    assert!(a.iter().all(|u| !b.contains(u)));
    assert_eq!(a.len(), 3);

    // Running a shard writes only its own units.
    let out = dir.path().join("shard");
    quick(
        &out,
        &data,
        &["--splits", "0,1", "--methods", "map,ovi", "--shard", "1/3"],
    );
    let recs = records(&out);
    // Units 0..4 = (split 0: map, ovi), (split 1: map, ovi); shard 1/3 holds index 1 only.
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["split"], 0);
    assert_eq!(recs[0]["method"], "ovi");
}

#[test]
fn bad_options_are_errors_listing_valid_names() {
    let run = |extra: &[&str]| {
        let mut a = vec!["reproduce", "uci", "--quick", "--list"];
        a.extend_from_slice(extra);
        Command::new(env!("CARGO_BIN_EXE_smi"))
            .args(&a)
            .output()
            .unwrap()
    };
    let o = run(&["--methods", "smi,foo"]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("foo") && e.contains("asvgd"), "{e}");
    let o = run(&["--datasets", "mnist"]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("mnist") && e.contains("yacht"), "{e}");
    let o = run(&["--shard", "2/2"]);
    assert!(!o.status.success());
    let o = run(&["--lr", "fast"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("tune"));
}
