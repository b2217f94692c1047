//! `reproduce uci` through the library: failed units, torn records files, runs sharing an output
//! folder, and absurd sizes.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{assert_refused_within, chain, data_dir, map_run, p, quick_run, recs, reproduce};
use smi_experiments::records;

fn yacht() -> PathBuf {
    data_dir("uci/yacht/data.txt")
}

/// A copy of the yacht folder under `<root>/uci/yacht`, its `data.txt` passed through `edit`
/// (one call per row, with the row's numbers) and `n_splits.txt` replaced when given.
fn fake_yacht(
    root: &Path,
    data: &Path,
    edit: impl Fn(&mut Vec<String>),
    n_splits: Option<&str>,
) -> PathBuf {
    let src = data.join("uci/yacht");
    let dst = root.join("uci/yacht");
    std::fs::create_dir_all(&dst).unwrap();
    for entry in std::fs::read_dir(&src).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dst.join(entry.file_name())).unwrap();
    }
    let text = std::fs::read_to_string(src.join("data.txt")).unwrap();
    let rows: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut v: Vec<String> = l.split_whitespace().map(str::to_string).collect();
            edit(&mut v);
            v.join(" ")
        })
        .collect();
    std::fs::write(dst.join("data.txt"), rows.join("\n") + "\n").unwrap();
    if let Some(n) = n_splits {
        std::fs::write(dst.join("n_splits.txt"), n).unwrap();
    }
    root.to_path_buf()
}

/// `reproduce uci --quick --out OUT --data-dir DATA` plus `extra`.
fn quick(out: &Path, data: &Path, extra: &[&str]) -> anyhow::Result<()> {
    quick_run("uci", out, data, extra)
}

fn key(r: &serde_json::Map<String, serde_json::Value>) -> String {
    format!(
        "{}|{}|{}|{}|{}",
        records::text(r, "dataset").unwrap(),
        records::text(r, "split_kind").unwrap(),
        records::get(r, "split").unwrap(),
        records::text(r, "method").unwrap(),
        records::text(r, "config").unwrap()
    )
}

#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn non_finite_metrics_are_recorded_as_failed_and_retried() {
    let data = yacht();
    let root = tempfile::tempdir().unwrap();
    // Targets of 1e300: the squared errors overflow, the metrics are not finite.
    let fake = fake_yacht(
        root.path(),
        &data,
        |row| *row.last_mut().unwrap() = "1e300".into(),
        None,
    );
    let out = root.path().join("out");
    let e = quick(&out, &fake, &["--methods", "map"]).unwrap_err();
    assert!(chain(&e).contains("1 UCI units failed"), "{}", chain(&e));
    let rs = recs(&out, "uci");
    assert_eq!(rs.len(), 1);
    assert!(records::is_failed(&rs[0]), "{:?}", rs[0]);
    let reason = records::text(&rs[0], "reason").unwrap();
    assert!(
        reason.contains("non-finite") && reason.contains("metrics.rmse"),
        "{reason}"
    );
    assert!(records::text(&rs[0], "config").is_some());
    // Not done: a rerun retries it (and fails again), the report has no row for it.
    assert!(quick(&out, &fake, &["--methods", "map"]).is_err());
    let rs = recs(&out, "uci");
    assert_eq!(rs.len(), 2, "the failed unit must be retried");
    assert!(rs.iter().all(records::is_failed));
    assert!(records::read_succeeded(&out, "uci").unwrap().is_empty());
}

#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn a_torn_records_file_does_not_swallow_the_next_record() {
    let data = yacht();
    let dir = map_run("uci", &data);
    let out = dir.path();
    // Cut the record mid-line, as a crash in the middle of its write would.
    let file = records::path(out, "uci");
    let bytes = std::fs::read(&file).unwrap();
    std::fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    assert!(recs(out, "uci").is_empty());

    // The torn unit is redone and the new unit recorded: two readable records.
    quick(out, &data, &["--methods", "map,ovi"]).unwrap();
    let rs = recs(out, "uci");
    let methods: Vec<&str> = rs
        .iter()
        .map(|r| records::text(r, "method").unwrap())
        .collect();
    assert_eq!(methods, ["map", "ovi"]);
    let torn = std::fs::read(records::torn_path(out, "uci")).unwrap();
    assert_eq!(torn[..torn.len() - 1], bytes[..bytes.len() / 2]);
    // A third run finds both done.
    quick(out, &data, &["--methods", "map,ovi"]).unwrap();
    assert_eq!(recs(out, "uci").len(), 2);
}

#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn concurrent_runs_on_one_folder_split_the_units() {
    let data = yacht();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let args = ["--methods", "map,ovi", "--splits", "0-3"];
    std::thread::scope(|s| {
        let a = s.spawn(|| quick(out, &data, &args));
        let b = s.spawn(|| quick(out, &data, &args));
        a.join().unwrap().unwrap();
        b.join().unwrap().unwrap();
    });
    let rs = recs(out, "uci");
    let keys: BTreeSet<String> = rs.iter().map(key).collect();
    assert_eq!(keys.len(), 8, "every unit recorded");
    assert_eq!(rs.len(), 8, "no unit computed twice");
    assert!(out.join("locks").is_dir());
}

#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn a_unit_locked_by_another_run_is_skipped() {
    let data = yacht();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    // Hold the lock of split 1's MAP unit, as another process running it would.
    let unit_key = |split: usize| {
        format!("yacht|standard|{split}|map|lr=1e-3|steps=200|b=100|init=U0.1|pred=point|seed=0")
    };
    let held = smi_experiments::locks::try_lock(out, "uci-yacht/std1/map", &unit_key(1)).unwrap();
    assert!(held.is_some());
    quick(
        out,
        &data,
        &["--methods", "map", "--splits", "0-1", "--lr", "1e-3"],
    )
    .unwrap();
    let rs = recs(out, "uci");
    assert_eq!(rs.len(), 1, "split 1 is locked: only split 0 runs");
    assert_eq!(key(&rs[0]), unit_key(0));
    drop(held);
    quick(
        out,
        &data,
        &["--methods", "map", "--splits", "0-1", "--lr", "1e-3"],
    )
    .unwrap();
    assert_eq!(recs(out, "uci").len(), 2);
}

#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn absurd_split_ranges_are_refused_up_front() {
    let data = yacht();
    let dir = tempfile::tempdir().unwrap();
    let t = std::time::Instant::now();
    let e = quick(dir.path(), &data, &["--splits", "0-4294967295", "--list"]).unwrap_err();
    let e = chain(&e);
    assert!(e.contains("--splits") && e.contains("20"), "{e}");
    assert_refused_within(t, 30);
    // Indices beyond one data set's splits but not another's are still skipped.
    quick(dir.path(), &data, &["--splits", "0,5", "--list"]).unwrap();
}

#[test]
#[cfg_attr(
    smi_no_uci_data,
    ignore = "needs the UCI data: ../shared/data or `smi data fetch uci`"
)]
fn a_split_count_beyond_the_split_files_is_refused() {
    let data = yacht();
    let root = tempfile::tempdir().unwrap();
    let fake = fake_yacht(root.path(), &data, |_| {}, Some("18446744073709551615\n"));
    let out = root.path().join("out");
    for splits in ["all", "0"] {
        let e = reproduce(&[
            "uci",
            "--datasets",
            "yacht",
            "--splits",
            splits,
            "--list",
            "--out",
            p(&out),
            "--data-dir",
            p(&fake),
        ])
        .unwrap_err();
        let e = chain(&e);
        assert!(
            e.contains("n_splits.txt") && e.contains("18446744073709551615"),
            "{e}"
        );
    }
}
