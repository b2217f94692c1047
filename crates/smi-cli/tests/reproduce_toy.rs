//! End-to-end: `smi reproduce toy --quick` writes its records and `toy.png`, and `smi report`
//! redraws the figure from the records.

mod common;

use common::{column, is_png, quick_run, report};

#[test]
fn quick_toy_writes_records_and_figure() {
    let (dir, recs) = quick_run(
        "toy",
        None,
        "experiment method particles seed steps seconds config metrics version state",
    );
    let out = dir.path();
    assert_eq!(recs.len(), 2);
    assert_eq!(column(&recs, "method"), ["smi", "svgd"]);
    for r in &recs {
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
    report(out);
    assert!(is_png(&out.join("toy.png")));
}
