//! MNIST classification with 1- and 2-hidden-layer Bayesian neural networks (docs/algorithms.md §7.4): SMI,
//! SVGD, ASVGD, OVI and MAP trained on shuffled mini-batches for a number of epochs, evaluated
//! on the test images with the paper's per-draw metrics (docs/algorithms.md §8). Records go to
//! `<out>/mnist.jsonl`, the paper's Table 4 to `<out>/mnist.md`.
//!
//! Every (layer count, method) pair is a unit. A unit whose key (layers, method, config) already
//! has a record that is not marked failed is skipped; a unit whose checkpoint another run sharing
//! the output folder holds (its lock file in `<out>/locks/`) is skipped too. While a unit trains, its state is saved at the end of every epoch to
//! `<out>/checkpoints/mnist-<layers>-<method>.json` (the engine's [`State`]: particles,
//! optimizer moments, RNG, step counter) next to `mnist-<layers>-<method>.progress.json` (step,
//! epoch, training seconds so far, the training configuration: the core's
//! [`smi::FileCheckpoint`] and its sidecar); a rerun with the
//! same training configuration continues from there. A gzipped copy of the state,
//! `mnist-<layers>-<method>.json.gz`, is written beside it every epoch: with the progress file it
//! is what a repository of records keeps (runs/README.md), and where the state itself is missing
//! a rerun writes it back from the copy and continues.

mod evaluate;
use evaluate::{evaluate, METRICS};
mod paper_table;
mod report;
mod train;

pub use report::report;
use train::train;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use clap::ArgAction;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Map, Value};
use smi::metrics::{
    argmax_accuracy_per_draw, brier_per_draw, nll_per_draw, paper_calibration_per_draw,
    sampled_accuracy_confidence, standard_calibration_per_draw, ClassProbs, PAPER_BINS,
};
use smi::metrics::{not_worse_than_best, Better, MeanStd, PAPER_ALPHA};
use smi::{
    AttractionNorm, Engine, EpochEnd, Epochs, GuideSettings, Init, LogDensity, Matrix, Method,
    MethodSettings, Mixture, NumpyroDefect, Observer, OptimizerSettings, Progress, RowSource,
    RunSettings, Schedule, State,
};
use smi_data::Mnist;
use smi_models::BnnClassifier;

use crate::device::Net;
use crate::locks;
use crate::records;
use crate::records::{attraction_suffix, changed, defect_suffix};
use crate::tables;
use smi_fit::limits;
use smi_fit::progress::Bar;
use smi_models::Device;

/// Name of the records file (`mnist.jsonl`) and of the report (`mnist.md`).
pub const EXPERIMENT: &str = "mnist";
/// Mini-batch size; the last incomplete batch of an epoch is dropped (docs/algorithms.md §7.4).
pub const BATCH_SIZE: usize = 128;
/// Particles of SMI, SVGD and ASVGD.
pub const PARTICLES: usize = 5;
/// SMI's ELBO draws per particle and step (S).
pub const SMI_ELBO_DRAWS: usize = 55;
/// The initial scale σ₀ of SMI's Normal guides.
pub const SMI_INIT_SCALE: f64 = 0.1;
/// Adam learning rate of OVI and MAP.
pub const ADAM_LR: f64 = 1e-3;
/// The paper's seed.
pub const PAPER_SEED: u64 = 142;
/// Number of classes.
const CLASSES: usize = 10;
/// Predictive draws evaluated per forward pass (bounds the memory of the evaluation).
const EVAL_CHUNK: usize = 5;
/// RNG stream of the evaluation (predictive draws and sampled labels); the shuffle of epoch e
/// uses stream e + 1.
const EVAL_STREAM: u64 = u64::MAX;
/// `--quick`: training images, test images, ELBO draws of SMI, predictive draws.
const QUICK_TRAIN: usize = 512;
const QUICK_TEST: usize = 1000;
const QUICK_ELBO_DRAWS: usize = 10;
const QUICK_DRAWS: usize = 5;

/// SMI/SVGD/ASVGD's Adagrad learning rate for a network with `layers` hidden layers.
pub fn adagrad_lr(layers: usize) -> f64 {
    if layers == 1 {
        0.7
    } else {
        0.8
    }
}

/// Options of `smi reproduce mnist`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_long_help = AFTER_HELP)]
pub struct Args {
    /// Hidden layers of width 100: `1`, `2` or `both` [default: both; with --quick: 1].
    #[arg(long)]
    pub layers: Option<String>,
    /// Training epochs [default: 100; with --quick: 1].
    #[arg(long)]
    pub epochs: Option<u64>,
    /// Methods, comma-separated, or `all` (smi, svgd, asvgd, ovi, map) [default: all].
    #[arg(long)]
    pub methods: Option<String>,
    /// Predictive draws for SMI and OVI; MAP's single point is evaluated this many times (its
    /// sampled labels differ); SVGD/ASVGD use their 5 particles [default: 50; with --quick: 5].
    #[arg(long)]
    pub draws: Option<usize>,
    /// SMI's ELBO draws per particle and step, S [default: 55; with --quick: 10]. A value other
    /// than the default enters SMI's training key and its file names (`-S=S`).
    #[arg(long)]
    pub elbo_draws: Option<usize>,
    /// SMI's number of particles m, for an ablation of the paper's settings [default: 5]. A
    /// value other than the default enters SMI's training key and its file names (`-m=M`), so
    /// its run sits beside the paper's; SVGD and ASVGD keep 5.
    #[arg(long, value_name = "M")]
    pub particles: Option<usize>,
    /// SMI's likelihood temperature τ, multiplying the model's log density in the attraction
    /// (τ < 1 tempers the posterior, τ > 1 sharpens it), for an ablation [default: 1]. A value
    /// other than the default enters SMI's training key and its file names (`-tau=T`).
    #[arg(long, value_name = "TAU")]
    pub loss_temperature: Option<f64>,
    /// SMI's initial guide scale σ₀, for an ablation [default: 0.1]. A value other than the
    /// default enters SMI's training key and its file names (`-scale0=S`).
    #[arg(long, value_name = "SCALE")]
    pub init_scale: Option<f64>,
    /// SMI's factor c on the guide scales' own step, for an ablation: after each optimizer step
    /// ρ moves c times as far as the step, the locations by the step itself [default: 1].
    /// A value other than the default enters SMI's training key and its file names
    /// (`-scale_lr=C`); the CUDA engine refuses it.
    #[arg(long, value_name = "C")]
    pub scale_lr_factor: Option<f64>,
    /// SMI's Adagrad learning rate, for an ablation [default: 0.7 for 1 hidden layer, 0.8 for
    /// 2]. A value other than the default enters SMI's training key and its file names
    /// (`-lr=LR`); SVGD and ASVGD keep the paper's rate.
    #[arg(long, value_name = "LR")]
    pub lr: Option<f64>,
    /// Cut every epoch after this many steps (a full epoch is ⌊N/128⌋ = 468 steps); for timing
    /// runs that extrapolate to full epochs.
    #[arg(long)]
    pub max_steps_per_epoch: Option<u64>,
    /// Use only the first N training images [default: all 60 000; with --quick: 512].
    #[arg(long)]
    pub train_size: Option<usize>,
    /// Use only the first N test images [default: all 10 000; with --quick: 1000].
    #[arg(long)]
    pub test_size: Option<usize>,
    /// Data directory holding `mnist/` [default: $SMI_DATA_DIR, else the per-user folder
    /// (~/.local/share/smi) if it exists, else the repository's sibling shared/data; see
    /// `smi data`].
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Output folder for `mnist.jsonl`, `mnist.md` and `checkpoints/`.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Seed of the engines, the epoch shuffles and the evaluation.
    #[arg(long, default_value_t = PAPER_SEED)]
    pub seed: u64,
    /// SMI's attraction normalisation: `paper` (1/m, the paper's update; default) or `numpyro`
    /// (no 1/m, as in NumPyro 0.16–0.22, which the paper's MNIST runs used; docs/algorithms.md §2.8). Only a
    /// non-default value enters the training key.
    #[arg(long, default_value = "paper")]
    pub attraction: AttractionNorm,
    /// Reproduce a NumPyro defect in SMI, to test whether it explains a published number
    /// (docs/algorithms.md §2.8, §2.9): `double-transform` (NumPyro 0.16–0.22, which the
    /// paper's MNIST runs used) or `no-chain-rule` (NumPyro before #1883). A diagnostic switch,
    /// never for inference; it enters SMI's training key.
    #[arg(long, value_name = "DEFECT")]
    pub defect: Option<NumpyroDefect>,
    /// Where SMI's training runs: `cpu`, or `cuda` / `cuda:N` (the GPU engine, SMI only; needs
    /// a build with `--features cuda`, an NVIDIA driver and a GPU; docs/cuda.md). A GPU run's
    /// training key gains `device=cuda` (its random streams differ from the CPU's); the
    /// evaluation runs on the CPU.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Continue from `<out>/checkpoints/` when a checkpoint of the same training configuration
    /// exists (`--resume false` starts afresh and overwrites it).
    #[arg(long, default_value_t = true, action = ArgAction::Set)]
    pub resume: bool,
    /// Smoke test for CI: 512 training and 1000 test images, 1 epoch (4 steps), 1 hidden layer,
    /// S = 10, 5 predictive draws, all five methods; finishes in seconds.
    #[arg(long)]
    pub quick: bool,
}

const AFTER_HELP: &str = "\
Model and methods (docs/algorithms.md §7.4): 784 → 100 (→ 100) → 10 network with tanh hidden layers, N(0, 1) \
priors on every weight and bias, categorical likelihood; pixels scaled to [0, 1]. Batches of 128 \
images, the remainder dropped (468 steps per epoch), the likelihood scaled by N/128. Each epoch \
the training images are reshuffled by this program's own seeded shuffle (ChaCha8 keyed by \
--seed, stream epoch + 1, Fisher–Yates), the same order for every method; TensorFlow Datasets' \
10 000-element shuffle buffer is not reproduced. SMI: 5 Normal particles (init Uniform(−2, 2), \
scale 0.1), S = 55, Adagrad(0.7 for 1 layer, 0.8 for 2 layers). SVGD/ASVGD: 5 point particles \
(init: median of 15 prior draws), the same Adagrad; ASVGD's cyclical schedule runs over the \
total number of steps (epochs × steps per epoch). OVI (Normal guide, init as SMI) and MAP \
(point, init as SVGD): Adam(1e-3), one draw per step.

Evaluation: --draws predictive draws (SMI: mixture draws; OVI: guide draws; SVGD/ASVGD: the 5 \
particles; MAP: its one point, --draws times), each metric per draw, then mean ± std (ddof 0) \
over draws: Conf and Acc with sampled labels, NLL, Brier, the paper's unweighted 100-bin ECE/MCE \
(with its empty-bin rule), plus argmax accuracy and the count-weighted ECE/MCE.

Resuming: after every epoch the engine state is saved to \
<out>/checkpoints/mnist-<layers>-<method>.json and the step, epoch and training time \
to mnist-<layers>-<method>.progress.json, with a gzipped copy of the state \
(mnist-<layers>-<method>.json.gz); rerunning the same command continues an interrupted \
unit from its last finished epoch (asking for more epochs continues a finished one), also on \
another machine that has only the copy and the progress file (the state is written back from \
the copy). A unit \
whose record (layers, method, config) is already in <out>/mnist.jsonl is skipped. A unit whose \
metrics are not finite is recorded with status \"failed\" and its reason: it does not count as \
done (the next run retries it) and the report ignores it. Runs sharing one --out split the work: \
a unit trains under a lock file in <out>/locks/ (one per checkpoint); a unit locked by another \
run is skipped by this one.

Records (mnist.jsonl): experiment, layers, method, seed, epochs, steps, seconds, config, version, \
and metrics.{acc, conf, nll, brier, ece, mce, each with *_std; acc_argmax, ece_weighted, \
mce_weighted (with *_std); seconds_per_epoch, seconds_per_step, seconds_per_full_epoch, \
per_draw.{acc, conf, nll, brier, ece, mce, acc_argmax, ece_weighted, mce_weighted}}.";

/// The row order of the paper's Table 4.
const TABLE: [Method; 5] = [
    Method::Smi,
    Method::Asvgd,
    Method::Map,
    Method::Ovi,
    Method::Svgd,
];

/// The resolved options of a run.
#[derive(Clone, Debug)]
struct Plan {
    layers: Vec<usize>,
    methods: Vec<Method>,
    epochs: u64,
    draws: usize,
    elbo_draws: usize,
    /// The default S of the run's mode (55, or 10 with `--quick`): another S tags SMI's files.
    default_elbo_draws: usize,
    /// SMI's particles m.
    particles: usize,
    /// SMI's likelihood temperature τ (1: the paper's).
    loss_temperature: f64,
    /// SMI's initial guide scale σ₀ ([`SMI_INIT_SCALE`]: the paper's).
    init_scale: f64,
    /// SMI's factor on the guide scales' step (1: the paper's).
    scale_lr_factor: f64,
    /// SMI's Adagrad rate (`None`: the paper's, [`adagrad_lr`]).
    lr: Option<f64>,
    max_steps_per_epoch: Option<u64>,
    train_size: Option<usize>,
    test_size: Option<usize>,
    data_dir: PathBuf,
    out: PathBuf,
    seed: u64,
    resume: bool,
    attraction: AttractionNorm,
    defect: Option<NumpyroDefect>,
    /// Where SMI's training runs.
    device: Device,
    progress: bool,
}

impl Plan {
    fn new(args: &Args) -> Result<Self> {
        let q = args.quick;
        let layers = match &args.layers {
            Some(s) => parse_layers(s)?,
            None if q => vec![1],
            None => vec![1, 2],
        };
        let methods = match &args.methods {
            Some(s) => parse_methods(s)?,
            None => Method::VARIATIONAL.to_vec(),
        };
        let device = crate::device::parse_for(&args.device, methods.iter().map(|m| m.name()))?;
        let epochs = args.epochs.unwrap_or(if q { 1 } else { 100 });
        if epochs == 0 {
            bail!("--epochs must be at least 1");
        }
        let draws = args.draws.unwrap_or(if q { QUICK_DRAWS } else { 50 });
        if draws == 0 {
            bail!("--draws must be at least 1");
        }
        let default_elbo_draws = if q { QUICK_ELBO_DRAWS } else { SMI_ELBO_DRAWS };
        let elbo_draws = args.elbo_draws.unwrap_or(default_elbo_draws);
        if elbo_draws == 0 {
            bail!("--elbo-draws must be at least 1");
        }
        let particles = args.particles.unwrap_or(PARTICLES);
        if particles == 0 {
            bail!("--particles must be at least 1");
        }
        let loss_temperature = args.loss_temperature.unwrap_or(1.0);
        if !(loss_temperature > 0.0 && loss_temperature.is_finite()) {
            bail!("--loss-temperature {loss_temperature}: τ must be positive and finite");
        }
        let init_scale = args.init_scale.unwrap_or(SMI_INIT_SCALE);
        if !(init_scale > 0.0 && init_scale.is_finite()) {
            bail!(
                "--init-scale {init_scale}: the guide's initial scale must be positive and finite"
            );
        }
        let scale_lr_factor = args.scale_lr_factor.unwrap_or(1.0);
        if !(scale_lr_factor > 0.0 && scale_lr_factor.is_finite()) {
            bail!("--scale-lr-factor {scale_lr_factor}: the factor must be positive and finite");
        }
        if let Some(lr) = args.lr {
            if !(lr > 0.0 && lr.is_finite()) {
                bail!("--lr {lr}: the learning rate must be positive and finite");
            }
        }
        if args.max_steps_per_epoch == Some(0) {
            bail!("--max-steps-per-epoch must be at least 1");
        }
        let train_size = args.train_size.or(q.then_some(QUICK_TRAIN));
        if let Some(n) = train_size {
            if n < BATCH_SIZE {
                bail!("--train-size {n} is smaller than one batch of {BATCH_SIZE} images");
            }
        }
        let test_size = args.test_size.or(q.then_some(QUICK_TEST));
        if test_size == Some(0) {
            bail!("--test-size must be at least 1");
        }
        check_sizes(
            &layers,
            &methods,
            draws,
            (elbo_draws, particles),
            limits::machine_memory(),
        )?;
        Ok(Plan {
            layers,
            methods,
            epochs,
            draws,
            elbo_draws,
            default_elbo_draws,
            particles,
            loss_temperature,
            init_scale,
            scale_lr_factor,
            lr: args.lr,
            max_steps_per_epoch: args.max_steps_per_epoch,
            train_size,
            test_size,
            data_dir: args
                .data_dir
                .clone()
                .unwrap_or_else(smi_data::default_data_dir),
            out: args.out.clone(),
            seed: args.seed,
            resume: args.resume,
            attraction: args.attraction,
            defect: args.defect,
            device,
            progress: std::env::var_os("SMI_NO_PROGRESS").is_none(),
        })
    }

    /// Steps per epoch on `n` training images.
    fn steps_per_epoch(&self, n: usize) -> u64 {
        epochs(self, n).steps_per_epoch()
    }

    /// Training steps of a unit on `n` images (epochs × steps per epoch).
    ///
    /// # Errors
    /// The product overflows 64 bits (an absurd `--epochs`).
    fn total_steps(&self, n: usize) -> Result<u64> {
        let spe = self.steps_per_epoch(n);
        self.epochs.checked_mul(spe).ok_or_else(|| {
            anyhow!(
                "--epochs {}: {} epochs × {spe} steps per epoch is more steps than a 64-bit \
                 counter holds",
                self.epochs,
                self.epochs
            )
        })
    }

    /// Everything that determines the training trajectory step by step (the checkpoint key):
    /// the config without the epoch count (except for ASVGD, whose schedule spans the run) and
    /// without the evaluation settings.
    fn train_key(&self, layers: usize, method: Method, n: usize) -> String {
        let spe = self.steps_per_epoch(n);
        let opt = match method {
            Method::Smi => format!("adagrad({})", self.smi_lr(layers)),
            Method::Svgd | Method::Asvgd => format!("adagrad({})", adagrad_lr(layers)),
            // (MNIST has no NUTS run: `parse_methods` and `run_unit` refuse it.)
            Method::Ovi | Method::Map | Method::Nuts => format!("adam({ADAM_LR})"),
        };
        let guide = match method {
            Method::Smi => format!(
                "m={} S={} normal(init=uniform(2),scale={}){}{}{}{}{}",
                self.particles,
                self.elbo_draws,
                self.init_scale,
                changed(" ", "tau", self.loss_temperature, 1.0),
                changed(" ", "scale_lr", self.scale_lr_factor, 1.0),
                attraction_suffix(self.attraction, " "),
                defect_suffix(self.defect, " "),
                match self.device {
                    Device::Cpu => "",
                    Device::Cuda(_) => " device=cuda",
                }
            ),
            Method::Svgd => format!("m={PARTICLES} delta(init=median15)"),
            Method::Asvgd => format!(
                "m={PARTICLES} delta(init=median15) {}",
                schedule_label(asvgd_schedule(self.epochs.saturating_mul(spe)))
            ),
            Method::Ovi => "normal(init=uniform(2),scale=0.1) S=1".to_string(),
            Method::Map => "delta(init=median15)".to_string(),
            Method::Nuts => "nuts".to_string(),
        };
        format!(
            "layers={layers} width=100 tanh prior=N(0,1) train={n} batch={BATCH_SIZE} \
             steps_per_epoch={spe} shuffle=chacha8(seed,epoch) {opt} {guide} seed={}",
            self.seed
        )
    }

    /// What the names of a unit's state, progress and lock files gain: nothing for the paper's
    /// settings, the changed setting for SMI's variants (`-m=3`, `-S=10`, `-attraction=numpyro`,
    /// `-defect=double-transform`, …), so that variants can run beside each other and beside the
    /// paper's unit.
    pub(super) fn file_tag(&self, method: Method) -> String {
        if method != Method::Smi {
            return String::new();
        }
        let lr = self.lr.map_or(String::new(), |lr| format!("-lr={lr}"));
        format!(
            "{}{}{}{lr}{}{}{}{}{}",
            changed("-", "m", self.particles, PARTICLES),
            changed("-", "S", self.elbo_draws, self.default_elbo_draws),
            changed("-", "scale0", self.init_scale, SMI_INIT_SCALE),
            changed("-", "tau", self.loss_temperature, 1.0),
            changed("-", "scale_lr", self.scale_lr_factor, 1.0),
            attraction_suffix(self.attraction, "-"),
            defect_suffix(self.defect, "-"),
            match self.device {
                Device::Cpu => "",
                Device::Cuda(_) => "-device=cuda",
            }
        )
    }

    /// SMI's Adagrad rate for a network of `layers` hidden layers.
    fn smi_lr(&self, layers: usize) -> f64 {
        self.lr.unwrap_or_else(|| adagrad_lr(layers))
    }

    /// The record's config: the training key plus epochs and evaluation settings.
    fn config(&self, layers: usize, method: Method, n: usize, n_test: usize) -> String {
        format!(
            "{} epochs={} draws={} test={n_test}",
            self.train_key(layers, method, n),
            self.epochs,
            self.draws
        )
    }
}

/// Parameters of the network with `layers` hidden layers of width 100 (784 pixels, 10 classes).
fn network_dim(layers: usize) -> u64 {
    let hidden = (layers.max(1) - 1) as u64;
    784 * 100 + 100 + hidden * (100 * 100 + 100) + 100 * 10 + 10
}

/// Refuses `--draws` and `--elbo-draws` values whose arrays could not fit in `memory` bytes:
/// SMI and OVI hold draws × parameters numbers for their predictive draws, every method but
/// SVGD/ASVGD keeps each metric per draw (as a number and in the record's JSON), and SMI
/// evaluates S draws per particle and step.
fn check_sizes(
    layers: &[usize],
    methods: &[Method],
    draws: usize,
    (elbo_draws, particles): (usize, usize),
    memory: u64,
) -> Result<()> {
    let dim = layers.iter().map(|&l| network_dim(l)).max().unwrap_or(0);
    // A value as f64 and as a serde_json::Value in the record.
    let per_metric = METRICS.len() as u64 * (8 + 32);
    let per_draw = if methods
        .iter()
        .any(|m| matches!(m, Method::Smi | Method::Ovi))
    {
        Some(dim * 8 + per_metric)
    } else if methods.contains(&Method::Map) {
        Some(per_metric)
    } else {
        None
    };
    if let Some(per_draw) = per_draw {
        limits::check_memory(
            "--draws",
            &format!("{draws} predictive draws"),
            limits::product(&[draws as u64, per_draw]),
            memory,
        )?;
    }
    if methods.contains(&Method::Smi) {
        limits::check_memory(
            "--elbo-draws",
            &format!("S = {elbo_draws} ELBO draws for each of {particles} particles"),
            limits::product(&[elbo_draws as u64, particles as u64, dim, 8]),
            memory,
        )?;
    }
    Ok(())
}

/// ASVGD's cyclical schedule over `total` steps: C = 10 cycles, p = 10; runs shorter than 10
/// steps (only `--quick` ones) get C = `total` cycles, a single step the constant schedule.
fn asvgd_schedule(total: u64) -> Schedule {
    match total {
        0 | 1 => Schedule::Constant,
        t if t < 10 => Schedule::Cyclical {
            total_steps: t,
            num_cycles: t,
            transition_speed: 10.0,
        },
        t => Schedule::cyclical(t),
    }
}

fn schedule_label(s: Schedule) -> String {
    match s {
        Schedule::Constant => "constant".to_string(),
        Schedule::Cyclical {
            total_steps,
            num_cycles,
            transition_speed,
        } => format!("cyclical(T={total_steps},C={num_cycles},p={transition_speed})"),
    }
}

fn parse_layers(s: &str) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.to_ascii_lowercase().as_str() {
            "both" | "all" => out.extend([1, 2]),
            "1" => out.push(1),
            "2" => out.push(2),
            _ => bail!("--layers: expected 1, 2 or both, got {part:?}"),
        }
    }
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        bail!("--layers: expected 1, 2 or both");
    }
    Ok(out)
}

fn parse_methods(s: &str) -> Result<Vec<Method>> {
    let items: Vec<&str> = s
        .split(',')
        .flat_map(|p| {
            if p.trim().eq_ignore_ascii_case("all") {
                Method::VARIATIONAL.map(Method::name).to_vec()
            } else {
                vec![p]
            }
        })
        .collect();
    let out = Method::parse_list(&items).map_err(|e| anyhow!("--methods: {e}"))?;
    if out.contains(&Method::Nuts) {
        bail!("--methods: MNIST has no NUTS run; valid methods: smi, svgd, asvgd, ovi, map, all");
    }
    Ok(out)
}

/// The row source of training on `n` images: epochs of shuffled batches of [`BATCH_SIZE`]
/// (ChaCha8 keyed by the seed, stream epoch + 1, Fisher–Yates; the remainder dropped).
fn epochs(plan: &Plan, n: usize) -> Epochs {
    Epochs {
        num_rows: n,
        batch_size: BATCH_SIZE,
        max_steps_per_epoch: plan.max_steps_per_epoch,
        seed: plan.seed,
    }
}

/// Test images and labels.
struct TestSet {
    x: Matrix,
    labels: Vec<usize>,
}

fn record_key(r: &Map<String, Value>) -> Option<(u64, String, String)> {
    Some((
        records::get(r, "layers")?.as_u64()?,
        records::text(r, "method")?.to_string(),
        records::text(r, "config")?.to_string(),
    ))
}

/// Runs `smi reproduce mnist`.
pub fn run(args: &Args) -> Result<()> {
    let plan = Plan::new(args)?;
    std::fs::create_dir_all(&plan.out)
        .with_context(|| format!("cannot create {}", plan.out.display()))?;
    let data =
        Mnist::load_subset(&plan.data_dir, plan.train_size, plan.test_size).with_context(|| {
            format!(
                "cannot load MNIST from {} (get it with `smi data fetch mnist`, or point \
                 --data-dir or {} at a folder holding mnist/)",
                plan.data_dir.display(),
                smi_data::DATA_DIR_ENV
            )
        })?;
    let n = data.train.len();
    let n_test = data.test.len();
    if n < BATCH_SIZE {
        bail!("only {n} training images: fewer than one batch of {BATCH_SIZE}");
    }
    plan.total_steps(n)?;
    let done = done_keys(&records::read(&plan.out, EXPERIMENT)?);
    let pending: Vec<(usize, Method)> = plan
        .layers
        .iter()
        .flat_map(|&l| plan.methods.iter().map(move |&m| (l, m)))
        .filter(|&(l, m)| {
            let key = (l as u64, m.name().to_string(), plan.config(l, m, n, n_test));
            let skip = done.contains(&key);
            if skip {
                eprintln!(
                    "mnist {l}-layer {m}: already recorded with this configuration, skipping"
                );
            }
            !skip
        })
        .collect();
    let test = TestSet {
        x: Matrix::from_vec(n_test, data.test.pixels_per_image, data.test.images_f64())
            .context("bad test image matrix")?,
        labels: data.test.labels.iter().map(|&l| usize::from(l)).collect(),
    };
    let labels: Vec<usize> = data.train.labels.iter().map(|&l| usize::from(l)).collect();
    let (mut failed, mut busy) = (Vec::new(), 0);
    for &layers in &plan.layers {
        let units: Vec<Method> = pending
            .iter()
            .filter(|(l, _)| *l == layers)
            .map(|(_, m)| *m)
            .collect();
        if units.is_empty() {
            continue;
        }
        let x = Matrix::from_vec(n, data.train.pixels_per_image, data.train.images_f64())
            .context("bad training image matrix")?;
        let model = BnnClassifier::mnist(x, labels.clone(), layers)
            .context("cannot build the MNIST network")?;
        for method in units {
            let label = format!("mnist {layers}-layer {method}");
            let key = (
                layers as u64,
                method.name().to_string(),
                plan.config(layers, method, n, n_test),
            );
            // One lock per checkpoint: runs sharing the folder never train the same one.
            let Some(_lock) = locks::try_lock(
                &plan.out,
                &format!("{EXPERIMENT}-{layers}-{method}{}", plan.file_tag(method)),
                &format!("{layers}|{method}"),
            )?
            else {
                busy += 1;
                eprintln!(
                    "{label}: locked by another run on {} (its checkpoint is in use); skipped",
                    plan.out.display()
                );
                continue;
            };
            // Another run may have finished it since this one read the records.
            if done_keys(&records::read(&plan.out, EXPERIMENT)?).contains(&key) {
                eprintln!("{label}: recorded by another run meanwhile; not repeating it");
                continue;
            }
            let mut rec = run_unit(&plan, &model, layers, method, &test)
                .with_context(|| format!("{label} failed"))?;
            if let Some(reason) = records::fail_if_non_finite(&mut rec) {
                eprintln!("error: {label} failed (recorded as failed): {reason}");
                failed.push(label);
            }
            records::append(&plan.out, EXPERIMENT, rec)?;
        }
    }
    report(&plan.out)?;
    eprintln!(
        "records: {}; table: {}",
        records::path(&plan.out, EXPERIMENT).display(),
        plan.out.join("mnist.md").display()
    );
    if busy > 0 {
        eprintln!("mnist: {busy} units skipped (locked by another run)");
    }
    if !failed.is_empty() {
        bail!(
            "{} MNIST units failed ({}): their metrics are not finite; rerun to retry them",
            failed.len(),
            failed.join(", ")
        );
    }
    Ok(())
}

/// The keys of the records that mark their unit as done (failed records do not).
fn done_keys(recs: &[Map<String, Value>]) -> BTreeSet<(u64, String, String)> {
    recs.iter()
        .filter(|r| !records::is_failed(r))
        .filter_map(record_key)
        .collect()
}

/// What the training loop reports.
struct Trained {
    state: State,
    /// Training seconds over all epochs, including those of an interrupted earlier run.
    train_seconds: f64,
    /// Mean loss of the last epoch (read from the progress file when a resumed unit had nothing
    /// left to train).
    final_loss: f64,
    /// Process CPU seconds (user + system, all threads) of the training, when measurable.
    cpu_seconds: Option<f64>,
}

/// Trains and evaluates one unit; returns its record.
fn run_unit(
    plan: &Plan,
    model: &BnnClassifier,
    layers: usize,
    method: Method,
    test: &TestSet,
) -> Result<Map<String, Value>> {
    let n = model.num_data();
    let spe = plan.steps_per_epoch(n);
    let total = plan.total_steps(n)?;
    let lr = adagrad_lr(layers);
    let mut settings = match method {
        Method::Ovi | Method::Map => method
            .preset(total)
            .with_optimizer(OptimizerSettings::adam(ADAM_LR)),
        Method::Smi => method
            .preset(total)
            .with_elbo_draws(plan.elbo_draws)
            .with_init(Init::Uniform { radius: 2.0 })
            .with_particles(plan.particles)
            .with_guide(GuideSettings::Normal {
                init_scale: plan.init_scale,
            })
            .with_optimizer(OptimizerSettings::adagrad(plan.smi_lr(layers))),
        Method::Svgd | Method::Asvgd => method
            .preset(total.max(10))
            .with_particles(PARTICLES)
            .with_optimizer(OptimizerSettings::adagrad(lr)),
        Method::Nuts => bail!("MNIST has no NUTS run"),
    }
    .with_batch_size(Some(BATCH_SIZE))
    .with_seed(plan.seed);
    match (&mut settings, method) {
        (MethodSettings::Stein(s), Method::Smi) => {
            s.attraction = plan.attraction;
            s.defect = plan.defect;
            s.loss_temperature = plan.loss_temperature;
            s.scale_lr_factor = plan.scale_lr_factor;
        }
        (MethodSettings::Stein(s), Method::Asvgd) => {
            s.schedule = asvgd_schedule(total);
            // NumPyro's target, without the log-Jacobian (SteinSettings::svgd_numpyro_parity).
            s.jacobian = false;
        }
        (MethodSettings::Stein(s), Method::Svgd) => s.jacobian = false,
        (MethodSettings::Svi(s), Method::Map) => s.init = Init::PriorMedian { draws: 15 },
        // The paper's OVI draws once per step (the preset's S = 10 is the default that
        // converges without tuning, docs/defaults.md).
        (MethodSettings::Svi(s), _) => s.num_elbo_particles = 1,
        _ => {}
    }
    let device = crate::device::for_method(method.name(), plan.device);
    let engine = crate::device::engine_on(
        method.name(),
        &settings,
        Net::Classifier(model),
        device,
        false,
    )?;
    let key = plan.train_key(layers, method, n);
    let trained = train(plan, engine.as_ref(), layers, method, n, &key)?;
    let post = engine.posterior(&trained.state);
    let t = Instant::now();
    let eval = evaluate(model, &post, method, test, plan.draws, plan.seed)?;
    let eval_seconds = t.elapsed().as_secs_f64();
    let steps = trained.state.step;
    let seconds_per_step = trained.train_seconds / steps.max(1) as f64;
    let seconds_per_epoch = trained.train_seconds / plan.epochs as f64;
    let full_spe = (n / BATCH_SIZE) as f64;
    eprintln!(
        "mnist {layers}-layer {method}: acc {:.4} (argmax {:.4}), nll {:.4}, {:.1} s per epoch \
         ({:.3} s per step, {:.1} s per full epoch of {full_spe} steps; {} CPU s per step); \
         evaluation {eval_seconds:.1} s",
        eval.mean("acc"),
        eval.mean("acc_argmax"),
        eval.mean("nll"),
        seconds_per_epoch,
        seconds_per_step,
        seconds_per_step * full_spe,
        trained.cpu_seconds.map_or("?".to_string(), |c| format!(
            "{:.3}",
            c / steps.max(1) as f64
        ))
    );
    let mut metrics = Map::new();
    let mut per_draw = Map::new();
    for (name, values) in &eval.per_draw {
        let st = MeanStd::of(values).unwrap_or(MeanStd {
            mean: f64::NAN,
            std: f64::NAN,
        });
        metrics.insert((*name).to_string(), json!(st.mean));
        metrics.insert(format!("{name}_std"), json!(st.std));
        per_draw.insert((*name).to_string(), json!(values));
    }
    metrics.insert("seconds_per_epoch".into(), json!(seconds_per_epoch));
    metrics.insert("seconds_per_step".into(), json!(seconds_per_step));
    metrics.insert(
        "seconds_per_full_epoch".into(),
        json!(seconds_per_step * full_spe),
    );
    metrics.insert("train_seconds".into(), json!(trained.train_seconds));
    if let Some(cpu) = trained.cpu_seconds {
        let per_step = cpu / steps.max(1) as f64;
        metrics.insert("cpu_seconds_per_step".into(), json!(per_step));
        metrics.insert(
            "cpu_seconds_per_full_epoch".into(),
            json!(per_step * full_spe),
        );
    }
    metrics.insert("eval_seconds".into(), json!(eval_seconds));
    metrics.insert("final_loss".into(), json!(trained.final_loss));
    metrics.insert("skipped_steps".into(), json!(trained.state.skipped_steps));
    metrics.insert("per_draw".into(), Value::Object(per_draw));
    let Value::Object(mut rec) = json!({
        "layers": layers,
        "method": method.name(),
        "seed": plan.seed,
        "epochs": plan.epochs,
        "steps": steps,
        "steps_per_epoch": spe,
        "seconds": trained.train_seconds + eval_seconds,
        "train_size": n,
        "test_size": test.labels.len(),
        "draws": eval.draws,
        "distinct_draws": eval.distinct,
        "config": plan.config(layers, method, n, test.labels.len()),
    }) else {
        unreachable!("json! of an object literal is an object")
    };
    rec.insert("metrics".into(), Value::Object(metrics));
    Ok(rec)
}

#[cfg(test)]
mod tests;
