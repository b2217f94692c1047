//! The library's error type.

use std::fmt;

/// Every error the library returns.
///
/// `#[non_exhaustive]`: new variants may be added without a major version bump.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A setting is out of its allowed range (e.g. zero particles, a negative learning rate).
    #[error("invalid setting `{field}`: {reason}")]
    InvalidSettings {
        /// The offending field, as named in the settings struct.
        field: &'static str,
        /// Why the value is rejected, in words a user can act on.
        reason: String,
    },
    /// Two buffers or objects disagree in shape.
    #[error("shape mismatch in {context}: expected {expected}, got {got}")]
    Shape {
        /// Where the mismatch was found.
        context: String,
        /// What was expected (e.g. `"K×d = 500×301"`).
        expected: String,
        /// What was given.
        got: String,
    },
    /// A non-finite value (NaN or ±inf) appeared where it must not.
    #[error("non-finite value in {context}")]
    NonFinite {
        /// Where (e.g. `"input data, row 17"` or `"Stein force at step 1200"`).
        context: String,
    },
    /// Invalid input data (empty data set, NaN cells, …).
    #[error("invalid data: {0}")]
    Data(String),
    /// A checkpoint could not be written, read or does not match the configuration.
    #[error("checkpoint error: {0}")]
    Checkpoint(String),
    /// An I/O error with the path involved.
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file involved.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An error raised by a user model.
    #[error("model error: {0}")]
    Model(Box<dyn std::error::Error + Send + Sync>),
    /// A feature the model or setting does not support.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

/// Shorthand for `std::result::Result<T, smi::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// Builds an [`Error::InvalidSettings`].
    pub fn invalid(field: &'static str, reason: impl fmt::Display) -> Self {
        Error::InvalidSettings {
            field,
            reason: reason.to_string(),
        }
    }

    /// Builds an [`Error::Shape`].
    pub fn shape(
        context: impl fmt::Display,
        expected: impl fmt::Display,
        got: impl fmt::Display,
    ) -> Self {
        Error::Shape {
            context: context.to_string(),
            expected: expected.to_string(),
            got: got.to_string(),
        }
    }

    /// Builds an [`Error::NonFinite`].
    pub fn non_finite(context: impl fmt::Display) -> Self {
        Error::NonFinite {
            context: context.to_string(),
        }
    }

    /// Whether the engine may skip the step and go on (non-finite values), rather than abort.
    pub fn is_recoverable(&self) -> bool {
        matches!(self, Error::NonFinite { .. })
    }
}
