//! The crate's one error type.
//!
//! Bad input (files, command-line values, hardware words read from a user) is reported
//! through [`Error`]; bugs panic. Every variant names where the problem is: a file and
//! line, a field, or a bit range.

use std::fmt;
use std::path::PathBuf;

/// Everything that can go wrong on user input.
#[derive(Debug)]
pub enum Error {
    /// An I/O error on a named file.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A parse error at a location in a named file (line is 1-based; 0 when unknown).
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// An invalid value in a named field (of a hardware word, a scene file, a CLI flag...).
    InvalidField { field: String, message: String },
    /// Any other input problem, already phrased for the user.
    Other(String),
}

/// Shorthand used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A parse error at `line` (1-based) of `path`.
    pub fn parse(path: impl Into<PathBuf>, line: usize, message: impl Into<String>) -> Self {
        Error::Parse {
            path: path.into(),
            line,
            message: message.into(),
        }
    }

    /// An invalid value in `field`.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::InvalidField {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "{}: {}", path.display(), source),
            Error::Parse {
                path,
                line: 0,
                message,
            } => write!(f, "{}: {}", path.display(), message),
            Error::Parse {
                path,
                line,
                message,
            } => {
                write!(f, "{}:{}: {}", path.display(), line, message)
            }
            Error::InvalidField { field, message } => write!(f, "{field}: {message}"),
            Error::Other(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
