//! `CudaSteinVi`: the SMI engine with its ELBO gradients on the GPU ([`CudaStep`]) and, for the
//! RBF kernel in norm mode (the default), the Stein update too: the particles and the
//! optimizer's buffers stay on the device between steps (`resident.rs`) and come to the host
//! at [`Engine::sync`]. Other kernels run the kernel, force and optimizer on the host, over the
//! core's public pieces.
//!
//! States, checkpoints, posteriors and fingerprints are those of the CPU [`SteinVi`] with the
//! same settings (this engine delegates them), so a run started on the GPU resumes on the CPU
//! and back. The random streams differ: each step takes two `u64` seeds from the state's RNG
//! for the device's noise and rows, where the CPU engine draws ε and the rows from it directly.

use std::sync::Mutex;

use smi::kernel::{BandwidthFactor, Kernel, KernelSettings};
use smi::rand::Rng;
use smi::{
    AttractionNorm, Engine, Error, GradientReuse, GuideSettings, Layout, LogDensity, Mixture,
    Result, State, SteinSettings, SteinVi, StepInfo,
};

use super::error::CudaError;
use super::resident::{rbf_coefficients, Mark, OptimizerCall, MAX_RESIDENT_PARTICLES};
use super::step::{CudaStep, StepOutput, StepRows};
use crate::{BnnClassifier, BnnRegression};

/// The SMI engine of [`SteinSettings`] with the model work on a GPU; see the module
/// documentation. Supports the Normal guide, shared gradients, no shared parameters and every
/// learning-rate schedule.
pub struct CudaSteinVi<'a> {
    cpu: SteinVi<'a, dyn LogDensity + 'a>,
    step: Mutex<CudaStep>,
    kernel: Box<dyn Kernel>,
    layout: Layout,
    settings: SteinSettings,
    num_data: usize,
    /// The RBF bandwidth factor when the Stein update runs on the device (`None`: on the host).
    resident: Option<BandwidthFactor>,
}

impl<'a> CudaSteinVi<'a> {
    /// The engine for the regression network `model` on device `ordinal`.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] as [`SteinVi::new`]; [`CudaError::Unsupported`] for settings
    /// without a device path; the errors of [`CudaStep::regression`] (no driver, no device).
    pub fn regression(
        model: &'a BnnRegression,
        settings: SteinSettings,
        ordinal: usize,
    ) -> Result<Self> {
        let (cpu, kernel, layout) = Self::host_side(model, &settings)?;
        let step = CudaStep::regression(ordinal, model)?;
        Ok(Self::with(cpu, step, kernel, layout, settings, model))
    }

    /// The engine for the classifier `model` on device `ordinal` (steps take shared rows, as
    /// the MNIST runs pass them, or the full data).
    ///
    /// # Errors
    /// As [`CudaSteinVi::regression`].
    pub fn classifier(
        model: &'a BnnClassifier,
        settings: SteinSettings,
        ordinal: usize,
    ) -> Result<Self> {
        let (cpu, kernel, layout) = Self::host_side(model, &settings)?;
        let step = CudaStep::classifier(ordinal, model)?;
        Ok(Self::with(cpu, step, kernel, layout, settings, model))
    }

    fn with(
        cpu: SteinVi<'a, dyn LogDensity + 'a>,
        step: CudaStep,
        kernel: Box<dyn Kernel>,
        layout: Layout,
        settings: SteinSettings,
        model: &dyn LogDensity,
    ) -> Self {
        let resident = match settings.kernel {
            KernelSettings::Rbf {
                mode,
                bandwidth_factor,
            } if mode.is_scalar() && settings.num_particles <= MAX_RESIDENT_PARTICLES => {
                Some(bandwidth_factor)
            }
            _ => None,
        };
        CudaSteinVi {
            cpu,
            step: Mutex::new(step),
            kernel,
            layout,
            settings,
            num_data: model.num_data(),
            resident,
        }
    }

    /// Runs the Stein update on the host (the kernel, φ and the optimizer over m×p values
    /// copied each step) even where the device could keep the particles: the engine before the
    /// device update, for comparisons. Call before the first step.
    pub fn with_host_update(mut self) -> Self {
        self.resident = None;
        self
    }

    /// Whether the particles stay on the device between steps (the RBF kernel in norm mode,
    /// at most 255 particles, and not [`CudaSteinVi::with_host_update`]).
    pub fn keeps_particles_on_device(&self) -> bool {
        self.resident.is_some()
    }

    /// Switches the per-phase clock of the steps on (clearing earlier times) or off; on, each
    /// phase waits for the GPU, so steps run slower. `smi bench --device cuda --profile`.
    ///
    /// # Errors
    /// A poisoned lock (an earlier panic in a step).
    pub fn set_profiling(&self, on: bool) -> Result<()> {
        self.lock()?.set_profiling(on);
        Ok(())
    }

    /// The mean time of each phase of the steps since profiling was switched on.
    ///
    /// # Errors
    /// As [`CudaSteinVi::set_profiling`].
    pub fn profile(&self) -> Result<Vec<super::PhaseTime>> {
        Ok(self.lock()?.profile())
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, CudaStep>> {
        self.step
            .lock()
            .map_err(|_| Error::Data("GPU step poisoned by an earlier panic".into()))
    }

    /// One step with the particles on the device: the ELBO gradients and the particles'
    /// distances there, the bandwidth and the m×m kernel weights here, φ, its norm and the
    /// optimizer there. The step ends in [`smi::finish_step`], as the CPU engines' in
    /// [`smi::apply_ascent`]: a non-finite log density, ELBO or direction skips the update under
    /// [`smi::NonFinitePolicy::Skip`].
    fn step_resident(
        &self,
        factor: BandwidthFactor,
        state: &mut State,
        rows: Option<&[usize]>,
    ) -> Result<StepInfo> {
        let st = &self.settings;
        let mut dev = self.lock()?;
        if !dev.holds(state) {
            dev.upload_state(state, st.num_elbo_particles)?;
        }
        // the device's copy is current only once this step has finished on it
        dev.set_mark(None);
        let noise_seed: u64 = state.rng.random();
        let rows_seed: u64 = state.rng.random();
        let step_rows = self.step_rows(rows, rows_seed);
        let tau = st.loss_temperature * st.schedule.value(state.step);
        let out = dev.resident_pass(
            st.num_elbo_particles,
            noise_seed,
            step_rows,
            st.jacobian,
            tau,
        )?;
        let t = state.step;
        let elbo = elbo_estimate(&out.logp, &out.logq, tau);
        let bad = if let Some(i) = out.logp.iter().position(|v| !v.is_finite()) {
            Some(format!("model log density of draw {i}"))
        } else if !out.sq.is_finite() {
            Some(format!("particles at step {t}"))
        } else if !elbo.is_finite() {
            Some(format!("update direction at step {t}"))
        } else {
            None
        };
        let result = match bad {
            Some(why) => Err(Error::non_finite(why)),
            None => {
                let (c_att, c_rep) = self.force_weights(st.num_particles);
                let coef = rbf_coefficients(&out.sq, factor);
                dev.profile_phase("host: bandwidth and kernel weights")?;
                let norm2 = dev.direction(&coef, c_att, c_rep)?;
                if norm2.is_finite() {
                    Ok((norm2.sqrt(), elbo))
                } else {
                    Err(Error::non_finite(format!("update direction at step {t}")))
                }
            }
        };
        // the device holds the state after this step unless its update failed midway
        let mut updated = true;
        let info = smi::finish_step(
            state,
            &st.optimizer,
            st.on_non_finite,
            result,
            |lr, state| {
                let call = OptimizerCall::prepare(&st.optimizer, lr, &mut state.optimizer)?;
                let launched = dev.optimizer_step(call);
                updated = launched.is_ok();
                launched
            },
        );
        if updated {
            dev.set_mark(Some(Mark::of(state)));
        }
        info
    }

    /// Which rows a step evaluates: the runner's, a per-draw sample of `batch_size` from
    /// `seed`, or all.
    fn step_rows<'r>(&self, rows: Option<&'r [usize]>, seed: u64) -> StepRows<'r> {
        match (rows, self.settings.batch_size) {
            (Some(r), _) => StepRows::Shared(r),
            (None, Some(b)) if b < self.num_data => StepRows::Sample { seed, size: b },
            (None, _) => StepRows::All,
        }
    }

    /// The CPU engine (validating the settings), the kernel and the particle layout.
    #[allow(clippy::type_complexity)]
    fn host_side(
        model: &'a (dyn LogDensity + 'a),
        settings: &SteinSettings,
    ) -> Result<(SteinVi<'a, dyn LogDensity + 'a>, Box<dyn Kernel>, Layout)> {
        supported(settings)?;
        let cpu = SteinVi::new(model, settings.clone())?;
        let kernel = settings.kernel.build()?;
        let layout = settings.guide.layout(&model.layout());
        Ok((cpu, kernel, layout))
    }

    /// The GPU's name.
    pub fn device_name(&self) -> String {
        self.step
            .lock()
            .map(|s| s.gpu().name().to_string())
            .unwrap_or_default()
    }

    /// The weights of the attraction and the repulsion in φ for `m` particles: c_att (1/m, or
    /// 1 with NumPyro's normalisation) and c_rep = repulsion temperature / m.
    fn force_weights(&self, m: usize) -> (f64, f64) {
        let m = m as f64;
        let c_att = match self.settings.attraction {
            AttractionNorm::Paper => 1.0 / m,
            AttractionNorm::Numpyro => 1.0,
        };
        (c_att, self.settings.repulsion_temperature / m)
    }

    /// The ascent direction φ (flattened m×p), its norm and the ELBO estimate of one step's
    /// device output.
    ///
    /// `gram` is the kernel on the step's particles, computed on the host while the GPU
    /// worked. φ is formed by the core's one-pass [`smi::kernel::Weights::direction`] (blocks of
    /// columns in parallel; the same bits as the attraction followed by the combination).
    fn force(
        &self,
        out: StepOutput,
        gram: smi::kernel::Gram,
        m: usize,
        tau: f64,
    ) -> Result<(Vec<f64>, f64, f64)> {
        if let Some(bad) = out.logp.iter().position(|v| !v.is_finite()) {
            return Err(Error::non_finite(format!(
                "model log density of draw {bad}"
            )));
        }
        let elbo = elbo_estimate(&out.logp, &out.logq, tau);
        let (c_att, c_rep) = self.force_weights(m);
        let phi = gram
            .weights
            .direction(&out.ghat, c_att, &gram.repulsion, c_rep);
        let loss = phi.frobenius_norm();
        Ok((phi.into_vec(), loss, elbo))
    }
}

/// The step's ELBO estimate: the mean over its K draws of τ·log p − log q_mix.
fn elbo_estimate(logp: &[f64], logq: &[f64], tau: f64) -> f64 {
    let k = logp.len().max(1) as f64;
    logp.iter()
        .zip(logq)
        .map(|(lp, lq)| tau * lp - lq)
        .sum::<f64>()
        / k
}

/// Checks that `settings` have a device path.
///
/// # Errors
/// [`CudaError::Unsupported`] naming the setting.
fn supported(settings: &SteinSettings) -> Result<()> {
    let why = if !matches!(settings.guide, GuideSettings::Normal { .. }) {
        "the GPU engine runs SMI with the mean-field Normal guide (SVGD/ASVGD's point masses and the low-rank and full-rank guides run on the CPU)"
    } else if settings.gradient_reuse != GradientReuse::Shared {
        "per-pair gradient reuse (use gradient_reuse = shared)"
    } else if !settings.shared.is_empty() {
        "shared (non-mixture) parameters"
    } else if settings.defect.is_some() {
        "a reproduced NumPyro defect (a diagnostic switch: run it on the CPU)"
    } else if settings.scale_lr_factor != 1.0 {
        "a learning-rate factor on the guide's scales (an ablation: run it on the CPU)"
    } else {
        return Ok(());
    };
    Err(CudaError::Unsupported(why.into()).into())
}

impl Engine for CudaSteinVi<'_> {
    fn name(&self) -> &str {
        self.cpu.name()
    }

    fn init(&self) -> Result<State> {
        self.cpu.init()
    }

    /// One SMI step with ĝ from the GPU; `rows` as [`Engine::step`] (per-draw batches of
    /// [`SteinSettings::batch_size`] are drawn on the device).
    fn step(&self, state: &mut State, rows: Option<&[usize]>) -> Result<StepInfo> {
        let st = &self.settings;
        let p = state.particles.cols();
        if state.particles.rows() != st.num_particles || p != self.layout.dim() {
            return Err(Error::shape(
                "state particles",
                format!("{}×{}", st.num_particles, self.layout.dim()),
                format!("{}×{p}", state.particles.rows()),
            ));
        }
        if let Some(factor) = self.resident {
            return self.step_resident(factor, state, rows);
        }
        let noise_seed: u64 = state.rng.random();
        let rows_seed: u64 = state.rng.random();
        let step_rows = self.step_rows(rows, rows_seed);
        let tau = st.loss_temperature * st.schedule.value(state.step);
        // the kernel (host, particles only) while this thread waits for the GPU's ĝ
        let (out, gram) = rayon::join(
            || {
                let mut step = self.lock()?;
                step.run(
                    &state.particles,
                    st.num_elbo_particles,
                    noise_seed,
                    step_rows,
                    st.jacobian,
                    tau,
                )
            },
            || self.kernel.compute(&state.particles, &self.layout),
        );
        let m = state.particles.rows();
        let result = out.and_then(|o| self.force(o, gram?, m, tau));
        let info = smi::apply_ascent(state, &st.optimizer, st.on_non_finite, result);
        self.lock()?
            .profile_phase("host: kernel, φ and optimizer")?;
        info
    }

    /// The mixture of the current particles (read from the device when it holds them; the
    /// host's state is left as it is).
    fn posterior(&self, state: &State) -> Mixture {
        if self.resident.is_some() {
            if let Ok(dev) = self.lock() {
                if dev.holds(state) {
                    let mut current = state.clone();
                    if dev.download_state(&mut current.particles, None).is_ok() {
                        return self.cpu.posterior(&current);
                    }
                }
            }
        }
        self.cpu.posterior(state)
    }

    /// Copies the particles and the optimizer's buffers from the device when it holds this
    /// state; the next step uploads the state again.
    fn sync(&self, state: &mut State) -> Result<()> {
        if self.resident.is_none() {
            return Ok(());
        }
        let mut dev = self.lock()?;
        if dev.holds(state) {
            dev.download_state(&mut state.particles, Some(&mut state.optimizer))?;
            dev.set_mark(None);
        }
        Ok(())
    }

    fn elbo_checks(&self) -> smi::ElboChecks {
        self.cpu.elbo_checks()
    }

    fn fingerprint(&self) -> String {
        self.cpu.fingerprint()
    }

    fn load_state(&self, path: &std::path::Path) -> Result<State> {
        self.cpu.load_state(path)
    }
}
