//! Exit statuses and the errors that are the user's to fix: the bottom
//! of the crate, importing nothing of it, so every layer can use it.
//! Which errors of the layers above count as the user's is decided by the
//! binary, in `outcome`.

use std::fmt;

/// How the process ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// Everything worked.
    Success,
    /// The input was wrong: an invalid skill, a bad path, a refused archive.
    Failure,
    /// A registry could not be reached or answered wrong: the network, a
    /// timeout, a server error, a reply that is not what the format says.
    /// Trying again later may work.
    Network,
    /// Something unexpected: a bug, or the machine (I/O, permissions).
    Error,
}

impl ExitStatus {
    /// The process's exit code: 0, 1, 3 and 4. 2 is a usage error, which
    /// the argument parser exits with before any command runs.
    pub fn code(self) -> u8 {
        match self {
            Self::Success => 0,
            Self::Failure => 1,
            Self::Network => 3,
            Self::Error => 4,
        }
    }
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(status: ExitStatus) -> Self {
        Self::from(status.code())
    }
}

/// An error the user can fix, with advice; it exits with status 1.
#[derive(Debug)]
pub struct UserError {
    pub message: String,
    pub hint: Option<String>,
    /// What went wrong underneath, printed as `Caused by:` lines.
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl UserError {
    /// Creates an error with a message and no hint.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: None,
            source: None,
        }
    }

    /// Adds advice on what to do.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Keeps the error this one explains.
    #[must_use]
    pub fn with_source(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        self.source = Some(source.into());
        self
    }
}

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UserError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|source| source as &(dyn std::error::Error + 'static))
    }
}
