//! Set-up shared by the integration tests of `smi`: running an engine from a fresh state, and
//! the one-particle SMI settings several tests start from.
#![allow(dead_code)]

use smi::{
    run, Engine, Mixture, NoObserver, OptimizerSettings, RunResult, RunSettings, State,
    SteinSettings,
};

/// Runs `engine` from `state` until step `steps` (no observer, no checkpoint); panics on error.
pub fn run_from<E: Engine + ?Sized>(engine: &E, state: State, steps: u64) -> RunResult {
    run(engine, state, &RunSettings::steps(steps), &mut NoObserver).unwrap()
}

/// Runs `engine` for `steps` steps from a fresh `engine.init()`; panics on error.
pub fn run_steps<E: Engine + ?Sized>(engine: &E, steps: u64) -> RunResult {
    run_from(engine, engine.init().unwrap(), steps)
}

/// The approximate posterior of `engine` after [`run_steps`]`(engine, steps)`.
pub fn posterior_after<E: Engine + ?Sized>(engine: &E, steps: u64) -> Mixture {
    engine.posterior(&run_steps(engine, steps).state)
}

/// SMI with one particle and S = 100 ELBO draws, Adam at learning rate `lr`, seeded by `seed`
/// (the other settings are `SteinSettings::smi()`'s).
pub fn smi_one_particle(lr: f64, seed: u64) -> SteinSettings {
    SteinSettings {
        num_particles: 1,
        num_elbo_particles: 100,
        optimizer: OptimizerSettings::adam(lr),
        seed,
        ..SteinSettings::smi()
    }
}
