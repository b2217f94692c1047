//! End-to-end: `smi reproduce variance --quick` writes records, tables and figures, and
//! `smi report` rebuilds them from the records.

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

fn records(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("variance.jsonl")).expect("variance.jsonl");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a JSON record"))
        .collect()
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("the smi binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "smi failed: {stderr}");
    String::from_utf8_lossy(&out.stdout).to_string()
}

#[test]
fn quick_run_writes_records_tables_and_figures() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let stdout = run_ok(
        smi()
            .args(["reproduce", "variance", "--quick", "--out"])
            .arg(out),
    );
    assert!(stdout.contains("SVGD-20"), "terminal table: {stdout}");

    let recs = records(out);
    // d ∈ {2, 8} × (SMI-1, SMI-20, SVGD-20, ASVGD-20).
    assert_eq!(recs.len(), 8);
    let mut seeds = Vec::new();
    for r in &recs {
        for key in [
            "experiment",
            "method",
            "particles",
            "dim",
            "alpha",
            "seed",
            "steps",
            "seconds",
            "config",
            "metrics",
            "version",
        ] {
            assert!(r.get(key).is_some(), "missing {key} in {r}");
        }
        assert_eq!(r["experiment"], "variance");
        for key in ["mean_variance", "frobenius", "mean_location"] {
            let v = r["metrics"][key].as_f64();
            assert!(v.is_some_and(f64::is_finite), "metrics.{key} in {r}");
        }
        let method = r["method"].as_str().unwrap();
        assert!(["smi", "svgd", "asvgd"].contains(&method));
        // The config holds every hyperparameter of the engine.
        let c = &r["config"];
        assert_eq!(c["num_particles"], r["particles"]);
        assert!(c["optimizer"]["lr"].as_f64().is_some());
        assert!(c["kernel"].is_object());
        let radius = c["init"]["radius"].as_f64().unwrap();
        if method == "smi" {
            assert_eq!(c["num_elbo_particles"], 100);
            assert_eq!(radius, 2.0);
            assert_eq!(c["optimizer"]["kind"], "adagrad");
        } else {
            assert_eq!(radius, 20.0);
            assert_eq!(c["optimizer"]["kind"], "adam");
            assert_eq!(r["particles"], 20);
        }
        seeds.push(r["seed"].as_u64().unwrap());
    }
    seeds.sort_unstable();
    seeds.dedup();
    assert_eq!(seeds.len(), 8, "every run has its own seed");

    let md = std::fs::read_to_string(out.join("variance.md")).unwrap();
    for s in ["SMI-1", "SMI-20", "SVGD-20", "ASVGD-20", "Frobenius"] {
        assert!(md.contains(s), "variance.md lacks {s}:\n{md}");
    }
    assert!(is_png(&out.join("variance.png")));
    assert!(is_png(&out.join("variance-frobenius.png")));

    // `smi report` rebuilds everything from the records.
    for f in ["variance.md", "variance.png", "variance-frobenius.png"] {
        std::fs::remove_file(out.join(f)).unwrap();
    }
    run_ok(smi().args(["report", "--out"]).arg(out));
    assert!(out.join("variance.md").exists());
    assert!(is_png(&out.join("variance.png")));
    assert!(is_png(&out.join("variance-frobenius.png")));
}

#[test]
fn several_alphas_give_an_alpha_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    run_ok(
        smi()
            .args(["reproduce", "variance", "--dims", "3", "--alphas", "0.1,1"])
            .args(["--steps", "50", "--seed", "3", "--out"])
            .arg(out),
    );
    let recs = records(out);
    // SMI-1 and SMI-20 for both α, SVGD-20 and ASVGD-20 at α = 1.
    assert_eq!(recs.len(), 6);
    assert!(recs
        .iter()
        .filter(|r| r["method"] != "smi")
        .all(|r| r["alpha"] == 1.0));
    let md = std::fs::read_to_string(out.join("variance.md")).unwrap();
    assert!(md.contains("repulsion temperature α"), "{md}");
    assert!(md.contains("α = 0.1"), "{md}");
    assert!(is_png(&out.join("variance.png")));
}

#[test]
fn bad_arguments_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["--dims", "2,x"],
        vec!["--dims", "0"],
        vec!["--alphas", "-1"],
        vec!["--steps", "0"],
    ] {
        let out = smi()
            .args(["reproduce", "variance"])
            .args(&args)
            .arg("--out")
            .arg(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} should fail");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(stderr.contains("error"), "{args:?}: {stderr}");
    }
}
