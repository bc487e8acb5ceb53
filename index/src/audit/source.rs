//! Where the audit reads a skill's files from: a folder on disk, or bytes
//! a caller already holds (the runtime's, checked against the hashes it
//! serves), read the same way.

use std::io::Read as _;
use std::path::Path;

/// How much of every file is read first: enough to tell an asset from a
/// text, and the whole of most texts.
pub(super) const HEAD: u64 = 64 * 1024;

/// A skill's files, by their `/`-separated paths in the skill.
pub(super) trait Files {
    /// Reads the first [`HEAD`] bytes of `path` and, when `more` says so,
    /// the rest up to `cap` bytes in all.
    fn read(
        &self,
        path: &str,
        cap: u64,
        more: &mut dyn FnMut(&[u8]) -> bool,
    ) -> std::io::Result<Vec<u8>>;
}

/// A skill folder.
pub(super) struct Folder<'a>(pub &'a Path);

impl Files for Folder<'_> {
    fn read(
        &self,
        path: &str,
        cap: u64,
        more: &mut dyn FnMut(&[u8]) -> bool,
    ) -> std::io::Result<Vec<u8>> {
        let mut file = fs_err::File::open(self.0.join(path))?;
        let mut bytes = Vec::new();
        file.by_ref().take(HEAD).read_to_end(&mut bytes)?;
        if more(&bytes) && bytes.len() as u64 == HEAD {
            file.take(cap.saturating_sub(HEAD))
                .read_to_end(&mut bytes)?;
        }
        Ok(bytes)
    }
}

/// Files whose whole bytes `read` returns.
pub(super) struct Loaded<F>(pub F);

impl<F: Fn(&str) -> std::io::Result<Vec<u8>>> Files for Loaded<F> {
    fn read(
        &self,
        path: &str,
        cap: u64,
        more: &mut dyn FnMut(&[u8]) -> bool,
    ) -> std::io::Result<Vec<u8>> {
        let mut bytes = (self.0)(path)?;
        let head = bytes.len().min(HEAD as usize);
        let keep = if more(&bytes[..head]) && head as u64 == HEAD {
            usize::try_from(cap.max(HEAD)).unwrap_or(usize::MAX)
        } else {
            head
        };
        bytes.truncate(keep);
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loaded_bytes_are_cut_as_a_folder_read_cuts_them() {
        let dir = tempfile::tempdir().unwrap();
        let big = vec![b'a'; HEAD as usize * 3];
        fs_err::write(dir.path().join("big"), &big).unwrap();
        fs_err::write(dir.path().join("small"), b"tiny").unwrap();
        let loaded = Loaded(|path: &str| fs_err::read(dir.path().join(path)));
        let folder = Folder(dir.path());
        for (path, cap, more) in [
            ("big", HEAD * 2, true),
            ("big", HEAD * 2, false),
            ("big", 10, true),
            ("big", HEAD * 9, true),
            ("small", HEAD, true),
            ("small", HEAD, false),
        ] {
            let from_folder = folder.read(path, cap, &mut |_| more).unwrap();
            let from_memory = loaded.read(path, cap, &mut |_| more).unwrap();
            assert_eq!(from_folder.len(), from_memory.len(), "{path} {cap} {more}");
        }
        assert_eq!(
            folder.read("big", HEAD * 2, &mut |_| true).unwrap().len(),
            HEAD as usize * 2
        );
        assert_eq!(
            folder.read("big", HEAD * 2, &mut |_| false).unwrap().len(),
            HEAD as usize
        );
    }
}
