//! What `smi fit`, `smi predict`, `smi inspect` and `smi report` say in the cases issue 16
//! found wanting: integer targets, an interval for a classifier, unknown test labels, the
//! learned noise level, NUTS's diagnostics, a report without records.

mod common;

use std::path::{Path, PathBuf};

use common::fit::*;
use common::{fails, p, smi_ok, stdout};

/// Writes `text` to `dir/name` and returns the path.
fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Small, fast fit options.
const QUICK: &str = "--hidden 4 --elbo-draws 2 --max-steps 5";

#[test]
fn report_without_records_is_an_error_naming_what_it_looked_for() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope");
    fails(
        &["report", "--out", p(&missing)],
        &["no such folder", ".jsonl", "smi reproduce"],
    );
    fails(
        &["report", "--out", p(tmp.path())],
        &["no records", ".jsonl"],
    );
    write(tmp.path(), "uci.jsonl", "");
    write(tmp.path(), "notes.txt", "not records");
    fails(
        &["report", "--out", p(tmp.path())],
        &["no records", ".jsonl"],
    );
}

/// Class labels 0/1/2 are neither silently a regression nor silently classes.
#[test]
fn integer_targets_with_few_values_ask_for_the_task() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut text = String::from("a,b,label\n");
    for r in 0..30 {
        text.push_str(&format!("{},{},{}\n", r % 7, r % 5, r % 3));
    }
    let csv = write(dir, "int.csv", &text);
    let model = dir.join("m.smi");
    fails(
        &fit_args(&csv, &model, &format!("--target label {QUICK}")),
        &[
            "only the whole numbers 0, 1, 2",
            "--task classification",
            "--task regression",
        ],
    );
    assert!(!model.exists());
    ok(&fit_args(
        &csv,
        &model,
        &format!("--target label --task classification {QUICK}"),
    ));
    let text = stdout(&smi_ok(&["inspect", "--model", p(&model)]));
    assert!(text.contains("classes      0, 1, 2"), "{text}");
    ok(&fit_args(
        &csv,
        &model,
        &format!("--target label --task regression {QUICK}"),
    ));
}

#[test]
fn classifier_predictions_refuse_an_interval_and_score_known_labels() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let train = write(dir, "train.csv", &classification_csv(60, 3));
    let model = dir.join("c.smi");
    ok(&fit_args(
        &train,
        &model,
        &format!("--target shape {QUICK}"),
    ));
    let out = dir.join("o.csv");
    let test = write(dir, "test.csv", &classification_csv(20, 4));
    fails(
        &predict_args(&model, &test, &out, None, "--interval 0.8"),
        &["--interval", "classifier", "regression models"],
    );
    assert!(!out.exists(), "written before the error");

    // Rows with a label the model does not know are left out of the metrics, and counted.
    let text = classification_csv(20, 4).replacen("triangle", "hexagon", 2);
    let unknown = text.matches("hexagon").count();
    assert!(unknown > 0, "the test set has no triangle to rename");
    let test = write(dir, "odd.csv", &text);
    let m = dir.join("m.json");
    let err = ok(&predict_args(&model, &test, &out, Some(&m), ""));
    let got = read_json(&m);
    assert_eq!(got["skipped_rows"].as_u64(), Some(unknown as u64), "{got}");
    assert!(got["accuracy"].as_f64().is_some(), "{got}");
    for needle in [
        format!("{unknown} of the 20 rows have a label"),
        "\"hexagon\"".into(),
        format!("score the other {} rows", 20 - unknown),
        "not scored".into(),
    ] {
        assert!(err.contains(&needle), "{needle:?} not in {err}");
    }
    assert_eq!(read_csv(&out).1.len(), 20, "every row is predicted");

    // No known label at all: no metrics to write, said before anything is written.
    let none = write(dir, "none.csv", "width,height,shape\n1,2,hexagon\n");
    let (out2, m2) = (dir.join("o2.csv"), dir.join("m2.json"));
    fails(
        &predict_args(&model, &none, &out2, Some(&m2), ""),
        &["--metrics", "does not know", "\"hexagon\""],
    );
    assert!(!out2.exists() && !m2.exists());
}

/// `inspect` gives the learned σ in target units, not a Rust debug value; NUTS fits report
/// divergences, R̂ and ESS, and keep them in the model.
#[test]
fn inspect_shows_the_noise_level_and_nuts_its_diagnostics() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let train = write(dir, "train.csv", &regression_csv(60, 0.1, 9, Some(4)));
    let model = dir.join("n.smi");
    let err = ok(&fit_args(
        &train,
        &model,
        "--target y --method nuts --hidden 3 --nuts-warmup 40 --nuts-draws 20",
    ));
    for needle in ["NUTS: ", "divergent transition", "R̂ max", "bulk ESS min"] {
        assert!(err.contains(needle), "{needle:?} not in {err}");
    }
    let text = stdout(&smi_ok(&["inspect", "--model", p(&model)]));
    for needle in ["σ mean", "90 % interval", "Gamma(1, 0.1)", "NUTS         "] {
        assert!(text.contains(needle), "{needle:?} not in\n{text}");
    }
    assert!(!text.contains("GammaPrecision {"), "{text}");
    let h = stdout(&smi_ok(&["inspect", "--model", p(&model), "--json"]));
    let h: serde_json::Value = serde_json::from_str(&h).unwrap();
    assert_eq!(h["training"]["nuts"]["draws"], 20, "{h}");
    assert!(h["training"]["nuts"]["divergences"].is_u64(), "{h}");
}

/// `--guide` fits SMI with a low-rank guide (the model file says so), and is refused for a
/// point-mass method and for a name that is not a guide.
#[test]
fn the_guide_option_fits_a_low_rank_guide_and_refuses_what_has_none() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut text = String::from("a,b,y\n");
    for r in 0..40 {
        let (a, b) = ((r % 7) as f64 / 3.0, (r % 5) as f64 / 2.0);
        text.push_str(&format!("{a},{b},{}\n", 0.5 * a - b + 0.1 * (r % 3) as f64));
    }
    let csv = write(dir, "lin.csv", &text);
    let model = dir.join("m.smi");
    smi_ok(&fit_args(
        &csv,
        &model,
        &format!("--target y {QUICK} --guide lowrank:2"),
    ));
    let shown = stdout(&smi_ok(&["inspect", "--model", p(&model)]));
    assert!(shown.contains("lowrank:2 Normal"), "{shown}");
    fails(
        &fit_args(
            &csv,
            &model,
            &format!("--target y {QUICK} --method svgd --guide fullrank"),
        ),
        &["--guide fullrank", "point masses"],
    );
    fails(
        &fit_args(
            &csv,
            &model,
            &format!("--target y {QUICK} --guide cholesky"),
        ),
        &["--guide", "unknown guide"],
    );
}
