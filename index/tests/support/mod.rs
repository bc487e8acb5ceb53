//! What the hostile-archive tests share: a tar writer that puts down any
//! header byte for byte, gzip, and the checks that an unpack was refused
//! without leaving anything behind, or accepted.
//!
//! Each test crate uses a part of it.
#![allow(
    dead_code,
    reason = "each test crate uses a part of the support module"
)]

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use flate2::Compression;
use flate2::write::GzEncoder;
use sha2::{Digest, Sha256};
use skillpkg_index::archive::{
    FIXED_MTIME, Limits, PathProblem, UnpackError, UnpackedSkill, unpack,
};
use tempfile::TempDir;

pub(crate) const BLOCK: usize = 512;

/// A tar stream built one raw header at a time.
#[derive(Debug, Default)]
pub(crate) struct RawTar {
    pub(crate) bytes: Vec<u8>,
}

impl RawTar {
    /// Appends a regular file.
    pub(crate) fn file(&mut self, path: &str, mode: u32, data: &[u8]) -> &mut Self {
        self.entry(b'0', path.as_bytes(), mode, data)
    }

    /// Appends a directory; `path` is written as given, so end it with `/`.
    pub(crate) fn dir(&mut self, path: &str) -> &mut Self {
        self.entry(b'5', path.as_bytes(), 0o755, b"")
    }

    /// Appends a symlink (`b'2'`) or hard link (`b'1'`) to `target`.
    pub(crate) fn link(&mut self, typeflag: u8, path: &str, target: &str) -> &mut Self {
        self.raw(
            ustar_header(typeflag, path.as_bytes(), 0o777, 0, target.as_bytes()),
            b"",
        )
    }

    /// Appends an entry of any type whose header declares `data.len()` bytes.
    pub(crate) fn entry(&mut self, typeflag: u8, path: &[u8], mode: u32, data: &[u8]) -> &mut Self {
        let header = ustar_header(typeflag, path, mode, data.len() as u64, b"");
        self.raw(header, data)
    }

    /// Appends a PAX extended header (`x`) for the next entry.
    pub(crate) fn pax(&mut self, records: &[(&str, &[u8])]) -> &mut Self {
        self.entry(b'x', b"././@PaxHeader", 0o644, &pax_records(records))
    }

    /// Appends a PAX global header (`g`), as `git archive` writes first.
    pub(crate) fn pax_global(&mut self, records: &[(&str, &[u8])]) -> &mut Self {
        self.entry(b'g', b"pax_global_header", 0o666, &pax_records(records))
    }

    /// Appends a GNU long name entry (`L`) naming the next entry.
    pub(crate) fn gnu_long_name(&mut self, name: &[u8]) -> &mut Self {
        let mut data = name.to_vec();
        data.push(0);
        self.entry(b'L', b"././@LongLink", 0o644, &data)
    }

    /// Appends `header`, then `data` padded to a whole block, whatever size
    /// the header declares.
    pub(crate) fn raw(&mut self, header: [u8; BLOCK], data: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(&header);
        self.bytes.extend_from_slice(data);
        self.bytes
            .resize(self.bytes.len().next_multiple_of(BLOCK), 0);
        self
    }

    /// Returns the stream so far, without the end-of-archive marker.
    pub(crate) fn unterminated(&self) -> Vec<u8> {
        self.bytes.clone()
    }

    /// Returns the stream followed by the end-of-archive marker.
    pub(crate) fn finish(&self) -> Vec<u8> {
        let mut bytes = self.unterminated();
        bytes.extend_from_slice(&[0; 2 * BLOCK]);
        bytes
    }
}

/// Returns a ustar header, checksum included. Paths over 100 bytes are split
/// into the `prefix` and `name` fields the way ustar writers do.
pub(crate) fn ustar_header(
    typeflag: u8,
    path: &[u8],
    mode: u32,
    size: u64,
    linkname: &[u8],
) -> [u8; BLOCK] {
    let (prefix, name) = split_ustar_path(path);
    let mut header = [0; BLOCK];
    header[..name.len()].copy_from_slice(name);
    octal(&mut header[100..108], mode.into());
    octal(&mut header[108..116], 0); // uid
    octal(&mut header[116..124], 0); // gid
    octal(&mut header[124..136], size);
    octal(&mut header[136..148], FIXED_MTIME);
    header[156] = typeflag;
    header[157..157 + linkname.len()].copy_from_slice(linkname);
    header[257..263].copy_from_slice(b"ustar\0");
    header[263..265].copy_from_slice(b"00");
    header[345..345 + prefix.len()].copy_from_slice(prefix);
    seal(&mut header);
    header
}

/// A GNU-format (`ustar  \0`) sparse file header with an empty sparse map,
/// which the `tar` crate parses, so the unpacker sees its type.
pub(crate) fn gnu_sparse_header(path: &str) -> [u8; BLOCK] {
    let mut header = ustar_header(b'S', path.as_bytes(), 0o644, 0, b"");
    header[257..265].copy_from_slice(b"ustar  \0");
    octal(&mut header[483..495], 0); // realsize
    seal(&mut header);
    header
}

pub(crate) fn split_ustar_path(path: &[u8]) -> (&[u8], &[u8]) {
    if path.len() <= 100 {
        return (b"", path);
    }
    let split = (0..path.len())
        .rfind(|&at| path[at] == b'/' && at <= 155 && path.len() - at - 1 <= 100)
        .expect("the path fits in ustar's prefix and name fields");
    (&path[..split], &path[split + 1..])
}

/// Writes `value` as zero-padded octal, NUL-terminated, filling `field`.
pub(crate) fn octal(field: &mut [u8], value: u64) {
    let digits = field.len() - 1;
    let text = format!("{value:0digits$o}");
    assert_eq!(
        text.len(),
        digits,
        "{value} does not fit in {digits} digits"
    );
    field[..digits].copy_from_slice(text.as_bytes());
    field[digits] = 0;
}

/// Fills in the checksum: the byte sum with the field itself as spaces.
pub(crate) fn seal(header: &mut [u8; BLOCK]) {
    header[148..156].fill(b' ');
    let sum: u32 = header.iter().map(|&byte| u32::from(byte)).sum();
    header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
}

/// Encodes `%d key=value\n` records, where the length counts its own digits.
pub(crate) fn pax_records(records: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    for (key, value) in records {
        let rest = 1 + key.len() + 1 + value.len() + 1; // ' ', '=', '\n'
        let mut length = rest + 1;
        while length != rest + length.to_string().len() {
            length = rest + length.to_string().len();
        }
        out.extend_from_slice(format!("{length} {key}=").as_bytes());
        out.extend_from_slice(value);
        out.push(b'\n');
    }
    out
}

pub(crate) fn gzip(tar: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(tar).expect("write to memory");
    encoder.finish().expect("write to memory")
}

/// Unpacks `tarball` into a fresh, empty parent folder, expects a refusal,
/// checks that the target never appeared and nothing was left behind, and
/// returns the error.
pub(crate) fn refused(tarball: &[u8]) -> UnpackError {
    let parent = TempDir::new().expect("temp dir");
    let target = parent.path().join("skill");
    let error = unpack(tarball, &target, &Limits::default()).expect_err("the archive was accepted");
    assert!(
        target.symlink_metadata().is_err(),
        "the target exists after {error:?}"
    );
    assert_eq!(
        names(parent.path()),
        Vec::<String>::new(),
        "left behind after {error:?}"
    );
    error
}

/// A successful unpack, in a temporary folder that lives as long as this.
pub(crate) struct Unpacked {
    _parent: TempDir,
    pub(crate) root: PathBuf,
    pub(crate) skill: UnpackedSkill,
}

impl Unpacked {
    pub(crate) fn read(&self, path: &str) -> Vec<u8> {
        fs_err::read(self.root.join(path)).expect("read an unpacked file")
    }

    pub(crate) fn mode(&self, path: &str) -> u32 {
        let metadata = fs_err::symlink_metadata(self.root.join(path)).expect("stat");
        assert!(metadata.is_file(), "{path} is not a regular file");
        metadata.permissions().mode() & 0o7777
    }

    /// Every path under the root, folders ending in `/`, sorted.
    pub(crate) fn listing(&self) -> Vec<String> {
        let mut paths = Vec::new();
        list(&self.root, "", &mut paths);
        paths.sort();
        paths
    }
}

pub(crate) fn list(dir: &Path, prefix: &str, paths: &mut Vec<String>) {
    for name in names(dir) {
        let path = dir.join(&name);
        if fs_err::symlink_metadata(&path).expect("stat").is_dir() {
            paths.push(format!("{prefix}{name}/"));
            list(&path, &format!("{prefix}{name}/"), paths);
        } else {
            paths.push(format!("{prefix}{name}"));
        }
    }
}

pub(crate) fn accepted(tarball: &[u8]) -> Unpacked {
    let parent = TempDir::new().expect("temp dir");
    let root = parent.path().join("skill");
    let skill = unpack(tarball, &root, &Limits::default()).expect("the archive was refused");
    assert_eq!(
        names(parent.path()),
        ["skill"],
        "the staging folder remains"
    );
    Unpacked {
        _parent: parent,
        root,
        skill,
    }
}

pub(crate) fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs_err::read_dir(dir)
        .expect("list a folder")
        .map(|entry| {
            let entry = entry.expect("list a folder");
            entry.file_name().into_string().expect("UTF-8 name")
        })
        .collect();
    names.sort();
    names
}

/// The `h2:` hash computed from its definition (docs/archive-format.md),
/// independently of the crate: files are (path, contents, mode).
pub(crate) fn expected_tree(files: &[(&str, &[u8], u32)]) -> String {
    let mut sorted = files.to_vec();
    sorted.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    let summary: String = sorted
        .iter()
        .map(|(path, data, mode)| {
            let mode = if mode & 0o111 != 0 {
                "100755"
            } else {
                "100644"
            };
            format!("{:x} {mode} {path}\n", Sha256::digest(data))
        })
        .collect();
    format!(
        "h2:{}",
        base64::engine::general_purpose::STANDARD.encode(Sha256::digest(summary))
    )
}

pub(crate) fn one_file(path: &str) -> Vec<u8> {
    gzip(&RawTar::default().file(path, 0o644, b"x").finish())
}

pub(crate) fn assert_unsafe_path(tarball: &[u8], expected: &PathProblem) {
    let error = refused(tarball);
    assert!(
        matches!(&error, UnpackError::UnsafePath { problem, .. } if problem == expected),
        "{error:?}"
    );
}

/// Returns `error` and its causes, joined with `: ` as the command line
/// prints them, for checking what a person would read.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Returns the member names Python's `tarfile` reads from `tar` (plain or
/// gzipped): what a Python installer would unpack.
pub(crate) fn python_names(tar: &[u8]) -> Vec<String> {
    let script = "import io, sys, tarfile\n\
        archive = tarfile.open(fileobj=io.BytesIO(sys.stdin.buffer.read()))\n\
        print('\\n'.join(member.name for member in archive.getmembers()))\n";
    let lines = run_reader(
        std::process::Command::new("python3").args(["-c", script]),
        tar,
    );
    lines.lines().map(str::to_owned).collect()
}

/// Returns the member names GNU tar lists in `tar` (plain, uncompressed).
pub(crate) fn gnu_tar_names(tar: &[u8]) -> Vec<String> {
    let lines = run_reader(
        std::process::Command::new("tar").args(["--list", "--file", "-"]),
        tar,
    );
    lines.lines().map(str::to_owned).collect()
}

fn run_reader(command: &mut std::process::Command, input: &[u8]) -> String {
    use std::process::Stdio;
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the other tar reader");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("feed the other tar reader");
    let output = child.wait_with_output().expect("run the other tar reader");
    String::from_utf8(output.stdout).expect("UTF-8 names")
}

/// Returns `header` with another magic and version (bytes 257..265) and
/// `prefix` in the ustar prefix field, resealed.
pub(crate) fn with_magic(mut header: [u8; BLOCK], magic: &[u8; 8], prefix: &[u8]) -> [u8; BLOCK] {
    header[257..265].copy_from_slice(magic);
    header[345..500].fill(0);
    header[345..345 + prefix.len()].copy_from_slice(prefix);
    seal(&mut header);
    header
}
