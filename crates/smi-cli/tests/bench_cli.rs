//! `smi bench` end to end: one short measurement prints one parseable JSON line.

mod common;

use common::{fails, smi_ok};

#[test]
fn bench_prints_one_json_line() {
    let out = smi_ok(&[
        "bench", "--config", "mvn-100", "--method", "svgd", "--steps", "3", "--warmup", "1",
    ]);
    let stdout = String::from_utf8(out.stdout).expect("utf-8");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(lines[0]).expect("JSON");
    assert_eq!(v["config"], "mvn-100");
    assert_eq!(v["method"], "svgd");
    assert_eq!(v["steps"], 3);
    for key in ["ms_per_step", "gflops", "gemm_peak_gflops"] {
        let x = v[key].as_f64().unwrap_or(f64::NAN);
        assert!(x.is_finite() && x >= 0.0, "{key} = {}", v[key]);
    }
    assert!(v["gemm_peak_gflops"].as_f64().unwrap() > 0.0);
    assert_eq!(v["m"], 20);
    assert_eq!(v["K"], 20);
}

#[test]
fn unknown_config_and_method_list_the_valid_ones() {
    fails(
        &["bench", "--config", "cifar", "--method", "svgd"],
        &["mvn-100", "boston-1h"],
    );
    fails(
        &["bench", "--config", "mvn-100", "--method", "nuts"],
        &["asvgd", "map"],
    );
}

/// `--threads 0` and a non-finite or negative `--min-seconds` were accepted.
#[test]
fn bad_threads_and_min_seconds_are_errors() {
    let base = [
        "bench", "--config", "mvn-100", "--method", "svgd", "--warmup", "0",
    ];
    for (flag, value, needle) in [
        ("--threads", "0", "--threads must be at least 1"),
        (
            "--min-seconds",
            "nan",
            "--min-seconds must be a finite number",
        ),
        (
            "--min-seconds",
            "-1",
            "--min-seconds must be a finite number",
        ),
        (
            "--min-seconds",
            "inf",
            "--min-seconds must be a finite number",
        ),
        ("--steps", "0", "--steps must be at least 1"),
    ] {
        // `--flag=value`: clap would take a separate "-1" for an option.
        let arg = format!("{flag}={value}");
        let mut args = base.to_vec();
        args.push(&arg);
        if flag != "--steps" {
            args.push("--steps=1");
        }
        let o = common::smi(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        fails(&args, &[needle]);
    }
}
