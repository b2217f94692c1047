//! Where a fit's table comes from ([`Source`]: a CSV file or arrays) and reading it: the task
//! from the target column, bad cells, dropped rows, the checksum a resumed fit compares.

use std::path::PathBuf;

use super::*;
use crate::csv_input::read_table;

/// A CSV file with a header row, and which of its columns to fit.
#[derive(Clone, Debug)]
pub struct CsvSource {
    /// The file; feature cells must be numbers.
    pub path: PathBuf,
    /// The column to predict.
    pub target: String,
    /// Feature columns (`None`: every column but the target).
    pub features: Option<Vec<String>>,
    /// Regression or classification (`None`: regression when at least 90 % of the target's
    /// cells are numbers, classification otherwise).
    pub task: Option<Task>,
    /// Drop the rows with a missing or non-numeric value instead of failing.
    pub drop_missing: bool,
}

/// Training data as arrays.
#[derive(Clone, Debug)]
pub struct ArrayData<'a> {
    /// Features, row-major `rows × cols`, finite.
    pub x: &'a [f64],
    /// Rows.
    pub rows: usize,
    /// Feature columns.
    pub cols: usize,
    /// Regression: finite targets; classification: class indices `0..classes.len()` as f64.
    pub y: &'a [f64],
    /// `None` for regression; the class names (at least two) for classification.
    pub classes: Option<Vec<String>>,
    /// The feature names stored in the model file (`cols` of them).
    pub features: Vec<String>,
    /// The target name stored in the model file.
    pub target: String,
}

/// The table a fit reads.
#[derive(Clone, Debug)]
pub enum Source<'a> {
    /// A CSV file (`smi fit --csv`).
    Csv(CsvSource),
    /// Arrays in memory (the Python estimators).
    Arrays(ArrayData<'a>),
}

/// What a source gives a fit.
pub(crate) struct Data {
    /// Feature column names, in input order.
    pub(super) features: Vec<String>,
    /// Row-major rows × features.len() values.
    pub(super) x: Vec<f64>,
    /// Regression targets, or class indices as f64.
    pub(super) y: Vec<f64>,
    /// Class names (classification).
    pub(super) classes: Option<Vec<String>>,
    /// Regression or classification.
    pub(super) task: Task,
    /// Whether the task was guessed from the target column (no `--task`).
    pub(super) guessed: bool,
    /// The lines of the rows `--drop-missing` dropped.
    pub(super) dropped: Vec<u64>,
    /// The target's name.
    pub(super) target: String,
    /// CRC-32 of the data, when asked for (a fit with a checkpoint: a resumed fit must see the
    /// same data): of the CSV file's bytes, or of the arrays' values.
    pub(super) checksum: Option<u32>,
}

impl Data {
    pub(super) fn rows(&self) -> usize {
        self.y.len()
    }
}

/// Whether every feature cell of row `r` and its target cell are usable for `task`.
fn row_complete(table: &Table, r: usize, features: &[usize], t: usize, task: Task) -> bool {
    let num = |c: usize| table.rows[r][c].parse::<f64>().is_ok_and(f64::is_finite);
    features.iter().all(|&c| num(c))
        && match task {
            Task::Regression => num(t),
            Task::Classification => !table.rows[r][t].is_empty(),
        }
}

/// A numeric target whose values are all whole numbers with at most this many distinct values
/// (and at least two rows per value on average) may hold class labels: `smi fit` asks for
/// `--task` rather than guess.
pub const MAX_LABEL_VALUES: usize = 10;

/// Fails, asking for `--task`, when the guessed-numeric target `y` of column `target` (in
/// `source`) looks like integer class labels: only whole numbers, at most
/// [`MAX_LABEL_VALUES`] distinct values, each value on at least two rows on average.
fn check_not_labels(source: &str, target: &str, y: &[f64]) -> Result<()> {
    if y.iter().any(|v| v.fract() != 0.0) {
        return Ok(());
    }
    let mut values: Vec<f64> = Vec::new();
    for &v in y {
        if !values.contains(&v) {
            if values.len() == MAX_LABEL_VALUES {
                return Ok(());
            }
            values.push(v);
        }
    }
    if 2 * values.len() > y.len() {
        return Ok(());
    }
    values.sort_by(f64::total_cmp);
    let shown: Vec<String> = values.iter().map(f64::to_string).collect();
    bail!(
        "{source}: the target {} holds only the whole numbers {} ({} distinct values in {} \
         rows): are they class labels or a quantity? Say --task classification to fit a \
         classifier with these {} classes, or --task regression to fit them as numbers",
        show(target),
        shown.join(", "),
        values.len(),
        y.len(),
        values.len()
    )
}

/// The features, targets and task of `table` for `--target target`, `--features`, `--task`
/// and `--drop-missing`.
pub(super) fn read_data(
    table: &Table,
    target: &str,
    features: Option<&[String]>,
    task: Option<Task>,
    drop_missing: bool,
) -> Result<Data> {
    let t = table.column(target, "--target")?;
    let feature_idx: Vec<usize> = match features {
        Some(names) => {
            let mut idx = Vec::new();
            for (i, f) in names.iter().map(|f| f.trim()).enumerate() {
                if f.is_empty() {
                    bail!(
                        "--features: name {} is empty (two commas in a row, or one at an end?)",
                        i + 1
                    );
                }
                let j = table.column(f, "--features")?;
                if j == t {
                    bail!("--features: {} is the target column", show(f));
                }
                if !idx.contains(&j) {
                    idx.push(j);
                }
            }
            idx
        }
        None => (0..table.headers.len()).filter(|&j| j != t).collect(),
    };
    if feature_idx.is_empty() {
        bail!(
            "{}: no feature columns besides the target {}",
            table.source,
            show(target)
        );
    }
    let guessed = task.is_none();
    let task = task.unwrap_or(if table.looks_numeric(t) {
        Task::Regression
    } else {
        Task::Classification
    });
    let mut dropped = Vec::new();
    let kept;
    let table = if drop_missing {
        let (keep, drop): (Vec<usize>, Vec<usize>) =
            (0..table.len()).partition(|&r| row_complete(table, r, &feature_idx, t, task));
        if keep.is_empty() {
            bail!(
                "--drop-missing: every one of the {} rows of {} has a missing or non-numeric \
                 value (lines {}); nothing is left to fit",
                table.len(),
                table.source,
                table.list_lines(&drop)
            );
        }
        dropped = drop.iter().map(|&r| table.lines[r]).collect();
        kept = table.select_rows(&keep);
        &kept
    } else {
        table
    };
    let x = table.numbers(&feature_idx).map_err(|e| {
        let bad = (0..table.len())
            .filter(|&r| {
                feature_idx
                    .iter()
                    .any(|&c| !table.rows[r][c].parse::<f64>().is_ok_and(f64::is_finite))
            })
            .count();
        anyhow!(
            "{e}\n({bad} of the {} rows have an empty or non-numeric feature cell; \
             --drop-missing drops such rows, --features chooses the columns)",
            table.len()
        )
    })?;
    let (y, classes) = match task {
        Task::Regression => {
            let bad = table.non_numbers(t);
            if !bad.is_empty() {
                let hint = if guessed {
                    format!(
                        ", or --task classification if {} holds class labels",
                        show(target)
                    )
                } else {
                    String::new()
                };
                bail!(
                    "{}: the regression target {} needs a number in every row, but {} of its {} \
                     cells {}: {}; --drop-missing drops those rows{hint}",
                    table.source,
                    show(target),
                    bad.len(),
                    table.len(),
                    if bad.len() == 1 {
                        "is not a finite number"
                    } else {
                        "are not finite numbers"
                    },
                    table.list_cells(&bad, t)
                );
            }
            let y = table.numbers(&[t])?;
            if guessed {
                check_not_labels(&table.source, target, &y)?;
            }
            (y, None)
        }
        Task::Classification => {
            let labels = table.labels(t)?;
            let classes = class_map(&labels);
            if classes.len() < 2 {
                bail!(
                    "{}: the target {} has a single class ({}); classification needs at least two",
                    table.source,
                    show(target),
                    show(&classes[0])
                );
            }
            let index: HashMap<&str, usize> = classes
                .iter()
                .enumerate()
                .map(|(k, c)| (c.as_str(), k))
                .collect();
            let y = labels
                .iter()
                .map(|l| index.get(l.as_str()).copied().unwrap_or(0) as f64)
                .collect();
            (y, Some(classes))
        }
    };
    Ok(Data {
        target: target.to_string(),
        checksum: None,
        features: feature_idx
            .iter()
            .map(|&j| table.headers[j].clone())
            .collect(),
        x,
        y,
        classes,
        task,
        guessed,
        dropped,
    })
}

/// Reads `source`, with the data's checksum when `checksum` asks for it; with `messages`, says
/// which rows `drop_missing` dropped and when a non-numeric target makes a classifier of many
/// classes.
pub(crate) fn load(source: &Source<'_>, messages: bool, checksum: bool) -> Result<Data> {
    match source {
        Source::Csv(c) => load_csv(c, messages, checksum),
        Source::Arrays(a) => from_arrays(a, checksum),
    }
}

fn load_csv(c: &CsvSource, messages: bool, checksum: bool) -> Result<Data> {
    let table = read_table(&c.path)?;
    let mut data = read_data(
        &table,
        &c.target,
        c.features.as_deref(),
        c.task,
        c.drop_missing,
    )?;
    if checksum {
        data.checksum = Some(crate::checkpoint::file_crc32(&c.path)?);
    }
    if !messages {
        return Ok(data);
    }
    if c.drop_missing {
        let lines = if data.dropped.is_empty() {
            String::new()
        } else {
            format!(
                " (lines {}{})",
                data.dropped
                    .iter()
                    .take(csv_input::SHOWN_ROWS)
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                if data.dropped.len() > csv_input::SHOWN_ROWS {
                    ", …"
                } else {
                    ""
                }
            )
        };
        eprintln!(
            "--drop-missing: dropped {} of {} rows with a missing or non-numeric value{lines}",
            data.dropped.len(),
            data.dropped.len() + data.rows(),
        );
    }
    if let (true, Some(k)) = (data.guessed, &data.classes) {
        if k.len() > 100 || 2 * k.len() > data.rows() {
            eprintln!(
                "note: the target {} is not numeric, so this fits a classifier with {} classes \
                 on {} rows; use --task regression if it holds numbers",
                show(&c.target),
                k.len(),
                data.rows()
            );
        }
    }
    Ok(data)
}

/// Checks the shapes and values of `d` and takes its task from its classes.
fn from_arrays(d: &ArrayData<'_>, checksum: bool) -> Result<Data> {
    if d.rows == 0 || d.cols == 0 {
        bail!("X must have at least one row and one column");
    }
    if d.rows.checked_mul(d.cols) != Some(d.x.len()) {
        bail!("X has {} values, not {} × {}", d.x.len(), d.rows, d.cols);
    }
    if d.y.len() != d.rows {
        bail!("y has {} values for {} rows of X", d.y.len(), d.rows);
    }
    if d.features.len() != d.cols {
        bail!("{} feature names for {} columns", d.features.len(), d.cols);
    }
    if let Some(i) = d.x.iter().position(|v| !v.is_finite()) {
        bail!(
            "X holds a non-finite value at row {}, column {}",
            i / d.cols + 1,
            i % d.cols + 1
        );
    }
    let task = match &d.classes {
        None => {
            if let Some(i) = d.y.iter().position(|v| !v.is_finite()) {
                bail!("y holds a non-finite value at row {}", i + 1);
            }
            Task::Regression
        }
        Some(c) => {
            if c.len() < 2 {
                bail!("classification needs at least two classes, got {}", c.len());
            }
            let bad = |v: f64| !(v >= 0.0 && v.fract() == 0.0 && (v as usize) < c.len());
            if let Some(i) = d.y.iter().position(|&v| bad(v)) {
                bail!("y[{i}] = {} is not a class index below {}", d.y[i], c.len());
            }
            Task::Classification
        }
    };
    let checksum = checksum.then(|| {
        let mut crc = crc32fast::Hasher::new();
        for v in d.x.iter().chain(d.y) {
            crc.update(&v.to_le_bytes());
        }
        crc.finalize()
    });
    Ok(Data {
        features: d.features.clone(),
        x: d.x.to_vec(),
        y: d.y.to_vec(),
        classes: d.classes.clone(),
        task,
        guessed: false,
        dropped: Vec::new(),
        target: d.target.clone(),
        checksum,
    })
}
