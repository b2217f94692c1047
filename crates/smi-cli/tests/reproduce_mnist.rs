//! `smi reproduce mnist --quick`: records, report, skipping finished units and resuming from
//! the per-epoch checkpoints, through the binary.

mod common;

use std::path::{Path, PathBuf};

use common::{quick_run, records, report, reproduce_quick, sorted_methods, stderr};

fn data_dir() -> PathBuf {
    common::data_dir("mnist/train-images-idx3-ubyte.gz")
}

/// `smi reproduce mnist --quick` on `data` into `out` with `extra` options; returns stderr.
fn quick(out: &Path, data: &Path, extra: &[&str]) -> String {
    stderr(&reproduce_quick("mnist", out, Some(data), extra))
}

#[test]
#[cfg_attr(
    smi_no_mnist_data,
    ignore = "needs the MNIST data: ../shared/data or `smi data fetch mnist`"
)]
fn quick_run_records_reports_skips_and_resumes() {
    let data = data_dir();
    let (dir, recs) = quick_run(
        "mnist",
        Some(&data),
        "experiment layers method seed epochs steps seconds config version metrics",
    );
    let out = dir.path();
    // One record per method.
    assert_eq!(
        sorted_methods(&recs),
        ["asvgd", "map", "ovi", "smi", "svgd"]
    );
    for r in &recs {
        assert_eq!(r["layers"], 1);
        assert_eq!(r["seed"], 142);
        assert_eq!(r["epochs"], 1);
        assert_eq!(r["steps"], 4, "512 images / 128 = 4 steps");
        let m = r["metrics"].as_object().unwrap();
        for k in "acc conf nll brier ece mce acc_argmax ece_weighted".split_whitespace() {
            let v = m[k]
                .as_f64()
                .unwrap_or_else(|| panic!("metrics.{k}: {m:?}"));
            assert!(v.is_finite() && v >= 0.0, "metrics.{k} = {v}");
            let s = m[&format!("{k}_std")].as_f64().unwrap();
            assert!(s >= 0.0);
            let per = m["per_draw"][k].as_array().unwrap();
            // SVGD/ASVGD: the 5 particles; the others: the 5 --quick draws (MAP: its point,
            // evaluated 5 times).
            assert_eq!(per.len(), 5, "per_draw.{k}");
        }
        for k in ["acc", "conf", "acc_argmax"] {
            assert!(m[k].as_f64().unwrap() <= 1.0);
        }
        assert!(m["seconds_per_epoch"].as_f64().unwrap() > 0.0);
        let name = format!("mnist-1-{}.json", r["method"].as_str().unwrap());
        assert!(out.join("checkpoints").join(name).is_file());
    }
    // MAP has one distinct draw: only the sampled-label metrics vary.
    let map = recs.iter().find(|r| r["method"] == "map").unwrap();
    assert_eq!(map["distinct_draws"], 1);
    assert_eq!(map["metrics"]["nll_std"].as_f64().unwrap(), 0.0);

    let md = std::fs::read_to_string(out.join("mnist.md")).unwrap();
    for needle in [
        "Conf↑",
        "NLL↓",
        "Acc↑",
        "Brier↓",
        "ECE↓",
        "MCE↓",
        "SMI",
        "ASVGD",
        "MAP",
        "OVI",
        "SVGD",
        "standard metrics",
        "s/epoch",
        "**",
    ] {
        assert!(md.contains(needle), "mnist.md lacks {needle}:\n{md}");
    }

    // Same command again: every unit is already recorded.
    let log = quick(out, &data, &[]);
    assert_eq!(
        records(out, "mnist").len(),
        5,
        "a rerun must not redo finished units"
    );
    assert_eq!(log.matches("skipping").count(), 5, "{log}");

    // One more epoch for SMI: continues from its checkpoint at the end of epoch 1.
    let log = quick(out, &data, &["--epochs", "2", "--methods", "smi"]);
    assert!(log.contains("resuming"), "{log}");
    assert!(
        log.contains("epoch 2/2") && !log.contains("epoch 1/2"),
        "{log}"
    );
    let recs = records(out, "mnist");
    assert_eq!(recs.len(), 6);
    assert_eq!(recs[5]["steps"], 8);
    assert_eq!(recs[5]["epochs"], 2);

    // `smi report` rebuilds the table from the records alone.
    std::fs::remove_file(out.join("mnist.md")).unwrap();
    report(out);
    assert!(out.join("mnist.md").is_file());
}
