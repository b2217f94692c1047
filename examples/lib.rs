//! # smi-examples — runnable examples of `smi`
//!
//! This crate holds no code of its own; its examples show the library from a user's side,
//! through the public API only. Run each from anywhere in the repository:
//!
//! | example | shows | command |
//! |---|---|---|
//! | `user_model` | a model of your own: the eight-schools hierarchical model with hand-written gradients implementing [`smi::LogDensity`], checked against finite differences, fitted by SMI, OVI and NUTS | `cargo run --release --example user_model` |
//! | `bimodal` | SMI's mixture covering both modes of a 1-D bimodal target ([`smi::FnDensity`]), next to SVGD and OVI | `cargo run --release --example bimodal` |
//! | `fit_csv` | a Bayesian neural network ([`smi_models::BnnRegression`]) fitted by SMI to `examples/data/regression_train.csv`, with test RMSE and 90 % predictive-interval coverage | `cargo run --release --example fit_csv` |
//!
//! The data sets the examples read live in `examples/data/`.
