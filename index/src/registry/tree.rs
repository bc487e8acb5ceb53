//! Reading and writing a static tree on disk.
//!
//! Every file is replaced by writing a temporary file (`.skillpkg-tmp-*`) in
//! the same folder, syncing it, and renaming it over the target, so a reader
//! (a static server, a CDN origin pull, a `file://` client) sees the old file
//! or the new one, never a part.

use std::path::{Path, PathBuf};

use std::collections::BTreeMap;

use super::{
    AllRecords, CONFIG_PATH, DISCOVERY_PATH, DiscoveryIndex, IndexError, IndexRecord, KeysFile,
    RegistryConfig, SEARCH_PATH, SearchIndex, archive_path, index_file_path, keys_path,
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

/// A static tree rooted at a folder.
#[derive(Clone, Debug)]
pub struct StaticTree {
    root: PathBuf,
}

impl StaticTree {
    /// A tree at `root` (which need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// Returns the tree's root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    /// Reads `config.json`, or `None` when there is none.
    pub fn read_config(&self) -> Result<Option<RegistryConfig>, TreeError> {
        let path = self.path(CONFIG_PATH);
        match fs_err::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|source| TreeError::Json { path, source }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(TreeError::Io { path, source }),
        }
    }

    /// Writes `config.json`.
    pub fn write_config(&self, config: &RegistryConfig) -> Result<(), TreeError> {
        write_atomically(&self.path(CONFIG_PATH), &render_json(config))
    }

    /// Reads the index file of `name`; a skill never published has none.
    pub fn read_index(&self, name: &SkillName) -> Result<Vec<IndexRecord>, TreeError> {
        let path = self.path(&index_file_path(name));
        match fs_err::read_to_string(&path) {
            Ok(text) => Ok(parse_index_file(name, &text)?),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(source) => Err(TreeError::Io { path, source }),
        }
    }

    /// Replaces the index file of `name` with `records`.
    pub fn write_index(&self, name: &SkillName, records: &[IndexRecord]) -> Result<(), TreeError> {
        write_atomically(
            &self.path(&index_file_path(name)),
            render_index_file(records).as_bytes(),
        )
    }

    /// Reads every index file of the tree.
    pub fn read_all(&self) -> Result<AllRecords, TreeError> {
        let mut all = AllRecords::new();
        let index = self.path("index");
        if !index.exists() {
            return Ok(all);
        }
        let mut pending = vec![index];
        while let Some(dir) = pending.pop() {
            for entry in fs_err::read_dir(&dir).map_err(io_error(&dir))? {
                let entry = entry.map_err(io_error(&dir))?;
                let file_name = entry.file_name();
                let Some(file_name) = file_name.to_str() else {
                    continue;
                };
                if file_name.starts_with('.') {
                    continue;
                }
                let path = entry.path();
                if entry.file_type().map_err(io_error(&path))?.is_dir() {
                    pending.push(path);
                } else if let Ok(name) = file_name.parse::<SkillName>() {
                    let records = self.read_index(&name)?;
                    if !records.is_empty() {
                        all.insert(name, records);
                    }
                }
            }
        }
        Ok(all)
    }

    /// Rewrites `search.json` and the discovery index from `all`.
    pub fn write_aggregates(
        &self,
        all: &AllRecords,
        config: &RegistryConfig,
        base_url: Option<&str>,
    ) -> Result<(), TreeError> {
        self.write_aggregates_counted(all, config, base_url, &BTreeMap::new())
    }

    /// Rewrites `search.json`, with the download counts `downloads`, and
    /// the discovery index from `all`.
    pub fn write_aggregates_counted(
        &self,
        all: &AllRecords,
        config: &RegistryConfig,
        base_url: Option<&str>,
        downloads: &BTreeMap<SkillName, u64>,
    ) -> Result<(), TreeError> {
        write_atomically(
            &self.path(SEARCH_PATH),
            &render_json(&SearchIndex::build(all).with_downloads(downloads)),
        )?;
        write_atomically(
            &self.path(DISCOVERY_PATH),
            &render_json(&DiscoveryIndex::build(all, config, base_url)),
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
        let archive = self.path(&archive_path(name, version));
        let signature_file = self.path(&signature_path(name, version));
        let provenance_file = self.path(&provenance_path(name, version));
        for path in [&archive, &signature_file, &provenance_file] {
            if path.exists() {
                return Err(TreeError::Exists { path: path.clone() });
            }
        }
        // The archive last: a visible archive always has its signature and
        // provenance.
        if let Some(signature) = files.signature {
            write_new(&signature_file, signature, modified)?;
        }
        if let Some(provenance) = files.provenance {
            write_new(&provenance_file, provenance, modified)?;
        }
        write_new(&archive, files.tarball, modified)
    }

    /// Reads `keys/<name>.json`; a skill with no registered key has none,
    /// which reads as an empty list.
    pub fn read_keys(&self, name: &SkillName) -> Result<KeysFile, TreeError> {
        let path = self.path(&keys_path(name));
        match fs_err::read(&path) {
            Ok(bytes) => KeysFile::parse(&bytes).map_err(|source| TreeError::Keys { path, source }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(KeysFile::empty()),
            Err(source) => Err(TreeError::Io { path, source }),
        }
    }

    /// Replaces `keys/<name>.json`.
    pub fn write_keys(&self, name: &SkillName, keys: &KeysFile) -> Result<(), TreeError> {
        write_atomically(&self.path(&keys_path(name)), &render_json(keys))
    }

    /// Reads every `keys/<name>.json` of the tree. Files whose name is not a
    /// skill name's are not part of the format and are skipped.
    pub fn read_all_keys(&self) -> Result<BTreeMap<SkillName, KeysFile>, TreeError> {
        let mut all = BTreeMap::new();
        let dir = self.path("keys");
        let entries = match fs_err::read_dir(&dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(all),
            Err(source) => return Err(TreeError::Io { path: dir, source }),
        };
        for entry in entries {
            let entry = entry.map_err(io_error(&dir))?;
            let Some(name) = entry
                .file_name()
                .to_str()
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

    /// Reads the file at `relative`, or `None` when there is none.
    pub fn read_file(&self, relative: &str) -> Result<Option<Vec<u8>>, TreeError> {
        let path = self.path(relative);
        match fs_err::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(TreeError::Io { path, source }),
        }
    }

    /// Replaces the file at `relative` (atomically).
    pub fn write_file(&self, relative: &str, bytes: &[u8]) -> Result<(), TreeError> {
        write_atomically(&self.path(relative), bytes)
    }

    /// Returns the sha256 of every file the signed snapshot lists
    /// ([`super::metadata::in_snapshot`]: index files, keys files,
    /// `search.json`), by path relative to the root. Temporary files are
    /// not part of the tree and are skipped.
    pub fn snapshot_files(&self) -> Result<BTreeMap<String, crate::checksum::Checksum>, TreeError> {
        fn visit(
            dir: &Path,
            relative: &str,
            files: &mut BTreeMap<String, crate::checksum::Checksum>,
        ) -> Result<(), TreeError> {
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
                if name.starts_with(TEMP_PREFIX) {
                    continue;
                }
                let path = entry.path();
                let child = format!("{relative}/{name}");
                if entry.file_type().map_err(io_error(&path))?.is_dir() {
                    visit(&path, &child, files)?;
                } else {
                    let bytes = fs_err::read(&path).map_err(io_error(&path))?;
                    files.insert(child, crate::checksum::Checksum::of(&bytes));
                }
            }
            Ok(())
        }
        let mut files = BTreeMap::new();
        visit(&self.path("index"), "index", &mut files)?;
        visit(&self.path("keys"), "keys", &mut files)?;
        if let Some(bytes) = self.read_file(SEARCH_PATH)? {
            files.insert(
                SEARCH_PATH.to_owned(),
                crate::checksum::Checksum::of(&bytes),
            );
        }
        Ok(files)
    }

    /// Returns true if and only if the archive of `name@version` exists.
    pub fn has_archive(&self, name: &SkillName, version: &semver::Version) -> bool {
        self.path(&archive_path(name, version)).exists()
    }

    /// Removes what a crash can leave behind: temporary files, and archives
    /// (with their signatures and provenance) whose version no index file lists, which were
    /// never published. Returns the removed paths, relative to the root.
    pub fn recover(&self, all: &AllRecords) -> Result<Vec<String>, TreeError> {
        let mut removed = Vec::new();
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
        let dl = self.path("dl");
        if dl.exists() {
            for skill_dir in fs_err::read_dir(&dl).map_err(io_error(&dl))? {
                let skill_dir = skill_dir.map_err(io_error(&dl))?.path();
                let Some(name) = skill_dir
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.parse::<SkillName>().ok())
                else {
                    continue;
                };
                for version_dir in fs_err::read_dir(&skill_dir).map_err(io_error(&skill_dir))? {
                    let version_dir = version_dir.map_err(io_error(&skill_dir))?.path();
                    let version = version_dir
                        .file_name()
                        .and_then(|v| v.to_str())
                        .and_then(|v| v.parse::<semver::Version>().ok());
                    let listed = version.is_some_and(|version| {
                        all.get(&name).is_some_and(|records| {
                            records.iter().any(|record| record.vers == version)
                        })
                    });
                    if !listed {
                        fs_err::remove_dir_all(&version_dir).map_err(io_error(&version_dir))?;
                        removed.push(self.relative(&version_dir));
                    }
                }
            }
        }
        removed.sort();
        Ok(removed)
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
