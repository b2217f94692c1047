//! Cost of one gradient of eight schools (d = 10): the hand-written gradient against this
//! crate's adapter, both through `LogDensity::log_density_and_grad` (what every engine calls),
//! for K = 1 and K = 100 draws per call (the K in the benchmark id).
//!
//! ```text
//! cargo bench -p smi-ad --bench gradient
//! ```

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use smi::{Batch, LogDensity};
use smi_ad::testing::EightSchools;
use smi_ad::Ad;

/// K draws spread over a box around the posterior bulk (fixed, no RNG needed).
fn draws(k: usize, d: usize) -> Vec<f64> {
    (0..k * d).map(|i| (i as f64 * 0.37).sin() * 2.0).collect()
}

fn gradient(cr: &mut Criterion) {
    let mut group = cr.benchmark_group("eight_schools_gradient");
    let ad = Ad::new(EightSchools::new());
    let hand = ad.model().hand_written();
    let models: [(&str, &dyn LogDensity); 2] = [("hand_written", &hand), ("smi_ad", &ad)];
    let batch = Batch::full();
    for k in [1, 100] {
        let theta = draws(k, 10);
        let (mut lp, mut g) = (vec![0.0; k], vec![0.0; k * 10]);
        for (name, model) in models {
            group.bench_function(BenchmarkId::new(name, k), |b| {
                b.iter(|| {
                    model
                        .log_density_and_grad(&theta, &batch, &mut lp, &mut g)
                        .unwrap();
                    std::hint::black_box(&g);
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, gradient);
criterion_main!(benches);
