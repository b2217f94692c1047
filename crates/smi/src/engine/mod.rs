//! Run loops shared by the engines: observers, early stopping, checkpoints.

pub mod observe;

pub use observe::{LossTrace, NoObserver, Observer, Progress};
