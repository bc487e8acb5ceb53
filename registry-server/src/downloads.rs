//! Download counts: how many times `serve` has sent an archive of each
//! skill, the popularity the confusable-name check at publish and the
//! `downloads` of `search.json` rest on.
//!
//! ```text
//! state/downloads.json   {"v":1,"downloads":{"pdf-processing":1234}}
//! ```
//!
//! A count is one `GET` of a `dl/<name>/<version>/<name>-<version>.tgz`
//! answered in full (200; not a `HEAD`, not a 304 revalidation). Counting
//! is a map increment in memory; the file is written when a publish or yank
//! rewrites `search.json`, every [`FLUSH_PERIOD`] when counts changed, and
//! when the server stops, so a crash loses at most that period's counts.
//! Archives served by a CDN, nginx or any other static host never reach
//! the server and are not counted; a read-only server (a mirror) counts
//! nothing, since it writes nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use skillpkg_index::fs::{WriteError, WriteOptions, write_atomic_with};
use skillpkg_index::skill::SkillName;

/// The file the counts are kept in, in the state folder.
const DOWNLOADS_FILE: &str = "downloads.json";

/// How often changed counts are written to disk by a running server.
pub const FLUSH_PERIOD: std::time::Duration = std::time::Duration::from_secs(30);

#[derive(Default, serde::Serialize, serde::Deserialize)]
struct DownloadsFile {
    v: u32,
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
    Write(#[from] WriteError),
}

/// The counts, in memory, and where they are kept.
#[derive(Debug)]
pub struct Downloads {
    /// `None`: counting is off (a read-only server).
    path: Option<PathBuf>,
    counts: Mutex<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    by_name: BTreeMap<SkillName, u64>,
    /// Whether they changed since they were last written.
    dirty: bool,
}

impl Downloads {
    /// Reads the counts kept in the state folder `state` (none yet when
    /// there is no file).
    pub fn open(state: &Path) -> Result<Self, DownloadsError> {
        let path = state.join(DOWNLOADS_FILE);
        let by_name = match fs_err::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice::<DownloadsFile>(&bytes)
                    .map_err(|source| DownloadsError::Corrupt {
                        path: path.clone(),
                        source,
                    })?
                    .downloads
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(source) => return Err(DownloadsError::Read { path, source }),
        };
        Ok(Self {
            path: Some(path),
            counts: Mutex::new(Counts {
                by_name,
                dirty: false,
            }),
        })
    }

    /// Counts nothing and writes nothing.
    pub fn off() -> Self {
        Self {
            path: None,
            counts: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts one download of an archive of `name`.
    pub fn record(&self, name: &SkillName) {
        if self.path.is_none() {
            return;
        }
        let mut counts = self.lock();
        let count = counts.by_name.entry(name.clone()).or_insert(0);
        *count = count.saturating_add(1);
        counts.dirty = true;
    }

    /// Returns every skill's count.
    pub fn counts(&self) -> BTreeMap<SkillName, u64> {
        self.lock().by_name.clone()
    }

    /// Returns the count of `name`.
    pub fn count(&self, name: &SkillName) -> u64 {
        self.lock().by_name.get(name).copied().unwrap_or(0)
    }

    /// Writes the counts, if they changed since they were last written.
    pub fn flush(&self) -> Result<(), DownloadsError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let mut counts = self.lock();
        if !counts.dirty {
            return Ok(());
        }
        let file = DownloadsFile {
            v: 1,
            downloads: counts.by_name.clone(),
        };
        let mut bytes = serde_json::to_vec(&file).expect("counts serialise");
        bytes.push(b'\n');
        // Under the lock, so two flushes never write older counts last.
        write_atomic_with(path, &bytes, &WriteOptions::default())?;
        counts.dirty = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_survive_a_flush_and_a_reopen_and_a_read_only_server_counts_nothing() {
        let state = tempfile::tempdir().unwrap();
        let pdf: SkillName = "pdf".parse().unwrap();
        let downloads = Downloads::open(state.path()).unwrap();
        assert_eq!(downloads.count(&pdf), 0);
        downloads.record(&pdf);
        downloads.record(&pdf);
        downloads.flush().unwrap();
        let text = fs_err::read_to_string(state.path().join(DOWNLOADS_FILE)).unwrap();
        assert_eq!(text, "{\"v\":1,\"downloads\":{\"pdf\":2}}\n");
        let reopened = Downloads::open(state.path()).unwrap();
        assert_eq!(reopened.count(&pdf), 2);

        let off = Downloads::off();
        off.record(&pdf);
        assert_eq!(off.count(&pdf), 0);
        off.flush().unwrap();
    }

    #[test]
    fn a_corrupt_counts_file_is_an_error_naming_it() {
        let state = tempfile::tempdir().unwrap();
        fs_err::write(state.path().join(DOWNLOADS_FILE), "{").unwrap();
        let error = Downloads::open(state.path()).unwrap_err();
        assert!(error.to_string().contains(DOWNLOADS_FILE), "{error}");
    }
}
