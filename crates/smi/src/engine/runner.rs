//! The run loop: steps an [`Engine`] to a step budget, with a row source (the engine's own
//! mini-batches, or epochs of shuffled batches), observers, early stopping, the convergence rule
//! and periodic checkpoints.

use std::path::PathBuf;
use std::time::Instant;

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::engine::checkpoint::{Checkpoint, FileCheckpoint, SavePoint};
use crate::engine::convergence::ConvergenceSettings;
use crate::engine::early_stop::EarlyStopSettings;
use crate::engine::observe::{Control, EpochEnd, Observer, Progress};
use crate::engine::state::State;
use crate::engine::verdict::ElboEstimate;
use crate::engine::Engine;
use crate::error::{Error, Result};

/// Where the data rows of each step come from.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum RowSource {
    /// The engine draws its own mini-batches (docs/algorithms.md §2.6), or uses the full data
    /// (the default).
    #[default]
    Engine,
    /// Epochs of shuffled batches, every draw of a step on the same rows.
    Epochs(Epochs),
}

/// Epochs of shuffled mini-batches: epoch e visits [`Epochs::permutation`]`(e)` in batches of
/// `batch_size` rows, the remainder dropped.
#[derive(Clone, Debug, PartialEq)]
pub struct Epochs {
    /// N, the rows to shuffle (the model's data rows).
    pub num_rows: usize,
    /// b, rows per step (1 ≤ b ≤ N).
    pub batch_size: usize,
    /// Cap on the steps of one epoch (`None`: ⌊N/b⌋).
    pub max_steps_per_epoch: Option<u64>,
    /// Seed of the shuffles.
    pub seed: u64,
}

impl Epochs {
    /// Steps per epoch: ⌊N/b⌋, capped by `max_steps_per_epoch`.
    pub fn steps_per_epoch(&self) -> u64 {
        let full = (self.num_rows / self.batch_size.max(1)) as u64;
        self.max_steps_per_epoch.map_or(full, |m| m.min(full))
    }

    /// The order of the rows in epoch `epoch`: a Fisher–Yates shuffle of `0..N` driven by
    /// ChaCha8 keyed by `seed`, stream `epoch + 1`.
    pub fn permutation(&self, epoch: u64) -> Vec<usize> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        rng.set_stream(epoch.wrapping_add(1));
        let mut perm: Vec<usize> = (0..self.num_rows).collect();
        perm.shuffle(&mut rng);
        perm
    }

    fn validate(&self) -> Result<()> {
        if self.batch_size == 0 || self.batch_size > self.num_rows {
            return Err(Error::invalid(
                "batch_size",
                format!(
                    "epochs need 1 ≤ batch size ≤ {} rows, got {}",
                    self.num_rows, self.batch_size
                ),
            ));
        }
        if self.max_steps_per_epoch == Some(0) {
            return Err(Error::invalid("max_steps_per_epoch", "must be at least 1"));
        }
        Ok(())
    }
}

/// How long to run and what to do along the way.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSettings {
    /// Run until `state.step == max_steps` (a resumed state continues to the same total): the
    /// cap, with a convergence rule.
    pub max_steps: u64,
    /// Stop early by the rule of docs/algorithms.md §7.3 on the step loss (`None`: never; the default).
    pub early_stopping: Option<EarlyStopSettings>,
    /// Stop once the ELBO estimate has stopped improving, by the rule of
    /// [`ConvergenceSettings`] (docs/convergence.md); `None` (the default): run to `max_steps`.
    /// [`RunSettings::until_converged`] sets the rule's defaults.
    pub convergence: Option<ConvergenceSettings>,
    /// Save the state to this file every `checkpoint_every` steps and at the end (the state
    /// alone; [`crate::run_with_checkpoint`] takes a [`crate::Checkpoint`] with a sidecar).
    pub checkpoint: Option<PathBuf>,
    /// Steps between checkpoints, of either kind (0: only at the end). With epochs, a multiple
    /// of the steps per epoch saves at epoch ends, before [`Observer::on_epoch_end`].
    pub checkpoint_every: u64,
    /// Where each step's rows come from (default: the engine's own).
    pub rows: RowSource,
    /// S, the draws of the fit-quality diagnostic k̂ that [`crate::fit`] computes after a
    /// variational run ([`crate::quality`]); 0 skips it. Default
    /// [`crate::DEFAULT_QUALITY_DRAWS`] = 2000. [`run`] itself ignores it.
    pub quality_draws: usize,
}

impl Default for RunSettings {
    fn default() -> Self {
        RunSettings {
            max_steps: 0,
            early_stopping: None,
            convergence: None,
            checkpoint: None,
            checkpoint_every: 0,
            rows: RowSource::Engine,
            quality_draws: crate::quality::DEFAULT_QUALITY_DRAWS,
        }
    }
}

impl RunSettings {
    /// `max_steps` steps, no early stopping, no checkpoints.
    pub fn steps(max_steps: u64) -> Self {
        RunSettings {
            max_steps,
            ..Default::default()
        }
    }

    /// Until the ELBO estimate converges by [`ConvergenceSettings::default`], at most
    /// `max_steps` steps; no early stopping, no checkpoints.
    pub fn until_converged(max_steps: u64) -> Self {
        RunSettings::steps(max_steps).with_convergence(ConvergenceSettings::default())
    }

    /// The same settings with the convergence rule `convergence`.
    pub fn with_convergence(mut self, convergence: ConvergenceSettings) -> Self {
        self.convergence = Some(convergence);
        self
    }
}

/// Why a run ended.
///
/// A run whose ELBO estimates fail the verdict of docs/convergence.md ("When a fit cannot be
/// trusted") ends as [`Termination::Diverged`] or [`Termination::Unstable`] whatever stopped
/// it, with the reason in [`RunResult::reason`]: a run never reports
/// [`Termination::Converged`] (or a plain [`Termination::MaxSteps`]) over non-finite, absurd,
/// heavy-tailed or falling ELBO estimates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Termination {
    /// The step budget (the cap) was used up.
    MaxSteps,
    /// The early-stopping rule fired.
    EarlyStopped,
    /// The convergence rule fired: the ELBO estimate stopped improving (and no longer trends).
    Converged,
    /// The ELBO estimates became non-finite or absurdly small: the result is not a fit.
    Diverged,
    /// The ELBO estimates are heavy-tailed, sometimes non-finite, or fell below the start or
    /// far from their best: the result is not to be trusted.
    Unstable,
}

impl Termination {
    /// Lower-case name, as in Python results and on the command line: `"max_steps"`,
    /// `"early_stopped"`, `"converged"`, `"diverged"`, `"unstable"`.
    pub fn name(self) -> &'static str {
        match self {
            Termination::MaxSteps => "max_steps",
            Termination::EarlyStopped => "early_stopped",
            Termination::Converged => "converged",
            Termination::Diverged => "diverged",
            Termination::Unstable => "unstable",
        }
    }

    /// Whether the run ended in a failure ([`Termination::Diverged`] or
    /// [`Termination::Unstable`]).
    pub fn is_failure(self) -> bool {
        matches!(self, Termination::Diverged | Termination::Unstable)
    }
}

impl std::fmt::Display for Termination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The outcome of [`run`].
#[derive(Clone, Debug)]
pub struct RunResult {
    /// The final state (save it to resume).
    pub state: State,
    /// The loss of every step of this call.
    pub losses: Vec<f64>,
    /// The ELBO estimate of every step of this call (NaN for a skipped step), beside `losses`.
    pub elbos: Vec<f64>,
    /// Why the run ended.
    pub termination: Termination,
    /// Why, in words, for [`Termination::Diverged`] and [`Termination::Unstable`] (`None`
    /// otherwise).
    pub reason: Option<String>,
    /// The ELBO at the end: the mean of the last ≤ 500 finite estimates and its Monte Carlo
    /// standard error (`None` when none was finite).
    pub elbo: Option<ElboEstimate>,
    /// Wall-clock seconds of this call.
    pub seconds: f64,
    /// Whether an observer stopped the run ([`Control::Stop`]) before its budget and rules
    /// ended it.
    pub stopped: bool,
}

/// Steps `engine` from `state` until `settings.max_steps`, the early-stopping rule, the
/// convergence rule, or an error, then judges the run's ELBO estimates
/// ([`crate::ElboTrack::verdict`]): a run that fails the verdict ends as
/// [`Termination::Diverged`] or [`Termination::Unstable`] with the reason. The convergence
/// rule does not fire while the recent estimates still trend ([`crate::ElboTrack::trend`]).
///
/// Observers see every step. With a checkpoint file, the state is saved atomically every
/// `checkpoint_every` steps and at the end of a run that took a step. A state whose rule has
/// already fired (early stopping or convergence, under the same rule) returns at once with that
/// termination.
///
/// # Errors
/// Invalid convergence or epoch settings; the first non-recoverable engine error (with the
/// policy `Error`, a non-finite step too), or a checkpoint write failure.
pub fn run<E: Engine + ?Sized>(
    engine: &E,
    state: State,
    settings: &RunSettings,
    observer: &mut dyn Observer,
) -> Result<RunResult> {
    let mut file = settings.checkpoint.clone().map(FileCheckpoint::state_only);
    let checkpoint = file.as_mut().map(|f| f as &mut dyn Checkpoint);
    run_inner(engine, state, settings, observer, checkpoint)
}

/// [`run`] saving to `checkpoint` (every `settings.checkpoint_every` steps, when an observer
/// asks, and at the end) instead of `settings.checkpoint`, which must be `None`.
///
/// # Errors
/// As [`run`]; [`Error::InvalidSettings`] when `settings.checkpoint` is set too; what
/// `checkpoint` cannot save.
pub fn run_with_checkpoint<E: Engine + ?Sized>(
    engine: &E,
    state: State,
    settings: &RunSettings,
    observer: &mut dyn Observer,
    checkpoint: &mut dyn Checkpoint,
) -> Result<RunResult> {
    if settings.checkpoint.is_some() {
        return Err(Error::invalid(
            "checkpoint",
            "give the checkpoint once: in the settings or as the argument",
        ));
    }
    run_inner(engine, state, settings, observer, Some(checkpoint))
}

fn run_inner<E: Engine + ?Sized>(
    engine: &E,
    mut state: State,
    settings: &RunSettings,
    observer: &mut dyn Observer,
    mut checkpoint: Option<&mut dyn Checkpoint>,
) -> Result<RunResult> {
    let start = Instant::now();
    let mut losses = Vec::new();
    let mut elbos = Vec::new();
    let mut termination = Termination::MaxSteps;
    if let Some(c) = &settings.convergence {
        c.validate()?;
        state.convergence.prepare(c);
    }
    let epochs = match &settings.rows {
        RowSource::Engine => None,
        RowSource::Epochs(e) => {
            e.validate()?;
            Some(e)
        }
    };
    // The current epoch's number and row order, and its finite losses (sum, count).
    let mut order: Option<(u64, Vec<usize>)> = None;
    let (mut epoch_sum, mut epoch_count) = (0.0, 0u64);
    let mut saved_at = None;
    let mut at = SavePoint::default();
    observer.on_start(settings.max_steps);
    if state.early_stop.stopped && settings.early_stopping.is_some() {
        termination = Termination::EarlyStopped;
    } else if state.convergence.converged && settings.convergence.is_some() {
        termination = Termination::Converged;
    }
    let mut stopped = false;
    while !stopped && termination == Termination::MaxSteps && state.step < settings.max_steps {
        let info = match epochs {
            None => engine.step(&mut state, None)?,
            Some(e) => {
                let spe = e.steps_per_epoch();
                let epoch = state.step / spe;
                if order.as_ref().is_none_or(|(n, _)| *n != epoch) {
                    order = Some((epoch, e.permutation(epoch)));
                }
                let pos = (state.step % spe) as usize;
                let perm = order.as_ref().map_or(&[][..], |(_, p)| p.as_slice());
                let rows = &perm[pos * e.batch_size..(pos + 1) * e.batch_size];
                engine.step(&mut state, Some(rows))?
            }
        };
        losses.push(info.loss);
        elbos.push(info.elbo);
        state.elbo_track.push(info.elbo);
        if info.loss.is_finite() {
            epoch_sum += info.loss;
            epoch_count += 1;
        }
        observer.on_step(
            &Progress::new(state.step, settings.max_steps, info.loss, "fit").with_elbo(info.elbo),
        );
        if let Some(es) = &settings.early_stopping {
            if info.loss.is_finite() && state.early_stop.update(es, info.loss) {
                termination = Termination::EarlyStopped;
            }
        }
        if let Some(c) = &settings.convergence {
            // Updated even after an early stop, so the state's accumulators do not depend on
            // which rule fired first.
            let cuts = state.lr_schedule.cuts;
            if state.convergence.update(c, state.step, info.elbo, cuts)
                && termination == Termination::MaxSteps
            {
                if state.elbo_track.trend().is_some() {
                    // Not flat yet: wait another `patience` windows.
                    state.convergence.converged = false;
                    state.convergence.windows.wait = 0;
                } else {
                    termination = Termination::Converged;
                }
            }
        }
        // The epoch just finished, if this step ended one: (epochs, mean loss).
        let ended = epochs.and_then(|e| {
            let spe = e.steps_per_epoch();
            state.step.is_multiple_of(spe).then(|| {
                let mean_loss = if epoch_count > 0 {
                    epoch_sum / epoch_count as f64
                } else {
                    f64::NAN
                };
                (state.step / spe, mean_loss)
            })
        });
        if ended.is_some() {
            at.epoch = ended;
        }
        if let Some(c) = checkpoint.as_deref_mut() {
            if settings.checkpoint_every > 0 && state.step.is_multiple_of(settings.checkpoint_every)
            {
                engine.sync(&mut state)?;
                c.save(&state, &at)?;
                saved_at = Some(state.step);
            }
        }
        if let (Some(e), Some((epoch, mean_loss))) = (epochs, ended) {
            engine.sync(&mut state)?;
            observer.on_epoch_end(&EpochEnd {
                epoch,
                steps_per_epoch: e.steps_per_epoch(),
                mean_loss,
                state: &state,
            })?;
            (epoch_sum, epoch_count) = (0.0, 0);
        }
        match observer.control(state.step) {
            Control::Continue => {}
            Control::Checkpoint => {
                if let Some(c) = checkpoint
                    .as_deref_mut()
                    .filter(|_| saved_at != Some(state.step))
                {
                    engine.sync(&mut state)?;
                    c.save(&state, &at)?;
                    saved_at = Some(state.step);
                }
            }
            // only an unfinished run counts as stopped
            Control::Stop => {
                stopped = termination == Termination::MaxSteps && state.step < settings.max_steps
            }
        }
    }
    engine.sync(&mut state)?;
    let mut reason = None;
    if let Some((verdict, why)) = state.elbo_track.verdict(engine.elbo_checks()) {
        termination = verdict;
        reason = Some(why);
    }
    if let Some(c) = checkpoint {
        // A run that took no step has nothing new to save (a state resumed at its end keeps
        // its files as they are).
        if !losses.is_empty() && saved_at != Some(state.step) {
            c.save(&state, &at)?;
        }
    }
    observer.on_finish();
    let elbo = state.elbo_track.estimate();
    Ok(RunResult {
        state,
        losses,
        elbos,
        termination,
        reason,
        elbo,
        seconds: start.elapsed().as_secs_f64(),
        stopped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::method::Method;
    use crate::testing::BayesLinReg;
    use crate::{Matrix, NoObserver, OptimizerSettings};

    fn epochs(seed: u64) -> Epochs {
        Epochs {
            num_rows: 1000,
            batch_size: 7,
            max_steps_per_epoch: None,
            seed,
        }
    }

    #[test]
    fn epoch_permutations_are_seeded_shuffles() {
        let a = epochs(142).permutation(0);
        let mut s = a.clone();
        s.sort_unstable();
        assert_eq!(s, (0..1000).collect::<Vec<_>>());
        assert_eq!(a, epochs(142).permutation(0));
        assert_ne!(a, epochs(142).permutation(1));
        assert_ne!(a, epochs(143).permutation(0));
        assert_eq!(epochs(0).steps_per_epoch(), 142);
        let capped = Epochs {
            max_steps_per_epoch: Some(5),
            ..epochs(0)
        };
        assert_eq!(capped.steps_per_epoch(), 5);
    }

    /// A Bayesian linear regression on `n` rows of two deterministic features.
    fn linreg(n: usize) -> BayesLinReg {
        let x = Matrix::from_fn(n, 2, |i, j| ((i * 7 + j * 3) % 11) as f64 / 5.0 - 1.0);
        let y: Vec<f64> = (0..n).map(|i| (i % 5) as f64 / 2.0 - 1.0).collect();
        BayesLinReg::new(x, y, 0.5, 1.0).unwrap()
    }

    /// OVI with Adam(0.01) on `model`.
    fn ovi(model: &BayesLinReg) -> Box<dyn Engine + '_> {
        Method::Ovi
            .preset(0)
            .with_optimizer(OptimizerSettings::adam(0.01))
            .build(model)
            .unwrap()
    }

    #[test]
    fn an_observer_stops_a_run_and_asks_for_checkpoints() {
        // Control::Checkpoint at step 3 saves the state of step 3 (read back at step 4);
        // Control::Stop at step 7 ends the run there, stopped and saved as any run's end; the
        // run continued from that state ends where one straight run does; a stop asked at the
        // budget's last step is no stop
        let model = linreg(30);
        let engine = ovi(&model);
        let dir = std::env::temp_dir().join(format!("smi-control-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.json");
        let settings = RunSettings {
            checkpoint: Some(path.clone()),
            ..RunSettings::steps(12)
        };
        struct Rule<'a> {
            engine: &'a dyn Engine,
            path: &'a std::path::Path,
            asked: Vec<u64>,
            saved_at_4: Option<u64>,
        }
        impl Observer for Rule<'_> {
            fn control(&mut self, step: u64) -> Control {
                self.asked.push(step);
                if step == 4 {
                    self.saved_at_4 = self.engine.load_state(self.path).ok().map(|s| s.step);
                }
                match step {
                    3 => Control::Checkpoint,
                    7 | 12 => Control::Stop,
                    _ => Control::Continue,
                }
            }
        }
        let straight = run(
            engine.as_ref(),
            engine.init().unwrap(),
            &RunSettings::steps(12),
            &mut NoObserver,
        )
        .unwrap();
        assert!(!straight.stopped);
        let mut rule = Rule {
            engine: engine.as_ref(),
            path: &path,
            asked: Vec::new(),
            saved_at_4: None,
        };
        let first = run(
            engine.as_ref(),
            engine.init().unwrap(),
            &settings,
            &mut rule,
        )
        .unwrap();
        assert!(first.stopped);
        assert_eq!(first.state.step, 7);
        assert_eq!(rule.asked, (1..=7).collect::<Vec<_>>());
        assert_eq!(rule.saved_at_4, Some(3));
        let on_disk = engine.load_state(&path).unwrap();
        assert_eq!(on_disk.step, 7);
        assert_eq!(on_disk.particles, first.state.particles);
        let rest = run(engine.as_ref(), first.state, &settings, &mut rule).unwrap();
        assert!(!rest.stopped, "a stop at the budget's last step is no stop");
        assert_eq!(rest.state.particles, straight.state.particles);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn epochs_feed_the_same_rows_as_a_hand_written_loop() {
        let model = linreg(40);
        let engine = ovi(&model);
        let rows = Epochs {
            num_rows: 40,
            batch_size: 8,
            max_steps_per_epoch: Some(4),
            seed: 9,
        };
        let settings = RunSettings {
            max_steps: 10,
            rows: RowSource::Epochs(rows.clone()),
            ..Default::default()
        };
        struct Ends(Vec<u64>);
        impl Observer for Ends {
            fn on_epoch_end(&mut self, end: &EpochEnd<'_>) -> Result<()> {
                self.0.push(end.epoch);
                Ok(())
            }
        }
        let mut ends = Ends(Vec::new());
        let got = run(
            engine.as_ref(),
            engine.init().unwrap(),
            &settings,
            &mut ends,
        )
        .unwrap();
        assert_eq!(ends.0, vec![1, 2]);
        let mut state = engine.init().unwrap();
        for step in 0..10u64 {
            let (epoch, pos) = ((step / 4), (step % 4) as usize);
            let perm = rows.permutation(epoch);
            engine
                .step(&mut state, Some(&perm[pos * 8..(pos + 1) * 8]))
                .unwrap();
        }
        assert_eq!(got.state.particles, state.particles);
        // A run resumed mid-epoch continues with the same rows.
        let half = run(
            engine.as_ref(),
            engine.init().unwrap(),
            &RunSettings {
                max_steps: 6,
                ..settings.clone()
            },
            &mut NoObserver,
        )
        .unwrap();
        let rest = run(engine.as_ref(), half.state, &settings, &mut NoObserver).unwrap();
        assert_eq!(rest.state.particles, state.particles);
        let bad = RunSettings {
            rows: RowSource::Epochs(Epochs {
                batch_size: 41,
                ..rows
            }),
            ..settings
        };
        assert!(run(
            engine.as_ref(),
            engine.init().unwrap(),
            &bad,
            &mut NoObserver
        )
        .is_err());
    }
}
