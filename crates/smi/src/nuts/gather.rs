//! NUTS chains that share one model call per round, for models with a large fixed cost per call
//! ([`LogDensity::one_call_per_step`]: a Python/JAX function, where each call crosses into
//! another runtime).
//!
//! Each chain runs on its own thread and sees a [`Seat`], a one-draw [`LogDensity`]. A chain's
//! evaluation waits until every chain still running has asked for one; then the calling thread
//! ([`Gather::serve`]) evaluates all the positions in **one** call of the model (rows in chain
//! order, padded to the number of chains with copies of the first row so that the call's shape
//! never changes and a JIT compiles once) and hands each chain its row. Every call runs on that
//! one thread: a Python model is then always called from the thread that called the engine,
//! whose interpreter state exists already (from a new thread each time, taking the GIL builds
//! and drops a thread state per call, which doubled the cost of a call of a jitted JAX
//! function). Chain 0's progress reaches the observer on that thread too ([`Relay`]).
//!
//! Each round holds exactly the next request of every running chain, so which positions share a
//! call does not depend on the threads' timing: a seeded run repeats, and each chain's draws
//! are those it makes alone wherever the model's value of a row does not depend on the other
//! rows of its call.

use std::sync::{Condvar, Mutex, MutexGuard};

use crate::engine::{Observer, Progress};
use crate::error::{Error, Result};
use crate::model::{Batch, LogDensity};

/// One chain's answer: log p and ∇ log p at its position, or the evaluation's error.
type Answer = Result<(f64, Vec<f64>)>;

/// The rounds of one run: `width` chains over `model`.
pub(super) struct Gather<'m> {
    model: &'m dyn LogDensity,
    width: usize,
    rounds: Mutex<Rounds>,
    /// Wakes the serving thread: a round is complete, a chain left, or progress arrived.
    to_server: Condvar,
    /// Wakes the chains: a round's answers are in.
    to_chains: Condvar,
}

/// The state of the current round.
struct Rounds {
    /// Chains still running (not yet left through [`Seat`]'s drop).
    live: usize,
    /// Each chain's position waiting for this round's call.
    asked: Vec<Option<Vec<f64>>>,
    /// Each chain's answer, until the chain takes it.
    answers: Vec<Option<Answer>>,
    /// Chain 0's progress records not yet handed to the observer.
    progress: Vec<Progress>,
}

impl Rounds {
    fn waiting(&self) -> usize {
        self.asked.iter().filter(|a| a.is_some()).count()
    }

    /// Whether the serving thread has something to do.
    fn due(&self) -> bool {
        self.live == 0 || self.waiting() == self.live || !self.progress.is_empty()
    }
}

impl<'m> Gather<'m> {
    /// Rounds for `chains` chains (at least one) on `model`.
    pub(super) fn new(model: &'m dyn LogDensity, chains: usize) -> Self {
        Gather {
            model,
            width: chains.max(1),
            rounds: Mutex::new(Rounds {
                live: chains.max(1),
                asked: vec![None; chains.max(1)],
                answers: (0..chains.max(1)).map(|_| None).collect(),
                progress: Vec::new(),
            }),
            to_server: Condvar::new(),
            to_chains: Condvar::new(),
        }
    }

    /// Chain `chain`'s seat (one per chain; dropping it leaves the rounds).
    pub(super) fn seat(&self, chain: usize) -> Seat<'_, 'm> {
        Seat {
            gather: self,
            chain,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Rounds> {
        // A chain that panicked while holding the lock left the rounds consistent (every
        // change below is a single assignment), so a poisoned lock is taken as is.
        self.rounds.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'a>(&self, on: &Condvar, rounds: MutexGuard<'a, Rounds>) -> MutexGuard<'a, Rounds> {
        on.wait(rounds).unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes the serving thread when it has something to do (a wake-up per request would
    /// cost a context switch each on a machine with fewer cores than chains).
    fn wake_server(&self, rounds: &Rounds) {
        if rounds.due() {
            self.to_server.notify_one();
        }
    }

    /// The serving loop, on the thread that called the engine: runs each round once every
    /// running chain has asked, hands chain 0's progress to `observer`, and returns when every
    /// chain has left.
    pub(super) fn serve(&self, observer: &mut dyn Observer) {
        loop {
            let mut rounds = self.lock();
            while !rounds.due() {
                rounds = self.wait(&self.to_server, rounds);
            }
            let progress = std::mem::take(&mut rounds.progress);
            let done = rounds.live == 0;
            if !done && rounds.waiting() == rounds.live {
                self.run_round(&mut rounds);
            }
            drop(rounds);
            for p in &progress {
                observer.on_step(p);
            }
            if done {
                return;
            }
        }
    }

    /// Chain `chain`'s evaluation at `theta`: waits for its round's answer.
    fn evaluate(&self, chain: usize, theta: &[f64], grad: &mut [f64]) -> Result<f64> {
        let mut rounds = self.lock();
        rounds.asked[chain] = Some(theta.to_vec());
        self.wake_server(&rounds);
        loop {
            if let Some(answer) = rounds.answers[chain].take() {
                let (logp, g) = answer?;
                grad.copy_from_slice(&g);
                return Ok(logp);
            }
            rounds = self.wait(&self.to_chains, rounds);
        }
    }

    /// Chain `chain` stopped: the round no longer waits for it.
    fn leave(&self, chain: usize) {
        let mut rounds = self.lock();
        rounds.live = rounds.live.saturating_sub(1);
        rounds.asked[chain] = None;
        self.wake_server(&rounds);
    }

    /// An observer for chain 0 that passes its progress to [`Gather::serve`]'s observer.
    pub(super) fn relay(&self) -> Relay<'_, 'm> {
        Relay { gather: self }
    }

    /// Evaluates every waiting position in one call of the model (rows in chain order, padded
    /// to `width`), answers each chain and wakes them. A recoverable error of the whole call
    /// (e.g. one row's non-finite value, reported by the model for the call) is retried row by
    /// row so that it ends only that chain's trajectory; another error goes to every chain of
    /// the round (the first in chain order gets the model's error itself).
    fn run_round(&self, rounds: &mut Rounds) {
        let d = self.model.dim();
        // The asked positions in chain order, then copies of the first up to `width` rows.
        let mut chains = Vec::with_capacity(rounds.asked.len());
        let mut theta = Vec::with_capacity(self.width.max(rounds.asked.len()) * d);
        for (c, asked) in rounds.asked.iter_mut().enumerate() {
            if let Some(row) = asked.take() {
                theta.extend_from_slice(&row);
                chains.push(c);
            }
        }
        if chains.is_empty() {
            return;
        }
        let k = self.width.max(chains.len());
        for _ in chains.len()..k {
            theta.extend_from_within(..d);
        }
        let mut logp = vec![0.0; k];
        let mut grad = vec![0.0; k * d];
        let batch = Batch::full();
        match self
            .model
            .log_density_and_grad(&theta, &batch, &mut logp, &mut grad)
        {
            Ok(()) => {
                for (i, &c) in chains.iter().enumerate() {
                    rounds.answers[c] = Some(Ok((logp[i], grad[i * d..(i + 1) * d].to_vec())));
                }
            }
            Err(e) if e.is_recoverable() => {
                for (&c, row) in chains.iter().zip(theta.chunks_exact(d)) {
                    let mut lp = [0.0];
                    let mut g = vec![0.0; d];
                    rounds.answers[c] = Some(
                        self.model
                            .log_density_and_grad(row, &batch, &mut lp, &mut g)
                            .map(|()| (lp[0], g)),
                    );
                }
            }
            Err(e) => {
                let message = e.to_string();
                let mut original = Some(e);
                for &c in &chains {
                    let err = original.take().unwrap_or_else(|| {
                        Error::Model(format!("another chain's evaluation failed: {message}").into())
                    });
                    rounds.answers[c] = Some(Err(err));
                }
            }
        }
        self.to_chains.notify_all();
    }
}

/// Chain 0's observer in a gathered run: queues each progress record for the serving thread.
pub(super) struct Relay<'g, 'm> {
    gather: &'g Gather<'m>,
}

impl Observer for Relay<'_, '_> {
    fn on_step(&mut self, progress: &Progress) {
        let mut rounds = self.gather.lock();
        rounds.progress.push(progress.clone());
        self.gather.to_server.notify_one();
    }
}

/// One chain's view of a [`Gather`]: a [`LogDensity`] of one draw per call. Dropping it takes
/// the chain out of the rounds.
pub(super) struct Seat<'g, 'm> {
    gather: &'g Gather<'m>,
    chain: usize,
}

impl Drop for Seat<'_, '_> {
    fn drop(&mut self) {
        self.gather.leave(self.chain);
    }
}

impl LogDensity for Seat<'_, '_> {
    fn dim(&self) -> usize {
        self.gather.model.dim()
    }

    fn num_data(&self) -> usize {
        self.gather.model.num_data()
    }

    fn layout(&self) -> crate::model::Layout {
        self.gather.model.layout()
    }

    fn one_call_per_step(&self) -> bool {
        true
    }

    /// One draw (K = 1), evaluated on the full data ([`Batch::full`], what NUTS asks for)
    /// whatever `_batch` says; another K is an error.
    fn log_density_and_grad(
        &self,
        theta: &[f64],
        _batch: &Batch,
        logp: &mut [f64],
        grad: &mut [f64],
    ) -> Result<()> {
        let d = self.dim();
        if theta.len() != d || logp.len() != 1 || grad.len() != d {
            return Err(Error::invalid(
                "batch",
                "a NUTS chain evaluates one position on the full data per call",
            ));
        }
        logp[0] = self.gather.evaluate(self.chain, theta, grad)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A standard normal that counts its calls and the rows of each; `broken`, every call
    /// fails.
    struct Counted {
        calls: AtomicUsize,
        rows: AtomicUsize,
        broken: bool,
    }

    impl Counted {
        fn new(broken: bool) -> Self {
            Counted {
                calls: AtomicUsize::new(0),
                rows: AtomicUsize::new(0),
                broken,
            }
        }
    }

    impl LogDensity for Counted {
        fn dim(&self) -> usize {
            2
        }
        fn log_density_and_grad(
            &self,
            theta: &[f64],
            _batch: &Batch,
            logp: &mut [f64],
            grad: &mut [f64],
        ) -> Result<()> {
            if self.broken {
                return Err(Error::Model("broken".to_string().into()));
            }
            self.calls.fetch_add(1, Ordering::Relaxed);
            self.rows.fetch_add(logp.len(), Ordering::Relaxed);
            for (k, lp) in logp.iter_mut().enumerate() {
                let x = &theta[2 * k..2 * k + 2];
                *lp = -0.5 * (x[0] * x[0] + x[1] * x[1]);
                grad[2 * k] = -x[0];
                grad[2 * k + 1] = -x[1];
            }
            Ok(())
        }
    }

    #[test]
    fn chains_share_calls_padded_to_the_chain_count_and_a_leaving_chain_is_not_awaited() {
        let model = Counted::new(false);
        let gather = Gather::new(&model, 3);
        // Chain c asks 2 + 3c times at x = (c, step); chain 0 leaves first.
        let results: Vec<Vec<(f64, Vec<f64>)>> = std::thread::scope(|s| {
            s.spawn(|| gather.serve(&mut crate::engine::NoObserver));
            let handles: Vec<_> = (0..3)
                .map(|c| {
                    let seat = gather.seat(c);
                    s.spawn(move || {
                        let mut out = Vec::new();
                        for step in 0..2 + 3 * c {
                            let x = [c as f64, step as f64];
                            let (mut lp, mut g) = ([0.0], [0.0; 2]);
                            seat.log_density_and_grad(&x, &Batch::full(), &mut lp, &mut g)
                                .unwrap();
                            out.push((lp[0], g.to_vec()));
                        }
                        out
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (c, out) in results.iter().enumerate() {
            for (step, (lp, g)) in out.iter().enumerate() {
                let x = [c as f64, step as f64];
                assert_eq!(*lp, -0.5 * (x[0] * x[0] + x[1] * x[1]));
                assert_eq!(g, &vec![-x[0], -x[1]]);
            }
        }
        // Rounds = the longest chain's requests (8); each call has 3 rows.
        assert_eq!(model.calls.load(Ordering::Relaxed), 8);
        assert_eq!(model.rows.load(Ordering::Relaxed), 24);
    }

    #[test]
    fn an_unrecoverable_error_reaches_every_chain_of_its_round() {
        // A model whose batch call fails outright.
        let broken = Counted::new(true);
        let gather = Gather::new(&broken, 2);
        let errors: Vec<String> = std::thread::scope(|s| {
            s.spawn(|| gather.serve(&mut crate::engine::NoObserver));
            let handles: Vec<_> = (0..2)
                .map(|c| {
                    let seat = gather.seat(c);
                    s.spawn(move || {
                        let (mut lp, mut g) = ([0.0], [0.0; 2]);
                        seat.log_density_and_grad(&[0.0; 2], &Batch::full(), &mut lp, &mut g)
                            .unwrap_err()
                            .to_string()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(errors[0].contains("broken"), "{errors:?}");
        assert!(
            errors[1].contains("another chain's evaluation failed"),
            "{errors:?}"
        );
    }
}
