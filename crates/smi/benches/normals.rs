//! Criterion benchmark of the noise generator, `smi::random::fill_normals`: one row of d
//! standard normals (Philox4x32-10 and the Box–Muller transform in `f32` arithmetic) at d = 750
//! (about the `boston` BNN's dimension, so the end-of-row chunks count) and d = 4096, on one
//! thread; the throughput is in normals per second.
//!
//! `cargo bench -p smi --bench normals`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use smi::random::fill_normals;

fn normals(c: &mut Criterion) {
    let mut group = c.benchmark_group("fill_normals");
    for d in [750usize, 4096] {
        let mut row = vec![0.0; d];
        let mut k = 0u64;
        group.throughput(Throughput::Elements(d as u64));
        group.bench_with_input(BenchmarkId::from_parameter(d), &d, |b, _| {
            b.iter(|| {
                k += 1;
                fill_normals(0x5eed, k, &mut row);
                std::hint::black_box(&row);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, normals);
criterion_main!(benches);
