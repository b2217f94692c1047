//! The SMI step with the Normal guide takes its draws in cache-sized sub-blocks (the fused
//! step) unless the model asks for one call per step (`LogDensity::one_call_per_step`). Both
//! paths compute every value with the same operations, so they give the same particles bit
//! for bit; and a model that asks for one call gets exactly one call per step.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use common::run_steps;
use smi::{Batch, FnDensity, LogDensity, Result, SteinSettings, SteinVi};

/// A model that counts its calls and answers `one_call_per_step` as told.
struct Counting<M> {
    inner: M,
    one_call: bool,
    calls: AtomicUsize,
}

impl<M: LogDensity> LogDensity for Counting<M> {
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn log_density_and_grad(
        &self,
        theta: &[f64],
        batch: &Batch,
        logp: &mut [f64],
        grad: &mut [f64],
    ) -> Result<()> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.log_density_and_grad(theta, batch, logp, grad)
    }
    fn one_call_per_step(&self) -> bool {
        self.one_call
    }
}

/// log N(x; 1, 2²) summed over the coordinates, and its gradient in `g`.
fn log_normal(x: &[f64], g: &mut [f64]) -> f64 {
    let mut lp = 0.0;
    for (g, x) in g.iter_mut().zip(x) {
        *g = -(x - 1.0) / 4.0;
        lp -= (x - 1.0) * (x - 1.0) / 8.0;
    }
    lp
}

type Gaussian = Counting<FnDensity<fn(&[f64], &mut [f64]) -> f64>>;

/// N(1, 2²) in every coordinate.
fn gaussian(dim: usize, one_call: bool) -> Gaussian {
    Counting {
        inner: FnDensity::new(dim, log_normal as fn(&[f64], &mut [f64]) -> f64),
        one_call,
        calls: AtomicUsize::new(0),
    }
}

fn settings() -> SteinSettings {
    SteinSettings {
        num_particles: 3,
        num_elbo_particles: 8,
        seed: 7,
        ..SteinSettings::smi()
    }
}

#[test]
fn fused_and_one_call_steps_give_the_same_particles_bit_for_bit() {
    // d = 20 000: a sub-block of the fused step is 2 of a particle's 8 draws (1 MiB of ε, θ
    // and two gradients holds fewer than two rows), so each particle's block is split in four
    // and the sub-block path is exercised, not only the one-sub-block case.
    let steps = 5;
    let fused = gaussian(20_000, false);
    let whole = gaussian(20_000, true);
    let a = run_steps(&SteinVi::new(&fused, settings()).unwrap(), steps);
    let b = run_steps(&SteinVi::new(&whole, settings()).unwrap(), steps);
    // the ρ half of the particles too: a pull-back that dropped ∂/∂ρ (a bug once) differs there
    assert_eq!(a.state.particles, b.state.particles);
    assert_eq!(a.losses, b.losses);
    // the fused path called the model once per sub-block; the other once per step
    assert_eq!(whole.calls.load(Ordering::Relaxed), steps as usize);
    assert!(fused.calls.load(Ordering::Relaxed) > steps as usize);
}

#[test]
fn chunked_draws_give_the_same_particles_fused_or_in_one_call() {
    // S = 19: the draws of a particle are summed in chunks of 8, 8 and 3 (partial ĝ added in
    // chunk order), each chunk in sub-blocks of 2 or 3 rows at d = 20 000; the one-call path sums
    // its columns in the same chunks
    let steps = 3;
    let s = SteinSettings {
        num_elbo_particles: 19,
        ..settings()
    };
    let fused = gaussian(20_000, false);
    let whole = gaussian(20_000, true);
    let a = run_steps(&SteinVi::new(&fused, s.clone()).unwrap(), steps);
    let b = run_steps(&SteinVi::new(&whole, s).unwrap(), steps);
    assert_eq!(a.state.particles, b.state.particles);
    assert_eq!(a.losses, b.losses);
}

#[test]
fn one_and_two_threads_give_the_same_particles_bit_for_bit() {
    // m = 5 particles of S = 20 draws at d = 3 000: 10 parallel chunks of 10 draws; the chunks
    // and the order of their sums do not depend on the threads, nor does the noise (one stream
    // per draw)
    let s = SteinSettings {
        num_particles: 5,
        num_elbo_particles: 20,
        ..settings()
    };
    let on = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let model = gaussian(3_000, false);
        pool.install(|| run_steps(&SteinVi::new(&model, s.clone()).unwrap(), 4))
    };
    let (one, two) = (on(1), on(2));
    assert_eq!(one.state.particles, two.state.particles);
    assert_eq!(one.losses, two.losses);
}

#[test]
fn short_rows_give_the_same_particles_fused_or_in_one_call() {
    // d = 10 and d = 46 (the wave network of the low size), with K·d above the unfused steps'
    // 16 384 values: the fused step draws each chunk's short rows (below 32 normals, sharing
    // the generator's lanes) where it uses them, the unfused one all rows at once, and the
    // mixture sums are faer's products (d below the blocked kernel's 1 024)
    for (d, s) in [(10, 400), (46, 80)] {
        let s = SteinSettings {
            num_particles: 5,
            num_elbo_particles: s,
            ..settings()
        };
        let fused = gaussian(d, false);
        let whole = gaussian(d, true);
        let a = run_steps(&SteinVi::new(&fused, s.clone()).unwrap(), 4);
        let b = run_steps(&SteinVi::new(&whole, s).unwrap(), 4);
        assert_eq!(a.state.particles, b.state.particles, "d = {d}");
        assert_eq!(a.losses, b.losses, "d = {d}");
        assert!(
            fused.calls.load(Ordering::Relaxed) > 4,
            "d = {d}: not fused"
        );
    }
}

#[test]
fn small_steps_take_one_model_call() {
    // K·d = 5·10·10 = 500, below 16 384 values: one model call per step (the fused and unfused
    // steps give the same bits: the tests above)
    let s = SteinSettings {
        num_particles: 5,
        num_elbo_particles: 10,
        ..settings()
    };
    let model = gaussian(10, false);
    run_steps(&SteinVi::new(&model, s).unwrap(), 3);
    assert_eq!(model.calls.load(Ordering::Relaxed), 3);
}
