//! `CudaSteinVi`: the SMI engine with its ELBO gradients on the GPU ([`CudaStep`]) and the
//! Stein kernel, force and optimizer on the host, over the core's public pieces.
//!
//! States, checkpoints, posteriors and fingerprints are those of the CPU [`SteinVi`] with the
//! same settings (this engine delegates them), so a run started on the GPU resumes on the CPU
//! and back. The random streams differ: each step takes two `u64` seeds from the state's RNG
//! for the device's noise and rows, where the CPU engine draws ε and the rows from it directly.

use std::sync::Mutex;

use smi::kernel::Kernel;
use smi::rand::Rng;
use smi::{
    AttractionNorm, Engine, Error, GradientReuse, GuideSettings, Layout, LogDensity, Mixture,
    Result, State, SteinSettings, SteinVi, StepInfo,
};

use super::error::CudaError;
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
        CudaSteinVi {
            cpu,
            step: Mutex::new(step),
            kernel,
            layout,
            settings,
            num_data: model.num_data(),
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
        let k = out.logp.len().max(1) as f64;
        let elbo = out
            .logp
            .iter()
            .zip(&out.logq)
            .map(|(lp, lq)| tau * lp - lq)
            .sum::<f64>()
            / k;
        let m = m as f64;
        let c_att = match self.settings.attraction {
            AttractionNorm::Paper => 1.0 / m,
            AttractionNorm::Numpyro => 1.0,
        };
        let c_rep = self.settings.repulsion_temperature / m;
        let phi = gram
            .weights
            .direction(&out.ghat, c_att, &gram.repulsion, c_rep);
        let loss = phi.frobenius_norm();
        Ok((phi.into_vec(), loss, elbo))
    }
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
        let noise_seed: u64 = state.rng.random();
        let rows_seed: u64 = state.rng.random();
        let step_rows = match (rows, st.batch_size) {
            (Some(r), _) => StepRows::Shared(r),
            (None, Some(b)) if b < self.num_data => StepRows::Sample {
                seed: rows_seed,
                size: b,
            },
            (None, _) => StepRows::All,
        };
        let tau = st.loss_temperature * st.schedule.value(state.step);
        // the kernel (host, particles only) while this thread waits for the GPU's ĝ
        let (out, gram) = rayon::join(
            || {
                let mut step = self
                    .step
                    .lock()
                    .map_err(|_| Error::Data("GPU step poisoned by an earlier panic".into()))?;
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
        smi::apply_ascent(state, &st.optimizer, st.on_non_finite, result)
    }

    fn posterior(&self, state: &State) -> Mixture {
        self.cpu.posterior(state)
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
