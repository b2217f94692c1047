//! Helpers of the `smi fit` / `smi predict` tests: argument lists, generated CSVs, reading outputs.

use std::path::{Path, PathBuf};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::{args_with, p, smi_ok, stderr};

/// The arguments of `smi fit --csv <csv> <opts> --save <model>` (`opts` as on a command line).
pub fn fit_args<'a>(csv: &'a Path, model: &'a Path, opts: &'a str) -> Vec<&'a str> {
    let mut args = args_with(&["fit", "--csv", p(csv)], opts);
    args.extend(["--save", p(model)]);
    args
}

/// The arguments of `smi predict --model <model> --csv <csv> --out <out> <opts>`, and
/// `--metrics <path>` when `metrics` is given.
pub fn predict_args<'a>(
    model: &'a Path,
    csv: &'a Path,
    out: &'a Path,
    metrics: Option<&'a Path>,
    opts: &'a str,
) -> Vec<&'a str> {
    let base = [
        "predict",
        "--model",
        p(model),
        "--csv",
        p(csv),
        "--out",
        p(out),
    ];
    let mut args = args_with(&base, opts);
    if let Some(m) = metrics {
        args.extend(["--metrics", p(m)]);
    }
    args
}

/// Runs `smi` with `args` and requires success; returns stderr.
pub fn ok(args: &[&str]) -> String {
    stderr(&smi_ok(args))
}

/// The JSON file at `path`.
pub fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_path(path).expect("open csv");
    let head = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r
        .records()
        .map(|x| x.unwrap().iter().map(String::from).collect())
        .collect();
    (head, rows)
}

pub fn std_normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Synthetic regression: x1 ~ U(−3, 3), x2 ~ U(−1, 1), y = sin(x1) + 0.5·x2 + ε,
/// ε ~ N(0, σ²). Values with `digits` decimals (`None`: full precision).
pub fn regression_csv(n: usize, sigma: f64, seed: u64, digits: Option<usize>) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let f = |v: f64| match digits {
        Some(d) => format!("{v:.d$}"),
        None => v.to_string(),
    };
    let mut s = String::from("x1,x2,y\n");
    for _ in 0..n {
        let x1 = rng.random_range(-3.0..3.0);
        let x2 = rng.random_range(-1.0..1.0);
        let y = f64::sin(x1) + 0.5 * x2 + sigma * std_normal(&mut rng);
        s.push_str(&format!("{},{},{}\n", f(x1), f(x2), f(y)));
    }
    s
}

/// Synthetic classification: three Gaussian blobs (sd 0.8) in 2-D, labelled by name.
pub fn classification_csv(n: usize, seed: u64) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let centres = [
        ("circle", -2.0, 0.0),
        ("square", 2.0, 0.0),
        ("triangle", 0.0, 2.5),
    ];
    let mut s = String::from("width,height,shape\n");
    for _ in 0..n {
        let (name, cx, cy) = centres[rng.random_range(0..3)];
        let a = cx + 0.8 * std_normal(&mut rng);
        let b = cy + 0.8 * std_normal(&mut rng);
        s.push_str(&format!("{a:.4},{b:.4},{name}\n"));
    }
    s
}

/// Writes `train.csv` and `test.csv` into `dir`: [`regression_csv`] with `rows[0]` and `rows[1]`
/// rows, noise sd `sigma`, seeds `seeds[0]` and `seeds[1]`, and `digits`; returns their paths.
pub fn regression_files(
    dir: &Path,
    rows: [usize; 2],
    sigma: f64,
    seeds: [u64; 2],
    digits: Option<usize>,
) -> (PathBuf, PathBuf) {
    let [train, test] = [("train.csv", 0), ("test.csv", 1)].map(|(name, i)| {
        let path = dir.join(name);
        std::fs::write(&path, regression_csv(rows[i], sigma, seeds[i], digits)).unwrap();
        path
    });
    (train, test)
}

/// The example files shipped in `examples/data/` (name, contents).
pub fn examples() -> Vec<(&'static str, String)> {
    vec![
        ("regression_train.csv", regression_csv(300, 0.2, 1, Some(4))),
        ("regression_test.csv", regression_csv(100, 0.2, 2, Some(4))),
        ("classification_train.csv", classification_csv(300, 3)),
        ("classification_test.csv", classification_csv(100, 4)),
    ]
}
