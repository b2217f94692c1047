//! `smi reproduce mnist --quick`: records, report, skipping finished units and resuming from
//! the per-epoch checkpoints, through the binary.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn data_dir() -> Option<PathBuf> {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data");
    if d.join("mnist").join("train-images-idx3-ubyte.gz").is_file() {
        Some(d)
    } else {
        eprintln!(
            "skipping: MNIST not found at {} (the shared data folder is absent)",
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
    let text = std::fs::read_to_string(out.join("mnist.jsonl")).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| match serde_json::from_str::<Value>(l).unwrap() {
            Value::Object(m) => m,
            other => panic!("not an object: {other}"),
        })
        .collect()
}

fn quick(out: &Path, data: &Path, extra: &[&str]) -> String {
    let mut args = vec![
        "reproduce",
        "mnist",
        "--quick",
        "--out",
        out.to_str().unwrap(),
        "--data-dir",
        data.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    String::from_utf8_lossy(&smi(&args).stderr).into_owned()
}

#[test]
fn quick_run_records_reports_skips_and_resumes() {
    let Some(data) = data_dir() else { return };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    quick(out, &data, &[]);
    let recs = records(out);
    assert_eq!(recs.len(), 5, "one record per method");
    let methods: BTreeSet<&str> = recs.iter().map(|r| r["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["asvgd", "map", "ovi", "smi", "svgd"].into());
    for r in &recs {
        for k in [
            "experiment",
            "layers",
            "method",
            "seed",
            "epochs",
            "steps",
            "seconds",
            "config",
            "version",
            "metrics",
        ] {
            assert!(r.contains_key(k), "record lacks {k}: {r:?}");
        }
        assert_eq!(r["experiment"], "mnist");
        assert_eq!(r["layers"], 1);
        assert_eq!(r["seed"], 142);
        assert_eq!(r["epochs"], 1);
        assert_eq!(r["steps"], 4, "512 images / 128 = 4 steps");
        let m = r["metrics"].as_object().unwrap();
        for k in [
            "acc",
            "conf",
            "nll",
            "brier",
            "ece",
            "mce",
            "acc_argmax",
            "ece_weighted",
        ] {
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
        records(out).len(),
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
    let recs = records(out);
    assert_eq!(recs.len(), 6);
    assert_eq!(recs[5]["steps"], 8);
    assert_eq!(recs[5]["epochs"], 2);

    // `smi report` rebuilds the table from the records alone.
    std::fs::remove_file(out.join("mnist.md")).unwrap();
    smi(&["report", "--out", out.to_str().unwrap()]);
    assert!(out.join("mnist.md").is_file());
}
