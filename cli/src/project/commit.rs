//! Committing skills.toml and skills.lock together, or not at all.
//!
//! `add` and `remove` change both files. Each is replaced by an atomic
//! rename, but two renames are not one: a kill between them would leave a
//! manifest that the lock does not match. So a change of both first writes
//! a journal, `.skillpkg-commit.json` in the project, holding both new
//! texts (written whole by rename and synced), then replaces the two files,
//! then removes the journal:
//!
//! ```text
//! {"v":1,"manifest-before":"sha256:…","manifest":"…new skills.toml…","lock":"…new skills.lock…"}
//! ```
//!
//! A kill before the journal is in place changes neither file; a kill after
//! it leaves a journal that the next skillpkg in the project, holding the
//! project lock, finishes ([`recover`]) before it reads either file. The
//! journal is applied only while skills.toml is still the one the change
//! was made from (`manifest-before`) or already the new one, so a manifest
//! edited by hand in between is never overwritten; and only if both texts
//! parse, since the journal is a project file like any other.

use skillpkg_index::fs::{Sync, WriteOptions, write_atomic_with};
use std::path::Path;

use skillpkg_index::checksum::Checksum;

use super::lockfile::{self, LOCKFILE, Lockfile};
use super::manifest::{self, MANIFEST};

/// The journal's file name, in the project folder.
pub const JOURNAL: &str = ".skillpkg-commit.json";

/// The journal's format version.
const JOURNAL_VERSION: u32 = 1;

#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Journal {
    v: u32,
    /// The `sha256:` checksum of the manifest the change was made from.
    manifest_before: Checksum,
    /// The new manifest's text.
    manifest: String,
    /// The new lockfile's text.
    lock: String,
}

/// A change of the manifest: its text before, and after.
#[derive(Clone, Copy, Debug)]
pub struct ManifestChange<'a> {
    pub before: &'a str,
    pub after: &'a str,
}

/// Writes the new manifest and lock of the project at `root`: each only if
/// given, both together or neither.
pub fn commit(
    root: &Path,
    manifest: Option<ManifestChange<'_>>,
    lock: Option<&Lockfile>,
) -> anyhow::Result<()> {
    let manifest = manifest.filter(|change| change.before != change.after);
    match (manifest, lock) {
        (None, None) => Ok(()),
        (None, Some(lock)) => lockfile::write(root, lock),
        (Some(change), None) => manifest::write(&root.join(MANIFEST), change.after),
        (Some(change), Some(lock)) => {
            let journal = Journal {
                v: JOURNAL_VERSION,
                manifest_before: Checksum::of(change.before.as_bytes()),
                manifest: change.after.to_owned(),
                lock: lock.render(),
            };
            write_synced(
                &root.join(JOURNAL),
                &serde_json::to_vec(&journal).expect("a journal serialises"),
            )?;
            apply(root, &journal)
        }
    }
}

/// Finishes a commit that a kill interrupted: applies the project's
/// journal, if there is one and it still applies, and removes it. Returns a
/// note for the user when it did something. Call it holding the project
/// lock, before reading the manifest or the lock.
pub fn recover(root: &Path) -> anyhow::Result<Option<String>> {
    let path = root.join(JOURNAL);
    let bytes = match fs_err::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(error.into()),
    };
    let current = fs_err::read(root.join(MANIFEST)).unwrap_or_default();
    let note = match serde_json::from_slice::<Journal>(&bytes) {
        Ok(journal) if !journal_parses(root, &journal) => {
            format!(
                "removed {}: it does not hold a valid manifest and lock",
                path.display()
            )
        }
        Ok(journal)
            if journal.v == JOURNAL_VERSION
                && (Checksum::of(&current) == journal.manifest_before
                    || current == journal.manifest.as_bytes()) =>
        {
            apply(root, &journal)?;
            return Ok(Some(format!(
                "finished an interrupted change of {MANIFEST} and {LOCKFILE}"
            )));
        }
        Ok(_) => format!(
            "removed {}: {MANIFEST} changed since the interrupted change it records",
            path.display()
        ),
        Err(_) => format!(
            "removed {}: it is not a journal skillpkg can read",
            path.display()
        ),
    };
    fs_err::remove_file(&path)?;
    Ok(Some(note))
}

/// Returns true if and only if both texts of the journal parse.
fn journal_parses(root: &Path, journal: &Journal) -> bool {
    manifest::parse(root.join(MANIFEST), &journal.manifest).is_ok()
        && lockfile::parse(&journal.lock).is_ok()
}

fn apply(root: &Path, journal: &Journal) -> anyhow::Result<()> {
    manifest::write(&root.join(LOCKFILE), &journal.lock)?;
    manifest::write(&root.join(MANIFEST), &journal.manifest)?;
    fs_err::remove_file(root.join(JOURNAL))?;
    Ok(())
}

/// Writes `bytes` to `path` by rename, synced to disk with its folder, so
/// that the journal is whole before either file it names is replaced.
fn write_synced(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let options = WriteOptions::default().sync(Sync::FileAndFolder);
    write_atomic_with(path, bytes, &options)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "[skills]\na = \"1\"\n";
    const NEW: &str = "[skills]\na = \"1\"\nb = \"^2\"\n";

    fn journal(before: &str) -> Journal {
        Journal {
            v: JOURNAL_VERSION,
            manifest_before: Checksum::of(before.as_bytes()),
            manifest: NEW.into(),
            lock: Lockfile::default().render(),
        }
    }

    fn project(manifest: &str, journal: &Journal) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        fs_err::write(dir.path().join(MANIFEST), manifest).unwrap();
        fs_err::write(
            dir.path().join(JOURNAL),
            serde_json::to_vec(journal).unwrap(),
        )
        .unwrap();
        dir
    }

    #[test]
    fn an_interrupted_commit_is_finished_by_the_next_run() {
        let dir = project(OLD, &journal(OLD));
        let note = recover(dir.path()).unwrap().unwrap();
        assert!(note.contains("finished"), "{note}");
        assert_eq!(
            fs_err::read_to_string(dir.path().join(MANIFEST)).unwrap(),
            NEW
        );
        assert_eq!(
            fs_err::read_to_string(dir.path().join(LOCKFILE)).unwrap(),
            Lockfile::default().render()
        );
        assert!(!dir.path().join(JOURNAL).exists());
        assert_eq!(recover(dir.path()).unwrap(), None);
    }

    #[test]
    fn a_journal_never_overwrites_a_manifest_edited_since() {
        let edited = "[skills]\nmine = \"3\"\n";
        let dir = project(edited, &journal(OLD));
        let note = recover(dir.path()).unwrap().unwrap();
        assert!(note.contains("changed since"), "{note}");
        assert_eq!(
            fs_err::read_to_string(dir.path().join(MANIFEST)).unwrap(),
            edited
        );
        assert!(!dir.path().join(LOCKFILE).exists());
        assert!(!dir.path().join(JOURNAL).exists());
    }

    #[test]
    fn a_journal_that_does_not_parse_is_dropped_and_applies_nothing() {
        let mut bad = journal(OLD);
        bad.lock = "version = 99\n".into();
        let dir = project(OLD, &bad);
        let note = recover(dir.path()).unwrap().unwrap();
        assert!(note.contains("valid manifest and lock"), "{note}");
        assert_eq!(
            fs_err::read_to_string(dir.path().join(MANIFEST)).unwrap(),
            OLD
        );
        assert!(!dir.path().join(LOCKFILE).exists());

        fs_err::write(dir.path().join(JOURNAL), "{not json").unwrap();
        assert!(
            recover(dir.path())
                .unwrap()
                .unwrap()
                .contains("not a journal")
        );
        assert_eq!(
            fs_err::read_to_string(dir.path().join(MANIFEST)).unwrap(),
            OLD
        );
    }

    #[test]
    fn commit_writes_both_files_and_leaves_no_journal() {
        let dir = tempfile::tempdir().unwrap();
        fs_err::write(dir.path().join(MANIFEST), OLD).unwrap();
        commit(
            dir.path(),
            Some(ManifestChange {
                before: OLD,
                after: NEW,
            }),
            Some(&Lockfile::default()),
        )
        .unwrap();
        assert_eq!(
            fs_err::read_to_string(dir.path().join(MANIFEST)).unwrap(),
            NEW
        );
        assert!(dir.path().join(LOCKFILE).is_file());
        assert!(!dir.path().join(JOURNAL).exists());
    }
}
