//! The settings of one fit under the UCI protocol (docs/algorithms.md §7.3), shared by
//! `smi reproduce uci` and `smi fit`: the method's preset from [`smi::Method::preset`] with the
//! protocol's deltas (Adam at the given rate, uniform init, mini-batches, m, S, the attraction
//! normalisation, early stopping for the Stein methods).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use smi::{
    AttractionNorm, EarlyStopSettings, Error, Fit, Init, LogDensity, Method, MethodSettings,
    NumpyroDefect, NutsSettings, Observer, OptimizerSettings, RunSettings,
};

/// Everything but the method, the learning rate and the seed that a fit needs.
#[derive(Clone, Debug)]
pub struct Protocol {
    /// Step budget (Stein methods may stop earlier; OVI/MAP run exactly this many).
    pub max_steps: u64,
    /// m, particles of SMI/SVGD/ASVGD.
    pub num_particles: usize,
    /// S, ELBO draws per particle of SMI.
    pub elbo_draws: usize,
    /// Mini-batch rows (`None`: full data).
    pub batch_size: Option<usize>,
    /// Every particle/guide starts from Uniform(−r, r).
    pub init_radius: f64,
    /// Stop SMI/SVGD/ASVGD early on the force norm (docs/algorithms.md §7.3).
    pub early_stopping: bool,
    /// NUTS settings (its seed is replaced by the fit's seed).
    pub nuts: NutsSettings,
    /// SMI's attraction normalisation.
    pub attraction: AttractionNorm,
    /// A NumPyro defect reproduced in SMI (a diagnostic switch; `None` for inference).
    pub defect: Option<NumpyroDefect>,
    /// The guide of SMI and OVI (`None`: the preset's mean-field Normal).
    pub guide: Option<smi::GuideSettings>,
    /// SMI's likelihood temperature τ ([`smi::SteinSettings::loss_temperature`]; 1: the paper's).
    pub loss_temperature: f64,
    /// SMI's Stein kernel (`None`: the preset's RBF with the median bandwidth, the paper's).
    pub kernel: Option<smi::kernel::KernelSettings>,
    /// SMI's factor on the guide scales' learning rate
    /// ([`smi::SteinSettings::scale_lr_factor`]; 1: one rate, the paper's).
    pub scale_lr_factor: f64,
}

impl Protocol {
    /// The engine settings of `method` at learning rate `lr` (ignored by NUTS) and `seed`.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] when a variational method has no learning rate.
    pub fn method_settings(
        &self,
        method: Method,
        lr: Option<f64>,
        seed: u64,
    ) -> smi::Result<MethodSettings> {
        if method == Method::Nuts {
            return Ok(MethodSettings::Nuts(NutsSettings {
                seed,
                ..self.nuts.clone()
            }));
        }
        let lr =
            lr.ok_or_else(|| Error::invalid("lr", format!("{method} needs a learning rate")))?;
        let mut settings = method
            .preset(self.max_steps)
            .with_particles(self.num_particles)
            .with_init(Init::Uniform {
                radius: self.init_radius,
            })
            .with_optimizer(OptimizerSettings::adam(lr))
            .with_batch_size(self.batch_size)
            .with_seed(seed);
        if let Some(guide) = self.guide {
            settings = settings.with_guide(guide);
        }
        if let MethodSettings::Stein(s) = &mut settings {
            // SVGD/ASVGD on NumPyro's target, without the log-Jacobian
            // (SteinSettings::svgd_numpyro_parity).
            s.jacobian = !method.is_point_mass();
            if method == Method::Smi {
                s.num_elbo_particles = self.elbo_draws;
                s.attraction = self.attraction;
                s.defect = self.defect;
                s.loss_temperature = self.loss_temperature;
                s.scale_lr_factor = self.scale_lr_factor;
                if let Some(k) = &self.kernel {
                    s.kernel = k.clone();
                }
            }
        }
        if let MethodSettings::Svi(s) = &mut settings {
            // The paper's OVI draws once per step (the preset's S = 10 is the default that
            // converges without tuning, docs/defaults.md).
            s.num_elbo_particles = 1;
        }
        Ok(settings)
    }

    /// The run settings of `method`: the step budget, with early stopping for the Stein
    /// methods when it is on.
    pub fn run_settings(&self, method: Method) -> RunSettings {
        RunSettings {
            max_steps: self.max_steps,
            early_stopping: (self.early_stopping && method.is_stein())
                .then(EarlyStopSettings::default),
            // The paper's protocol judges a fit by its test metrics; k̂ of a network's
            // posterior (hundreds of weights) would cost full-data passes and say nothing new.
            quality_draws: 0,
            ..Default::default()
        }
    }
}

/// The random-number generator prediction draws come from, for a fit with `seed`.
pub fn prediction_rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_5eed)
}

/// Fits `method` to `model` with Adam at `lr` (ignored by NUTS) under the UCI protocol's
/// settings `s`, reporting progress to `observer`.
///
/// # Errors
/// Invalid settings, the engine's or the model's errors.
pub fn fit(
    method: Method,
    lr: Option<f64>,
    model: &dyn LogDensity,
    s: &Protocol,
    seed: u64,
    observer: &mut dyn Observer,
) -> smi::Result<Fit> {
    let settings = s.method_settings(method, lr, seed)?;
    smi::fit(model, &settings, &s.run_settings(method), observer)
}
