//! Data sets for the SMI ("ELBOing Stein") experiments: the nine UCI regression benchmarks with
//! their standard and Gap10 splits, MNIST from IDX files, and the 1-D wave of the
//! in-between-uncertainty experiment.
//!
//! Nothing here is copied into the repository: every loader takes the data directory (the folder
//! holding `uci/` and `mnist/`, see `shared/data/README.md`) as an argument;
//! [`default_data_dir`] finds it (`$SMI_DATA_DIR`, the per-user folder, the repository's sibling
//! `shared/data`; never relative to the current directory). [`catalog`] lists every file with
//! its source URL and SHA-256; `smi data fetch` downloads them ([`install_verified`]).
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
//!
//! Tests that read real data (here, in `smi-experiments` and in `smi-cli`) are marked
//! `#[cfg_attr(smi_no_uci_data, ignore = "…")]` (or `smi_no_mnist_data`): the shared build
//! script `crates/smi-data/build.rs` sets these cfgs when the files are missing, so a clone
//! without data lists those tests as ignored, with the reason, and a machine with data (CI has
//! `../shared/data`, which the tests prefer) runs them. `SMI_TEST_DATA_DIR` points the tests
//! elsewhere;
//! `SMI_REQUIRE_DATA=1` turns missing data into a build error.
#![deny(missing_docs)]
#![forbid(unsafe_code)]
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

// Modules are private; every public item has one path, at this crate's root.
mod catalog;
mod error;
mod legacy_rng;
mod locate;
mod mnist;
mod preprocess;
mod text;
mod uci;
mod wave;

pub use catalog::{
    catalog, from_manifest, install_verified, parse_sha256sums, select, sha256_file, verify_file,
    DataFile, DataSet, FileStatus, MAX_DOWNLOAD_BYTES, POSTERIORDB_COMMIT, SHA256SUMS, UCI_COMMIT,
};
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

pub use locate::{default_data_dir, repo_data_dir, user_data_dir, DATA_DIR_ENV};
