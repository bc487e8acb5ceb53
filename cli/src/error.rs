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
    /// Something unexpected: a bug, or the machine (I/O, permissions).
    Error,
}

impl From<ExitStatus> for std::process::ExitCode {
    fn from(status: ExitStatus) -> Self {
        match status {
            ExitStatus::Success => Self::SUCCESS,
            ExitStatus::Failure => Self::from(1),
            ExitStatus::Error => Self::from(2),
        }
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
