//! Benchmarks of the built-in BNN models: one batched `log_density_and_grad` call.
//!
//! Sizes are in the benchmark ids (network widths, K draws, b rows per draw); data and θ come
//! from a constant seed and are built outside the timed closure.

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use smi::{Batch, Batcher, LogDensity, Matrix};
use smi_models::{Activation, BnnClassifier, BnnRegression, Mlp, Noise};

fn theta(rng: &mut ChaCha8Rng, k: usize, d: usize, r: f64) -> Vec<f64> {
    (0..k * d).map(|_| rng.random_range(-r..r)).collect()
}

fn time(
    c: &mut BenchmarkGroup<'_, WallTime>,
    id: BenchmarkId,
    model: &dyn LogDensity,
    th: &[f64],
    batch: &Batch,
) {
    let d = model.dim();
    let k = th.len() / d;
    let (mut lp, mut g) = (vec![0.0; k], vec![0.0; k * d]);
    c.bench_function(id, |b| {
        b.iter(|| {
            model
                .log_density_and_grad(th, batch, &mut lp, &mut g)
                .unwrap();
            std::hint::black_box(&lp);
        })
    });
}

fn models(cr: &mut Criterion) {
    let mut group = cr.benchmark_group("log_density_and_grad");
    let c = &mut group;
    let mut rng = ChaCha8Rng::seed_from_u64(42);

    // UCI (docs/algorithms.md §7.3): Boston-sized data, 13 → 50 → 50 → 1 relu, per-draw batches of 100.
    let n = 455;
    let x = Matrix::from_fn(n, 13, |_, _| rng.random_range(-2.0..2.0));
    let y: Vec<f64> = (0..n).map(|_| rng.random_range(5.0..50.0)).collect();
    let k = 500;
    let batch = Batcher::new(n, Some(100)).draw(&mut rng, k);
    let uci = BnnRegression::uci(x.clone(), y.clone()).unwrap();
    let th = theta(&mut rng, k, uci.dim(), 0.1);
    time(
        c,
        BenchmarkId::new("uci_13-50-50-1_relu", "K500_b100"),
        &uci,
        &th,
        &batch,
    );
    // The prototype's one-hidden-layer network, for comparison.
    let mlp = Mlp::new(&[13, 50, 1], Activation::Relu).unwrap();
    let uci1 = BnnRegression::new(mlp, x, y, Noise::uci()).unwrap();
    let th = theta(&mut rng, k, uci1.dim(), 0.1);
    time(
        c,
        BenchmarkId::new("uci_13-50-1_relu", "K500_b100"),
        &uci1,
        &th,
        &batch,
    );

    // Wave (docs/algorithms.md §7.2): 1 → 100 → 100 → 1 tanh, full batch of 40 points.
    let x = Matrix::from_fn(40, 1, |i, _| -1.5 + 3.2 * i as f64 / 40.0);
    let y: Vec<f64> = (0..40).map(|i| (x.get(i, 0) * 6.0).sin()).collect();
    let wave = BnnRegression::wave(x, y, 100).unwrap();
    let th = theta(&mut rng, k, wave.dim(), 0.1);
    time(
        c,
        BenchmarkId::new("wave_1-100-100-1_tanh", "K500_n40"),
        &wave,
        &th,
        &Batch::full(),
    );

    // MNIST (docs/algorithms.md §7.4): 784 → 100 → 10 tanh, a shared batch of 128 rows.
    let n = 1024;
    let x = Matrix::from_fn(n, 784, |_, _| rng.random_range(0.0..1.0));
    let labels: Vec<usize> = (0..n).map(|_| rng.random_range(0..10)).collect();
    let mnist = BnnClassifier::mnist(x, labels, 1).unwrap();
    let k = 50;
    let th = theta(&mut rng, k, mnist.dim(), 0.05);
    let rows = rand::seq::index::sample(&mut rng, n, 128).into_vec();
    let batch = Batch::shared(rows, 60_000);
    time(
        c,
        BenchmarkId::new("mnist_784-100-10_tanh", "K50_b128"),
        &mnist,
        &th,
        &batch,
    );

    // An iris-sized classifier (`smi fit --hidden 20 --elbo-draws 10`, m = 5: K = 50 draws on
    // the 120 training rows) with 2 and 3 classes: the output layer and the softmax are then a
    // large share of the step, so the two should differ by little more than the extra class.
    let n = 120;
    let x = Matrix::from_fn(n, 4, |_, _| rng.random_range(-2.0..2.0));
    for classes in [2, 3] {
        let labels: Vec<usize> = (0..n).map(|_| rng.random_range(0..classes)).collect();
        let mlp = Mlp::new(&[4, 20, classes], Activation::Tanh).unwrap();
        let model = BnnClassifier::new(mlp, x.clone(), labels).unwrap();
        let th = theta(&mut rng, 50, model.dim(), 0.5);
        time(
            c,
            BenchmarkId::new(format!("iris_4-20-{classes}_tanh"), "K50_n120"),
            &model,
            &th,
            &Batch::full(),
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = models
}
criterion_main!(benches);
