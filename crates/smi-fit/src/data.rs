//! Reading the training table: the task from the target column, bad cells, dropped rows.

use super::*;

/// What a CSV file gives a fit.
pub(super) struct Data {
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
