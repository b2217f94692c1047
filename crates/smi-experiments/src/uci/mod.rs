//! UCI regression (docs/algorithms.md §7.3): a 2×50 relu Bayesian network with a Gamma(1, 0.1) precision,
//! fitted by SMI, SVGD, ASVGD, OVI, MAP and NUTS on the standard and Gap10 splits of the nine
//! UCI data sets. Records go to `<out>/uci.jsonl`, the paper's Table 3 and Table 6 to
//! `<out>/uci.md`.
//!
//! Work is cut into units (data set, split kind, split, method) in a fixed order; a unit whose
//! key (data set, split kind, split, method, config) already has a record that is not marked
//! failed is skipped, so an interrupted run resumes where it stopped and `--shard I/N` lets N
//! processes share the list. A unit runs under its lock file in `<out>/locks/`; one locked by
//! another run sharing the output folder is skipped, so identical runs split the work.

mod lr;
mod paper_table;
mod parse;
mod peers;
mod report;

pub use lr::paper_lr;
use lr::LrMode;
use parse::{parse_datasets, parse_kinds, parse_methods, parse_shard, parse_splits};
pub use report::report;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Instant;

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Map, Value};
use smi::metrics::regression_metrics;
use smi::metrics::{not_worse_than_best, Better, MeanStd, PAPER_ALPHA};
use smi::{AttractionNorm, Matrix, NoObserver, NumpyroDefect, NutsSettings, Observer, Posterior};
use smi_data::{ColumnConvention, Prepared, Split, SplitKind, Standardizer, UciData, UciDataset};
use smi_models::BnnRegression;

use crate::cpu_time::CpuClock;
use crate::locks;
use crate::records;
use crate::records::changed;
use crate::resumable::FitCheckpoint;
use crate::tables;
use smi_fit::progress::Bar;

/// Name of the records file (`uci.jsonl`) and of the report (`uci.md`).
pub const EXPERIMENT: &str = "uci";
/// Records of the learning-rate search (`uci-lr.jsonl`).
pub const TUNE_EXPERIMENT: &str = "uci-lr";

/// Steps between saves of a unit's state ([`crate::resumable`]): an SMI step of the UCI net took
/// 13–16 ms on 2 threads (measured up to f8c7851, 2026-11-27: `git log -p BENCHMARKS.md`), so
/// an interrupted SMI unit loses about a minute and a half; a unit of 60 000 steps saves 12
/// times (a state of m = 5 particles of the UCI net with its Adam moments, ≈ 50 000 numbers).
pub const CHECKPOINT_EVERY: u64 = 5_000;

use crate::device::Net;
use crate::records::{attraction_suffix, defect_suffix};
pub use smi::{Method, LR_GRID};
use smi_fit::protocol::{fit, prediction_rng, Protocol};
use smi_models::Device;

/// Options of `smi reproduce uci`.
#[derive(clap::Args, Debug, Clone)]
#[command(after_long_help = AFTER_HELP)]
pub struct Args {
    /// Data sets, comma-separated, or `all` (boston, concrete, energy, kin8nm, naval, power,
    /// protein, wine, yacht) [default: all; with --quick: yacht].
    #[arg(long)]
    pub datasets: Option<String>,
    /// Split family: `standard` (the stored index files), `gap10` (one split per feature,
    /// the middle 10 % of its range held out) or `both`.
    #[arg(long, default_value = "standard")]
    pub split: String,
    /// Splits to run: comma-separated indices or ranges (`0,3,5-9`), or `all`; indices beyond a
    /// data set's splits are skipped, an index beyond every chosen data set's splits is an error
    /// [default: all; with --quick: 0].
    #[arg(long)]
    pub splits: Option<String>,
    /// Methods, comma-separated, or `all` (smi, svgd, asvgd, ovi, map, nuts)
    /// [default: all].
    #[arg(long)]
    pub methods: Option<String>,
    /// Learning rate of Adam: `paper` (the paper's chosen rate per data set, split kind and
    /// method), `tune` (grid 5e-1 … 5e-6 on split 0 of the split kind with a 10 % validation
    /// hold-out, best validation RMSE; searched once per data set/split kind/method and cached in
    /// `uci-lr.jsonl`) or a number.
    #[arg(long, default_value = "paper")]
    pub lr: String,
    /// Step budget: SMI/SVGD/ASVGD stop early on the force norm or after this many steps;
    /// OVI/MAP run exactly this many [default: 60000; with --quick: 200].
    #[arg(long)]
    pub max_steps: Option<u64>,
    /// Data directory holding `uci/` [default: $SMI_DATA_DIR, else the per-user folder
    /// (~/.local/share/smi) if it exists, else the repository's sibling shared/data; see
    /// `smi data`].
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Output folder for `uci.jsonl` and `uci.md`.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Run only the units whose index in the unit list is ≡ I (mod N), e.g. `--shard 0/4`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Master seed; each unit derives its own from it and the split index.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// SMI's attraction normalisation: `paper` (1/m, the paper's update) or `numpyro` (no 1/m,
    /// NumPyro 0.16–0.22; docs/algorithms.md §2.8). Only a non-default value enters the config string.
    #[arg(long, default_value = "paper")]
    pub attraction: AttractionNorm,
    /// Reproduce a NumPyro defect in SMI, to test whether it explains a published number
    /// (docs/algorithms.md §2.8, §2.11): `no-chain-rule` (NumPyro before #1883, the paper's UCI
    /// runs) or `double-transform` (NumPyro 0.16–0.22). A diagnostic switch, never for
    /// inference; it enters SMI's config string, so its records sit beside the correct ones.
    #[arg(long, value_name = "DEFECT")]
    pub defect: Option<NumpyroDefect>,
    /// SMI's number of particles m, for an ablation of the paper's settings [default: 5].
    /// A value other than the default marks the run as an ablation (see --ablation).
    #[arg(long, value_name = "M")]
    pub particles: Option<usize>,
    /// SMI's ELBO draws S per particle and step, for an ablation [default: 100; with --quick:
    /// 10]. A value other than the default marks the run as an ablation.
    #[arg(long, value_name = "S")]
    pub elbo_draws: Option<usize>,
    /// The initial scale σ₀ of SMI's Normal guides, for an ablation [default: 0.1, NumPyro's
    /// AutoNormal]. A value other than the default marks the run as an ablation.
    #[arg(long, value_name = "SIGMA0")]
    pub init_scale: Option<f64>,
    /// SMI's likelihood temperature τ, multiplying the model's log density in the attraction
    /// (τ < 1 tempers the posterior), for an ablation [default: 1]. A value other than the
    /// default marks the run as an ablation.
    #[arg(long, value_name = "TAU")]
    pub loss_temperature: Option<f64>,
    /// SMI's RBF bandwidth as a constant factor f of the squared median distance, h = f·med²,
    /// for an ablation [default: the paper's f = 1/ln m]. A small f (0.01) makes the kernel
    /// between distinct particles vanish, so each particle fits alone (a mixture of independent
    /// guides). A value marks the run as an ablation.
    #[arg(long, value_name = "F")]
    pub bandwidth_factor: Option<f64>,
    /// A factor c on the learning rate of SMI's guide scales ρ (each step moves ρ by c times
    /// the optimizer's step, the locations by the step itself), for an ablation [default: 1,
    /// one rate]. A value other than 1 marks the run as an ablation (`scale_lr=c`).
    #[arg(long, value_name = "C")]
    pub scale_lr_factor: Option<f64>,
    /// Run SMI for every step of --max-steps, without the paper's early-stopping rule on the
    /// force norm (docs/algorithms.md §7.3), for an ablation: SMI's config says `es=off` and
    /// the run is marked an ablation. The other methods keep the rule.
    #[arg(long)]
    pub no_early_stopping: bool,
    /// Mark SMI's runs as an ablation of the paper's settings (implied by a non-default
    /// --particles, --elbo-draws, --init-scale or --loss-temperature; useful alone with
    /// --max-steps). Their config gains `ablation`: `uci.md` reports them in "Ablations of the
    /// paper's settings" beside the paper's configuration on the same splits, never in the
    /// method's row, and their state and lock files carry the config's tag, so that several
    /// ablations can run at once.
    #[arg(long)]
    pub ablation: bool,
    /// Fit every method on y standardised with the training split's mean and ddof-0 standard
    /// deviation, and map the predictions back (y_loc·sd + mean, noise scale·sd), so RMSE and
    /// NLL stay in y's units. The paper leaves y raw; this tests whether y's scale explains a
    /// gap (naval's targets vary by ≈ 0.007). Every method's config gains `y=std` (`uci.md`
    /// reports such runs in "Ablations of the paper's settings") and its files' names `-ystd`.
    #[arg(long)]
    pub standardize_y: bool,
    /// Where SMI's fits run: `cpu`, or `cuda` / `cuda:N` (the GPU engine, SMI only; needs a
    /// build with `--features cuda`, an NVIDIA driver and a GPU; docs/cuda.md). A GPU run's
    /// config gains `device=cuda` (its random streams differ from the CPU's, so its records sit
    /// beside the CPU's rather than replacing them). The learning-rate search of `--lr tune`
    /// runs on the CPU.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// Units run at the same time (each also uses the rayon pool for its draws).
    #[arg(long, default_value_t = 1)]
    pub jobs: usize,
    /// Print the unit list (index, key, done/pending, the step of a pending unit's saved state)
    /// and exit without running anything.
    #[arg(long)]
    pub list: bool,
    /// With --list: one JSON object per line instead of text, for launchers (`smi.ray`, Slurm
    /// scripts): `index`, `id` (what --unit takes), `status` (`done`, `pending`, `failed`,
    /// `tune`: its learning rate comes from tuning), `saved_step` (the step of a saved state,
    /// or null) and `device` (`cpu` or `cuda`: where the unit's fit runs).
    #[arg(long, requires = "list")]
    pub json: bool,
    /// Run only the units with these ids (comma-separated, as --list prints them, e.g.
    /// `yacht/std0/smi`); each must be in the unit list the other options give. The records
    /// are those of a run of the whole list, byte for byte (timings aside).
    #[arg(long, value_name = "ID,...", value_delimiter = ',')]
    pub unit: Option<Vec<String>>,
    /// Smoke test for CI: yacht, standard split 0, 200 steps, S = 10 ELBO draws, 200 predictive
    /// draws, NUTS 20 + 20 iterations of depth ≤ 4; finishes in seconds.
    #[arg(long)]
    pub quick: bool,
}

const AFTER_HELP: &str = "\
Model and methods (docs/algorithms.md §7.3): in → 50 → 50 → 1 relu network, N(0, 1) priors on weights and \
biases, precision ~ Gamma(1, 0.1) learned as u = log prec; Adam; every particle/guide starts \
from Uniform(−0.1, 0.1); mini-batches of 100 rows (each ELBO draw its own subsample, N/100 \
scaling). SMI: 5 Normal particles, S = 100; SVGD/ASVGD: 5 point particles; early stopping on \
the Stein force norm (fast window 35, factor 2). OVI/MAP: exactly --max-steps steps. NUTS: 500 \
warm-up + 3000 draws on the full training set. Prediction: 5000 draws for SMI/OVI/MAP, the 5 \
particles for SVGD/ASVGD, the 3000 NUTS draws.

Resuming and sharding: the work is a fixed list of units (data set × split kind × split × \
method, in that order). Before a unit runs, <out>/uci.jsonl is read; if it already holds a \
record with the same data set, split kind, split, method and config (a string of every setting \
that changes the result: learning rate, step budget, particles, ELBO draws, batch size, init, \
early stopping, predictive draws, NUTS settings, seed), the unit is skipped. Re-running the same \
command after an interruption therefore only does the missing units. A variational unit saves \
its state every 5000 steps to <out>/checkpoints/uci-<data set>-<split kind>-<split>-<method>.json \
(removed when the unit ends); the rerun continues an interrupted unit from its last save, to \
the same result as an uninterrupted one (a state of other settings is not resumed). With --shard I/N a process \
runs only the units whose index is ≡ I (mod N); start N processes (or machines) with \
I = 0 … N−1 and the same options, then concatenate their uci.jsonl files (or let them share one \
--out) and run `smi report --out DIR`. Runs sharing one --out split the work: a unit runs under \
a lock file in <out>/locks/, a unit locked by another run is skipped (and counted as such), and \
records are appended under a lock on uci.jsonl. A unit whose fit fails or whose metrics are not \
finite is recorded with status \"failed\" and its reason; it does not count as done, so the next \
run retries it, and reports ignore it. --list shows the unit list with the status of each unit.

Records (uci.jsonl): experiment, dataset, split_kind, split, method, seed, config, version, \
seconds (wall, fit and evaluation, the pieces of a resumed unit added), cpu_seconds (CPU time \
of the process over the unit, all threads, likewise; with --jobs above 1 it includes the units \
running beside it; null where unreadable), lr, metrics.{rmse, nll (proper: RMSE of the predictive mean, mixture NLL), rmse_paper \
(over draws and points jointly), nll_paper (per-particle NLL for SVGD/ASVGD as in the paper's \
code, = nll otherwise), seconds_per_step, steps}.";

/// Everything that is fixed for a whole invocation.
#[derive(Clone, Debug)]
struct Plan {
    max_steps: u64,
    num_particles: usize,
    elbo_draws: usize,
    batch_size: usize,
    init_radius: f64,
    pred_draws: usize,
    nuts: NutsSettings,
    seed: u64,
    lr: LrMode,
    attraction: AttractionNorm,
    defect: Option<NumpyroDefect>,
    /// SMI's guide init scale σ₀.
    init_scale: f64,
    /// SMI's likelihood temperature τ.
    loss_temperature: f64,
    /// SMI's constant bandwidth factor (`None`: the paper's 1/ln m).
    bandwidth_factor: Option<f64>,
    /// SMI's factor on the scales' learning rate (1: one rate).
    scale_lr_factor: f64,
    /// SMI keeps the paper's early-stopping rule (`--no-early-stopping` turns it off).
    smi_early_stopping: bool,
    /// SMI's runs are an ablation of the paper's settings.
    ablation: bool,
    /// Every method fits standardised y (`--standardize-y`).
    standardize_y: bool,
    /// Where SMI's fits run.
    device: Device,
    progress: bool,
}

/// The paper's settings that an ablation may change (docs/algorithms.md §7.3).
const PAPER_PARTICLES: usize = 5;
const PAPER_ELBO_DRAWS: usize = 100;
const PAPER_INIT_SCALE: f64 = 0.1;

impl Plan {
    fn new(args: &Args) -> Result<Self> {
        let quick = args.quick;
        let max_steps = args.max_steps.unwrap_or(if quick { 200 } else { 60_000 });
        if max_steps == 0 {
            bail!("--max-steps must be at least 1");
        }
        let nuts = if quick {
            NutsSettings {
                num_warmup: 20,
                num_draws: 20,
                max_depth: 4,
                seed: args.seed,
                ..NutsSettings::uci()
            }
        } else {
            NutsSettings {
                seed: args.seed,
                ..NutsSettings::uci()
            }
        };
        let default_draws = if quick { 10 } else { PAPER_ELBO_DRAWS };
        let num_particles = args.particles.unwrap_or(PAPER_PARTICLES);
        let elbo_draws = args.elbo_draws.unwrap_or(default_draws);
        let init_scale = args.init_scale.unwrap_or(PAPER_INIT_SCALE);
        let loss_temperature = args.loss_temperature.unwrap_or(1.0);
        if num_particles == 0 {
            bail!("--particles must be at least 1");
        }
        if elbo_draws == 0 {
            bail!("--elbo-draws must be at least 1");
        }
        if !(init_scale > 0.0 && init_scale.is_finite()) {
            bail!(
                "--init-scale {init_scale}: the guide's initial scale must be positive and finite"
            );
        }
        if !(loss_temperature > 0.0 && loss_temperature.is_finite()) {
            bail!("--loss-temperature {loss_temperature}: τ must be positive and finite");
        }
        let scale_lr_factor = args.scale_lr_factor.unwrap_or(1.0);
        if !(scale_lr_factor > 0.0 && scale_lr_factor.is_finite()) {
            bail!("--scale-lr-factor {scale_lr_factor}: the factor must be positive and finite");
        }
        if let Some(f) = args.bandwidth_factor {
            if !(f > 0.0 && f.is_finite()) {
                bail!("--bandwidth-factor {f}: the factor must be positive and finite");
            }
        }
        let ablation = args.ablation
            || args.no_early_stopping
            || scale_lr_factor != 1.0
            || args.bandwidth_factor.is_some()
            || num_particles != PAPER_PARTICLES
            || elbo_draws != default_draws
            || init_scale != PAPER_INIT_SCALE
            || loss_temperature != 1.0;
        Ok(Plan {
            max_steps,
            num_particles,
            elbo_draws,
            init_scale,
            loss_temperature,
            bandwidth_factor: args.bandwidth_factor,
            smi_early_stopping: !args.no_early_stopping,
            scale_lr_factor,
            ablation,
            standardize_y: args.standardize_y,
            batch_size: 100,
            init_radius: 0.1,
            pred_draws: if quick { 200 } else { 5000 },
            nuts,
            seed: args.seed,
            lr: args.lr.parse()?,
            attraction: args.attraction,
            defect: args.defect,
            device: args.device.parse()?,
            progress: args.jobs <= 1 && std::env::var_os("SMI_NO_PROGRESS").is_none(),
        })
    }

    /// The engine settings of `method` for a training set of `n` rows (the ablation's
    /// settings reach SMI only).
    fn method_settings(&self, n: usize, method: Method) -> Protocol {
        let smi = method == Method::Smi;
        Protocol {
            max_steps: self.max_steps,
            num_particles: if smi {
                self.num_particles
            } else {
                PAPER_PARTICLES
            },
            elbo_draws: self.elbo_draws,
            batch_size: Some(self.batch_size.min(n)),
            init_radius: self.init_radius,
            early_stopping: !smi || self.smi_early_stopping,
            nuts: self.nuts.clone(),
            attraction: self.attraction,
            defect: self.defect,
            guide: (smi && self.init_scale != PAPER_INIT_SCALE).then_some(
                smi::GuideSettings::Normal {
                    init_scale: self.init_scale,
                },
            ),
            loss_temperature: if smi { self.loss_temperature } else { 1.0 },
            scale_lr_factor: if smi { self.scale_lr_factor } else { 1.0 },
            kernel: self.bandwidth_factor.filter(|_| smi).map(|f| {
                smi::kernel::KernelSettings::Rbf {
                    mode: smi::kernel::Mode::Norm,
                    bandwidth_factor: smi::kernel::BandwidthFactor::Constant(f),
                }
            }),
        }
    }

    /// What SMI's config gains for an ablation: nothing for the paper's settings, else the
    /// changed init scale, temperature, bandwidth and scale rate and the `ablation` mark (m
    /// and S are always in it).
    fn ablation_suffix(&self) -> String {
        if !self.ablation {
            return String::new();
        }
        let bw = self
            .bandwidth_factor
            .map_or(String::new(), |f| format!("|bw={f}"));
        format!(
            "{}{}{bw}{}|ablation",
            changed("|", "scale0", self.init_scale, PAPER_INIT_SCALE),
            changed("|", "tau", self.loss_temperature, 1.0),
            changed("|", "scale_lr", self.scale_lr_factor, 1.0),
        )
    }

    /// What the names of a unit's state and lock files gain: nothing for the paper's settings,
    /// else a tag of SMI's config, so that ablations of one unit can run at once.
    fn file_tag(&self, method: Method) -> String {
        let y = if self.standardize_y { "-ystd" } else { "" };
        if method != Method::Smi || !(self.ablation || self.device != Device::Cpu) {
            return y.to_string();
        }
        // FNV-1a of the config without its learning rate (the same for every data set).
        let config = self.config(method, None);
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in config.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        let kind = if self.ablation { "ablation" } else { "device" };
        format!("-{kind}-{:08x}{y}", h as u32)
    }

    /// The seed of the unit on `split` (also used by the learning-rate search on split 0).
    fn unit_seed(&self, split: usize) -> u64 {
        self.seed.wrapping_mul(1_000_003).wrapping_add(split as u64)
    }

    /// The config string of `method` at learning rate `lr`: every setting that changes the
    /// result (the key for resuming, with data set, split kind, split and method).
    fn config(&self, method: Method, lr: Option<f64>) -> String {
        let lr = lr.map_or_else(|| "-".to_string(), |v| format!("{v:e}"));
        let common = format!("b={}|init=U{}", self.batch_size, self.init_radius);
        let s = match method {
            Method::Smi => format!(
                "lr={lr}|steps{}|m={}|S={}|{common}|pred={}{}{}{}{}",
                if self.smi_early_stopping {
                    format!("<={}|es=35x2", self.max_steps)
                } else {
                    format!("={}|es=off", self.max_steps)
                },
                self.num_particles,
                self.elbo_draws,
                self.pred_draws,
                attraction_suffix(self.attraction, "|"),
                defect_suffix(self.defect, "|"),
                self.ablation_suffix(),
                device_suffix(self.device)
            ),
            Method::Svgd | Method::Asvgd => format!(
                "lr={lr}|steps<={}|es=35x2|m={PAPER_PARTICLES}|{common}|pred=particles",
                self.max_steps
            ),
            Method::Ovi => format!(
                "lr={lr}|steps={}|S=1|{common}|pred={}",
                self.max_steps, self.pred_draws
            ),
            Method::Map => format!("lr={lr}|steps={}|{common}|pred=point", self.max_steps),
            Method::Nuts => format!(
                "warmup={}|draws={}|depth<={}|accept={}|init=U{}|full-batch",
                self.nuts.num_warmup,
                self.nuts.num_draws,
                self.nuts.max_depth,
                self.nuts.target_accept,
                self.nuts.init_radius
            ),
        };
        let y = if self.standardize_y { "|y=std" } else { "" };
        format!("{s}{y}|seed={}", self.seed)
    }
}

/// One piece of work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Unit {
    dataset: UciDataset,
    kind: SplitKind,
    split: usize,
    method: Method,
}

impl Unit {
    /// Where the unit's fit keeps its state while it runs (`tag`: [`Plan::file_tag`]).
    fn checkpoint(&self, out: &Path, tag: &str) -> FitCheckpoint {
        let name = format!(
            "{EXPERIMENT}-{}-{}-{}-{}{tag}",
            self.dataset.short_name(),
            self.kind.name(),
            self.split,
            self.method.name()
        );
        FitCheckpoint::in_folder(out, &name).every(CHECKPOINT_EVERY)
    }

    fn label(&self) -> String {
        let k = match self.kind {
            SplitKind::Standard => "std",
            SplitKind::Gap10 => "gap",
        };
        format!("{}/{k}{}/{}", self.dataset, self.split, self.method)
    }
}

/// The record key of a unit with `config`.
fn key(unit: &Unit, config: &str) -> String {
    format!(
        "{}|{}|{}|{}|{config}",
        unit.dataset,
        unit.kind.name(),
        unit.split,
        unit.method
    )
}

fn record_key(r: &Map<String, Value>) -> Option<String> {
    Some(format!(
        "{}|{}|{}|{}|{}",
        records::text(r, "dataset")?,
        records::text(r, "split_kind")?,
        records::get(r, "split")?.as_u64()?,
        records::text(r, "method")?,
        records::text(r, "config")?
    ))
}

/// Runs `smi reproduce uci`.
pub fn run(args: &Args) -> Result<()> {
    let plan = Plan::new(args)?;
    let datasets = parse_datasets(args.datasets.as_deref().unwrap_or(if args.quick {
        "yacht"
    } else {
        "all"
    }))?;
    let kinds = parse_kinds(&args.split)?;
    let splits =
        parse_splits(
            args.splits
                .as_deref()
                .unwrap_or(if args.quick { "0" } else { "all" }),
        )?;
    let methods = parse_methods(args.methods.as_deref().unwrap_or("all"))?;
    crate::device::parse_for(&args.device, methods.iter().map(|m| m.name()))?;
    let shard = args.shard.as_deref().map(parse_shard).transpose()?;
    if args.jobs == 0 {
        bail!("--jobs must be at least 1");
    }
    let data_dir = args
        .data_dir
        .clone()
        .unwrap_or_else(smi_data::default_data_dir);

    // Load the data sets and build the unit list (deterministic: the order of the options).
    let mut data = BTreeMap::new();
    let mut counts = Vec::new();
    for &ds in &datasets {
        let d = UciData::load(&data_dir, ds, ColumnConvention::Paper).with_context(|| {
            format!(
                "cannot load UCI data set {ds} from {} (get it with `smi data fetch {ds}`, or \
                 point --data-dir or SMI_DATA_DIR at a folder holding uci/)",
                data_dir.display()
            )
        })?;
        for &kind in &kinds {
            counts.push((ds, kind, split_count(&d, kind)?));
        }
        data.insert(ds, d);
    }
    if let Some(set) = &splits {
        // Refused before anything is enumerated: `0-4294967295` names no real split.
        let most = counts.iter().map(|c| c.2).max().unwrap_or(0);
        if set.max() >= most {
            let (ds, kind, _) = counts
                .iter()
                .max_by_key(|c| c.2)
                .ok_or_else(|| anyhow!("no data set chosen"))?;
            bail!(
                "--splits: no chosen data set has split {} (the most splits is {most}, of {ds} \
                 {kind}: indices 0-{}); ask for indices below {most}",
                set.at_or_above(most),
                most.saturating_sub(1)
            );
        }
    }
    let mut units = Vec::new();
    for &(ds, kind, available) in &counts {
        let chosen: Vec<usize> = match &splits {
            None => (0..available).collect(),
            Some(set) => {
                let beyond = set.at_or_above(available);
                if !beyond.is_empty() {
                    eprintln!("note: {ds} has {available} {kind} splits; skipping {beyond}");
                }
                set.below(available)
            }
        };
        for split in chosen {
            for &method in &methods {
                units.push(Unit {
                    dataset: ds,
                    kind,
                    split,
                    method,
                });
            }
        }
    }
    if let Some(ids) = &args.unit {
        let known: BTreeSet<String> = units.iter().map(Unit::label).collect();
        if let Some(bad) = ids.iter().find(|id| !known.contains(id.trim())) {
            let some: Vec<&String> = known.iter().take(3).collect();
            bail!(
                "--unit {bad}: no such unit in this list of {} (ids look like {}; --list \
                 shows them all)",
                units.len(),
                some.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let chosen = |u: &Unit| {
        args.unit
            .as_ref()
            .is_none_or(|ids| ids.iter().any(|id| id.trim() == u.label()))
    };
    let mine: Vec<(usize, Unit)> = units
        .iter()
        .copied()
        .enumerate()
        .filter(|(i, u)| shard.is_none_or(|(s, n)| i % n == s) && chosen(u))
        .collect();

    let recs = records::read(&args.out, EXPERIMENT)?;
    let done = done_keys(&recs);

    if args.list {
        let failed: BTreeSet<String> = recs
            .iter()
            .filter(|r| records::is_failed(r))
            .filter_map(record_key)
            .collect();
        // A closed pipe (`| head`) ends the listing quietly.
        let mut stdout = std::io::stdout().lock();
        for (i, u) in &mine {
            let (status, text) = match static_lr(&plan, u) {
                Some(lr) => {
                    let k = key(u, &plan.config(u.method, lr));
                    if done.contains(&k) {
                        ("done", "done")
                    } else if failed.contains(&k) {
                        ("failed", "pending (failed before)")
                    } else {
                        ("pending", "pending")
                    }
                }
                None => ("tune", "pending (lr from tuning)"),
            };
            let saved = u
                .checkpoint(&args.out, &plan.file_tag(u.method))
                .saved_step()
                .filter(|_| status != "done");
            if args.json {
                let device = crate::device::for_method(u.method.name(), plan.device);
                let line = json!({
                    "index": i,
                    "id": u.label(),
                    "status": status,
                    "saved_step": saved,
                    "device": if device == Device::Cpu { "cpu" } else { "cuda" },
                });
                if writeln!(stdout, "{line}").is_err() {
                    return Ok(());
                }
            } else {
                let saved = saved.map_or_else(String::new, |step| {
                    format!(", a saved state at step {step}")
                });
                if writeln!(stdout, "{i}\t{}\t{text}{saved}", u.label()).is_err() {
                    return Ok(());
                }
            }
        }
        return Ok(());
    }

    let ctx = Ctx {
        plan: &plan,
        data: &data,
        out: &args.out,
        done: &done,
        tune_lock: std::sync::Mutex::new(()),
    };
    let started = Instant::now();
    eprintln!(
        "uci: {} units{} ({} in the full list), records in {}",
        mine.len(),
        shard.map_or(String::new(), |(i, n)| format!(" in shard {i}/{n}")),
        units.len(),
        records::path(&args.out, EXPERIMENT).display()
    );
    let outcomes: Vec<Result<Outcome>> = if args.jobs == 1 {
        mine.iter().map(|(_, u)| ctx.run_unit(u)).collect()
    } else {
        use rayon::prelude::*;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(args.jobs)
            .build()
            .context("cannot start the worker pool")?;
        pool.install(|| {
            mine.par_iter()
                .with_max_len(1)
                .map(|(_, u)| ctx.run_unit(u))
                .collect()
        })
    };
    let (mut ran, mut skipped, mut busy, mut failed) = (0, 0, 0, 0);
    for (o, (_, u)) in outcomes.into_iter().zip(&mine) {
        match o {
            Ok(Outcome::Ran) => ran += 1,
            Ok(Outcome::Skipped) => skipped += 1,
            Ok(Outcome::Busy) => {
                busy += 1;
                eprintln!(
                    "note: unit {} is locked by another run on {}; skipped",
                    u.label(),
                    args.out.display()
                );
            }
            Ok(Outcome::Failed(reason)) => {
                failed += 1;
                eprintln!(
                    "error: unit {} failed (recorded as failed): {reason}",
                    u.label()
                );
            }
            Err(e) => {
                failed += 1;
                eprintln!("error: unit {} failed: {e:#}", u.label());
            }
        }
    }
    let busy_note = if busy > 0 {
        format!(", {busy} skipped (locked by another run)")
    } else {
        String::new()
    };
    eprintln!(
        "uci: {ran} units run, {skipped} skipped (already recorded){busy_note}, {failed} failed \
         in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    report(&args.out)?;
    if failed > 0 {
        bail!("{failed} UCI units failed (see the errors above); rerun to retry them");
    }
    Ok(())
}

/// The learning rate known without tuning (`Some(None)` for NUTS), `None` under `--lr tune`.
fn static_lr(plan: &Plan, u: &Unit) -> Option<Option<f64>> {
    if u.method == Method::Nuts {
        return Some(None);
    }
    match plan.lr {
        LrMode::Paper => Some(paper_lr(u.dataset, u.kind, u.method)),
        LrMode::Fixed(v) => Some(Some(v)),
        LrMode::Tune => None,
    }
}

/// The number of splits of `kind` in `d`, checked against the data: a standard split count
/// (`n_splits.txt`) must name index files that exist ([`UciData::n_splits`] checks it).
fn split_count(d: &UciData, kind: SplitKind) -> Result<usize> {
    d.n_splits(kind)
        .with_context(|| format!("cannot count the {kind} splits of {}", d.dataset))
}

/// The keys of the records that mark their unit as done (failed records do not).
fn done_keys(recs: &[Map<String, Value>]) -> BTreeSet<String> {
    recs.iter()
        .filter(|r| !records::is_failed(r))
        .filter_map(record_key)
        .collect()
}

enum Outcome {
    Ran,
    /// Already recorded.
    Skipped,
    /// Locked by another run sharing the output folder.
    Busy,
    /// Recorded as failed, for this reason.
    Failed(String),
}

struct Ctx<'a> {
    plan: &'a Plan,
    data: &'a BTreeMap<UciDataset, UciData>,
    out: &'a Path,
    /// Keys done when the run started (a unit found here is skipped without taking its lock).
    done: &'a BTreeSet<String>,
    tune_lock: std::sync::Mutex<()>,
}

impl Ctx<'_> {
    fn run_unit(&self, u: &Unit) -> Result<Outcome> {
        let lr = match static_lr(self.plan, u) {
            Some(lr) => lr,
            None => Some(self.tuned_lr(u)?),
        };
        let config = self.plan.config(u.method, lr);
        let key = key(u, &config);
        if self.done.contains(&key) {
            return Ok(Outcome::Skipped);
        }
        let tag = self.plan.file_tag(u.method);
        let lock_name = format!("{EXPERIMENT}-{}{tag}", u.label());
        let Some(_lock) = locks::try_lock(self.out, &lock_name, &key)? else {
            return Ok(Outcome::Busy);
        };
        // Another run may have finished the unit since this one read the records.
        if done_keys(&records::read(self.out, EXPERIMENT)?).contains(&key) {
            return Ok(Outcome::Skipped);
        }
        let data = self
            .data
            .get(&u.dataset)
            .ok_or_else(|| anyhow!("data set {} not loaded", u.dataset))?;
        let split = data
            .split(u.kind, u.split)
            .with_context(|| format!("cannot build split {} {}", u.kind, u.split))?;
        let prep = data
            .prepared(&split)
            .with_context(|| format!("cannot prepare {}", u.label()))?;
        let t0 = Instant::now();
        let cpu = CpuClock::start();
        let fitted = fit_and_evaluate(
            u.method,
            lr,
            &prep,
            self.plan,
            self.plan.unit_seed(u.split),
            &u.label(),
            Some(&u.checkpoint(self.out, &tag)),
        )
        .with_context(|| format!("fitting {}", u.label()));
        // the pieces of a resumed unit before this one (none for a failed fit)
        let (earlier, earlier_cpu) = fitted.as_ref().map_or((0.0, Some(0.0)), |f| {
            (f.earlier_seconds, f.earlier_cpu_seconds)
        });
        let seconds = earlier + t0.elapsed().as_secs_f64();
        let cpu_seconds = earlier_cpu.zip(cpu.seconds()).map(|(a, b)| a + b);
        let unit_record = || {
            let mut m = Map::new();
            m.insert("dataset".into(), json!(u.dataset.short_name()));
            m.insert("split_kind".into(), json!(u.kind.name()));
            m.insert("split".into(), json!(u.split));
            m.insert("method".into(), json!(u.method.name()));
            m.insert("seed".into(), json!(self.plan.seed));
            m.insert("config".into(), json!(config));
            m.insert("lr".into(), json!(lr));
            m.insert("seconds".into(), json!(seconds));
            m.insert("cpu_seconds".into(), json!(cpu_seconds));
            m
        };
        let fit = match fitted {
            Ok(f) => f,
            Err(e) => {
                // Recorded as failed (not done: the next run retries it), with the reason.
                let reason = format!("{e:#}");
                let mut rec = unit_record();
                records::mark_failed(&mut rec, &reason);
                records::append(self.out, EXPERIMENT, rec)?;
                return Ok(Outcome::Failed(reason));
            }
        };
        eprintln!(
            "{:<24} rmse {:.3} nll {:.3} (paper metric: rmse {:.3} nll {:.3}) {} steps, {:.2e} s/step, {:.0} s",
            u.label(),
            fit.rmse,
            fit.nll,
            fit.rmse_paper,
            fit.nll_paper,
            fit.steps,
            fit.seconds_per_step,
            seconds
        );
        let mut rec = unit_record();
        rec.insert("early_stopped".into(), json!(fit.early_stopped));
        rec.insert(
            "metrics".into(),
            json!({
                "rmse": fit.rmse,
                "nll": fit.nll,
                "rmse_paper": fit.rmse_paper,
                "nll_paper": fit.nll_paper,
                "seconds_per_step": fit.seconds_per_step,
                "steps": fit.steps,
            }),
        );
        let failure = records::fail_if_non_finite(&mut rec);
        records::append(self.out, EXPERIMENT, rec)?;
        Ok(failure.map_or(Outcome::Ran, Outcome::Failed))
    }

    /// The learning rate of the grid with the best validation RMSE (paper RMSE) on split 0 of
    /// the unit's split kind, 10 % of its training rows held out; each grid point is cached in
    /// `uci-lr.jsonl`.
    fn tuned_lr(&self, u: &Unit) -> Result<f64> {
        // One search at a time, so parallel jobs do not repeat each other's grid points.
        let _guard = self
            .tune_lock
            .lock()
            .map_err(|_| anyhow!("learning-rate search lock poisoned"))?;
        // Nor do other runs sharing the output folder: wait for one that searches this grid,
        // then use its cached points.
        let _file_lock = locks::lock(
            self.out,
            &format!(
                "{TUNE_EXPERIMENT}-{}-{}-{}",
                u.dataset,
                u.kind.name(),
                u.method
            ),
            &format!(
                "{}|{}|{}|{}",
                u.dataset,
                u.kind.name(),
                u.method,
                self.plan.config(u.method, None)
            ),
        )?;
        let data = self
            .data
            .get(&u.dataset)
            .ok_or_else(|| anyhow!("data set {} not loaded", u.dataset))?;
        let base = data
            .split(u.kind, 0)
            .with_context(|| format!("cannot build {} split 0 of {}", u.kind, u.dataset))?;
        let holdout: Split = base
            .validation_holdout(0.1, 10)
            .context("cannot hold out the validation set")?;
        let prep = data.prepared(&holdout)?;
        let cached = records::read_succeeded(self.out, TUNE_EXPERIMENT)?;
        let grid_label = format!("tune {}/{}/{}", u.dataset, u.kind, u.method);
        let (lr, v) = smi::best_lr(
            &LR_GRID,
            |lr| -> Result<f64> {
                let config = self.plan.config(u.method, Some(lr));
                let hit = cached.iter().rev().find(|r| {
                    records::text(r, "dataset") == Some(u.dataset.short_name())
                        && records::text(r, "split_kind") == Some(u.kind.name())
                        && records::text(r, "method") == Some(u.method.name())
                        && records::text(r, "config") == Some(config.as_str())
                });
                if let Some(v) = hit.and_then(|r| records::num(r, "metrics.val_rmse")) {
                    return Ok(v);
                }
                let label = format!("{grid_label} lr={lr:e}");
                let fit = fit_and_evaluate(
                    u.method,
                    Some(lr),
                    &prep,
                    self.plan,
                    self.plan.unit_seed(0),
                    &label,
                    None,
                );
                // A diverged run counts as the worst RMSE, not as an error.
                let v = match fit {
                    Ok(f) if f.rmse_paper.is_finite() => f.rmse_paper,
                    Ok(_) => f64::INFINITY,
                    Err(e) => {
                        eprintln!("note: {label}: {e:#} (counted as infinite RMSE)");
                        f64::INFINITY
                    }
                };
                eprintln!("{label}: validation RMSE {v:.4}");
                let Value::Object(mut rec) = json!({
                    "dataset": u.dataset.short_name(),
                    "split_kind": u.kind.name(),
                    "split": 0,
                    "method": u.method.name(),
                    "seed": self.plan.seed,
                    "config": config,
                    "lr": lr,
                    // JSON has no infinity: a diverged run is stored as null, marked failed
                    // (not cached: the next search retries it).
                    "metrics": { "val_rmse": if v.is_finite() { Some(v) } else { None } },
                }) else {
                    bail!("internal error: a record is not a JSON object");
                };
                records::fail_if_non_finite(&mut rec);
                records::append(self.out, TUNE_EXPERIMENT, rec)?;
                Ok(v)
            },
            |lr, e| eprintln!("note: {grid_label} lr={lr:e}: {e:#} (counted as infinite)"),
        )?;
        eprintln!(
            "{}/{}/{}: chosen lr {lr:e} (validation RMSE {v:.4})",
            u.dataset, u.kind, u.method
        );
        Ok(lr)
    }
}

/// What one fit reports.
#[derive(Clone, Copy, Debug)]
struct Fit {
    rmse: f64,
    nll: f64,
    rmse_paper: f64,
    nll_paper: f64,
    steps: u64,
    seconds_per_step: f64,
    early_stopped: bool,
    /// Wall-clock and CPU seconds of a resumed fit's earlier pieces (0 and `Some(0)` otherwise).
    earlier_seconds: f64,
    earlier_cpu_seconds: Option<f64>,
}

fn matrix(f: &smi_data::Features) -> Result<Matrix> {
    Matrix::from_vec(f.rows, f.cols, f.values.clone()).context("bad feature matrix")
}

/// Fits `method` on the training part of `prep` and evaluates on its test part (docs/algorithms.md §7.3).
/// With `ckpt`, a variational fit saves its state there as it goes and continues from a saved
/// state of the same fit ([`crate::resumable`]; NUTS runs in one piece).
fn fit_and_evaluate(
    method: Method,
    lr: Option<f64>,
    prep: &Prepared,
    plan: &Plan,
    seed: u64,
    label: &str,
    ckpt: Option<&FitCheckpoint>,
) -> Result<Fit> {
    // With --standardize-y: y's training mean and ddof-0 std, the fit's y standardised by them.
    let mut y_train = prep.y_train.clone();
    let y_scale = if plan.standardize_y {
        let s = Standardizer::fit(&y_train, y_train.len(), 1).context("cannot standardise y")?;
        s.apply(&mut y_train);
        Some((s.mean[0], s.std[0]))
    } else {
        None
    };
    let model = BnnRegression::uci(matrix(&prep.x_train)?, y_train)
        .context("cannot build the UCI model")?;
    let x_test = matrix(&prep.x_test)?;
    let n = prep.y_train.len();
    let mut observer: Box<dyn Observer> = if plan.progress {
        Box::new(Bar::new(label, 50))
    } else {
        Box::new(NoObserver)
    };
    let settings = plan.method_settings(n, method);
    let mut rng = prediction_rng(seed);
    let (posterior, steps, seconds, early_stopped, earlier_seconds, earlier_cpu_seconds) =
        match ckpt.filter(|_| method != Method::Nuts) {
            Some(ckpt) => {
                let engine_settings = settings.method_settings(method, lr, seed)?;
                let run = settings.run_settings(method);
                let device = crate::device::for_method(method.name(), plan.device);
                let engine = crate::device::engine_on(
                    method.name(),
                    &engine_settings,
                    Net::Regression(&model),
                    device,
                    false,
                )?;
                let f = crate::resumable::fit_engine(
                    engine.as_ref(),
                    &run,
                    ckpt,
                    observer.as_mut(),
                    label,
                )?;
                // The early-stopping rule's own flag: a failed verdict may relabel the termination.
                let stopped = f.state.early_stop.stopped;
                let p = Posterior::Mixture(f.posterior);
                let earlier = (f.earlier_seconds, f.earlier_cpu_seconds);
                (p, f.state.step, f.seconds, stopped, earlier.0, earlier.1)
            }
            None => {
                let out = fit(method, lr, &model, &settings, seed, observer.as_mut())?;
                let stopped = out.early_stopped();
                (
                    out.posterior,
                    out.steps,
                    out.seconds,
                    stopped,
                    0.0,
                    Some(0.0),
                )
            }
        };
    // MAP: every one of the paper's 5000 draws is the same point; one suffices.
    let draws = posterior.predictive_draws(plan.pred_draws, &mut rng)?;
    let mut pred = model
        .predict(draws.as_slice(), &x_test)
        .context("prediction failed")?;
    if let Some((mean, sd)) = y_scale {
        pred.y_loc
            .as_mut_slice()
            .iter_mut()
            .for_each(|v| *v = mean + sd * *v);
        pred.noise_scale.iter_mut().for_each(|s| *s *= sd);
    }
    let m = regression_metrics(&pred.y_loc, &pred.noise_scale, &prep.y_test)
        .context("the predictions are not finite (the fit diverged)")?;
    let per_particle = matches!(method, Method::Svgd | Method::Asvgd);
    Ok(Fit {
        rmse: m.rmse_of_mean,
        nll: m.nll,
        rmse_paper: m.rmse,
        nll_paper: if per_particle { m.per_draw_nll } else { m.nll },
        steps,
        seconds_per_step: seconds / steps.max(1) as f64,
        early_stopped,
        earlier_seconds,
        earlier_cpu_seconds,
    })
}

#[cfg(test)]
mod tests;

/// What a config gains for the device its SMI fits ran on: nothing on the CPU.
fn device_suffix(device: Device) -> String {
    match device {
        Device::Cpu => String::new(),
        Device::Cuda(_) => "|device=cuda".into(),
    }
}
