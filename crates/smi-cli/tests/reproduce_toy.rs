//! End-to-end: `smi reproduce toy --quick` writes its records and `toy.png`, and `smi report`
//! redraws the figure from the records.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn smi() -> Command {
    Command::new(env!("CARGO_BIN_EXE_smi"))
}

fn is_png(path: &Path) -> bool {
    std::fs::read(path)
        .map(|b| b.starts_with(&[0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a]) && b.len() > 1000)
        .unwrap_or(false)
}

#[test]
fn quick_toy_writes_records_and_figure() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let status = smi()
        .args(["reproduce", "toy", "--quick", "--out"])
        .arg(out)
        .output()
        .unwrap();
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let text = std::fs::read_to_string(out.join("toy.jsonl")).unwrap();
    let recs: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(recs.len(), 2);
    let methods: Vec<&str> = recs.iter().map(|r| r["method"].as_str().unwrap()).collect();
    assert_eq!(methods, ["smi", "svgd"]);
    for r in &recs {
        for key in [
            "experiment",
            "method",
            "particles",
            "seed",
            "steps",
            "seconds",
            "config",
            "metrics",
            "version",
            "state",
        ] {
            assert!(r.get(key).is_some(), "missing {key} in {r}");
        }
        assert_eq!(r["experiment"], "toy");
        assert_eq!(r["particles"], 2);
        let ps = r["state"]["particles"].as_array().unwrap();
        assert_eq!(ps.len(), 2);
        for p in ps {
            for key in ["loc", "scale", "attraction", "repulsion", "total"] {
                let v = p[key].as_array().unwrap();
                assert_eq!(v.len(), 2, "{key}");
                assert!(v.iter().all(|x| x.as_f64().is_some_and(f64::is_finite)));
            }
        }
        let var = r["metrics"]["variance"].as_array().unwrap();
        assert!(var.iter().all(|v| v.as_f64().unwrap() >= 0.0));
    }
    // SMI's Normal guide has positive scales; SVGD's point masses none.
    assert!(
        recs[0]["state"]["particles"][0]["scale"][0]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert_eq!(
        recs[1]["state"]["particles"][0]["scale"][0].as_f64(),
        Some(0.0)
    );
    assert!(is_png(&out.join("toy.png")));

    std::fs::remove_file(out.join("toy.png")).unwrap();
    let status = smi().args(["report", "--out"]).arg(out).output().unwrap();
    assert!(status.status.success());
    assert!(is_png(&out.join("toy.png")));
}
