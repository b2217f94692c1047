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
//! ## Example: a bimodal target
//!
//! Two well-separated modes; SMI with four particles covers both with its Gaussian components.
//!
//! ```
//! use smi::{run, Engine, FnDensity, NoObserver, OptimizerSettings, RunSettings, SteinSettings, SteinVi};
//!
//! // p(x) ∝ N(x; −2, 0.5²) + N(x; 2, 0.5²), with its gradient.
//! let target = FnDensity::new(1, |x: &[f64], g: &mut [f64]| {
//!     let (a, b) = (-0.5 * ((x[0] + 2.0) / 0.5).powi(2), -0.5 * ((x[0] - 2.0) / 0.5).powi(2));
//!     let mx = a.max(b);
//!     let (wa, wb) = ((a - mx).exp(), (b - mx).exp());
//!     g[0] = (wa * -(x[0] + 2.0) + wb * -(x[0] - 2.0)) / (0.25 * (wa + wb));
//!     mx + (wa + wb).ln()
//! });
//! let mut settings = SteinSettings::smi();
//! settings.num_particles = 4;
//! settings.num_elbo_particles = 20;
//! settings.init = smi::Init::Uniform { radius: 3.0 };
//! settings.optimizer = OptimizerSettings::adam(0.05);
//! settings.seed = 1;
//! let engine = SteinVi::new(&target, settings)?;
//! let fit = run(&engine, engine.init()?, &RunSettings::steps(2000), &mut NoObserver)?;
//! let posterior = engine.posterior(&fit.state);
//! let locs: Vec<f64> = (0..4).map(|i| posterior.locations().get(i, 0)).collect();
//! assert!(locs.iter().any(|l| (l + 2.0).abs() < 0.3), "{locs:?}");
//! assert!(locs.iter().any(|l| (l - 2.0).abs() < 0.3), "{locs:?}");
//! // Predictive draws come from the uniform mixture of the two components.
//! let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0);
//! let draws = posterior.sample(1000, &mut rng)?;
//! assert_eq!(draws.theta.rows(), 1000);
//! # Ok::<(), smi::Error>(())
//! ```
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod data;
pub mod error;
pub mod guide;
pub mod kernel;
pub mod layout;
pub mod linalg;
pub mod matrix;
pub mod metrics;
pub mod model;
pub mod models;
pub mod optim;
pub mod predictive;
pub mod schedule;
pub mod stein;
pub mod svi;
pub mod transform;

pub use data::{Batch, Batcher, Rows};
pub use error::{Error, Result};
pub use layout::{Block, Layout};
pub use matrix::Matrix;
pub use model::{check_shapes, FnDensity, LogDensity};
pub use optim::{OptimizerSettings, OptimizerState};
pub use schedule::Schedule;
pub use transform::Transform;
pub mod engine;
pub use engine::{
    run, EarlyStopSettings, Engine, LossTrace, NoObserver, NonFinitePolicy, Observer, Progress,
    RunResult, RunSettings, State, StepInfo, Termination,
};
pub use guide::{GuideSettings, Init};
pub use kernel::{Kernel, KernelSettings};
pub use predictive::{MixtureDraws, Posterior};
pub use stein::{AttractionNorm, GradientReuse, SteinSettings, SteinVi};
pub use svi::{Svi, SviSettings};
pub mod nuts;
pub use nuts::{Nuts, NutsResult, NutsSettings};
