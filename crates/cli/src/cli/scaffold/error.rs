//! The ways `init` can fail.

use std::fmt;
use std::io;
use std::path::PathBuf;

use super::id::ID_RULE;

/// Why a scaffold was not created. Every message names the path or value at fault and, where
/// the user can fix it, how.
#[derive(Debug)]
#[non_exhaustive]
pub enum ScaffoldError {
    /// The language is not one of `ts`, `python`, `rust`.
    UnknownLang {
        /// The value given.
        given: String,
    },
    /// An explicit `--id` does not match `^[a-z0-9_.-]{1,64}$`.
    InvalidId {
        /// The id given.
        id: String,
    },
    /// No valid id can be derived from the directory name; the user must pass `--id`.
    CannotDeriveId {
        /// The target directory.
        dir: PathBuf,
    },
    /// The target exists and is not a directory.
    NotADirectory {
        /// The target path.
        path: PathBuf,
    },
    /// The target directory exists and is not empty; nothing was written.
    NotEmpty {
        /// The target directory.
        dir: PathBuf,
    },
    /// The resolved target directory is not valid UTF-8, so it cannot go into runner.toml.
    NonUtf8Path {
        /// The resolved target directory.
        path: PathBuf,
    },
    /// A file-system operation failed.
    Io {
        /// The path being read, created or written.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// The provider block could not be serialized as TOML.
    Toml(toml::ser::Error),
}

impl ScaffoldError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        ScaffoldError::Io {
            path: path.into(),
            source,
        }
    }
}

impl fmt::Display for ScaffoldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScaffoldError::UnknownLang { given } => {
                write!(f, "unknown language {given:?}: expected ts, python or rust")
            }
            ScaffoldError::InvalidId { id } => {
                write!(f, "invalid plugin id {id:?}: an id is {ID_RULE}")
            }
            ScaffoldError::CannotDeriveId { dir } => write!(
                f,
                "cannot derive a plugin id from the directory name of {}; pass --id with {ID_RULE}",
                dir.display()
            ),
            ScaffoldError::NotADirectory { path } => {
                write!(f, "{} exists and is not a directory", path.display())
            }
            ScaffoldError::NotEmpty { dir } => write!(
                f,
                "{} already exists and is not empty; init only writes into a new or empty directory",
                dir.display()
            ),
            ScaffoldError::NonUtf8Path { path } => write!(
                f,
                "{} is not valid UTF-8 and cannot be written to runner.toml",
                path.display()
            ),
            ScaffoldError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            ScaffoldError::Toml(error) => write!(f, "cannot serialize the provider block: {error}"),
        }
    }
}

impl std::error::Error for ScaffoldError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ScaffoldError::Io { source, .. } => Some(source),
            ScaffoldError::Toml(error) => Some(error),
            _ => None,
        }
    }
}
