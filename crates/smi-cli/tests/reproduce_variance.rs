//! End-to-end: `smi reproduce variance --quick` writes records, tables and figures, and
//! `smi report` rebuilds them from the records.

mod common;

use common::{
    args_with, assert_finite_metrics, assert_records, fails, is_png, p, records, report,
    reproduce_quick, smi_ok, stdout,
};

#[test]
fn quick_run_writes_records_tables_and_figures() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    let stdout = stdout(&reproduce_quick("variance", out, None, &[]));
    assert!(stdout.contains("SVGD-20"), "terminal table: {stdout}");

    let recs = records(out, "variance");
    // d ∈ {2, 8} × (SMI-1, SMI-20, SVGD-20, ASVGD-20).
    assert_eq!(recs.len(), 8);
    assert_records(
        &recs,
        "variance",
        "experiment method particles dim alpha seed steps seconds config metrics version",
    );
    let mut seeds = Vec::new();
    for r in &recs {
        assert_finite_metrics(r, "mean_variance frobenius mean_location");
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
    report(out);
    assert!(out.join("variance.md").exists());
    assert!(is_png(&out.join("variance.png")));
    assert!(is_png(&out.join("variance-frobenius.png")));
}

#[test]
fn several_alphas_give_an_alpha_table() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path();
    smi_ok(&args_with(
        &["reproduce", "variance", "--out", p(out)],
        "--dims 3 --alphas 0.1,1 --steps 50 --seed 3",
    ));
    let recs = records(out, "variance");
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
    let base = ["reproduce", "variance", "--out", p(dir.path())];
    for [option, value] in [
        ["--dims", "2,x"],
        ["--dims", "0"],
        ["--alphas", "-1"],
        ["--steps", "0"],
    ] {
        fails(&[&base[..], &[option, value]].concat(), &["error"]);
    }
}
