//! `reproduce mnist --quick` through the library: failed records, resuming from the final
//! checkpoint, runs sharing an output folder, and absurd sizes.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{chain, data_dir, map_run, p, quick_run, recs, reproduce};
use serde_json::Value;
use smi_experiments::records;

fn mnist() -> PathBuf {
    data_dir("mnist/train-images-idx3-ubyte.gz")
}

/// `reproduce mnist --quick --out OUT --data-dir DATA` plus `extra`.
fn quick(out: &Path, data: &Path, extra: &[&str]) -> anyhow::Result<()> {
    quick_run("mnist", out, data, extra)
}

#[test]
#[cfg_attr(
    smi_no_mnist_data,
    ignore = "needs MNIST: ../shared/data or `smi data fetch mnist`"
)]
fn resuming_from_the_final_checkpoint_keeps_the_final_loss() {
    let data = mnist();
    let dir = map_run("mnist", &data);
    let out = dir.path();
    let first = recs(out, "mnist");
    let loss = records::num(&first[0], "metrics.final_loss").expect("a finite final loss");
    // The records are lost, the checkpoint is not: the rerun resumes at the last step, trains
    // nothing and evaluates again.
    std::fs::remove_file(records::path(out, "mnist")).unwrap();
    quick(out, &data, &["--methods", "map"]).unwrap();
    let again = recs(out, "mnist");
    assert_eq!(again.len(), 1);
    assert_eq!(
        records::num(&again[0], "metrics.final_loss"),
        Some(loss),
        "{:?}",
        again[0]["metrics"]
    );
    assert!(!records::is_failed(&again[0]));
}

#[test]
#[cfg_attr(
    smi_no_mnist_data,
    ignore = "needs MNIST: ../shared/data or `smi data fetch mnist`"
)]
fn a_unit_resumes_from_the_compressed_checkpoint_alone() {
    let data = mnist();
    let dir = map_run("mnist", &data);
    let out = dir.path();
    let first = recs(out, "mnist");
    let state = out.join("checkpoints/mnist-1-map.json");
    let gz = out.join("checkpoints/mnist-1-map.json.gz");
    assert!(gz.is_file(), "every epoch writes the compressed copy");
    // Another machine gets what a repository keeps: the records minus this unit's, the
    // compressed state and the progress file, not the state itself.
    std::fs::remove_file(&state).unwrap();
    std::fs::remove_file(records::path(out, "mnist")).unwrap();
    // The progress file as binaries before the core's checkpoint sidecar wrote it (`steps`,
    // `train_seconds`, a shuffle position): it still resumes.
    let progress = out.join("checkpoints/mnist-1-map.progress.json");
    let mut old: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&std::fs::read(&progress).unwrap()).unwrap();
    for (new, was) in [("step", "steps"), ("seconds", "train_seconds")] {
        let v = old.remove(new).expect("the sidecar's own field");
        old.insert(was.into(), v);
    }
    old.insert("position".into(), 0.into());
    std::fs::write(&progress, serde_json::to_vec(&old).unwrap()).unwrap();
    quick(out, &data, &["--methods", "map"]).unwrap();
    let again = recs(out, "mnist");
    assert_eq!(again.len(), 1);
    assert!(state.is_file(), "the state is written back from its copy");
    // Resumed at its last step, the unit trains nothing: its training time is the progress
    // file's, to the bit (a unit started afresh would have measured its own).
    for key in ["metrics.train_seconds", "metrics.final_loss"] {
        assert_eq!(
            records::num(&again[0], key),
            records::num(&first[0], key),
            "{key}: {:?}",
            again[0]
        );
    }
}

#[test]
#[cfg_attr(
    smi_no_mnist_data,
    ignore = "needs MNIST: ../shared/data or `smi data fetch mnist`"
)]
fn a_failed_record_does_not_mark_its_unit_done() {
    let data = mnist();
    let dir = map_run("mnist", &data);
    let out = dir.path();
    // Rewrite the record as a run whose metrics were not finite would have left it.
    let mut rec = recs(out, "mnist").remove(0);
    let Some(Value::Object(m)) = rec.get_mut("metrics") else {
        panic!("no metrics")
    };
    m.insert("nll".into(), Value::Null);
    assert!(records::fail_if_non_finite(&mut rec).is_some());
    std::fs::remove_file(records::path(out, "mnist")).unwrap();
    records::append(out, "mnist", rec).unwrap();
    std::fs::remove_file(out.join("mnist.md")).unwrap();
    smi_experiments::mnist::report(out).unwrap();
    let md = std::fs::read_to_string(out.join("mnist.md")).unwrap_or_default();
    assert!(
        !md.contains("MAP"),
        "the report must ignore a failed record:\n{md}"
    );

    quick(out, &data, &["--methods", "map"]).unwrap();
    let rs = recs(out, "mnist");
    assert_eq!(rs.len(), 2, "the failed unit must be run again");
    assert!(!records::is_failed(&rs[1]));
    let md = std::fs::read_to_string(out.join("mnist.md")).unwrap();
    assert!(md.contains("MAP"), "{md}");
}

#[test]
#[cfg_attr(
    smi_no_mnist_data,
    ignore = "needs MNIST: ../shared/data or `smi data fetch mnist`"
)]
fn concurrent_runs_on_one_folder_split_the_units() {
    let data = mnist();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    std::thread::scope(|s| {
        let a = s.spawn(|| quick(out, &data, &[]));
        let b = s.spawn(|| quick(out, &data, &[]));
        a.join().unwrap().unwrap();
        b.join().unwrap().unwrap();
    });
    let rs = recs(out, "mnist");
    let methods: BTreeSet<&str> = rs
        .iter()
        .map(|r| records::text(r, "method").unwrap())
        .collect();
    assert_eq!(methods.len(), 5, "every unit recorded");
    assert_eq!(rs.len(), 5, "no unit trained twice");
    // No temporary file is left in the checkpoint folder.
    for entry in std::fs::read_dir(out.join("checkpoints")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(!name.ends_with(".tmp"), "{name}");
    }
}

#[test]
fn absurd_draw_counts_are_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    // No data needed: the plan is refused before anything is loaded.
    for (flag, value) in [
        ("--draws", "1000000000"),
        ("--draws", "18446744073709551615"),
        ("--elbo-draws", "1000000000"),
    ] {
        let e = reproduce(&[
            "mnist",
            "--quick",
            "--out",
            p(dir.path()),
            "--data-dir",
            p(&dir.path().join("none")),
            flag,
            value,
        ])
        .unwrap_err();
        let e = chain(&e);
        assert!(
            e.contains(flag) && e.contains("memory"),
            "{flag} {value}: {e}"
        );
    }
}

#[test]
#[cfg_attr(
    smi_no_mnist_data,
    ignore = "needs MNIST: ../shared/data or `smi data fetch mnist`"
)]
fn absurd_epoch_counts_are_refused_up_front() {
    let data = mnist();
    let dir = tempfile::tempdir().unwrap();
    let e = quick(dir.path(), &data, &["--epochs", "18446744073709551615"]).unwrap_err();
    let e = chain(&e);
    assert!(e.contains("--epochs"), "{e}");
    assert!(!dir.path().join("checkpoints").exists());
}
