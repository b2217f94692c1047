//! The configurations of `smi bench`: synthetic models of the paper's shapes, engine settings,
//! flop counts and the NumPyro reference timings with the targets of the benchmark issue.

use crate::device::Net;

mod references;
use anyhow::{bail, Result};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use smi::testing::{DiagNormal, Funnel};
use smi::{Engine, GradientReuse, LogDensity, Matrix, Method, MethodSettings, OptimizerSettings};
use smi_models::{Activation, BnnClassifier, BnnRegression, Device, Mlp, Noise};

/// Seed of every synthetic data set and of the engines.
pub const SEED: u64 = 20_240_917;

/// The optimizer of the timed steps: NumPyro's Adagrad(0.05) for the Stein methods and
/// Adam(1e-3) for OVI and MAP (the presets' optimizers before docs/defaults.md), so the
/// timings compare with NumPyro's and with earlier records.
fn bench_optimizer(method: Method) -> OptimizerSettings {
    if method.is_stein() {
        OptimizerSettings::adagrad(0.05)
    } else {
        OptimizerSettings::adam(1e-3)
    }
}

/// A named benchmark configuration (model, data shape, m, S, mini-batch size).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Config {
    /// 1 → 100 → 100 → 1 tanh, 40 points, known noise; m = 5, S = 100.
    Wave100,
    /// 1 → 100 → 1 tanh, 40 points (NumPyro comparison); m = 5, S = 100.
    Wave100OneHidden,
    /// 13 → 50 → 50 → 1 relu, Gamma precision, b = 100 of N = 455; m = 5, S = 100.
    Boston,
    /// 13 → 50 → 1 relu, Gamma precision, b = 100 of N = 455 (NumPyro comparison).
    BostonOneHidden,
    /// 784 → 100 → 10 tanh, softmax, shared batches of b = 128 of N = 60 000; m = 5, S = 10.
    Mnist1,
    /// N(0, I₁₀₀); m = 20, S = 100.
    Mvn100,
    /// Neal's funnel, a small hierarchical target (d = 10); m = 5, S = 10.
    Hier10M5,
    /// Neal's funnel (d = 10); m = 20, S = 10.
    Hier10M20,
}

impl Config {
    /// Every configuration, in table order.
    pub const ALL: [Config; 8] = [
        Config::Mvn100,
        Config::Hier10M5,
        Config::Hier10M20,
        Config::Wave100OneHidden,
        Config::BostonOneHidden,
        Config::Wave100,
        Config::Boston,
        Config::Mnist1,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Config::Wave100 => "wave-100",
            Config::Wave100OneHidden => "wave-100-1h",
            Config::Boston => "boston",
            Config::BostonOneHidden => "boston-1h",
            Config::Mnist1 => "mnist-1",
            Config::Mvn100 => "mvn-100",
            Config::Hier10M5 => "hier-10-m5",
            Config::Hier10M20 => "hier-10-m20",
        }
    }

    /// Parses a command-line name.
    ///
    /// # Errors
    /// An unknown name, listing the valid ones.
    pub fn parse(name: &str) -> Result<Config> {
        match Config::ALL.iter().find(|c| c.name() == name) {
            Some(c) => Ok(*c),
            None => bail!(
                "unknown config {name:?}; valid configs: {}",
                Config::ALL.map(Config::name).join(", ")
            ),
        }
    }

    /// m, the number of Stein particles.
    pub fn particles(self) -> usize {
        match self {
            Config::Mvn100 | Config::Hier10M20 => 20,
            _ => 5,
        }
    }

    /// S, the ELBO draws per particle of SMI.
    pub fn smi_draws(self) -> usize {
        match self {
            Config::Mnist1 | Config::Hier10M5 | Config::Hier10M20 => 10,
            _ => 100,
        }
    }

    /// Mini-batch size drawn by the engine (`None`: full data, or shared rows for MNIST).
    pub fn engine_batch(self) -> Option<usize> {
        match self {
            Config::Boston | Config::BostonOneHidden => Some(100),
            _ => None,
        }
    }

    /// Rows of the shared batch passed to every step (MNIST's epoch batches).
    pub fn shared_batch(self) -> Option<usize> {
        match self {
            Config::Mnist1 => Some(128),
            _ => None,
        }
    }

    /// Data rows one draw is evaluated on (0 for the data-free MVN).
    pub fn rows_per_draw(self) -> usize {
        match self {
            Config::Wave100 | Config::Wave100OneHidden => 40,
            Config::Boston | Config::BostonOneHidden => 100,
            Config::Mnist1 => 128,
            Config::Mvn100 | Config::Hier10M5 | Config::Hier10M20 => 0,
        }
    }

    /// Layer widths of the network (`None` for MVN).
    pub fn sizes(self) -> Option<Vec<usize>> {
        match self {
            Config::Wave100 => Some(vec![1, 100, 100, 1]),
            Config::Wave100OneHidden => Some(vec![1, 100, 1]),
            Config::Boston => Some(vec![13, 50, 50, 1]),
            Config::BostonOneHidden => Some(vec![13, 50, 1]),
            Config::Mnist1 => Some(vec![784, 100, 10]),
            Config::Mvn100 | Config::Hier10M5 | Config::Hier10M20 => None,
        }
    }

    /// Multiply-adds of one forward pass of one draw (the network's matrix products,
    /// rows × Σ_l n_in·n_out; the data-free targets count d).
    pub fn forward_macs_per_draw(self) -> f64 {
        match self.sizes() {
            Some(s) => {
                let per_row: usize = s.windows(2).map(|w| w[0] * w[1]).sum();
                (self.rows_per_draw() * per_row) as f64
            }
            None => self.build_dim() as f64,
        }
    }

    /// d of the data-free targets (MVN: 100, the funnel: 10; 0 for the networks).
    fn build_dim(self) -> usize {
        match self {
            Config::Mvn100 => 100,
            Config::Hier10M5 | Config::Hier10M20 => 10,
            _ => 0,
        }
    }

    /// Builds the model on synthetic data of the configuration's shape (fixed seed).
    ///
    /// # Errors
    /// From the model constructors (not expected for these shapes).
    pub fn build(self) -> Result<Model> {
        let mut rng = ChaCha8Rng::seed_from_u64(SEED);
        let model = match self {
            Config::Wave100 | Config::Wave100OneHidden => {
                let n = 40;
                let x = Matrix::from_fn(n, 1, |i, _| -1.6 + 3.4 * i as f64 / (n - 1) as f64);
                let y = (0..n)
                    .map(|i| {
                        let v = x.get(i, 0);
                        (3.0 * v).sin() + 0.1 * v + 0.1 * rng.random_range(-1.0..1.0)
                    })
                    .collect();
                let sizes = self.sizes().unwrap_or_default();
                let mlp = Mlp::new(&sizes, Activation::Tanh)?;
                Model::Regression(BnnRegression::new(mlp, x, y, Noise::Fixed(0.1))?)
            }
            Config::Boston | Config::BostonOneHidden => {
                let (n, p) = (455, 13);
                let x = Matrix::from_fn(n, p, |_, _| rng.random_range(-1.7..1.7));
                let w: Vec<f64> = (0..p).map(|_| rng.random_range(-1.0..1.0)).collect();
                let y = (0..n)
                    .map(|i| {
                        let lin: f64 = x.row(i).iter().zip(&w).map(|(a, b)| a * b).sum();
                        lin.tanh() + 0.3 * rng.random_range(-1.0..1.0)
                    })
                    .collect();
                let sizes = self.sizes().unwrap_or_default();
                let mlp = Mlp::new(&sizes, Activation::Relu)?;
                Model::Regression(BnnRegression::new(mlp, x, y, Noise::uci())?)
            }
            Config::Mnist1 => {
                let (n, p) = (60_000, 784);
                // Pixel-like inputs in [0, 1) (dense: the products do not exploit zeros).
                let x = Matrix::from_fn(n, p, |_, _| rng.random::<f64>());
                let labels = (0..n).map(|_| rng.random_range(0..10)).collect();
                Model::Classifier(BnnClassifier::mnist(x, labels, 1)?)
            }
            Config::Mvn100 => Model::Normal(DiagNormal::standard(100)?),
            Config::Hier10M5 | Config::Hier10M20 => Model::Funnel(Funnel::new(10)?),
        };
        Ok(model)
    }
}

/// The methods of the benchmark table (every variational method; NUTS has no step to time).
pub const METHODS: [Method; 5] = Method::VARIATIONAL;

/// Parses a benchmark method name.
///
/// # Errors
/// An unknown name, or NUTS, listing the valid ones.
pub fn parse_method(name: &str) -> Result<Method> {
    let m: Method = name.parse()?;
    if m == Method::Nuts {
        bail!("NUTS has no step to time; valid methods: smi, svgd, asvgd, ovi, map");
    }
    Ok(m)
}

/// The name of a gradient-reuse mode.
pub fn reuse_name(r: GradientReuse) -> &'static str {
    match r {
        GradientReuse::Shared => "shared",
        GradientReuse::PerPair => "per_pair",
    }
}

/// Parses `shared` / `per_pair`.
///
/// # Errors
/// Any other value, listing the valid ones.
pub fn parse_reuse(name: &str) -> Result<GradientReuse> {
    match name {
        "shared" => Ok(GradientReuse::Shared),
        "per_pair" | "per-pair" => Ok(GradientReuse::PerPair),
        _ => bail!("unknown --reuse {name:?}; valid values: shared, per_pair"),
    }
}

/// One benchmark line: a configuration, a method, the gradient reuse and S.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Case {
    /// The configuration.
    pub config: Config,
    /// The method.
    pub method: Method,
    /// Gradient reuse (Stein engines only).
    pub reuse: GradientReuse,
    /// S, ELBO draws per particle (1 for SVGD, ASVGD, OVI, MAP).
    pub draws: usize,
    /// m, the particles of the Stein engines (the configuration's by default; OVI and MAP
    /// have one).
    pub m: usize,
}

impl Case {
    /// A case with the configuration's defaults; `draws` overrides S for SMI and OVI,
    /// `particles` m for the Stein engines (SMI, SVGD, ASVGD).
    ///
    /// # Errors
    /// `per_pair` or `particles` with a non-Stein method; zero draws or particles.
    pub fn new(
        config: Config,
        method: Method,
        reuse: GradientReuse,
        draws: Option<usize>,
        particles: Option<usize>,
    ) -> Result<Case> {
        if reuse == GradientReuse::PerPair && !method.is_stein() {
            bail!(
                "--reuse per_pair applies to the Stein engines (smi, svgd, asvgd), not {}",
                method.name()
            );
        }
        let default = match method {
            Method::Smi => config.smi_draws(),
            _ => 1,
        };
        let draws = match (method, draws) {
            (Method::Smi | Method::Ovi, Some(s)) => s,
            (_, Some(s)) if s != 1 => bail!(
                "--draws applies to smi and ovi; {} uses one draw per particle",
                method.name()
            ),
            _ => default,
        };
        if draws == 0 {
            bail!("--draws must be at least 1");
        }
        let m = match particles {
            Some(_) if !method.is_stein() => bail!(
                "--particles applies to the Stein engines (smi, svgd, asvgd); {} has one",
                method.name()
            ),
            Some(0) => bail!("--particles must be at least 1"),
            Some(m) => m,
            None => config.particles(),
        };
        Ok(Case {
            config,
            method,
            reuse,
            draws,
            m,
        })
    }

    /// Every line of the benchmark table (`smi bench --all`), in order.
    pub fn table() -> Vec<Case> {
        use GradientReuse::{PerPair, Shared};
        use Method::{Asvgd, Map, Ovi, Smi, Svgd};
        let mut out = Vec::new();
        let mut push = |config, method, reuse, draws| {
            out.push(Case {
                config,
                method,
                reuse,
                draws,
                m: Config::particles(config),
            })
        };
        push(Config::Mvn100, Smi, Shared, 100);
        push(Config::Mvn100, Smi, PerPair, 100);
        push(Config::Mvn100, Svgd, Shared, 1);
        push(Config::Mvn100, Asvgd, Shared, 1);
        push(Config::Hier10M5, Smi, Shared, 10);
        push(Config::Hier10M20, Smi, Shared, 10);
        for c in [Config::Wave100OneHidden, Config::BostonOneHidden] {
            push(c, Smi, Shared, 100);
            push(c, Smi, PerPair, 100);
            push(c, Svgd, Shared, 1);
            push(c, Asvgd, Shared, 1);
            push(c, Ovi, Shared, 1);
            push(c, Map, Shared, 1);
        }
        push(Config::Wave100, Smi, Shared, 100);
        push(Config::Wave100, Svgd, Shared, 1);
        push(Config::Boston, Smi, Shared, 100);
        push(Config::Boston, Svgd, Shared, 1);
        push(Config::Boston, Ovi, Shared, 1);
        push(Config::Boston, Map, Shared, 1);
        push(Config::Mnist1, Smi, Shared, 10);
        push(Config::Mnist1, Smi, Shared, 55);
        out
    }

    /// m (1 for OVI and MAP).
    pub fn particles(&self) -> usize {
        if self.method.is_stein() {
            self.m
        } else {
            1
        }
    }

    /// K, the draws of one model call per step.
    pub fn draws_per_step(&self) -> usize {
        let m = self.particles();
        let groups = match self.reuse {
            GradientReuse::Shared => 1,
            GradientReuse::PerPair => m,
        };
        groups * m * self.draws
    }

    /// Model flops of one step: 2 flops per multiply-add, forward + backward = 3 × forward,
    /// times K draws (see BENCHMARKS.md).
    pub fn model_flops(&self) -> f64 {
        let k = self.draws_per_step() as f64;
        if self.config == Config::Mvn100 {
            // DiagNormal: ≈ 4 flops per coordinate (residual, square, accumulate, gradient).
            return 4.0 * k * self.config.forward_macs_per_draw();
        }
        2.0 * 3.0 * k * self.config.forward_macs_per_draw()
    }

    /// Flops of the rest of the step: the mixture density of the Normal guide (four K×d×m
    /// products) and the kernel (squared distances, attraction: ≈ 2·m²·p multiply-adds per
    /// group of gradients).
    pub fn other_flops(&self, d: usize) -> f64 {
        let (k, m) = (self.draws_per_step() as f64, self.particles() as f64);
        let d = d as f64;
        let p = if self.method.is_point_mass() {
            d
        } else {
            2.0 * d
        };
        let mixture = if self.method == Method::Smi {
            2.0 * 4.0 * k * d * m
        } else {
            0.0
        };
        let groups = k / (m * self.draws as f64);
        let kernel = if self.method.is_stein() {
            2.0 * m * m * p * (1.0 + groups)
        } else {
            0.0
        };
        mixture + kernel
    }

    /// The engine of this case over `model`.
    ///
    /// # Errors
    /// From the engine constructors.
    pub fn engine<'a>(&self, model: &'a dyn LogDensity) -> Result<Box<dyn Engine + 'a>> {
        Ok(self.settings()?.build(model)?)
    }

    /// The engine of this case on `device`: [`Case::engine`] on the CPU; on a GPU the
    /// [`smi_models::cuda`] engine (SMI with shared gradients on the BNN configurations; needs
    /// the `cuda` feature); `host_update` as [`crate::device::engine_on`].
    ///
    /// # Errors
    /// From the engine constructors; a case without a GPU path; no CUDA backend in this build,
    /// no driver or no such device (the message says which).
    pub fn engine_on<'a>(
        &self,
        model: &'a Model,
        device: Device,
        host_update: bool,
    ) -> Result<Box<dyn Engine + 'a>> {
        if device == Device::Cpu {
            return self.engine(model.density());
        }
        let Some(net) = model.net() else {
            bail!(
                "--device {device} runs the network configurations (wave, boston, mnist); {} \
                 has no GPU model",
                self.config.name()
            );
        };
        crate::device::engine_on(
            self.method.name(),
            &self.settings()?,
            net,
            device,
            host_update,
        )
    }

    /// The mean time of each phase of `steps` GPU steps of this case on CUDA device `ordinal`
    /// ([`crate::device::profile_gpu_steps`]; `rows(t)` the shared rows of step t).
    ///
    /// # Errors
    /// A case without a GPU path; the errors of [`Case::engine_on`].
    pub fn profile_on<'r>(
        &self,
        model: &Model,
        ordinal: usize,
        host_update: bool,
        steps: usize,
        rows: &dyn Fn(usize) -> Option<&'r [usize]>,
    ) -> Result<Vec<(String, f64)>> {
        let Some(net) = model.net() else {
            bail!("{} has no GPU model to profile", self.config.name());
        };
        crate::device::profile_gpu_steps(&self.settings()?, net, ordinal, host_update, steps, rows)
    }

    /// The method settings of this case (the benchmark's optimizer, m, S, batch and seed).
    ///
    /// # Errors
    /// NUTS, which has no step to time.
    pub fn settings(&self) -> Result<MethodSettings> {
        let batch = self.config.engine_batch();
        let mut settings = self
            .method
            .preset(1000)
            .with_particles(self.m)
            .with_batch_size(batch)
            .with_optimizer(bench_optimizer(self.method))
            .with_seed(SEED);
        match &mut settings {
            MethodSettings::Stein(s) => {
                s.num_elbo_particles = self.draws;
                s.gradient_reuse = self.reuse;
                // SVGD/ASVGD on NumPyro's target, without the log-Jacobian
                // (SteinSettings::svgd_numpyro_parity).
                s.jacobian = !self.method.is_point_mass();
            }
            MethodSettings::Svi(s) => s.num_elbo_particles = self.draws,
            MethodSettings::Nuts(_) => bail!("NUTS has no step to time"),
        }
        Ok(settings)
    }

    /// NumPyro 0.22 (JAX CPU) ms per step on this machine class, from the benchmark issue
    /// (`bench/references.json`), at the configuration's default m and S. NumPyro's SMI
    /// recomputes the force for every particle pair (m²·S model evaluations).
    pub fn numpyro_ms(&self) -> Option<f64> {
        let v = references::numpyro_ms(self.config.name(), self.method.name())?;
        let default_draws = match self.method {
            Method::Smi => self.config.smi_draws(),
            _ => 1,
        };
        (self.draws == default_draws && self.m == self.config.particles()).then_some(v)
    }

    /// The target of this line (`bench/references.json`): a description and whether
    /// `ms` (and `gflops` against the GEMM peak) meets it; `None` when the line has no target.
    pub fn target(&self, ms: f64, gflops: f64, peak: f64) -> Option<(String, bool)> {
        let rule = references::target_rule(
            self.config.name(),
            self.method.name(),
            reuse_name(self.reuse),
        )?;
        if let Some(f) = rule.gemm_peak_fraction {
            return Some((
                format!("≥ {:.0} % of GEMM peak", 100.0 * f),
                gflops >= f * peak,
            ));
        }
        let need = rule.numpyro_speedup?;
        let speedup = self.numpyro_ms()? / ms;
        Some((format!("≥ {need}× NumPyro"), speedup >= need))
    }
}

/// A built model and, for MNIST, the shuffled row order its shared batches come from.
pub enum Model {
    /// Wave and UCI networks.
    Regression(BnnRegression),
    /// The MNIST network.
    Classifier(BnnClassifier),
    /// The standard normal.
    Normal(DiagNormal),
    /// Neal's funnel.
    Funnel(Funnel),
}

impl Model {
    /// The model as a built-in network, the models with a GPU path (`None` for the others).
    pub fn net(&self) -> Option<Net<'_>> {
        match self {
            Model::Regression(m) => Some(Net::Regression(m)),
            Model::Classifier(m) => Some(Net::Classifier(m)),
            Model::Normal(_) | Model::Funnel(_) => None,
        }
    }

    /// The model as a log density.
    pub fn density(&self) -> &dyn LogDensity {
        match self {
            Model::Regression(m) => m,
            Model::Classifier(m) => m,
            Model::Normal(m) => m,
            Model::Funnel(m) => m,
        }
    }
}

/// A fixed shuffle of `0..n` (MNIST's epoch order).
pub fn epoch_order(n: usize) -> Vec<usize> {
    let mut rng = ChaCha8Rng::seed_from_u64(SEED ^ 0x5eed);
    let mut v: Vec<usize> = (0..n).collect();
    v.shuffle(&mut rng);
    v
}
