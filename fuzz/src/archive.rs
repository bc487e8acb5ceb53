//! `unpack_raw` and `unpack_entries`: the hardened unpacker that every
//! archive from a registry goes through, fed raw bytes (what an attacker
//! sends) and archives built from fuzzed entries (what gets past the gzip
//! and tar framing, which raw bytes rarely do).
//!
//! Both check the unpacker's promises after every run: a refused archive
//! leaves nothing behind; an accepted one created exactly the files it
//! reports, with the sizes, hashes and modes it reports, no link, nothing
//! outside the target, and every limit held.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use arbitrary::Arbitrary;
use flate2::Compression;
use flate2::write::GzEncoder;
use skillpkg_index::archive::{self, Limits, UnpackedSkill};
use skillpkg_index::checksum::Checksum;

/// Unpacks `data` as a `.tgz` with the default limits.
pub fn unpack_raw(data: &[u8]) {
    unpack_and_check(data, &Limits::default());
}

/// An archive described entry by entry.
#[derive(Arbitrary, Debug)]
pub struct FuzzArchive {
    pub entries: Vec<FuzzEntry>,
    /// Whether to write tar's two zero blocks at the end.
    pub end_blocks: bool,
    /// Bytes after the tar stream, inside the gzip stream.
    pub tar_trailer: Vec<u8>,
    /// Bytes cut from the end of the gzip stream.
    pub cut: u8,
    /// Bytes after the gzip stream.
    pub gzip_trailer: Vec<u8>,
    /// Unpack with small limits, so that every cap can be reached.
    pub tight: bool,
}

/// One tar entry, with its optional PAX or GNU long-name record before it.
#[derive(Arbitrary, Debug)]
pub struct FuzzEntry {
    pub path: FuzzPath,
    pub kind: Kind,
    pub format: Format,
    pub mode: u32,
    pub content: Vec<u8>,
    /// A size for the header that differs from the content's.
    pub header_size: Option<u64>,
    pub long_name: Option<FuzzPath>,
    pub pax: Vec<(PaxKey, Vec<u8>)>,
    /// Whether to spoil the header checksum.
    pub bad_checksum: bool,
}

/// A path: raw bytes, or components chosen so that traversal, case folding,
/// Unicode normalisation and Windows names come up often.
#[derive(Arbitrary, Debug)]
pub enum FuzzPath {
    Raw(Vec<u8>),
    Parts(Vec<Part>, bool),
}

#[derive(Arbitrary, Debug)]
pub enum Part {
    Name(u8),
    Text(String),
}

/// Component names that have made unpackers write where they should not.
const NAMES: &[&str] = &[
    "SKILL.md", "skill.md", "scripts", "Scripts", "a", "A", ".", "..", "", "...", "CON", "con.txt",
    "aux", "COM1", "COM¹", "x ", "x.", "e\u{301}", "\u{e9}", "C:", "c:x", "\\", "a\\b", "/", "\0",
    "\u{212a}", "k", "ﬀ", "ff", "a:b", "a*b", ".git", "\u{202e}", "./", "../",
];

#[derive(Arbitrary, Debug)]
pub enum Kind {
    Regular,
    Directory,
    Symlink(Vec<u8>),
    HardLink(Vec<u8>),
    Char,
    Block,
    Fifo,
    GnuSparse,
    Continuous,
    GlobalHeader,
    Other(u8),
}

#[derive(Arbitrary, Debug)]
pub enum Format {
    Ustar,
    Gnu,
    Old,
}

#[derive(Arbitrary, Debug)]
pub enum PaxKey {
    Path,
    LinkPath,
    Size,
    Mtime,
    SparseMajor,
    SparseMinor,
    SparseName,
    SparseRealSize,
    Other(String),
}

impl PaxKey {
    fn as_str(&self) -> &str {
        match self {
            Self::Path => "path",
            Self::LinkPath => "linkpath",
            Self::Size => "size",
            Self::Mtime => "mtime",
            Self::SparseMajor => "GNU.sparse.major",
            Self::SparseMinor => "GNU.sparse.minor",
            Self::SparseName => "GNU.sparse.name",
            Self::SparseRealSize => "GNU.sparse.realsize",
            Self::Other(key) => key,
        }
    }
}

impl FuzzPath {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Self::Raw(bytes) => bytes.clone(),
            Self::Parts(parts, trailing_slash) => {
                let mut path = parts
                    .iter()
                    .map(|part| match part {
                        Part::Name(index) => NAMES[usize::from(*index) % NAMES.len()].to_owned(),
                        Part::Text(text) => text.clone(),
                    })
                    .collect::<Vec<_>>()
                    .join("/")
                    .into_bytes();
                if *trailing_slash {
                    path.push(b'/');
                }
                path
            }
        }
    }
}

/// Builds the `.tgz` that `archive` describes, then unpacks it.
pub fn unpack_entries(archive: &FuzzArchive) {
    let limits = if archive.tight {
        Limits {
            max_unpacked_bytes: 1024,
            max_packed_bytes: 2048,
            max_entries: 4,
            max_depth: 3,
            max_path_bytes: 24,
        }
    } else {
        Limits::default()
    };
    unpack_and_check(&build(archive), &limits);
}

/// Returns the `.tgz` bytes of `archive`.
pub fn build(archive: &FuzzArchive) -> Vec<u8> {
    let mut tar = Vec::new();
    for entry in &archive.entries {
        append_entry(&mut tar, entry);
    }
    if archive.end_blocks {
        tar.extend_from_slice(&[0; 1024]);
    }
    tar.extend_from_slice(&archive.tar_trailer);
    let mut gzip = GzEncoder::new(Vec::new(), Compression::fast());
    gzip.write_all(&tar).expect("writing to memory");
    let mut bytes = gzip.finish().expect("writing to memory");
    bytes.truncate(bytes.len().saturating_sub(usize::from(archive.cut)));
    bytes.extend_from_slice(&archive.gzip_trailer);
    bytes
}

fn append_entry(tar: &mut Vec<u8>, entry: &FuzzEntry) {
    if let Some(long_name) = &entry.long_name {
        let mut name = long_name.bytes();
        name.push(0);
        let mut header = new_header(&entry.format);
        set_name(&mut header, b"././@LongLink");
        header.set_entry_type(tar::EntryType::GNULongName);
        append_raw(tar, header, &name, None, false);
    }
    if !entry.pax.is_empty() {
        let mut records = Vec::new();
        for (key, value) in &entry.pax {
            records.extend(pax_record(key.as_str().as_bytes(), value));
        }
        let mut header = new_header(&Format::Ustar);
        set_name(&mut header, b"PaxHeaders/x");
        header.set_entry_type(tar::EntryType::XHeader);
        append_raw(tar, header, &records, None, false);
    }
    let mut header = new_header(&entry.format);
    set_name(&mut header, &entry.path.bytes());
    header.set_mode(entry.mode);
    let link = match &entry.kind {
        Kind::Symlink(target) | Kind::HardLink(target) => Some(target.as_slice()),
        _ => None,
    };
    if let Some(link) = link {
        let field = &mut header.as_old_mut().linkname;
        let length = link.len().min(field.len());
        field[..length].copy_from_slice(&link[..length]);
    }
    header.set_entry_type(match &entry.kind {
        Kind::Regular => tar::EntryType::Regular,
        Kind::Directory => tar::EntryType::Directory,
        Kind::Symlink(_) => tar::EntryType::Symlink,
        Kind::HardLink(_) => tar::EntryType::Link,
        Kind::Char => tar::EntryType::Char,
        Kind::Block => tar::EntryType::Block,
        Kind::Fifo => tar::EntryType::Fifo,
        Kind::GnuSparse => tar::EntryType::GNUSparse,
        Kind::Continuous => tar::EntryType::Continuous,
        Kind::GlobalHeader => tar::EntryType::XGlobalHeader,
        Kind::Other(byte) => tar::EntryType::new(*byte),
    });
    append_raw(
        tar,
        header,
        &entry.content,
        entry.header_size,
        entry.bad_checksum,
    );
}

/// One PAX record, `<length> <key>=<value>\n`, with the length that counts
/// itself.
fn pax_record(key: &[u8], value: &[u8]) -> Vec<u8> {
    let rest = key.len() + value.len() + 3;
    let mut length = rest + 1;
    while length.to_string().len() + rest != length {
        length += 1;
    }
    let mut record = format!("{length} ").into_bytes();
    record.extend_from_slice(key);
    record.push(b'=');
    record.extend_from_slice(value);
    record.push(b'\n');
    record
}

fn new_header(format: &Format) -> tar::Header {
    let mut header = match format {
        Format::Ustar => tar::Header::new_ustar(),
        Format::Gnu => tar::Header::new_gnu(),
        Format::Old => tar::Header::new_old(),
    };
    header.set_mtime(archive::FIXED_MTIME);
    header.set_uid(0);
    header.set_gid(0);
    header
}

/// Writes `name` into the header's name field, and what does not fit into
/// ustar's prefix field when the header has one.
fn set_name(header: &mut tar::Header, name: &[u8]) {
    if name.len() > 100
        && let Some(ustar) = header.as_ustar_mut()
    {
        let split = name.len() - 100;
        let prefix = &name[..split.min(155)];
        ustar.prefix[..prefix.len()].copy_from_slice(prefix);
        ustar.name.copy_from_slice(&name[split..]);
        return;
    }
    let field = &mut header.as_old_mut().name;
    let length = name.len().min(field.len());
    field[..length].copy_from_slice(&name[..length]);
}

fn append_raw(
    tar: &mut Vec<u8>,
    mut header: tar::Header,
    content: &[u8],
    header_size: Option<u64>,
    bad_checksum: bool,
) {
    header.set_size(header_size.unwrap_or(content.len() as u64));
    header.set_cksum();
    if bad_checksum {
        header.as_old_mut().cksum[0] ^= 1;
    }
    tar.extend_from_slice(header.as_bytes());
    tar.extend_from_slice(content);
    tar.resize(tar.len().next_multiple_of(512), 0);
}

/// Unpacks `tgz` into a fresh target and checks what happened on disk.
fn unpack_and_check(tgz: &[u8], limits: &Limits) {
    let scratch = crate::scratch();
    let parent = scratch.join("unpack");
    fs_err::create_dir_all(&parent).expect("the scratch folder can be made");
    crate::clear(&parent);
    let target = parent.join("target");

    let result = archive::unpack(tgz, &target, limits);
    assert_eq!(
        crate::names_in(scratch),
        ["unpack"],
        "unpacking wrote beside its parent folder"
    );
    match result {
        Ok(unpacked) => {
            assert_eq!(
                crate::names_in(&parent),
                ["target"],
                "unpacking left more than its target"
            );
            check_unpacked(&target, &unpacked, limits);
        }
        Err(_) => assert!(
            crate::names_in(&parent).is_empty(),
            "a refused archive left {:?} behind",
            crate::names_in(&parent)
        ),
    }
    crate::clear(&parent);
}

fn check_unpacked(target: &Path, unpacked: &UnpackedSkill, limits: &Limits) {
    let mut on_disk = Vec::new();
    let mut entries = 0;
    list_files(target, "", &mut on_disk, &mut entries);
    on_disk.sort();
    let reported: Vec<&str> = unpacked
        .files
        .iter()
        .map(|file| file.path.as_str())
        .collect();
    assert_eq!(
        on_disk.iter().map(String::as_str).collect::<Vec<_>>(),
        reported,
        "the files on disk are not the files reported"
    );
    // Folders that only appear as parents are not entries, so the bound on
    // what is on disk is the entry limit times the depth limit.
    assert!(
        entries <= limits.max_entries * limits.max_depth,
        "{entries} files and folders unpacked"
    );
    let mut total = 0;
    for file in &unpacked.files {
        assert!(archive::check_portable_path(&file.path, limits).is_ok());
        let path = target.join(&file.path);
        let bytes = fs_err::read(&path).expect("a reported file exists");
        assert_eq!(bytes.len() as u64, file.size, "{}: size", file.path);
        assert_eq!(
            Checksum::of(&bytes).digest(),
            &file.sha256,
            "{}: sha256",
            file.path
        );
        let mode = fs_err::metadata(&path)
            .expect("a reported file exists")
            .permissions()
            .mode()
            & 0o7777;
        assert_eq!(mode, if file.executable { 0o755 } else { 0o644 });
        total += file.size;
    }
    assert!(total <= limits.max_unpacked_bytes, "{total} bytes unpacked");
}

/// Collects the files below `dir`, failing on anything but files and folders.
fn list_files(dir: &Path, prefix: &str, files: &mut Vec<String>, entries: &mut usize) {
    for name in crate::names_in(dir) {
        let path = dir.join(&name);
        let relative = format!("{prefix}{name}");
        let kind = path.symlink_metadata().expect("listed").file_type();
        *entries += 1;
        if kind.is_dir() {
            list_files(&path, &format!("{relative}/"), files, entries);
        } else {
            assert!(kind.is_file(), "{relative} is neither a file nor a folder");
            files.push(relative);
        }
    }
}
