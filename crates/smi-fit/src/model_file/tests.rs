//! Tests of the model file: round trips, checksums, header validation and fuzz harnesses.

use super::*;
use proptest::prelude::*;
use smi_models::Activation;

/// A small regression model: 1 → 2 → 1 ReLU, learned noise, two Normal particles (d = 8).
pub(crate) fn sample() -> ModelFile {
    let header = Header {
        magic: MAGIC.into(),
        format_version: FORMAT_VERSION,
        smi_version: "t".into(),
        task: Task::Regression,
        method: "smi".into(),
        architecture: Architecture {
            sizes: vec![1, 2, 1],
            activation: Activation::Relu,
            noise: Some(Noise::uci()),
            prior_scale: 1.0,
        },
        target: "y".into(),
        features: vec!["x".into()],
        x_scaler: Scaler {
            mean: vec![0.5],
            std: vec![2.0],
        },
        y_scaler: None,
        classes: None,
        settings: Settings {
            lr: Some(1e-3),
            lr_mode: "fixed".into(),
            lr_grid: vec![],
            max_steps: 1,
            particles: 2,
            elbo_draws: 1,
            batch_size: None,
            early_stopping: true,
            init_radius: 0.1,
            seed: 0,
            validation: None,
            nuts_warmup: 0,
            nuts_draws: 0,
            temperature: Some(0.3),
            lr_schedule: crate::LrScheduleKind::Cosine,
        },
        training: Training {
            rows: 1,
            validation_rows: 0,
            steps: 1,
            seconds: 0.0,
            early_stopped: false,
            final_loss: None,
            ..Default::default()
        },
        validation: None,
        estimator: None,
        payload: Payload {
            kind: PayloadKind::Draws,
            guide: None,
            rows: 0,
            cols: 0,
            dim: 0,
            encoding: String::new(),
        },
        checksum: None,
    };
    // d = 1·2 + 2 + 2·1 + 1 + 1 (precision) = 8; Normal particles: 2 × 16.
    let post = Mixture::new(
        GuideSettings::normal(),
        Matrix::from_fn(2, 16, |i, j| (i * 16 + j) as f64 * 0.25 - 1.0),
        8,
    )
    .unwrap();
    ModelFile::new(header, &Posterior::Mixture(post), 8)
}

/// A small classifier: 2 → 3 → 3 tanh, classes a, b, c, two SVGD point masses (d = 21).
pub(crate) fn classifier() -> ModelFile {
    let mut h = sample().header;
    h.task = Task::Classification;
    h.method = "svgd".into();
    h.architecture = Architecture {
        sizes: vec![2, 3, 3],
        activation: Activation::Tanh,
        noise: None,
        prior_scale: 1.0,
    };
    h.target = "label".into();
    h.features = vec!["u".into(), "v".into()];
    h.x_scaler = Scaler {
        mean: vec![0.0, 1.0],
        std: vec![1.0, 3.0],
    };
    h.classes = Some(vec!["a".into(), "b".into(), "c".into()]);
    let post = Mixture::new(
        GuideSettings::Delta,
        Matrix::from_fn(2, 21, |i, j| ((i * 21 + j) % 7) as f64 * 0.3 - 0.9),
        21,
    )
    .unwrap();
    ModelFile::new(h, &Posterior::Mixture(post), 21)
}

/// The header of `bytes` as JSON and the payload after it.
pub(crate) fn split(bytes: &[u8]) -> (Value, Vec<u8>) {
    let nl = bytes.iter().position(|&b| b == b'\n').unwrap();
    (
        serde_json::from_slice(&bytes[..nl]).unwrap(),
        bytes[nl + 1..].to_vec(),
    )
}

/// A file of header `v` and payload `body`, with a fresh checksum when `checksum` is set
/// (as smi writes it), without one otherwise (as older versions wrote them).
pub(crate) fn encode(v: &Value, body: &[u8], checksum: bool) -> Vec<u8> {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("checksum");
    }
    let json = serde_json::to_vec(&v).unwrap();
    let mut out = json.clone();
    if checksum && json.last() == Some(&b'}') {
        let mut c = crc32fast::Hasher::new();
        c.update(&json);
        c.update(b"\n");
        c.update(body);
        out.pop();
        let sep = if json.len() > 2 { "," } else { "" };
        out.extend_from_slice(
            format!("{sep}\"checksum\":\"crc32:{:08x}\"}}", c.finalize()).as_bytes(),
        );
    }
    out.push(b'\n');
    out.extend_from_slice(body);
    out
}

/// `v` with the value at the JSON pointer `path` replaced by `new`, or removed when `new`
/// is `None`.
pub(crate) fn with(v: &Value, path: &str, new: Option<Value>) -> Value {
    let mut v = v.clone();
    let (parent, key) = path.rsplit_once('/').unwrap();
    let obj = v.pointer_mut(parent).unwrap();
    match (obj, new) {
        (Value::Object(o), Some(n)) => {
            o.insert(key.to_string(), n);
        }
        (Value::Object(o), None) => {
            o.remove(key);
        }
        (Value::Array(a), Some(n)) => a[key.parse::<usize>().unwrap()] = n,
        (Value::Array(a), None) => {
            a.remove(key.parse::<usize>().unwrap());
        }
        _ => panic!("bad path {path}"),
    }
    v
}

/// Reads `bytes`; when that succeeds, uses the model the ways `smi predict` and
/// `smi inspect` do, and saves it again. Any of these may fail, none may panic, and a
/// model that saves must read back.
pub(crate) fn exercise(bytes: &[u8]) -> Result<()> {
    let m = ModelFile::from_bytes(bytes, "m")?;
    let _ = super::super::inspect::summary(&m, "m");
    if let Ok(again) = m.to_bytes() {
        let back = ModelFile::from_bytes(&again, "m").expect("a saved model reads back");
        assert_eq!(back.payload, m.payload);
    }
    let h = &m.header;
    let fitted = m.fitted()?;
    let cols = h.features.len();
    let x = Matrix::from_fn(3, cols, |i, j| (i as f64 - 1.0) * (j as f64 + 0.5));
    match h.task {
        Task::Regression => {
            let y = [0.0, 1.0, -2.0];
            let o = super::super::predict::predict_regression(h, &fitted, &x, 3, 0.9, 1, Some(&y))?;
            let _ = super::super::predict::regression_metrics(&o, &y, 0.9);
        }
        Task::Classification => {
            let o = super::super::predict::predict_classes(h, &fitted, &x, 3, 1)?;
            let _ = super::super::predict::class_metrics(&o, &[0, 1, 0]);
        }
    }
    Ok(())
}

#[test]
fn round_trip_and_errors() {
    let m = sample();
    let b = m.to_bytes().unwrap();
    let back = ModelFile::from_bytes(&b, "m").unwrap();
    let sum = back.header.checksum.clone().expect("a checksum");
    assert!(parse_checksum(&sum).is_some(), "{sum}");
    let line =
        String::from_utf8_lossy(&b[..b.iter().position(|&c| c == b'\n').unwrap()]).into_owned();
    assert!(
        line.ends_with(&format!(",\"checksum\":\"{sum}\"}}")),
        "{line}"
    );
    assert_eq!(
        back.header,
        Header {
            checksum: Some(sum),
            ..m.header.clone()
        }
    );
    assert_eq!(back.payload, m.payload);
    let e = ModelFile::from_bytes(&b[..b.len() - 5], "m").unwrap_err();
    assert!(e.to_string().contains("truncated"), "{e}");
    let e = ModelFile::from_bytes(&b[..20], "m").unwrap_err();
    assert!(e.to_string().contains("truncated"), "{e}");
    let e = ModelFile::from_bytes(b"hello\nworld", "m").unwrap_err();
    assert!(e.to_string().contains("not an smi model"), "{e}");
    let s = String::from_utf8_lossy(&b).replacen("\"format_version\":1", "\"format_version\":7", 1);
    let e = ModelFile::from_bytes(s.as_bytes(), "m").unwrap_err();
    assert!(e.to_string().contains("version 7"), "{e}");
    let mut c = b.clone();
    c[30] = b'#';
    assert!(ModelFile::from_bytes(&c, "m").is_err());
    assert!(ModelFile::from_bytes(b"", "m").is_err());
    let c = classifier().to_bytes().unwrap();
    exercise(&c).unwrap();
    exercise(&b).unwrap();
}

/// Any flipped bit of the payload, or a changed value in the header, fails the checksum.
#[test]
fn flipped_bytes_fail_the_checksum() {
    let b = sample().to_bytes().unwrap();
    let nl = b.iter().position(|&c| c == b'\n').unwrap();
    for i in [nl + 1, nl + 9, b.len() / 2 + nl / 2, b.len() - 1] {
        for bit in [0, 3, 7] {
            let mut c = b.clone();
            c[i] ^= 1 << bit;
            let e = ModelFile::from_bytes(&c, "m.smi").unwrap_err().to_string();
            assert!(
                e.contains("m.smi is corrupt: its checksum does not match"),
                "byte {i} bit {bit}: {e}"
            );
        }
    }
    // A header value changed by hand (the standardisation of the input): still valid JSON
    // and a consistent header, caught by the checksum alone.
    let text = String::from_utf8(b[..nl].to_vec()).unwrap();
    let edited = text.replacen("\"std\":[2.0]", "\"std\":[3.0]", 1);
    assert_ne!(edited, text);
    let mut c = edited.into_bytes();
    c.extend_from_slice(&b[nl..]);
    let e = ModelFile::from_bytes(&c, "m").unwrap_err().to_string();
    assert!(e.contains("checksum does not match"), "{e}");
    // A bad or misplaced checksum member.
    let (v, body) = split(&b);
    let bad = with(&v, "/checksum", Some(Value::from("crc32:xyz")));
    let mut c = serde_json::to_vec(&bad).unwrap();
    c.push(b'\n');
    c.extend_from_slice(&body);
    let e = ModelFile::from_bytes(&c, "m").unwrap_err().to_string();
    assert!(e.contains("is not \"crc32:\" and 8 hex digits"), "{e}");
    let moved = text.replacen(
        "{\"magic\"",
        &format!(
            "{{\"checksum\":\"{}\",\"magic\"",
            v["checksum"].as_str().unwrap()
        ),
        1,
    );
    let moved = moved.replacen(
        &format!(",\"checksum\":\"{}\"}}", v["checksum"].as_str().unwrap()),
        "}",
        1,
    );
    let mut c = moved.into_bytes();
    c.extend_from_slice(&b[nl..]);
    let e = ModelFile::from_bytes(&c, "m").unwrap_err().to_string();
    assert!(e.contains("not the header's last member"), "{e}");
}

/// Files written before checksums are read (the caller warns), and still validated.
#[test]
fn files_without_a_checksum_are_read_and_validated() {
    for m in [sample(), classifier()] {
        let (v, body) = split(&m.to_bytes().unwrap());
        let old = encode(&v, &body, false);
        let back = ModelFile::from_bytes(&old, "m").unwrap();
        assert_eq!(back.header.checksum, None);
        assert_eq!(back.payload, m.payload);
        exercise(&old).unwrap();
    }
    // A damaged payload of an old file: named as such, not taken for a diverged fit.
    let (v, mut body) = split(&sample().to_bytes().unwrap());
    body[16..24].copy_from_slice(&f64::NAN.to_le_bytes());
    let e = ModelFile::from_bytes(&encode(&v, &body, false), "m")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("m is corrupt: payload value at row 1, column 3 is NaN"),
        "{e}"
    );
    let (v, body) = split(&sample().to_bytes().unwrap());
    let e = ModelFile::from_bytes(
        &encode(
            &with(
                &v,
                "/y_scaler",
                Some(serde_json::json!({"mean": [], "std": []})),
            ),
            &body,
            false,
        ),
        "m",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("y_scaler has 0 means"), "{e}");
}

/// Files written before smi recorded the likelihood temperature and the learning-rate
/// schedule read as fits at T = 1 with a constant rate (what those versions did); a recorded
/// T reads back as written.
#[test]
fn files_without_a_temperature_read_as_t_1() {
    let m = sample();
    let (v, body) = split(&m.to_bytes().unwrap());
    assert_eq!(v["settings"]["temperature"], 0.3);
    assert_eq!(v["settings"]["lr_schedule"], "cosine");
    let back = ModelFile::from_bytes(&encode(&v, &body, true), "m").unwrap();
    assert_eq!(back.header.settings.temperature(), 0.3);
    assert_eq!(
        back.header.settings.lr_schedule,
        crate::LrScheduleKind::Cosine
    );
    let old = with(
        &with(&v, "/settings/temperature", None),
        "/settings/lr_schedule",
        None,
    );
    assert!(old["settings"].get("temperature").is_none());
    for checksum in [true, false] {
        let back = ModelFile::from_bytes(&encode(&old, &body, checksum), "m").unwrap();
        assert_eq!(back.header.settings.temperature, None);
        assert_eq!(back.header.settings.temperature(), 1.0);
        assert_eq!(
            back.header.settings.lr_schedule,
            crate::LrScheduleKind::Constant
        );
        // Written back, it stays without a temperature (nothing is invented for it).
        let again = split(&back.to_bytes().unwrap()).0;
        assert!(again["settings"].get("temperature").is_none());
    }
}

/// Every inconsistent header is a clear error naming what is wrong, with or without a
/// valid checksum.
#[test]
fn inconsistent_headers_are_clear_errors() {
    use serde_json::json;
    let reg = split(&sample().to_bytes().unwrap());
    let cls = split(&classifier().to_bytes().unwrap());
    // (model, JSON pointer, new value or None to remove, what the error must say)
    type Case<'a> = (&'a (Value, Vec<u8>), &'a str, Option<Value>, &'a str);
    let cases: Vec<Case> = vec![
        (&reg, "/y_scaler", Some(json!({"mean": [], "std": []})), "y_scaler has 0 means and 0 stds, but the model has 1 target"),
        (&reg, "/y_scaler", Some(json!({"mean": [1.0], "std": [0.0]})), "y_scaler.std holds a value that is not a positive"),
        (&reg, "/x_scaler", Some(json!({"mean": [], "std": []})), "x_scaler has 0 means and 0 stds, but the model has 1 inputs"),
        (&reg, "/x_scaler/std", Some(json!([-1.0])), "x_scaler.std holds a value that is not a positive"),
        (&reg, "/x_scaler/std", Some(json!([null])), "corrupt model header"),
        (&reg, "/features", Some(json!(["x", "z"])), "2 feature names for a network with 1 inputs"),
        (&reg, "/architecture/sizes", Some(json!([1, 3, 1])), "payload.dim is 8 but the network (architecture.sizes [1, 3, 1]) has d = 11"),
        (&reg, "/architecture/sizes", Some(json!([1, 2, 2])), "a regression network has one output"),
        (&reg, "/architecture/sizes", Some(json!([1])), "must hold an input width"),
        (&reg, "/architecture/sizes", Some(json!([1, 0, 1])), "none zero"),
        (&reg, "/architecture/sizes", Some(json!([1, usize::MAX, usize::MAX, 1])), "the parameter count overflows"),
        (&reg, "/architecture/noise", None, "a regression model without a noise model"),
        (&reg, "/architecture/noise", Some(json!({"Fixed": -1.0})), "the noise scale -1 is not a positive number"),
        (&reg, "/architecture/prior_scale", Some(json!(0.0)), "architecture.prior_scale 0 is not a positive number"),
        (&reg, "/settings/temperature", Some(json!(0.0)), "settings.temperature 0 is not a positive number"),
        (&reg, "/settings/temperature", Some(json!(-2.0)), "settings.temperature -2 is not a positive number"),
        (&reg, "/settings/lr_schedule", Some(json!("linear")), "corrupt model header"),
        (&reg, "/classes", Some(json!(["a"])), "a regression model with class names"),
        (&reg, "/method", Some(json!("nuts")), "method nuts with a payload of particles"),
        (&reg, "/method", Some(json!("magic")), "unknown method \"magic\""),
        (&reg, "/payload/dim", Some(json!(9)), "payload.dim is 9 but"),
        (&reg, "/payload/cols", Some(json!(8)), "the payload has 8 values per row, but Normal particles (2d) of a network with d = 8 have 16"),
        (&reg, "/payload/rows", Some(json!(0)), "the payload has no rows"),
        (&reg, "/payload/rows", Some(json!(3)), "truncated"),
        (&reg, "/payload/rows", Some(json!(1)), "bytes follow the 128-byte payload"),
        (&reg, "/payload/rows", Some(json!(usize::MAX)), "the payload size"),
        (&reg, "/payload/guide", None, "particles without a guide"),
        (&reg, "/payload/kind", Some(json!("draws")), "NUTS draws with a guide"),
        (&reg, "/payload/encoding", Some(json!("f32-be")), "unknown payload encoding \"f32-be\""),
        (&cls, "/classes", Some(json!(["a", "b"])), "2 class names (classes) for a network with 3 outputs"),
        (&cls, "/classes", Some(json!(["a", "b", "c", "d"])), "4 class names (classes) for a network with 3 outputs"),
        (&cls, "/classes", Some(json!(["a", "b", "a"])), "the class \"a\" is listed twice"),
        (&cls, "/classes", None, "a classifier without class names"),
        (&cls, "/y_scaler", Some(json!({"mean": [0.0], "std": [1.0]})), "a classifier with a target scaler"),
        (&cls, "/architecture/noise", Some(json!({"Fixed": 1.0})), "a classifier with a noise model"),
        (&cls, "/features", Some(json!(["u", "u"])), "the feature \"u\" is listed twice"),
        (&cls, "/payload/guide", Some(json!({"kind": "normal", "init_scale": 0.1})), "values per row, but Normal particles (2d)"),
    ];
    for (i, ((v, body), path, new, want)) in cases.into_iter().enumerate() {
        let changed = with(v, path, new);
        for checksum in [true, false] {
            let bytes = encode(&changed, body, checksum);
            let e = match ModelFile::from_bytes(&bytes, "m.smi") {
                Ok(_) => panic!("case {i} ({path}) was accepted"),
                Err(e) => e.to_string(),
            };
            assert!(e.contains(want), "case {i} ({path}): {want:?} not in {e:?}");
            assert!(e.starts_with("m.smi"), "case {i}: {e}");
        }
    }
}

/// A header or payload with a non-finite number is refused when saving, naming it.
#[test]
fn non_finite_numbers_are_never_written() {
    let mut m = sample();
    m.header.x_scaler.std[0] = f64::INFINITY;
    let e = m.to_bytes().unwrap_err().to_string();
    assert!(
        e.contains("x_scaler.std holds a value that is not a finite number"),
        "{e}"
    );
    let mut m = sample();
    m.header.training.seconds = f64::NAN;
    let e = m.to_bytes().unwrap_err().to_string();
    assert!(e.contains("training.seconds"), "{e}");
    let mut m = sample();
    m.header.y_scaler = Some(Scaler {
        mean: vec![f64::NAN],
        std: vec![1.0],
    });
    assert!(m
        .to_bytes()
        .unwrap_err()
        .to_string()
        .contains("y_scaler.mean"));
    let mut m = sample();
    m.payload = Matrix::from_fn(2, 16, |i, j| {
        if (i, j) == (1, 4) {
            f64::NEG_INFINITY
        } else {
            0.0
        }
    });
    let e = m.to_bytes().unwrap_err().to_string();
    assert!(
        e.contains("not finite (row 2, column 5 is -inf): the fit diverged"),
        "{e}"
    );
    let mut m = sample();
    m.header.classes = Some(vec!["a".into()]);
    let e = format!("{:#}", m.to_bytes().unwrap_err());
    assert!(
        e.contains("inconsistent") && e.contains("class names"),
        "{e}"
    );
}

/// The proptest configuration: 256 cases unless `PROPTEST_CASES` says otherwise.
pub(crate) fn config() -> ProptestConfig {
    let mut c = ProptestConfig::with_cases(256);
    if let Some(n) = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        c.cases = n;
    }
    c
}
