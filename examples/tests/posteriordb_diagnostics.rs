//! R̂, bulk ESS and tail ESS against the values posteriordb stores for its reference draws
//! (`reference_posterior_info.diagnostics` of each `info.json`, computed by rstan 2.21's
//! `monitor`), on the four posteriors of `shared/data/posteriordb` (10 chains × 1000 draws
//! each, 26 parameters in all).
//!
//! The data directory is the one the build found (`SMI_TEST_DATA_DIR`, see
//! `crates/smi-data/build.rs`); without the posteriordb files there the test is ignored, with
//! the reason.

use std::path::PathBuf;

use serde_json::Value;
use smi::{ess_bulk, ess_tail, split_rhat};

const POSTERIORS: [&str; 4] = [
    "eight_schools-eight_schools_noncentered",
    "kidiq-kidscore_momiq",
    "sblrc-blr",
    "arK-arK",
];

fn data_dir() -> PathBuf {
    PathBuf::from(env!("SMI_TEST_DATA_DIR"))
}

fn read_json(path: &PathBuf) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

#[test]
#[cfg_attr(
    smi_no_posteriordb_data,
    ignore = "needs the posteriordb data: ../shared/data/posteriordb"
)]
fn posteriordb_reference_rhat_and_ess_bulk_and_tail_match_the_stored_diagnostics() {
    let root = data_dir().join("posteriordb");
    let mut checked = 0;
    let (mut worst_rhat, mut worst_bulk, mut worst_tail) = (0.0f64, 0.0f64, 0.0f64);
    for name in POSTERIORS {
        let dir = root.join(name);
        let (Some(info), Some(draws)) = (
            read_json(&dir.join("info.json")),
            read_json(&dir.join("reference_draws.json")),
        ) else {
            eprintln!(
                "SKIP: {} not found (set SMI_DATA_DIR); cannot check the stored diagnostics",
                dir.display()
            );
            continue;
        };
        let diag = &info["reference_posterior_info"]["diagnostics"];
        let names = diag["diagnostic_information"]["names"].as_array().unwrap();
        let (bulk, tail, rhat) = (
            floats(&diag["effective_sample_size_bulk"]),
            floats(&diag["effective_sample_size_tail"]),
            floats(&diag["r_hat"]),
        );
        let chains = draws.as_array().unwrap();
        assert_eq!(chains.len(), 10, "{name}");
        for (i, param) in names.iter().enumerate() {
            let param = param.as_str().unwrap();
            let per_chain: Vec<Vec<f64>> = chains.iter().map(|c| floats(&c[param])).collect();
            let refs: Vec<&[f64]> = per_chain.iter().map(Vec::as_slice).collect();
            let (b, t, r) = (ess_bulk(&refs), ess_tail(&refs), split_rhat(&refs));
            worst_bulk = worst_bulk.max((b / bulk[i] - 1.0).abs());
            worst_tail = worst_tail.max((t / tail[i] - 1.0).abs());
            worst_rhat = worst_rhat.max((r - rhat[i]).abs());
            checked += 1;
        }
    }
    eprintln!(
        "{checked} parameters: max relative error bulk ESS {worst_bulk:.2e}, tail ESS \
         {worst_tail:.2e}; max |ΔR̂| {worst_rhat:.2e}"
    );
    // The same estimators on the same draws: bulk and tail ESS agree to rounding (observed
    // 5e-15 relative). R̂ differs in the 6th digit (observed 1.45e-6, cause not established);
    // 1e-5 keeps that margin and is far below the resolution R̂ is read at (0.01).
    assert!(worst_bulk < 1e-9, "bulk ESS: {worst_bulk}");
    assert!(worst_tail < 1e-9, "tail ESS: {worst_tail}");
    assert!(worst_rhat < 1e-5, "R̂: {worst_rhat}");
}
