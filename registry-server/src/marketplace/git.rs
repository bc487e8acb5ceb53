//! Git objects and pack files, made in memory: a snapshot of files becomes
//! one commit with no parent, packed with its trees and blobs into one
//! self-contained pack (`objects/pack/pack-<sha1>.pack`) and its index
//! (`.idx`, version 2), the files git itself reads over its dumb HTTP
//! protocol and from a folder.
//!
//! The objects are encoded by `gix-object` and named by `gix-hash` (SHA-1,
//! with git's collision detection); the pack and its index are framed
//! here, by the formats of git's `Documentation/gitformat-pack.txt`:
//!
//! ```text
//! pack  "PACK" be32(2) be32(count)
//!       per object: type and size (varint), zlib of the object's body
//!       sha1 of all the above
//! idx   "\xfftOc" be32(2) fanout[256] be32  ids[count] (sorted)
//!       crc32[count] (of each object's bytes in the pack)  offset[count] be32
//!       the pack's sha1  sha1 of all the above
//! ```
//!
//! Everything is deterministic: the same files, message and time give the
//! same commit id (a content hash), and with this build's zlib the same
//! pack bytes. Objects are never deltified: a skill is at most a few MiB,
//! and a pack of whole objects can be read back here ([`PackIndex`],
//! [`merge_packs`]) with no inflating.

use std::collections::{BTreeMap, HashSet};
use std::io::Write as _;

use gix_object::WriteTo as _;

/// A git object id (SHA-1).
pub type ObjectId = gix_hash::ObjectId;

/// The most bytes a pack this module writes may have: its index keeps
/// 31-bit offsets only (no large-offset table).
const MAX_PACK_BYTES: usize = 0x7fff_ffff;

/// Why a snapshot could not be packed, or a pack read.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("`{path}` cannot be a path in a git tree: {why}")]
    BadPath { path: String, why: &'static str },
    #[error("`{path}` is both a file and a folder")]
    FileAndFolder { path: String },
    #[error("the pack would be over 2 GiB, which its index cannot address")]
    TooLarge,
    #[error("cannot encode a git object")]
    Encode(#[source] std::io::Error),
    #[error("cannot hash a git object: {0}")]
    Hash(String),
    #[error("the pack index is not a version 2 index of a SHA-1 pack: {0}")]
    BadIndex(&'static str),
    #[error("the pack does not match its index: {0}")]
    BadPack(&'static str),
}

/// A file of a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct File {
    /// The path, `/`-separated, relative to the snapshot's root.
    pub path: String,
    pub executable: bool,
    pub bytes: Vec<u8>,
}

/// Who made a commit, and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub name: String,
    pub email: String,
    /// Seconds since 1970, UTC.
    pub seconds: i64,
}

/// A packed snapshot: a commit and every object it reaches.
#[derive(Clone, Debug)]
pub struct Pack {
    /// The commit.
    pub commit: ObjectId,
    /// The pack's checksum, which names it (`pack-<hex>.pack`).
    pub checksum: ObjectId,
    /// The `.pack` file.
    pub pack: Vec<u8>,
    /// The `.idx` file.
    pub index: Vec<u8>,
}

/// The kinds of objects, as packs number them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Commit = 1,
    Tree = 2,
    Blob = 3,
}

impl Kind {
    fn object_kind(self) -> gix_object::Kind {
        match self {
            Self::Commit => gix_object::Kind::Commit,
            Self::Tree => gix_object::Kind::Tree,
            Self::Blob => gix_object::Kind::Blob,
        }
    }
}

/// The objects of a snapshot, each once, in the order they are packed.
#[derive(Default)]
struct Objects {
    seen: HashSet<ObjectId>,
    list: Vec<(Kind, ObjectId, Vec<u8>)>,
}

impl Objects {
    /// Adds the object `kind` with the body `bytes`; returns its id.
    fn add(&mut self, kind: Kind, bytes: Vec<u8>) -> Result<ObjectId, GitError> {
        let id = gix_object::compute_hash(gix_hash::Kind::Sha1, kind.object_kind(), &bytes)
            .map_err(|error| GitError::Hash(error.to_string()))?;
        if self.seen.insert(id) {
            self.list.push((kind, id, bytes));
        }
        Ok(id)
    }
}

/// A folder of a snapshot, on the way to its tree.
#[derive(Default)]
struct Folder {
    files: BTreeMap<String, (bool, ObjectId)>,
    folders: BTreeMap<String, Folder>,
}

/// Returns why `component` cannot be a name in a git tree, if it cannot.
/// The paths packed here come from archives the hardened unpacker already
/// accepted (no `.git` in any spelling, no `..`): this is the last guard.
fn bad_component(component: &str) -> Option<&'static str> {
    if component.is_empty() {
        Some("it has an empty component")
    } else if component == "." || component == ".." {
        Some("it has a `.` or `..` component")
    } else if component.eq_ignore_ascii_case(".git") {
        Some("it has a `.git` component")
    } else if component.contains(['\0', '\\']) {
        Some("it has a NUL or a backslash")
    } else {
        None
    }
}

impl Folder {
    fn insert(&mut self, file: &File, blob: ObjectId) -> Result<(), GitError> {
        let components: Vec<&str> = file.path.split('/').collect();
        if let Some(why) = components
            .iter()
            .find_map(|component| bad_component(component))
        {
            return Err(GitError::BadPath {
                path: file.path.clone(),
                why,
            });
        }
        let clash = || GitError::FileAndFolder {
            path: file.path.clone(),
        };
        let (leaf, parents) = components.split_last().expect("split yields a component");
        let mut folder = self;
        for parent in parents {
            if folder.files.contains_key(*parent) {
                return Err(clash());
            }
            folder = folder.folders.entry((*parent).to_owned()).or_default();
        }
        if folder.folders.contains_key(*leaf)
            || folder
                .files
                .insert((*leaf).to_owned(), (file.executable, blob))
                .is_some()
        {
            return Err(clash());
        }
        Ok(())
    }

    /// Writes the trees of this folder, innermost first; returns its id.
    fn write(&self, objects: &mut Objects) -> Result<ObjectId, GitError> {
        let mut entries = Vec::with_capacity(self.files.len() + self.folders.len());
        for (name, folder) in &self.folders {
            entries.push(gix_object::tree::Entry {
                mode: gix_object::tree::EntryKind::Tree.into(),
                filename: name.as_str().into(),
                oid: folder.write(objects)?,
            });
        }
        for (name, (executable, blob)) in &self.files {
            let kind = if *executable {
                gix_object::tree::EntryKind::BlobExecutable
            } else {
                gix_object::tree::EntryKind::Blob
            };
            entries.push(gix_object::tree::Entry {
                mode: kind.into(),
                filename: name.as_str().into(),
                oid: *blob,
            });
        }
        // Git's order: a folder sorts as if its name ended in `/`.
        entries.sort();
        let tree = gix_object::Tree { entries };
        let mut bytes = Vec::new();
        tree.write_to(&mut bytes).map_err(GitError::Encode)?;
        objects.add(Kind::Tree, bytes)
    }
}

/// Packs `files` as one commit with no parent, made by `stamp` with the
/// message `message`.
pub fn pack_snapshot(files: &[File], message: &str, stamp: &Stamp) -> Result<Pack, GitError> {
    let mut blobs = Objects::default();
    let mut root = Folder::default();
    for file in files {
        let blob = blobs.add(Kind::Blob, file.bytes.clone())?;
        root.insert(file, blob)?;
    }
    let mut trees = Objects::default();
    let tree = root.write(&mut trees)?;
    let signature = gix_actor::Signature {
        name: stamp.name.as_str().into(),
        email: stamp.email.as_str().into(),
        time: gix_object::date::Time {
            seconds: stamp.seconds,
            offset: 0,
        },
    };
    let commit = gix_object::Commit {
        tree,
        parents: Default::default(),
        author: signature.clone(),
        committer: signature,
        encoding: None,
        message: message.into(),
        extra_headers: Vec::new(),
    };
    let mut bytes = Vec::new();
    commit.write_to(&mut bytes).map_err(GitError::Encode)?;
    let mut commits = Objects::default();
    let commit = commits.add(Kind::Commit, bytes)?;
    // The commit, then the trees from the root down, then the blobs: the
    // order git itself packs a checkout in.
    let mut objects = commits.list;
    objects.extend(trees.list.into_iter().rev());
    objects.extend(blobs.list);
    let (pack, checksum, index) = write_pack(&objects)?;
    Ok(Pack {
        commit,
        checksum,
        pack,
        index,
    })
}

/// Returns the type-and-size header of a packed object.
fn entry_header(kind: Kind, size: u64) -> Vec<u8> {
    let mut header = Vec::with_capacity(10);
    let mut byte = ((kind as u8) << 4) | (size & 0x0f) as u8;
    let mut rest = size >> 4;
    while rest > 0 {
        header.push(byte | 0x80);
        byte = (rest & 0x7f) as u8;
        rest >>= 7;
    }
    header.push(byte);
    header
}

fn sha1(parts: &[&[u8]]) -> Result<ObjectId, GitError> {
    let mut hasher = gix_hash::hasher(gix_hash::Kind::Sha1);
    for part in parts {
        hasher.update(part);
    }
    hasher
        .try_finalize()
        .map_err(|error| GitError::Hash(error.to_string()))
}

/// Writes `objects` into a pack; returns it, its checksum and its index.
fn write_pack(
    objects: &[(Kind, ObjectId, Vec<u8>)],
) -> Result<(Vec<u8>, ObjectId, Vec<u8>), GitError> {
    let count = u32::try_from(objects.len()).map_err(|_| GitError::TooLarge)?;
    let mut pack = Vec::new();
    pack.extend_from_slice(b"PACK");
    pack.extend_from_slice(&2_u32.to_be_bytes());
    pack.extend_from_slice(&count.to_be_bytes());
    let mut entries = Vec::with_capacity(objects.len());
    for (kind, id, bytes) in objects {
        let offset = pack.len();
        pack.extend_from_slice(&entry_header(*kind, bytes.len() as u64));
        let mut encoder = flate2::write::ZlibEncoder::new(&mut pack, flate2::Compression::new(6));
        encoder.write_all(bytes).map_err(GitError::Encode)?;
        encoder.finish().map_err(GitError::Encode)?;
        if pack.len() > MAX_PACK_BYTES {
            return Err(GitError::TooLarge);
        }
        let crc = crc32fast::hash(&pack[offset..]);
        entries.push((*id, crc, offset as u32));
    }
    let checksum = sha1(&[&pack])?;
    pack.extend_from_slice(checksum.as_bytes());
    let index = write_index(entries, checksum)?;
    Ok((pack, checksum, index))
}

/// Writes the version 2 index of a pack whose objects are `entries` (id,
/// crc32, offset) and whose checksum is `checksum`.
fn write_index(
    mut entries: Vec<(ObjectId, u32, u32)>,
    checksum: ObjectId,
) -> Result<Vec<u8>, GitError> {
    entries.sort_by_key(|(id, ..)| *id);
    let mut index = Vec::with_capacity(8 + 256 * 4 + entries.len() * 28 + 40);
    index.extend_from_slice(b"\xfftOc");
    index.extend_from_slice(&2_u32.to_be_bytes());
    let mut fanout = [0_u32; 256];
    for (id, ..) in &entries {
        for slot in &mut fanout[usize::from(id.as_bytes()[0])..] {
            *slot += 1;
        }
    }
    for count in fanout {
        index.extend_from_slice(&count.to_be_bytes());
    }
    for (id, ..) in &entries {
        index.extend_from_slice(id.as_bytes());
    }
    for (_, crc, _) in &entries {
        index.extend_from_slice(&crc.to_be_bytes());
    }
    for (.., offset) in &entries {
        index.extend_from_slice(&offset.to_be_bytes());
    }
    index.extend_from_slice(checksum.as_bytes());
    let own = sha1(&[&index])?;
    index.extend_from_slice(own.as_bytes());
    Ok(index)
}

/// A pack's index, read: which objects the pack holds, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackIndex {
    /// The objects' ids, sorted, with their offsets in the pack.
    objects: Vec<(ObjectId, u32)>,
    /// The checksum of the pack it indexes.
    checksum: ObjectId,
}

fn be32(bytes: &[u8], at: usize) -> Option<u32> {
    let word: [u8; 4] = bytes.get(at..at + 4)?.try_into().ok()?;
    Some(u32::from_be_bytes(word))
}

impl PackIndex {
    /// Reads a version 2 index of a SHA-1 pack with no offset past 2 GiB
    /// (what [`pack_snapshot`] writes).
    pub fn parse(bytes: &[u8]) -> Result<Self, GitError> {
        let bad = GitError::BadIndex;
        if bytes.get(..4) != Some(b"\xfftOc") || be32(bytes, 4) != Some(2) {
            return Err(bad("not a version 2 index"));
        }
        let count = be32(bytes, 8 + 255 * 4).ok_or(bad("its fan-out table is cut short"))?;
        let count = usize::try_from(count).map_err(|_| bad("too many objects"))?;
        let ids_at = 8 + 256 * 4;
        let offsets_at = ids_at + count * 24;
        let end = offsets_at + count * 4;
        if bytes.len() != end + 40 {
            return Err(bad("its size does not match its object count"));
        }
        if sha1(&[&bytes[..end + 20]])?.as_bytes() != &bytes[end + 20..] {
            return Err(bad("its checksum does not match"));
        }
        let mut objects = Vec::with_capacity(count);
        for slot in 0..count {
            let id =
                ObjectId::from_bytes_or_panic(&bytes[ids_at + slot * 20..ids_at + slot * 20 + 20]);
            let offset = be32(bytes, offsets_at + slot * 4).ok_or(bad("cut short"))?;
            if offset & 0x8000_0000 != 0 {
                return Err(bad("it uses large offsets"));
            }
            if objects.last().is_some_and(|(last, _)| *last >= id) {
                return Err(bad("its ids are not sorted"));
            }
            objects.push((id, offset));
        }
        Ok(Self {
            objects,
            checksum: ObjectId::from_bytes_or_panic(&bytes[end..end + 20]),
        })
    }

    /// Returns true if and only if the pack holds the object `id`.
    pub fn contains(&self, id: &ObjectId) -> bool {
        self.objects
            .binary_search_by_key(id, |(object, _)| *object)
            .is_ok()
    }

    /// The checksum of the pack this index is of.
    pub fn checksum(&self) -> ObjectId {
        self.checksum
    }

    /// Each object of `pack` (which this indexes) and its bytes there, in
    /// the pack's order.
    fn entries<'a>(&self, pack: &'a [u8]) -> Result<Vec<(ObjectId, &'a [u8])>, GitError> {
        let bad = GitError::BadPack;
        let count = u32::try_from(self.objects.len()).map_err(|_| bad("too many objects"))?;
        if pack.len() < 32
            || pack.get(..4) != Some(b"PACK")
            || be32(pack, 4) != Some(2)
            || be32(pack, 8) != Some(count)
        {
            return Err(bad("its header does not match the index"));
        }
        let body_end = pack.len() - 20;
        if &pack[body_end..] != self.checksum.as_bytes() {
            return Err(bad("its checksum is not the one the index names"));
        }
        let mut by_offset: Vec<(u32, ObjectId)> = self
            .objects
            .iter()
            .map(|(id, offset)| (*offset, *id))
            .collect();
        by_offset.sort_unstable();
        let mut entries = Vec::with_capacity(by_offset.len());
        for (slot, (offset, id)) in by_offset.iter().enumerate() {
            let start = *offset as usize;
            let end = by_offset
                .get(slot + 1)
                .map_or(body_end, |(next, _)| *next as usize);
            if start < 12 || start >= end || end > body_end {
                return Err(bad("an object's offset is outside the pack"));
            }
            entries.push((*id, &pack[start..end]));
        }
        Ok(entries)
    }
}

/// One pack holding every object of several packs, each once, made a
/// pack at a time: what a fetch of several snapshots is sent, without
/// holding more than one of them at once. The objects are copied as they
/// are packed, never inflated, and hashed as they go by for the checksum
/// that ends the pack.
///
/// ```text
/// MergedPack::start(indexes) -> header "PACK" be32(2) be32(distinct objects)
/// take(index, pack)...       -> the objects of each pack not taken before
/// finish()                   -> the SHA-1 of all the above
/// ```
pub struct MergedPack {
    /// The objects not taken yet: the header counts them all, so a pack
    /// that lacked one its index named would end a lying pack.
    remaining: HashSet<ObjectId>,
    hasher: gix_hash::Hasher,
}

impl std::fmt::Debug for MergedPack {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("MergedPack")
            .field("remaining", &self.remaining.len())
            .finish_non_exhaustive()
    }
}

impl MergedPack {
    /// Starts the pack of every object of `indexes`; returns it and the
    /// pack's first bytes, its header.
    pub fn start<'a>(
        indexes: impl IntoIterator<Item = &'a PackIndex>,
    ) -> Result<(Self, Vec<u8>), GitError> {
        let remaining: HashSet<ObjectId> = indexes
            .into_iter()
            .flat_map(|index| index.objects.iter().map(|(id, _)| *id))
            .collect();
        let count = u32::try_from(remaining.len()).map_err(|_| GitError::TooLarge)?;
        let mut header = Vec::with_capacity(12);
        header.extend_from_slice(b"PACK");
        header.extend_from_slice(&2_u32.to_be_bytes());
        header.extend_from_slice(&count.to_be_bytes());
        let mut hasher = gix_hash::hasher(gix_hash::Kind::Sha1);
        hasher.update(&header);
        Ok((Self { remaining, hasher }, header))
    }

    /// Returns the objects of `pack` (which `index` indexes, one of the
    /// indexes the merge started with) that no earlier pack gave, as they
    /// are packed: the next bytes of the merged pack.
    pub fn take<'a>(
        &mut self,
        index: &PackIndex,
        pack: &'a [u8],
    ) -> Result<Vec<&'a [u8]>, GitError> {
        let mut taken = Vec::new();
        for (id, bytes) in index.entries(pack)? {
            if self.remaining.remove(&id) {
                self.hasher.update(bytes);
                taken.push(bytes);
            }
        }
        Ok(taken)
    }

    /// Returns the checksum that ends the merged pack, once every object
    /// its header counts was taken.
    pub fn finish(self) -> Result<ObjectId, GitError> {
        if !self.remaining.is_empty() {
            return Err(GitError::BadPack(
                "an object its index names was not taken from it",
            ));
        }
        self.hasher
            .try_finalize()
            .map_err(|error| GitError::Hash(error.to_string()))
    }
}

/// Writes one pack holding every object of `packs` (each with its index),
/// each once, in memory: [`MergedPack`] in one go.
pub fn merge_packs(packs: &[(&PackIndex, &[u8])]) -> Result<Vec<u8>, GitError> {
    let (mut merged, mut bytes) = MergedPack::start(packs.iter().map(|(index, _)| *index))?;
    for (index, pack) in packs {
        for object in merged.take(index, pack)? {
            bytes.extend_from_slice(object);
        }
    }
    bytes.extend_from_slice(merged.finish()?.as_bytes());
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp() -> Stamp {
        Stamp {
            name: "skillpkg registry".into(),
            email: "registry@skillpkg.invalid".into(),
            seconds: 1_764_000_000,
        }
    }

    fn files() -> Vec<File> {
        vec![
            File {
                path: "skills/pdf/SKILL.md".into(),
                executable: false,
                bytes: b"---\nname: pdf\n---\n".to_vec(),
            },
            File {
                path: "skills/pdf/scripts/run.sh".into(),
                executable: true,
                bytes: b"#!/bin/sh\n".to_vec(),
            },
            File {
                path: "skills/pdf-x".into(),
                executable: false,
                bytes: b"same\n".to_vec(),
            },
            File {
                path: "same".into(),
                executable: false,
                bytes: b"same\n".to_vec(),
            },
        ]
    }

    #[test]
    fn the_same_snapshot_gives_the_same_commit_and_pack() {
        let first = pack_snapshot(&files(), "pdf 1.0.0\n", &stamp()).unwrap();
        let second = pack_snapshot(&files(), "pdf 1.0.0\n", &stamp()).unwrap();
        assert_eq!(first.commit, second.commit);
        assert_eq!(first.pack, second.pack);
        assert_eq!(first.index, second.index);
        let later = Stamp {
            seconds: 1_764_000_001,
            ..stamp()
        };
        assert_ne!(
            pack_snapshot(&files(), "pdf 1.0.0\n", &later)
                .unwrap()
                .commit,
            first.commit
        );
    }

    #[test]
    fn a_pack_reads_back_through_its_index() {
        let packed = pack_snapshot(&files(), "m\n", &stamp()).unwrap();
        let index = PackIndex::parse(&packed.index).unwrap();
        assert!(index.contains(&packed.commit));
        assert_eq!(index.checksum(), packed.checksum);
        // commit, 3 trees (root, skills, skills/pdf, skills/pdf/scripts: 4),
        // 3 distinct blobs (two files share one).
        let entries = index.entries(&packed.pack).unwrap();
        assert_eq!(entries.len(), 1 + 4 + 3);
        // Merging a pack with itself gives the same objects once.
        let merged = merge_packs(&[(&index, &packed.pack), (&index, &packed.pack)]).unwrap();
        assert_eq!(merged, packed.pack);
    }

    #[test]
    fn paths_git_refuses_are_refused() {
        for path in ["a//b", "../x", "a/.git/config", "a/.GIT", "a\\b", "x/./y"] {
            let file = File {
                path: path.into(),
                executable: false,
                bytes: Vec::new(),
            };
            assert!(
                matches!(
                    pack_snapshot(&[file], "m\n", &stamp()),
                    Err(GitError::BadPath { .. })
                ),
                "{path}"
            );
        }
        let clash = [
            File {
                path: "a".into(),
                executable: false,
                bytes: Vec::new(),
            },
            File {
                path: "a/b".into(),
                executable: false,
                bytes: Vec::new(),
            },
        ];
        assert!(matches!(
            pack_snapshot(&clash, "m\n", &stamp()),
            Err(GitError::FileAndFolder { .. })
        ));
    }

    #[test]
    fn a_tampered_index_or_pack_is_refused() {
        let packed = pack_snapshot(&files(), "m\n", &stamp()).unwrap();
        let mut index = packed.index.clone();
        index[8 + 256 * 4] ^= 1;
        assert!(PackIndex::parse(&index).is_err());
        let index = PackIndex::parse(&packed.index).unwrap();
        let mut pack = packed.pack;
        let last = pack.len() - 1;
        pack[last] ^= 1;
        assert!(merge_packs(&[(&index, &pack)]).is_err());
    }
}
