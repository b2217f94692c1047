//! Criterion benchmark of the noise generator, `smi::random::fill_normals`: one row of d
//! standard normals (Philox4x32-10 and the Box–Muller transform in `f32` arithmetic) at d = 750
//! (about the `boston` BNN's dimension, so the end-of-row chunks count) and d = 4096, on one
//! thread; the throughput is in normals per second. `short_rows`: 200 rows of d = 10 (the
//! `hier-10-m20` step's noise) row by row against `fill_normal_rows`, whose short rows share the
//! generator's vector lanes.
//!
//! `cargo bench -p smi --bench normals`

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use smi::random::{fill_normal_rows, fill_normals};

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
    for rows in [200usize, 10] {
        let d = 10usize;
        let mut all = vec![0.0; rows * d];
        let mut group = c.benchmark_group(format!("short_rows_{rows}"));
        group.throughput(Throughput::Elements((rows * d) as u64));
        group.bench_function("row_by_row", |b| {
            b.iter(|| {
                for (r, row) in all.chunks_exact_mut(d).enumerate() {
                    fill_normals(0x5eed, r as u64, row);
                }
                std::hint::black_box(&all);
            })
        });
        group.bench_function("fill_normal_rows", |b| {
            b.iter(|| {
                fill_normal_rows(0x5eed, 0, d, &mut all);
                std::hint::black_box(&all);
            })
        });
        group.finish();
    }
}

criterion_group!(benches, normals);
criterion_main!(benches);
