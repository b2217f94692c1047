//! The six inference methods of the UCI benchmark (spec §7.3) with the paper's defaults, shared
//! by `smi reproduce uci` and `smi fit`: building each engine, running it, drawing from the
//! result for prediction, and the learning-rate grid search.

use std::fmt;
use std::str::FromStr;
use std::time::Instant;

use anyhow::{anyhow, Result};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use smi::{
    AttractionNorm, EarlyStopSettings, Engine, Init, LogDensity, Matrix, Nuts, NutsSettings,
    Observer, OptimizerSettings, Posterior, RunSettings, SteinSettings, SteinVi, Svi, SviSettings,
};

/// The paper's learning-rate grid (spec §7.3).
pub const LR_GRID: [f64; 6] = [5e-1, 5e-2, 5e-3, 5e-4, 5e-5, 5e-6];

/// One of the six methods of the UCI table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Method {
    /// Stein mixture inference.
    Smi,
    /// SVGD.
    Svgd,
    /// Annealed SVGD.
    Asvgd,
    /// Mean-field VI.
    Ovi,
    /// MAP.
    Map,
    /// NUTS (reference).
    Nuts,
}

impl Method {
    /// All methods in the table's column order.
    pub const ALL: [Method; 6] = [
        Method::Smi,
        Method::Svgd,
        Method::Asvgd,
        Method::Ovi,
        Method::Map,
        Method::Nuts,
    ];

    /// Lower-case name used on the command line and in records.
    pub fn name(self) -> &'static str {
        match self {
            Method::Smi => "smi",
            Method::Svgd => "svgd",
            Method::Asvgd => "asvgd",
            Method::Ovi => "ovi",
            Method::Map => "map",
            Method::Nuts => "nuts",
        }
    }

    /// Parses a name (case-insensitive); `None` if unknown.
    pub fn from_name(s: &str) -> Option<Method> {
        let s = s.trim().to_ascii_lowercase();
        Method::ALL.into_iter().find(|m| m.name() == s)
    }

    /// Parses a `--methods` list (items may themselves be comma-separated); duplicates are
    /// dropped, order is kept.
    ///
    /// # Errors
    /// An unknown or empty name, with the valid ones listed.
    pub fn parse_list(items: &[String]) -> Result<Vec<Method>> {
        let valid = Method::ALL.map(Method::name).join(", ");
        let mut out = Vec::new();
        for item in items.iter().flat_map(|s| s.split(',')) {
            let m = Method::from_name(item).ok_or_else(|| {
                anyhow!("unknown method '{}'; valid methods: {valid}", item.trim())
            })?;
            if !out.contains(&m) {
                out.push(m);
            }
        }
        if out.is_empty() {
            return Err(anyhow!("no method given; valid methods: {valid}"));
        }
        Ok(out)
    }

    /// Column label in the tables.
    pub fn label(self) -> &'static str {
        match self {
            Method::Smi => "SMI",
            Method::Svgd => "SVGD",
            Method::Asvgd => "ASVGD",
            Method::Ovi => "OVI",
            Method::Map => "MAP",
            Method::Nuts => "NUTS",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Method {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> Result<Self> {
        let l = s.trim().to_ascii_lowercase();
        Method::ALL
            .into_iter()
            .find(|m| m.name() == l)
            .ok_or_else(|| {
                anyhow!(
                    "unknown method {s:?}; valid methods: {}",
                    Method::ALL.map(Method::name).join(", ")
                )
            })
    }
}

/// How SMI normalises its attraction (spec §2.8), as a command-line choice.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Attraction {
    /// φ = (1/m)[Σ k·ĝ + α Σ ∇k]: the paper's update and NumPyro ≤ 0.15 (default).
    #[default]
    Paper,
    /// φ = Σ k·ĝ + (α/m) Σ ∇k: NumPyro 0.16–0.22, which the paper's MNIST runs used.
    Numpyro,
}

impl Attraction {
    /// The engine option.
    pub fn norm(self) -> AttractionNorm {
        match self {
            Attraction::Paper => AttractionNorm::Paper,
            Attraction::Numpyro => AttractionNorm::Numpyro,
        }
    }

    /// What SMI's config string gains: nothing for the default (so records made before this
    /// option existed still match), `suffix` otherwise.
    pub fn config_suffix(self, sep: &str) -> String {
        match self {
            Attraction::Paper => String::new(),
            Attraction::Numpyro => format!("{sep}attraction=numpyro"),
        }
    }
}

/// Everything but the learning rate and the seed that a fit needs.
#[derive(Clone, Debug)]
pub struct MethodSettings {
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
    /// Stop SMI/SVGD/ASVGD early on the force norm (spec §7.3).
    pub early_stopping: bool,
    /// NUTS settings (its seed is replaced by the fit's seed).
    pub nuts: NutsSettings,
    /// SMI's attraction normalisation.
    pub attraction: Attraction,
}

/// What a method leaves behind.
#[derive(Clone, Debug)]
pub enum Fitted {
    /// The particles (SMI/SVGD/ASVGD) or the single guide (OVI/MAP).
    Variational(Posterior),
    /// Posterior draws (NUTS), one per row.
    Draws(Matrix),
}

impl Fitted {
    /// Draws for prediction as the paper's evaluation takes them (spec §6, §7.3): `n` mixture
    /// draws for a Normal guide (SMI, OVI), the particles for a Delta guide (SVGD, ASVGD, MAP),
    /// every stored draw for NUTS.
    pub fn predictive_draws(&self, n: usize, rng: &mut ChaCha8Rng) -> Result<Matrix> {
        match self {
            Fitted::Variational(post) => Ok(post.predictive_draws(n, rng)?),
            Fitted::Draws(d) => Ok(d.clone()),
        }
    }
}

/// A finished fit.
#[derive(Clone, Debug)]
pub struct FitOutcome {
    /// The result.
    pub fitted: Fitted,
    /// Steps run (NUTS: warm-up + draws).
    pub steps: u64,
    /// Training seconds.
    pub seconds: f64,
    /// Whether the early-stopping rule ended the run.
    pub early_stopped: bool,
    /// The loss of the last step (‖φ‖ for Stein methods, −ELBO for OVI/MAP), if any.
    pub final_loss: Option<f64>,
}

/// The random-number generator prediction draws come from, for a fit with `seed`.
pub fn prediction_rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed ^ 0x5eed_5eed)
}

/// Fits `method` to `model` with Adam at `lr` (ignored by NUTS) and the paper's engine defaults
/// (spec §7.3), reporting progress to `observer`.
pub fn fit(
    method: Method,
    lr: Option<f64>,
    model: &dyn LogDensity,
    s: &MethodSettings,
    seed: u64,
    observer: &mut dyn Observer,
) -> Result<FitOutcome> {
    let init = Init::Uniform {
        radius: s.init_radius,
    };
    let lr_of = || lr.ok_or_else(|| anyhow!("{method} needs a learning rate"));
    match method {
        Method::Smi | Method::Svgd | Method::Asvgd => {
            let base = match method {
                Method::Smi => SteinSettings {
                    num_elbo_particles: s.elbo_draws,
                    attraction: s.attraction.norm(),
                    ..SteinSettings::smi()
                },
                Method::Svgd => SteinSettings::svgd(),
                _ => SteinSettings::asvgd(s.max_steps),
            };
            let settings = SteinSettings {
                num_particles: s.num_particles,
                init,
                optimizer: OptimizerSettings::adam(lr_of()?),
                batch_size: s.batch_size,
                seed,
                ..base
            };
            let engine = SteinVi::new(model, settings)?;
            let rs = RunSettings {
                max_steps: s.max_steps,
                early_stopping: s.early_stopping.then(EarlyStopSettings::default),
                ..Default::default()
            };
            let res = smi::run(&engine, engine.init()?, &rs, observer)?;
            Ok(FitOutcome {
                fitted: Fitted::Variational(engine.posterior(&res.state)),
                steps: res.state.step,
                seconds: res.seconds,
                early_stopped: res.termination == smi::Termination::EarlyStopped,
                final_loss: res.losses.last().copied(),
            })
        }
        Method::Ovi | Method::Map => {
            let base = if method == Method::Ovi {
                SviSettings::ovi()
            } else {
                SviSettings::map()
            };
            let settings = SviSettings {
                init,
                optimizer: OptimizerSettings::adam(lr_of()?),
                batch_size: s.batch_size,
                seed,
                ..base
            };
            let engine = Svi::new(model, settings)?;
            let res = smi::run(
                &engine,
                engine.init()?,
                &RunSettings::steps(s.max_steps),
                observer,
            )?;
            Ok(FitOutcome {
                fitted: Fitted::Variational(engine.posterior(&res.state)),
                steps: res.state.step,
                seconds: res.seconds,
                early_stopped: false,
                final_loss: res.losses.last().copied(),
            })
        }
        Method::Nuts => {
            let t = Instant::now();
            let res = Nuts::new(NutsSettings {
                seed,
                ..s.nuts.clone()
            })
            .sample(model, observer)?;
            let iters = (s.nuts.num_warmup + s.nuts.num_draws) as u64;
            Ok(FitOutcome {
                fitted: Fitted::Draws(res.draws),
                steps: iters,
                seconds: t.elapsed().as_secs_f64(),
                early_stopped: false,
                final_loss: res.log_density.last().map(|v| -v),
            })
        }
    }
}

/// The learning rate of `grid` with the lowest `score` (the first on ties). A score that is an
/// error or not finite counts as +∞ (a diverged run is the worst, not a failure); the error is
/// printed with `label`. Returns the rate and its score.
pub fn best_lr(
    grid: &[f64],
    label: &str,
    mut score: impl FnMut(f64) -> Result<f64>,
) -> Result<(f64, f64)> {
    let mut best: Option<(f64, f64)> = None;
    for &lr in grid {
        let v = match score(lr) {
            Ok(v) if v.is_finite() => v,
            Ok(_) => f64::INFINITY,
            Err(e) => {
                eprintln!("note: {label} lr={lr:e}: {e:#} (counted as infinite)");
                f64::INFINITY
            }
        };
        if best.is_none_or(|(_, b)| v < b) {
            best = Some((lr, v));
        }
    }
    best.ok_or_else(|| anyhow!("empty learning-rate grid"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_lr_skips_failures() {
        let (lr, v) = best_lr(&LR_GRID, "t", |lr| {
            if lr > 1e-1 {
                Err(anyhow!("diverged"))
            } else if lr < 1e-4 {
                Ok(f64::NAN)
            } else {
                Ok((lr.log10() + 2.5).abs())
            }
        })
        .unwrap();
        assert_eq!(lr, 5e-3);
        assert!(v < 0.2);
        assert!(best_lr(&[], "t", |_| Ok(1.0)).is_err());
        assert_eq!("SMI".parse::<Method>().unwrap(), Method::Smi);
        assert!("x".parse::<Method>().is_err());
    }
}
