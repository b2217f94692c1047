//! `smi fit` / `smi predict` on bad input: bad cells, broken quotes, huge values, damaged model
//! files, absurd sizes and late or long errors — each a clear error, never a panic or a silent
//! wrong result.

mod common;

use std::path::{Path, PathBuf};

use common::fit::*;
use common::{fails, p, smi_ok};
use serde_json::Value;

/// Writes `text` to `dir/name` and returns the path.
fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Writes the small regression training set of the tests (60 rows, target `y`) to
/// `dir/train.csv` and returns the path.
fn small_train(dir: &Path) -> PathBuf {
    write(dir, "train.csv", &regression_csv(60, 0.1, 9, Some(4)))
}

/// Small, fast fit options.
const QUICK: &str = "--hidden 4 --elbo-draws 2 --max-steps 5";

/// Runs `smi args`, requires a clean failure with exit status 1 (not a panic, not a signal
/// such as SIGABRT from a failed allocation) whose stderr holds every needle; returns stderr.
fn fails_cleanly(args: &[&str], needles: &[&str]) -> String {
    let err = fails(args, needles);
    let code = common::smi(args).status.code();
    assert_eq!(
        code,
        Some(1),
        "smi {args:?} did not exit with status 1:\n{err}"
    );
    err
}

/// [`fails_cleanly`] for `smi fit` of `csv` on `target` with the [`QUICK`] options, saving to
/// `model`; returns stderr.
fn quick_fit_fails(csv: &Path, model: &Path, target: &str, needles: &[&str]) -> String {
    fails_cleanly(
        &fit_args(csv, model, &format!("--target {target} {QUICK}")),
        needles,
    )
}

/// The header of a model file as JSON, and its payload.
fn model_parts(path: &Path) -> (Value, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap();
    let nl = bytes.iter().position(|&b| b == b'\n').unwrap();
    (
        serde_json::from_slice(&bytes[..nl]).unwrap(),
        bytes[nl + 1..].to_vec(),
    )
}

/// Writes a model file of header `h` and payload `body` to `path`, signed with a valid
/// checksum as `smi fit` writes it (`checksum`), or without one as older versions did.
fn write_model(path: &Path, h: &Value, body: &[u8], checksum: bool) {
    let mut h = h.clone();
    h.as_object_mut().unwrap().remove("checksum");
    let json = serde_json::to_vec(&h).unwrap();
    let mut out = json.clone();
    if checksum {
        let mut c = crc32fast::Hasher::new();
        c.update(&json);
        c.update(b"\n");
        c.update(body);
        out.pop();
        out.extend_from_slice(format!(",\"checksum\":\"crc32:{:08x}\"}}", c.finalize()).as_bytes());
    }
    out.push(b'\n');
    out.extend_from_slice(body);
    std::fs::write(path, out).unwrap();
}

/// Issue item 1: one `NA` in the target of the example regression file gave a 300-class
/// classifier. It is now a regression target with a bad cell: an error naming the row, or
/// with `--drop-missing` a regression on the other 299 rows; `--task` overrides the guess.
#[test]
fn a_bad_cell_in_a_numeric_target_is_reported_not_classified() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let text = regression_csv(300, 0.2, 1, Some(4));
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let cells: Vec<&str> = lines[41].split(',').collect();
    lines[41] = format!("{},{},NA", cells[0], cells[1]);
    let csv = write(dir, "na.csv", &(lines.join("\n") + "\n"));
    let model = dir.join("m.smi");
    quick_fit_fails(
        &csv,
        &model,
        "y",
        &[
            "regression target \"y\"",
            "line 42 (data row 41) \"NA\"",
            "--drop-missing",
        ],
    );
    assert!(!model.exists());
    let err = ok(&fit_args(
        &csv,
        &model,
        &format!("--target y {QUICK} --drop-missing"),
    ));
    assert!(
        err.contains("dropped 1 of 300 rows") && err.contains("line"),
        "{err}"
    );
    let h: Value =
        serde_json::from_slice(&smi_ok(&["inspect", "--model", p(&model), "--json"]).stdout)
            .unwrap();
    assert_eq!(h["task"], "regression");
    assert_eq!(h["training"]["rows"], 299);
    assert_eq!(
        h["architecture"]["sizes"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        1
    );

    // Integer labels: regression by default, classes under --task classification.
    let mut s = String::from("a,b,k\n");
    for i in 0..60 {
        s.push_str(&format!("{},{},{}\n", i % 7, i % 5, i % 3));
    }
    let labels = write(dir, "labels.csv", &s);
    ok(&fit_args(
        &labels,
        &model,
        &format!("--target k {QUICK} --task classification"),
    ));
    let h: Value =
        serde_json::from_slice(&smi_ok(&["inspect", "--model", p(&model), "--json"]).stdout)
            .unwrap();
    assert_eq!(h["task"], "classification");
    assert_eq!(h["classes"], serde_json::json!(["0", "1", "2"]));
}

/// Issue item 2: an unbalanced quote swallowed every later row into one class label.
#[test]
fn an_unbalanced_quote_is_an_error_naming_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let csv = write(
        dir,
        "q.csv",
        "a,b,label\n1,2,x\n3,4,\"y\n5,6,z\n7,8,x\n9,10,z\n",
    );
    let model = dir.join("m.smi");
    quick_fit_fails(
        &csv,
        &model,
        "label",
        &[
            "line 3",
            "column \"label\"",
            "closing quote is probably missing",
        ],
    );
    // The same in a numeric column.
    let csv = write(dir, "n.csv", "a,b,y\n1,2,3\n\"4\n5,6,7\n8\",9,10\n");
    quick_fit_fails(
        &csv,
        &model,
        "y",
        &["line 3", "column \"a\"", "runs over 3 lines"],
    );
}

/// Issue item 3: values beyond ~1e154 overflowed the scaler (`std: null` in the file, which
/// could then never be read). They now fit, save finite statistics and predict.
#[test]
fn values_beyond_1e154_fit_and_predict() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut s = String::from("x1,x2,y\n");
    for i in 0..80 {
        let u = (i as f64 * 0.37).sin();
        s.push_str(&format!(
            "{:e},{},{}\n",
            u * 1e200,
            i % 4,
            u + 0.1 * (i % 4) as f64
        ));
    }
    let csv = write(dir, "huge.csv", &s);
    let model = dir.join("m.smi");
    ok(&fit_args(&csv, &model, &format!("--target y {QUICK}")));
    let (h, _) = model_parts(&model);
    let std = h["x_scaler"]["std"][0]
        .as_f64()
        .expect("a finite std, not null");
    assert!(std > 1e199 && std.is_finite(), "{std}");
    let out = dir.join("pred.csv");
    ok(&predict_args(&model, &csv, &out, None, "--draws 20"));
    let (_, rows) = read_csv(&out);
    assert_eq!(rows.len(), 80);
    assert!(rows
        .iter()
        .all(|r| r.iter().all(|c| c.parse::<f64>().unwrap().is_finite())));
    // Huge targets: the target scaler stays finite too.
    let s = s.replace("x1,x2,y", "y,x2,x1");
    let csv = write(dir, "huge_y.csv", &s);
    ok(&fit_args(&csv, &model, &format!("--target y {QUICK}")));
    let (h, _) = model_parts(&model);
    assert!(
        h["y_scaler"]["std"][0].as_f64().is_some_and(f64::is_finite),
        "{}",
        h["y_scaler"]
    );
}

/// Issue items 4 and 7: model files are checked (checksum, then the whole header against the
/// architecture) before use; every damaged or inconsistent file is a clear error naming what
/// is wrong, and files without a checksum still work, with a warning.
#[test]
fn damaged_and_inconsistent_model_files_are_clear_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let train = small_train(dir);
    let reg = dir.join("reg.smi");
    ok(&fit_args(&train, &reg, &format!("--target y {QUICK}")));
    let (ex_train, _) = (classification_csv(60, 3), ());
    let ctrain = write(dir, "ctrain.csv", &ex_train);
    let cls = dir.join("cls.smi");
    ok(&fit_args(&ctrain, &cls, &format!("--target shape {QUICK}")));
    let out = dir.join("o.csv");
    let bad = dir.join("bad.smi");
    // `use_it(model, csv, needles)`: predict and inspect both fail cleanly naming the problem.
    let use_it = |csv: &Path, needles: &[&str]| {
        fails_cleanly(&predict_args(&bad, csv, &out, None, "--draws 5"), needles);
        fails_cleanly(&["inspect", "--model", p(&bad)], needles);
    };

    // Flipped payload bytes: caught by the checksum.
    let (h, body) = model_parts(&reg);
    let mut bytes = std::fs::read(&reg).unwrap();
    let at = bytes.len() - body.len() + body.len() / 3;
    bytes[at] ^= 0x10;
    std::fs::write(&bad, &bytes).unwrap();
    use_it(&train, &["bad.smi is corrupt: its checksum does not match"]);

    // Inconsistent headers, with a valid checksum (so the validation must catch them).
    let set = |v: &Value, path: &str, new: Value| {
        let mut v = v.clone();
        *v.pointer_mut(path).unwrap() = new;
        v
    };
    use serde_json::json;
    let (ch, cbody) = model_parts(&cls);
    let cases = [
        (
            &h,
            &body,
            set(&h, "/y_scaler", json!({"mean": [], "std": []})),
            &train,
            "y_scaler has 0 means",
        ),
        (
            &h,
            &body,
            set(&h, "/x_scaler", json!({"mean": [0.0], "std": [1.0]})),
            &train,
            "x_scaler has 1 means and 1 stds, but the model has 2 inputs",
        ),
        (
            &h,
            &body,
            set(&h, "/architecture/sizes", json!([2, 5, 1])),
            &train,
            "payload.dim is",
        ),
        (
            &h,
            &body,
            set(&h, "/payload/rows", json!(2)),
            &train,
            "bytes follow",
        ),
        (
            &ch,
            &cbody,
            set(
                &ch,
                "/classes",
                json!(["circle", "square", "triangle", "hexagon"]),
            ),
            &ctrain,
            "4 class names (classes) for a network with 3 outputs",
        ),
        (
            &ch,
            &cbody,
            set(&ch, "/classes", json!(["circle", "square"])),
            &ctrain,
            "2 class names (classes) for a network with 3 outputs",
        ),
    ];
    for (_, body, header, csv, want) in cases {
        write_model(&bad, &header, body, true);
        let err = fails(&predict_args(&bad, csv, &out, None, "--draws 5"), &[want]);
        assert!(!err.contains("cannot write"), "{err}");
        fails_cleanly(&["inspect", "--model", p(&bad)], &[want]);
    }

    // A file of an older smi (no checksum) still works, with a warning.
    write_model(&bad, &h, &body, false);
    let err = ok(&predict_args(&bad, &train, &out, None, "--draws 5"));
    assert!(
        err.contains("warning") && err.contains("no checksum"),
        "{err}"
    );
    // … and its damaged payload is named as such, not blamed on the fit.
    let mut nan = body.clone();
    nan[8..16].copy_from_slice(&f64::NAN.to_le_bytes());
    write_model(&bad, &h, &nan, false);
    let err = fails_cleanly(
        &predict_args(&bad, &train, &out, None, "--draws 5"),
        &["is corrupt: payload value at row 1, column 2 is NaN"],
    );
    assert!(!err.contains("diverged"), "{err}");
}

/// Issue item 5: absurd sizes aborted the process on allocation; they are refused up front,
/// naming the flag.
#[test]
fn absurd_sizes_are_refused_before_allocating() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let train = small_train(dir);
    let model = dir.join("m.smi");
    for (opts, flag) in [
        ("--hidden 100000000", "--hidden 100000000"),
        (
            "--hidden 100000,100000,100000",
            "--hidden 100000,100000,100000",
        ),
        ("--particles 1000000000", "--particles 1000000000"),
        // a million particles' values fit in memory, the kernel's m × m matrices (32 TB) do
        // not: refused in words, not an allocation abort
        ("--particles 1000000", "the kernel's m × m matrices"),
        (
            "--method svgd --particles 1000000",
            "the kernel's m × m matrices",
        ),
        ("--elbo-draws 1000000000", "--elbo-draws 1000000000"),
        (
            "--method nuts --nuts-draws 100000000000",
            "--nuts-draws 100000000000",
        ),
        (
            "--validation 0.2 --draws 100000000000",
            "--draws 100000000000",
        ),
        ("--hidden 18446744073709551615", "the network is too large"),
    ] {
        let err = fails_cleanly(
            &fit_args(&train, &model, &format!("--target y --max-steps 5 {opts}")),
            &[flag],
        );
        assert!(err.contains("memory") || err.contains("too large"), "{err}");
    }
    ok(&fit_args(&train, &model, &format!("--target y {QUICK}")));
    let out = dir.join("o.csv");
    fails_cleanly(
        &predict_args(&model, &train, &out, None, "--draws 100000000000"),
        &["--draws 100000000000", "more than this machine's"],
    );
    assert!(!out.exists());
}

/// Issue items 6 and 7: options that were wrongly accepted, and messages that were too long
/// or came too late.
#[test]
fn bad_options_and_late_or_long_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let train = small_train(dir);
    let model = dir.join("m.smi");
    fails_cleanly(
        &fit_args(&train, &model, "--target y --hidden 2,,2"),
        &["--hidden \"2,,2\"", "width 2 is empty"],
    );
    fails_cleanly(
        &fit_args(&train, &model, "--target y --features x1,,x2"),
        &["--features", "empty"],
    );

    // A 5 MB cell: the message quotes its start and length only.
    let big = "9".repeat(2_500_000) + &"z".repeat(2_500_000);
    let csv = write(dir, "big.csv", &format!("x1,x2,y\n1,2,3\n{big},5,6\n"));
    let err = quick_fit_fails(&csv, &model, "y", &["line 3", "(5000000 characters)"]);
    // (Without the stack trace anyhow adds when RUST_BACKTRACE is set.)
    let message = err.split("Stack backtrace").next().unwrap_or_default();
    assert!(message.len() < 1000, "{} bytes of error", message.len());

    // --save into a missing or unwritable folder fails before reading or fitting anything.
    let long = "--target y --hidden 50,50 --max-steps 20000 --no-early-stop --elbo-draws 100";
    let t0 = std::time::Instant::now();
    let err = fails_cleanly(
        &fit_args(&train, &dir.join("no/such/m.smi"), long),
        &["--save", "does not exist"],
    );
    assert!(!err.contains("steps in"), "{err}");
    fails_cleanly(
        &fit_args(&train, Path::new("/proc/m.smi"), long),
        &["--save /proc/m.smi: cannot write into /proc"],
    );
    assert!(
        t0.elapsed().as_secs() < 20,
        "the failures came after fitting"
    );

    // predict --metrics on a CSV without the target says so before writing anything.
    ok(&fit_args(&train, &model, &format!("--target y {QUICK}")));
    let nolabel = write(dir, "nolabel.csv", "x1,x2\n0.5,0.1\n");
    let out = dir.join("o.csv");
    let m = dir.join("m.json");
    fails_cleanly(
        &predict_args(&model, &nolabel, &out, Some(&m), ""),
        &["--metrics", "no target column \"y\""],
    );
    assert!(!out.exists() && !m.exists(), "written before the error");
    ok(&predict_args(&model, &nolabel, &out, None, ""));
    fails_cleanly(
        &predict_args(&model, &nolabel, &dir.join("missing/o.csv"), None, ""),
        &["--out", "does not exist"],
    );
}

/// Two `smi fit --save` to one path at once, 20 times: both end cleanly (their temporary files
/// are their own), and the path holds a whole model that loads.
#[test]
fn concurrent_saves_to_one_path_lose_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let train = small_train(dir);
    let model = dir.join("same.smi");
    let opts = format!("--target y {QUICK}");
    for round in 0..20 {
        let args = fit_args(&train, &model, &opts);
        let children: Vec<_> = (0..2)
            .map(|_| {
                std::process::Command::new(env!("CARGO_BIN_EXE_smi"))
                    .args(&args)
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        smi_ok(&["inspect", "--model", p(&model)]);
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") || n.contains(".ckpt"))
        .collect();
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
}

/// `smi predict` refuses an output path that is one of its inputs, before writing anything.
#[test]
fn predict_never_writes_over_its_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let train = small_train(dir);
    let model = dir.join("m.smi");
    ok(&fit_args(&train, &model, &format!("--target y {QUICK}")));
    let csv_before = std::fs::read(&train).unwrap();
    let model_before = std::fs::read(&model).unwrap();
    fails_cleanly(
        &predict_args(&model, &train, &train, None, ""),
        &["--out", "is the --csv file"],
    );
    // the same file by another name
    let other = dir.join(".").join("m.smi");
    fails_cleanly(
        &predict_args(&model, &train, &other, None, ""),
        &["--out", "is the --model file"],
    );
    let metrics = dir.join("train.csv");
    fails_cleanly(
        &predict_args(&model, &train, &dir.join("out.csv"), Some(&metrics), ""),
        &["--metrics", "is the --csv file"],
    );
    assert_eq!(std::fs::read(&train).unwrap(), csv_before);
    assert_eq!(std::fs::read(&model).unwrap(), model_before);
}
