//! # smi — Stein Mixture Inference
//!
//! Stein Mixture Inference (SMI, "ELBOing Stein", Rønning et al.) and its relatives — SVGD,
//! ASVGD, mean-field VI (OVI), MAP — plus NUTS as the reference, on a small batched
//! log-density contract ([`LogDensity`]).
//!
//! Each of m particles ψ parameterises a guide q(θ|ψ) ([`GuideSettings`]); the posterior is the
//! uniform mixture of the guides; the particles move along the nonlinear-SVGD direction
//! φ = (1/m)[Σ_i k(ψ_i, ψ_ℓ) ∇ELBO_i + α Σ_i ∇_{ψ_i} k(ψ_i, ψ_ℓ)] ([`SteinVi`]).
//!
//! Shapes in the docs: m particles, S ELBO draws per particle, K = m·S draws in one model call,
//! d model parameters, p guide parameters per particle (2d for the Normal guide, d for Delta),
//! b mini-batch size, N data rows.
//!
//! ## The layers
//!
//! - **The model contract**: [`LogDensity`] (batched log density and gradient on unconstrained
//!   θ), [`Batch`] (the rows of each draw, the N/b scale, the Jacobian flag), [`Layout`].
//! - **The pieces**: guides ([`GuideSettings`]), the seven Stein kernels ([`kernel`]),
//!   optimizers ([`OptimizerSettings`]), metrics ([`metrics`]).
//! - **The engines**: [`SteinVi`] (SMI, SVGD, ASVGD), [`Svi`] (OVI, MAP), [`Nuts`]; the run loop
//!   [`run`] with [`RunSettings`] (budget, early stopping, checkpoints, [`RowSource`]).
//! - **The method layer**: [`Method`] (names, labels, the paper's presets), [`MethodSettings`]
//!   (one settings type per engine family, builds the engine) and [`fit`], which fits any model
//!   by any method and returns a [`Fit`] holding one [`Posterior`] type for every method.
//!
//! The algorithms, their variants and the metrics are described in `docs/algorithms.md` of the
//! repository; comments cite it as "docs/algorithms.md §N".
//!
//! ## Example: a bimodal target
//!
//! Two well-separated modes; SMI with four particles covers both with its Gaussian components.
//!
//! ```
//! use smi::{fit, FnDensity, Init, Method, NoObserver, OptimizerSettings, RunSettings};
//!
//! // p(x) ∝ N(x; −2, 0.5²) + N(x; 2, 0.5²), with its gradient.
//! let target = FnDensity::new(1, |x: &[f64], g: &mut [f64]| {
//!     let (a, b) = (-0.5 * ((x[0] + 2.0) / 0.5).powi(2), -0.5 * ((x[0] - 2.0) / 0.5).powi(2));
//!     let mx = a.max(b);
//!     let (wa, wb) = ((a - mx).exp(), (b - mx).exp());
//!     g[0] = (wa * -(x[0] + 2.0) + wb * -(x[0] - 2.0)) / (0.25 * (wa + wb));
//!     mx + (wa + wb).ln()
//! });
//! let settings = Method::Smi
//!     .preset(2000)
//!     .with_particles(4)
//!     .with_elbo_draws(20)
//!     .with_init(Init::Uniform { radius: 3.0 })
//!     .with_optimizer(OptimizerSettings::adam(0.05))
//!     .with_seed(1);
//! let result = fit(&target, &settings, &RunSettings::steps(2000), &mut NoObserver)?;
//! let mixture = result.posterior.as_mixture().expect("SMI gives a mixture");
//! let locs: Vec<f64> = (0..4).map(|i| mixture.locations().get(i, 0)).collect();
//! assert!(locs.iter().any(|l| (l + 2.0).abs() < 0.3), "{locs:?}");
//! assert!(locs.iter().any(|l| (l - 2.0).abs() < 0.3), "{locs:?}");
//! // Predictive draws come from the uniform mixture of the four components.
//! let mut rng = <smi::rand::ChaCha8Rng as smi::rand::SeedableRng>::seed_from_u64(0);
//! let draws = result.posterior.sample(1000, &mut rng)?;
//! assert_eq!(draws.rows(), 1000);
//! # Ok::<(), smi::Error>(())
//! ```
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

// Modules are private and the root re-exports the vocabulary, so every public type has one path.
// Five namespaces are public on purpose and their items are reachable only there:
// `kernel` (the seven Stein kernels and their parts), `metrics`, `linalg` (the products the
// built-in models share), `random` (the counter-based generator the CPU and GPU backends
// share) and `testing` (targets with known moments).
mod engine;
mod error;
mod guide;
pub mod kernel;
pub mod linalg;
mod matrix;
mod method;
pub mod metrics;
mod model;
mod nuts;
mod optim;
mod posterior;
mod precondition;
pub mod quality;
pub mod random;
mod stein;
mod summary;
mod svi;
pub mod testing;

pub use engine::{
    apply_ascent, finish_step, process_cpu_seconds, run, run_with_checkpoint, Checkpoint, Control,
    ConvergenceSettings, ConvergenceState, CopyHook, CpuClock, EarlyStopSettings, EarlyStopState,
    Elapsed, ElboChecks, ElboEstimate, ElboTrack, Engine, EpochEnd, Epochs, FileCheckpoint,
    LossTrace, NoObserver, NonFinitePolicy, ObjectiveWindows, Observer, Progress, Resumed,
    RowSource, RunResult, RunSettings, SavePoint, Sidecar, State, StepInfo, Termination,
    CHECKPOINT_FORMAT,
};
pub use error::{Error, Result};
pub use guide::{GuideSettings, Init, Start};
pub use matrix::Matrix;
pub use method::{best_lr, fit, Fit, Method, MethodSettings, LR_GRID};
pub use model::{
    check_shapes, inv_softplus, log_sigmoid, sigmoid, softplus, Batch, Batcher, Block, Constrained,
    ConstrainedModel, Constraint, FnDensity, Layout, LogDensity, PerDraw, Rows, Transform,
    SIMPLEX_TOLERANCE,
};
pub use nuts::{
    e_bfmi, ess_bulk, ess_mean, ess_tail, split_rhat, ChainDiagnostics, DrawStats, MassMatrix,
    Nuts, NutsResult, NutsSettings, E_BFMI_THRESHOLD,
};
pub use optim::{
    AdagradState, AdamState, LrDecay, LrSchedule, LrScheduleState, OptimizerSettings,
    OptimizerState, PlateauSettings, Schedule, SgdState,
};
pub use posterior::{Mixture, MixtureDraws, Posterior};
pub use quality::{fit_quality, FitQuality, DEFAULT_QUALITY_DRAWS};
pub use stein::{AttractionNorm, GradientReuse, NumpyroDefect, SteinSettings, SteinVi};
pub use summary::{Summary, SummaryRow};
pub use svi::{Svi, SviSettings};

/// The `rand` crates whose types appear in this crate's signatures (`RngCore` in
/// [`LogDensity::sample_prior`], `ChaCha8Rng` in [`State`] and [`Posterior::sample`]), so a user
/// needs no version-matched dependency of their own.
pub mod rand {
    pub use ::rand::{Rng, RngCore, SeedableRng};
    pub use rand_chacha::ChaCha8Rng;
}
