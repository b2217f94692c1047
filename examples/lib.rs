//! # smi-examples — runnable examples of `smi`
//!
//! Its examples show the library from a user's side, through the public API only; its one
//! module, [`posteriordb`], holds four posteriors of posteriordb written as `smi` models (the
//! worked examples of `docs/writing-a-model.md`) with their reference draws. Run each example
//! from anywhere in the repository:
//!
//! | example | shows | command |
//! |---|---|---|
//! | `user_model` | a model of your own: the eight-schools hierarchical model with hand-written gradients implementing [`smi::LogDensity`], checked against finite differences, fitted by SMI, OVI and NUTS | `cargo run --release --example user_model` |
//! | `bimodal` | SMI's mixture covering both modes of a 1-D bimodal target ([`smi::FnDensity`]), next to SVGD and OVI | `cargo run --release --example bimodal` |
//! | `fit_csv` | a Bayesian neural network ([`smi_models::BnnRegression`]) fitted by SMI to `examples/data/regression_train.csv`, with test RMSE and 90 % predictive-interval coverage | `cargo run --release --example fit_csv` |
//!
//! | `posteriordb` | a posteriordb posterior ([`posteriordb::POSTERIORS`]) fitted by one method with the library's defaults, its summary beside the reference means and sds; `--table` measures the variational defaults on all four | `cargo run --release --example posteriordb -- kidiq ovi` |
//!
//! The data sets the examples read live in `examples/data/`, the posteriordb data in
//! `../shared/data/posteriordb/` (or `$SMI_DATA_DIR/posteriordb/`).
#![forbid(unsafe_code)]

pub mod posteriordb;
