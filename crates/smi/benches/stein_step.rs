//! Criterion benchmarks of the Stein engine: one SMI step on the variance-collapse target
//! N(0, I₁₀₀) with m = 20 particles and S = 100 draws (shared and per-pair gradients), one SVGD
//! step, the RBF kernel with its attraction on 20 particles of dimension 200, and one SMI step
//! (S = 10) on a small hierarchical target, Neal's funnel with d = 10, at m = 5 and m = 20: the
//! per-step cost should grow about linearly in m; a stall after the matrix products (see
//! `linalg::gemm`) made m = 20 many times slower than 4 × m = 5 on CPUs with AVX-512.
//!
//! `cargo bench -p smi --bench stein_step`

use criterion::{criterion_group, criterion_main, Criterion};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use smi::kernel::KernelSettings;
use smi::testing::{DiagNormal, Funnel};
use smi::{GradientReuse, Layout, Matrix, MethodSettings, SteinSettings};

fn smi_settings(reuse: GradientReuse) -> SteinSettings {
    let mut s = SteinSettings::smi();
    s.num_particles = 20;
    s.num_elbo_particles = 100;
    s.gradient_reuse = reuse;
    s
}

fn stein_step(c: &mut Criterion) {
    let target = DiagNormal::standard(100).unwrap();
    let mut group = c.benchmark_group("stein_step_mvn100_m20");
    for (name, settings) in [
        ("smi_S100_shared", smi_settings(GradientReuse::Shared)),
        ("smi_S100_per_pair", smi_settings(GradientReuse::PerPair)),
        ("svgd", {
            let mut s = SteinSettings::svgd();
            s.num_particles = 20;
            s
        }),
    ] {
        let engine = MethodSettings::Stein(settings).build(&target).unwrap();
        let mut state = engine.init().unwrap();
        group.bench_function(name, |b| {
            b.iter(|| std::hint::black_box(engine.step(&mut state, None).unwrap()))
        });
    }
    group.finish();
}

fn hier_step(c: &mut Criterion) {
    let target = Funnel::new(10).unwrap();
    let mut group = c.benchmark_group("smi_step_funnel10_S10");
    for m in [5, 20] {
        let mut s = SteinSettings::smi();
        s.num_particles = m;
        s.num_elbo_particles = 10;
        let engine = MethodSettings::Stein(s).build(&target).unwrap();
        let mut state = engine.init().unwrap();
        group.bench_function(format!("m{m}"), |b| {
            b.iter(|| std::hint::black_box(engine.step(&mut state, None).unwrap()))
        });
    }
    group.finish();
}

fn kernel(c: &mut Criterion) {
    // a small model, and MNIST's one-layer net with the Normal guide (m = 5, p = 2·79 510)
    for (m, p) in [(20, 200), (5, 159_020)] {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let x = Matrix::from_fn(m, p, |_, _| rng.random_range(-2.0..2.0));
        let g = Matrix::from_fn(m, p, |_, _| rng.random_range(-1.0..1.0));
        let layout = Layout::flat(p);
        let rbf = KernelSettings::default().build().unwrap();
        c.bench_function(&format!("rbf_kernel_m{m}_p{p}"), |b| {
            b.iter(|| {
                let gram = rbf.compute(&x, &layout).unwrap();
                std::hint::black_box(gram.weights.attract(&g))
            })
        });
        let gram = rbf.compute(&x, &layout).unwrap();
        c.bench_function(&format!("rbf_gram_m{m}_p{p}"), |b| {
            b.iter(|| std::hint::black_box(rbf.compute(&x, &layout).unwrap()))
        });
        c.bench_function(&format!("stein_direction_m{m}_p{p}"), |b| {
            b.iter(|| std::hint::black_box(gram.weights.direction(&g, 0.2, &gram.repulsion, 0.2)))
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = stein_step, hier_step, kernel
}
criterion_main!(benches);
