//! `smi predict --metrics`: the test metrics and calibration report (interval coverage at
//! several levels, reliability table and ECE), its JSON (`--metrics-json`) and the reliability
//! diagram (`--reliability-plot`), checked against the prediction CSV the same run writes.

mod common;

use std::path::Path;

use common::fit::*;
use common::{fails, is_png, p, smi_ok, stdout};
use serde_json::Value;

/// Small, fast fit options (a few seconds on two cores).
const QUICK: &str = "--hidden 8 --elbo-draws 4 --max-steps 300 --lr 1e-2";

/// The `f64` at `key` of `v`.
fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}

/// Runs `smi predict` of `model` on `csv` into `dir/pred.csv` with `opts`; returns stderr,
/// where the report goes.
fn predict(model: &Path, csv: &Path, dir: &Path, opts: &str) -> String {
    ok(&predict_args(model, csv, &dir.join("pred.csv"), None, opts))
}

#[test]
fn regression_report_json_and_plot_agree_with_the_predictions() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (train, test) = regression_files(dir, [200, 120], 0.2, [21, 22], Some(4));
    let model = dir.join("r.smi");
    ok(&fit_args(&train, &model, &format!("--target y {QUICK}")));
    let (json, png) = (dir.join("m.json"), dir.join("r.png"));
    let opts = format!(
        "--draws 200 --metrics --metrics-json {} --reliability-plot {}",
        p(&json),
        p(&png)
    );
    let text = predict(&model, &test, dir, &opts);
    for needle in [
        "test metrics of r.smi on 120 rows",
        "50 % →",
        "80 % →",
        "90 % →",
        "95 % →",
        "calibration error (mean |observed − nominal| over the levels)",
        "percentage points",
    ] {
        assert!(text.contains(needle), "{needle:?} not in\n{text}");
    }
    let m = read_json(&json);
    assert_eq!(m["task"], "regression");
    assert_eq!(m["n"], 120);
    assert!(num(&m, "nll").is_finite() && num(&m, "rmse") > 0.0, "{m}");
    assert!(m["accuracy"].is_null() && m["ece"].is_null(), "{m}");
    let cov = m["coverage"].as_array().unwrap();
    let levels: Vec<f64> = cov.iter().map(|c| num(c, "level")).collect();
    assert_eq!(levels, [0.5, 0.8, 0.9, 0.95]);
    let observed: Vec<f64> = cov.iter().map(|c| num(c, "observed")).collect();
    // Central intervals of one sample are nested, so coverage cannot fall with the level.
    assert!(observed.windows(2).all(|w| w[0] <= w[1]), "{observed:?}");
    for c in cov {
        assert_eq!(num(c, "observed"), num(c, "inside") / 120.0, "{c}");
    }
    let err: f64 = cov
        .iter()
        .map(|c| (num(c, "observed") - num(c, "level")).abs())
        .sum::<f64>()
        / 4.0;
    assert!((num(&m, "calibration_error") - err).abs() < 1e-12, "{m}");
    // The --interval (0.9) coverage is that of the CSV's lower/upper, and the same as the
    // 0.9 row of the table (both from the same y draws).
    let (_, rows) = read_csv(&dir.join("pred.csv"));
    let (_, truth) = read_csv(&test);
    let inside = rows
        .iter()
        .zip(&truth)
        .filter(|(r, t)| {
            let y: f64 = t[2].parse().unwrap();
            r[2].parse::<f64>().unwrap() <= y && y <= r[3].parse::<f64>().unwrap()
        })
        .count();
    assert_eq!(m["interval"]["level"], 0.9);
    assert_eq!(m["interval"]["inside"], inside);
    assert_eq!(observed[2], inside as f64 / 120.0);
    // A fit of a smooth function with known noise: the 95 % intervals cover most rows.
    assert!(observed[3] > 0.6, "{observed:?}");
    assert!(is_png(&png), "no reliability diagram");
}

#[test]
fn three_class_report_json_and_plot_agree_with_the_predictions() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let train = dir.join("train.csv");
    std::fs::write(&train, classification_csv(240, 31)).unwrap();
    let test = dir.join("test.csv");
    std::fs::write(&test, classification_csv(150, 32)).unwrap();
    let model = dir.join("c.smi");
    ok(&fit_args(
        &train,
        &model,
        &format!("--target shape {QUICK}"),
    ));
    // `--metrics FILE`: the report and the JSON in one flag (the older form).
    let (json, png) = (dir.join("c.json"), dir.join("c.png"));
    let opts = format!(
        "--draws 100 --metrics {} --reliability-plot {}",
        p(&json),
        p(&png)
    );
    let text = predict(&model, &test, dir, &opts);
    for needle in [
        "test metrics of c.smi on 150 rows",
        "accuracy",
        "reliability (top-class confidence bins",
        "mean conf",
        "ECE (count-weighted mean |accuracy − confidence|)",
        "mean confidence 0.",
    ] {
        assert!(text.contains(needle), "{needle:?} not in\n{text}");
    }
    let m = read_json(&json);
    assert_eq!(m["task"], "classification");
    assert_eq!(m["n"], 150);
    assert!(m["rmse"].is_null() && m["coverage"].as_array().unwrap().is_empty());
    // Accuracy and mean confidence from the CSV the same run wrote.
    let (head, rows) = read_csv(&dir.join("pred.csv"));
    let (_, truth) = read_csv(&test);
    assert_eq!(head.len(), 4, "{head:?}");
    let (mut right, mut conf) = (0usize, 0.0);
    for (r, t) in rows.iter().zip(&truth) {
        right += usize::from(r[3] == t[2]);
        conf += r[..3]
            .iter()
            .map(|c| c.parse::<f64>().unwrap())
            .fold(0.0, f64::max);
    }
    assert_eq!(num(&m, "accuracy"), right as f64 / 150.0);
    assert!(
        (num(&m, "mean_confidence") - conf / 150.0).abs() < 1e-9,
        "{m}"
    );
    // Ten bins covering [0, 1], counts summing to n, ECE their weighted gap.
    let bins = m["reliability"].as_array().unwrap();
    assert_eq!(bins.len(), 10);
    assert_eq!(num(&bins[0], "lower"), 0.0);
    assert_eq!(num(&bins[9], "upper"), 1.0);
    let total: u64 = bins.iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert_eq!(total, 150);
    let ece: f64 = bins
        .iter()
        .filter(|b| b["count"].as_u64() > Some(0))
        .map(|b| num(b, "count") * (num(b, "accuracy") - num(b, "mean_confidence")).abs())
        .sum::<f64>()
        / 150.0;
    assert!((num(&m, "ece") - ece).abs() < 1e-12, "{m}");
    // Three classes: no top-class confidence below 1/3.
    assert!(bins[..3].iter().all(|b| b["count"] == 0), "{m}");
    let verdict = m["verdict"].as_str().unwrap();
    assert!(
        ["underconfident:", "overconfident:", "confidence matches"]
            .iter()
            .any(|v| verdict.starts_with(v)),
        "{verdict}"
    );
    assert!(text.contains(verdict), "{text}");
    assert!(is_png(&png), "no reliability diagram");
}

/// The report flags need the target column (said before anything is written); without them a
/// target gives the one-line summary, which points to --metrics; the help texts name the
/// flags and claim no calibration they do not report.
#[test]
fn metrics_flags_need_the_target_and_are_documented() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (train, test) = regression_files(dir, [60, 30], 0.1, [9, 10], Some(4));
    let model = dir.join("m.smi");
    ok(&fit_args(
        &train,
        &model,
        "--target y --hidden 4 --elbo-draws 2 --max-steps 5",
    ));
    let nolabel = dir.join("nolabel.csv");
    std::fs::write(&nolabel, "x1,x2\n0.5,0.1\n").unwrap();
    let out = dir.join("o.csv");
    let png = dir.join("r.png");
    for (opts, flag) in [
        ("--metrics".to_string(), "--metrics:"),
        (
            format!("--reliability-plot {}", p(&png)),
            "--reliability-plot",
        ),
        (
            format!("--metrics-json {}", p(&dir.join("m.json"))),
            "--metrics-json",
        ),
    ] {
        fails(
            &predict_args(&model, &nolabel, &out, None, &opts),
            &[flag, "no target column \"y\""],
        );
        assert!(!out.exists() && !png.exists(), "written before the error");
    }
    let err = ok(&predict_args(&model, &test, &out, None, "--draws 20"));
    assert!(
        err.contains("test metrics (column \"y\" present): nll") && err.contains("--metrics for"),
        "{err}"
    );
    let help = stdout(&smi_ok(&["predict", "--help"]));
    for flag in [
        "--metrics [<FILE>]",
        "--metrics-json <FILE>",
        "--reliability-plot",
    ] {
        assert!(help.contains(flag), "{flag} not in\n{help}");
    }
    // "calibrated" only where the text says where calibration is shown: `predict --metrics`
    // or the measured table (docs/calibration.md) within the next 90 characters.
    for cmd in [&["--help"][..], &["fit", "--help"], &["predict", "--help"]] {
        let text = stdout(&smi_ok(cmd));
        for (at, _) in text.match_indices("calibrated") {
            let next: String = text[at..].chars().take(90).collect();
            assert!(
                next.contains("--metrics") || next.contains("calibration.md"),
                "smi {cmd:?} says calibrated without saying where it is shown: {next:?}"
            );
        }
    }
}
