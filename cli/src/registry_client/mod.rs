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
use crate::credentials::Token;

/// The User-Agent of every request.
const USER_AGENT: &str = concat!("skillpkg/", env!("CARGO_PKG_VERSION"));
/// How long to wait for a connection: a registry that does not answer in
/// this time is down or unreachable, and a user should hear so quickly.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one request may take in all: enough to upload the largest
/// allowed archive (8 MiB by default) over a slow link.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

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
            .build()
            .context("cannot set up the HTTP client")?;
        let config = read_config(&http, &url, token.as_ref()).await?;
        Ok(Self {
            http,
            url,
            token,
            config,
        })
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
        let bytes = fetch(&self.http, &url, self.read_token())
            .await?
            .ok_or_else(no_such_skill)?;
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
        let url = match url::Url::parse(path) {
            Ok(absolute) => absolute,
            Err(_) => self.url.join(path),
        };
        fetch(&self.http, &url, self.read_token()).await
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
            let mut request = self.http.get(url.clone());
            if let Some(token) = self.read_token() {
                request = request.bearer_auth(token.expose());
            }
            let mut response = request.send().await.map_err(network)?;
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
        match fetch(&self.http, &url, self.read_token()).await? {
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

    /// The token to send with reads of the tree.
    fn read_token(&self) -> Option<&Token> {
        self.token.as_ref().filter(|_| self.config.auth_required)
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
