//! The likelihood temperature T and the learning-rate schedule of `smi fit` in the model file:
//! recorded, shown by `smi inspect`, checked by `--resume`; model files written before smi
//! recorded them read as T = 1 with a constant rate.

mod common;

use std::path::Path;

use common::fit::*;
use common::{fails, p, smi_ok, stdout};

/// The header of the model file at `path` as JSON, and the bytes from its newline on.
fn header(path: &Path) -> (serde_json::Value, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap();
    let nl = bytes.iter().position(|&b| b == b'\n').unwrap();
    (
        serde_json::from_slice(&bytes[..nl]).unwrap(),
        bytes[nl..].to_vec(),
    )
}

/// A default SMI regression records T = 0.3 and the constant schedule; `inspect` states it;
/// `--resume` refuses another `--temperature` or `--lr-schedule`, naming the checkpoint's,
/// and continues with the same options.
#[test]
fn temperature_is_recorded_shown_and_checked_on_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (train, _) = regression_files(dir, [60, 1], 0.2, [5, 6], Some(4));
    let opts = "--target y --hidden 4 --elbo-draws 2 --no-early-stop --max-steps 20";
    // --max-time 0 stops after the first step and leaves a checkpoint to resume.
    let model = dir.join("m.smi");
    ok(&fit_args(&train, &model, &format!("{opts} --max-time 0")));
    let (h, _) = header(&model);
    assert_eq!(h["settings"]["temperature"], 0.3, "{h}");
    assert_eq!(h["settings"]["lr_schedule"], "constant", "{h}");
    let text = stdout(&smi_ok(&["inspect", "--model", p(&model)]));
    for needle in [
        "likelihood   temperature 0.3 (tempered",
        "not the Bayesian posterior; docs/calibration.md)",
        "(fixed, constant schedule)",
    ] {
        assert!(text.contains(needle), "{needle:?} not in\n{text}");
    }

    fails(
        &fit_args(
            &train,
            &model,
            &format!("{opts} --temperature 0.5 --resume"),
        ),
        &[
            "--resume: the checkpoint",
            "m.smi.ckpt.json is of a fit at likelihood temperature 0.3, not 0.5",
            "--temperature 0.3",
        ],
    );
    fails(
        &fit_args(
            &train,
            &model,
            &format!("{opts} --lr-schedule cosine --resume"),
        ),
        &["--resume", "--lr-schedule constant, not cosine"],
    );
    // The default T of the task is the checkpoint's: resuming with the same options finishes.
    // A checkpoint of an smi that did not record T and the schedule is continued with a
    // warning (nothing to check them against).
    let meta = dir.join("m.smi.ckpt.json");
    let mut v = read_json(&meta);
    let o = v.as_object_mut().unwrap();
    o.remove("temperature").unwrap();
    o.remove("lr_schedule").unwrap();
    std::fs::write(&meta, serde_json::to_vec(&v).unwrap()).unwrap();
    let err = ok(&fit_args(&train, &model, &format!("{opts} --resume")));
    assert!(err.contains("at step 1 of 20"), "{err}");
    assert!(
        err.contains("does not record its likelihood temperature"),
        "{err}"
    );

    // An explicit T and schedule are recorded as given; T = 1 is stated as the posterior.
    let other = dir.join("t1.smi");
    let t1 = format!("{opts} --temperature 1 --lr-schedule cosine");
    ok(&fit_args(&train, &other, &t1));
    let (h, _) = header(&other);
    assert_eq!(h["settings"]["temperature"], 1.0, "{h}");
    assert_eq!(h["settings"]["lr_schedule"], "cosine", "{h}");
    let text = stdout(&smi_ok(&["inspect", "--model", p(&other)]));
    assert!(
        text.contains("likelihood   temperature 1 (the Bayesian posterior)")
            && text.contains("(fixed, cosine schedule)"),
        "{text}"
    );
}

/// A model file of an smi that recorded neither (no `temperature` or `lr_schedule`, no
/// checksum) is read, inspected as T = 1 with a constant rate, and predicts.
#[test]
fn an_old_model_file_reads_as_t_1() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (train, test) = regression_files(dir, [40, 5], 0.2, [5, 6], Some(4));
    let model = dir.join("m.smi");
    let opts = "--target y --hidden 4 --elbo-draws 2 --max-steps 10";
    ok(&fit_args(&train, &model, opts));
    let (mut h, rest) = header(&model);
    let o = h.as_object_mut().unwrap();
    o.remove("checksum");
    let s = o["settings"].as_object_mut().unwrap();
    s.remove("temperature").unwrap();
    s.remove("lr_schedule").unwrap();
    let old = dir.join("old.smi");
    let mut bytes = serde_json::to_vec(&h).unwrap();
    bytes.extend_from_slice(&rest);
    std::fs::write(&old, bytes).unwrap();

    let out = smi_ok(&["inspect", "--model", p(&old)]);
    let text = stdout(&out);
    assert!(
        text.contains("likelihood   temperature 1 (not recorded in this file")
            && text.contains("(fixed, constant schedule)"),
        "{text}"
    );
    assert!(common::stderr(&out).contains("has no checksum"));
    let pred = dir.join("p.csv");
    ok(&predict_args(&old, &test, &pred, None, "--draws 20"));
    assert_eq!(read_csv(&pred).1.len(), 5);
}
