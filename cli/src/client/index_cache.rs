//! The index file cache: the last index file of each skill read from each
//! http(s) registry, with its `ETag`, so that the next resolve asks with
//! `If-None-Match` and a `304 Not Modified` costs no body.
//!
//! ```text
//! <cache>/index/<host>-<port>-<16 hex>/index/pd/f-/pdf-processing
//!        │      └ one folder per registry URL read (a mirror's own URL,
//!        │        not its origin's): the host and port to be read by
//!        │        people, and the first 16 hex digits of the sha256 of
//!        │        the whole URL, so no two registries share a folder
//!        └ next to `archives/`: `SKILLPKG_CACHE_DIR`, else the user cache folder
//! ```
//!
//! Each entry is one file at the index file's own path in the tree (a
//! [`SkillName`] makes that path, never a server), overwritten by the next
//! read, so the cache holds at most one file per skill per registry:
//!
//! ```text
//! skillpkg-index-cache 1
//! {"url":"https://skills.example/index/pd/f-/pdf","etag":"\"1a2b-3c\"","sha256":"<hex>"}
//! <the index file's bytes, as served>
//! ```
//!
//! Nothing here is trusted. An entry whose header does not parse, names
//! another URL, or whose body does not hash to its `sha256` is a miss (and
//! removed); one that reads is only a candidate, sent back as
//! `If-None-Match` and used only when the server answers 304, and then
//! checked exactly as a fresh file would be (the signed snapshot's sha256,
//! the parse), falling back to an unconditional read when that fails (see
//! `registry::Registry::index`). The `sha256` catches a file torn or
//! damaged on disk; it does not stop someone who can write the user's
//! cache folder, who can also write the user's config and programs: with
//! signed metadata such a change is caught by the snapshot, without it the
//! registry's word is all there is, fresh or cached.

use std::io::Read as _;
use std::path::{Path, PathBuf};

use skillpkg_index::checksum::Checksum;
use skillpkg_index::fs::{Sync, WriteOptions, write_atomic_with};
use url::Url;

use super::registry_url::{RegistryUrl, redacted};

/// The first line of every entry.
const ENTRY_MAGIC: &[u8] = b"skillpkg-index-cache 1\n";

/// The most an entry's header may hold: a URL, an `ETag` and a digest.
const MAX_HEADER_BYTES: u64 = 16 * 1024;

/// The folder of index files under the cache folder.
pub const INDEX_FOLDER: &str = "index";

/// The cached index files of one registry URL.
#[derive(Clone, Debug)]
pub struct IndexCache {
    /// `<cache>/index/<registry folder>`.
    dir: PathBuf,
    /// The most an index file may hold, which a cached one must also keep to.
    max_body_bytes: u64,
}

/// An index file as cached: the bytes as served, and their `ETag`.
#[derive(Debug, PartialEq, Eq)]
pub struct CachedIndex {
    /// The `ETag` the server sent with it, to send back as `If-None-Match`.
    pub etag: String,
    /// The file's bytes.
    pub bytes: Vec<u8>,
}

/// The header line of an entry.
#[derive(serde::Serialize, serde::Deserialize)]
struct Header {
    /// The URL the file was read from, redacted: an entry answers for this
    /// URL only.
    url: String,
    etag: String,
    /// The sha256 of the bytes, lowercase hex.
    sha256: String,
}

impl IndexCache {
    /// The cached index files of the registry read at `registry`, below the
    /// cache folder `root` (the one that also holds `archives/`); index
    /// files over `max_body_bytes` are neither stored nor read back.
    pub fn new(root: &Path, registry: &RegistryUrl, max_body_bytes: u64) -> Self {
        Self {
            dir: root.join(INDEX_FOLDER).join(registry_folder(registry)),
            max_body_bytes,
        }
    }

    /// Returns the folder of this registry's entries.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entry of `path`, an index file's path in the tree
    /// (`index/pd/f-/pdf`), which [`skillpkg_index::registry::index_file_path`]
    /// made from a valid name: never a server's text.
    fn entry(&self, path: &str) -> PathBuf {
        self.dir.join(path)
    }

    /// Returns the cached copy of `path`, read from `url`, or `None` when
    /// there is none or it is damaged (which removes it).
    pub fn read(&self, path: &str, url: &Url) -> Option<CachedIndex> {
        let entry = self.entry(path);
        let file = fs_err::File::open(&entry).ok()?;
        let mut bytes = Vec::new();
        // Read under the cap: a file grown on disk is no index file.
        let cap = ENTRY_MAGIC.len() as u64 + MAX_HEADER_BYTES + self.max_body_bytes;
        file.take(cap + 1).read_to_end(&mut bytes).ok()?;
        let parsed = parse_entry(&bytes, url, self.max_body_bytes);
        if parsed.is_none() {
            self.forget(path);
        }
        parsed
    }

    /// Stores `bytes` as the copy of `path` read from `url` with `etag`,
    /// replacing any other. A cache is a courtesy: when it cannot be
    /// written, the next resolve reads the file again, so failures are
    /// ignored.
    pub fn write(&self, path: &str, url: &Url, etag: &str, bytes: &[u8]) {
        if bytes.len() as u64 > self.max_body_bytes {
            return;
        }
        let header = Header {
            url: redacted(url),
            etag: etag.to_owned(),
            sha256: Checksum::of(bytes).hex(),
        };
        let Ok(header) = serde_json::to_vec(&header) else {
            return;
        };
        let mut entry = Vec::with_capacity(ENTRY_MAGIC.len() + header.len() + 1 + bytes.len());
        entry.extend_from_slice(ENTRY_MAGIC);
        entry.extend_from_slice(&header);
        entry.push(b'\n');
        entry.extend_from_slice(bytes);
        // Private like the archive cache, and not synced: an entry is
        // checked on every read, so one torn by a power cut is a miss. The
        // folders are made when a write finds them missing, not checked
        // before every write.
        let path = self.entry(path);
        let options = WriteOptions::private().sync(Sync::None);
        if let Err(error) = write_atomic_with(&path, &entry, &options)
            && error.kind() == std::io::ErrorKind::NotFound
        {
            let _ = write_atomic_with(&path, &entry, &options.create_parents());
        }
    }

    /// Removes the copy of `path`, if any: the server no longer has the
    /// file, or the copy failed a check.
    pub fn forget(&self, path: &str) {
        let _ = fs_err::remove_file(self.entry(path));
    }
}

/// Parses an entry read from disk as the copy of `url`: `None` unless its
/// header parses, names `url` and has an `ETag` that can be sent back, and
/// its body, at most `max_body_bytes`, hashes to the header's sha256.
fn parse_entry(bytes: &[u8], url: &Url, max_body_bytes: u64) -> Option<CachedIndex> {
    let rest = bytes.strip_prefix(ENTRY_MAGIC)?;
    let end = rest.iter().position(|byte| *byte == b'\n')?;
    if end as u64 > MAX_HEADER_BYTES {
        return None;
    }
    let header: Header = serde_json::from_slice(&rest[..end]).ok()?;
    let body = &rest[end + 1..];
    if body.len() as u64 > max_body_bytes {
        return None;
    }
    let sendable = reqwest::header::HeaderValue::from_str(&header.etag).is_ok();
    if header.url != redacted(url) || !sendable || Checksum::of(body).hex() != header.sha256 {
        return None;
    }
    Some(CachedIndex {
        etag: header.etag,
        bytes: body.to_vec(),
    })
}

/// The folder name of a registry URL: its host and port, for people, and
/// the start of the sha256 of the whole URL, so that two registries (two
/// paths on one host, or the same URL with other credentials) never share
/// one. Credentials never appear in it.
fn registry_folder(registry: &RegistryUrl) -> String {
    let url = registry.as_url();
    let place = match (url.host_str(), url.port_or_known_default()) {
        (Some(host), Some(port)) => format!("{host}-{port}"),
        (Some(host), None) => host.to_owned(),
        (None, _) => url.scheme().to_owned(),
    };
    let safe: String = place
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect();
    let digest = Checksum::of(url.as_str().as_bytes()).hex();
    format!("{safe}-{}", &digest[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATH: &str = "index/pd/f-/pdf";

    fn cache(dir: &Path, registry: &str) -> (IndexCache, Url) {
        let registry: RegistryUrl = registry.parse().unwrap();
        let url = registry.join(PATH);
        (IndexCache::new(dir, &registry, 1 << 20), url)
    }

    #[test]
    fn an_entry_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let (cache, url) = cache(dir.path(), "http://127.0.0.1:8080/");
        assert_eq!(cache.read(PATH, &url), None);
        cache.write(PATH, &url, "\"17-2a\"", b"{\"name\":\"pdf\"}\n");
        assert_eq!(
            cache.read(PATH, &url),
            Some(CachedIndex {
                etag: "\"17-2a\"".into(),
                bytes: b"{\"name\":\"pdf\"}\n".to_vec(),
            })
        );
        let entry = cache.dir().join(PATH);
        assert!(
            entry.starts_with(dir.path().join("index")),
            "{}",
            entry.display()
        );
        let name = cache.dir().file_name().unwrap().to_str().unwrap();
        assert!(name.starts_with("127.0.0.1-8080-"), "{name}");
        cache.write(PATH, &url, "\"18-2b\"", b"newer\n");
        assert_eq!(cache.read(PATH, &url).unwrap().bytes, b"newer\n");
        cache.forget(PATH);
        assert_eq!(cache.read(PATH, &url), None);
    }

    #[test]
    fn a_damaged_entry_is_a_miss_and_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let (cache, url) = cache(dir.path(), "https://skills.example/");
        let entry = cache.dir().join(PATH);
        let good = || cache.write(PATH, &url, "W/\"x\"", b"{\"vers\":\"1.0.0\"}\n");
        good();
        let written = fs_err::read(&entry).unwrap();
        let damaged: Vec<(&str, Vec<u8>)> = vec![
            ("truncated", written[..written.len() - 3].to_vec()),
            ("a byte flipped in the body", {
                let mut bytes = written.clone();
                *bytes.last_mut().unwrap() ^= 1;
                bytes
            }),
            ("no magic", written[ENTRY_MAGIC.len()..].to_vec()),
            ("empty", Vec::new()),
            ("garbage", b"\xff\xfe\x00 not an entry".to_vec()),
            (
                "an ETag that cannot be sent",
                String::from_utf8(written.clone())
                    .unwrap()
                    .replace("W/\\\"x\\\"", "bad\\nvalue")
                    .into_bytes(),
            ),
        ];
        for (what, bytes) in damaged {
            fs_err::write(&entry, bytes).unwrap();
            assert_eq!(cache.read(PATH, &url), None, "{what}");
            assert!(!entry.exists(), "{what}: a damaged entry is removed");
            good();
        }
    }

    #[test]
    fn registries_never_share_entries() {
        let dir = tempfile::tempdir().unwrap();
        let (a, url_a) = cache(dir.path(), "https://skills.example/a/");
        let (b, url_b) = cache(dir.path(), "https://skills.example/b/");
        let (secret, url_secret) = cache(dir.path(), "https://user:hunter2@skills.example/a/");
        assert_ne!(a.dir(), b.dir());
        assert_ne!(a.dir(), secret.dir());
        assert!(
            !secret.dir().to_string_lossy().contains("hunter2"),
            "credentials never name a folder"
        );
        a.write(PATH, &url_a, "\"1\"", b"a\n");
        assert_eq!(b.read(PATH, &url_b), None);
        assert_eq!(secret.read(PATH, &url_secret), None);
        // An entry moved into another registry's folder names its URL.
        fs_err::create_dir_all(b.dir().join("index/pd/f-")).unwrap();
        fs_err::copy(a.dir().join(PATH), b.dir().join(PATH)).unwrap();
        assert_eq!(b.read(PATH, &url_b), None);
    }

    #[test]
    fn a_file_over_the_cap_is_neither_stored_nor_read() {
        let dir = tempfile::tempdir().unwrap();
        let registry: RegistryUrl = "http://127.0.0.1:1/".parse().unwrap();
        let url = registry.join(PATH);
        let small = IndexCache::new(dir.path(), &registry, 8);
        small.write(PATH, &url, "\"1\"", b"123456789");
        assert_eq!(small.read(PATH, &url), None);
        let large = IndexCache::new(dir.path(), &registry, 1 << 20);
        large.write(PATH, &url, "\"1\"", b"123456789");
        assert_eq!(small.read(PATH, &url), None, "grown past the cap on disk");
    }
}
