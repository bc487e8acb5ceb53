//! Archives that other tar readers read differently from the `tar` crate.
//!
//! A registry checks an archive with this unpacker; people and other
//! installers may unpack the same bytes with GNU tar or Python's `tarfile`.
//! Where those readers would see another path, another file or more
//! entries, the archive is refused, so what was checked is what anyone gets.
//! Each test first shows, by running the other reader, that the difference
//! is real, then that the unpacker refuses the archive.

mod support;

use skillpkg_index::archive::UnpackError;
use support::*;

const SKILL_MD: &[u8] = b"---\nname: s\ndescription: d\n---\n";

/// Expects `tar` (uncompressed) to be refused with a message holding every
/// one of `needles`.
fn assert_refused_saying(tar: &[u8], needles: &[&str]) -> UnpackError {
    let error = refused(&gzip(tar));
    let text = chain(&error);
    for needle in needles {
        assert!(text.contains(needle), "`{needle}` not in: {text}");
    }
    error
}

// Global headers.

/// GNU tar and Python apply a global header's records to every entry after
/// it; the `tar` crate skips it.
#[test]
fn pax_global_header_with_a_path_is_refused() {
    let tar = RawTar::default()
        .pax_global(&[("path", b"../../SKILL.md")])
        .file("SKILL.md", 0o644, SKILL_MD)
        .finish();
    assert_eq!(python_names(&tar), ["../../SKILL.md"]);
    assert_eq!(gnu_tar_names(&tar), ["../../SKILL.md"]);
    let error = assert_refused_saying(&tar, &["PAX global header"]);
    assert!(
        matches!(
            error,
            UnpackError::UnsupportedEntry {
                kind: "PAX global header",
                ..
            }
        ),
        "{error:?}"
    );
}

/// `git archive` writes a global header with only a comment: harmless, but
/// still refused, since no reader's handling of it is worth depending on.
#[test]
fn pax_global_header_with_only_a_comment_is_refused() {
    let tar = RawTar::default()
        .pax_global(&[("comment", b"4b825dc642cb6eb9a060e54bf8d69288fbee4904")])
        .file("SKILL.md", 0o644, SKILL_MD)
        .finish();
    assert_refused_saying(&tar, &["PAX global header"]);
}

// PAX extended headers.

/// GNU tar and Python keep the last of two `path` records; the `tar` crate
/// the first.
#[test]
fn repeated_pax_path_record_is_refused() {
    let tar = RawTar::default()
        .pax(&[("path", b"SKILL.md"), ("path", b"scripts/run.sh")])
        .file("SKILL.md", 0o644, SKILL_MD)
        .finish();
    assert_eq!(python_names(&tar), ["scripts/run.sh"]);
    assert_eq!(gnu_tar_names(&tar), ["scripts/run.sh"]);
    assert_refused_saying(&tar, &["`SKILL.md`", "`path` appears twice"]);
}

/// The `tar` crate skips a record it cannot parse and reads the `path`
/// after it; GNU tar and Python stop at the bad record.
#[test]
fn malformed_pax_record_is_refused() {
    let mut records = b"garbage\n".to_vec();
    records.extend_from_slice(&pax_records(&[("path", b"elsewhere.md")]));
    let tar = RawTar::default()
        .entry(b'x', b"././@PaxHeader", 0o644, &records)
        .file("SKILL.md", 0o644, SKILL_MD)
        .finish();
    assert_eq!(python_names(&tar), ["SKILL.md"]);
    assert_refused_saying(&tar, &["PAX record is malformed"]);
}

/// GNU tar and Python rebuild a sparse file from `GNU.sparse.*` records,
/// under the name in `GNU.sparse.name`; the `tar` crate sees a plain file
/// named `GNUSparseFile.0/...` holding the sparse map.
#[test]
fn pax_gnu_sparse_records_are_refused() {
    let mut data = b"1\n0\n2\n".to_vec();
    data.resize(512, 0);
    data.extend_from_slice(b"hi");
    let tar = RawTar::default()
        .pax(&[
            ("GNU.sparse.major", b"1"),
            ("GNU.sparse.minor", b"0"),
            ("GNU.sparse.name", b"SKILL.md"),
            ("GNU.sparse.realsize", b"2"),
        ])
        .file("GNUSparseFile.0/SKILL.md", 0o644, &data)
        .finish();
    assert_eq!(python_names(&tar), ["SKILL.md"]);
    assert_eq!(gnu_tar_names(&tar), ["SKILL.md"]);
    assert_refused_saying(&tar, &["`GNU.sparse.major`", "not one skillpkg accepts"]);
}

#[test]
fn pax_linkpath_on_a_regular_file_is_refused() {
    let tar = RawTar::default()
        .pax(&[("linkpath", b"/etc/passwd")])
        .file("SKILL.md", 0o644, SKILL_MD)
        .finish();
    assert_refused_saying(&tar, &["`linkpath`"]);
}

/// Every record that could change what a reader writes is refused, not just
/// the ones above: charsets, xattrs, star's file types.
#[test]
fn other_pax_records_are_refused() {
    for key in [
        "hdrcharset",
        "SCHILY.filetype",
        "SCHILY.xattr.user.x",
        "LIBARCHIVE.xattr.x",
    ] {
        let tar = RawTar::default()
            .pax(&[(key, b"BINARY")])
            .file("SKILL.md", 0o644, SKILL_MD)
            .finish();
        assert_refused_saying(&tar, &[&format!("`{key}`")]);
    }
}

/// The `tar` crate ignores a `size` that is not a number and uses the
/// header's; GNU tar and Python fail.
#[test]
fn pax_size_that_is_not_a_number_is_refused() {
    let tar = RawTar::default()
        .pax(&[("size", b"0x8")])
        .file("SKILL.md", 0o644, SKILL_MD)
        .finish();
    assert_refused_saying(&tar, &["`size`", "0x8"]);
}

#[test]
fn ordinary_pax_records_are_accepted() {
    let tar = RawTar::default()
        .pax(&[
            ("path", b"SKILL.md"),
            ("size", b"31"),
            ("mtime", b"315532800.5"),
            ("atime", b"315532800"),
            ("uid", b"0"),
            ("gname", b"staff"),
            ("comment", b"made by hand"),
        ])
        .file("placeholder", 0o644, SKILL_MD)
        .finish();
    let unpacked = accepted(&gzip(&tar));
    assert_eq!(unpacked.listing(), ["SKILL.md"]);
}

// GNU long names and links.

/// With a GNU long name and then a PAX header, GNU tar takes the PAX path
/// and the `tar` crate the long name.
#[test]
fn gnu_long_name_then_different_pax_path_is_refused() {
    let tar = RawTar::default()
        .gnu_long_name(b"SKILL.md")
        .pax(&[("path", b"other.md")])
        .file("placeholder", 0o644, SKILL_MD)
        .finish();
    assert_eq!(gnu_tar_names(&tar), ["other.md"]);
    assert_refused_saying(&tar, &["GNU long name", "PAX path"]);
}

/// In the other order, GNU tar and Python both take the PAX path.
#[test]
fn pax_path_then_different_gnu_long_name_is_refused() {
    let tar = RawTar::default()
        .pax(&[("path", b"other.md")])
        .gnu_long_name(b"SKILL.md")
        .file("placeholder", 0o644, SKILL_MD)
        .finish();
    assert_eq!(python_names(&tar), ["other.md"]);
    assert_eq!(gnu_tar_names(&tar), ["other.md"]);
    assert_refused_saying(&tar, &["GNU long name", "PAX path"]);
}

#[test]
fn gnu_long_name_agreeing_with_pax_path_is_accepted() {
    let tar = RawTar::default()
        .gnu_long_name(b"SKILL.md")
        .pax(&[("path", b"SKILL.md")])
        .file("placeholder", 0o644, SKILL_MD)
        .finish();
    assert_eq!(accepted(&gzip(&tar)).listing(), ["SKILL.md"]);
}

#[test]
fn gnu_long_link_on_a_regular_file_is_refused() {
    let mut data = b"/etc/passwd".to_vec();
    data.push(0);
    let tar = RawTar::default()
        .entry(b'K', b"././@LongLink", 0o644, &data)
        .file("SKILL.md", 0o644, SKILL_MD)
        .finish();
    assert_refused_saying(&tar, &["`SKILL.md`", "link target"]);
}

#[test]
fn link_name_in_a_regular_file_header_is_refused() {
    let tar = RawTar::default()
        .raw(
            ustar_header(
                b'0',
                b"SKILL.md",
                0o644,
                SKILL_MD.len() as u64,
                b"/etc/passwd",
            ),
            SKILL_MD,
        )
        .finish();
    assert_refused_saying(&tar, &["`SKILL.md`", "link target"]);
}

/// The `tar` crate itself refuses two PAX headers, or two long names, for
/// one entry (GNU tar merges them): kept refused.
#[test]
fn two_extension_headers_for_one_entry_are_refused() {
    let two_pax = RawTar::default()
        .pax(&[("path", b"a")])
        .pax(&[("path", b"b")])
        .file("SKILL.md", 0o644, SKILL_MD)
        .finish();
    assert!(matches!(refused(&gzip(&two_pax)), UnpackError::Corrupt(_)));
    let two_long_names = RawTar::default()
        .gnu_long_name(b"a")
        .gnu_long_name(b"b")
        .file("SKILL.md", 0o644, SKILL_MD)
        .finish();
    assert!(matches!(
        refused(&gzip(&two_long_names)),
        UnpackError::Corrupt(_)
    ));
}

// Headers.

/// GNU tar and Python read the data of a directory entry as more headers;
/// the `tar` crate skips it. Here it hides a file.
#[test]
fn directory_entry_with_data_is_refused() {
    let hidden = RawTar::default()
        .file("hidden.md", 0o644, b"x")
        .unterminated();
    let tar = RawTar::default()
        .entry(b'5', b"docs/", 0o755, &hidden)
        .file("SKILL.md", 0o644, SKILL_MD)
        .finish();
    assert_eq!(python_names(&tar), ["docs", "hidden.md", "SKILL.md"]);
    assert_eq!(gnu_tar_names(&tar), ["docs/", "hidden.md", "SKILL.md"]);
    assert_refused_saying(&tar, &["`docs/`", "directory", "1024 bytes"]);
}

/// Python prepends the ustar prefix field in any header; the `tar` crate
/// and GNU tar read it only in a ustar header.
#[test]
fn prefix_field_outside_a_ustar_header_is_refused() {
    for magic in [b"ustar  \0", b"\0\0\0\0\0\0\0\0"] {
        let header = ustar_header(b'0', b"SKILL.md", 0o644, SKILL_MD.len() as u64, b"");
        let tar = RawTar::default()
            .raw(with_magic(header, magic, b"../.."), SKILL_MD)
            .finish();
        assert_eq!(python_names(&tar), ["../../SKILL.md"], "{magic:?}");
        assert_refused_saying(&tar, &["`SKILL.md`", "prefix"]);
    }
}

/// GNU tar extracts an entry of an unknown type as a regular file.
#[test]
fn unknown_entry_type_is_refused() {
    let tar = RawTar::default()
        .entry(b'Z', b"SKILL.md", 0o644, SKILL_MD)
        .finish();
    assert_eq!(gnu_tar_names(&tar), ["SKILL.md"]);
    let error = assert_refused_saying(&tar, &["`SKILL.md`", "type `Z`"]);
    assert!(
        matches!(error, UnpackError::UnknownEntryType { typeflag: 'Z', .. }),
        "{error:?}"
    );
}

/// A PAX header in a pre-POSIX (v7) header is not folded by the `tar` crate
/// but is by GNU tar.
#[test]
fn pax_header_in_a_v7_header_is_refused() {
    let records = pax_records(&[("path", b"other.md")]);
    let header = ustar_header(b'x', b"././@PaxHeader", 0o644, records.len() as u64, b"");
    let tar = RawTar::default()
        .raw(with_magic(header, b"\0\0\0\0\0\0\0\0", b""), &records)
        .file("SKILL.md", 0o644, SKILL_MD)
        .finish();
    assert_refused_saying(&tar, &["PAX extended header"]);
}
