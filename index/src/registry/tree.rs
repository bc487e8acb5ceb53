//! Reading and writing a static tree: in a folder, or in any store of
//! whole objects ([`Objects`]: an S3-compatible bucket, for the registry).
//!
//! In a folder every file is replaced by writing a temporary file
//! (`.skillpkg-tmp-*`) in the same folder, syncing it, and renaming it over
//! the target, so a reader (a static server, a CDN origin pull, a `file://`
//! client) sees the old file or the new one, never a part. A store of
//! objects gives the same by replacing objects whole.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use std::collections::BTreeMap;

use super::{
    AllRecords, CONFIG_PATH, DISCOVERY_PATH, DiscoveryIndex, IndexError, IndexRecord, KeysFile,
    RegistryConfig, SEARCH_PATH, SEARCH_SHARDS_DIR, SEARCH_VERSION, SKILLS_PER_SHARD, SearchEntry,
    SearchIndex, SearchShards, ShardCount, archive_path, index_file_path, keys_path,
    parse_index_file, provenance_path, render_index_file, render_json, signature_path,
};
use crate::fs::{WriteError, WriteOptions};
use crate::skill::SkillName;

/// The prefix of temporary files; never a served path.
pub use crate::fs::TEMP_PREFIX;

/// Why the tree could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    #[error("I/O error on {}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error("{} is not valid JSON", path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("{} already exists: a published version is never replaced", path.display())]
    Exists { path: PathBuf },
    #[error("{} is not a valid keys file", path.display())]
    Keys {
        path: PathBuf,
        #[source]
        source: super::KeysFileError,
    },
}

impl From<WriteError> for TreeError {
    fn from(error: WriteError) -> Self {
        TreeError::Io {
            path: error.path,
            source: error.source,
        }
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> TreeError + '_ {
    move |source| TreeError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The files of one published version: the archive and what vouches for it.
#[derive(Clone, Copy, Debug)]
pub struct VersionFiles<'a> {
    /// The `.tgz`.
    pub tarball: &'a [u8],
    /// The `.minisig`, when the version is signed.
    pub signature: Option<&'a [u8]>,
    /// The `.intoto.jsonl`, when provenance was sent.
    pub provenance: Option<&'a [u8]>,
}

/// A store of whole objects a tree can live in: each path's bytes are
/// read and replaced whole, never in part. Paths are the tree's, relative
/// and `/`-separated (`index/3/p/pdf`).
///
/// Its methods block: a store over the network runs them on its own
/// runtime, or on the caller's, in place of its async thread.
pub trait Objects: std::fmt::Debug + Send + Sync {
    /// Where the objects are, for messages (`s3://bucket/prefix`).
    fn location(&self) -> &str;
    /// The bytes at `path`; `None` when there is no object there.
    fn get(&self, path: &str) -> std::io::Result<Option<Vec<u8>>>;
    /// Replaces the object at `path` whole.
    fn put(&self, path: &str, bytes: &[u8]) -> std::io::Result<()>;
    /// Creates the object at `path` unless the store says there is one
    /// (then returns false, writing nothing). A store that cannot tell
    /// creates it: the caller decides who writes a path.
    fn put_new(&self, path: &str, bytes: &[u8]) -> std::io::Result<bool>;
    /// Whether there is an object at `path`.
    fn exists(&self, path: &str) -> std::io::Result<bool>;
    /// The paths of every object below the folder `prefix`, sorted.
    fn list(&self, prefix: &str) -> std::io::Result<Vec<String>>;
    /// Deletes the object at `path`; none there is no error.
    fn delete(&self, path: &str) -> std::io::Result<()>;
}

/// Where a tree lives.
#[derive(Clone, Debug)]
enum Backend {
    Folder,
    Objects(Arc<dyn Objects>),
}

/// How many times any tree of this process wrote or removed a file: a
/// server that keeps files it served in memory knows them current while
/// this has not moved ([`changes`]).
static CHANGES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts a change of a tree's files when it starts and again when it is
/// done (the guard is dropped): a reader that took the count before it
/// ends, and so may have read the old file, finds the count moved.
#[must_use]
struct Changing;

fn changing() -> Changing {
    CHANGES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    Changing
}

impl Drop for Changing {
    fn drop(&mut self) {
        CHANGES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// How many times a tree of this process wrote or removed a file so far.
pub fn changes() -> u64 {
    CHANGES.load(std::sync::atomic::Ordering::SeqCst)
}

/// A static tree, rooted at a folder or in a store of objects.
#[derive(Clone, Debug)]
pub struct StaticTree {
    /// The folder; for a store of objects, its location, for messages.
    root: PathBuf,
    backend: Backend,
}

impl StaticTree {
    /// A tree at `root` (which need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            backend: Backend::Folder,
        }
    }

    /// A tree in the store `objects`.
    pub fn in_objects(objects: Arc<dyn Objects>) -> Self {
        Self {
            root: PathBuf::from(objects.location()),
            backend: Backend::Objects(objects),
        }
    }

    /// Returns the tree's root folder; for a tree in a store of objects,
    /// the store's location.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Returns the tree's folder, unless it lives in a store of objects.
    pub fn folder(&self) -> Option<&Path> {
        match self.backend {
            Backend::Folder => Some(&self.root),
            Backend::Objects(_) => None,
        }
    }

    fn path(&self, relative: &str) -> PathBuf {
        match self.backend {
            Backend::Folder => self.root.join(relative),
            Backend::Objects(_) => PathBuf::from(format!("{}/{relative}", self.root.display())),
        }
    }

    /// Reads the file at `relative`, or `None` when there is none.
    pub fn read_file(&self, relative: &str) -> Result<Option<Vec<u8>>, TreeError> {
        let result = match &self.backend {
            Backend::Folder => match fs_err::read(self.path(relative)) {
                Ok(bytes) => Ok(Some(bytes)),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(error) => Err(error),
            },
            Backend::Objects(objects) => objects.get(relative),
        };
        result.map_err(io_error(&self.path(relative)))
    }

    /// Replaces the file at `relative` (atomically).
    pub fn write_file(&self, relative: &str, bytes: &[u8]) -> Result<(), TreeError> {
        let _changing = changing();
        match &self.backend {
            Backend::Folder => write_atomically(&self.path(relative), bytes),
            Backend::Objects(objects) => objects
                .put(relative, bytes)
                .map_err(io_error(&self.path(relative))),
        }
    }

    /// Creates the file at `relative` with the modification time
    /// `modified` (a folder's; a store keeps its own), refusing to
    /// replace one.
    fn write_new_file(
        &self,
        relative: &str,
        bytes: &[u8],
        modified: std::time::SystemTime,
    ) -> Result<(), TreeError> {
        let _changing = changing();
        match &self.backend {
            Backend::Folder => write_new(&self.path(relative), bytes, modified),
            Backend::Objects(objects) => {
                let path = self.path(relative);
                if objects.put_new(relative, bytes).map_err(io_error(&path))? {
                    Ok(())
                } else {
                    Err(TreeError::Exists { path })
                }
            }
        }
    }

    /// Returns true if and only if there is a file at `relative`.
    pub fn exists(&self, relative: &str) -> Result<bool, TreeError> {
        match &self.backend {
            Backend::Folder => Ok(self.path(relative).exists()),
            Backend::Objects(objects) => objects
                .exists(relative)
                .map_err(io_error(&self.path(relative))),
        }
    }

    /// The paths of the files below the folder `prefix`, sorted; names
    /// starting with `.` (temporary files) are skipped.
    pub fn list(&self, prefix: &str) -> Result<Vec<String>, TreeError> {
        match &self.backend {
            Backend::Folder => {
                let mut found = Vec::new();
                list_folder(&self.path(prefix), prefix, &mut found)?;
                found.sort();
                Ok(found)
            }
            Backend::Objects(objects) => {
                let mut found = objects.list(prefix).map_err(io_error(&self.path(prefix)))?;
                found.retain(|path| !path.split('/').any(|part| part.starts_with('.')));
                Ok(found)
            }
        }
    }

    /// Reads `config.json`, or `None` when there is none.
    pub fn read_config(&self) -> Result<Option<RegistryConfig>, TreeError> {
        let Some(bytes) = self.read_file(CONFIG_PATH)? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|source| TreeError::Json {
                path: self.path(CONFIG_PATH),
                source,
            })
    }

    /// Writes `config.json`.
    pub fn write_config(&self, config: &RegistryConfig) -> Result<(), TreeError> {
        self.write_file(CONFIG_PATH, &render_json(config))
    }

    /// Reads the index file of `name`; a skill never published has none.
    pub fn read_index(&self, name: &SkillName) -> Result<Vec<IndexRecord>, TreeError> {
        let relative = index_file_path(name);
        match self.read_file(&relative)? {
            Some(bytes) => {
                let text = String::from_utf8(bytes).map_err(|error| TreeError::Io {
                    path: self.path(&relative),
                    source: std::io::Error::new(std::io::ErrorKind::InvalidData, error),
                })?;
                Ok(parse_index_file(name, &text)?)
            }
            None => Ok(Vec::new()),
        }
    }

    /// Replaces the index file of `name` with `records`.
    pub fn write_index(&self, name: &SkillName, records: &[IndexRecord]) -> Result<(), TreeError> {
        self.write_file(
            &index_file_path(name),
            render_index_file(records).as_bytes(),
        )
    }

    /// Reads every index file of the tree.
    pub fn read_all(&self) -> Result<AllRecords, TreeError> {
        let mut all = AllRecords::new();
        for path in self.list("index")? {
            let file_name = path.rsplit('/').next().unwrap_or_default();
            if let Ok(name) = file_name.parse::<SkillName>() {
                let records = self.read_index(&name)?;
                if !records.is_empty() {
                    all.insert(name, records);
                }
            }
        }
        Ok(all)
    }

    /// Rewrites the search index (its shards, then `search.json`) and the
    /// discovery index from `all`.
    pub fn write_aggregates(
        &self,
        all: &AllRecords,
        config: &RegistryConfig,
        base_url: Option<&str>,
    ) -> Result<(), TreeError> {
        self.write_aggregates_counted(all, config, base_url, &BTreeMap::new())
    }

    /// Rewrites the search index, with the download counts `downloads`,
    /// and the discovery index from `all`.
    pub fn write_aggregates_counted(
        &self,
        all: &AllRecords,
        config: &RegistryConfig,
        base_url: Option<&str>,
        downloads: &BTreeMap<SkillName, u64>,
    ) -> Result<(), TreeError> {
        let search = SearchIndex::build(all).with_downloads(downloads);
        let shards = ShardCount::for_skills(search.skills.len(), SKILLS_PER_SHARD);
        self.write_search(shards, search.skills)?;
        self.write_file(
            DISCOVERY_PATH,
            &render_json(&DiscoveryIndex::build(all, config, base_url)),
        )
    }

    /// Writes the search index of `entries` (every skill, by name) in
    /// `shards` shards: every shard, then `search.json`, which names them,
    /// so a reader never finds a shard missing.
    pub fn write_search(
        &self,
        shards: ShardCount,
        entries: Vec<SearchEntry>,
    ) -> Result<(), TreeError> {
        for (path, shard) in shards.split(entries) {
            self.write_file(&path, &render_json(&shard))?;
        }
        self.write_search_root(shards)
    }

    /// Removes the shards of the search index at `shards` shards: those of
    /// a count `search.json` no longer names (the counts' paths differ).
    pub fn remove_search_shards(&self, shards: ShardCount) -> Result<(), TreeError> {
        for path in shards.paths() {
            self.remove_file(&path)?;
        }
        Ok(())
    }

    /// Writes `search.json`: that the search index has `shards` shards.
    pub fn write_search_root(&self, shards: ShardCount) -> Result<(), TreeError> {
        self.write_file(
            SEARCH_PATH,
            &render_json(&SearchShards {
                v: SEARCH_VERSION,
                shards,
            }),
        )
    }

    /// Writes an archive and its signature, both with the modification time
    /// `published` (which `skillpkg-registry build` reads back). Refuses to
    /// replace either: a published version is immutable.
    pub fn write_archive(
        &self,
        name: &SkillName,
        version: &semver::Version,
        tarball: &[u8],
        signature: Option<&[u8]>,
        published: jiff::Timestamp,
    ) -> Result<(), TreeError> {
        let files = VersionFiles {
            tarball,
            signature,
            provenance: None,
        };
        self.write_version(name, version, &files, published)
    }

    /// Writes an archive with its signature and provenance, each with the
    /// modification time `published` (which `skillpkg-registry build` reads
    /// back). Refuses to replace any of them: a published version is
    /// immutable.
    pub fn write_version(
        &self,
        name: &SkillName,
        version: &semver::Version,
        files: &VersionFiles<'_>,
        published: jiff::Timestamp,
    ) -> Result<(), TreeError> {
        let modified = std::time::SystemTime::from(published);
        let archive = archive_path(name, version);
        let signature_file = signature_path(name, version);
        let provenance_file = provenance_path(name, version);
        for path in [&archive, &signature_file, &provenance_file] {
            if self.exists(path)? {
                return Err(TreeError::Exists {
                    path: self.path(path),
                });
            }
        }
        // The archive last: a visible archive always has its signature and
        // provenance.
        if let Some(signature) = files.signature {
            self.write_new_file(&signature_file, signature, modified)?;
        }
        if let Some(provenance) = files.provenance {
            self.write_new_file(&provenance_file, provenance, modified)?;
        }
        self.write_new_file(&archive, files.tarball, modified)
    }

    /// Writes an archive with its signature and provenance as
    /// [`StaticTree::write_version`] does, replacing any there: for a
    /// writer that another authority (the registry's database) made the
    /// only one of this version, and which may find the files of an
    /// earlier attempt that died.
    pub fn replace_version(
        &self,
        name: &SkillName,
        version: &semver::Version,
        files: &VersionFiles<'_>,
        published: jiff::Timestamp,
    ) -> Result<(), TreeError> {
        let modified = std::time::SystemTime::from(published);
        let write = |relative: &str, bytes: &[u8]| match &self.backend {
            Backend::Folder => {
                let options = WriteOptions::default().create_parents().modified(modified);
                crate::fs::write_atomic_with(&self.path(relative), bytes, &options)
                    .map_err(TreeError::from)
            }
            Backend::Objects(_) => self.write_file(relative, bytes),
        };
        // As a new version: the archive last.
        for (relative, bytes) in [
            (signature_path(name, version), files.signature),
            (provenance_path(name, version), files.provenance),
        ] {
            match bytes {
                Some(bytes) => write(&relative, bytes)?,
                None => self.remove_file(&relative)?,
            }
        }
        write(&archive_path(name, version), files.tarball)
    }

    /// Removes the files of `name@version` (a publish that never
    /// completed); none there is no error.
    pub fn remove_version(
        &self,
        name: &SkillName,
        version: &semver::Version,
    ) -> Result<(), TreeError> {
        let _changing = changing();
        // The archive first: a signature without its archive is never
        // taken for a version.
        for relative in [
            archive_path(name, version),
            signature_path(name, version),
            provenance_path(name, version),
        ] {
            self.remove_file(&relative)?;
        }
        if let Backend::Folder = self.backend {
            // And its folder, with whatever else a crash left in it.
            let folder = self.path(&format!("dl/{name}/{version}"));
            match fs_err::remove_dir_all(&folder) {
                Ok(()) => {}
                Err(error) if nothing_there(&error) => {}
                Err(source) => {
                    return Err(TreeError::Io {
                        path: folder,
                        source,
                    });
                }
            }
        }
        Ok(())
    }

    /// Removes the file at `relative`; none there is no error.
    pub fn remove_file(&self, relative: &str) -> Result<(), TreeError> {
        let _changing = changing();
        let path = self.path(relative);
        match &self.backend {
            Backend::Folder => match fs_err::remove_file(&path) {
                Ok(()) => Ok(()),
                Err(error) if nothing_there(&error) => Ok(()),
                Err(source) => Err(TreeError::Io { path, source }),
            },
            Backend::Objects(objects) => objects.delete(relative).map_err(io_error(&path)),
        }
    }

    /// Reads `keys/<name>.json`; a skill with no registered key has none,
    /// which reads as an empty list.
    pub fn read_keys(&self, name: &SkillName) -> Result<KeysFile, TreeError> {
        let relative = keys_path(name);
        match self.read_file(&relative)? {
            Some(bytes) => KeysFile::parse(&bytes).map_err(|source| TreeError::Keys {
                path: self.path(&relative),
                source,
            }),
            None => Ok(KeysFile::empty()),
        }
    }

    /// Replaces `keys/<name>.json`.
    pub fn write_keys(&self, name: &SkillName, keys: &KeysFile) -> Result<(), TreeError> {
        self.write_file(&keys_path(name), &render_json(keys))
    }

    /// Reads every `keys/<name>.json` of the tree. Files whose name is not a
    /// skill name's are not part of the format and are skipped.
    pub fn read_all_keys(&self) -> Result<BTreeMap<SkillName, KeysFile>, TreeError> {
        let mut all = BTreeMap::new();
        for path in self.list("keys")? {
            let Some(name) = path
                .strip_prefix("keys/")
                .and_then(|file_name| file_name.strip_suffix(".json"))
                .and_then(|stem| stem.parse::<SkillName>().ok())
            else {
                continue;
            };
            let keys = self.read_keys(&name)?;
            all.insert(name, keys);
        }
        Ok(all)
    }

    /// Returns the sha256 of every file the signed snapshot lists
    /// ([`super::metadata::in_snapshot`]: index files, keys files, the
    /// search index), by path relative to the root. Temporary files are
    /// not part of the tree and are skipped.
    pub fn snapshot_files(&self) -> Result<BTreeMap<String, crate::checksum::Checksum>, TreeError> {
        let mut files = BTreeMap::new();
        let listed = self.list("index")?.into_iter().chain(self.list("keys")?);
        for path in listed.chain(self.list(SEARCH_SHARDS_DIR)?) {
            // Listed, then gone: replaced between the two calls in a store
            // that replaces by delete and create; never by this tree.
            if let Some(bytes) = self.read_file(&path)? {
                files.insert(path, crate::checksum::Checksum::of(&bytes));
            }
        }
        if let Some(bytes) = self.read_file(SEARCH_PATH)? {
            files.insert(
                SEARCH_PATH.to_owned(),
                crate::checksum::Checksum::of(&bytes),
            );
        }
        Ok(files)
    }

    /// Returns true if and only if the archive of `name@version` exists.
    pub fn has_archive(
        &self,
        name: &SkillName,
        version: &semver::Version,
    ) -> Result<bool, TreeError> {
        self.exists(&archive_path(name, version))
    }

    /// Removes what a crash can leave behind: temporary files, and archives
    /// (with their signatures and provenance) whose version no index file lists, which were
    /// never published. Returns the removed paths, relative to the root.
    pub fn recover(&self, all: &AllRecords) -> Result<Vec<String>, TreeError> {
        let _changing = changing();
        let mut removed = Vec::new();
        if let Backend::Folder = self.backend {
            self.remove_temporary_files(&mut removed)?;
        }
        // `dl/<name>/<version>/<file>`: every version folder no index line
        // lists.
        let mut unlisted: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for path in self.list("dl")? {
            let parts: Vec<&str> = path.split('/').collect();
            let (Some(name), Some(version)) = (parts.get(1), parts.get(2)) else {
                continue;
            };
            let Ok(name) = name.parse::<SkillName>() else {
                continue;
            };
            let listed = version.parse::<semver::Version>().is_ok_and(|version| {
                all.get(&name)
                    .is_some_and(|records| records.iter().any(|record| record.vers == version))
            });
            if !listed {
                unlisted
                    .entry(format!("dl/{name}/{version}"))
                    .or_default()
                    .push(path);
            }
        }
        for (folder, files) in unlisted {
            match &self.backend {
                Backend::Folder => {
                    let path = self.path(&folder);
                    fs_err::remove_dir_all(&path).map_err(io_error(&path))?;
                }
                Backend::Objects(objects) => {
                    for file in files {
                        objects.delete(&file).map_err(io_error(&self.path(&file)))?;
                    }
                }
            }
            removed.push(folder);
        }
        removed.sort();
        Ok(removed)
    }

    /// Removes the temporary files a crash left in the tree's folder.
    fn remove_temporary_files(&self, removed: &mut Vec<String>) -> Result<(), TreeError> {
        let mut pending = vec![self.root.clone()];
        while let Some(dir) = pending.pop() {
            let entries = match fs_err::read_dir(&dir) {
                Ok(entries) => entries,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => return Err(TreeError::Io { path: dir, source }),
            };
            for entry in entries {
                let entry = entry.map_err(io_error(&dir))?;
                let path = entry.path();
                let name = entry.file_name().to_string_lossy().into_owned();
                if entry.file_type().map_err(io_error(&path))?.is_dir() {
                    pending.push(path);
                } else if name.starts_with(TEMP_PREFIX) {
                    fs_err::remove_file(&path).map_err(io_error(&path))?;
                    removed.push(self.relative(&path));
                }
            }
        }
        Ok(())
    }

    fn relative(&self, path: &Path) -> String {
        path.strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/")
    }
}

/// Replaces `path` with `bytes` atomically and durably (0644, synced).
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), TreeError> {
    let _changing = changing();
    crate::fs::write_atomic_with(path, bytes, &WriteOptions::default().create_parents())?;
    Ok(())
}

/// Creates `path` with `bytes` and the modification time `modified`
/// atomically, failing if it exists.
fn write_new(path: &Path, bytes: &[u8], modified: std::time::SystemTime) -> Result<(), TreeError> {
    let options = WriteOptions::default()
        .create_parents()
        .no_clobber()
        .modified(modified);
    crate::fs::write_atomic_with(path, bytes, &options).map_err(|error| {
        if error.kind() == std::io::ErrorKind::AlreadyExists {
            TreeError::Exists {
                path: path.to_owned(),
            }
        } else {
            error.into()
        }
    })
}

/// Adds the paths of the files below the folder `dir` (the tree path
/// `relative`) to `found`; names starting with `.` are skipped.
fn list_folder(dir: &Path, relative: &str, found: &mut Vec<String>) -> Result<(), TreeError> {
    let entries = match fs_err::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(TreeError::Io {
                path: dir.to_owned(),
                source,
            });
        }
    };
    for entry in entries {
        let entry = entry.map_err(io_error(dir))?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let child = format!("{relative}/{name}");
        if entry.file_type().map_err(io_error(&path))?.is_dir() {
            list_folder(&path, &child, found)?;
        } else {
            found.push(child);
        }
    }
    Ok(())
}

/// Whether `error` says there is no such file (or no such folder on the
/// way to it).
fn nothing_there(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}
