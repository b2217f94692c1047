//! End-to-end: `smi reproduce wave --quick`, `smi reproduce recovery --quick` and `smi report`
//! on a temporary folder.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];

fn smi(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_smi"))
        .args(args)
        .output()
        .expect("the smi binary runs")
}

fn ok(args: &[&str]) {
    let out = smi(args);
    assert!(
        out.status.success(),
        "smi {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).expect("records exist");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("each line is JSON"))
        .collect()
}

fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    key.split('.').try_fold(v, |v, k| v.get(k))
}

fn is_png(path: &Path) -> bool {
    std::fs::read(path)
        .map(|b| b.len() > 1000 && b.starts_with(&PNG_SIGNATURE))
        .unwrap_or(false)
}

#[test]
fn wave_quick_writes_records_table_figure_and_report_rebuilds_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    ok(&["reproduce", "wave", "--quick", "--out", out]);

    let recs = records(&dir.path().join("wave.jsonl"));
    let methods: Vec<&str> = recs.iter().map(|r| r["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["smi", "svgd", "asvgd", "ovi", "map", "nuts"]);
    for r in &recs {
        for key in [
            "experiment",
            "method",
            "size",
            "repeat",
            "seed",
            "steps",
            "seconds",
            "config",
            "version",
        ] {
            assert!(r.get(key).is_some(), "missing {key} in {r}");
        }
        assert_eq!(r["experiment"], "wave");
        assert_eq!(r["size"], "low");
        for key in [
            "lppd_in",
            "lppd_between",
            "lppd_entire",
            "lppd_in_paper",
            "lppd_between_paper",
            "lppd_entire_paper",
            "hdi_width_in",
            "hdi_width_between",
        ] {
            let v = get(r, &format!("metrics.{key}")).and_then(Value::as_f64);
            assert!(v.is_some_and(f64::is_finite), "metrics.{key} in {r}");
        }
        // The artifact only changes SVGD/ASVGD (by n·ln m with m = 5 particles, n = 20 in In).
        let (p, a) = (
            r["metrics"]["lppd_in"].as_f64().unwrap(),
            r["metrics"]["lppd_in_paper"].as_f64().unwrap(),
        );
        match r["method"].as_str().unwrap() {
            "svgd" | "asvgd" => assert!((a - p - 20.0 * 5f64.ln()).abs() < 1e-6, "{p} {a}"),
            _ => assert_eq!(p, a),
        }
    }
    let bands = records(&dir.path().join("wave-bands.jsonl"));
    assert_eq!(bands.len(), 6);
    assert_eq!(bands[0]["lower"].as_array().unwrap().len(), 500);

    let md = dir.path().join("wave.md");
    let png = dir.path().join("wave-hdi.png");
    let table = std::fs::read_to_string(&md).unwrap();
    assert!(table.contains("| SMI |") && table.contains("HDI width Between"));
    // Every table row has as many cells as its header.
    for block in table.split("\n\n").filter(|b| b.starts_with('|')) {
        let cells: Vec<usize> = block.lines().map(|l| l.matches('|').count()).collect();
        assert!(cells.iter().all(|&c| c == cells[0]), "{block}");
    }
    assert!(is_png(&png));

    std::fs::remove_file(&md).unwrap();
    std::fs::remove_file(&png).unwrap();
    ok(&["report", "--out", out]);
    assert_eq!(std::fs::read_to_string(&md).unwrap(), table);
    assert!(is_png(&png));
}

#[test]
fn recovery_quick_writes_records_and_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    ok(&["reproduce", "recovery", "--quick", "--out", out]);

    let recs = records(&dir.path().join("recovery.jsonl"));
    let regions: Vec<&str> = recs.iter().map(|r| r["region"].as_str().unwrap()).collect();
    assert_eq!(regions, ["in", "between", "entire"]);
    for r in &recs {
        for key in [
            "experiment",
            "size",
            "region",
            "repeat",
            "recovery_point",
            "capped",
            "seed",
            "config",
            "version",
            "seconds",
            "svgd_lppd",
        ] {
            assert!(r.get(key).is_some(), "missing {key} in {r}");
        }
        let point = r["recovery_point"].as_u64().unwrap();
        assert!([1, 2, 4, 8].contains(&point), "{r}");
        if r["capped"].as_bool().unwrap() {
            assert_eq!(point, 8);
        }
        assert_eq!(r["svgd_lppd"], "proper");
    }
    let md = dir.path().join("recovery.md");
    let table = std::fs::read_to_string(&md).unwrap();
    assert!(table.contains("| low |"), "{table}");
    std::fs::remove_file(&md).unwrap();
    ok(&["report", "--out", out]);
    assert_eq!(std::fs::read_to_string(&md).unwrap(), table);
}

#[test]
fn unknown_method_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = smi(&[
        "reproduce",
        "wave",
        "--quick",
        "--methods",
        "smi,bogus",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bogus") && err.contains("smi, svgd, asvgd, ovi, map, nuts"),
        "{err}"
    );
    assert!(!dir.path().join("wave.jsonl").exists());
}
