//! Fuzz harnesses of the model-file reader: arbitrary bytes and mutated headers give an error
//! or a valid model, never a panic.

use super::tests::{classifier, config, encode, exercise, sample, split, with};
use super::*;
use proptest::prelude::*;

/// Leaf paths of the header that a mutation may replace.
const PATHS: [&str; 24] = [
    "/task",
    "/method",
    "/architecture/sizes",
    "/architecture/sizes/0",
    "/architecture/sizes/1",
    "/architecture/activation",
    "/architecture/noise",
    "/architecture/prior_scale",
    "/features",
    "/x_scaler/mean",
    "/x_scaler/std",
    "/x_scaler/std/0",
    "/y_scaler",
    "/classes",
    "/payload/kind",
    "/payload/guide",
    "/payload/rows",
    "/payload/cols",
    "/payload/dim",
    "/payload/encoding",
    "/settings/seed",
    "/training",
    "/validation",
    "/format_version",
];

/// Arbitrary JSON values of the kinds a header holds, small and extreme.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (0u64..40).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop::sample::select(vec![0.0, -1.0, 1e-300, 1e300, f64::MAX, 0.5]).prop_map(Value::from),
        prop::sample::select(vec![
            "a",
            "",
            "smi",
            "nuts",
            "svgd",
            "draws",
            "particles",
            "regression",
            "classification",
            "Tanh",
            "f64-le",
            "crc32:00000000"
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 12, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "mean",
                        "std",
                        "kind",
                        "init_scale",
                        "Fixed",
                        "shape",
                        "rate"
                    ]),
                    inner
                ),
                0..3
            )
            .prop_map(|kv| Value::Object(
                kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
            )),
        ]
    })
}

/// Finite numbers, ordinary and extreme.
fn finite_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        -10.0..10.0f64,
        prop::sample::select(vec![
            0.0,
            -0.0,
            1e-300,
            -1e-300,
            5e-324,
            1e300,
            -1e300,
            f64::MAX,
            f64::MIN,
            700.0,
            -700.0,
        ]),
        any::<f64>().prop_filter("finite", |v| v.is_finite()),
    ]
}
proptest! {
    #![proptest_config(config())]

    /// Arbitrary bytes: an error or a model, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = exercise(&bytes);
        let mut with_magic = b"{\"magic\":\"smi-model\",\"format_version\":1,".to_vec();
        with_magic.extend_from_slice(&bytes);
        let _ = exercise(&with_magic);
    }

    /// A valid file with bytes replaced, cut or inserted: an error or a model that
    /// predicts, never a panic.
    #[test]
    fn mutated_files_never_panic(
        which in any::<bool>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in prop::option::of(any::<prop::sample::Index>()),
        insert in prop::option::of((any::<prop::sample::Index>(), prop::collection::vec(any::<u8>(), 1..8))),
        checksum in any::<bool>(),
    ) {
        let m = if which { sample() } else { classifier() };
        let (v, body) = split(&m.to_bytes().unwrap());
        let mut b = encode(&v, &body, checksum);
        for (i, x) in edits {
            let i = i.index(b.len());
            b[i] = x;
        }
        if let Some((i, ins)) = insert {
            let i = i.index(b.len());
            b.splice(i..i, ins);
        }
        if let Some(c) = cut {
            b.truncate(c.index(b.len() + 1));
        }
        let _ = exercise(&b);
    }

    /// A well-formed header and payload with extreme finite numbers in the scalers, the
    /// prior, the noise and the parameters, re-signed: the model reads, and predicting
    /// with it gives predictions or an error, never a panic.
    #[test]
    fn extreme_values_never_panic(
        which in any::<bool>(),
        values in prop::collection::vec(finite_f64(), 8),
        payload in prop::collection::vec((any::<prop::sample::Index>(), finite_f64()), 0..6),
        y_scaled in any::<bool>(),
    ) {
        let mut m = if which { sample() } else { classifier() };
        let h = &mut m.header;
        h.x_scaler.mean[0] = values[0];
        h.x_scaler.std[0] = values[1].abs().max(f64::MIN_POSITIVE);
        h.architecture.prior_scale = values[2].abs().max(f64::MIN_POSITIVE);
        if h.task == Task::Regression {
            h.architecture.noise = Some(Noise::GammaPrecision {
                shape: values[3].abs().max(1e-300),
                rate: values[4].abs().max(1e-300),
            });
            if y_scaled {
                h.y_scaler = Some(Scaler {
                    mean: vec![values[5]],
                    std: vec![values[6].abs().max(f64::MIN_POSITIVE)],
                });
            }
        }
        let mut p = m.payload.as_slice().to_vec();
        for (i, v) in payload {
            let i = i.index(p.len());
            p[i] = v;
        }
        m.payload = Matrix::from_vec(m.payload.rows(), m.payload.cols(), p).unwrap();
        let bytes = m.to_bytes().expect("finite values save");
        prop_assert!(ModelFile::from_bytes(&bytes, "m").is_ok());
        let _ = exercise(&bytes);
    }

    /// A header with fields replaced by arbitrary JSON, re-signed with a valid checksum
    /// (so that the validation, not the checksum, has to catch it), or without one: an
    /// error or a model that predicts, never a panic.
    #[test]
    fn mutated_headers_never_panic(
        which in any::<bool>(),
        changes in prop::collection::vec((prop::sample::select(PATHS.to_vec()), prop::option::of(json_value())), 1..4),
        checksum in any::<bool>(),
    ) {
        let m = if which { sample() } else { classifier() };
        let (mut v, body) = split(&m.to_bytes().unwrap());
        for (path, new) in changes {
            if let Some((parent, _)) = path.rsplit_once('/') {
                if matches!(v.pointer(parent), Some(Value::Object(_)))
                    || matches!(v.pointer(parent), Some(Value::Array(a)) if path.rsplit('/').next().and_then(|k| k.parse::<usize>().ok()).is_some_and(|k| k < a.len()))
                {
                    v = with(&v, path, new);
                }
            }
        }
        let _ = exercise(&encode(&v, &body, checksum));
    }
}
