//! One NUTS chain: its initial point, the nuts-rs chain for the chosen mass matrix, and the
//! draws and per-draw statistics it records.

use std::sync::atomic::{AtomicBool, Ordering};

use nuts_rs::{Chain, CpuMath, SamplerStats, Settings};
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::adapter::{eval_one, Adapter, FatalSlot};
use super::result::ChainDiagnostics;
use super::settings::NutsSettings;
use super::stats::{e_bfmi, DrawStats, E_BFMI_THRESHOLD};
use crate::engine::{Observer, Progress};
use crate::error::{Error, Result};
use crate::model::{Batch, LogDensity};

/// How many uniform initial points are tried before giving up (NumPyro's `init_to_uniform`).
const MAX_INIT_TRIES: usize = 100;

/// What one chain returns.
pub(super) struct ChainOutput {
    /// num_draws × d kept draws, row-major.
    pub(super) draws: Vec<f64>,
    /// log p of the kept draws.
    pub(super) log_density: Vec<f64>,
    /// num_warmup × d warm-up draws, row-major; empty unless `keep_warmup`.
    pub(super) warmup_draws: Vec<f64>,
    pub(super) diagnostics: ChainDiagnostics,
}

/// The fields of nuts-rs's per-draw statistics the run keeps; their type differs by mass
/// matrix, so each caller of [`drive`] reads them with [`tree_stats!`].
struct TreeStats {
    depth: u64,
    max_depth_reached: bool,
    energy: f64,
    log_density: f64,
    accept_prob: f64,
}

/// A closure reading [`TreeStats`] from nuts-rs's `NutsStats` (of any mass matrix).
macro_rules! tree_stats {
    () => {
        |st| TreeStats {
            depth: st.depth,
            max_depth_reached: st.maxdepth_reached,
            energy: st.point.energy,
            log_density: st.point.logp,
            accept_prob: st.adapt.step_size.mean_tree_accept,
        }
    };
}

/// The generator of chain `c`: stream `c` of ChaCha8 seeded with `seed`.
fn chain_rng(seed: u64, c: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(c as u64);
    rng
}

/// A uniform(−r, r) initial point with finite log density and a finite gradient without zero
/// entries (nuts-rs scales its initial mass matrix by the gradient), up to 100 tries.
fn initial_point(model: &dyn LogDensity, radius: f64, rng: &mut ChaCha8Rng) -> Result<Vec<f64>> {
    let dim = model.dim();
    let batch = Batch::full();
    let mut x = vec![0.0; dim];
    let mut grad = vec![0.0; dim];
    let mut zero_gradient = false;
    let mut last: Option<Error> = None;
    for _ in 0..MAX_INIT_TRIES {
        if radius > 0.0 {
            x.iter_mut()
                .for_each(|v| *v = rng.random_range(-radius..radius));
        }
        match eval_one(model, &batch, &x, &mut grad) {
            Ok(_) if grad.iter().all(|g| *g != 0.0) => return Ok(x),
            Ok(_) => zero_gradient = true,
            Err(e) if e.is_recoverable() => {
                zero_gradient = false;
                last = Some(e);
            }
            Err(e) => return Err(e),
        }
    }
    if zero_gradient {
        return Err(Error::invalid(
            "init_radius",
            format!(
                "NUTS needs a gradient without zero entries at the initial point; the model's \
                 gradient has one at every uniform(−{radius}, {radius}) point tried"
            ),
        ));
    }
    Err(Error::non_finite(format!(
        "NUTS initialisation: no point with a finite log density and gradient in \
         {MAX_INIT_TRIES} uniform(−{radius}, {radius}) draws{}",
        last.map_or_else(String::new, |e| format!(" (the last: {e})"))
    )))
}

/// The model's own error if the adapter stored one, else nuts-rs's message as a model error.
fn chain_error(fatal: &FatalSlot, err: impl std::fmt::Display, context: &str) -> Error {
    match fatal.borrow_mut().take() {
        Some(e) => e,
        None => {
            // nuts-rs embeds anyhow's backtrace in some messages; keep the message only.
            let msg = err.to_string();
            let msg = msg.split("\n\nStack backtrace:").next().unwrap_or_default();
            Error::Model(format!("NUTS {context}: {msg}").into())
        }
    }
}

/// Runs chain `c`; `Ok(None)` when stopped because another chain failed.
pub(super) fn run_chain(
    model: &dyn LogDensity,
    s: &NutsSettings,
    c: usize,
    abort: &AtomicBool,
    mut observer: Option<&mut dyn Observer>,
) -> Result<Option<ChainOutput>> {
    let out = run_chain_inner(model, s, c, abort, &mut observer);
    if out.is_err() {
        abort.store(true, Ordering::Relaxed);
    }
    out
}

/// What [`drive`] needs besides the nuts-rs settings.
struct Run<'r, 'm> {
    model: &'m dyn LogDensity,
    s: &'r NutsSettings,
    c: usize,
    abort: &'r AtomicBool,
    init: Vec<f64>,
    seed: u64,
}

fn run_chain_inner(
    model: &dyn LogDensity,
    s: &NutsSettings,
    c: usize,
    abort: &AtomicBool,
    observer: &mut Option<&mut dyn Observer>,
) -> Result<Option<ChainOutput>> {
    let mut rng = chain_rng(s.seed, c);
    let init = initial_point(model, s.init_radius, &mut rng)?;
    let run = Run {
        model,
        s,
        c,
        abort,
        init,
        seed: rng.next_u64(),
    };
    match s.to_low_rank() {
        None => drive(s.to_diag(), run, observer, tree_stats!()),
        Some(low_rank) => drive(low_rank, run, observer, tree_stats!()),
    }
}

/// Runs the nuts-rs chain of `settings` from `run.init` for num_warmup + num_draws iterations.
fn drive<'m, S, F>(
    settings: S,
    run: Run<'_, 'm>,
    observer: &mut Option<&mut dyn Observer>,
    read: F,
) -> Result<Option<ChainOutput>>
where
    S: Settings,
    F: Fn(
        &<S::Chain<CpuMath<Adapter<'m>>> as SamplerStats<CpuMath<Adapter<'m>>>>::Stats,
    ) -> TreeStats,
{
    let s = run.s;
    let fatal = FatalSlot::default();
    let math = CpuMath::new(Adapter::new(run.model, fatal.clone()));
    let mut nuts_rng =
        <nuts_rs::rand::rngs::ChaCha8Rng as nuts_rs::rand::SeedableRng>::seed_from_u64(run.seed);
    let mut chain = settings
        .new_chain(run.c as u64, math, &mut nuts_rng)
        .map_err(|e| chain_error(&fatal, e, "setup"))?;
    chain
        .set_position(&run.init)
        .map_err(|e| chain_error(&fatal, e, "initialisation"))?;

    let total = s.num_warmup + s.num_draws;
    let mut rec = Recorder::new(s, run.model.dim());
    for i in 0..total {
        if run.abort.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let (position, _expanded, stats, progress) = chain
            .expanded_draw()
            .map_err(|e| chain_error(&fatal, e, "sampling"))?;
        let t = read(&stats);
        let warmup = i < s.num_warmup;
        let draw = DrawStats {
            log_density: t.log_density,
            divergent: progress.diverging,
            energy: t.energy,
            tree_depth: t.depth,
            max_depth_reached: t.max_depth_reached,
            step_size: progress.step_size,
            n_leapfrog: progress.num_steps,
            accept_prob: t.accept_prob,
            warmup,
        };
        rec.push(&position, draw);
        if let Some(obs) = observer.as_mut() {
            let phase = if warmup { "warmup" } else { "sampling" };
            obs.on_step(&Progress::new(
                i as u64 + 1,
                total as u64,
                -t.log_density,
                phase,
            ));
        }
    }
    Ok(Some(rec.finish(run.init)))
}

/// Collects one chain's draws and statistics.
struct Recorder {
    keep_warmup: bool,
    draws: Vec<f64>,
    warmup_draws: Vec<f64>,
    draw_stats: Vec<DrawStats>,
    warmup_stats: Vec<DrawStats>,
    warmup_divergences: usize,
}

impl Recorder {
    fn new(s: &NutsSettings, dim: usize) -> Self {
        let warmup = if s.keep_warmup { s.num_warmup } else { 0 };
        Recorder {
            keep_warmup: s.keep_warmup,
            draws: Vec::with_capacity(s.num_draws * dim),
            warmup_draws: Vec::with_capacity(warmup * dim),
            draw_stats: Vec::with_capacity(s.num_draws),
            warmup_stats: Vec::with_capacity(warmup),
            warmup_divergences: 0,
        }
    }

    fn push(&mut self, position: &[f64], stats: DrawStats) {
        if !stats.warmup {
            self.draws.extend_from_slice(position);
            self.draw_stats.push(stats);
            return;
        }
        self.warmup_divergences += usize::from(stats.divergent);
        if self.keep_warmup {
            self.warmup_draws.extend_from_slice(position);
            self.warmup_stats.push(stats);
        }
    }

    fn finish(self, init: Vec<f64>) -> ChainOutput {
        let kept = &self.draw_stats;
        let depth_sum: u64 = kept.iter().map(|d| d.tree_depth).sum();
        let energy: Vec<f64> = kept.iter().map(|d| d.energy).collect();
        let e_bfmi = e_bfmi(&energy);
        // The step size of the last iteration, as nuts-rs reports it.
        let step_size = kept.last().map_or(f64::NAN, |d| d.step_size);
        ChainOutput {
            log_density: kept.iter().map(|d| d.log_density).collect(),
            draws: self.draws,
            warmup_draws: self.warmup_draws,
            diagnostics: ChainDiagnostics {
                divergences: kept.iter().filter(|d| d.divergent).count(),
                warmup_divergences: self.warmup_divergences,
                mean_tree_depth: depth_sum as f64 / kept.len() as f64,
                max_depth_hits: kept.iter().filter(|d| d.max_depth_reached).count(),
                step_size,
                init,
                e_bfmi,
                e_bfmi_warning: e_bfmi.is_some_and(|v| v < E_BFMI_THRESHOLD),
                draw_stats: self.draw_stats,
                warmup_stats: self.warmup_stats,
            },
        }
    }
}
