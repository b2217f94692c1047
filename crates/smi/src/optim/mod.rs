//! Optimizers over explicit directions (docs/algorithms.md §2.4), with JAX `example_libraries` semantics.
//!
//! An optimizer receives the "gradient" of a minimiser: engines pass −φ (the negated Stein
//! force) or −∇ELBO, so parameters move along φ. All state is serialisable for checkpoints.

mod adagrad;
mod adam;
mod lr_schedule;
mod schedule;
mod sgd;

pub use adagrad::AdagradState;
pub use adam::AdamState;
pub use lr_schedule::{LrDecay, LrSchedule, LrScheduleState, PlateauSettings};
pub use schedule::Schedule;
pub use sgd::SgdState;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Parameter count from which an update runs in parallel blocks (elementwise, so the result
/// does not depend on the threads); below it the update stays on the calling thread.
const PAR_MIN: usize = 1 << 16;
/// Block length of a parallel update.
const PAR_BLOCK: usize = 1 << 14;
/// One block of an update: (((x, g), state 1), state 2), as the zipped chunks arrive.
type Block<'a> = (((&'a mut [f64], &'a [f64]), &'a mut [f64]), &'a mut [f64]);

/// Applies the elementwise `update` to x, g and two state vectors (all the same length): in
/// parallel blocks of [`PAR_BLOCK`] from [`PAR_MIN`] values, else on the calling thread. The
/// result does not depend on the threads.
fn for_each_block(
    x: &mut [f64],
    g: &[f64],
    s1: &mut [f64],
    s2: &mut [f64],
    update: impl Fn(Block<'_>) + Sync + Send,
) {
    use rayon::prelude::*;
    if x.len() >= PAR_MIN {
        x.par_chunks_mut(PAR_BLOCK)
            .zip(g.par_chunks(PAR_BLOCK))
            .zip(s1.par_chunks_mut(PAR_BLOCK))
            .zip(s2.par_chunks_mut(PAR_BLOCK))
            .for_each(update);
    } else {
        update((((x, g), s1), s2));
    }
}

/// Which optimizer and its hyperparameters, with its learning-rate schedule (a constant rate
/// unless set by [`OptimizerSettings::with_schedule`]; a constant schedule is left out of the
/// JSON, so settings without one serialise, and fingerprint, as before schedules existed).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OptimizerSettings {
    /// Adam(lr; b1 = 0.9, b2 = 0.999, eps = 1e-8 by [`OptimizerSettings::adam`]).
    Adam {
        /// Step size.
        lr: f64,
        /// First-moment decay.
        b1: f64,
        /// Second-moment decay.
        b2: f64,
        /// Denominator offset.
        eps: f64,
        /// The learning-rate schedule (default: constant).
        #[serde(default, skip_serializing_if = "LrSchedule::is_constant")]
        schedule: LrSchedule,
        /// The spike guard c (default none: plain Adam): from the second step, each
        /// coordinate's gradient is clipped to ±c·√v̂ (v̂ its bias-corrected running mean
        /// square before the step) before it enters the moments (docs/algorithms.md §2.4,
        /// [`OptimizerSettings::with_spike_guard`]). Left out of the JSON when unset.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        spike_guard: Option<f64>,
    },
    /// NumPyro's Adagrad with momentum (0.9 by [`OptimizerSettings::adagrad`]): not textbook
    /// Adagrad (docs/algorithms.md §2.4). NumPyro recommends it for SteinVI.
    Adagrad {
        /// Step size.
        lr: f64,
        /// Momentum on the normalised gradient.
        momentum: f64,
        /// The learning-rate schedule (default: constant).
        #[serde(default, skip_serializing_if = "LrSchedule::is_constant")]
        schedule: LrSchedule,
    },
    /// Plain gradient descent x ← x − lr·g.
    Sgd {
        /// Step size.
        lr: f64,
        /// The learning-rate schedule (default: constant).
        #[serde(default, skip_serializing_if = "LrSchedule::is_constant")]
        schedule: LrSchedule,
    },
}

impl OptimizerSettings {
    /// Adam with the JAX defaults b1 = 0.9, b2 = 0.999, eps = 1e-8.
    pub fn adam(lr: f64) -> Self {
        OptimizerSettings::Adam {
            lr,
            b1: 0.9,
            b2: 0.999,
            eps: 1e-8,
            schedule: LrSchedule::default(),
            spike_guard: None,
        }
    }

    /// These settings with Adam's spike guard c ([`OptimizerSettings::Adam`]'s `spike_guard`;
    /// other optimizers are returned unchanged).
    ///
    /// Why: one draw deep in a funnel's neck can give a gradient 10⁶ times the usual one. Adam
    /// normalises the step, so that draw pushes each coordinate it touches by about
    /// lr·Σₖ b1ᵏ(1 − b1)/√(1 − b2) ≈ 32·lr over the next steps (b1 = 0.9, b2 = 0.999), and its
    /// g² dominates v for many multiples of 1/(1 − b2) = 1000 steps, so the coordinate then
    /// barely moves from where the spike threw it. Clipped at c times the running RMS, the
    /// spike pushes by at most about c·lr (c ordinary steps) and leaves v almost as it was.
    pub fn with_spike_guard(self, c: f64) -> Self {
        match self {
            OptimizerSettings::Adam {
                lr,
                b1,
                b2,
                eps,
                schedule,
                ..
            } => OptimizerSettings::Adam {
                lr,
                b1,
                b2,
                eps,
                schedule,
                spike_guard: Some(c),
            },
            other => other,
        }
    }

    /// Adam's spike guard c, if set.
    pub fn spike_guard(&self) -> Option<f64> {
        match self {
            OptimizerSettings::Adam { spike_guard, .. } => *spike_guard,
            _ => None,
        }
    }

    /// NumPyro's Adagrad with momentum 0.9.
    pub fn adagrad(lr: f64) -> Self {
        OptimizerSettings::Adagrad {
            lr,
            momentum: 0.9,
            schedule: LrSchedule::default(),
        }
    }

    /// Plain SGD.
    pub fn sgd(lr: f64) -> Self {
        OptimizerSettings::Sgd {
            lr,
            schedule: LrSchedule::default(),
        }
    }

    /// The same optimizer under the learning-rate schedule `schedule`.
    pub fn with_schedule(mut self, schedule: LrSchedule) -> Self {
        match &mut self {
            OptimizerSettings::Adam { schedule: s, .. }
            | OptimizerSettings::Adagrad { schedule: s, .. }
            | OptimizerSettings::Sgd { schedule: s, .. } => *s = schedule,
        }
        self
    }

    /// The same optimizer (its moments' settings, schedule and spike guard kept) at base
    /// learning rate `lr`.
    pub fn with_lr(mut self, lr: f64) -> Self {
        match &mut self {
            OptimizerSettings::Adam { lr: l, .. }
            | OptimizerSettings::Adagrad { lr: l, .. }
            | OptimizerSettings::Sgd { lr: l, .. } => *l = lr,
        }
        self
    }

    /// The base learning rate (the rate of every step under a constant schedule).
    pub fn lr(&self) -> f64 {
        match *self {
            OptimizerSettings::Adam { lr, .. }
            | OptimizerSettings::Adagrad { lr, .. }
            | OptimizerSettings::Sgd { lr, .. } => lr,
        }
    }

    /// The learning-rate schedule.
    pub fn schedule(&self) -> &LrSchedule {
        match self {
            OptimizerSettings::Adam { schedule, .. }
            | OptimizerSettings::Adagrad { schedule, .. }
            | OptimizerSettings::Sgd { schedule, .. } => schedule,
        }
    }

    /// The rate of step `t` (from 0) under the schedule, given its `state`.
    pub fn lr_at(&self, t: u64, state: &LrScheduleState) -> f64 {
        self.schedule().lr(self.lr(), t, state)
    }

    /// Checks the hyperparameters.
    ///
    /// # Errors
    /// [`Error::InvalidSettings`] for a non-positive or non-finite lr, decays outside [0, 1), or
    /// an invalid schedule ([`LrSchedule::validate`]).
    pub fn validate(&self) -> Result<()> {
        let lr = self.lr();
        if !(lr.is_finite() && lr > 0.0) {
            return Err(Error::invalid(
                "lr",
                format!("the learning rate must be a positive finite number, got {lr}"),
            ));
        }
        let unit = |field: &'static str, v: f64| {
            if (0.0..1.0).contains(&v) {
                Ok(())
            } else {
                Err(Error::invalid(
                    field,
                    format!("must lie in [0, 1), got {v}"),
                ))
            }
        };
        match *self {
            OptimizerSettings::Adam {
                b1,
                b2,
                eps,
                spike_guard,
                ..
            } => {
                unit("b1", b1)?;
                unit("b2", b2)?;
                if let Some(c) = spike_guard {
                    if !(c.is_finite() && c > 0.0) {
                        return Err(Error::invalid(
                            "spike_guard",
                            format!("must be finite and > 0, got {c}"),
                        ));
                    }
                }
                if eps.is_nan() || eps <= 0.0 {
                    return Err(Error::invalid(
                        "eps",
                        format!("must be positive, got {eps}"),
                    ));
                }
            }
            OptimizerSettings::Adagrad { momentum, .. } => unit("momentum", momentum)?,
            OptimizerSettings::Sgd { .. } => {}
        }
        self.schedule().validate(lr)
    }

    /// Fresh state for `n` parameters, reporting a failed allocation as an error instead of
    /// aborting.
    pub(crate) fn try_init(&self, n: usize) -> Result<OptimizerState> {
        let zeros = |what: &str| {
            crate::matrix::try_zeros_vec(n, what).map_err(|e| {
                Error::invalid(
                    "num_particles",
                    format!("the optimizer state of {n} parameters cannot be stored: {e}"),
                )
            })
        };
        Ok(match self {
            OptimizerSettings::Adam { .. } => OptimizerState::Adam(AdamState {
                m: zeros("Adam `m`")?,
                v: zeros("Adam `v`")?,
                t: 0,
            }),
            OptimizerSettings::Adagrad { .. } => OptimizerState::Adagrad(AdagradState {
                g_sq: zeros("Adagrad `g_sq`")?,
                n: zeros("Adagrad `n`")?,
            }),
            OptimizerSettings::Sgd { .. } => OptimizerState::Sgd(SgdState),
        })
    }

    /// Fresh state for `n` parameters.
    pub fn init(&self, n: usize) -> OptimizerState {
        match self {
            OptimizerSettings::Adam { .. } => OptimizerState::Adam(AdamState::new(n)),
            OptimizerSettings::Adagrad { .. } => OptimizerState::Adagrad(AdagradState::new(n)),
            OptimizerSettings::Sgd { .. } => OptimizerState::Sgd(SgdState),
        }
    }
}

/// The mutable state of an optimizer (moments, step count).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OptimizerState {
    /// Adam's moments.
    Adam(AdamState),
    /// Adagrad's accumulators.
    Adagrad(AdagradState),
    /// SGD has none.
    Sgd(SgdState),
}

impl OptimizerState {
    /// The state's buffers with their names in messages (none for SGD); no allocation, since
    /// every step checks their lengths.
    fn buffers(&self) -> impl Iterator<Item = (&'static str, &[f64])> {
        let pair = match self {
            OptimizerState::Adam(s) => [
                Some(("Adam first moment `m`", s.m.as_slice())),
                Some(("Adam second moment `v`", s.v.as_slice())),
            ],
            OptimizerState::Adagrad(s) => [
                Some(("Adagrad accumulator `g_sq`", s.g_sq.as_slice())),
                Some(("Adagrad momentum `n`", s.n.as_slice())),
            ],
            OptimizerState::Sgd(_) => [None, None],
        };
        pair.into_iter().flatten()
    }

    /// Whether the state belongs to `settings`' optimizer (Adam state for Adam, …).
    pub fn matches(&self, settings: &OptimizerSettings) -> bool {
        matches!(
            (self, settings),
            (OptimizerState::Adam(_), OptimizerSettings::Adam { .. })
                | (
                    OptimizerState::Adagrad(_),
                    OptimizerSettings::Adagrad { .. }
                )
                | (OptimizerState::Sgd(_), OptimizerSettings::Sgd { .. })
        )
    }

    /// Checks that every buffer holds one value per parameter, for `n` parameters.
    ///
    /// # Errors
    /// [`Error::Shape`] naming the first buffer of another length.
    pub fn check_len(&self, n: usize) -> Result<()> {
        for (name, buf) in self.buffers() {
            if buf.len() != n {
                return Err(Error::shape(
                    name,
                    format!("{n} values (one per parameter)"),
                    buf.len(),
                ));
            }
        }
        Ok(())
    }

    /// Checks that every buffer value is finite, and that the accumulated squares (Adam's `v`,
    /// Adagrad's `g_sq`) are not negative.
    ///
    /// # Errors
    /// [`Error::NonFinite`] naming the buffer, the index and the value; [`Error::Data`] for a
    /// negative accumulated square.
    pub fn check_values(&self) -> Result<()> {
        for (k, (name, buf)) in self.buffers().enumerate() {
            if let Some(i) = buf.iter().position(|v| !v.is_finite()) {
                return Err(Error::non_finite(format!(
                    "optimizer state: {name}[{i}] = {}",
                    buf[i]
                )));
            }
            // The second buffer of Adam and the first of Adagrad sum squares.
            let squares = match self {
                OptimizerState::Adam(_) => k == 1,
                OptimizerState::Adagrad(_) => k == 0,
                OptimizerState::Sgd(_) => false,
            };
            if let Some(i) = buf.iter().position(|&v| squares && v < 0.0) {
                return Err(Error::Data(format!(
                    "optimizer state: {name}[{i}] = {} is negative, but it sums squares",
                    buf[i]
                )));
            }
        }
        Ok(())
    }

    /// One update x ← x − (transformed g), with `g` the gradient of a minimiser, at the base
    /// rate (the engines use [`OptimizerState::step_with_lr`] with the scheduled rate).
    ///
    /// # Errors
    /// As [`OptimizerState::step_with_lr`].
    pub fn step(
        &mut self,
        settings: &OptimizerSettings,
        params: &mut [f64],
        grad: &[f64],
    ) -> Result<()> {
        self.step_with_lr(settings, settings.lr(), params, grad)
    }

    /// One update at the rate `lr` in place of the settings' base rate (the other
    /// hyperparameters from `settings`).
    ///
    /// # Errors
    /// [`Error::Shape`] if `params`, `grad` and any buffer of the state differ in length;
    /// [`Error::Checkpoint`] if the state does not belong to `settings`' optimizer.
    pub fn step_with_lr(
        &mut self,
        settings: &OptimizerSettings,
        lr: f64,
        params: &mut [f64],
        grad: &[f64],
    ) -> Result<()> {
        if params.len() != grad.len() {
            return Err(Error::shape("optimizer step", params.len(), grad.len()));
        }
        self.check_len(params.len())?;
        match (self, *settings) {
            (
                OptimizerState::Adam(s),
                OptimizerSettings::Adam {
                    b1,
                    b2,
                    eps,
                    spike_guard,
                    ..
                },
            ) => match spike_guard {
                None => s.step(lr, b1, b2, eps, params, grad),
                Some(c) => s.step_guarded(lr, b1, b2, eps, c, params, grad),
            },
            (OptimizerState::Adagrad(s), OptimizerSettings::Adagrad { momentum, .. }) => {
                s.step(lr, momentum, params, grad)
            }
            (OptimizerState::Sgd(_), OptimizerSettings::Sgd { .. }) => {
                params.iter_mut().zip(grad).for_each(|(x, g)| *x -= lr * g);
                Ok(())
            }
            _ => Err(Error::Checkpoint(
                "optimizer state does not match the optimizer settings".into(),
            )),
        }
    }
}

/// Test helper: the parameters after fresh `settings` buffers for `x` take one step per
/// gradient in `grads`, starting from `x`.
#[cfg(test)]
pub(crate) fn after_steps(settings: &OptimizerSettings, x: &[f64], grads: &[&[f64]]) -> Vec<f64> {
    let mut st = settings.init(x.len());
    let mut x = x.to_vec();
    for g in grads {
        st.step(settings, &mut x, g).unwrap();
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_buffer_is_a_shape_error_not_a_silent_partial_update() {
        // The updates zip parameters with both buffers: before the check of every buffer, a
        // short second one left the trailing parameters unmoved without an error.
        type Cut = fn(&mut OptimizerState);
        let cases: [(OptimizerSettings, Cut); 4] = [
            (OptimizerSettings::adam(0.1), |s| {
                if let OptimizerState::Adam(a) = s {
                    a.v.truncate(1);
                }
            }),
            (OptimizerSettings::adam(0.1), |s| {
                if let OptimizerState::Adam(a) = s {
                    a.m.pop();
                }
            }),
            (OptimizerSettings::adagrad(0.1), |s| {
                if let OptimizerState::Adagrad(a) = s {
                    a.n.truncate(2);
                }
            }),
            (OptimizerSettings::adagrad(0.1), |s| {
                if let OptimizerState::Adagrad(a) = s {
                    a.g_sq.push(0.0);
                }
            }),
        ];
        for (settings, cut) in cases {
            let mut st = settings.init(3);
            assert!(st.check_len(3).is_ok());
            cut(&mut st);
            assert!(matches!(st.check_len(3), Err(Error::Shape { .. })));
            let mut x = vec![1.0; 3];
            let err = st.step(&settings, &mut x, &[1.0, 2.0, 3.0]);
            assert!(
                matches!(err, Err(Error::Shape { .. })),
                "{settings:?}: {err:?}"
            );
            assert_eq!(x, vec![1.0; 3], "no parameter moves on a shape error");
        }
    }

    #[test]
    fn schedules_serialise_only_when_set_and_old_settings_still_parse() {
        // The JSON of settings without a schedule is the one written before schedules existed
        // (it is part of engine fingerprints and records).
        let plain = OptimizerSettings::adagrad(0.05);
        let json = serde_json::to_string(&plain).unwrap();
        assert_eq!(json, r#"{"kind":"adagrad","lr":0.05,"momentum":0.9}"#);
        assert_eq!(
            serde_json::from_str::<OptimizerSettings>(&json).unwrap(),
            plain
        );
        let scheduled = OptimizerSettings::adam(0.01)
            .with_schedule(LrSchedule::plateau(PlateauSettings::default(), 1e-4).with_warmup(50));
        let json = serde_json::to_string(&scheduled).unwrap();
        assert!(
            json.contains(r#""decay":{"kind":"plateau","factor":0.5"#),
            "{json}"
        );
        let back: OptimizerSettings = serde_json::from_str(&json).unwrap();
        assert_eq!(back, scheduled);
        assert_eq!(back.schedule().warmup_steps, 50);
        // The rate the engines use: the schedule's at step t.
        let st = LrScheduleState::default();
        assert_eq!(scheduled.lr_at(0, &st), 0.01 / 50.0);
        assert_eq!(scheduled.lr_at(60, &st), 0.01);
        assert!(OptimizerSettings::sgd(0.1)
            .with_schedule(LrSchedule::cosine(10, 0.5))
            .validate()
            .is_err());
    }

    #[test]
    fn value_check_names_the_buffer_and_index() {
        let mut st = OptimizerSettings::adam(0.1).init(4);
        assert!(st.check_values().is_ok());
        if let OptimizerState::Adam(a) = &mut st {
            a.v[2] = f64::INFINITY;
        }
        match st.check_values() {
            Err(Error::NonFinite { context }) => {
                assert!(context.contains("`v`[2] = inf"), "{context}")
            }
            other => panic!("{other:?}"),
        }
        if let OptimizerState::Adam(a) = &mut st {
            a.v[2] = -1.0;
        }
        assert!(matches!(st.check_values(), Err(Error::Data(_))));
        if let OptimizerState::Adam(a) = &mut st {
            a.v[2] = 0.0;
            a.m[2] = -1.0;
        }
        assert!(st.check_values().is_ok(), "a first moment may be negative");
        assert!(st.matches(&OptimizerSettings::adam(0.5)));
        assert!(!st.matches(&OptimizerSettings::adagrad(0.5)));
    }

    #[test]
    fn another_rate_keeps_the_rest_of_the_optimizer() {
        let guarded = OptimizerSettings::adam(0.1).with_spike_guard(10.0);
        let moved = guarded.with_lr(0.01);
        assert_eq!(moved.lr(), 0.01);
        assert_eq!(moved.spike_guard(), Some(10.0));
        assert_eq!(moved.with_lr(0.1), guarded);
        assert_eq!(
            OptimizerSettings::adagrad(0.5).with_lr(0.7),
            OptimizerSettings::adagrad(0.7)
        );
    }
}
