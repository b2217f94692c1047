//! Reading a user's CSV file: a header row, then one record per line.
//!
//! Every problem is an error that names the file, the line (1-based, the header is line 1) and
//! the column: a non-numeric, empty or non-finite feature cell, a row with a different number of
//! fields than the header, an empty file, a file with a header but no data, duplicate column
//! names, a missing column (the error lists the columns found), a number or class label that
//! runs over several lines (a quoted field: almost always an unbalanced quote that swallowed
//! the rows after it). Messages quote at most [`SHOWN_CHARS`] characters of a cell.

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
            bail!(
                "{source}, line 1: the column name {} appears twice in the header",
                show(h)
            );
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

/// The most characters of one cell (or column name) that a message quotes.
pub const SHOWN_CHARS: usize = 40;

/// How many offending rows a message lists before it says how many more there are.
pub const SHOWN_ROWS: usize = 5;

/// `cell` quoted for a message: whole when short, otherwise its first [`SHOWN_CHARS`]
/// characters and its length (a 5 MB cell must not give a 5 MB message).
pub fn show(cell: &str) -> String {
    let n = cell.chars().count();
    if n <= SHOWN_CHARS {
        format!("{cell:?}")
    } else {
        let head: String = cell.chars().take(SHOWN_CHARS).collect();
        format!("{head:?}… ({n} characters)")
    }
}

/// A column name for a list in a message: as written when short, cut like [`show`] otherwise.
fn show_name(name: &str) -> String {
    if name.chars().count() <= SHOWN_CHARS {
        name.to_string()
    } else {
        show(name)
    }
}

/// Line breaks in `cell` (a quoted field may hold them).
fn line_breaks(cell: &str) -> usize {
    // "\r\n" counts once, a lone '\r' or '\n' once each.
    let b = cell.as_bytes();
    b.iter()
        .enumerate()
        .filter(|&(i, &c)| c == b'\n' || (c == b'\r' && b.get(i + 1) != Some(&b'\n')))
        .count()
}

/// Whether `cell` reads as a number (NaN and infinities included).
fn parses(cell: &str) -> bool {
    cell.parse::<f64>().is_ok()
}

/// Whether `cell` reads as a finite number.
fn is_finite_number(cell: &str) -> bool {
    cell.parse::<f64>().is_ok_and(f64::is_finite)
}

impl Table {
    /// Number of data rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the table has no data rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The index of column `name`; the error lists the columns found.
    pub fn column(&self, name: &str, role: &str) -> Result<usize> {
        self.headers.iter().position(|h| h == name).ok_or_else(|| {
            const MAX: usize = 30;
            let mut names: Vec<String> = self
                .headers
                .iter()
                .take(MAX)
                .map(|h| show_name(h))
                .collect();
            if self.headers.len() > MAX {
                names.push(format!("… ({} more)", self.headers.len() - MAX));
            }
            anyhow!(
                "{}: no column {} ({role}); the columns are: {}",
                self.source,
                show(name),
                names.join(", ")
            )
        })
    }

    /// Where the cell of data row `r`, column `c` is, for messages.
    pub fn at(&self, r: usize, c: usize) -> String {
        format!(
            "{}, line {} (data row {}), column {}",
            self.source,
            self.lines[r],
            r + 1,
            show(&self.headers[c])
        )
    }

    /// The error for a cell of data row `r`, column `c` that holds a line break: a quoted
    /// field that runs over several lines, almost always an unbalanced quote that swallowed
    /// the rows after it.
    fn spans_lines(&self, r: usize, c: usize, what: &str) -> anyhow::Error {
        let breaks = line_breaks(&self.rows[r][c]) as u64;
        anyhow!(
            "{}: the value is a quoted field that runs over {} lines (lines {}–{}): a closing \
             quote is probably missing, and the rows after it were read as part of this \
             value; {what} cannot span lines",
            self.at(r, c),
            breaks + 1,
            self.lines[r],
            self.lines[r] + breaks
        )
    }

    /// The cell of data row `r`, column `c`, as a finite number; the error names the line and
    /// the column.
    pub fn number(&self, r: usize, c: usize) -> Result<f64> {
        let cell = self.rows[r][c].as_str();
        if cell.is_empty() {
            bail!(
                "{}: the cell is empty (every value must be a number)",
                self.at(r, c)
            );
        }
        match cell.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            Ok(_) => bail!("{}: {} is not a finite number", self.at(r, c), show(cell)),
            Err(_) if line_breaks(cell) > 0 => Err(self.spans_lines(r, c, "a number")),
            Err(_) => bail!("{}: {} is not a number", self.at(r, c), show(cell)),
        }
    }

    /// Columns `cols` of every row as a row-major matrix of finite numbers.
    pub fn numbers(&self, cols: &[usize]) -> Result<Vec<f64>> {
        let mut out = Vec::with_capacity(self.len().saturating_mul(cols.len()));
        for r in 0..self.len() {
            for &c in cols {
                out.push(self.number(r, c)?);
            }
        }
        Ok(out)
    }

    /// Whether column `c` is a numeric column, perhaps with a few bad cells: at least
    /// [`NUMERIC_SHARE`] of its cells read as numbers (NaN and infinities included, so that a
    /// numeric column with a bad value is reported rather than taken for class labels).
    pub fn looks_numeric(&self, c: usize) -> bool {
        let numbers = self.rows.iter().filter(|row| parses(&row[c])).count();
        numbers > 0 && numbers as f64 >= NUMERIC_SHARE * self.len() as f64
    }

    /// The data rows whose cell in column `c` is not a finite number (empty, text, NaN, ±inf).
    pub fn non_numbers(&self, c: usize) -> Vec<usize> {
        (0..self.len())
            .filter(|&r| !is_finite_number(&self.rows[r][c]))
            .collect()
    }

    /// "line L (data row R) "cell", …" for the first [`SHOWN_ROWS`] of `rows` in column `c`,
    /// and how many more there are.
    pub fn list_cells(&self, rows: &[usize], c: usize) -> String {
        let mut parts: Vec<String> = rows
            .iter()
            .take(SHOWN_ROWS)
            .map(|&r| {
                format!(
                    "line {} (data row {}) {}",
                    self.lines[r],
                    r + 1,
                    show(&self.rows[r][c])
                )
            })
            .collect();
        if rows.len() > SHOWN_ROWS {
            parts.push(format!("and {} more", rows.len() - SHOWN_ROWS));
        }
        parts.join(", ")
    }

    /// The lines of `rows`, the first [`SHOWN_ROWS`] of them, for a message.
    pub fn list_lines(&self, rows: &[usize]) -> String {
        let mut parts: Vec<String> = rows
            .iter()
            .take(SHOWN_ROWS)
            .map(|&r| self.lines[r].to_string())
            .collect();
        if rows.len() > SHOWN_ROWS {
            parts.push(format!("… ({} more)", rows.len() - SHOWN_ROWS));
        }
        parts.join(", ")
    }

    /// The text cells of column `c` as class labels; an empty cell, or one that runs over
    /// several lines (an unbalanced quote), is an error naming its line.
    pub fn labels(&self, c: usize) -> Result<Vec<String>> {
        (0..self.len())
            .map(|r| {
                let cell = &self.rows[r][c];
                if cell.is_empty() {
                    bail!("{}: the cell is empty", self.at(r, c));
                }
                if line_breaks(cell) > 0 {
                    return Err(self.spans_lines(r, c, "a class label"));
                }
                Ok(cell.clone())
            })
            .collect()
    }

    /// The table with only the data rows `keep` (in the order given).
    pub fn select_rows(&self, keep: &[usize]) -> Table {
        Table {
            source: self.source.clone(),
            headers: self.headers.clone(),
            rows: keep.iter().map(|&r| self.rows[r].clone()).collect(),
            lines: keep.iter().map(|&r| self.lines[r]).collect(),
        }
    }
}

/// The share of a column's cells that must read as numbers for the column to be taken as
/// numeric (a regression target) rather than as class labels.
pub const NUMERIC_SHARE: f64 = 0.9;

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
        assert!(!t.looks_numeric(2) && t.looks_numeric(1));
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

#[cfg(test)]
mod quoting_tests {
    use super::*;

    /// An unbalanced quote swallows the rows after it into one value: in a class label or a
    /// numeric column that is an error naming the line where the value starts and ends.
    #[test]
    fn a_value_spanning_lines_is_an_error_naming_the_line() {
        let t = read_from(
            "a,b,label\n1,2,x\n3,4,\"y\n5,6,z\n7,8,x\n9,10,z\n".as_bytes(),
            "q.csv",
        )
        .unwrap();
        assert_eq!(t.len(), 2, "the quote swallowed the later rows");
        let e = t.labels(2).unwrap_err().to_string();
        assert!(
            e.starts_with("q.csv, line 3 (data row 2), column \"label\": the value is a quoted field that runs over"),
            "{e}"
        );
        assert!(e.contains("closing quote is probably missing"), "{e}");
        assert!(e.contains("a class label cannot span lines"), "{e}");
        let t = read_from("a,y\n1,2\n\"3\n4\",5\n".as_bytes(), "q.csv").unwrap();
        let e = t.number(1, 0).unwrap_err().to_string();
        assert!(
            e.contains("line 3") && e.contains("lines 3–4") && e.contains("a number cannot"),
            "{e}"
        );
        // A line break in a column nobody reads as a number or label is fine.
        let t = read_from("a,note,y\n1,\"two\nlines\",3\n".as_bytes(), "q.csv").unwrap();
        assert_eq!(t.numbers(&[0, 2]).unwrap(), [1.0, 3.0]);
    }

    /// A huge cell is quoted by its first characters and its length.
    #[test]
    fn long_cells_are_cut_in_messages() {
        let big = "z".repeat(5_000_000);
        let t = read_from(format!("a,y\n{big},1\n").as_bytes(), "big.csv").unwrap();
        let e = t.number(0, 0).unwrap_err().to_string();
        assert!(e.len() < 300, "{} bytes", e.len());
        assert!(
            e.contains("(5000000 characters)") && e.contains(&"z".repeat(40)),
            "{e}"
        );
        assert_eq!(show("short"), "\"short\"");
        let e = t.column(&big, "--target").unwrap_err().to_string();
        assert!(e.len() < 300, "{} bytes", e.len());
        let t = read_from(format!("{big},y\n1,2\n").as_bytes(), "big.csv").unwrap();
        let e = t.column("x", "--target").unwrap_err().to_string();
        assert!(e.len() < 300 && e.contains("5000000 characters"), "{e}");
    }
}
