//! How a failed command ends: the exit status and the hint for an error,
//! whichever layer it came from. Only the binary uses this, so it may know
//! the error types of every layer without any layer knowing it.

use crate::error::{ExitStatus, UserError};

/// Returns the exit status for an error: 1 when the user can fix it, 3
/// when a registry could not be reached or answered wrong, else 4.
pub fn exit_status(error: &anyhow::Error) -> ExitStatus {
    use skillpkg_index::archive::{PackError, UnpackError};

    use crate::client::registry::RegistryError;
    let is_user_error = error.chain().any(|cause| {
        cause.is::<UserError>()
            || cause
                .downcast_ref::<PackError>()
                .is_some_and(|error| error.hint().is_some())
            || cause.is::<UnpackError>()
            || cause.is::<crate::project::resolve::ResolveError>()
            || cause.is::<crate::project::resolve::Unmet>()
            || cause
                .downcast_ref::<RegistryError>()
                .is_some_and(RegistryError::is_user_error)
            || is_setup_user_error(cause)
    });
    let is_network = error.chain().any(|cause| {
        cause.is::<RegistryError>()
            || cause.is::<reqwest::Error>()
            || cause.is::<crate::project::git::FetchError>()
            || cause.is::<crate::client::registry::DownloadError>()
    });
    if is_user_error {
        ExitStatus::Failure
    } else if is_network {
        ExitStatus::Network
    } else {
        ExitStatus::Error
    }
}

/// Returns the advice attached anywhere in the error's chain.
pub fn hint(error: &anyhow::Error) -> Option<String> {
    use skillpkg_index::archive::PackError;

    use crate::client::registry::RegistryError;
    error.chain().find_map(|cause| {
        if cause.is::<crate::client::registry::DownloadError>() {
            return Some(
                "check the URL and your network; the site may be down, or may not serve that file; nothing was changed"
                    .to_owned(),
            );
        }
        cause
            .downcast_ref::<UserError>()
            .and_then(|error| error.hint.clone())
            .or_else(|| cause.downcast_ref::<PackError>().and_then(PackError::hint))
            .or_else(|| {
                cause
                    .downcast_ref::<crate::project::resolve::Unmet>()
                    .map(crate::project::resolve::Unmet::hint)
            })
            .or_else(|| {
                cause
                    .downcast_ref::<RegistryError>()
                    .and_then(RegistryError::hint)
            })
            .or_else(|| setup_hint(cause))
            .or_else(|| {
                cause.is::<crate::project::git::FetchError>().then(|| {
                    "check the URL, that the repository exists and that you may read it; nothing was changed".to_owned()
                })
            })
    })
}

/// Returns true if and only if `cause` is an agent configuration that
/// `skillpkg mcp install` or `uninstall` refused to edit.
#[cfg(feature = "runtime")]
fn is_setup_user_error(cause: &(dyn std::error::Error + 'static)) -> bool {
    cause
        .downcast_ref::<crate::runtime::setup::Error>()
        .is_some_and(crate::runtime::setup::Error::is_user_error)
}

#[cfg(not(feature = "runtime"))]
fn is_setup_user_error(_: &(dyn std::error::Error + 'static)) -> bool {
    false
}

#[cfg(feature = "runtime")]
fn setup_hint(cause: &(dyn std::error::Error + 'static)) -> Option<String> {
    cause
        .downcast_ref::<crate::runtime::setup::Error>()
        .and_then(crate::runtime::setup::Error::hint)
}

#[cfg(not(feature = "runtime"))]
fn setup_hint(_: &(dyn std::error::Error + 'static)) -> Option<String> {
    None
}

/// The error as JSON, for a command run with `--json`: the message, the
/// causes, the hint, and what a script can act on (`unmet`: the skill
/// name or requirement that no version meets, with the registry's
/// versions or close names).
pub fn json_error(error: &anyhow::Error) -> serde_json::Value {
    let unmet = error
        .chain()
        .find_map(|cause| cause.downcast_ref::<crate::project::resolve::Unmet>());
    serde_json::json!({
        "error": {
            "message": error.to_string(),
            "causes": crate::printer::causes(error),
            "hint": hint(error),
            "unmet": unmet,
        }
    })
}
