//! The crate's error type: one variant per way loading or generating data can fail.

use std::path::{Path, PathBuf};

/// Result alias used throughout `smi-data`.
pub type Result<T> = std::result::Result<T, Error>;

/// Everything that can go wrong while reading or generating data.
///
/// Every variant that concerns a file carries its path, and text-parsing variants also carry the
/// 1-based line (and, where it applies, the 1-based column) so that a message points at the exact
/// token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An I/O error other than "not found" while reading `path`.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file being read.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },

    /// A required file of a data set does not exist.
    #[error(
        "{dataset}: file {file:?} not found; searched {}",
        searched.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    MissingFile {
        /// Name of the data set (e.g. `"boston"`, `"mnist"`).
        dataset: String,
        /// File name that was looked for (e.g. `"data.txt"`).
        file: String,
        /// The directories that were searched, in order.
        searched: Vec<PathBuf>,
    },

    /// A token of a text file could not be parsed.
    ///
    /// A token longer than [`MAX_QUOTED_CHARS`] characters is kept (and quoted) only in part: its
    /// first characters, followed by its full length in bytes.
    #[error(
        "{}:{line}:{column}: cannot parse {} as {expected} (line {line}, column {column}, character {char_column})",
        path.display(),
        quoted(token, *token_len)
    )]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line number in the file (blank lines counted).
        line: usize,
        /// 1-based field number within the line (whitespace-separated).
        column: usize,
        /// 1-based character position of the token within the line.
        char_column: usize,
        /// The offending token, cut to its first [`MAX_QUOTED_CHARS`] characters if longer.
        token: String,
        /// Length of the whole token in bytes (more than `token.len()` if it was cut).
        token_len: usize,
        /// What the token should have been (e.g. `"a finite number"`).
        expected: &'static str,
    },

    /// A row of a table has a different number of columns than the first row.
    #[error(
        "{}:{line}: ragged row with {found} columns, expected {expected} (as on line {first_line})",
        path.display()
    )]
    RaggedRow {
        /// The file.
        path: PathBuf,
        /// 1-based line number of the ragged row.
        line: usize,
        /// Number of columns found on that line.
        found: usize,
        /// Number of columns of the first data row.
        expected: usize,
        /// 1-based line number of the first data row.
        first_line: usize,
    },

    /// A file contains no data (only blank lines, or nothing).
    #[error("{}: file is empty (no non-blank lines)", path.display())]
    EmptyFile {
        /// The file.
        path: PathBuf,
    },

    /// An index file refers to a row or column that does not exist.
    #[error(
        "{}:{line}: index {index} is out of range (valid: 0..{bound})",
        path.display()
    )]
    IndexOutOfRange {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The offending index.
        index: usize,
        /// Exclusive upper bound.
        bound: usize,
    },

    /// An index file lists the same index twice.
    #[error(
        "{}:{line}: duplicate index {index} (first seen on line {first_line})",
        path.display()
    )]
    DuplicateIndex {
        /// The file.
        path: PathBuf,
        /// 1-based line number of the repeat.
        line: usize,
        /// The repeated index.
        index: usize,
        /// 1-based line number of the first occurrence.
        first_line: usize,
    },

    /// The train and test index files of a split share a row.
    #[error("{dataset} split {split}: row {row} is in both the train and the test set")]
    OverlappingSplit {
        /// Data set name.
        dataset: String,
        /// Split number.
        split: usize,
        /// A row in both sets.
        row: usize,
    },

    /// A split number beyond the available splits was requested.
    #[error("{dataset}: {kind} split {split} requested, but only {available} exist")]
    SplitOutOfRange {
        /// Data set name.
        dataset: String,
        /// `"standard"` or `"gap10"`.
        kind: &'static str,
        /// The requested split.
        split: usize,
        /// Number of splits that exist.
        available: usize,
    },

    /// A split refers to rows that are not in the data.
    #[error("{dataset}: split refers to row {row}, but the data has {rows} rows")]
    SplitRowOutOfRange {
        /// Data set name.
        dataset: String,
        /// The offending row.
        row: usize,
        /// Number of rows of the data.
        rows: usize,
    },

    /// `n_splits.txt` announces more standard splits than the data set's index files provide (or
    /// more than [`crate::MAX_STANDARD_SPLITS`]).
    #[error("{dataset}: {}: announces {declared} standard split(s), but {reason}", path.display())]
    SplitCount {
        /// Data set name.
        dataset: String,
        /// The `n_splits.txt` file.
        path: PathBuf,
        /// The number it holds.
        declared: usize,
        /// Why that number is not backed by the data set (e.g. the first missing index file).
        reason: String,
    },

    /// A data set name could not be recognised.
    #[error("unknown UCI data set {name:?}; expected one of: {expected}")]
    UnknownDataset {
        /// The name given (cut to its first [`MAX_QUOTED_CHARS`] characters, then `…`, if longer).
        name: String,
        /// The accepted names.
        expected: String,
    },

    /// An IDX (MNIST) file has an invalid header or inconsistent contents.
    #[error("{}: invalid IDX file: {reason}", path.display())]
    InvalidIdx {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },

    /// A binary file ended before all the data its header announces.
    #[error(
        "{}: truncated while reading {what}: expected {expected} bytes, got {found}",
        path.display()
    )]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Which part was being read (e.g. `"header"`, `"pixels"`).
        what: &'static str,
        /// Bytes expected.
        expected: usize,
        /// Bytes actually available.
        found: usize,
    },

    /// A gzip stream is corrupt (bad header, bad deflate data, a stream that ends early, or a
    /// member whose CRC32 or length does not match its trailer: the message then says that the
    /// checksum does not match).
    #[error("{}: corrupt gzip data: {source}", path.display())]
    CorruptGzip {
        /// The file.
        path: PathBuf,
        /// The decoder's error.
        #[source]
        source: std::io::Error,
    },

    /// Memory for data whose size a file announces could not be allocated.
    #[error("{}: cannot allocate {bytes} bytes for {what}: {source}", path.display())]
    Allocation {
        /// The file.
        path: PathBuf,
        /// What the memory was for (e.g. `"pixels"`).
        what: &'static str,
        /// The size requested.
        bytes: usize,
        /// The allocator's refusal.
        #[source]
        source: std::collections::TryReserveError,
    },

    /// Two files that must agree do not (e.g. image and label counts).
    #[error("inconsistent data: {reason}")]
    Inconsistent {
        /// What disagrees.
        reason: String,
    },

    /// A file's SHA-256 is not the one the catalog lists (a download or a local copy is corrupt,
    /// truncated or another version).
    #[error(
        "{}: SHA-256 mismatch: expected {expected}, got {found} (corrupt, truncated or another version of the file)",
        path.display()
    )]
    ChecksumMismatch {
        /// The file (for a download: where it was to be written; nothing is left there).
        path: PathBuf,
        /// The checksum the catalog lists.
        expected: String,
        /// The checksum of what was read.
        found: String,
    },

    /// A download is larger than any file of the catalog may be.
    #[error("{}: more than {limit} bytes; refused", path.display())]
    TooLarge {
        /// Where it was to be written (nothing is left there).
        path: PathBuf,
        /// The limit in bytes.
        limit: u64,
    },

    /// An argument is outside its valid range.
    #[error("invalid argument `{name}`: {reason}")]
    InvalidArgument {
        /// The argument's name.
        name: &'static str,
        /// Why it is invalid.
        reason: String,
    },
}

/// How many characters of an offending token or name an error message quotes at most.
pub const MAX_QUOTED_CHARS: usize = 40;

/// The first [`MAX_QUOTED_CHARS`] characters of `s` (all of `s` if it is not longer).
pub(crate) fn excerpt(s: &str) -> &str {
    match s.char_indices().nth(MAX_QUOTED_CHARS) {
        Some((end, _)) => &s[..end],
        None => s,
    }
}

/// `s` for a message: whole if short, else its first [`MAX_QUOTED_CHARS`] characters and `…`.
pub(crate) fn cut_for_message(s: &str) -> String {
    let head = excerpt(s);
    if head.len() == s.len() {
        s.to_string()
    } else {
        format!("{head}…")
    }
}

/// A token quoted for [`Error::Parse`]: `"token"`, or `"first characters"… (N bytes in all)` when
/// `token` is a cut of a longer token of `len` bytes.
fn quoted(token: &str, len: usize) -> String {
    if token.len() >= len {
        format!("{token:?}")
    } else {
        format!(
            "{token:?}… (a token of {len} bytes; its first {} characters shown)",
            token.chars().count()
        )
    }
}

impl Error {
    /// Builds an [`Error::Parse`], keeping at most [`MAX_QUOTED_CHARS`] characters of `token`.
    pub(crate) fn parse(
        path: &Path,
        line: usize,
        column: usize,
        char_column: usize,
        token: &str,
        expected: &'static str,
    ) -> Self {
        Error::Parse {
            path: path.to_path_buf(),
            line,
            column,
            char_column,
            token: excerpt(token).to_string(),
            token_len: token.len(),
            expected,
        }
    }

    /// Wraps an I/O error for `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// Builds an [`Error::InvalidArgument`].
    pub(crate) fn invalid(name: &'static str, reason: impl Into<String>) -> Self {
        Error::InvalidArgument {
            name,
            reason: reason.into(),
        }
    }
}
