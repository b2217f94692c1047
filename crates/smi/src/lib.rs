//! # smi — Stein Mixture Inference
//!
//! Stein Mixture Inference (SMI, "ELBOing Stein", Rønning et al.) and its relatives — SVGD,
//! ASVGD, mean-field VI (OVI), MAP — plus NUTS as the reference, on a small batched
//! log-density contract ([`LogDensity`]).
//!
//! Shapes in the docs: m particles, S ELBO draws per particle, K = m·S draws in one model call,
//! d model parameters, p guide parameters per particle (2d for the Normal guide, d for Delta),
//! b mini-batch size, N data rows.
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod data;
pub mod error;
pub mod kernel;
pub mod layout;
pub mod linalg;
pub mod matrix;
pub mod metrics;
pub mod models;
pub mod model;
pub mod optim;
pub mod schedule;
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
pub use engine::{LossTrace, NoObserver, Observer, Progress};
pub mod nuts;
pub use nuts::{Nuts, NutsResult, NutsSettings};
