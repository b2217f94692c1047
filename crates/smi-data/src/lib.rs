//! Data sets for the SMI ("ELBOing Stein") experiments: the nine UCI regression benchmarks with
//! their standard and Gap10 splits, MNIST from IDX files, and the 1-D wave of the
//! in-between-uncertainty experiment.
//!
//! Nothing here is copied into the repository: every loader takes the data directory (the folder
//! holding `uci/` and `mnist/`, see `shared/data/README.md`) as an argument;
//! [`default_data_dir`] gives the conventional location.
//!
//! ```no_run
//! use smi_data::{default_data_dir, ColumnConvention, SplitKind, UciData, UciDataset};
//!
//! # fn main() -> smi_data::Result<()> {
//! let data = UciData::load(&default_data_dir(), UciDataset::Boston, ColumnConvention::Paper)?;
//! let split = data.split(SplitKind::Gap10, 0)?;
//! let prepared = data.prepared(&split)?;
//! assert_eq!((prepared.x_train.rows, prepared.x_test.rows), (455, 51));
//! # Ok(())
//! # }
//! ```
//!
//! The wave data need no files and reproduce the paper's points exactly:
//!
//! ```
//! use smi_data::{WaveData, WaveSettings};
//!
//! let wave = WaveData::generate(&WaveSettings::default()).unwrap();
//! assert_eq!(wave.train.len(), 40);
//! assert_eq!(wave.train.x[0], -1.4738820184301327);
//! ```
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

// Modules are private; every public item has one path, at this crate's root.
mod error;
mod legacy_rng;
mod mnist;
mod preprocess;
mod text;
mod uci;
mod wave;

use std::path::PathBuf;

pub use error::{Error, Result, MAX_QUOTED_CHARS};
pub use legacy_rng::LegacyRandomState;
pub use mnist::{
    read_idx_images, read_idx_labels, IdxImages, Mnist, MnistPart, FILES as MNIST_FILES,
    IMAGES_MAGIC, LABELS_MAGIC, NUM_CLASSES, TEST_SIZE, TRAIN_SIZE,
};
pub use preprocess::{prepare, train_test_split_indices, Features, Prepared, Standardizer};
pub use text::{parse_table, read_table, Table};
pub use uci::{
    gap_splits, ColumnConvention, Split, SplitKind, UciData, UciDataset, GAP10_TEST_FRACTION,
    MAX_STANDARD_SPLITS,
};
pub use wave::{
    clusters, linspace, uniform_clusters, uniform_interval, wave_fn, WaveData, WavePhase, WaveSet,
    WaveSettings,
};

/// Environment variable that overrides [`default_data_dir`].
pub const DATA_DIR_ENV: &str = "SMI_DATA_DIR";

/// The data directory: `$SMI_DATA_DIR` if set and non-empty, else `../shared/data` (relative to
/// the working directory, i.e. the repository root's sibling `shared/data`).
pub fn default_data_dir() -> PathBuf {
    match std::env::var_os(DATA_DIR_ENV) {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => PathBuf::from("../shared/data"),
    }
}
