//! The client side of a registry: reading its static tree and calling its API.
//!
//! A registry is a base URL (`https://`, `http://` or `file://`) of the tree
//! that docs/index-format.md specifies. Everything is a path under it:
//!
//! ```text
//! config.json                    read first, always: its `v` must be known,
//!                                its `api` is where writes go
//! index/pd/f-/pdf-processing     one skill's versions (404: no such skill)
//! search.json                    every skill's latest version, for `search`
//! ```
//!
//! `file://` reads the same paths from disk, a missing file standing for a
//! 404. The API (docs/registry.md) lives at `config.json`'s `api` URL (which
//! may be relative to the registry); a tree whose `api` is `null` is
//! read-only. API errors are `{"errors":[{"detail":"..."}]}`, and their
//! details are shown as the server wrote them.
//!
//! One `reqwest` client (rustls, a `skillpkg/<version>` User-Agent, connect
//! and overall timeouts) serves every request of a command; commands run the
//! async calls on a current-thread runtime through [`block_on`]. Tokens go
//! only into `Authorization` headers (marked sensitive), and every URL in an
//! error is redacted.

mod api;
mod error;
mod registry_url;
pub mod trust;

use std::future::Future;
use std::time::Duration;

use anyhow::Context as _;
use reqwest::StatusCode;
use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::{
    CONFIG_PATH, FORMAT_VERSION, IndexRecord, RegistryConfig, SEARCH_PATH, SearchIndex,
    index_file_path, parse_index_file,
};
use skillpkg_index::skill::SkillName;

pub use self::api::{Api, Attachments, Published};
pub use self::error::{Action, RegistryError};
pub use self::registry_url::{RegistryUrl, RegistryUrlError, redacted};
pub use self::trust::TrustConfig;
use crate::credentials::Token;
use skillpkg_index::registry::metadata::{Snapshot, in_snapshot};

/// The User-Agent of every request.
const USER_AGENT: &str = concat!("skillpkg/", env!("CARGO_PKG_VERSION"));
/// How long to wait for a connection: a registry that does not answer in
/// this time is down or unreachable, and a user should hear so quickly.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one request may take in all: enough to upload the largest
/// allowed archive (8 MiB by default) over a slow link.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// How many redirects one request may follow.
const MAX_REDIRECTS: usize = 10;

/// Returns true if and only if a redirect from `from` to `to` may be
/// followed: never from https down to http.
fn redirect_allowed(from: &url::Url, to: &url::Url) -> bool {
    !(from.scheme() == "https" && to.scheme() != "https")
}

/// Runs `future` to completion on a current-thread runtime. The client makes
/// a handful of sequential requests per command: one thread is plenty.
pub fn block_on<F: Future>(future: F) -> anyhow::Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    Ok(runtime.block_on(future))
}

/// A registry whose `config.json` has been read.
#[derive(Debug)]
pub struct Registry {
    http: reqwest::Client,
    url: RegistryUrl,
    token: Option<Token>,
    config: RegistryConfig,
    trust: TrustConfig,
    /// The verified snapshot: `None` until the chain was checked, then
    /// `Some(None)` for a registry without signed metadata.
    snapshot: tokio::sync::Mutex<Option<Option<std::sync::Arc<Snapshot>>>>,
    /// The metadata files (path, bytes) of the last chain that passed.
    metadata_files: std::sync::Mutex<VerifiedMetadata>,
}

/// The signed metadata of the last chain that passed, exactly as served.
#[derive(Clone, Debug, Default)]
pub struct VerifiedMetadata {
    /// The version of the newest root, which the chain ended at.
    pub root_version: u64,
    /// (path, bytes) of what the check read: the roots it walked, the
    /// timestamp and the snapshot.
    pub files: Vec<(String, Vec<u8>)>,
}

/// What a conditional read found.
#[derive(Debug)]
pub enum Conditional {
    /// The file is as it was (`304 Not Modified`).
    NotModified,
    /// There is no such file.
    Missing,
    /// The file, and its `ETag` when the server sent one.
    Found {
        bytes: Vec<u8>,
        etag: Option<String>,
    },
}

impl Registry {
    /// Reads the `config.json` of the registry at `url`, refusing a format
    /// version this client does not know. `token` is sent with reads only
    /// when the registry says it needs one (`auth-required`), or when
    /// `config.json` itself answers 401.
    pub async fn open(url: RegistryUrl, token: Option<Token>) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .user_agent(USER_AGENT)
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                let from = attempt.previous().last().cloned();
                if attempt.previous().len() > MAX_REDIRECTS {
                    attempt.error("too many redirects")
                } else if from.is_some_and(|from| !redirect_allowed(&from, attempt.url())) {
                    attempt.error("a redirect from https to http was refused: it would expose the request (and its token) on the network")
                } else {
                    // reqwest drops `Authorization` when the host or port
                    // changes, so a token never follows a redirect to
                    // another origin.
                    attempt.follow()
                }
            }))
            .build()
            .context("cannot set up the HTTP client")?;
        let config = read_config(&http, &url, token.as_ref()).await?;
        Ok(Self {
            http,
            url,
            token,
            config,
            trust: TrustConfig::default(),
            snapshot: tokio::sync::Mutex::new(None),
            metadata_files: std::sync::Mutex::new(VerifiedMetadata::default()),
        })
    }

    /// Sets how the registry's signed metadata is trusted: under which id
    /// what was seen is kept, and the pinned root key.
    #[must_use]
    pub fn with_trust(mut self, trust: TrustConfig) -> Self {
        self.trust = trust;
        self
    }

    /// Names the registry in messages: its logical name and URL.
    fn label(&self) -> String {
        match &self.trust.id {
            Some(id) => format!("registry `{id}` ({})", self.url),
            None => format!("registry {}", self.url),
        }
    }

    /// Checks the signed metadata (once per command, again if a file
    /// differs, in case the registry changed meanwhile) and returns the
    /// snapshot, or `None` for a registry without signed metadata.
    pub async fn snapshot(&self) -> Result<Option<std::sync::Arc<Snapshot>>, RegistryError> {
        let mut guard = self.snapshot.lock().await;
        if let Some(snapshot) = &*guard {
            return Ok(snapshot.clone());
        }
        let snapshot = self.check_chain().await?.map(std::sync::Arc::new);
        *guard = Some(snapshot.clone());
        Ok(snapshot)
    }

    async fn check_chain(&self) -> Result<Option<Snapshot>, RegistryError> {
        let id = self
            .trust
            .id
            .clone()
            .unwrap_or_else(|| self.url.to_string());
        let state_file = trust::state_dir().map(|dir| trust::state_file(&dir, &id));
        let previous = match &state_file {
            Some(path) => trust::read_state(path).map_err(|error| RegistryError::State {
                message: format!("{error:#}"),
            })?,
            None => None,
        };
        let trusted_before = previous.is_some();
        let reader = RawReader {
            registry: self,
            files: std::sync::Mutex::new(Vec::new()),
        };
        let result = trust::check_chain(
            &reader,
            self.trust.root_key.as_ref(),
            previous,
            jiff::Timestamp::now(),
        )
        .await;
        match result {
            Ok(Some((state, snapshot))) => {
                *self
                    .metadata_files
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = VerifiedMetadata {
                    root_version: state.root.version,
                    files: reader
                        .files
                        .into_inner()
                        .unwrap_or_else(std::sync::PoisonError::into_inner),
                };
                if let Some(path) = &state_file {
                    trust::write_state(path, &state).map_err(|error| RegistryError::State {
                        message: format!("{error:#}"),
                    })?;
                }
                Ok(Some(snapshot))
            }
            Ok(None) => Ok(None),
            Err(trust::ChainError::Fetch(error)) => Err(error),
            Err(trust::ChainError::Metadata(problem)) => Err(RegistryError::Metadata {
                registry: self.label(),
                problem,
            }),
            Err(trust::ChainError::Unsigned { pinned }) => Err(RegistryError::Unsigned {
                registry: self.label(),
                why: if pinned {
                    "and `root-key` is configured for it"
                } else if trusted_before {
                    "and it did before"
                } else {
                    "though it has a root.json"
                },
            }),
        }
    }

    /// Checks a file the snapshot lists against it. A mismatch re-reads the
    /// metadata once: the registry may have published between the two reads.
    async fn check_file(&self, path: &str, bytes: Option<&[u8]>) -> Result<(), RegistryError> {
        if !in_snapshot(path) {
            return Ok(());
        }
        let Some(snapshot) = self.snapshot().await? else {
            return Ok(());
        };
        let Err(problem) = snapshot.check_file(path, bytes) else {
            return Ok(());
        };
        let fresh = self.check_chain().await?;
        let fresh = fresh.map(std::sync::Arc::new);
        *self.snapshot.lock().await = Some(fresh.clone());
        match fresh {
            Some(fresh) if fresh.version != snapshot.version => fresh
                .check_file(path, bytes)
                .map_err(|problem| RegistryError::Metadata {
                    registry: self.label(),
                    problem,
                }),
            _ => Err(RegistryError::Metadata {
                registry: self.label(),
                problem,
            }),
        }
    }

    /// Returns the registry's base URL.
    pub fn url(&self) -> &RegistryUrl {
        &self.url
    }

    /// Returns the registry's `config.json`.
    pub fn config(&self) -> &RegistryConfig {
        &self.config
    }

    /// Returns every published version of `name`, sorted as the index file
    /// lists them; [`RegistryError::NoSuchSkill`] when there is none.
    pub async fn index(&self, name: &SkillName) -> Result<Vec<IndexRecord>, RegistryError> {
        let url = self.url.join(&index_file_path(name));
        let no_such_skill = || RegistryError::NoSuchSkill {
            name: name.to_string(),
            registry: self.url.to_string(),
        };
        let bytes = fetch(&self.http, &url, self.read_token()).await?;
        self.check_file(&index_file_path(name), bytes.as_deref())
            .await?;
        let bytes = bytes.ok_or_else(no_such_skill)?;
        let text = String::from_utf8_lossy(&bytes);
        let records = parse_index_file(name, &text).map_err(|source| RegistryError::BadIndex {
            url: redacted(&url),
            source,
        })?;
        if records.is_empty() {
            return Err(no_such_skill());
        }
        Ok(records)
    }

    /// Returns a file of the tree (a path relative to the registry, or an
    /// absolute URL such as an absolute `dl` template gives), `None` for a 404.
    pub async fn file(&self, path: &str) -> Result<Option<Vec<u8>>, RegistryError> {
        let (url, relative) = match url::Url::parse(path) {
            Ok(absolute) => (absolute, false),
            Err(_) => (self.url.join(path), true),
        };
        let bytes = fetch(&self.http, &url, self.read_token()).await?;
        if relative {
            self.check_file(path, bytes.as_deref()).await?;
        }
        Ok(bytes)
    }

    /// Returns the signed metadata that the last check of the chain read
    /// and passed.
    pub fn verified_metadata(&self) -> VerifiedMetadata {
        self.metadata_files
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Reads a file of the tree unless it still has the ETag `etag` (a
    /// `file://` registry has no ETags and always reads). Unchecked against
    /// the snapshot: the caller checks.
    pub async fn file_if_changed(
        &self,
        path: &str,
        etag: Option<&str>,
    ) -> Result<Conditional, RegistryError> {
        let url = self.url.join(path);
        if url.scheme() == "file" {
            return Ok(match fetch(&self.http, &url, None).await? {
                Some(bytes) => Conditional::Found { bytes, etag: None },
                None => Conditional::Missing,
            });
        }
        let network = |source: reqwest::Error| RegistryError::Network {
            url: redacted(&url),
            source: source.without_url(),
        };
        with_retries(|| async {
            let mut request = self.get(&url);
            if let Some(etag) = etag {
                request = request.header(reqwest::header::IF_NONE_MATCH, etag);
            }
            let response = request.send().await.map_err(network)?;
            match response.status() {
                StatusCode::NOT_MODIFIED => Ok(Conditional::NotModified),
                StatusCode::NOT_FOUND => Ok(Conditional::Missing),
                status if status.is_success() => {
                    let etag = response
                        .headers()
                        .get(reqwest::header::ETAG)
                        .and_then(|value| value.to_str().ok())
                        .map(str::to_owned);
                    let bytes = response.bytes().await.map_err(network)?.to_vec();
                    Ok(Conditional::Found { bytes, etag })
                }
                status => Err(RegistryError::Status {
                    url: redacted(&url),
                    status: status.as_u16(),
                }),
            }
        })
        .await
    }

    /// Returns a file of the tree as served, unchecked: for the metadata
    /// itself, and for copying a tree (`skillpkg mirror`).
    pub async fn raw_file(&self, path: &str) -> Result<Option<Vec<u8>>, RegistryError> {
        fetch(&self.http, &self.url.join(path), self.read_token()).await
    }

    /// Downloads an archive, hashing it while it streams and stopping as
    /// soon as it passes the registry's `max-skill-bytes`: a hostile or
    /// broken server cannot make the client read more. `None` for a 404.
    pub async fn download(&self, path: &str) -> Result<Option<(Vec<u8>, Checksum)>, RegistryError> {
        use sha2::Digest as _;
        let url = match url::Url::parse(path) {
            Ok(absolute) => absolute,
            Err(_) => self.url.join(path),
        };
        let limit = self.config.max_skill_bytes;
        let too_large = || RegistryError::TooLarge {
            url: redacted(&url),
            limit,
        };
        if url.scheme() == "file" {
            let Some(bytes) = fetch(&self.http, &url, self.read_token()).await? else {
                return Ok(None);
            };
            if bytes.len() as u64 > limit {
                return Err(too_large());
            }
            let checksum = Checksum::of(&bytes);
            return Ok(Some((bytes, checksum)));
        }
        let network = |source: reqwest::Error| RegistryError::Network {
            url: redacted(&url),
            source: source.without_url(),
        };
        with_retries(|| async {
            let mut response = self.get(&url).send().await.map_err(network)?;
            match response.status() {
                StatusCode::NOT_FOUND => return Ok(None),
                status if !status.is_success() => {
                    return Err(RegistryError::Status {
                        url: redacted(&url),
                        status: status.as_u16(),
                    });
                }
                _ => {}
            }
            if response
                .content_length()
                .is_some_and(|length| length > limit)
            {
                return Err(too_large());
            }
            let mut hasher = sha2::Sha256::new();
            let mut bytes = Vec::new();
            while let Some(chunk) = response.chunk().await.map_err(network)? {
                if (bytes.len() + chunk.len()) as u64 > limit {
                    return Err(too_large());
                }
                hasher.update(&chunk);
                bytes.extend_from_slice(&chunk);
            }
            Ok(Some((
                bytes,
                Checksum::from_digest(hasher.finalize().into()),
            )))
        })
        .await
    }

    /// Returns `search.json`. A registry with no skill yet may have none,
    /// which reads as an empty index.
    pub async fn search_index(&self) -> Result<SearchIndex, RegistryError> {
        let url = self.url.join(SEARCH_PATH);
        let bytes = fetch(&self.http, &url, self.read_token()).await?;
        self.check_file(SEARCH_PATH, bytes.as_deref()).await?;
        match bytes {
            Some(bytes) => parse_json(&url, &bytes, "search index"),
            None => Ok(SearchIndex {
                v: FORMAT_VERSION,
                skills: Vec::new(),
            }),
        }
    }

    /// Returns the registry's API, or [`RegistryError::ReadOnly`] for a tree
    /// without one. `action` is what the caller wants it for (for messages).
    pub fn api(&self, action: Action) -> Result<Api<'_>, RegistryError> {
        let Some(api) = &self.config.api else {
            return Err(RegistryError::ReadOnly {
                registry: self.url.to_string(),
                action,
            });
        };
        let bad_api = || RegistryError::BadApiUrl {
            registry: self.url.to_string(),
        };
        // Relative `api` URLs are resolved like `dl` templates: against the
        // registry's base URL, so a tree and its API can move together.
        let mut base = self.url.as_url().join(api).map_err(|_| bad_api())?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(bad_api());
        }
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        Ok(Api::new(&self.http, &self.url, base))
    }

    /// A GET of a file of the tree, with the token when the registry is
    /// private.
    fn get(&self, url: &url::Url) -> reqwest::RequestBuilder {
        let request = self.http.get(url.clone());
        match self.read_token() {
            Some(token) => request.bearer_auth(token.expose()),
            None => request,
        }
    }

    /// The token to send with reads of the tree.
    fn read_token(&self) -> Option<&Token> {
        self.token.as_ref().filter(|_| self.config.auth_required)
    }
}

/// Reads files for the metadata check, unchecked, and keeps what it read.
struct RawReader<'a> {
    registry: &'a Registry,
    files: std::sync::Mutex<Vec<(String, Vec<u8>)>>,
}

impl trust::Fetch for RawReader<'_> {
    async fn get(&self, path: &str) -> Result<Option<Vec<u8>>, RegistryError> {
        let bytes = self.registry.raw_file(path).await?;
        if let Some(bytes) = &bytes {
            self.files
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push((path.to_owned(), bytes.clone()));
        }
        Ok(bytes)
    }
}

async fn read_config(
    http: &reqwest::Client,
    registry: &RegistryUrl,
    token: Option<&Token>,
) -> Result<RegistryConfig, RegistryError> {
    #[derive(serde::Deserialize)]
    struct Versioned {
        v: u32,
    }
    let url = registry.join(CONFIG_PATH);
    // A public registry never sees the token; a private one asks for it
    // with a 401, and then gets it.
    let bytes = match fetch(http, &url, None).await {
        Err(RegistryError::Status { status: 401, .. }) if token.is_some() => {
            fetch(http, &url, token).await?
        }
        other => other?,
    };
    let bytes = bytes.ok_or_else(|| RegistryError::NotARegistry {
        registry: registry.to_string(),
    })?;
    let versioned: Versioned = parse_json(&url, &bytes, "registry config.json")?;
    if versioned.v != FORMAT_VERSION {
        return Err(RegistryError::UnknownFormat {
            registry: registry.to_string(),
            version: versioned.v,
        });
    }
    parse_json(&url, &bytes, "registry config.json")
}

fn parse_json<T: serde::de::DeserializeOwned>(
    url: &url::Url,
    bytes: &[u8],
    what: &'static str,
) -> Result<T, RegistryError> {
    serde_json::from_slice(bytes).map_err(|source| RegistryError::BadDocument {
        url: redacted(url),
        what,
        source,
    })
}

/// Fetches one file of the tree: `Some(bytes)`, or `None` when it does not
/// exist (404, or a missing file for `file://`).
/// How many times a read is tried when the server fails (5xx) or the
/// network does, and the first wait; each wait doubles.
const ATTEMPTS: u32 = 4;
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// Runs `attempt` until it succeeds, fails for good, or has been tried
/// [`ATTEMPTS`] times: retried, with a doubling wait, on 5xx answers and
/// network errors, never on 4xx, which would answer the same again.
async fn with_retries<T, F, Fut>(mut attempt: F) -> Result<T, RegistryError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, RegistryError>>,
{
    let no_delay = std::env::var_os(crate::env_vars::SKILLPKG_TEST_NO_RETRY_DELAY)
        .is_some_and(|value| !value.is_empty());
    let mut backoff = FIRST_BACKOFF;
    let mut tries = 1;
    loop {
        match attempt().await {
            Err(RegistryError::Status { status, .. }) if status >= 500 && tries < ATTEMPTS => {}
            Err(RegistryError::Network { .. }) if tries < ATTEMPTS => {}
            other => return other,
        }
        if !no_delay {
            tokio::time::sleep(backoff).await;
        }
        backoff *= 2;
        tries += 1;
    }
}

/// Reads a file of the registry, with retries.
async fn fetch(
    http: &reqwest::Client,
    url: &url::Url,
    token: Option<&Token>,
) -> Result<Option<Vec<u8>>, RegistryError> {
    with_retries(|| fetch_once(http, url, token)).await
}

async fn fetch_once(
    http: &reqwest::Client,
    url: &url::Url,
    token: Option<&Token>,
) -> Result<Option<Vec<u8>>, RegistryError> {
    if url.scheme() == "file" {
        // `RegistryUrl` only admits file URLs with a local path, and joined
        // relative paths keep it local.
        let path = url
            .to_file_path()
            .expect("registry file URLs are local paths");
        return match fs_err::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(RegistryError::File { path, source }),
        };
    }
    let mut request = http.get(url.clone());
    if let Some(token) = token {
        request = request.bearer_auth(token.expose());
    }
    let network = |source: reqwest::Error| RegistryError::Network {
        url: redacted(url),
        // reqwest's message repeats the URL unredacted; ours names it.
        source: source.without_url(),
    };
    let response = request.send().await.map_err(network)?;
    match response.status() {
        StatusCode::NOT_FOUND => Ok(None),
        status if status.is_success() => {
            Ok(Some(response.bytes().await.map_err(network)?.to_vec()))
        }
        status => Err(RegistryError::Status {
            url: redacted(url),
            status: status.as_u16(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_never_go_from_https_down_to_http() {
        let url = |text: &str| url::Url::parse(text).unwrap();
        assert!(!redirect_allowed(
            &url("https://skills.example/index/1/a"),
            &url("http://skills.example/index/1/a")
        ));
        assert!(!redirect_allowed(
            &url("https://skills.example/x"),
            &url("http://cdn.example/x")
        ));
        assert!(redirect_allowed(
            &url("https://skills.example/x"),
            &url("https://cdn.example/x")
        ));
        assert!(redirect_allowed(
            &url("http://127.0.0.1:1/x"),
            &url("https://127.0.0.1:2/x")
        ));
        assert!(redirect_allowed(
            &url("http://127.0.0.1:1/x"),
            &url("http://127.0.0.1:2/x")
        ));
    }
}
