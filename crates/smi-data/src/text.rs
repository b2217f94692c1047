//! Whitespace-separated text tables and index files, parsed with exact error positions.

use std::collections::HashMap;
use std::path::Path;

use crate::error::{Error, Result};

/// A dense table of `f64` read from a whitespace-separated text file (row-major).
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The values, row after row (`rows × cols`).
    pub values: Vec<f64>,
    /// Number of data rows (non-blank lines).
    pub rows: usize,
    /// Number of columns of every row.
    pub cols: usize,
}

impl Table {
    /// Row `i` as a slice of length `cols` (`None` if out of range).
    pub fn row(&self, i: usize) -> Option<&[f64]> {
        if i < self.rows {
            self.values.get(i * self.cols..(i + 1) * self.cols)
        } else {
            None
        }
    }
}

/// Reads a file into a string, mapping errors to [`Error::Io`].
pub(crate) fn read_to_string(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| Error::io(path, e))
}

/// Splits a line into `(1-based char column, token)` pairs on runs of spaces/tabs (and any other
/// Unicode whitespace).
fn tokens(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = line;
    let mut offset = 0usize; // in chars
    std::iter::from_fn(move || {
        let trimmed = rest.trim_start();
        offset += rest[..rest.len() - trimmed.len()].chars().count();
        rest = trimmed;
        if rest.is_empty() {
            return None;
        }
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let tok = &rest[..end];
        let col = offset + 1;
        offset += tok.chars().count();
        rest = &rest[end..];
        Some((col, tok))
    })
}

/// Parses a finite `f64` token.
fn parse_f64(tok: &str) -> Option<f64> {
    tok.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// Parses a whitespace/tab-separated numeric table.
///
/// Blank (whitespace-only) lines are skipped; row `i` is the `i`-th non-blank line. Every token must
/// be a finite number and every row must have as many columns as the first one.
///
/// # Errors
/// [`Error::Parse`] (with line, column and character position) for a bad token,
/// [`Error::RaggedRow`] for a row of the wrong width, [`Error::EmptyFile`] if there are no rows.
pub fn parse_table(text: &str, path: &Path) -> Result<Table> {
    let mut values = Vec::new();
    let mut rows = 0usize;
    let mut cols = 0usize;
    let mut first_line = 0usize;
    for (li, line) in text.lines().enumerate() {
        let lineno = li + 1;
        let before = values.len();
        for (field, (char_col, tok)) in tokens(line).enumerate() {
            let v = parse_f64(tok).ok_or_else(|| {
                Error::parse(path, lineno, field + 1, char_col, tok, "a finite number")
            })?;
            values.push(v);
        }
        let width = values.len() - before;
        if width == 0 {
            continue;
        }
        if rows == 0 {
            cols = width;
            first_line = lineno;
        } else if width != cols {
            return Err(Error::RaggedRow {
                path: path.to_path_buf(),
                line: lineno,
                found: width,
                expected: cols,
                first_line,
            });
        }
        rows += 1;
    }
    if rows == 0 {
        return Err(Error::EmptyFile {
            path: path.to_path_buf(),
        });
    }
    Ok(Table { values, rows, cols })
}

/// Reads and parses a numeric table file (see [`parse_table`]).
///
/// # Errors
/// [`Error::Io`] if the file cannot be read, otherwise as [`parse_table`].
pub fn read_table(path: &Path) -> Result<Table> {
    parse_table(&read_to_string(path)?, path)
}

/// Parses a non-negative integer token; accepts `12`, `+12` and integral floats such as `12.0` or
/// `1.2e1` (as written by `np.savetxt`).
fn parse_index(tok: &str) -> Option<usize> {
    if let Ok(v) = tok.parse::<usize>() {
        return Some(v);
    }
    let f = tok.parse::<f64>().ok()?;
    // 2^53 bounds the integers f64 represents exactly.
    if f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f <= 9_007_199_254_740_992.0 {
        Some(f as usize)
    } else {
        None
    }
}

/// An index read from a file, with the 1-based line it came from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LocatedIndex {
    pub index: usize,
    pub line: usize,
}

/// Parses a file of whitespace-separated non-negative integers (usually one per line).
///
/// # Errors
/// [`Error::Parse`] for a token that is not a non-negative integer, [`Error::EmptyFile`] if the file
/// has no tokens.
pub(crate) fn parse_indices(text: &str, path: &Path) -> Result<Vec<LocatedIndex>> {
    let mut out = Vec::new();
    for (li, line) in text.lines().enumerate() {
        for (field, (char_col, tok)) in tokens(line).enumerate() {
            let index = parse_index(tok).ok_or_else(|| {
                Error::parse(
                    path,
                    li + 1,
                    field + 1,
                    char_col,
                    tok,
                    "a non-negative integer",
                )
            })?;
            out.push(LocatedIndex {
                index,
                line: li + 1,
            });
        }
    }
    if out.is_empty() {
        return Err(Error::EmptyFile {
            path: path.to_path_buf(),
        });
    }
    Ok(out)
}

/// Reads an index file and checks that every index is `< bound` and appears once.
///
/// # Errors
/// As [`parse_indices`], plus [`Error::IndexOutOfRange`] and [`Error::DuplicateIndex`].
pub(crate) fn read_index_set(path: &Path, bound: usize) -> Result<Vec<usize>> {
    let located = parse_indices(&read_to_string(path)?, path)?;
    check_index_set(&located, path, bound)
}

/// Checks range and uniqueness of located indices (see [`read_index_set`]).
pub(crate) fn check_index_set(
    located: &[LocatedIndex],
    path: &Path,
    bound: usize,
) -> Result<Vec<usize>> {
    let mut seen: HashMap<usize, usize> = HashMap::with_capacity(located.len());
    let mut out = Vec::with_capacity(located.len());
    for li in located {
        if li.index >= bound {
            return Err(Error::IndexOutOfRange {
                path: path.to_path_buf(),
                line: li.line,
                index: li.index,
                bound,
            });
        }
        if let Some(&first_line) = seen.get(&li.index) {
            return Err(Error::DuplicateIndex {
                path: path.to_path_buf(),
                line: li.line,
                index: li.index,
                first_line,
            });
        }
        seen.insert(li.index, li.line);
        out.push(li.index);
    }
    Ok(out)
}

/// Reads a file holding a single non-negative integer (e.g. `n_splits.txt`).
///
/// # Errors
/// As [`parse_indices`], plus [`Error::Parse`] if there is more than one token.
pub(crate) fn read_single_index(path: &Path) -> Result<usize> {
    let located = parse_indices(&read_to_string(path)?, path)?;
    match located.as_slice() {
        [one] => Ok(one.index),
        [_, second, ..] => Err(Error::parse(
            path,
            second.line,
            0,
            0,
            &second.index.to_string(),
            "end of file (exactly one integer)",
        )),
        [] => Err(Error::EmptyFile {
            path: path.to_path_buf(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_mixed_whitespace_and_blank_lines() {
        let t = parse_table("  1.0\t2 \n\n3e0   4.5e+00 \n \t \n", Path::new("x.txt")).unwrap();
        assert_eq!((t.rows, t.cols), (2, 2));
        assert_eq!(t.values, vec![1.0, 2.0, 3.0, 4.5]);
        assert_eq!(t.row(1), Some(&[3.0, 4.5][..]));
        assert_eq!(t.row(2), None);
    }

    #[test]
    fn bad_token_reports_line_and_column() {
        let err = parse_table("1 2 3\n4  x5 6\n", Path::new("d.txt")).unwrap_err();
        match &err {
            Error::Parse {
                line,
                column,
                char_column,
                token,
                ..
            } => {
                assert_eq!((*line, *column, *char_column), (2, 2, 4));
                assert_eq!(token, "x5");
            }
            other => panic!("unexpected {other:?}"),
        }
        let msg = err.to_string();
        assert!(msg.contains("d.txt:2:2"), "{msg}");
        assert!(msg.contains("\"x5\""), "{msg}");
    }

    #[test]
    fn nan_and_inf_are_rejected() {
        assert!(parse_table("1 nan\n", Path::new("a")).is_err());
        assert!(parse_table("inf 1\n", Path::new("a")).is_err());
    }

    #[test]
    fn ragged_row_is_reported() {
        let err = parse_table("\n1 2 3\n4 5\n", Path::new("r.txt")).unwrap_err();
        assert!(matches!(
            err,
            Error::RaggedRow {
                line: 3,
                found: 2,
                expected: 3,
                first_line: 2,
                ..
            }
        ));
        assert!(err.to_string().contains("r.txt:3"));
    }

    #[test]
    fn empty_is_an_error() {
        assert!(matches!(
            parse_table("", Path::new("e")),
            Err(Error::EmptyFile { .. })
        ));
        assert!(matches!(
            parse_table(" \n\t\n", Path::new("e")),
            Err(Error::EmptyFile { .. })
        ));
    }

    #[test]
    fn indices_accept_float_integers_and_check_range_and_duplicates() {
        let p = Path::new("i.txt");
        let li = parse_indices("3\n1.0\n2e0\n", p).unwrap();
        assert_eq!(check_index_set(&li, p, 4).unwrap(), vec![3, 1, 2]);
        assert!(matches!(
            check_index_set(&li, p, 3),
            Err(Error::IndexOutOfRange {
                line: 1,
                index: 3,
                bound: 3,
                ..
            })
        ));
        let dup = parse_indices("0\n1\n0\n", p).unwrap();
        assert!(matches!(
            check_index_set(&dup, p, 5),
            Err(Error::DuplicateIndex {
                line: 3,
                index: 0,
                first_line: 1,
                ..
            })
        ));
        assert!(parse_indices("1\n-2\n", p).is_err());
        assert!(parse_indices("1.5\n", p).is_err());
    }
}
