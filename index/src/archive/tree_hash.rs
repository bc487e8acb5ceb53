//! The `h1:` tree hash: one checksum for a set of files, computed the way Go's
//! `dirhash.Hash1` does for `go.sum`, so installed content can be checked
//! without the tarball it came from.
//!
//! ```text
//! summary = for each file, sorted bytewise by path: "<sha256 hex>  <path>\n"
//! h1      = "h1:" + base64(sha256(summary))
//! ```
//!
//! Only files count: directories and modes do not.

use std::fmt;

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// A file's path and the SHA-256 of its contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileDigest {
    pub path: String,
    pub sha256: [u8; 32],
}

/// An `h1:` tree hash.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TreeHash(String);

impl fmt::Display for TreeHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl TreeHash {
    /// Returns the `h1:...` text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Computes the tree hash of `files` (in any order).
pub fn tree_hash(files: &[FileDigest]) -> TreeHash {
    let mut sorted: Vec<&FileDigest> = files.iter().collect();
    sorted.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    let mut summary = Sha256::new();
    for file in sorted {
        summary.update(hex(&file.sha256));
        summary.update(b"  ");
        summary.update(file.path.as_bytes());
        summary.update(b"\n");
    }
    TreeHash(format!(
        "h1:{}",
        base64::engine::general_purpose::STANDARD.encode(summary.finalize())
    ))
}

/// Lowercase hexadecimal.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
