//! Property-based harness for the UCI text reader: tables ([`parse_table`], [`read_table`]), and
//! the index files of a data set directory ([`UciData`]).
//!
//! Arbitrary bytes and mutated valid inputs must never panic: the result is either an error (with
//! a position that points at the offending token, and a short message) or a consistent table.
//! A valid table, written with any of the layouts the real files use, must read back exactly.
//!
//! 256 cases per property by default; `PROPTEST_CASES=100000 cargo test -p smi-data --release
//! --test harness_text` runs longer.

mod common;

use std::path::Path;

use proptest::collection::vec;
use proptest::prelude::*;
use smi_data::{
    parse_table, read_table, ColumnConvention, Error, SplitKind, Table, UciData, UciDataset,
    MAX_QUOTED_CHARS,
};

/// The whitespace-separated tokens of a line with their 1-based character positions (an
/// implementation independent of the reader's).
fn tokens_of(line: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, c) in line.chars().enumerate() {
        if c.is_whitespace() {
            out.extend(current.take());
        } else {
            current
                .get_or_insert_with(|| (i + 1, String::new()))
                .1
                .push(c);
        }
    }
    out.extend(current);
    out
}

/// Checks a result of [`parse_table`] on `text` against what the text actually holds.
fn check_table_result(text: &str, result: &Result<Table, Error>) -> Result<(), TestCaseError> {
    let lines: Vec<&str> = text.lines().collect();
    let non_blank = lines.iter().filter(|l| !tokens_of(l).is_empty()).count();
    match result {
        Ok(t) => {
            prop_assert!(t.rows >= 1 && t.cols >= 1);
            prop_assert_eq!(t.rows, non_blank);
            prop_assert_eq!(t.values.len(), t.rows * t.cols);
            prop_assert!(t.values.iter().all(|v| v.is_finite()));
            prop_assert_eq!(t.row(t.rows - 1).map(<[f64]>::len), Some(t.cols));
            prop_assert!(t.row(t.rows).is_none());
        }
        Err(e) => {
            let msg = e.to_string();
            // Path + fixed text + at most MAX_QUOTED_CHARS characters, each escaped to ≤ 10 bytes.
            prop_assert!(
                msg.len() <= 300 + 10 * MAX_QUOTED_CHARS,
                "{} bytes",
                msg.len()
            );
            match e {
                Error::Parse {
                    line,
                    column,
                    char_column,
                    token,
                    token_len,
                    ..
                } => {
                    prop_assert!(*line >= 1 && *line <= lines.len());
                    let toks = tokens_of(lines[*line - 1]);
                    prop_assert!(*column >= 1 && *column <= toks.len());
                    let (start, whole) = &toks[*column - 1];
                    prop_assert_eq!(start, char_column);
                    prop_assert_eq!(whole.len(), *token_len);
                    prop_assert!(whole.starts_with(token.as_str()));
                    prop_assert_eq!(
                        token.chars().count(),
                        whole.chars().count().min(MAX_QUOTED_CHARS)
                    );
                    prop_assert!(!matches!(whole.parse::<f64>(), Ok(v) if v.is_finite()));
                }
                Error::RaggedRow {
                    line,
                    found,
                    expected,
                    first_line,
                    ..
                } => {
                    prop_assert!(first_line < line && found != expected);
                    prop_assert_eq!(tokens_of(lines[*line - 1]).len(), *found);
                    prop_assert_eq!(tokens_of(lines[*first_line - 1]).len(), *expected);
                }
                Error::EmptyFile { .. } => prop_assert_eq!(non_blank, 0),
                other => prop_assert!(false, "unexpected error {other:?}"),
            }
        }
    }
    Ok(())
}

/// Characters that matter to the reader: digits, number syntax, separators of all kinds, and
/// some that are neither.
fn interesting_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => prop::sample::select(
            "0123456789.eE+-".chars().collect::<Vec<_>>()
        ),
        3 => prop::sample::select(vec![' ', '\t', '\n', '\r', '\u{a0}', '\u{2003}', '\u{0b}']),
        1 => prop::sample::select(
            "nNaAiIfFxX,;é\u{0}\u{feff}∞".chars().collect::<Vec<_>>()
        ),
        1 => any::<char>(),
    ]
}

/// How a value is written.
#[derive(Clone, Copy, Debug)]
enum Style {
    Display,
    LowerExp,
    UpperExp,
    Plus,
}

fn write_value(v: f64, style: Style) -> String {
    match style {
        Style::Display => format!("{v}"),
        Style::LowerExp => format!("{v:e}"),
        Style::UpperExp => format!("{v:E}"),
        Style::Plus => format!("{v:+}"),
    }
}

fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<f64>().prop_filter("finite", |v| v.is_finite()),
        (-1000i32..1000).prop_map(f64::from),
        Just(0.0),
        Just(-0.0),
        Just(f64::MIN_POSITIVE / 4.0),
        Just(f64::MAX),
    ]
}

/// A table and a text layout for it: values and styles, separators, leading/trailing
/// whitespace, blank lines and line endings.
#[derive(Clone, Debug)]
struct Layout {
    rows: usize,
    cols: usize,
    cells: Vec<(f64, Style, String)>,
    lead: Vec<String>,
    trail: Vec<String>,
    blank_before: Vec<Option<String>>,
    crlf: bool,
    final_newline: bool,
}

fn whitespace(min: usize, max: usize) -> impl Strategy<Value = String> {
    vec(prop::sample::select(vec![' ', '\t']), min..=max).prop_map(|v| v.into_iter().collect())
}

fn layout() -> impl Strategy<Value = Layout> {
    (1usize..7, 1usize..6).prop_flat_map(|(rows, cols)| {
        let style = prop::sample::select(vec![
            Style::Display,
            Style::LowerExp,
            Style::UpperExp,
            Style::Plus,
        ]);
        (
            vec((finite(), style, whitespace(1, 3)), rows * cols),
            vec(whitespace(0, 2), rows),
            vec(whitespace(0, 2), rows),
            vec(prop::option::of(whitespace(0, 2)), rows + 1),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(
                move |(cells, lead, trail, blank_before, crlf, final_newline)| Layout {
                    rows,
                    cols,
                    cells,
                    lead,
                    trail,
                    blank_before,
                    crlf,
                    final_newline,
                },
            )
    })
}

impl Layout {
    fn text(&self) -> String {
        let eol = if self.crlf { "\r\n" } else { "\n" };
        let mut lines = Vec::new();
        for r in 0..self.rows {
            if let Some(b) = &self.blank_before[r] {
                lines.push(b.clone());
            }
            let mut line = self.lead[r].clone();
            for c in 0..self.cols {
                let (v, style, sep) = &self.cells[r * self.cols + c];
                if c > 0 {
                    line.push_str(sep);
                }
                line.push_str(&write_value(*v, *style));
            }
            line.push_str(&self.trail[r]);
            lines.push(line);
        }
        if let Some(b) = &self.blank_before[self.rows] {
            lines.push(b.clone());
        }
        let mut text = lines.join(eol);
        if self.final_newline {
            text.push_str(eol);
        }
        text
    }

    fn values(&self) -> Vec<f64> {
        self.cells.iter().map(|c| c.0).collect()
    }
}

/// One edit of a text, at a position taken modulo its length.
#[derive(Clone, Debug)]
enum Edit {
    Delete(usize),
    Insert(usize, char),
    Replace(usize, char),
    /// Repeats the character at the position many times (a huge token or separator).
    Stretch(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<usize>().prop_map(Edit::Delete),
        (any::<usize>(), interesting_char()).prop_map(|(p, c)| Edit::Insert(p, c)),
        (any::<usize>(), interesting_char()).prop_map(|(p, c)| Edit::Replace(p, c)),
        (any::<usize>(), 50usize..3000).prop_map(|(p, n)| Edit::Stretch(p, n)),
    ]
}

fn apply(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for e in edits {
        let n = chars.len();
        match *e {
            Edit::Delete(p) if n > 0 => {
                chars.remove(p % n);
            }
            Edit::Insert(p, c) => chars.insert(p % (n + 1), c),
            Edit::Replace(p, c) if n > 0 => chars[p % n] = c,
            Edit::Stretch(p, k) if n > 0 => {
                let at = p % n;
                let c = chars[at];
                chars.splice(at..at, std::iter::repeat_n(c, k));
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

/// The files of a small UCI data set directory, each either valid or replaced by other text.
#[derive(Clone, Debug)]
struct UciFiles {
    n_splits: String,
    features: String,
    target: String,
    /// `(train, test)` contents for splits 0, 1, …; `None`: the file is absent.
    splits: Vec<(Option<String>, Option<String>)>,
}

/// Text for an index file: a valid one, a mutation of it, or arbitrary text.
fn index_text(valid: String) -> impl Strategy<Value = String> {
    let v = valid.clone();
    prop_oneof![
        3 => Just(valid),
        3 => vec(edit(), 1..4).prop_map(move |e| apply(&v, &e)),
        1 => vec(interesting_char(), 0..20).prop_map(|c| c.into_iter().collect()),
        1 => prop::sample::select(vec![
            "18446744073709551615".to_string(),
            "18446744073709551616".to_string(),
            "9007199254740993".to_string(),
            "1e300".to_string(),
            "-0".to_string(),
            "4.0".to_string(),
            "0x10".to_string(),
            String::new(),
        ]),
    ]
}

fn uci_files() -> impl Strategy<Value = UciFiles> {
    let split = |k: usize| {
        // Six rows; split k puts rows k and k+1 in the test set.
        let train: Vec<String> = (0..6)
            .filter(|&r| r != k && r != k + 1)
            .map(|r| r.to_string())
            .collect();
        let test = format!("{}\n{}\n", k, k + 1);
        (
            prop::option::weighted(0.9, index_text(train.join("\n") + "\n")),
            prop::option::weighted(0.9, index_text(test)),
        )
    };
    (
        index_text("3\n".to_string()),
        index_text("0\n1\n".to_string()),
        index_text("2\n".to_string()),
        (0usize..5).prop_flat_map(move |n| (0..n).map(split).collect::<Vec<_>>()),
    )
        .prop_map(|(n_splits, features, target, splits)| UciFiles {
            n_splits,
            features,
            target,
            splits,
        })
}

/// Loads the directory under both conventions and exercises every split accessor, checking what
/// comes back.
fn check_uci(root: &Path, files: &UciFiles) -> Result<(), TestCaseError> {
    let both_present = files
        .splits
        .iter()
        .take_while(|(a, b)| a.is_some() && b.is_some())
        .count();
    for convention in [ColumnConvention::Paper, ColumnConvention::IndexFiles] {
        let Ok(d) = UciData::load(root, UciDataset::Yacht, convention) else {
            prop_assert!(convention == ColumnConvention::IndexFiles);
            continue;
        };
        prop_assert_eq!(d.rows, 6);
        prop_assert_eq!(d.x.len(), d.rows * d.cols);
        prop_assert!(d.feature_columns.iter().all(|&c| c < 3) && d.target_column < 3);
        for kind in [SplitKind::Standard, SplitKind::Gap10] {
            let n = d.n_splits(kind);
            if let (SplitKind::Standard, Ok(n)) = (kind, &n) {
                // The count is backed by index files.
                prop_assert!(*n <= both_present, "n_splits {n}, files for {both_present}");
            }
            match d.splits(kind) {
                Ok(all) => {
                    prop_assert_eq!(Some(all.len()), n.as_ref().ok().copied());
                    for s in &all {
                        let mut seen = [false; 6];
                        for &r in s.train.iter().chain(&s.test) {
                            prop_assert!(r < 6 && !seen[r]);
                            seen[r] = true;
                        }
                        let _ = d.prepared(s);
                        let _ = s.validation_holdout(0.1, 10);
                    }
                }
                Err(e) => prop_assert!(e.to_string().len() < 2000),
            }
            let upper = n.as_ref().map_or(3, |n| n + 1);
            for k in 0..upper {
                let one = d.split(kind, k);
                if let Ok(n) = &n {
                    prop_assert!(k < *n || one.is_err());
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(common::config())]

    /// Any bytes at all (invalid UTF-8 included): an error or a consistent table.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in vec(any::<u8>(), 0..400)) {
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("data.txt");
        std::fs::write(&p, &bytes).unwrap();
        let result = read_table(&p);
        match std::str::from_utf8(&bytes) {
            Ok(text) => check_table_result(text, &result)?,
            Err(_) => prop_assert!(matches!(result, Err(Error::Io { .. })), "{:?}", result),
        }
    }

    /// Text made of the characters that matter to the reader.
    #[test]
    fn table_like_text_never_panics(chars in vec(interesting_char(), 0..300)) {
        let text: String = chars.into_iter().collect();
        check_table_result(&text, &parse_table(&text, Path::new("t.txt")))?;
    }

    /// A valid table in any layout reads back bit for bit.
    #[test]
    fn valid_table_round_trips(l in layout()) {
        let text = l.text();
        let t = parse_table(&text, Path::new("t.txt"))
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text:?}")))?;
        prop_assert_eq!((t.rows, t.cols), (l.rows, l.cols));
        let got: Vec<u64> = t.values.iter().map(|v| v.to_bits()).collect();
        let want: Vec<u64> = l.values().iter().map(|v| v.to_bits()).collect();
        prop_assert_eq!(got, want);
        // And from a file.
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("data.txt");
        std::fs::write(&p, &text).unwrap();
        prop_assert_eq!(read_table(&p).unwrap(), t);
    }

    /// Edits of a valid table: parsed consistently, or rejected at the right place with a short
    /// message (huge tokens included).
    #[test]
    fn mutated_table_is_read_or_rejected_precisely(l in layout(), edits in vec(edit(), 1..6)) {
        let text = apply(&l.text(), &edits);
        check_table_result(&text, &parse_table(&text, Path::new("t.txt")))?;
    }

    /// A data set directory whose index files are valid, mutated, arbitrary or missing.
    #[test]
    fn uci_directory_never_panics(files in uci_files()) {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("uci").join("yacht");
        std::fs::create_dir_all(&d).unwrap();
        let w = |name: &str, text: &str| std::fs::write(d.join(name), text).unwrap();
        w("data.txt", "1 10 100\n2 20 200\n3 30 300\n4 40 400\n5 50 500\n6 60 600\n");
        w("n_splits.txt", &files.n_splits);
        w("index_features.txt", &files.features);
        w("index_target.txt", &files.target);
        for (k, (train, test)) in files.splits.iter().enumerate() {
            if let Some(t) = train {
                w(&format!("index_train_{k}.txt"), t);
            }
            if let Some(t) = test {
                w(&format!("index_test_{k}.txt"), t);
            }
        }
        check_uci(tmp.path(), &files)?;
    }
}
