//! The tree hash: one checksum for a set of files, so installed content can
//! be checked without the tarball it came from.
//!
//! ```text
//! h2: summary = for each file, sorted bytewise by path:
//!               "<sha256 hex> <100755|100644> <path>\n"
//!     h2      = "h2:" + base64(sha256(summary))
//! h1: summary = for each file, sorted bytewise by path: "<sha256 hex>  <path>\n"
//!     h1      = "h1:" + base64(sha256(summary))      (Go's `dirhash.Hash1`)
//! ```
//!
//! `h2` is what skillpkg writes: it covers each file's executable bit (git's
//! modes), so a script that lost it is a change. `h1`, written before, is
//! still read wherever a tree hash is checked ([`tree_matches`]): index lines
//! of versions published before `h2`, and locks and records written then.
//! Directories count in neither.

use std::fmt;

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// A file's path, the SHA-256 of its contents and whether it is executable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileDigest {
    pub path: String,
    pub sha256: [u8; 32],
    pub executable: bool,
}

/// A tree hash (`h2:...`, or `h1:...` when read).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TreeHash(String);

impl fmt::Display for TreeHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TreeHash {
    /// Returns the `h2:...` (or `h1:...`) text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Computes the `h2:` tree hash of `files` (in any order): the one
/// skillpkg writes.
pub fn tree_hash(files: &[FileDigest]) -> TreeHash {
    summarise(files, "h2", |file| {
        let mode = if file.executable { "100755" } else { "100644" };
        format!("{} {mode} {}\n", hex(&file.sha256), file.path)
    })
}

/// Computes the older `h1:` tree hash of `files`, which ignores modes.
pub fn tree_hash_h1(files: &[FileDigest]) -> TreeHash {
    summarise(files, "h1", |file| {
        format!("{}  {}\n", hex(&file.sha256), file.path)
    })
}

/// Returns true if and only if `files` hash to `expected`, an `h2:` or an
/// `h1:` tree hash (any other is never matched).
pub fn tree_matches(files: &[FileDigest], expected: &str) -> bool {
    if expected.starts_with("h2:") {
        tree_hash(files).as_str() == expected
    } else if expected.starts_with("h1:") {
        tree_hash_h1(files).as_str() == expected
    } else {
        false
    }
}

fn summarise(
    files: &[FileDigest],
    version: &str,
    line: impl Fn(&FileDigest) -> String,
) -> TreeHash {
    let mut sorted: Vec<&FileDigest> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    let mut summary = Sha256::new();
    for file in sorted {
        summary.update(line(file).as_bytes());
    }
    TreeHash(format!(
        "{version}:{}",
        base64::engine::general_purpose::STANDARD.encode(summary.finalize())
    ))
}

/// Lowercase hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, contents: &[u8], executable: bool) -> FileDigest {
        FileDigest {
            path: path.to_owned(),
            sha256: Sha256::digest(contents).into(),
            executable,
        }
    }

    #[test]
    fn h2_covers_the_executable_bit_and_h1_is_still_matched() {
        let script = [file("SKILL.md", b"x", false), file("run.sh", b"y", true)];
        let lost = [file("SKILL.md", b"x", false), file("run.sh", b"y", false)];
        let h2 = tree_hash(&script);
        assert!(h2.as_str().starts_with("h2:"));
        assert_ne!(h2, tree_hash(&lost), "a lost executable bit changes h2");
        let h1 = tree_hash_h1(&script);
        assert_eq!(h1, tree_hash_h1(&lost), "h1 never saw modes");
        assert!(tree_matches(&script, h2.as_str()));
        assert!(!tree_matches(&lost, h2.as_str()));
        assert!(tree_matches(&lost, h1.as_str()));
        assert!(!tree_matches(&script, "h3:whatever"));
        // Go's dirhash.Hash1 of these two files, as computed by
        // `sha256sum` over the summary: the h1 of older locks.
        let summary = format!(
            "{}  SKILL.md\n{}  run.sh\n",
            hex(&Sha256::digest(b"x")),
            hex(&Sha256::digest(b"y"))
        );
        let expected = format!(
            "h1:{}",
            base64::engine::general_purpose::STANDARD.encode(Sha256::digest(summary.as_bytes()))
        );
        assert_eq!(h1.as_str(), expected);
    }
}
