//! Reading a user's CSV file: a header row, then one record per line.
//!
//! Every problem is an error that names the file, the line (1-based, the header is line 1) and
//! the column: a non-numeric, empty or non-finite feature cell, a row with a different number of
//! fields than the header, an empty file, a file with a header but no data, duplicate column
//! names, a missing column (the error lists the columns found).

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};

/// A CSV file held as text cells.
#[derive(Clone, Debug)]
pub struct Table {
    /// Where it came from (for messages).
    pub source: String,
    /// Column names, in file order.
    pub headers: Vec<String>,
    /// Data rows, each as long as `headers`.
    pub rows: Vec<Vec<String>>,
    /// The line of each data row in the file (1-based; the header is line 1).
    pub lines: Vec<u64>,
}

/// Reads `path` (comma-separated, header row, cells trimmed of surrounding blanks).
pub fn read_table(path: &Path) -> Result<Table> {
    let source = path.display().to_string();
    let file = std::fs::File::open(path).with_context(|| format!("cannot open {source}"))?;
    read_from(file, &source)
}

/// Reads a CSV table from `reader`; `source` names it in messages.
pub fn read_from<R: std::io::Read>(reader: R, source: &str) -> Result<Table> {
    let mut rdr = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .trim(csv::Trim::All)
        .from_reader(reader);
    let headers: Vec<String> = rdr
        .headers()
        .map_err(|e| describe(e, source))?
        .iter()
        .map(str::to_string)
        .collect();
    if headers.is_empty() || (headers.len() == 1 && headers[0].is_empty()) {
        bail!("{source} is empty: expected a header row naming the columns, then data rows");
    }
    let mut seen = BTreeSet::new();
    for (j, h) in headers.iter().enumerate() {
        if h.is_empty() {
            bail!(
                "{source}, line 1: column {} has an empty name in the header",
                j + 1
            );
        }
        if !seen.insert(h.as_str()) {
            bail!("{source}, line 1: the column name {h:?} appears twice in the header");
        }
    }
    let mut rows = Vec::new();
    let mut lines = Vec::new();
    for rec in rdr.records() {
        let rec = rec.map_err(|e| describe(e, source))?;
        // A completely blank line is skipped by the csv crate; a line of only commas is not.
        lines.push(rec.position().map_or(rows.len() as u64 + 2, |p| p.line()));
        rows.push(rec.iter().map(str::to_string).collect());
    }
    if rows.is_empty() {
        bail!("{source} has a header but no data rows");
    }
    Ok(Table {
        source: source.to_string(),
        headers,
        rows,
        lines,
    })
}

/// A readable message for a csv error (ragged rows, bad UTF-8, I/O).
fn describe(e: csv::Error, source: &str) -> anyhow::Error {
    let line = e.position().map(|p| p.line());
    match e.kind() {
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => anyhow!(
            "{source}, line {}: the row has {len} fields but the header has {expected_len} \
             (ragged rows are not allowed)",
            line.map_or_else(|| "?".to_string(), |l| l.to_string())
        ),
        csv::ErrorKind::Utf8 { .. } => anyhow!(
            "{source}, line {}: the row is not valid UTF-8 text",
            line.map_or_else(|| "?".to_string(), |l| l.to_string())
        ),
        _ => anyhow!("cannot read {source}: {e}"),
    }
}

impl Table {
    /// Number of data rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// The index of column `name`; the error lists the columns found.
    pub fn column(&self, name: &str, role: &str) -> Result<usize> {
        self.headers.iter().position(|h| h == name).ok_or_else(|| {
            anyhow!(
                "{}: no column {name:?} ({role}); the columns are: {}",
                self.source,
                self.headers.join(", ")
            )
        })
    }

    /// The cell of data row `r`, column `c`, as a finite number; the error names the line and
    /// the column.
    pub fn number(&self, r: usize, c: usize) -> Result<f64> {
        let cell = self.rows[r][c].as_str();
        let at = || {
            format!(
                "{}, line {} (data row {}), column {:?}",
                self.source,
                self.lines[r],
                r + 1,
                self.headers[c]
            )
        };
        if cell.is_empty() {
            bail!("{}: the cell is empty (every value must be a number)", at());
        }
        match cell.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            Ok(_) => bail!("{}: {cell:?} is not a finite number", at()),
            Err(_) => bail!("{}: {cell:?} is not a number", at()),
        }
    }

    /// Columns `cols` of every row as a row-major matrix of finite numbers.
    pub fn numbers(&self, cols: &[usize]) -> Result<Vec<f64>> {
        let mut out = Vec::with_capacity(self.len() * cols.len());
        for r in 0..self.len() {
            for &c in cols {
                out.push(self.number(r, c)?);
            }
        }
        Ok(out)
    }

    /// Whether every cell of column `c` reads as a number (NaN and infinities included, so that
    /// a numeric target with a bad value is reported rather than taken for class labels).
    pub fn is_numeric(&self, c: usize) -> bool {
        self.rows.iter().all(|row| row[c].parse::<f64>().is_ok())
    }

    /// The text cells of column `c`; an empty cell is an error naming its line.
    pub fn labels(&self, c: usize) -> Result<Vec<String>> {
        self.rows
            .iter()
            .enumerate()
            .map(|(r, row)| {
                if row[c].is_empty() {
                    bail!(
                        "{}, line {} (data row {}), column {:?}: the cell is empty",
                        self.source,
                        self.lines[r],
                        r + 1,
                        self.headers[c]
                    );
                }
                Ok(row[c].clone())
            })
            .collect()
    }
}

/// The class map of `labels`: the distinct values, in numeric order when all are numbers,
/// otherwise in text order.
pub fn class_map(labels: &[String]) -> Vec<String> {
    let set: BTreeSet<&str> = labels.iter().map(String::as_str).collect();
    let mut classes: Vec<String> = set.into_iter().map(str::to_string).collect();
    let nums: Option<Vec<f64>> = classes.iter().map(|c| c.parse::<f64>().ok()).collect();
    if let Some(n) = nums {
        let mut idx: Vec<usize> = (0..classes.len()).collect();
        idx.sort_by(|&a, &b| n[a].total_cmp(&n[b]));
        classes = idx.into_iter().map(|i| classes[i].clone()).collect();
    }
    classes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Result<Table> {
        read_from(text.as_bytes(), "t.csv")
    }

    #[test]
    fn reads_and_reports_cells() {
        let t = table("a, b,y\n1,2,x\n3 ,4.5,z\n").unwrap();
        assert_eq!(t.headers, ["a", "b", "y"]);
        assert_eq!(t.numbers(&[0, 1]).unwrap(), [1.0, 2.0, 3.0, 4.5]);
        assert!(!t.is_numeric(2));
        let e = t.number(0, 2).unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("\"y\""), "{e}");
        let e = t.column("price", "target").unwrap_err().to_string();
        assert!(e.contains("a, b, y"), "{e}");
        let e = table("a,b\n1,2\n3\n").unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("ragged"), "{e}");
        assert!(table("").unwrap_err().to_string().contains("empty"));
        assert!(table("a,b\n").unwrap_err().to_string().contains("no data"));
        assert!(table("a,a\n1,2\n")
            .unwrap_err()
            .to_string()
            .contains("twice"));
        let t = table("a\nNaN\n\n").unwrap();
        assert!(t.number(0, 0).unwrap_err().to_string().contains("finite"));
        assert_eq!(
            class_map(&["10".into(), "2".into(), "10".into()]),
            ["2", "10"]
        );
        assert_eq!(class_map(&["b".into(), "a".into()]), ["a", "b"]);
    }
}
