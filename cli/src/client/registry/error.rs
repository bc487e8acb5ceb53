//! Why talking to a registry failed, with the URL (redacted) or the skill
//! that failed and advice on what to do next.

use std::path::PathBuf;

use skillpkg_index::registry::IndexError;

/// An operation of the API, named in messages ("the registry refused the
/// publish").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Publish,
    Yank,
    Unyank,
    Login,
}

impl Action {
    fn noun(self) -> &'static str {
        match self {
            Self::Publish => "publish",
            Self::Yank => "yank",
            Self::Unyank => "unyank",
            Self::Login => "login",
        }
    }

    /// What to do on a read-only registry instead.
    fn elsewhere(self) -> &'static str {
        match self {
            Self::Publish => "publish to its server instead",
            Self::Yank | Self::Unyank => "yank through its server instead",
            Self::Login => "log in to its server instead",
        }
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.noun())
    }
}

/// Why a request to a registry failed. URLs are stored redacted.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    /// The request did not get an answer: DNS, connection, TLS, timeout.
    #[error("cannot reach {url}")]
    Network {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// The request got no bytes for the read timeout (or took longer than
    /// the request timeout in all).
    #[error("{url} did not answer in time; the request was given up")]
    Timeout {
        url: String,
        /// The read timeout, for the hint.
        seconds: u64,
        #[source]
        source: reqwest::Error,
    },
    /// A redirect was not followed.
    #[error("{url} redirected {problem}")]
    Redirect {
        url: String,
        problem: RedirectProblem,
    },
    /// An API call was answered with a redirect, which is never followed.
    #[error(
        "{url} answered the {action} with a redirect to {to}, which skillpkg does not follow for API calls: neither the request nor its token went there"
    )]
    ApiRedirect {
        action: Action,
        url: String,
        to: String,
    },
    /// A private registry's file redirected to another origin, which the
    /// token was not sent to, and which refused the request without it.
    #[error(
        "{url} redirected to {hop}, another origin, which answered HTTP {status}: a token is never sent to another origin than its registry's"
    )]
    TokenWithheld {
        url: String,
        hop: String,
        status: u16,
    },
    /// `config.json` names a URL (an absolute `dl`) the client does not read
    /// for this registry.
    #[error("{registry} points at {url}, which was refused: {why}")]
    ForbiddenUrl {
        registry: String,
        url: String,
        why: &'static str,
    },
    /// A `file://` registry's file could not be read (other than missing).
    #[error("cannot read {}", path.display())]
    File {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A file of the static tree answered with an unexpected status;
    /// `retry_after` is the wait its `Retry-After` asked for, in seconds.
    #[error("{url} answered HTTP {status}{}", retry_after.map(|seconds| format!(" (it asks to retry after {seconds} s)")).unwrap_or_default())]
    Status {
        url: String,
        status: u16,
        retry_after: Option<u64>,
    },
    /// A download grew past the registry's size limit.
    #[error("{url} is larger than the {limit} bytes the registry allows; the download was stopped")]
    TooLarge { url: String, limit: u64 },
    /// A file grew past the cap this client reads for its kind of file
    /// (docs/client.md#limits).
    #[error(
        "{url} is larger than the {limit} bytes skillpkg reads for such a file; the download was stopped"
    )]
    OverCap { url: String, limit: u64 },
    /// The URL has no `config.json`.
    #[error("{registry} is not a skillpkg registry: it has no config.json")]
    NotARegistry { registry: String },
    /// `config.json` is of a format version this client does not know.
    #[error(
        "{registry} uses index format version {version}, which this version of skillpkg does not know"
    )]
    UnknownFormat { registry: String, version: u32 },
    /// A JSON document of the tree or of the API did not parse.
    #[error("{url} is not a valid {what}")]
    BadDocument {
        url: String,
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    /// An index file did not parse.
    #[error("the index file at {url} is not valid")]
    BadIndex {
        url: String,
        #[source]
        source: IndexError,
    },
    /// The skill has no index file.
    #[error("no skill named `{name}` in {registry}")]
    NoSuchSkill { name: String, registry: String },
    /// `config.json` has `"api": null`.
    #[error("{registry} is read-only (a static tree with no API); {}", action.elsewhere())]
    ReadOnly { registry: String, action: Action },
    /// `config.json`'s `api` is not an `http(s)` URL.
    #[error("the `api` of {registry} (in its config.json) is not an http:// or https:// URL")]
    BadApiUrl { registry: String },
    /// An https registry's `config.json` names an http API, where the token
    /// would cross the network in the clear.
    #[error(
        "the `api` of {registry} (in its config.json) is an http:// URL, and the registry is https://: the token would cross the network unencrypted"
    )]
    InsecureApi { registry: String },
    /// The registry's signed metadata does not hold: a changed, rolled back,
    /// frozen or mixed index, or a root rotation that is not signed enough.
    #[error("{registry} cannot be trusted: {problem}")]
    Metadata {
        registry: String,
        problem: skillpkg_index::registry::metadata::MetadataError,
    },
    /// The trust state in the user's state folder could not be read or written.
    #[error("{message}")]
    State { message: String },
    /// The registry serves no signed metadata, and it must.
    #[error(
        "{registry} serves no signed metadata (root.json, timestamp.json, snapshot.json), {why}"
    )]
    Unsigned { registry: String, why: &'static str },
    /// The API answered 4xx: the request or its token was refused.
    #[error("the registry refused the {action}: {}", details.join("; "))]
    Refused {
        action: Action,
        registry: String,
        status: u16,
        /// The answer's `code` (docs/registry.md, "The API"), when it
        /// sent one: `audit_refused`, `key_id_taken`, `unknown_user`...
        code: Option<String>,
        details: Vec<String>,
    },
    /// The API answered 5xx (or another status that is not a refusal).
    #[error("the registry failed the {action} (HTTP {status} from {url}): {}", details.join("; "))]
    ServerFailed {
        action: Action,
        url: String,
        status: u16,
        details: Vec<String>,
    },
}

impl RegistryError {
    /// Returns true if and only if the user can fix this (exit status 1):
    /// a wrong URL, a wrong name, a refused token or request. Unreachable or
    /// failing servers and unreadable answers are exit status 2.
    pub fn is_user_error(&self) -> bool {
        match self {
            Self::NotARegistry { .. }
            | Self::UnknownFormat { .. }
            | Self::NoSuchSkill { .. }
            | Self::ReadOnly { .. }
            | Self::BadApiUrl { .. }
            | Self::InsecureApi { .. }
            | Self::TokenWithheld { .. }
            | Self::Refused { .. } => true,
            // 429 is the server's load, not the request's fault.
            Self::Status { status, .. } => (400..500).contains(status) && *status != 429,
            Self::Network { .. }
            | Self::Timeout { .. }
            | Self::Redirect { .. }
            | Self::ApiRedirect { .. }
            | Self::ForbiddenUrl { .. }
            | Self::OverCap { .. }
            | Self::TooLarge { .. }
            | Self::File { .. }
            | Self::BadDocument { .. }
            | Self::BadIndex { .. }
            | Self::Metadata { .. }
            | Self::State { .. }
            | Self::Unsigned { .. }
            | Self::ServerFailed { .. } => false,
        }
    }

    /// Returns advice on what to do next.
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            Self::Network { .. } => {
                "check the registry URL and your network, and that the registry is running".into()
            }
            Self::Timeout { seconds, .. } => format!(
                "the registry is stalled or overloaded; {} sets how many seconds to wait for its next bytes (now {seconds})",
                crate::env_vars::SKILLPKG_HTTP_TIMEOUT
            ),
            Self::Redirect { .. } | Self::OverCap { .. } | Self::ForbiddenUrl { .. } => {
                "the registry (or something between it and you) is broken or hostile; nothing it sent was used".into()
            }
            Self::ApiRedirect { .. } => {
                "if the API moved, the registry's config.json must name its new URL in `api`".into()
            }
            Self::TokenWithheld { hop, .. } => format!(
                "if the registry moved to {hop}, use that URL as the registry and give its token for it"
            ),
            Self::InsecureApi { .. } => {
                "the registry's operators must serve the API over https://".into()
            }
            Self::NotARegistry { .. } => {
                "check the URL: a registry URL is the folder that holds config.json".into()
            }
            Self::UnknownFormat { .. } => "upgrade skillpkg to read this registry".into(),
            Self::NoSuchSkill { name, .. } => {
                format!("check the spelling, or look for it with `skillpkg search {name}`")
            }
            Self::ReadOnly { .. } => {
                "pass the URL of the registry's server with --registry; a mirror or a tree written by `skillpkg-registry build` has `\"api\": null` in its config.json".into()
            }
            Self::Status {
                status: 401 | 403, ..
            } => "this registry needs a token: run `skillpkg login`, or set SKILLPKG_TOKEN".into(),
            Self::Refused {
                status,
                registry,
                action,
                code,
                ..
            } => return refusal_hint(*status, code.as_deref(), registry, *action),
            Self::Metadata { problem, .. } => return metadata_hint(problem),
            Self::Unsigned { .. } => "check that the URL is the registry (or a complete mirror of it); if the registry really dropped signed metadata, remove `root-key` from its config, or delete its trust state in the skillpkg state folder".into(),
            _ => return None,
        })
    }
}

fn refusal_hint(status: u16, code: Option<&str>, registry: &str, action: Action) -> Option<String> {
    // The refusals with a code of their own first: their status is shared.
    match code {
        Some("audit_refused") => {
            return Some("run `skillpkg audit` on the skill folder to see every finding and its place; the registry refuses findings at or above the severity its operator chose".into());
        }
        Some("key_id_taken") => {
            return Some("another key with this key id is registered at this registry; generate a new key with `skillpkg key generate` and publish with it".into());
        }
        _ => {}
    }
    Some(match (status, action) {
        (401, Action::Login) => "check that you copied the whole token, and that it was created for this registry".into(),
        (401, _) => format!(
            "the token is missing, unknown or revoked: run `skillpkg login --registry {registry}` with a valid one, or check --token and SKILLPKG_TOKEN"
        ),
        (403, _) => "only the skill's owners may do this; ask an owner to add you".into(),
        (409, Action::Publish) => "published versions are immutable, even when yanked: raise `version` in SKILL.md and publish again".into(),
        (413, _) => "the skill is over this registry's size limit (`max-skill-bytes` in its config.json)".into(),
        (404, Action::Yank | Action::Unyank) => {
            "check the name and version; `skillpkg info NAME` lists the versions".into()
        }
        _ => return None,
    })
}

fn metadata_hint(problem: &skillpkg_index::registry::metadata::MetadataError) -> Option<String> {
    use skillpkg_index::registry::metadata::MetadataError;
    Some(match problem {
        MetadataError::Rollback { .. } => "it serves older metadata than skillpkg saw before: a stale mirror or cache, or an attack; nothing was installed. Use the origin registry, or wait until the mirror is synced again".into(),
        MetadataError::Expired { .. } => "its metadata is past its expiry: a mirror that stopped syncing (run `skillpkg mirror` again), a registry that stopped re-signing (`skillpkg-registry keys sign`), or a clock far off; nothing was installed".into(),
        MetadataError::FileMismatch { .. } | MetadataError::NotInSnapshot { .. } | MetadataError::Missing { .. } | MetadataError::SnapshotMismatch { .. } => "a file differs from what the registry signed: the mirror or cache changed it, or mixes two versions of the index; nothing was installed. Sync the mirror again or use the origin registry".into(),
        MetadataError::Signatures { .. } | MetadataError::WrongVersion { .. } | MetadataError::NotPinned { .. } | MetadataError::Malformed { .. } => "the registry's keys do not vouch for its metadata; nothing was installed. If its operators really changed the root keys, ask them for the new root key and update `root-key`".into(),
    })
}

/// Why a redirect was not followed. URLs are shown redacted, without the
/// token, and a `Location` that is not a URL escaped.
#[derive(Debug, thiserror::Error)]
pub enum RedirectProblem {
    #[error("more than {max} times; the redirects were stopped")]
    TooMany { max: usize },
    #[error("in a loop, back to {to}")]
    Loop { to: String },
    #[error(
        "from https down to {to}, which was refused: it would expose the request (and any token) on the network"
    )]
    Downgrade { to: String },
    #[error("to {to}, which was refused: skillpkg follows redirects to http:// and https:// only")]
    Scheme { to: String },
    #[error("without a Location header")]
    NoLocation,
    #[error("to \"{location}\", which is not a valid URL")]
    BadLocation { location: String },
}
