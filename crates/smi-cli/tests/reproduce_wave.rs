//! End-to-end: `smi reproduce wave --quick`, `smi reproduce recovery --quick` and `smi report`
//! on a temporary folder.

mod common;

use common::{
    args_with, assert_finite_metrics, column, fails, is_png, p, quick_run, records, report,
    reproduce_quick,
};

#[test]
fn wave_quick_writes_records_table_figure_and_report_rebuilds_them() {
    let (dir, recs) = quick_run(
        "wave",
        None,
        "experiment method size repeat seed steps seconds config version",
    );
    assert_eq!(
        column(&recs, "method"),
        ["smi", "svgd", "asvgd", "ovi", "map", "nuts"]
    );
    for r in &recs {
        assert_eq!(r["size"], "low");
        assert_finite_metrics(
            r,
            "lppd_in lppd_between lppd_entire lppd_in_paper lppd_between_paper \
             lppd_entire_paper hdi_width_in hdi_width_between",
        );
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
    let bands = records(dir.path(), "wave-bands");
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
    report(dir.path());
    assert_eq!(std::fs::read_to_string(&md).unwrap(), table);
    assert!(is_png(&png));

    // The same command again runs nothing: every unit is recorded.
    let jsonl = dir.path().join("wave.jsonl");
    let before = std::fs::read_to_string(&jsonl).unwrap();
    let again = reproduce_quick("wave", dir.path(), None, &[]);
    assert_eq!(std::fs::read_to_string(&jsonl).unwrap(), before);
    assert!(String::from_utf8_lossy(&again.stderr).contains("6 units skipped"));
    // A second repeat runs only the new units (repeat 0 of smi and map stays as recorded).
    reproduce_quick(
        "wave",
        dir.path(),
        None,
        &["--methods", "smi,map", "--repeats", "2"],
    );
    let recs = records(dir.path(), "wave");
    assert_eq!(recs.len(), 8);
    assert_eq!(column(&recs[6..], "method"), ["smi", "map"]);
    assert!(recs[6..].iter().all(|r| r["repeat"] == 1));
}

#[test]
fn recovery_quick_writes_records_and_table() {
    let (dir, recs) = quick_run(
        "recovery",
        None,
        "experiment size region repeat recovery_point capped seed config version seconds \
         svgd_lppd",
    );
    assert_eq!(column(&recs, "region"), ["in", "between", "entire"]);
    // The repeat's partial results (kept for a resume) are gone once it is recorded.
    let leftover: Vec<_> = std::fs::read_dir(dir.path().join("checkpoints"))
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(leftover.is_empty(), "{leftover:?}");
    for r in &recs {
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
    report(dir.path());
    assert_eq!(std::fs::read_to_string(&md).unwrap(), table);

    // The same command again runs nothing: the repeat has its three records.
    let jsonl = dir.path().join("recovery.jsonl");
    let before = std::fs::read_to_string(&jsonl).unwrap();
    let again = reproduce_quick("recovery", dir.path(), None, &[]);
    assert_eq!(std::fs::read_to_string(&jsonl).unwrap(), before);
    assert!(String::from_utf8_lossy(&again.stderr).contains("1 repeats skipped"));
}

#[test]
fn unknown_method_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = p(dir.path());
    fails(
        &args_with(
            &["reproduce", "wave", "--out", out],
            "--quick --methods smi,bogus",
        ),
        &["bogus", "smi, svgd, asvgd, ovi, map, nuts"],
    );
    assert!(!dir.path().join("wave.jsonl").exists());
}
