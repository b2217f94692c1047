//! # smi-models — built-in models for smi
//!
//! Bayesian neural networks with analytic gradients and their CPU compute, implementing
//! [`smi::LogDensity`] so every engine of `smi` fits them:
//! - [`BnnRegression`]: an MLP with a Gaussian likelihood and a fixed or learned noise level
//!   (the paper's UCI and 1-D wave networks: [`BnnRegression::uci`], [`BnnRegression::wave`]);
//! - [`BnnClassifier`]: an MLP with a softmax likelihood (the paper's MNIST networks,
//!   [`BnnClassifier::mnist`]);
//! - [`Mlp`]: the batched forward/backward pass they share, f32 or f64 inside
//!   ([`Precision`]), with AVX2 kernels where the CPU has them;
//! - [`cuda`]: the [`Device`] choice and, with the `cuda` feature, the GPU backend of these
//!   networks (docs/cuda.md).
//!
//! Modules are private (but `cuda`); every type has one path, at this crate's root or in `cuda`.
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod bnn_classifier;
mod bnn_regression;
mod bnn_shared;
pub mod cuda;
mod mlp;

pub use bnn_classifier::BnnClassifier;
pub use bnn_regression::{BnnRegression, Noise, RegressionPrediction};
pub use cuda::Device;
pub use mlp::{Activation, Head, Mlp, MlpFloat, Precision};
