//! `smi reproduce uci --quick`: records, report, resuming and sharding, through the binary.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{
    assert_finite_metrics, fails, quick_run, records, report, reproduce_quick, sorted_methods,
    stderr,
};

fn data_dir() -> PathBuf {
    common::data_dir("uci/yacht/data.txt")
}

/// `smi reproduce uci --quick` on `data` into `out` with `extra` options.
fn quick(out: &Path, data: &Path, extra: &[&str]) -> Output {
    reproduce_quick("uci", out, Some(data), extra)
}

#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn quick_run_records_reports_and_resumes() {
    let data = data_dir();
    let (dir, recs) = quick_run(
        "uci",
        Some(&data),
        "experiment dataset split_kind split method seed config version seconds",
    );
    let out = dir.path();
    // One record per method.
    assert_eq!(
        sorted_methods(&recs),
        ["asvgd", "map", "nuts", "ovi", "smi", "svgd"]
    );
    for r in &recs {
        assert_eq!(r["dataset"], "yacht");
        assert_eq!(r["split_kind"], "standard");
        assert_eq!(r["split"], 0);
        assert_finite_metrics(r, "rmse nll rmse_paper nll_paper seconds_per_step steps");
        let m = r["metrics"].as_object().unwrap();
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
    assert_eq!(records(out, "uci").len(), 6);
    let err = stderr(&again);
    assert!(err.contains("6 skipped"), "{err}");
    // `smi report` rebuilds the same table.
    std::fs::remove_file(out.join("uci.md")).unwrap();
    report(out);
    assert!(out.join("uci.md").is_file());
}

#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn shards_partition_the_units() {
    let data = data_dir();
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
    let recs = records(&out, "uci");
    // Units 0..4 = (split 0: map, ovi), (split 1: map, ovi); shard 1/3 holds index 1 only.
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["split"], 0);
    assert_eq!(recs[0]["method"], "ovi");
}

#[test]
fn bad_options_are_errors_listing_valid_names() {
    for (option, value, needles) in [
        ("--methods", "smi,foo", &["foo", "asvgd"][..]),
        ("--datasets", "mnist", &["mnist", "yacht"]),
        ("--shard", "2/2", &[]),
        ("--lr", "fast", &["tune"]),
    ] {
        let args = ["reproduce", "uci", "--quick", "--list", option, value];
        fails(&args, needles);
    }
}

/// `--list --json` names every unit once with the id `--unit` takes; `--unit` runs exactly
/// those units and refuses an id outside the list.
#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn units_are_listed_as_json_and_run_by_id() {
    let data = data_dir();
    let dir = tempfile::tempdir().unwrap();
    let o = quick(
        dir.path(),
        &data,
        &["--methods", "map,ovi", "--list", "--json"],
    );
    let units: Vec<serde_json::Value> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&str> = units.iter().map(|u| u["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["yacht/std0/map", "yacht/std0/ovi"]);
    assert!(units
        .iter()
        .all(|u| u["status"] == "pending" && u["device"] == "cpu" && u["saved_step"].is_null()));
    let out = dir.path().join("one");
    quick(
        &out,
        &data,
        &["--methods", "map,ovi", "--unit", "yacht/std0/map"],
    );
    let recs = records(&out, "uci");
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["method"], "map");
    fails(
        &[
            "reproduce",
            "uci",
            "--quick",
            "--methods",
            "map",
            "--unit",
            "yacht/std0/ovi",
            "--out",
            out.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
        ],
        &["--unit yacht/std0/ovi: no such unit"],
    );
}
