//! Exit statuses and the errors that are the user's to fix.

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

/// Returns the exit status for an error: 1 when the user can fix it, else 2.
pub fn exit_status(error: &anyhow::Error) -> ExitStatus {
    use skillpkg_index::archive::{PackError, UnpackError};

    use crate::registry_client::RegistryError;
    let is_user_error = error.chain().any(|cause| {
        cause.is::<UserError>()
            || cause
                .downcast_ref::<PackError>()
                .is_some_and(|error| error.hint().is_some())
            || cause.is::<UnpackError>()
            || cause.is::<crate::project::resolve::ResolveError>()
            || cause
                .downcast_ref::<RegistryError>()
                .is_some_and(RegistryError::is_user_error)
    });
    if is_user_error {
        ExitStatus::Failure
    } else {
        ExitStatus::Error
    }
}

/// Returns the advice attached anywhere in the error's chain.
pub fn hint(error: &anyhow::Error) -> Option<String> {
    use skillpkg_index::archive::PackError;

    use crate::registry_client::RegistryError;
    error.chain().find_map(|cause| {
        cause
            .downcast_ref::<UserError>()
            .and_then(|error| error.hint.clone())
            .or_else(|| cause.downcast_ref::<PackError>().and_then(PackError::hint))
            .or_else(|| {
                cause
                    .downcast_ref::<RegistryError>()
                    .and_then(RegistryError::hint)
            })
    })
}
