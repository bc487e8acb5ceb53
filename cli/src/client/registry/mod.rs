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
//! Every request goes through [`http`]: one `reqwest` client per registry
//! (rustls, a `skillpkg/<version>` User-Agent, connect, read and overall
//! timeouts, no compression) that follows redirects itself, so that a token
//! only ever goes to the origin it was configured for, and that reads every
//! body under a size cap. Its connection pool serves every request to the
//! registry: HTTP/2 when an https server offers it (ALPN), so concurrent
//! reads share one connection, else HTTP/1.1 connections kept alive between
//! requests. Commands run the async calls on a current-thread runtime
//! through [`block_on`]. Tokens go only into `Authorization` headers, and
//! every URL in an error is redacted.
//!
//! Index files read over http(s) are kept in the user's cache with their
//! `ETag` ([`super::index_cache`]) and asked for again with
//! `If-None-Match`; see [`Registry::index`] for why a cached copy is never
//! trusted more than a fresh one.
//!
//! Which origin a token is bound to:
//!
//! ```text
//! reads of the tree       the registry URL's origin (the URL the token is configured for);
//!                         an absolute `dl` URL elsewhere gets no token
//! API calls               the origin of the `api` URL the registry's own config.json names;
//!                         API calls follow no redirect
//! ```

mod api;
mod error;
mod http;
pub mod trust;

use std::future::Future;
use std::time::Duration;

use anyhow::Context as _;
use futures_util::{StreamExt as _, TryStreamExt as _};
use reqwest::StatusCode;
use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::{
    CONFIG_PATH, FORMAT_VERSION, IndexRecord, RegistryConfig, SEARCH_PATH, SEARCH_VERSION,
    SearchEntry, SearchFile, SearchIndex, index_file_path, parse_index_file,
};
use skillpkg_index::skill::SkillName;
use url::Url;

pub use self::api::{Api, Attachments, Published};
pub use self::error::{Action, RedirectProblem, RegistryError};
use self::http::{
    Answer, Bearer, Http, Limit, MAX_ARCHIVE_BYTES, MAX_DOCUMENT_BYTES, MAX_TREE_FILE_BYTES, shown,
};
pub use self::trust::TrustConfig;
use super::index_cache::IndexCache;
use super::registry_url::{RegistryUrl, redacted};
use crate::client::token::Token;
use skillpkg_index::registry::metadata::{
    self, MetadataError, Snapshot, SnapshotBin, SnapshotNode, TIMESTAMP_PATH, in_snapshot,
};

/// Runs `future` to completion on a current-thread runtime. The client's
/// requests wait on the network, not the processor: one thread keeps many
/// in flight (index files, archives) and does the little hashing and
/// parsing between them.
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
    http: Http,
    url: RegistryUrl,
    /// The origin of `url`: the only one the token is sent to with reads.
    origin: url::Origin,
    token: Option<Token>,
    config: RegistryConfig,
    trust: TrustConfig,
    /// The verified snapshot. A mutex held while the chain is checked, so
    /// that index files read at once wait for one check rather than each
    /// making its own.
    snapshot: tokio::sync::Mutex<CheckedChain>,
    /// The metadata files (path, bytes) of the last chain that passed.
    metadata_files: std::sync::Mutex<VerifiedMetadata>,
    /// The index files read from this registry before, with their ETags;
    /// `None` for a `file://` registry, or when there is no cache folder.
    index_cache: Option<IndexCache>,
    /// The nodes and bins of snapshots of version 2 read so far, by their
    /// sha256 (immutable, so never read twice).
    meta: std::sync::Mutex<std::collections::HashMap<Checksum, MetaEntries>>,
}

/// A node's bins or a bin's files, each with its sha256.
pub type MetaEntries = std::sync::Arc<std::collections::BTreeMap<String, Checksum>>;

/// What the checks of a registry's signed metadata found so far.
#[derive(Debug, Default)]
struct CheckedChain {
    /// `None` until the chain was checked, then `Some(None)` for a registry
    /// without signed metadata.
    snapshot: Option<Option<std::sync::Arc<Snapshot>>>,
    /// How many times the chain was checked: a file that does not match
    /// the snapshot of check N has the chain checked again only if no other
    /// file did that already, so files read at once that all mismatch one
    /// snapshot cost one more check, not one each.
    checks: u64,
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
        let http = Http::new()?;
        let origin = url.as_url().origin();
        let bearer = token.as_ref().map(|token| Bearer::new(token, &origin));
        let config = read_config(&http, &url, bearer).await?;
        Ok(Self {
            http,
            url,
            origin,
            token,
            config,
            trust: TrustConfig::default(),
            snapshot: tokio::sync::Mutex::new(CheckedChain::default()),
            metadata_files: std::sync::Mutex::new(VerifiedMetadata::default()),
            index_cache: None,
            meta: std::sync::Mutex::default(),
        })
    }

    /// Sets how the registry's signed metadata is trusted: under which id
    /// what was seen is kept, and the pinned root key.
    #[must_use]
    pub fn with_trust(mut self, trust: TrustConfig) -> Self {
        self.trust = trust;
        self
    }

    /// Keeps the index files read from this registry in the cache folder
    /// `cache_root` (the one that holds `archives/`), with their ETags, and
    /// asks for them again with `If-None-Match` (docs/client.md, "How index
    /// files are fetched"). Only http(s) registries: a `file://` tree is
    /// read from disk anyway.
    #[must_use]
    pub fn with_index_cache(mut self, cache_root: &std::path::Path) -> Self {
        if matches!(self.url.as_url().scheme(), "http" | "https") {
            self.index_cache = Some(IndexCache::new(cache_root, &self.url, MAX_TREE_FILE_BYTES));
        }
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
        Ok(self.checked_snapshot().await?.0)
    }

    /// [`Self::snapshot`], and the number of the check it came from.
    async fn checked_snapshot(
        &self,
    ) -> Result<(Option<std::sync::Arc<Snapshot>>, u64), RegistryError> {
        let mut guard = self.snapshot.lock().await;
        if let Some(snapshot) = &guard.snapshot {
            return Ok((snapshot.clone(), guard.checks));
        }
        let snapshot = self.check_chain().await?.map(std::sync::Arc::new);
        guard.snapshot = Some(snapshot.clone());
        guard.checks += 1;
        Ok((snapshot, guard.checks))
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
        let mut tries = 0;
        let (reader, result) = loop {
            tries += 1;
            let reader = RawReader {
                registry: self,
                files: std::sync::Mutex::new(Vec::new()),
            };
            let result = trust::check_chain(
                &reader,
                self.trust.root_key.as_ref(),
                previous.clone(),
                jiff::Timestamp::now(),
            )
            .await;
            // A registry re-signs its timestamp and snapshot from time to
            // time, so the two reads can straddle a signing: read them
            // again, once. Anything else, or twice, is not a race.
            let straddled = matches!(
                result,
                Err(trust::ChainError::Metadata(
                    skillpkg_index::registry::metadata::MetadataError::SnapshotMismatch { .. }
                ))
            );
            if !straddled || tries == 2 {
                break (reader, result);
            }
        };
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
            // A vendor folder, read for a locked install: nothing it serves
            // is trusted for more than the lock already pins. Nothing is
            // recorded, so it never counts as what the registry was seen at.
            Err(trust::ChainError::Unsigned { .. })
                if self.trust.pinned_by_lock && self.url.as_url().scheme() == "file" =>
            {
                Ok(None)
            }
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
        let (Some(snapshot), checks) = self.checked_snapshot().await? else {
            return Ok(());
        };
        let expected = self.signed_sha256(&snapshot, path).await?;
        let Err(problem) = snapshot.check_expected(path, expected.as_ref(), bytes) else {
            return Ok(());
        };
        let fresh = {
            let mut guard = self.snapshot.lock().await;
            if guard.checks == checks {
                let fresh = self.check_chain().await?.map(std::sync::Arc::new);
                guard.snapshot = Some(fresh.clone());
                guard.checks += 1;
                fresh
            } else {
                // Another file read at the same time re-read it already.
                guard.snapshot.clone().flatten()
            }
        };
        match fresh {
            Some(fresh) if fresh.version != snapshot.version => {
                let expected = self.signed_sha256(&fresh, path).await?;
                fresh
                    .check_expected(path, expected.as_ref(), bytes)
                    .map_err(|problem| RegistryError::Metadata {
                        registry: self.label(),
                        problem,
                    })
            }
            _ => Err(RegistryError::Metadata {
                registry: self.label(),
                problem,
            }),
        }
    }

    /// Returns true if and only if `bytes` are what the snapshot checked
    /// last lists for `path` (or the registry has no signed metadata):
    /// the check a cached file must pass to be used, with no second look at
    /// the metadata, since a copy that fails it is read again instead.
    async fn in_current_snapshot(&self, path: &str, bytes: &[u8]) -> Result<bool, RegistryError> {
        if !in_snapshot(path) {
            return Ok(true);
        }
        Ok(match self.snapshot().await? {
            Some(snapshot) => {
                let expected = self.signed_sha256(&snapshot, path).await?;
                snapshot
                    .check_expected(path, expected.as_ref(), Some(bytes))
                    .is_ok()
            }
            None => true,
        })
    }

    /// The sha256 `snapshot` names for the file at `path`, if any: from
    /// its list (version 1), or through the node and bin of the path
    /// (version 2), read from the registry once each and checked against
    /// the sha256 the level above names.
    pub async fn signed_sha256(
        &self,
        snapshot: &Snapshot,
        path: &str,
    ) -> Result<Option<Checksum>, RegistryError> {
        if let Some(files) = &snapshot.files {
            return Ok(files.get(path).copied());
        }
        let Some(nodes) = &snapshot.nodes else {
            return Ok(None);
        };
        let slot = metadata::slot(path);
        let Some(node) = nodes.get(&slot.node) else {
            return Ok(None);
        };
        let bins = self.meta_entries(snapshot, node, "node").await?;
        let Some(bin) = bins.get(&slot.bin) else {
            return Ok(None);
        };
        let files = self.meta_entries(snapshot, bin, "bin").await?;
        Ok(files.get(path).copied())
    }

    /// The entries of the node or bin (`kind`) whose sha256 is `sum`.
    pub async fn meta_entries(
        &self,
        snapshot: &Snapshot,
        sum: &Checksum,
        kind: &'static str,
    ) -> Result<MetaEntries, RegistryError> {
        if let Some(found) = self.lock_meta().get(sum) {
            return Ok(found.clone());
        }
        let path = metadata::meta_path(sum);
        let refused = |problem: MetadataError| RegistryError::Metadata {
            registry: self.label(),
            problem: match problem {
                MetadataError::FileMismatch { file, .. } => MetadataError::FileMismatch {
                    file,
                    snapshot: snapshot.version,
                },
                other => other,
            },
        };
        let url = self.url.join(&path);
        let bytes = self
            .fetch(&url, Limit::Client(MAX_META_BYTES))
            .await?
            .ok_or_else(|| {
                refused(MetadataError::Missing {
                    file: path.clone(),
                    snapshot: snapshot.version,
                })
            })?;
        let entries = self
            .remember_meta(&path, sum, kind, &bytes)
            .map_err(refused)?;
        Ok(entries)
    }

    /// Checks the node or bin (`kind`) read at `path` against `sum` and
    /// keeps its entries for this command.
    pub fn remember_meta(
        &self,
        path: &str,
        sum: &Checksum,
        kind: &'static str,
        bytes: &[u8],
    ) -> Result<MetaEntries, MetadataError> {
        let entries = if kind == "node" {
            metadata::parse_meta::<SnapshotNode>(path, sum, kind, bytes)?.bins
        } else {
            metadata::parse_meta::<SnapshotBin>(path, sum, kind, bytes)?.files
        };
        let entries = std::sync::Arc::new(entries);
        self.lock_meta().insert(*sum, entries.clone());
        Ok(entries)
    }

    fn lock_meta(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<Checksum, MetaEntries>> {
        self.meta
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
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
    ///
    /// With an index cache ([`Self::with_index_cache`]), a file read before
    /// is asked for with its `ETag` in `If-None-Match`, and a `304` answer
    /// uses the cached copy only once it passes the checks a fresh file
    /// gets: the snapshot's sha256 (when the registry has signed metadata)
    /// and the parse. A copy that fails them is forgotten and the file read
    /// again without the condition, so neither a copy changed on disk nor a
    /// server answering 304 for a file that changed gets past the snapshot.
    pub async fn index(&self, name: &SkillName) -> Result<Vec<IndexRecord>, RegistryError> {
        let path = index_file_path(name);
        let url = self.url.join(&path);
        let no_such_skill = || RegistryError::NoSuchSkill {
            name: name.to_string(),
            registry: self.url.to_string(),
        };
        let parse = |bytes: &[u8]| {
            let text = String::from_utf8_lossy(bytes);
            parse_index_file(name, &text).map_err(|source| RegistryError::BadIndex {
                url: redacted(&url),
                source,
            })
        };
        let cache = self.index_cache.as_ref();
        let cached = cache.and_then(|cache| cache.read(&path, &url));
        let answer = self
            .file_if_changed(&path, cached.as_ref().map(|cached| cached.etag.as_str()))
            .await?;
        let answer = match (answer, cached) {
            (Conditional::NotModified, Some(cached)) => {
                if self.in_current_snapshot(&path, &cached.bytes).await?
                    && let Ok(records) = parse(&cached.bytes)
                    && !records.is_empty()
                {
                    return Ok(records);
                }
                if let Some(cache) = cache {
                    cache.forget(&path);
                }
                self.file_if_changed(&path, None).await?
            }
            (answer, _) => answer,
        };
        let (bytes, etag) = match answer {
            Conditional::Found { bytes, etag } => (Some(bytes), etag),
            Conditional::Missing => (None, None),
            // Only an answer to a request without `If-None-Match` gets
            // here, since a copy that was asked about is used or read
            // again: the server has nothing to say it did not change from.
            Conditional::NotModified => {
                return Err(RegistryError::Status {
                    url: http::shown(&url, self.token.as_ref()),
                    status: StatusCode::NOT_MODIFIED.as_u16(),
                    retry_after: None,
                });
            }
        };
        let forget = || {
            if let Some(cache) = cache {
                cache.forget(&path);
            }
        };
        self.check_file(&path, bytes.as_deref())
            .await
            .inspect_err(|_| forget())?;
        let Some(bytes) = bytes else {
            forget();
            return Err(no_such_skill());
        };
        let records = parse(&bytes).inspect_err(|_| forget())?;
        if records.is_empty() {
            forget();
            return Err(no_such_skill());
        }
        // Kept only once it passed every check: a copy is never the first
        // place a file is trusted.
        match (cache, etag) {
            (Some(cache), Some(etag)) => cache.write(&path, &url, &etag, &bytes),
            _ => forget(),
        }
        Ok(records)
    }

    /// Returns a file of the tree (a path relative to the registry, or an
    /// absolute URL such as an absolute `dl` template gives), `None` for a 404.
    ///
    /// An archive may come this way (`verify` reads one), so the cap is the
    /// larger of a tree file's and an archive's.
    pub async fn file(&self, path: &str) -> Result<Option<Vec<u8>>, RegistryError> {
        let (url, relative) = self.resolve(path)?;
        let limit = Limit::Client(MAX_TREE_FILE_BYTES.max(self.archive_limit().bytes()));
        let bytes = self.fetch(&url, limit).await?;
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
        let limit = Limit::Client(tree_file_limit(path));
        if url.scheme() == "file" {
            return Ok(match http::read_local(&url, limit)? {
                Some(bytes) => Conditional::Found { bytes, etag: None },
                None => Conditional::Missing,
            });
        }
        let bearer = self.bearer();
        let token = bearer.map(Bearer::token);
        with_retries(|| async {
            let answer = self.http.get(&url, bearer, etag).await?;
            match answer.response.status() {
                StatusCode::NOT_MODIFIED => Ok(Conditional::NotModified),
                StatusCode::NOT_FOUND => Ok(Conditional::Missing),
                status if status.is_success() => {
                    let etag = answer
                        .response
                        .headers()
                        .get(reqwest::header::ETAG)
                        .and_then(|value| value.to_str().ok())
                        .map(str::to_owned);
                    let bytes = self
                        .http
                        .body(answer.response, &url, token, limit, |_| {})
                        .await?;
                    Ok(Conditional::Found { bytes, etag })
                }
                _ => Err(unexpected(&url, &answer, token)),
            }
        })
        .await
    }

    /// Returns a file of the tree as served, unchecked: for the metadata
    /// itself, and for copying a tree (`skillpkg mirror`).
    pub async fn raw_file(&self, path: &str) -> Result<Option<Vec<u8>>, RegistryError> {
        let limit = Limit::Client(tree_file_limit(path));
        self.fetch(&self.url.join(path), limit).await
    }

    /// Downloads an archive, hashing it while it streams and stopping as
    /// soon as it passes the registry's `max-skill-bytes` (or this client's
    /// own cap, when the registry claims more): a hostile or broken server
    /// cannot make the client read more. `None` for a 404.
    pub(in crate::client) async fn download(
        &self,
        path: &str,
    ) -> Result<Option<(Vec<u8>, Checksum)>, RegistryError> {
        use sha2::Digest as _;
        let (url, _) = self.resolve(path)?;
        let limit = self.archive_limit();
        if url.scheme() == "file" {
            return Ok(http::read_local(&url, limit)?.map(|bytes| {
                let checksum = Checksum::of(&bytes);
                (bytes, checksum)
            }));
        }
        let bearer = self.bearer();
        let token = bearer.map(Bearer::token);
        with_retries(|| async {
            let answer = self.http.get(&url, bearer, None).await?;
            match answer.response.status() {
                StatusCode::NOT_FOUND => return Ok(None),
                status if !status.is_success() => return Err(unexpected(&url, &answer, token)),
                _ => {}
            }
            let mut hasher = sha2::Sha256::new();
            let bytes = self
                .http
                .body(answer.response, &url, token, limit, |chunk| {
                    hasher.update(chunk);
                })
                .await?;
            Ok(Some((
                bytes,
                Checksum::from_digest(hasher.finalize().into()),
            )))
        })
        .await
    }

    /// The cap of an archive: the registry's `max-skill-bytes`, unless it
    /// claims more than [`MAX_ARCHIVE_BYTES`].
    fn archive_limit(&self) -> Limit {
        if self.config.max_skill_bytes <= MAX_ARCHIVE_BYTES {
            Limit::Registry(self.config.max_skill_bytes)
        } else {
            Limit::Client(MAX_ARCHIVE_BYTES)
        }
    }

    /// Returns the URL of `path`, a path of the tree or an absolute URL the
    /// tree names (an absolute `dl` template), and whether it was relative.
    ///
    /// A registry decides what the client reads, so an absolute URL must be
    /// one it may send the client to: an http(s) registry names http(s)
    /// URLs only (an https one, https only: the same rule as redirects), so
    /// that a remote registry can never make the client read the user's
    /// own files; a `file://` registry may also name local files.
    fn resolve(&self, path: &str) -> Result<(Url, bool), RegistryError> {
        let Ok(absolute) = Url::parse(path) else {
            return Ok((self.url.join(path), true));
        };
        let why = match (self.url.as_url().scheme(), absolute.scheme()) {
            ("https", "https") | ("http" | "file", "http" | "https") => None,
            ("file", "file") if absolute.to_file_path().is_ok() => None,
            ("file", "file") => Some("a file:// URL must be a local path"),
            ("file", _) => {
                Some("a file:// registry may only name local files and http:// or https:// URLs")
            }
            ("https", "http") => Some("an https:// registry may only name https:// URLs"),
            _ => Some("an http:// or https:// registry may only name http:// or https:// URLs"),
        };
        match why {
            None => Ok((absolute, false)),
            Some(why) => Err(RegistryError::ForbiddenUrl {
                registry: self.label(),
                url: shown(&absolute, self.token.as_ref()),
                why,
            }),
        }
    }

    /// Returns the search index: every skill's latest version, by name,
    /// from `search.json` (version 1) or the shards it names (read
    /// [`PARALLEL_SHARD_READS`] at a time, each checked against the signed
    /// snapshot when there is one). A registry with no skill yet may have
    /// none, which reads as an empty index, as does a missing shard.
    pub async fn search_index(&self) -> Result<SearchIndex, RegistryError> {
        let url = self.url.join(SEARCH_PATH);
        let bytes = self.fetch(&url, Limit::Client(MAX_TREE_FILE_BYTES)).await?;
        self.check_file(SEARCH_PATH, bytes.as_deref()).await?;
        let Some(bytes) = bytes else {
            return Ok(SearchIndex {
                v: SEARCH_VERSION,
                skills: Vec::new(),
            });
        };
        let shards =
            match SearchFile::parse(&bytes).map_err(|source| RegistryError::BadDocument {
                url: redacted(&url),
                what: "search index",
                source,
            })? {
                SearchFile::Listed(index) => return Ok(index),
                SearchFile::Sharded(shards) => shards,
            };
        let shards: Vec<Vec<SearchEntry>> = futures_util::stream::iter(shards.paths())
            .map(|path| async move {
                let url = self.url.join(&path);
                let bytes = self.fetch(&url, Limit::Client(MAX_TREE_FILE_BYTES)).await?;
                self.check_file(&path, bytes.as_deref()).await?;
                match bytes {
                    Some(bytes) => parse_json::<SearchIndex>(&url, &bytes, "search index shard")
                        .map(|shard| shard.skills),
                    None => Ok(Vec::new()),
                }
            })
            .buffered(PARALLEL_SHARD_READS)
            .try_collect()
            .await?;
        let mut skills: Vec<SearchEntry> = shards.into_iter().flatten().collect();
        // A name listed twice (by a hostile or half-written tree) once.
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        skills.dedup_by(|a, b| a.name == b.name);
        Ok(SearchIndex {
            v: SEARCH_VERSION,
            skills,
        })
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
        if self.url.as_url().scheme() == "https" && base.scheme() == "http" {
            return Err(RegistryError::InsecureApi {
                registry: self.url.to_string(),
            });
        }
        if !base.path().ends_with('/') {
            let path = format!("{}/", base.path());
            base.set_path(&path);
        }
        Ok(Api::new(&self.http, &self.url, base))
    }

    /// Reads a file of the tree (or an absolute URL it names), with retries
    /// and the token when the registry is private.
    async fn fetch(&self, url: &Url, limit: Limit) -> Result<Option<Vec<u8>>, RegistryError> {
        fetch(&self.http, url, self.bearer(), limit).await
    }

    /// The token to send with reads of the tree, bound to the registry's
    /// origin: only a registry that says it is private gets it.
    fn bearer(&self) -> Option<Bearer<'_>> {
        self.token
            .as_ref()
            .filter(|_| self.config.auth_required)
            .map(|token| Bearer::new(token, &self.origin))
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
    http: &Http,
    registry: &RegistryUrl,
    bearer: Option<Bearer<'_>>,
) -> Result<RegistryConfig, RegistryError> {
    #[derive(serde::Deserialize)]
    struct Versioned {
        v: u32,
    }
    let url = registry.join(CONFIG_PATH);
    // A public registry never sees the token; a private one asks for it
    // with a 401, and then gets it.
    let limit = Limit::Client(MAX_DOCUMENT_BYTES);
    let bytes = match fetch(http, &url, None, limit).await {
        Err(RegistryError::Status { status: 401, .. }) if bearer.is_some() => {
            fetch(http, &url, bearer, limit).await?
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

/// The cap of a file of the tree, by its kind: the small signed documents
/// (the roots, the timestamp) and `config.json`, or any other.
fn tree_file_limit(path: &str) -> u64 {
    let is_root = path
        .strip_suffix(".root.json")
        .is_some_and(|version| version.parse::<u64>().is_ok());
    if is_root || path == TIMESTAMP_PATH || path == CONFIG_PATH {
        MAX_DOCUMENT_BYTES
    } else {
        MAX_TREE_FILE_BYTES
    }
}

/// The error for an answer that is neither a success nor a 404.
fn unexpected(url: &Url, answer: &Answer, token: Option<&Token>) -> RegistryError {
    let status = answer.response.status().as_u16();
    if answer.token_withheld && matches!(status, 401 | 403) {
        return RegistryError::TokenWithheld {
            url: shown(url, token),
            hop: shown(&answer.url, token),
            status,
        };
    }
    RegistryError::Status {
        url: shown(url, token),
        status,
        retry_after: answer
            .response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| retry_after(value, jiff::Timestamp::now())),
    }
}

/// The wait a `Retry-After` value asks for, in whole seconds: a number of
/// seconds, or an HTTP date (a date past is no wait). `None` for a value
/// that is neither.
fn retry_after(value: &str, now: jiff::Timestamp) -> Option<u64> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(seconds);
    }
    let date = jiff::fmt::rfc2822::parse(value).ok()?.timestamp();
    Some(u64::try_from(date.duration_since(now).as_secs()).unwrap_or(0))
}

/// The most a node or bin of a snapshot may be: a bin lists a 4,096th of
/// the registry's files (about 50 KB at a million skills).
const MAX_META_BYTES: u64 = 4 << 20;
/// How many shards of the search index are read at once.
const PARALLEL_SHARD_READS: usize = 16;
/// How many times a read is tried when the server fails (5xx, 429) or the
/// network does, and the first wait; each wait doubles, with jitter.
const ATTEMPTS: u32 = 4;
const FIRST_BACKOFF: Duration = Duration::from_millis(250);
/// The longest `Retry-After` a command waits for; a server that asks for
/// more gets its error reported (it says how long it asked) at once.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Runs `attempt` until it succeeds, fails for good, or has been tried
/// [`ATTEMPTS`] times: retried on 5xx and 429 answers and network errors,
/// never on other 4xx, which would answer the same again. The waits
/// double from [`FIRST_BACKOFF`], each with random jitter (so that clients
/// a server turned away together do not come back together), and an
/// answer's `Retry-After` takes the place of the wait, up to
/// [`MAX_RETRY_AFTER`].
async fn with_retries<T, F, Fut>(attempt: F) -> Result<T, RegistryError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, RegistryError>>,
{
    use backon::Retryable as _;
    let no_delay = std::env::var_os(crate::env_vars::SKILLPKG_TEST_NO_RETRY_DELAY)
        .is_some_and(|value| !value.is_empty());
    let backoff = backon::ExponentialBuilder::default()
        .with_min_delay(FIRST_BACKOFF)
        .with_factor(2.0)
        .with_max_times(ATTEMPTS as usize - 1)
        .with_jitter();
    attempt
        .retry(backoff)
        .sleep(tokio::time::sleep)
        .when(|error| match error {
            RegistryError::Status { status, .. } => *status >= 500 || *status == 429,
            RegistryError::Network { .. } | RegistryError::Timeout { .. } => true,
            _ => false,
        })
        .adjust(move |error, wait| {
            // `None`: no tries left.
            let wait = match (wait?, error) {
                (
                    _,
                    RegistryError::Status {
                        retry_after: Some(seconds),
                        ..
                    },
                ) => Duration::from_secs(*seconds),
                (wait, _) => wait,
            };
            if wait > MAX_RETRY_AFTER {
                return None;
            }
            Some(if no_delay { Duration::ZERO } else { wait })
        })
        .notify(|error, wait| tracing::info!("retrying in {wait:?}: {error}"))
        .await
}

/// GETs `url` (`http` or `https`) for a source that is not a registry (a
/// discovery index, a file it names, a tarball URL): no token, redirects
/// followed as for a registry's files (never from https down to http),
/// retried like them, and the body read under `max_bytes`. `None` for a
/// 404.
pub async fn get_public(url: &Url, max_bytes: u64) -> anyhow::Result<Option<Vec<u8>>> {
    Ok(get_public_at(url, max_bytes).await?.map(|(bytes, _)| bytes))
}

/// [`get_public`], and the URL that answered after redirects: what a
/// document's relative URLs are relative to.
pub async fn get_public_at(url: &Url, max_bytes: u64) -> anyhow::Result<Option<(Vec<u8>, Url)>> {
    let failed = |source: Box<dyn std::error::Error + Send + Sync>| DownloadError {
        url: redacted(url),
        source,
    };
    if !matches!(url.scheme(), "http" | "https") {
        return Err(crate::error::UserError::new(format!(
            "`{}` is not an http:// or https:// URL",
            redacted(url)
        ))
        .into());
    }
    let http = Http::new()?;
    let limit = Limit::Client(max_bytes);
    with_retries(|| async {
        let answer = http.get(url, None, None).await?;
        match answer.response.status() {
            StatusCode::NOT_FOUND => Ok(None),
            status if status.is_success() => {
                let answered = answer.url.clone();
                let bytes = http.body(answer.response, url, None, limit, |_| {}).await?;
                Ok(Some((bytes, answered)))
            }
            _ => Err(unexpected(url, &answer, None)),
        }
    })
    .await
    .map_err(|error| failed(Box::new(error)).into())
}

/// A file of a source that is not a registry (a discovery index, a file it
/// names, a tarball) could not be downloaded: the network, or the site.
/// Exits with status 3, like a registry that cannot be reached.
#[derive(Debug, thiserror::Error)]
#[error("cannot download {url}")]
pub struct DownloadError {
    pub url: String,
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// Reads a file of the registry, with retries: `Some(bytes)`, or `None`
/// when it does not exist (404, or a missing file for `file://`).
async fn fetch(
    http: &Http,
    url: &Url,
    bearer: Option<Bearer<'_>>,
    limit: Limit,
) -> Result<Option<Vec<u8>>, RegistryError> {
    if url.scheme() == "file" {
        return http::read_local(url, limit);
    }
    with_retries(|| fetch_once(http, url, bearer, limit)).await
}

async fn fetch_once(
    http: &Http,
    url: &Url,
    bearer: Option<Bearer<'_>>,
    limit: Limit,
) -> Result<Option<Vec<u8>>, RegistryError> {
    let token = bearer.map(Bearer::token);
    let answer = http.get(url, bearer, None).await?;
    match answer.response.status() {
        StatusCode::NOT_FOUND => Ok(None),
        status if status.is_success() => Ok(Some(
            http.body(answer.response, url, token, limit, |_| {})
                .await?,
        )),
        _ => Err(unexpected(url, &answer, token)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_read_as_seconds_or_as_a_date() {
        let now: jiff::Timestamp = "2026-11-26T10:00:00Z".parse().unwrap();
        assert_eq!(retry_after("120", now), Some(120));
        assert_eq!(retry_after("Thu, 26 Nov 2026 10:00:30 GMT", now), Some(30));
        assert_eq!(retry_after("Thu, 26 Nov 2026 09:00:00 GMT", now), Some(0));
        assert_eq!(retry_after("soon", now), None);
    }

    /// A registry at `url` with `config`, as `open` would leave it, without
    /// reading anything.
    fn registry(url: &str, config: RegistryConfig) -> Registry {
        let url: RegistryUrl = url.parse().unwrap();
        Registry {
            http: Http::new().unwrap(),
            origin: url.as_url().origin(),
            url,
            token: Some("skp_secret".parse().unwrap()),
            config,
            trust: TrustConfig::default(),
            snapshot: tokio::sync::Mutex::new(CheckedChain::default()),
            metadata_files: std::sync::Mutex::new(VerifiedMetadata::default()),
            index_cache: None,
            meta: std::sync::Mutex::default(),
        }
    }

    fn refusal(registry: &Registry, path: &str) -> Option<&'static str> {
        match registry.resolve(path) {
            Ok(_) => None,
            Err(RegistryError::ForbiddenUrl { why, .. }) => Some(why),
            Err(other) => panic!("{other}"),
        }
    }

    #[test]
    fn a_registry_names_only_urls_it_may_send_the_client_to() {
        let config = RegistryConfig::read_only(8 << 20);
        let https = registry("https://skills.example/", config.clone());
        assert_eq!(refusal(&https, "dl/pdf/1.0.0/pdf-1.0.0.tgz"), None);
        assert_eq!(refusal(&https, "https://cdn.example/pdf.tgz"), None);
        assert_eq!(
            refusal(&https, "http://cdn.example/pdf.tgz"),
            Some("an https:// registry may only name https:// URLs")
        );
        for local in [
            "file:///home/user/.ssh/id_ed25519",
            "file://host/x",
            "ftp://cdn.example/x",
        ] {
            assert_eq!(
                refusal(&https, local),
                Some("an http:// or https:// registry may only name http:// or https:// URLs"),
                "{local}"
            );
        }
        let http = registry("http://127.0.0.1:1/", config.clone());
        assert_eq!(refusal(&http, "https://cdn.example/pdf.tgz"), None);
        assert!(refusal(&http, "file:///etc/passwd").is_some());
        let local = registry("file:///srv/tree/", config);
        assert_eq!(refusal(&local, "file:///srv/other/pdf.tgz"), None);
        assert_eq!(refusal(&local, "https://cdn.example/pdf.tgz"), None);
        assert_eq!(
            refusal(&local, "file://host/x"),
            Some("a file:// URL must be a local path")
        );
    }

    #[test]
    fn an_https_registry_never_sends_its_token_to_an_http_api() {
        let config = RegistryConfig {
            api: Some("http://skills.example/api/v1".into()),
            ..RegistryConfig::read_only(8 << 20)
        };
        assert!(matches!(
            registry("https://skills.example/", config.clone()).api(Action::Publish),
            Err(RegistryError::InsecureApi { .. })
        ));
        assert!(
            registry("http://skills.example/", config)
                .api(Action::Publish)
                .is_ok()
        );
    }

    #[test]
    fn the_small_signed_documents_have_the_small_cap() {
        assert_eq!(tree_file_limit("config.json"), MAX_DOCUMENT_BYTES);
        assert_eq!(tree_file_limit("timestamp.json"), MAX_DOCUMENT_BYTES);
        assert_eq!(tree_file_limit("12.root.json"), MAX_DOCUMENT_BYTES);
        assert_eq!(tree_file_limit("snapshot.json"), MAX_TREE_FILE_BYTES);
        assert_eq!(tree_file_limit("index/3/p/pdf"), MAX_TREE_FILE_BYTES);
        assert_eq!(tree_file_limit("search.json"), MAX_TREE_FILE_BYTES);
    }
}
