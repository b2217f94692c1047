//! Keyword arguments of `smi.fit` → the method layer's settings.

use smi::{
    GuideSettings, Init, LrSchedule, Method, MethodSettings, OptimizerSettings, RunSettings,
};

/// What `smi.fit` takes besides the model, with NumPyro's names where NumPyro has the setting.
/// `None` keeps the method's preset.
#[derive(Clone, Debug, Default)]
pub struct FitOptions {
    /// `method`: smi, svgd, asvgd, ovi, map or nuts.
    pub method: String,
    /// `num_stein_particles`: m (Stein methods).
    pub num_stein_particles: Option<usize>,
    /// `num_elbo_particles`: S (SMI, OVI).
    pub num_elbo_particles: Option<usize>,
    /// `num_steps`: the step cap of a variational method.
    pub num_steps: Option<u64>,
    /// `converge`: stop at the convergence rule (docs/convergence.md) before the cap.
    pub converge: bool,
    /// `constant_lr`: drop the preset's learning-rate schedule (reduce-on-plateau).
    pub constant_lr: bool,
    /// `optimizer`: "adam", "adagrad" or "sgd".
    pub optimizer: Option<String>,
    /// `lr`: the optimizer's learning rate (the preset optimizer's kind when `optimizer` is unset).
    pub lr: Option<f64>,
    /// `init_radius`: particles start uniform in (−r, r) on the unconstrained space.
    pub init_radius: Option<f64>,
    /// `seed`.
    pub seed: u64,
    /// `num_warmup`, `num_samples`, `num_chains`: NUTS.
    pub num_warmup: Option<usize>,
    /// NUTS draws per chain.
    pub num_samples: Option<usize>,
    /// NUTS chains.
    pub num_chains: Option<usize>,
    /// `quality_draws`: S of the fit-quality diagnostic k̂ (`None`: 2000; 0 skips it).
    pub quality_draws: Option<usize>,
    /// `repulsion_temperature`: α, the weight of the Stein repulsion (Stein methods).
    pub repulsion_temperature: Option<f64>,
    /// `guide`: the guide family of SMI and OVI, `"normal"`, `"lowrank:R"` or `"fullrank"`
    /// ([`smi::GuideSettings::from_spec`]).
    pub guide: Option<String>,
    /// `start`: where SMI's and OVI's particles start from their drawn locations, `"draw"` or
    /// `"laplace"` ([`smi::Start::from_name`]; default: [`Method::defaults_for`]'s).
    pub start: Option<String>,
    /// `kernel`: the Stein kernel of SMI, SVGD and ASVGD as the JSON of
    /// [`smi::kernel::KernelSettings`] (e.g. `{"kind": "imq"}`; default: the preset's RBF).
    pub kernel: Option<String>,
    /// `loss_temperature`: τ, SMI's multiplier on the model term (NumPyro's name; default 1).
    pub loss_temperature: Option<f64>,
    /// `init_scale`: the guide's initial σ per coordinate (SMI and OVI with a Normal-family
    /// guide; default 0.1).
    pub init_scale: Option<f64>,
    /// `num_cycles`: C, ASVGD's annealing cycles (default 10).
    pub num_cycles: Option<u64>,
    /// `transition_speed`: p, ASVGD's transition speed (default 10).
    pub transition_speed: Option<f64>,
}

fn not_asvgd(method: Method) -> smi::Error {
    smi::Error::invalid(
        "num_cycles",
        format!("{method} has no annealing cycles (only asvgd does)"),
    )
}

/// The default step cap of a variational method when `num_steps` is not given: the cap the
/// library's defaults were measured with (docs/defaults.md); the convergence rule ends most
/// fits well before it.
pub const DEFAULT_STEPS: u64 = 100_000;

impl FitOptions {
    /// The method and run settings these options describe for a model of dimension `dim`
    /// (the library's defaults, [`Method::defaults_for`], changed by the options).
    ///
    /// # Errors
    /// [`smi::Error::InvalidSettings`] for an unknown method or optimizer, or a setting the
    /// method does not have (e.g. particles for OVI), and whatever the settings' own
    /// validation finds.
    pub fn build(&self, dim: usize) -> smi::Result<(MethodSettings, RunSettings)> {
        let method: Method = self.method.parse()?;
        let steps = self.num_steps.unwrap_or(DEFAULT_STEPS);
        let mut settings = method.defaults_for(steps, dim).with_seed(self.seed);
        if let Some(m) = self.num_stein_particles {
            if !method.is_stein() {
                return Err(smi::Error::invalid(
                    "num_stein_particles",
                    format!("{method} has no Stein particles (only smi, svgd and asvgd do)"),
                ));
            }
            settings = settings.with_particles(m);
        }
        if let Some(s) = self.num_elbo_particles {
            if !matches!(method, Method::Smi | Method::Ovi) {
                return Err(smi::Error::invalid(
                    "num_elbo_particles",
                    format!("{method} draws no ELBO particles (only smi and ovi do)"),
                ));
            }
            settings = settings.with_elbo_draws(s);
        }
        if let Some(spec) = &self.guide {
            let guide = GuideSettings::from_spec(spec)?;
            if !matches!(method, Method::Smi | Method::Ovi) || !guide.is_normal() {
                return Err(smi::Error::invalid(
                    "guide",
                    format!(
                        "{method} with guide {spec:?}: the guide families normal, lowrank:R and \
                         fullrank are for smi and ovi (svgd, asvgd and map use point masses)"
                    ),
                ));
            }
            settings = settings.with_guide(guide);
            if let MethodSettings::Stein(s) = &mut settings {
                // α follows the chosen guide unless given (Method::default_repulsion)
                s.repulsion_temperature = Method::default_repulsion(guide);
            }
        }
        if let Some(alpha) = self.repulsion_temperature {
            match &mut settings {
                MethodSettings::Stein(s) => s.repulsion_temperature = alpha,
                _ => {
                    return Err(smi::Error::invalid(
                        "repulsion_temperature",
                        format!("{method} has no repulsion (only smi, svgd and asvgd do)"),
                    ))
                }
            }
        }
        if let Some(json) = &self.kernel {
            let kernel: smi::kernel::KernelSettings = serde_json::from_str(json).map_err(|e| {
                smi::Error::invalid("kernel", format!("not a kernel description ({e}): {json}"))
            })?;
            // Its options are checked with the other settings (`settings.validate()` below).
            match &mut settings {
                MethodSettings::Stein(s) => s.kernel = kernel,
                _ => {
                    return Err(smi::Error::invalid(
                        "kernel",
                        format!("{method} has no Stein kernel (only smi, svgd and asvgd do)"),
                    ))
                }
            }
        }
        if let Some(sigma) = self.init_scale {
            let guide = match &mut settings {
                MethodSettings::Stein(s) if method == Method::Smi => Some(&mut s.guide),
                MethodSettings::Svi(s) if method == Method::Ovi => Some(&mut s.guide),
                _ => None,
            };
            match guide {
                Some(
                    GuideSettings::Normal { init_scale }
                    | GuideSettings::LowRank { init_scale, .. }
                    | GuideSettings::FullRank { init_scale },
                ) => *init_scale = sigma,
                _ => {
                    return Err(smi::Error::invalid(
                        "init_scale",
                        format!("{method} has no guide scale (only smi and ovi do)"),
                    ))
                }
            }
        }
        if self.num_cycles.is_some() || self.transition_speed.is_some() {
            match &mut settings {
                MethodSettings::Stein(s) => match &mut s.schedule {
                    smi::Schedule::Cyclical {
                        num_cycles,
                        transition_speed,
                        ..
                    } => {
                        *num_cycles = self.num_cycles.unwrap_or(*num_cycles);
                        *transition_speed = self.transition_speed.unwrap_or(*transition_speed);
                    }
                    _ => return Err(not_asvgd(method)),
                },
                _ => return Err(not_asvgd(method)),
            }
        }
        if let Some(tau) = self.loss_temperature {
            match &mut settings {
                MethodSettings::Stein(s) if method == Method::Smi => s.loss_temperature = tau,
                _ => {
                    return Err(smi::Error::invalid(
                        "loss_temperature",
                        format!("{method} has no loss temperature (only smi does)"),
                    ))
                }
            }
        }
        if self.optimizer.is_some() || self.lr.is_some() || self.constant_lr {
            let optimizer = self.optimizer_settings(&settings)?;
            settings = settings.with_optimizer(optimizer);
        }
        if let Some(name) = &self.start {
            let start = smi::Start::from_name(name)?;
            match &mut settings {
                MethodSettings::Stein(s) if method == Method::Smi => s.start = start,
                MethodSettings::Svi(s) if method == Method::Ovi => s.start = start,
                _ => {
                    return Err(smi::Error::invalid(
                        "start",
                        format!("{method} has no start option (only smi and ovi do)"),
                    ))
                }
            }
        }
        if let Some(radius) = self.init_radius {
            settings = settings.with_init(Init::Uniform { radius });
        }
        if let MethodSettings::Nuts(n) = &mut settings {
            if self.num_steps.is_some() || !self.converge {
                return Err(smi::Error::invalid(
                    "num_steps",
                    "num_steps and converge are for the variational methods; NUTS runs \
                     num_warmup + num_samples iterations per chain",
                ));
            }
            if let Some(w) = self.num_warmup {
                n.num_warmup = w;
            }
            if let Some(d) = self.num_samples {
                n.num_draws = d;
            }
            if let Some(c) = self.num_chains {
                n.num_chains = c;
            }
        } else if self.num_warmup.is_some()
            || self.num_samples.is_some()
            || self.num_chains.is_some()
        {
            return Err(smi::Error::invalid(
                "num_samples",
                format!("num_warmup, num_samples and num_chains are NUTS settings, not {method}'s"),
            ));
        }
        settings.validate()?;
        let mut run = if self.converge {
            RunSettings::until_converged(steps)
        } else {
            RunSettings::steps(steps)
        };
        if let Some(q) = self.quality_draws {
            if q != 0 && q < 10 {
                return Err(smi::Error::invalid(
                    "quality_draws",
                    format!("the k-hat diagnostic needs at least 10 draws (0 skips it), got {q}"),
                ));
            }
            run.quality_draws = q;
        }
        Ok((settings, run))
    }

    /// Refuses counts whose buffers the machine's memory cannot hold, before anything is
    /// allocated (`guard::fits_in_memory`): the draws of one step (particles × ELBO
    /// draws × d), NUTS's draws (chains × draws × d), the k̂ draws and the per-step losses.
    ///
    /// # Errors
    /// `ValueError` naming the parameter.
    pub fn check_memory(&self, dim: usize) -> pyo3::PyResult<()> {
        use crate::guard::fits_in_memory;
        let m = self.num_stein_particles.unwrap_or(1);
        let s = self.num_elbo_particles.unwrap_or(1);
        fits_in_memory(
            "num_stein_particles × num_elbo_particles",
            &[(m, "particles"), (s, "ELBO draws"), (dim, "parameters")],
        )?;
        fits_in_memory(
            "num_chains × num_samples",
            &[
                (self.num_chains.unwrap_or(1), "chains"),
                (self.num_samples.unwrap_or(1), "draws"),
                (dim, "parameters"),
            ],
        )?;
        fits_in_memory(
            "quality_draws",
            &[
                (self.quality_draws.unwrap_or(0), "draws"),
                (dim, "parameters"),
            ],
        )?;
        let steps = usize::try_from(self.num_steps.unwrap_or(DEFAULT_STEPS)).unwrap_or(usize::MAX);
        fits_in_memory("num_steps", &[(steps, "steps"), (2, "per-step losses")])
    }

    fn optimizer_settings(&self, settings: &MethodSettings) -> smi::Result<OptimizerSettings> {
        let preset = match settings {
            MethodSettings::Stein(s) => s.optimizer,
            MethodSettings::Svi(s) => s.optimizer,
            MethodSettings::Nuts(_) => {
                return Err(smi::Error::invalid(
                    "optimizer",
                    "NUTS has no optimizer (lr and optimizer are for the variational methods)",
                ))
            }
        };
        let lr = self.lr.unwrap_or_else(|| preset.lr());
        let (preset_kind, schedule) = match preset {
            OptimizerSettings::Adam { schedule, .. } => ("adam", schedule),
            OptimizerSettings::Adagrad { schedule, .. } => ("adagrad", schedule),
            OptimizerSettings::Sgd { schedule, .. } => ("sgd", schedule),
        };
        let kind = self.optimizer.as_deref().map_or_else(
            || preset_kind.to_string(),
            |k| k.trim().to_ascii_lowercase(),
        );
        let schedule = if self.constant_lr {
            LrSchedule::default()
        } else {
            schedule
        };
        let optimizer = match kind.as_str() {
            // The preset's optimizer at another rate keeps its settings (the defaults' spike guard).
            k if k == preset_kind => preset.with_lr(lr),
            "adam" => OptimizerSettings::adam(lr),
            "adagrad" => OptimizerSettings::adagrad(lr),
            "sgd" => OptimizerSettings::sgd(lr),
            other => {
                return Err(smi::Error::invalid(
                    "optimizer",
                    format!("unknown optimizer {other:?}; valid: adam, adagrad, sgd"),
                ))
            }
        };
        Ok(optimizer.with_schedule(schedule))
    }
}
