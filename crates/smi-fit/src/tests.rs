//! Tests of the fitting pipeline: task guessing, writability, stopping and resuming, and fuzz
//! harnesses of the CSV reader.

use super::csv_input::read_from;
use super::source::read_data;
use super::*;
use proptest::prelude::*;

fn table(text: &str) -> Table {
    read_from(text.as_bytes(), "t.csv").unwrap()
}

/// `rows` rows of `x,y` with y = 2x, and `bad` put into the target of the rows listed.
fn numeric(rows: usize, bad: &[(usize, &str)]) -> String {
    let mut s = String::from("x,y\n");
    for r in 0..rows {
        let y = bad
            .iter()
            .find(|b| b.0 == r)
            .map_or_else(|| (2 * r).to_string(), |b| b.1.to_string());
        s.push_str(&format!("{r},{y}\n"));
    }
    s
}

/// One `NA` in a numeric target is a regression target with a bad cell, not a classifier
/// with a class per value.
#[test]
fn a_bad_cell_in_a_numeric_target_is_an_error_not_classes() {
    let t = table(&numeric(30, &[(7, "NA")]));
    let e = read_data(&t, "y", None, None, false)
        .err()
        .unwrap()
        .to_string();
    for want in [
        "t.csv: the regression target \"y\" needs a number in every row",
        "1 of its 30 cells is not a finite number: line 9 (data row 8) \"NA\"",
        "--drop-missing drops those rows",
        "--task classification",
    ] {
        assert!(e.contains(want), "{want:?} not in {e}");
    }
    let d = read_data(&t, "y", None, None, true).unwrap();
    assert_eq!(
        (d.task, d.rows(), d.dropped.clone()),
        (Task::Regression, 29, vec![9])
    );
    assert_eq!(d.x.len(), 29);
    // --task regression on a column that is mostly text lists the first few bad cells.
    let bad: Vec<(usize, &str)> = (0..20).map(|r| (r, "n/a")).collect();
    let t = table(&numeric(30, &bad));
    assert!(read_data(&t, "y", None, None, false).unwrap().task == Task::Classification);
    let e = read_data(&t, "y", None, Some(Task::Regression), false)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("20 of its 30 cells are not finite numbers"),
        "{e}"
    );
    assert!(
        e.contains("and 15 more") && !e.contains("--task classification"),
        "{e}"
    );
    // Empty, NaN and infinite targets are bad cells too.
    let t = table(&numeric(30, &[(1, ""), (2, "NaN"), (3, "-inf")]));
    let e = read_data(&t, "y", None, None, false)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("3 of its 30 cells"), "{e}");
    assert_eq!(read_data(&t, "y", None, None, true).unwrap().rows(), 27);
    // Every row dropped.
    let t = table("x,y\nNA,1\n");
    let e = read_data(&t, "y", None, None, true)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("nothing is left"), "{e}");
    // A missing feature cell suggests --drop-missing, which drops the row.
    let t = table("x,y\n1,2\n,4\n5,6\n");
    let e = read_data(&t, "y", None, None, false)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("line 3") && e.contains("--drop-missing"), "{e}");
    assert_eq!(read_data(&t, "y", None, None, true).unwrap().y, [2.0, 6.0]);
}

/// Integer targets with few distinct values are neither guessed a regression nor classes: the
/// error asks for `--task`, which decides.
#[test]
fn task_overrides_the_guess() {
    let t = table("x,y\n1,0\n2,1\n3,2\n4,1\n5,10\n6,0\n7,2\n8,1\n");
    let e = read_data(&t, "y", None, None, false)
        .err()
        .unwrap()
        .to_string();
    for want in [
        "t.csv: the target \"y\" holds only the whole numbers 0, 1, 2, 10",
        "4 distinct values in 8 rows",
        "--task classification",
        "--task regression",
    ] {
        assert!(e.contains(want), "{want:?} not in {e}");
    }
    let d = read_data(&t, "y", None, Some(Task::Regression), false).unwrap();
    assert_eq!((d.task, d.classes.is_none()), (Task::Regression, true));
    let d = read_data(&t, "y", None, Some(Task::Classification), false).unwrap();
    assert_eq!(d.task, Task::Classification);
    assert_eq!(d.classes.unwrap(), ["0", "1", "2", "10"]);
    assert_eq!(d.y, [0.0, 1.0, 2.0, 1.0, 3.0, 0.0, 2.0, 1.0]);
    // Not labels: a fraction, more than MAX_LABEL_VALUES values, or nearly one row per value.
    for text in [
        "x,y\n1,0\n2,1\n3,0.5\n4,1\n",
        "x,y\n1,0\n2,1\n3,2\n",
        &numeric(30, &[]),
    ] {
        let d = read_data(&table(text), "y", None, None, false).unwrap();
        assert_eq!(d.task, Task::Regression, "{text}");
    }
    let many: String = (0..40).fold("x,y\n".into(), |s, r| s + &format!("{r},{}\n", r % 11));
    assert_eq!(
        read_data(&table(&many), "y", None, None, false)
            .unwrap()
            .task,
        Task::Regression
    );
    // Text labels are classes.
    let t = table("x,y\n1,a\n2,b\n3,a\n");
    let d = read_data(&t, "y", None, None, false).unwrap();
    assert_eq!(d.classes.unwrap(), ["a", "b"]);
    // An empty class label is dropped by --drop-missing.
    let t = table("x,y\n1,a\n2,\n3,b\n");
    assert!(read_data(&t, "y", None, None, false).is_err());
    assert_eq!(read_data(&t, "y", None, None, true).unwrap().rows(), 2);
}

#[test]
fn feature_lists_with_empty_entries_are_errors() {
    let t = table("a,b,y\n1,2,3\n4,5,6\n");
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let e = read_data(&t, "y", Some(&names(&["a", "", "b"])), None, false)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("--features: name 2 is empty"), "{e}");
    let d = read_data(&t, "y", Some(&names(&["b", "a", "b"])), None, false).unwrap();
    assert_eq!(d.features, ["b", "a"]);
}

/// A missing or unwritable folder is refused before any work.
#[test]
fn writability_is_checked_up_front() {
    let dir = tempfile::tempdir().unwrap();
    check_writable(&dir.path().join("m.smi"), "--save").unwrap();
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "probe left behind"
    );
    let e = check_writable(&dir.path().join("nope/m.smi"), "--save")
        .unwrap_err()
        .to_string();
    assert!(e.contains("--save") && e.contains("does not exist"), "{e}");
    let e = check_writable(dir.path(), "--out").unwrap_err().to_string();
    assert!(e.contains("is a folder"), "{e}");
    // /proc refuses new files even to root.
    let e = check_writable(Path::new("/proc/m.smi"), "--save")
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot write into /proc"), "{e}");
}

/// CSV-like text: cells, separators, quotes and line breaks in any order.
fn csv_text() -> impl Strategy<Value = String> {
    let tokens = vec![
        "a", "y", "x", "1", "2.5", "-3e2", "0", "NaN", "inf", "NA", "", " ", ",", ",", ",", "\n",
        "\n", "\r\n", "\"", "\"\"", "1e308", "-1e300", "label", "é",
    ];
    prop::collection::vec(prop::sample::select(tokens), 0..80).prop_map(|v| v.concat())
}

/// A well-formed CSV with numeric and text columns, then edited at a few places.
fn edited_csv() -> impl Strategy<Value = String> {
    (
        1usize..25,
        prop::collection::vec(
            (
                any::<prop::sample::Index>(),
                prop::sample::select(vec!["\"", ",", "\n", "", "NA", "x"]),
            ),
            0..4,
        ),
    )
        .prop_map(|(rows, edits)| {
            let mut s = String::from("x1,x2,y,label\n");
            for r in 0..rows {
                s.push_str(&format!(
                    "{},{},{},{}\n",
                    r,
                    r * r,
                    r as f64 * 0.5,
                    ["a", "b", "c"][r % 3]
                ));
            }
            let mut b = s.into_bytes();
            for (i, e) in edits {
                let i = i.index(b.len());
                b.splice(i..i, e.bytes());
            }
            String::from_utf8(b).unwrap_or_default()
        })
}

/// Everything `smi fit` and `smi predict` do with a table, for every column as the target:
/// errors are fine, panics are not, and a result is consistent.
fn exercise(bytes: &[u8]) {
    let Ok(t) = read_from(bytes, "p.csv") else {
        return;
    };
    for (c, name) in t.headers.iter().enumerate() {
        let _ = (t.looks_numeric(c), t.non_numbers(c), t.labels(c));
        for task in [None, Some(Task::Regression), Some(Task::Classification)] {
            for drop in [false, true] {
                let Ok(d) = read_data(&t, name, None, task, drop) else {
                    continue;
                };
                assert_eq!(d.x.len(), d.rows() * d.features.len());
                assert_eq!(d.rows() + d.dropped.len(), t.len());
                assert!(d.x.iter().all(|v| v.is_finite()));
                match (&d.classes, d.task) {
                    (None, Task::Regression) => assert!(d.y.iter().all(|v| v.is_finite())),
                    (Some(k), Task::Classification) => {
                        assert!(k.len() >= 2);
                        assert!(d.y.iter().all(|&v| (v as usize) < k.len()));
                    }
                    other => panic!("inconsistent {other:?}"),
                }
                if let Ok(s) = Scaler::fit(&d.x, d.rows(), d.features.len()) {
                    let mut x = d.x.clone();
                    let _ = s.apply(&mut x);
                }
            }
        }
        // Prediction: this column as the model's only feature.
        let mut m = super::model_file::tests::sample();
        m.header.features = vec![name.clone()];
        let _ = predict_csv::features(&m.header, &t);
    }
}

proptest! {
    #![proptest_config(super::model_file::tests::config())]

    /// Arbitrary bytes never panic the reader.
    #[test]
    fn arbitrary_csv_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        exercise(&bytes);
    }

    /// CSV-like text (quotes, blank cells, ragged rows, line breaks) never panics.
    #[test]
    fn csv_like_text_never_panics(text in csv_text()) {
        exercise(text.as_bytes());
    }

    /// A valid CSV with stray quotes, commas, line breaks and bad cells never panics.
    #[test]
    fn edited_csv_never_panics(text in edited_csv()) {
        exercise(text.as_bytes());
    }
}

/// A 1 → 3 → 1 regression network on 20 rows, and its settings with `steps` steps.
pub(crate) fn tiny_fit(steps: u64) -> (BnnRegression, Protocol) {
    let x = Matrix::from_fn(20, 1, |i, _| i as f64 / 10.0 - 1.0);
    let y = (0..20).map(|i| (i as f64 / 5.0).sin()).collect();
    let mlp = Mlp::new(&[1, 3, 1], Activation::Relu).unwrap();
    let model = BnnRegression::new(mlp, x, y, Noise::uci()).unwrap();
    let s = Protocol {
        max_steps: steps,
        num_particles: 2,
        elbo_draws: 2,
        batch_size: Some(8),
        init_radius: 0.1,
        early_stopping: false,
        nuts: NutsSettings::default(),
        attraction: Default::default(),
        defect: None,
        guide: None,
        loss_temperature: 1.0,
        kernel: None,
        scale_lr_factor: 1.0,
    };
    (model, s)
}

/// Training stopped by its observer on a signal or a deadline, and resumed, takes exactly the
/// steps of one uninterrupted run (equality: the same arithmetic in the same order).
#[test]
fn stops_and_resumes_leave_the_fit_unchanged() {
    use train::{train, Limits, Recipe};
    let (model, s) = tiny_fit(12);
    let lr = Some(5e-3);
    let whole = protocol::fit(Method::Smi, lr, &model, &s, 1, &mut smi::NoObserver)
        .unwrap()
        .state
        .unwrap();
    let never = interrupt::Interrupt::never();
    let limits = |interrupt, deadline, resume| Limits {
        deadline,
        interrupt,
        checkpoint: None,
        resume,
    };
    let recipe = |protocol| Recipe {
        method: Method::Smi,
        lr,
        protocol,
        seed: 1,
        schedule: LrScheduleKind::Constant,
    };
    let run = |l| train(&recipe(&s), &model, l, &mut smi::NoObserver).unwrap();
    let t = run(limits(&never, None, None));
    assert_eq!(t.stop, Stop::Finished);
    assert_eq!(t.fit.state.unwrap().particles, whole.particles);
    let raised = interrupt::Interrupt::never();
    raised.raise();
    let cut = run(limits(&raised, None, None));
    assert_eq!((cut.stop, cut.fit.steps), (Stop::Interrupted, 1));
    let late = run(limits(&never, Some(std::time::Instant::now()), None));
    assert_eq!((late.stop, late.fit.steps), (Stop::TimeLimit, 1));
    let rest = run(limits(&never, None, cut.fit.state));
    assert_eq!((rest.stop, rest.fit.steps), (Stop::Finished, 12));
    assert_eq!(rest.fit.state.unwrap().particles, whole.particles);
    // A state of another configuration is refused.
    let (_, other) = tiny_fit(12);
    let other = Protocol {
        num_particles: 3,
        ..other
    };
    let foreign = train(
        &recipe(&other),
        &model,
        limits(&never, None, None),
        &mut smi::NoObserver,
    )
    .unwrap()
    .fit
    .state;
    let e = train(
        &recipe(&s),
        &model,
        limits(&never, None, foreign),
        &mut smi::NoObserver,
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("other settings"), "{e}");
}
