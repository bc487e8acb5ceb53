//! Where a registry keeps its static tree: a folder on this machine (the
//! default), or any S3-compatible bucket (`--storage s3://bucket/prefix`,
//! through `object_store`), which the bucket's own web endpoint or a CDN
//! can serve as it is.
//!
//! Paths are the tree's (`index/3/p/pdf`, `dl/pdf/1.0.0/pdf-1.0.0.tgz`):
//! relative, `/`-separated, with no empty, `.` or `..` component; anything
//! else is refused before it reaches a store. Every write replaces an
//! object whole: a reader sees the old bytes or the new, never a part. A
//! folder gets that from a temporary file (its name starts with `.`, never
//! served, never listed) renamed into place after an fsync; a bucket from
//! S3's own semantics.
//!
//! [`Storage::put_new`] creates an object only if there is none: a hard
//! link in a folder, `If-None-Match: *` on a bucket. Some S3 servers ignore
//! that header and answer 200 (Garage 2.5 does), so the registry never
//! relies on it alone: its database decides who writes a version, and the
//! store's refusal, where there is one, is a second guard.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey, S3ConditionalPut};
use object_store::{
    ClientOptions, ObjectStore as _, ObjectStoreExt as _, PutMode, PutOptions, PutPayload,
    RetryConfig,
};
use skillpkg_index::fs::{WriteOptions, write_atomic_with};
use skillpkg_index::registry::tree::StaticTree;

/// How many times a failed request to a bucket is retried (5xx, timeouts,
/// connection errors), with exponential backoff...
pub const MAX_RETRIES: usize = 3;
/// ...within at most this long.
pub const RETRY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one request to a bucket may take, body included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connecting to a bucket's server may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// An object's size and entity tag, as the store reports them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// The tree path.
    pub path: String,
    pub size: u64,
    /// The store's entity tag; `None` from a folder.
    pub etag: Option<String>,
}

/// Why a store could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    #[error("`{0}` is not a path of the tree")]
    BadPath(String),
    #[error("`{url}` is not a storage URL: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("I/O error on {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the bucket {store} failed on `{path}`")]
    Bucket {
        store: String,
        path: String,
        #[source]
        source: object_store::Error,
    },
}

/// A registry's storage.
#[derive(Clone, Debug)]
pub enum Storage {
    /// A folder: the `public/` of a data folder.
    Folder(PathBuf),
    /// An S3-compatible bucket, under a prefix.
    Bucket(Bucket),
}

/// An S3-compatible bucket, under a prefix.
#[derive(Clone, Debug)]
pub struct Bucket {
    store: Arc<AmazonS3>,
    /// The prefix, without slashes at its ends; empty for the whole bucket.
    prefix: String,
    /// `s3://bucket/prefix`, for messages.
    url: String,
}

/// Checks that `path` is a tree path.
fn check(path: &str) -> Result<(), StorageError> {
    let valid = !path.is_empty()
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != ".." && !part.contains('\\'));
    if valid {
        Ok(())
    } else {
        Err(StorageError::BadPath(path.to_owned()))
    }
}

impl Storage {
    /// Opens the storage at `url`: `s3://BUCKET[/PREFIX]`, configured by
    /// the usual AWS variables (`AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, and `AWS_ENDPOINT_URL` with
    /// `AWS_ALLOW_HTTP=true` for a server of one's own).
    pub fn from_url(url: &str) -> Result<Self, StorageError> {
        Self::from_url_with(url, [])
    }

    /// [`Storage::from_url`], with settings that override the environment's:
    /// `object_store`'s S3 keys (`aws_endpoint`, `aws_region`,
    /// `aws_access_key_id`, `aws_secret_access_key`, `aws_allow_http`, ...).
    pub fn from_url_with<'a>(
        url: &str,
        settings: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<Self, StorageError> {
        let bad = |reason: &str| StorageError::BadUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| bad("use s3://BUCKET/PREFIX (or --root DIR for a folder)"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(bad("it names no bucket"));
        }
        let prefix = prefix.trim_matches('/').to_owned();
        if !prefix.is_empty() {
            check(&prefix).map_err(|_| bad("its prefix has an empty, `.` or `..` part"))?;
        }
        // The timeouts first: `from_env` would have its `AWS_ALLOW_HTTP`
        // (a client option) undone by setting the client's options after.
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(bucket)
            // `If-None-Match: *` for `put_new`, where the server honours it.
            .with_conditional_put(S3ConditionalPut::ETagMatch)
            // A store that is down fails a request within seconds, not the
            // three minutes of retries `object_store` would spend.
            .with_retry(RetryConfig {
                max_retries: MAX_RETRIES,
                retry_timeout: RETRY_TIMEOUT,
                ..RetryConfig::default()
            })
            .with_client_options(
                ClientOptions::new()
                    .with_timeout(REQUEST_TIMEOUT)
                    .with_connect_timeout(CONNECT_TIMEOUT),
            );
        for (key, value) in std::env::vars() {
            if key.starts_with("AWS_")
                && let Ok(key) = key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>()
            {
                builder = builder.with_config(key, value);
            }
        }
        for (key, value) in settings {
            let key: AmazonS3ConfigKey = key
                .parse()
                .map_err(|_| bad(&format!("`{key}` is not an S3 setting")))?;
            builder = builder.with_config(key, value);
        }
        let store = builder.build().map_err(|error| bad(&error.to_string()))?;
        Ok(Self::Bucket(Bucket {
            store: Arc::new(store),
            prefix,
            url: format!("s3://{}", rest.trim_end_matches('/')),
        }))
    }

    /// The static tree in this storage.
    pub fn tree(&self) -> StaticTree {
        match self {
            Self::Folder(root) => StaticTree::new(root),
            Self::Bucket(bucket) => StaticTree::in_objects(Arc::new(bucket.clone())),
        }
    }

    /// The folder of a folder storage.
    pub fn folder(&self) -> Option<&Path> {
        match self {
            Self::Folder(root) => Some(root),
            Self::Bucket(_) => None,
        }
    }

    /// Where the storage is, for messages: a folder or an `s3://` URL.
    pub fn describe(&self) -> String {
        match self {
            Self::Folder(root) => root.display().to_string(),
            Self::Bucket(bucket) => bucket.url.clone(),
        }
    }

    /// Reads the object at `path`; `None` when there is none.
    pub async fn get(&self, path: &str) -> Result<Option<Bytes>, StorageError> {
        check(path)?;
        match self {
            Self::Folder(root) => read_folder_file(&root.join(path)).await,
            Self::Bucket(_) => Ok(self.get_tagged(path).await?.map(|(bytes, _)| bytes)),
        }
    }

    /// Reads the object at `path` with its entity tag (`None` from a
    /// folder); `None` when there is none.
    pub async fn get_tagged(
        &self,
        path: &str,
    ) -> Result<Option<(Bytes, Option<String>)>, StorageError> {
        check(path)?;
        match self {
            Self::Folder(root) => Ok(read_folder_file(&root.join(path))
                .await?
                .map(|bytes| (bytes, None))),
            Self::Bucket(bucket) => {
                let location = bucket.location(path);
                let result = match bucket.store.get(&location).await {
                    Ok(result) => {
                        let etag = result.meta.e_tag.clone();
                        result.bytes().await.map(|bytes| (bytes, etag))
                    }
                    Err(error) => Err(error),
                };
                match result {
                    Ok(found) => Ok(Some(found)),
                    Err(object_store::Error::NotFound { .. }) => Ok(None),
                    Err(source) => Err(bucket.error(path, source)),
                }
            }
        }
    }

    /// The size and entity tag of the object at `path`; `None` when there
    /// is none.
    pub async fn head(&self, path: &str) -> Result<Option<Meta>, StorageError> {
        check(path)?;
        match self {
            Self::Folder(root) => {
                let file = root.join(path);
                match tokio::fs::metadata(&file).await {
                    Ok(metadata) if metadata.is_file() => Ok(Some(Meta {
                        path: path.to_owned(),
                        size: metadata.len(),
                        etag: None,
                    })),
                    Ok(_) => Ok(None),
                    Err(error) if missing(&error) => Ok(None),
                    Err(source) => Err(StorageError::Io { path: file, source }),
                }
            }
            Self::Bucket(bucket) => match bucket.store.head(&bucket.location(path)).await {
                Ok(meta) => Ok(Some(Meta {
                    path: path.to_owned(),
                    size: meta.size,
                    etag: meta.e_tag,
                })),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(source) => Err(bucket.error(path, source)),
            },
        }
    }

    /// Writes `bytes` at `path`, replacing the object there whole.
    pub async fn put(&self, path: &str, bytes: Bytes) -> Result<(), StorageError> {
        check(path)?;
        match self {
            Self::Folder(root) => {
                let file = root.join(path);
                blocking(move || write_file(&file, &bytes, false).map(|_| ())).await
            }
            Self::Bucket(bucket) => bucket
                .store
                .put(&bucket.location(path), PutPayload::from_bytes(bytes))
                .await
                .map(|_| ())
                .map_err(|source| bucket.error(path, source)),
        }
    }

    /// Writes `bytes` at `path` only if there is no object there; returns
    /// false, writing nothing, when the store says there is one. A bucket
    /// that ignores `If-None-Match` returns true and overwrites.
    pub async fn put_new(&self, path: &str, bytes: Bytes) -> Result<bool, StorageError> {
        check(path)?;
        match self {
            Self::Folder(root) => {
                let file = root.join(path);
                blocking(move || write_file(&file, &bytes, true)).await
            }
            Self::Bucket(bucket) => {
                let options = PutOptions {
                    mode: PutMode::Create,
                    ..PutOptions::default()
                };
                match bucket
                    .store
                    .put_opts(
                        &bucket.location(path),
                        PutPayload::from_bytes(bytes),
                        options,
                    )
                    .await
                {
                    Ok(_) => Ok(true),
                    Err(object_store::Error::AlreadyExists { .. }) => Ok(false),
                    Err(source) => Err(bucket.error(path, source)),
                }
            }
        }
    }

    /// Deletes the object at `path`; none there is no error.
    pub async fn delete(&self, path: &str) -> Result<(), StorageError> {
        check(path)?;
        match self {
            Self::Folder(root) => {
                let file = root.join(path);
                match tokio::fs::remove_file(&file).await {
                    Ok(()) => Ok(()),
                    Err(error) if missing(&error) => Ok(()),
                    Err(source) => Err(StorageError::Io { path: file, source }),
                }
            }
            Self::Bucket(bucket) => match bucket.store.delete(&bucket.location(path)).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(source) => Err(bucket.error(path, source)),
            },
        }
    }

    /// Lists the objects below `prefix` (a folder of the tree, `""` for
    /// all), sorted by path. A folder's temporary files (names starting
    /// with `.`) are not listed.
    pub async fn list(&self, prefix: &str) -> Result<Vec<Meta>, StorageError> {
        if !prefix.is_empty() {
            check(prefix)?;
        }
        let mut found = match self {
            Self::Folder(root) => {
                let root = root.clone();
                let prefix = prefix.to_owned();
                blocking(move || list_folder(&root, &prefix)).await?
            }
            Self::Bucket(bucket) => {
                let location = (!(bucket.prefix.is_empty() && prefix.is_empty()))
                    .then(|| bucket.location(prefix));
                let mut stream = bucket.store.list(location.as_ref());
                let mut found = Vec::new();
                while let Some(meta) = stream.next().await {
                    let meta = meta.map_err(|source| bucket.error(prefix, source))?;
                    let Some(path) = bucket.tree_path(meta.location.as_ref()) else {
                        continue;
                    };
                    found.push(Meta {
                        path,
                        size: meta.size,
                        etag: meta.e_tag,
                    });
                }
                found
            }
        };
        found.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(found)
    }
}

/// A bucket as the store of a [`StaticTree`](skillpkg_index::registry::tree::StaticTree),
/// whose calls block: each runs on the caller's runtime in place of its
/// async thread (`block_in_place`), so the tree's code is the same for a
/// folder and a bucket. The caller is on a multi-threaded runtime, or on a
/// thread that entered one (`Runtime::enter`).
impl skillpkg_index::registry::tree::Objects for Bucket {
    fn location(&self) -> &str {
        &self.url
    }

    fn get(&self, path: &str) -> std::io::Result<Option<Vec<u8>>> {
        let storage = Storage::Bucket(self.clone());
        wait(async { storage.get(path).await.map(|bytes| bytes.map(Vec::from)) })
    }

    fn put(&self, path: &str, bytes: &[u8]) -> std::io::Result<()> {
        let storage = Storage::Bucket(self.clone());
        wait(storage.put(path, Bytes::copy_from_slice(bytes)))
    }

    fn put_new(&self, path: &str, bytes: &[u8]) -> std::io::Result<bool> {
        let storage = Storage::Bucket(self.clone());
        wait(storage.put_new(path, Bytes::copy_from_slice(bytes)))
    }

    fn exists(&self, path: &str) -> std::io::Result<bool> {
        let storage = Storage::Bucket(self.clone());
        wait(async { storage.head(path).await.map(|meta| meta.is_some()) })
    }

    fn list(&self, prefix: &str) -> std::io::Result<Vec<String>> {
        let storage = Storage::Bucket(self.clone());
        wait(async {
            let found = storage.list(prefix).await?;
            Ok(found.into_iter().map(|meta| meta.path).collect())
        })
    }

    fn delete(&self, path: &str) -> std::io::Result<()> {
        let storage = Storage::Bucket(self.clone());
        wait(storage.delete(path))
    }
}

/// Runs `work` to its end from blocking code, on the current runtime.
fn wait<T>(work: impl Future<Output = Result<T, StorageError>>) -> std::io::Result<T> {
    let handle = tokio::runtime::Handle::try_current()
        .map_err(|_| std::io::Error::other("a bucket is used outside the async runtime (a bug)"))?;
    tokio::task::block_in_place(|| handle.block_on(work)).map_err(|error| {
        // The tree's error names the object; this says what the store
        // answered, with every cause (an I/O error keeps only a message).
        std::io::Error::other(match error {
            StorageError::Bucket { source, .. } => crate::report::error_chain(&source),
            other => crate::report::error_chain(&other),
        })
    })
}

impl Bucket {
    fn location(&self, path: &str) -> object_store::path::Path {
        if self.prefix.is_empty() {
            object_store::path::Path::from(path)
        } else {
            object_store::path::Path::from(format!("{}/{path}", self.prefix))
        }
    }

    /// The tree path of the object at `location`, if it is below the prefix.
    fn tree_path(&self, location: &str) -> Option<String> {
        if self.prefix.is_empty() {
            return Some(location.to_owned());
        }
        location
            .strip_prefix(&self.prefix)?
            .strip_prefix('/')
            .map(str::to_owned)
    }

    fn error(&self, path: &str, source: object_store::Error) -> StorageError {
        StorageError::Bucket {
            store: self.url.clone(),
            path: path.to_owned(),
            source,
        }
    }
}

/// Reads `file`; `None` when there is none.
async fn read_folder_file(file: &Path) -> Result<Option<Bytes>, StorageError> {
    match tokio::fs::read(file).await {
        Ok(bytes) => Ok(Some(Bytes::from(bytes))),
        Err(error) if missing(&error) => Ok(None),
        Err(source) => Err(StorageError::Io {
            path: file.to_owned(),
            source,
        }),
    }
}

fn missing(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

/// Runs folder I/O off the async threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StorageError> + Send + 'static,
) -> Result<T, StorageError> {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| {
            Err(StorageError::Io {
                path: PathBuf::new(),
                source: std::io::Error::other(error.to_string()),
            })
        })
}

/// Writes `file` atomically and durably (a synced temporary file renamed
/// into place, the folder synced); with `new`, only if it does not exist:
/// returns false, writing nothing, when it does.
fn write_file(file: &Path, bytes: &[u8], new: bool) -> Result<bool, StorageError> {
    let mut options = WriteOptions::default().create_parents();
    if new {
        options = options.no_clobber();
    }
    match write_atomic_with(file, bytes, &options) {
        Ok(()) => Ok(true),
        Err(error) if new && error.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
        Err(error) => Err(StorageError::Io {
            path: file.to_owned(),
            source: std::io::Error::new(error.kind(), error.to_string()),
        }),
    }
}

/// Lists the files below `root/prefix`, as tree paths; names starting with
/// `.` (temporary files, and what is never served) are skipped.
fn list_folder(root: &Path, prefix: &str) -> Result<Vec<Meta>, StorageError> {
    let mut found = Vec::new();
    let mut pending = vec![if prefix.is_empty() {
        root.to_owned()
    } else {
        root.join(prefix)
    }];
    while let Some(dir) = pending.pop() {
        let entries = match fs_err::read_dir(&dir) {
            Ok(entries) => entries,
            Err(error) if missing(&error) => continue,
            Err(source) => return Err(StorageError::Io { path: dir, source }),
        };
        for entry in entries {
            let entry = entry.map_err(|source| StorageError::Io {
                path: dir.clone(),
                source,
            })?;
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let path = entry.path();
            let kind = entry.file_type().map_err(|source| StorageError::Io {
                path: path.clone(),
                source,
            })?;
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                let size = entry
                    .metadata()
                    .map_err(|source| StorageError::Io {
                        path: path.clone(),
                        source,
                    })?
                    .len();
                let relative = path
                    .strip_prefix(root)
                    .expect("below the root")
                    .to_string_lossy()
                    .replace(std::path::MAIN_SEPARATOR, "/");
                found.push(Meta {
                    path: relative,
                    size,
                    etag: None,
                });
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_folder_stores_replaces_creates_once_and_lists() {
        let temp = tempfile::tempdir().unwrap();
        let storage = Storage::Folder(temp.path().to_owned());
        assert_eq!(storage.get("index/3/p/pdf").await.unwrap(), None);
        storage
            .put("index/3/p/pdf", Bytes::from_static(b"one\n"))
            .await
            .unwrap();
        storage
            .put("index/3/p/pdf", Bytes::from_static(b"two\n"))
            .await
            .unwrap();
        assert_eq!(
            storage.get("index/3/p/pdf").await.unwrap().as_deref(),
            Some(&b"two\n"[..])
        );
        assert!(
            storage
                .put_new("dl/pdf/1.0.0/a.tgz", Bytes::from_static(b"first"))
                .await
                .unwrap()
        );
        assert!(
            !storage
                .put_new("dl/pdf/1.0.0/a.tgz", Bytes::from_static(b"second"))
                .await
                .unwrap()
        );
        assert_eq!(
            storage.get("dl/pdf/1.0.0/a.tgz").await.unwrap().as_deref(),
            Some(&b"first"[..]),
            "the first write stays"
        );
        fs_err::write(temp.path().join("dl/pdf/.skillpkg-tmp-x"), "junk").unwrap();
        let listed: Vec<String> = storage
            .list("")
            .await
            .unwrap()
            .into_iter()
            .map(|meta| meta.path)
            .collect();
        assert_eq!(listed, ["dl/pdf/1.0.0/a.tgz", "index/3/p/pdf"]);
        assert_eq!(storage.list("dl").await.unwrap().len(), 1);
        assert_eq!(storage.list("keys").await.unwrap(), []);
        assert_eq!(
            storage.head("index/3/p/pdf").await.unwrap().map(|m| m.size),
            Some(4)
        );
        storage.delete("index/3/p/pdf").await.unwrap();
        storage.delete("index/3/p/pdf").await.unwrap();
        assert_eq!(storage.head("index/3/p/pdf").await.unwrap(), None);
    }

    #[tokio::test]
    async fn paths_outside_the_tree_are_refused_before_any_io() {
        let temp = tempfile::tempdir().unwrap();
        let storage = Storage::Folder(temp.path().join("public"));
        for path in [
            "",
            "/etc/passwd",
            "../state/registry.db",
            "dl//x",
            "a/./b",
            "a\\..\\b",
        ] {
            assert!(
                matches!(
                    storage.put(path, Bytes::new()).await,
                    Err(StorageError::BadPath(_))
                ),
                "{path:?}"
            );
            assert!(matches!(
                storage.get(path).await,
                Err(StorageError::BadPath(_))
            ));
        }
        assert!(!temp.path().join("public").exists(), "nothing was written");
    }

    #[test]
    fn bucket_urls_are_checked() {
        for url in [
            "/srv/skills",
            "s3://",
            "s3:///prefix",
            "s3://b/../x",
            "gs://b",
        ] {
            assert!(
                matches!(Storage::from_url(url), Err(StorageError::BadUrl { .. })),
                "{url}"
            );
        }
        let Ok(Storage::Bucket(bucket)) = Storage::from_url("s3://skills/prod/") else {
            panic!("a bucket URL");
        };
        assert_eq!(bucket.prefix, "prod");
        assert_eq!(bucket.url, "s3://skills/prod");
        assert_eq!(bucket.location("index/1/a").as_ref(), "prod/index/1/a");
        assert_eq!(
            bucket.tree_path("prod/index/1/a").as_deref(),
            Some("index/1/a")
        );
        assert_eq!(bucket.tree_path("production/x"), None);
    }
}
