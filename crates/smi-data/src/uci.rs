//! The nine UCI regression data sets: loading, column conventions, standard and Gap10 splits.
//!
//! Layout (see `shared/data/README.md`): `<data_dir>/uci/<folder>/data.txt` plus the index files
//! `index_train_<k>.txt`, `index_test_<k>.txt`, `n_splits.txt`, `index_features.txt` and
//! `index_target.txt`. For convenience a data directory that holds the dataset folders directly
//! (`<data_dir>/<folder>/`) is accepted as well.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::error::{cut_for_message, Error, Result};
use crate::preprocess::{prepare, train_test_split_indices, Prepared};
use crate::text::{read_index_set, read_single_index, read_table, Table};

/// One of the nine UCI regression benchmarks of the paper (docs/algorithms.md §7.3).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum UciDataset {
    /// Boston housing (506 rows, 13 features); folder `bostonHousing`.
    Boston,
    /// Concrete compressive strength (1030 × 8); folder `concrete`.
    Concrete,
    /// Energy efficiency, heating load (768 × 8); folder `energy`.
    Energy,
    /// Kin8nm (8192 × 8); folder `kin8nm`.
    Kin8nm,
    /// Naval propulsion plant (11934 × 17 under [`ColumnConvention::Paper`], 16 under
    /// [`ColumnConvention::IndexFiles`]); folder `naval-propulsion-plant`.
    Naval,
    /// Combined cycle power plant (9568 × 4); folder `power-plant`.
    Power,
    /// Protein tertiary structure (45730 × 9, 5 standard splits); folder
    /// `protein-tertiary-structure`.
    Protein,
    /// Red wine quality (1599 × 11); folder `wine-quality-red`.
    Wine,
    /// Yacht hydrodynamics (308 × 6); folder `yacht`.
    Yacht,
}

impl UciDataset {
    /// All nine data sets, in alphabetical order of their short names.
    pub const ALL: [UciDataset; 9] = [
        UciDataset::Boston,
        UciDataset::Concrete,
        UciDataset::Energy,
        UciDataset::Kin8nm,
        UciDataset::Naval,
        UciDataset::Power,
        UciDataset::Protein,
        UciDataset::Wine,
        UciDataset::Yacht,
    ];

    /// The folder name under `uci/` (e.g. `"bostonHousing"`).
    pub fn folder(self) -> &'static str {
        match self {
            UciDataset::Boston => "bostonHousing",
            UciDataset::Concrete => "concrete",
            UciDataset::Energy => "energy",
            UciDataset::Kin8nm => "kin8nm",
            UciDataset::Naval => "naval-propulsion-plant",
            UciDataset::Power => "power-plant",
            UciDataset::Protein => "protein-tertiary-structure",
            UciDataset::Wine => "wine-quality-red",
            UciDataset::Yacht => "yacht",
        }
    }

    /// The short name (e.g. `"boston"`); this is also what [`fmt::Display`] prints.
    pub fn short_name(self) -> &'static str {
        match self {
            UciDataset::Boston => "boston",
            UciDataset::Concrete => "concrete",
            UciDataset::Energy => "energy",
            UciDataset::Kin8nm => "kin8nm",
            UciDataset::Naval => "naval",
            UciDataset::Power => "power",
            UciDataset::Protein => "protein",
            UciDataset::Wine => "wine",
            UciDataset::Yacht => "yacht",
        }
    }
}

impl fmt::Display for UciDataset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short_name())
    }
}

impl FromStr for UciDataset {
    type Err = Error;

    /// Accepts the short name or the folder name, case-insensitively (also `boston-housing`, the
    /// name in the paper's data submodule).
    fn from_str(s: &str) -> Result<Self> {
        let lower = s.trim().to_ascii_lowercase();
        for d in UciDataset::ALL {
            if lower == d.short_name() || lower == d.folder().to_ascii_lowercase() {
                return Ok(d);
            }
        }
        if lower == "boston-housing" {
            return Ok(UciDataset::Boston);
        }
        Err(Error::UnknownDataset {
            name: cut_for_message(s),
            expected: UciDataset::ALL
                .iter()
                .map(|d| format!("{} ({})", d.short_name(), d.folder()))
                .collect::<Vec<_>>()
                .join(", "),
        })
    }
}

/// Which columns of `data.txt` are the inputs and which is the response.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ColumnConvention {
    /// The paper's loader: x = every column but the last, y = the last column. Identical to the
    /// index files except for Naval, which then has 17 features (target = turbine decay, col 17).
    #[default]
    Paper,
    /// `index_features.txt` / `index_target.txt` (Hernández-Lobato & Adams): Naval has 16
    /// features and target col 16.
    IndexFiles,
}

/// Which family of train/test splits.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum SplitKind {
    /// The stored `index_train_k` / `index_test_k` files (20 splits; Protein 5).
    #[default]
    Standard,
    /// The Gap10 splits computed from the data: one per input feature (docs/algorithms.md §7.3).
    Gap10,
}

impl SplitKind {
    /// `"standard"` or `"gap10"`.
    pub fn name(self) -> &'static str {
        match self {
            SplitKind::Standard => "standard",
            SplitKind::Gap10 => "gap10",
        }
    }
}

impl fmt::Display for SplitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SplitKind {
    type Err = Error;

    /// Accepts `standard`/`std` and `gap10`/`gap` (case-insensitive).
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "standard" | "std" => Ok(SplitKind::Standard),
            "gap10" | "gap" => Ok(SplitKind::Gap10),
            _ => Err(Error::invalid(
                "split kind",
                format!(
                    "{:?}; expected \"standard\" or \"gap10\"",
                    cut_for_message(s)
                ),
            )),
        }
    }
}

/// A train/test partition given as 0-based row indices into the data.
///
/// Index order is kept as it comes (file order for standard splits, sorted-by-feature order for
/// Gap10), since mini-batching and the validation hold-out depend on it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Split {
    /// Training rows.
    pub train: Vec<usize>,
    /// Test rows.
    pub test: Vec<usize>,
}

impl Split {
    /// Holds out a validation set from the training rows, as the paper's learning-rate search does
    /// with scikit-learn's `train_test_split(x_train, test_size=0.1, random_state=10)`.
    ///
    /// Returns a new split whose `train` are the remaining training rows and whose `test` are the
    /// validation rows. The positions are bit-identical to scikit-learn's (numpy's legacy
    /// `RandomState(seed).permutation` over the training positions; the first
    /// `ceil(test_fraction·n)` positions are the validation set, the rest the training set, both in
    /// permutation order). See [`train_test_split_indices`].
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if `test_fraction` is not in (0, 1) or leaves an empty side.
    pub fn validation_holdout(&self, test_fraction: f64, seed: u32) -> Result<Split> {
        let (tr, val) = train_test_split_indices(self.train.len(), test_fraction, seed)?;
        Ok(Split {
            train: tr.iter().map(|&i| self.train[i]).collect(),
            test: val.iter().map(|&i| self.train[i]).collect(),
        })
    }
}

/// Computes the Gap10-style splits of a row-major `rows × cols` matrix: one split per column.
///
/// For column `k`: `order` = the rows sorted by `x[:, k]` ascending with a **stable** sort (ties
/// keep row order; `-0.0 == 0.0`), `a = ⌊N·t⌋`, `b = ⌊N·(t + f)⌋` with `t = (1 − f)/2`, computed in
/// `f64` exactly as the paper's Python does; test = `order[a..b]`, train = `order[..a]` followed by
/// `order[b..]`. Gap10 is `test_fraction = 0.1`, giving `a = ⌊0.45 N⌋`, `b = ⌊0.55 N⌋`.
///
/// The paper's code uses numpy's default (unstable) quicksort on float32 copies of the data, so for
/// columns with ties (e.g. Boston col 3, the yacht design columns, Naval's constant columns) its
/// index sets depend on the sort implementation; the stable sort here is the deterministic choice.
///
/// # Errors
/// [`Error::InvalidArgument`] if `test_fraction` is not in [0, 1] or `x.len() != rows·cols`.
pub fn gap_splits(x: &[f64], rows: usize, cols: usize, test_fraction: f64) -> Result<Vec<Split>> {
    if !(0.0..=1.0).contains(&test_fraction) {
        return Err(Error::invalid(
            "test_fraction",
            format!("must be in [0, 1], got {test_fraction}"),
        ));
    }
    if rows.checked_mul(cols) != Some(x.len()) {
        return Err(Error::invalid(
            "x",
            format!("length {} is not rows·cols = {rows}·{cols}", x.len()),
        ));
    }
    let tail = (1.0 - test_fraction) / 2.0;
    let n = rows as f64;
    // Both products are in [0, rows], so the casts only drop the fractional part (= floor).
    let before = ((n * tail).floor() as usize).min(rows);
    let after = ((n * (tail + test_fraction)).floor() as usize).clamp(before, rows);
    let mut splits = Vec::with_capacity(cols);
    for k in 0..cols {
        let mut order: Vec<usize> = (0..rows).collect();
        order.sort_by(|&i, &j| {
            x[i * cols + k]
                .partial_cmp(&x[j * cols + k])
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let test = order[before..after].to_vec();
        let mut train = order[..before].to_vec();
        train.extend_from_slice(&order[after..]);
        splits.push(Split { train, test });
    }
    Ok(splits)
}

/// The Gap10 test fraction (10 % of the rows in the middle of each feature's range).
pub const GAP10_TEST_FRACTION: f64 = 0.1;

/// The most standard splits `n_splits.txt` may announce (the data sets have 20, Protein 5); see
/// [`UciData::n_splits`].
pub const MAX_STANDARD_SPLITS: usize = 10_000;

/// A loaded UCI data set under one [`ColumnConvention`].
#[derive(Clone, Debug)]
pub struct UciData {
    /// Which data set.
    pub dataset: UciDataset,
    /// How x and y were chosen from the columns.
    pub convention: ColumnConvention,
    /// The data set's folder (where the split files live).
    pub dir: PathBuf,
    /// Inputs, row-major `rows × cols`.
    pub x: Vec<f64>,
    /// Responses, length `rows`.
    pub y: Vec<f64>,
    /// Number of rows N (non-blank lines of `data.txt`).
    pub rows: usize,
    /// Number of input features.
    pub cols: usize,
    /// The columns of `data.txt` used as inputs, in order.
    pub feature_columns: Vec<usize>,
    /// The column of `data.txt` used as the response.
    pub target_column: usize,
}

/// Finds the folder of `dataset` under `data_dir` (`uci/<folder>` or `<folder>`).
fn dataset_dir(data_dir: &Path, dataset: UciDataset) -> Result<PathBuf> {
    let candidates = [
        data_dir.join("uci").join(dataset.folder()),
        data_dir.join(dataset.folder()),
    ];
    for c in &candidates {
        if c.join("data.txt").is_file() {
            return Ok(c.clone());
        }
    }
    Err(Error::MissingFile {
        dataset: dataset.short_name().to_string(),
        file: "data.txt".to_string(),
        searched: candidates.to_vec(),
    })
}

impl UciData {
    /// Loads `data.txt` of `dataset` from `data_dir` (the directory holding `uci/`) and selects
    /// the columns by `convention`.
    ///
    /// # Errors
    /// [`Error::MissingFile`] (naming the data set and the directories searched) if `data.txt` is
    /// absent; the parse errors of [`crate::parse_table`] (file, line, column); for
    /// [`ColumnConvention::IndexFiles`], errors reading the index files or an out-of-range column;
    /// [`Error::Inconsistent`] if the table has fewer than two columns.
    pub fn load(
        data_dir: &Path,
        dataset: UciDataset,
        convention: ColumnConvention,
    ) -> Result<Self> {
        let dir = dataset_dir(data_dir, dataset)?;
        let table = read_table(&dir.join("data.txt"))?;
        Self::from_table(dataset, dir, table, convention)
    }

    /// Builds the data set from an already parsed table; `dir` is where the index files are read
    /// from (needed for [`ColumnConvention::IndexFiles`] and the standard splits).
    ///
    /// # Errors
    /// As [`UciData::load`], minus the reading of `data.txt`.
    pub fn from_table(
        dataset: UciDataset,
        dir: PathBuf,
        table: Table,
        convention: ColumnConvention,
    ) -> Result<Self> {
        if table.cols < 2 {
            return Err(Error::Inconsistent {
                reason: format!(
                    "{dataset}: data.txt has {} column(s); need at least one feature and a target",
                    table.cols
                ),
            });
        }
        let (feature_columns, target_column) = match convention {
            ColumnConvention::Paper => ((0..table.cols - 1).collect(), table.cols - 1),
            ColumnConvention::IndexFiles => {
                let f = required_file(&dir, dataset, "index_features.txt")?;
                let features = read_index_set(&f, table.cols)?;
                let t = required_file(&dir, dataset, "index_target.txt")?;
                let target = read_single_index(&t)?;
                if target >= table.cols {
                    return Err(Error::IndexOutOfRange {
                        path: t,
                        line: 1,
                        index: target,
                        bound: table.cols,
                    });
                }
                if features.contains(&target) {
                    return Err(Error::Inconsistent {
                        reason: format!(
                            "{dataset}: target column {target} is also listed as a feature"
                        ),
                    });
                }
                (features, target)
            }
        };
        let rows = table.rows;
        let cols = feature_columns.len();
        let mut x = Vec::with_capacity(rows * cols);
        let mut y = Vec::with_capacity(rows);
        for r in 0..rows {
            let row = &table.values[r * table.cols..(r + 1) * table.cols];
            x.extend(feature_columns.iter().map(|&c| row[c]));
            y.push(row[target_column]);
        }
        Ok(UciData {
            dataset,
            convention,
            dir,
            x,
            y,
            rows,
            cols,
            feature_columns,
            target_column,
        })
    }

    /// Input row `i` (length `cols`), `None` if out of range.
    pub fn x_row(&self, i: usize) -> Option<&[f64]> {
        if i < self.rows {
            self.x.get(i * self.cols..(i + 1) * self.cols)
        } else {
            None
        }
    }

    /// Number of splits of `kind`: `n_splits.txt` for [`SplitKind::Standard`], the number of
    /// features for [`SplitKind::Gap10`].
    ///
    /// The number in `n_splits.txt` is not trusted: it must be at most [`MAX_STANDARD_SPLITS`],
    /// and `index_train_k.txt` and `index_test_k.txt` must exist for every `k` below it (their
    /// contents are checked when a split is read).
    ///
    /// # Errors
    /// Missing or malformed `n_splits.txt`; [`Error::SplitCount`] (naming `n_splits.txt` and the
    /// first missing index file) if the number is not backed by index files.
    pub fn n_splits(&self, kind: SplitKind) -> Result<usize> {
        match kind {
            SplitKind::Standard => self.standard_split_count(),
            SplitKind::Gap10 => Ok(self.cols),
        }
    }

    /// `n_splits.txt`, checked against [`MAX_STANDARD_SPLITS`] and the index files present.
    fn standard_split_count(&self) -> Result<usize> {
        let path = required_file(&self.dir, self.dataset, "n_splits.txt")?;
        let declared = read_single_index(&path)?;
        let error = |reason: String| Error::SplitCount {
            dataset: self.dataset.to_string(),
            path: path.clone(),
            declared,
            reason,
        };
        if declared > MAX_STANDARD_SPLITS {
            return Err(error(format!(
                "at most {MAX_STANDARD_SPLITS} are supported"
            )));
        }
        // Stops at the first missing file, so this is bounded by the files that exist.
        for k in 0..declared {
            for name in [
                format!("index_train_{k}.txt"),
                format!("index_test_{k}.txt"),
            ] {
                let file = self.dir.join(&name);
                if !file.is_file() {
                    return Err(error(format!(
                        "{} does not exist (index files exist for the first {k} split(s) only)",
                        file.display()
                    )));
                }
            }
        }
        Ok(declared)
    }

    /// Standard split `k` from `index_train_k.txt` / `index_test_k.txt`.
    ///
    /// Checks that `k < n_splits` (see [`UciData::n_splits`]), every index is `< rows`, no index
    /// repeats within a file, and train and test are disjoint.
    ///
    /// # Errors
    /// [`Error::SplitOutOfRange`], [`Error::SplitCount`], [`Error::MissingFile`], parse errors,
    /// [`Error::IndexOutOfRange`], [`Error::DuplicateIndex`], [`Error::OverlappingSplit`].
    pub fn standard_split(&self, k: usize) -> Result<Split> {
        let available = self.standard_split_count()?;
        if k >= available {
            return Err(Error::SplitOutOfRange {
                dataset: self.dataset.to_string(),
                kind: "standard",
                split: k,
                available,
            });
        }
        self.read_standard_split(k)
    }

    /// Reads and checks standard split `k` (whose number is already known to be valid).
    fn read_standard_split(&self, k: usize) -> Result<Split> {
        let tr = required_file(&self.dir, self.dataset, &format!("index_train_{k}.txt"))?;
        let te = required_file(&self.dir, self.dataset, &format!("index_test_{k}.txt"))?;
        let train = read_index_set(&tr, self.rows)?;
        let test = read_index_set(&te, self.rows)?;
        let mut in_train = vec![false; self.rows];
        for &i in &train {
            in_train[i] = true;
        }
        if let Some(&row) = test.iter().find(|&&i| in_train[i]) {
            return Err(Error::OverlappingSplit {
                dataset: self.dataset.to_string(),
                split: k,
                row,
            });
        }
        Ok(Split { train, test })
    }

    /// All Gap10 splits, one per feature (see [`gap_splits`]; stable sort).
    pub fn gap10_splits(&self) -> Vec<Split> {
        // The arguments are valid by construction (fraction 0.1, x.len() = rows·cols).
        gap_splits(&self.x, self.rows, self.cols, GAP10_TEST_FRACTION).unwrap_or_default()
    }

    /// Split `k` of `kind`.
    ///
    /// # Errors
    /// [`Error::SplitOutOfRange`] and, for standard splits, the errors of
    /// [`UciData::standard_split`].
    pub fn split(&self, kind: SplitKind, k: usize) -> Result<Split> {
        match kind {
            SplitKind::Standard => self.standard_split(k),
            SplitKind::Gap10 => {
                if k >= self.cols {
                    return Err(Error::SplitOutOfRange {
                        dataset: self.dataset.to_string(),
                        kind: "gap10",
                        split: k,
                        available: self.cols,
                    });
                }
                let mut all = self.gap10_splits();
                Ok(all.swap_remove(k))
            }
        }
    }

    /// Every split of `kind`, in order.
    ///
    /// # Errors
    /// As [`UciData::split`].
    pub fn splits(&self, kind: SplitKind) -> Result<Vec<Split>> {
        match kind {
            SplitKind::Standard => (0..self.standard_split_count()?)
                .map(|k| self.read_standard_split(k))
                .collect(),
            SplitKind::Gap10 => Ok(self.gap10_splits()),
        }
    }

    /// The split's data, x standardised with the training rows' mean and ddof-0 std (constant
    /// columns: std 1), y raw. See [`crate::prepare`].
    ///
    /// # Errors
    /// [`Error::SplitRowOutOfRange`] if the split refers to a row that does not exist, or
    /// [`Error::InvalidArgument`] if its training set is empty.
    pub fn prepared(&self, split: &Split) -> Result<Prepared> {
        prepare(&self.x, &self.y, self.cols, split).map_err(|e| match e {
            Error::SplitRowOutOfRange { row, rows, .. } => Error::SplitRowOutOfRange {
                dataset: self.dataset.to_string(),
                row,
                rows,
            },
            other => other,
        })
    }
}

/// `dir/name` if it exists, else [`Error::MissingFile`] naming the data set and `dir`.
fn required_file(dir: &Path, dataset: UciDataset, name: &str) -> Result<PathBuf> {
    let p = dir.join(name);
    if p.is_file() {
        Ok(p)
    } else {
        Err(Error::MissingFile {
            dataset: dataset.short_name().to_string(),
            file: name.to_string(),
            searched: vec![dir.to_path_buf()],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for d in UciDataset::ALL {
            assert_eq!(d.to_string().parse::<UciDataset>().unwrap(), d);
            assert_eq!(d.folder().parse::<UciDataset>().unwrap(), d);
        }
        assert_eq!(
            "Boston-Housing".parse::<UciDataset>().unwrap(),
            UciDataset::Boston
        );
        let err = "mnist".parse::<UciDataset>().unwrap_err().to_string();
        assert!(
            err.contains("mnist") && err.contains("naval-propulsion-plant"),
            "{err}"
        );
        assert_eq!("GAP".parse::<SplitKind>().unwrap(), SplitKind::Gap10);
        assert_eq!(SplitKind::Standard.to_string(), "standard");
        assert!("x".parse::<SplitKind>().is_err());
    }

    #[test]
    fn gap_split_sizes_and_stable_ties() {
        // 10 rows, 2 columns; column 1 is constant (all ties).
        let x: Vec<f64> = (0..10).flat_map(|i| [(9 - i) as f64, 1.0]).collect();
        let s = gap_splits(&x, 10, 2, 0.1).unwrap();
        assert_eq!(s.len(), 2);
        // a = floor(4.5) = 4, b = floor(5.5000000000000004) = 5.
        assert_eq!(s[0].test, vec![5]); // 5th-smallest value 4.0 sits in row 5
        assert_eq!(s[0].train, vec![9, 8, 7, 6, 4, 3, 2, 1, 0]);
        // Stable: ties keep row order.
        assert_eq!(s[1].test, vec![4]);
        assert_eq!(s[1].train, vec![0, 1, 2, 3, 5, 6, 7, 8, 9]);
        assert!(gap_splits(&x, 10, 3, 0.1).is_err());
        assert!(gap_splits(&x, 10, 2, 1.5).is_err());
    }
}
