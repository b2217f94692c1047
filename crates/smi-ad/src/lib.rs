#![doc = include_str!("../README.md")]
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod adapter;
mod chunk;
mod model;
pub mod testing;

pub use adapter::Ad;
pub use model::{AdModel, Scalar};

/// The dual-number crate behind [`Scalar`] (`num-dual`), for its functions and traits
/// (e.g. `num_dual::DualNum`) without a version-matched dependency of your own.
pub use num_dual;
