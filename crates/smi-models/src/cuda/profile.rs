//! Per-phase times of the GPU engine's steps, for finding what sets a step's time: with
//! profiling on, each phase ends with a wait for the GPU, so its time is its own (and the
//! step runs slower than without). Off by default; `smi bench --device cuda --profile` reads it.

use std::time::Instant;

use smi::Result;

use super::context::Gpu;

/// The mean time of one phase of the profiled steps.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseTime {
    /// The phase ("network", "pull-back", "host: kernel weights", …).
    pub name: &'static str,
    /// Mean milliseconds per occurrence.
    pub ms: f64,
    /// Occurrences timed.
    pub count: u64,
}

/// The phase clock of a [`super::CudaStep`].
#[derive(Debug, Default)]
pub(crate) struct Profiler {
    on: bool,
    last: Option<Instant>,
    /// (phase, total seconds, count), in the order first seen.
    phases: Vec<(&'static str, f64, u64)>,
}

impl Profiler {
    /// Switches profiling on (clearing earlier times) or off.
    pub(crate) fn set(&mut self, on: bool) {
        *self = Profiler {
            on,
            ..Profiler::default()
        };
    }

    /// Starts a step's clock after the GPU's queued work.
    ///
    /// # Errors
    /// A failed wait for the GPU.
    pub(crate) fn start(&mut self, gpu: &Gpu) -> Result<()> {
        if self.on {
            gpu.synchronize()?;
            self.last = Some(Instant::now());
        }
        Ok(())
    }

    /// Ends phase `name` once the GPU has finished it; its time runs from the last mark.
    ///
    /// # Errors
    /// A failed wait for the GPU.
    pub(crate) fn phase(&mut self, gpu: &Gpu, name: &'static str) -> Result<()> {
        if !self.on {
            return Ok(());
        }
        gpu.synchronize()?;
        let now = Instant::now();
        if let Some(t) = self.last {
            let dt = now.duration_since(t).as_secs_f64();
            match self.phases.iter_mut().find(|p| p.0 == name) {
                Some(p) => {
                    p.1 += dt;
                    p.2 += 1;
                }
                None => self.phases.push((name, dt, 1)),
            }
        }
        self.last = Some(now);
        Ok(())
    }

    /// The phases timed so far, in the order first seen.
    pub(crate) fn report(&self) -> Vec<PhaseTime> {
        self.phases
            .iter()
            .map(|&(name, total, count)| PhaseTime {
                name,
                ms: 1e3 * total / count.max(1) as f64,
                count,
            })
            .collect()
    }
}
