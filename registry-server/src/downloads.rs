//! Download counts: how many times the registry's servers have sent an
//! archive of each skill, the `downloads` of the search index.
//!
//! A count is one `GET` of a `dl/<name>/<version>/<name>-<version>.tgz`
//! answered in full (200; not a `HEAD`, not a 304 revalidation). Counting
//! is a map increment in memory; every [`FLUSH_PERIOD`], after each change
//! of the index, and when the server stops, a server adds what it counted
//! to the totals in the database, which a search shard is written with,
//! so servers sharing a database share their counts, and a crash loses at
//! most that period's. Archives served by a CDN, nginx or any other
//! static host never reach the server and are not counted; a read-only
//! server (a mirror) counts nothing, since it writes nothing.
//!
//! A registry that kept its counts in `state/downloads.json` has them
//! added to the database once, at start; the file is then renamed
//! `downloads.json.imported`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use skillpkg_index::skill::SkillName;

use crate::db::{Db, DbError};

/// The file the counts were kept in before the database, in the state
/// folder.
const DOWNLOADS_FILE: &str = "downloads.json";

/// How often a running server adds its counts to the database.
pub const FLUSH_PERIOD: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Default, serde::Deserialize)]
struct DownloadsFile {
    #[serde(default)]
    downloads: BTreeMap<SkillName, u64>,
}

/// Why the counts could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum DownloadsError {
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{} is corrupt", path.display())]
    Corrupt {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(transparent)]
    Db(#[from] DbError),
}

/// The counts: everyone's totals as last read, and this server's since.
#[derive(Debug)]
pub struct Downloads {
    /// `None`: counting is off (a read-only server).
    db: Option<Db>,
    /// Counted here since the last flush.
    pending: Mutex<BTreeMap<SkillName, u64>>,
}

impl Downloads {
    /// The counts in `db`, after adding those of a `downloads.json` left
    /// in the state folder `state` by an earlier version.
    pub async fn open(state: &Path, db: &Db) -> Result<Self, DownloadsError> {
        let path = state.join(DOWNLOADS_FILE);
        match fs_err::read(&path) {
            Ok(bytes) => {
                let file: DownloadsFile =
                    serde_json::from_slice(&bytes).map_err(|source| DownloadsError::Corrupt {
                        path: path.clone(),
                        source,
                    })?;
                let counts = file
                    .downloads
                    .into_iter()
                    .map(|(name, count)| (name.to_string(), count))
                    .collect();
                db.import_downloads(&counts).await?;
                let mut imported = path.as_os_str().to_owned();
                imported.push(".imported");
                fs_err::rename(&path, PathBuf::from(imported))
                    .map_err(|source| DownloadsError::Read { path, source })?;
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(DownloadsError::Read { path, source }),
        }
        Ok(Self {
            db: Some(db.clone()),
            pending: Mutex::default(),
        })
    }

    /// Counts nothing and writes nothing.
    pub fn off() -> Self {
        Self {
            db: None,
            pending: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<SkillName, u64>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts one download of an archive of `name`.
    pub fn record(&self, name: &SkillName) {
        if self.db.is_none() {
            return;
        }
        let mut pending = self.lock();
        let count = pending.entry(name.clone()).or_insert(0);
        *count = count.saturating_add(1);
    }

    /// Adds what this server counted to the database's totals.
    pub async fn flush(&self) -> Result<(), DownloadsError> {
        let Some(db) = &self.db else {
            return Ok(());
        };
        let flushed = self.lock().clone();
        if flushed.is_empty() {
            return Ok(());
        }
        let by_name = flushed
            .iter()
            .map(|(name, count)| (name.to_string(), *count))
            .collect();
        db.add_downloads(&by_name).await?;
        // What was added leaves `pending`; what was counted meanwhile
        // stays for the next flush.
        let mut pending = self.lock();
        for (name, count) in flushed {
            if let Some(left) = pending.get_mut(&name) {
                *left = left.saturating_sub(count);
                if *left == 0 {
                    pending.remove(&name);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn counts_are_added_to_the_database_and_read_back_by_another_server() {
        let state = tempfile::tempdir().unwrap();
        let db = Db::in_memory().await.unwrap();
        let pdf: SkillName = "pdf".parse().unwrap();
        let one = Downloads::open(state.path(), &db).await.unwrap();
        let two = Downloads::open(state.path(), &db).await.unwrap();
        let total = || async { db.downloads().await.unwrap().get("pdf").copied() };
        one.record(&pdf);
        one.record(&pdf);
        two.record(&pdf);
        assert_eq!(total().await, None, "counted, not yet flushed");
        one.flush().await.unwrap();
        assert_eq!(total().await, Some(2));
        two.flush().await.unwrap();
        assert_eq!(total().await, Some(3), "both servers' counts");
        one.flush().await.unwrap();
        assert_eq!(total().await, Some(3), "a flush adds a count once");

        let off = Downloads::off();
        off.record(&pdf);
        off.flush().await.unwrap();
        assert_eq!(total().await, Some(3));
    }

    #[tokio::test]
    async fn a_counts_file_of_an_earlier_version_is_added_once() {
        let state = tempfile::tempdir().unwrap();
        let db = Db::in_memory().await.unwrap();
        fs_err::write(
            state.path().join(DOWNLOADS_FILE),
            "{\"v\":1,\"downloads\":{\"pdf\":7}}\n",
        )
        .unwrap();
        let pdf: SkillName = "pdf".parse().unwrap();
        Downloads::open(state.path(), &db).await.unwrap();
        assert_eq!(db.downloads().await.unwrap().get(pdf.as_str()), Some(&7));
        assert!(!state.path().join(DOWNLOADS_FILE).exists());
        assert!(state.path().join("downloads.json.imported").exists());
        // Put back by hand, it is not added twice.
        fs_err::write(
            state.path().join(DOWNLOADS_FILE),
            "{\"v\":1,\"downloads\":{\"pdf\":7}}\n",
        )
        .unwrap();
        Downloads::open(state.path(), &db).await.unwrap();
        assert_eq!(db.downloads().await.unwrap().get(pdf.as_str()), Some(&7));
    }

    #[tokio::test]
    async fn a_corrupt_counts_file_is_an_error_naming_it() {
        let state = tempfile::tempdir().unwrap();
        let db = Db::in_memory().await.unwrap();
        fs_err::write(state.path().join(DOWNLOADS_FILE), "{").unwrap();
        let error = Downloads::open(state.path(), &db).await.unwrap_err();
        assert!(error.to_string().contains(DOWNLOADS_FILE), "{error}");
    }
}
