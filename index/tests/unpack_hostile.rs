//! Hostile archives against the hardened unpacker: every way a `.tgz` can try
//! to escape its folder, collide with itself, smuggle in a link or device,
//! lie about its sizes or blow up in size is refused with its own error, and
//! a refused archive leaves nothing behind beside the target.
//!
//! The archives are written header by header with [`RawTar`] rather than with
//! the `tar` crate's builder, which refuses to write `..`, absolute paths and
//! several of the other malformed entries tested here. Every test that
//! expects a refusal goes through [`refused`], which also checks that the
//! target never appeared and that the staging folder was removed.

use std::os::unix::fs::PermissionsExt as _;

use sha2::{Digest, Sha256};
use skillpkg_index::archive::pack::SizeKind;
use skillpkg_index::archive::{
    DEFAULT_MAX_BYTES, Limits, PathProblem, UnpackError, pack_dir, unpack,
};
use tempfile::TempDir;

mod support;

use support::*;

// Paths that climb out or are absolute.

#[test]
fn refuses_parent_traversal() {
    assert_unsafe_path(&one_file("../x"), &PathProblem::Traversal);
}

#[test]
fn refuses_traversal_below_a_folder() {
    assert_unsafe_path(&one_file("a/../../x"), &PathProblem::Traversal);
}

#[test]
fn refuses_absolute_path() {
    assert_unsafe_path(&one_file("/etc/x"), &PathProblem::Absolute);
}

#[test]
fn refuses_windows_drive_path() {
    assert_unsafe_path(&one_file("C:\\x"), &PathProblem::Drive('C'));
}

#[test]
fn refuses_backslash_path() {
    assert_unsafe_path(&one_file("a\\b"), &PathProblem::Backslash);
}

// Links, devices and other special entries.

#[test]
fn refuses_symlink_to_etc_passwd() {
    let tarball = gzip(
        &RawTar::default()
            .link(b'2', "passwd", "/etc/passwd")
            .finish(),
    );
    let error = refused(&tarball);
    assert!(
        matches!(&error, UnpackError::UnsupportedEntry { path, kind: "symlink" } if path == "passwd"),
        "{error:?}"
    );
}

#[test]
fn refuses_hardlink() {
    let tarball = gzip(&RawTar::default().link(b'1', "a", "elsewhere").finish());
    let error = refused(&tarball);
    assert!(
        matches!(
            error,
            UnpackError::UnsupportedEntry {
                kind: "hard link",
                ..
            }
        ),
        "{error:?}"
    );
}

#[test]
fn refuses_hardlink_to_earlier_file() {
    let tarball = gzip(
        &RawTar::default()
            .file("SKILL.md", 0o644, b"# skill\n")
            .link(b'1', "copy.md", "SKILL.md")
            .finish(),
    );
    let error = refused(&tarball);
    assert!(
        matches!(&error, UnpackError::UnsupportedEntry { path, kind: "hard link" } if path == "copy.md"),
        "{error:?}"
    );
}

#[test]
fn refuses_symlink_replacing_folder_before_file_below_it() {
    let tarball = gzip(
        &RawTar::default()
            .dir("d/")
            .link(b'2', "d", "/tmp")
            .file("d/x", 0o644, b"escaped")
            .finish(),
    );
    let error = refused(&tarball);
    assert!(
        matches!(&error, UnpackError::UnsupportedEntry { path, kind: "symlink" } if path == "d"),
        "{error:?}"
    );
}

fn assert_unsupported(typeflag: u8, expected_kind: &str) {
    let tarball = gzip(
        &RawTar::default()
            .entry(typeflag, b"dev", 0o644, b"")
            .finish(),
    );
    let error = refused(&tarball);
    assert!(
        matches!(&error, UnpackError::UnsupportedEntry { kind, .. } if *kind == expected_kind),
        "{error:?}"
    );
}

#[test]
fn refuses_character_device() {
    assert_unsupported(b'3', "character device");
}

#[test]
fn refuses_block_device() {
    assert_unsupported(b'4', "block device");
}

#[test]
fn refuses_fifo() {
    assert_unsupported(b'6', "FIFO");
}

#[test]
fn refuses_gnu_sparse_file() {
    let tarball = gzip(
        &RawTar::default()
            .raw(gnu_sparse_header("holes"), b"")
            .finish(),
    );
    let error = refused(&tarball);
    assert!(
        matches!(
            error,
            UnpackError::UnsupportedEntry {
                kind: "GNU sparse file",
                ..
            }
        ),
        "{error:?}"
    );
}

/// A sparse type in a plain ustar header is malformed to the `tar` crate
/// itself: still refused, as corrupt rather than unsupported.
#[test]
fn refuses_sparse_type_in_ustar_header() {
    let tarball = gzip(&RawTar::default().entry(b'S', b"holes", 0o644, b"").finish());
    let error = refused(&tarball);
    assert!(matches!(error, UnpackError::Corrupt(_)), "{error:?}");
}

// Collisions.

#[test]
fn refuses_same_path_twice() {
    let tarball = gzip(
        &RawTar::default()
            .file("a", 0o644, b"first")
            .file("a", 0o644, b"second")
            .finish(),
    );
    let error = refused(&tarball);
    assert!(
        matches!(&error, UnpackError::Duplicate { path, previous } if path == "a" && previous == "a"),
        "{error:?}"
    );
}

#[test]
fn refuses_names_differing_only_in_case() {
    let tarball = gzip(
        &RawTar::default()
            .file("SKILL.md", 0o644, b"upper")
            .file("skill.md", 0o644, b"lower")
            .finish(),
    );
    let error = refused(&tarball);
    assert!(
        matches!(&error, UnpackError::Duplicate { path, previous } if path == "skill.md" && previous == "SKILL.md"),
        "{error:?}"
    );
}

#[test]
fn refuses_folders_differing_only_in_case() {
    // One folder on macOS and Windows, two on Linux: the archive would unpack
    // to different trees on different machines.
    let tarball = gzip(
        &RawTar::default()
            .file("docs/a.md", 0o644, b"a")
            .file("Docs/b.md", 0o644, b"b")
            .finish(),
    );
    let error = refused(&tarball);
    assert!(
        matches!(&error, UnpackError::Duplicate { path, previous } if path == "Docs" && previous == "docs"),
        "{error:?}"
    );
}

#[test]
fn refuses_a_folder_entry_spelled_in_another_case_after_its_contents() {
    let tarball = gzip(
        &RawTar::default()
            .file("A/b", 0o644, b"b")
            .dir("a/")
            .finish(),
    );
    let error = refused(&tarball);
    assert!(
        matches!(&error, UnpackError::Duplicate { path, previous } if path == "a" && previous == "A"),
        "{error:?}"
    );
}

#[test]
fn refuses_names_that_meet_only_under_full_case_folding() {
    let tarball = gzip(
        &RawTar::default()
            .file("\u{3c3}.md", 0o644, b"sigma")
            .file("\u{3c2}.md", 0o644, b"final sigma")
            .finish(),
    );
    let error = refused(&tarball);
    assert!(matches!(&error, UnpackError::Duplicate { .. }), "{error:?}");
}

#[test]
fn refuses_names_differing_only_in_unicode_normalisation() {
    let tarball = gzip(
        &RawTar::default()
            .file("caf\u{e9}", 0o644, b"composed")
            .file("cafe\u{301}", 0o644, b"decomposed")
            .finish(),
    );
    let error = refused(&tarball);
    assert!(
        matches!(&error, UnpackError::Duplicate { path, .. } if path == "cafe\u{301}"),
        "{error:?}"
    );
}

#[test]
fn refuses_file_used_as_folder() {
    let tarball = gzip(
        &RawTar::default()
            .file("a", 0o644, b"file")
            .file("a/b", 0o644, b"below a file")
            .finish(),
    );
    let error = refused(&tarball);
    assert!(
        matches!(&error, UnpackError::ParentIsFile { path, parent } if path == "a/b" && parent == "a"),
        "{error:?}"
    );
}

// Modes: normalised, never refused.

fn unpacked_mode(mode: u32) -> u32 {
    let unpacked = accepted(&gzip(
        &RawTar::default()
            .file("SKILL.md", 0o644, b"x")
            .file("f", mode, b"data")
            .finish(),
    ));
    let unpacked_files: Vec<_> = unpacked
        .skill
        .files
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(unpacked_files, ["SKILL.md", "f"]);
    assert_eq!(unpacked.skill.files[1].executable, mode & 0o111 != 0);
    unpacked.mode("f")
}

#[test]
fn drops_setuid_bit() {
    assert_eq!(unpacked_mode(0o4755), 0o755);
}

#[test]
fn drops_setgid_bit() {
    assert_eq!(unpacked_mode(0o2755), 0o755);
}

#[test]
fn drops_world_write_bits() {
    assert_eq!(unpacked_mode(0o666), 0o644);
    assert_eq!(unpacked_mode(0o777), 0o755);
}

#[test]
fn keeps_owner_exec_bit() {
    assert_eq!(unpacked_mode(0o744), 0o755);
}

// Sizes.

fn assert_too_large_unpacked(error: &UnpackError) {
    assert!(
        matches!(
            error,
            UnpackError::TooLarge {
                kind: SizeKind::Unpacked,
                limit: DEFAULT_MAX_BYTES
            }
        ),
        "{error:?}"
    );
}

#[test]
fn refuses_gzip_bomb() {
    let zeros = vec![0; 9 << 20];
    let tarball = gzip(&RawTar::default().file("bomb", 0o644, &zeros).finish());
    assert!(tarball.len() < 100 << 10, "{} bytes", tarball.len());
    assert_too_large_unpacked(&refused(&tarball));
}

#[test]
fn refuses_files_that_together_pass_the_size_cap() {
    let three_mib = vec![0; 3 << 20];
    let mut tar = RawTar::default();
    for name in ["a", "b", "c"] {
        tar.file(name, 0o644, &three_mib);
    }
    assert_too_large_unpacked(&refused(&gzip(&tar.finish())));
}

/// The header alone says the file is too large: the unpacker must not wait
/// for the bytes (here they never come).
#[test]
fn refuses_oversized_header_before_reading_data() {
    let tar = RawTar::default()
        .raw(
            ustar_header(b'0', b"big", 0o644, 1 << 30, b""),
            b"only a little",
        )
        .unterminated();
    assert_too_large_unpacked(&refused(&gzip(&tar)));
}

#[test]
fn refuses_pax_size_disagreeing_with_header() {
    let tarball = gzip(
        &RawTar::default()
            .pax(&[("size", b"5")])
            .file("a", 0o644, b"0123456789")
            .finish(),
    );
    let error = refused(&tarball);
    assert!(
        matches!(
            &error,
            UnpackError::SizeMismatch { path, header: 10, pax: 5 } if path == "a"
        ),
        "{error:?}"
    );
}

/// Zeros after the end marker are allowed (GNU tar pads), but they still count
/// against the decompressed stream's cap, so a bomb cannot hide there.
#[test]
fn refuses_endless_zero_padding_after_end_marker() {
    let mut tar = RawTar::default().file("a", 0o644, b"a").finish();
    tar.resize(40 << 20, 0);
    assert_too_large_unpacked(&refused(&gzip(&tar)));
}

// The gzip stream.

fn valid_tar() -> Vec<u8> {
    RawTar::default()
        .file("SKILL.md", 0o644, b"# skill\n")
        .file("scripts/run.sh", 0o755, b"#!/bin/sh\necho hi\n")
        .finish()
}

#[test]
fn refuses_trailing_garbage_after_gzip_stream() {
    let mut tarball = gzip(&valid_tar());
    tarball.extend_from_slice(b"garbage");
    let error = refused(&tarball);
    assert!(matches!(error, UnpackError::TrailingData), "{error:?}");
}

#[test]
fn refuses_second_gzip_member() {
    let mut tarball = gzip(&valid_tar());
    tarball.extend_from_slice(&gzip(
        &RawTar::default().file("extra", 0o644, b"x").finish(),
    ));
    let error = refused(&tarball);
    assert!(matches!(error, UnpackError::TrailingData), "{error:?}");
}

#[test]
fn refuses_truncated_stream() {
    let tarball = gzip(&valid_tar());
    let error = refused(&tarball[..tarball.len() / 2]);
    assert!(matches!(error, UnpackError::Corrupt(_)), "{error:?}");
}

/// A complete gzip stream around a tar stream that stops inside a file.
#[test]
fn refuses_entry_cut_short_inside_complete_gzip_stream() {
    let tar = RawTar::default()
        .raw(ustar_header(b'0', b"a", 0o644, 2000, b""), b"short")
        .unterminated();
    let error = refused(&gzip(&tar));
    assert!(matches!(error, UnpackError::Corrupt(_)), "{error:?}");
}

/// Readers run with `--ignore-zeros` would see an entry hidden after the end
/// marker; this one must not silently differ from them.
#[test]
fn refuses_entry_hidden_after_end_marker() {
    let mut tar = valid_tar();
    tar.extend_from_slice(&RawTar::default().file("hidden", 0o644, b"x").finish());
    let error = refused(&gzip(&tar));
    assert!(matches!(error, UnpackError::TrailingData), "{error:?}");
}

#[test]
fn accepts_zero_padding_after_end_marker() {
    let mut tar = valid_tar();
    tar.resize(10240, 0);
    let unpacked = accepted(&gzip(&tar));
    assert_eq!(unpacked.read("SKILL.md"), b"# skill\n");
    assert_eq!(unpacked.skill.files.len(), 2);
}

// Entry counts.

/// `SKILL.md` and `count - 1` empty files.
fn empty_files(count: usize) -> Vec<u8> {
    let mut tar = RawTar::default();
    tar.file("SKILL.md", 0o644, b"");
    for index in 1..count {
        tar.file(&format!("f{index:05}"), 0o644, b"");
    }
    gzip(&tar.finish())
}

#[test]
fn refuses_more_than_10000_entries() {
    let error = refused(&empty_files(10_001));
    assert!(
        matches!(error, UnpackError::TooManyEntries { limit: 10_000 }),
        "{error:?}"
    );
}

#[test]
fn accepts_exactly_10000_entries() {
    let unpacked = accepted(&empty_files(10_000));
    assert_eq!(unpacked.skill.files.len(), 10_000);
    assert_eq!(names(&unpacked.root).len(), 10_000);
}

// Long and deep paths.

#[test]
fn refuses_4_kib_pax_path() {
    let long = "a".repeat(4096);
    let tarball = gzip(
        &RawTar::default()
            .pax(&[("path", long.as_bytes())])
            .file("placeholder", 0o644, b"x")
            .finish(),
    );
    assert_unsafe_path(&tarball, &PathProblem::TooLong(4096, 255));
}

#[test]
fn refuses_4_kib_gnu_long_name() {
    let long = "a".repeat(4096);
    let tarball = gzip(
        &RawTar::default()
            .gnu_long_name(long.as_bytes())
            .file(&long[..100], 0o644, b"x")
            .finish(),
    );
    assert_unsafe_path(&tarball, &PathProblem::TooLong(4096, 255));
}

#[test]
fn refuses_100_deep_nesting() {
    let deep = format!("{}x", "d/".repeat(100));
    assert_unsafe_path(&one_file(&deep), &PathProblem::TooDeep(101, 16));
}

// Names Windows cannot hold, and characters no file system should.

#[test]
fn refuses_reserved_name_con() {
    assert_unsafe_path(&one_file("CON"), &PathProblem::ReservedName("CON".into()));
}

#[test]
fn refuses_reserved_name_with_extension() {
    assert_unsafe_path(
        &one_file("aux.txt"),
        &PathProblem::ReservedName("aux.txt".into()),
    );
}

#[test]
fn refuses_reserved_name_in_subfolder() {
    assert_unsafe_path(
        &one_file("sub/nul"),
        &PathProblem::ReservedName("nul".into()),
    );
}

#[test]
fn refuses_trailing_dot() {
    assert_unsafe_path(
        &one_file("a."),
        &PathProblem::TrailingDotOrSpace("a.".into()),
    );
}

#[test]
fn refuses_trailing_space() {
    assert_unsafe_path(
        &one_file("a "),
        &PathProblem::TrailingDotOrSpace("a ".into()),
    );
}

#[test]
fn refuses_nul_in_pax_path() {
    let tarball = gzip(
        &RawTar::default()
            .pax(&[("path", b"a\0b")])
            .file("placeholder", 0o644, b"x")
            .finish(),
    );
    assert_unsafe_path(&tarball, &PathProblem::ControlCharacter);
}

#[test]
fn refuses_control_character_in_name() {
    assert_unsafe_path(&one_file("a\x07b"), &PathProblem::ControlCharacter);
}

#[test]
fn refuses_non_utf8_pax_path() {
    let tarball = gzip(
        &RawTar::default()
            .pax(&[("path", b"a\xffb")])
            .file("placeholder", 0o644, b"x")
            .finish(),
    );
    let error = refused(&tarball);
    assert!(
        matches!(&error, UnpackError::PathNotUtf8 { path } if path == "a\u{fffd}b"),
        "{error:?}"
    );
}

// Version control metadata: what a VCS tool run in the installed folder
// (by a person, a shell prompt or an editor) would read and act on.

/// A skill with `SKILL.md` and `extra`, each file holding `contents`.
fn skill_with(extra: &[&str], contents: &[u8]) -> Vec<u8> {
    let mut tar = RawTar::default();
    tar.file("SKILL.md", 0o644, b"---\nname: s\ndescription: d\n---\n");
    for path in extra {
        tar.file(path, 0o644, contents);
    }
    gzip(&tar.finish())
}

/// Expects `tarball` to be refused for `entry`, with a message that names
/// `what` (the version control system, or the reason).
fn assert_refused_naming(tarball: &[u8], entry: &str, what: &str) {
    let error = refused(tarball);
    let text = chain(&error);
    assert!(
        text.contains(&format!("`{entry}`")) && text.contains(what),
        "`{entry}` and `{what}` not both in: {text}"
    );
}

const FSMONITOR_CONFIG: &[u8] =
    b"[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch /tmp/pwned; false\"\n";

#[test]
fn archive_carrying_git_config_is_refused() {
    assert_refused_naming(
        &skill_with(&[".git/config", ".git/HEAD"], FSMONITOR_CONFIG),
        ".git/config",
        "Git",
    );
}

#[test]
fn archive_carrying_git_folder_entry_is_refused() {
    let tarball = gzip(
        &RawTar::default()
            .file("SKILL.md", 0o644, b"x")
            .dir("scripts/.git/")
            .finish(),
    );
    assert_refused_naming(&tarball, "scripts/.git/", "Git");
}

#[test]
fn archive_carrying_git_config_in_a_subfolder_is_refused() {
    assert_refused_naming(
        &skill_with(&["references/vendored/.git/config"], FSMONITOR_CONFIG),
        "references/vendored/.git/config",
        "Git",
    );
}

/// A `.git` file is a gitfile: git follows `gitdir:` to a repository, which
/// could be one the archive carries under another name.
#[test]
fn archive_carrying_a_gitfile_is_refused() {
    assert_refused_naming(
        &skill_with(&["assets/.git"], b"gitdir: ../evil\n"),
        "assets/.git",
        "Git",
    );
}

#[test]
fn archive_carrying_git_in_another_case_is_refused() {
    for path in [".GIT/config", ".Git/config", "a/.gIt/hooks/pre-commit"] {
        assert_refused_naming(&skill_with(&[path], FSMONITOR_CONFIG), path, "Git");
    }
}

/// Windows drops trailing dots and spaces, and NTFS reads `name::$DATA`
/// streams: each of these is `.git` there (git's own `is_ntfs_dotgit`).
#[test]
fn archive_carrying_git_under_an_ntfs_alias_is_refused() {
    for path in [".git./config", ".git /config", ".git . ./config"] {
        assert_refused_naming(&skill_with(&[path], FSMONITOR_CONFIG), path, "Git");
    }
    assert_refused_naming(
        &skill_with(&["GIT~1/config"], FSMONITOR_CONFIG),
        "GIT~1/config",
        "short (8.3) name",
    );
}

/// HFS+ ignores these code points when it compares names, so `.g\u{200c}it`
/// is `.git` on an older Mac (CVE-2014-9390).
#[test]
fn archive_carrying_git_with_an_ignorable_code_point_is_refused() {
    for path in [
        ".g\u{200c}it/config",
        ".git\u{feff}/config",
        "\u{202e}tig./config",
    ] {
        let error = refused(&skill_with(&[path], FSMONITOR_CONFIG));
        assert!(
            matches!(&error, UnpackError::UnsafePath { path: named, .. } if named == path),
            "{error:?}"
        );
        assert!(chain(&error).contains("invisible"), "{}", chain(&error));
    }
}

/// `ı` (dotless i) upper-cases to `I`: under the full case fold that decides
/// collisions, `.gıt` is `.git`.
#[test]
fn archive_carrying_git_spelled_with_a_dotless_i_is_refused() {
    assert_refused_naming(
        &skill_with(&[".g\u{131}t/config"], FSMONITOR_CONFIG),
        ".g\u{131}t/config",
        "Git",
    );
}

#[test]
fn archive_carrying_other_version_control_metadata_is_refused() {
    let cases = [
        (".gitmodules", "Git"),
        (".hg/hgrc", "Mercurial"),
        (".hgsub", "Mercurial"),
        (".svn/wc.db", "Subversion"),
        (".bzr/branch/branch.conf", "Bazaar"),
        ("_darcs/prefs/defaults", "Darcs"),
        ("CVS/Root", "CVS"),
        ("cvs/Root", "CVS"),
        (".fslckout", "Fossil"),
        ("_FOSSIL_", "Fossil"),
        (".jj/repo/config.toml", "Jujutsu"),
        (".sl/config", "Sapling"),
        (".pijul/config", "Pijul"),
    ];
    for (path, system) in cases {
        assert_refused_naming(&skill_with(&[path], b"[hooks]\n"), path, system);
    }
}

/// A folder with `HEAD`, `objects` and `refs` is a bare repository to git
/// (`is_git_directory`), whatever its name: `git log` run inside it reads its
/// `config` (`core.pager`, `core.fsmonitor` with `core.worktree`).
#[test]
fn archive_shaped_as_a_bare_git_repository_is_refused() {
    let tarball = gzip(
        &RawTar::default()
            .file("SKILL.md", 0o644, b"x")
            .file("assets/evil/HEAD", 0o644, b"ref: refs/heads/main\n")
            .file("assets/evil/config", 0o644, FSMONITOR_CONFIG)
            .dir("assets/evil/objects/")
            .dir("assets/evil/refs/")
            .finish(),
    );
    assert_refused_naming(&tarball, "assets/evil", "Git repository");
}

#[test]
fn archive_whose_root_is_a_bare_git_repository_is_refused() {
    let tarball = gzip(
        &RawTar::default()
            .file("SKILL.md", 0o644, b"x")
            .file("HEAD", 0o644, b"ref: refs/heads/main\n")
            .file("commondir", 0o644, b"../../.git\n")
            .finish(),
    );
    let error = refused(&tarball);
    assert!(
        chain(&error).contains("Git repository"),
        "{}",
        chain(&error)
    );
}

/// `.gitignore` and `.gitattributes` configure no program: an attribute can
/// name a filter or diff driver, but only a config file the archive cannot
/// carry defines what runs for it.
#[test]
fn accepts_gitignore_and_gitattributes() {
    let unpacked = accepted(&skill_with(
        &[".gitignore", "scripts/.gitattributes", "refs/notes.md"],
        b"*.bin binary\n",
    ));
    assert_eq!(
        unpacked.listing(),
        [
            ".gitignore",
            "SKILL.md",
            "refs/",
            "refs/notes.md",
            "scripts/",
            "scripts/.gitattributes"
        ]
    );
}

// What `pack` never writes.

/// `.skillignore` hides files from the walk that validation does: in an
/// archive, it would hide files from the registry's checks of the upload.
#[test]
fn archive_carrying_a_skillignore_is_refused() {
    assert_refused_naming(
        &skill_with(&[".skillignore", "scripts/run.sh"], b"*\n"),
        ".skillignore",
        "never packed",
    );
}

/// Python runs an unchecked-hash `.pyc` from `__pycache__` without looking at
/// the source beside it: what a reviewer reads is not what runs.
#[test]
fn archive_carrying_pycache_is_refused() {
    let temp = TempDir::new().expect("temp dir");
    let module = temp.path().join("helper.py");
    fs_err::write(&module, "print('the reviewed code')\n").expect("write");
    let compiled = temp.path().join("compiled");
    fs_err::create_dir(&compiled).expect("create a folder");
    fs_err::write(compiled.join("helper.py"), "print('other code')\n").expect("write");
    let script = "import py_compile, sys\n\
        py_compile.compile(sys.argv[1], cfile=sys.argv[2], \
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)\n";
    let pyc = temp.path().join("helper.pyc");
    let status = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(compiled.join("helper.py"))
        .arg(&pyc)
        .status()
        .expect("run python3");
    assert!(status.success());
    let tag = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.implementation.cache_tag)"])
        .output()
        .expect("run python3");
    let tag = String::from_utf8(tag.stdout)
        .expect("UTF-8")
        .trim()
        .to_owned();
    let cached = format!("scripts/__pycache__/helper.{tag}.pyc");
    fs_err::create_dir_all(temp.path().join("scripts/__pycache__")).expect("create folders");
    fs_err::copy(&pyc, temp.path().join(&cached)).expect("copy");
    fs_err::copy(&module, temp.path().join("scripts/helper.py")).expect("copy");
    let ran = std::process::Command::new("python3")
        .args(["-c", "import helper"])
        .current_dir(temp.path().join("scripts"))
        .output()
        .expect("run python3");
    assert_eq!(ran.stdout, b"other code\n", "python ran the cached code");

    let tarball = gzip(
        &RawTar::default()
            .file("SKILL.md", 0o644, b"x")
            .file("scripts/helper.py", 0o644, b"print('the reviewed code')\n")
            .file(&cached, 0o644, &fs_err::read(&pyc).expect("read"))
            .finish(),
    );
    assert_refused_naming(&tarball, &cached, "never packed");
}

#[test]
fn archive_carrying_what_pack_leaves_out_in_another_case_is_refused() {
    for path in [
        "scripts/__PYCACHE__/x.pyc",
        ".SkillIgnore",
        "assets/.ds_store",
    ] {
        assert_refused_naming(&skill_with(&[path], b"x"), path, "never packed");
    }
}

// The skill file.

#[test]
fn archive_without_skill_md_is_refused() {
    let error = refused(&one_file("README.md"));
    assert!(chain(&error).contains("no `SKILL.md`"), "{}", chain(&error));
}

/// `SKILL.md/` as a folder: the archive unpacks, but into no skill.
#[test]
fn archive_whose_skill_md_is_a_folder_is_refused() {
    let tarball = gzip(
        &RawTar::default()
            .dir("SKILL.md/")
            .file("SKILL.md/x", 0o644, b"x")
            .finish(),
    );
    let error = refused(&tarball);
    assert!(chain(&error).contains("no `SKILL.md`"), "{}", chain(&error));
}

/// Found on a case-insensitive file system, missed on Linux.
#[test]
fn archive_with_only_a_lowercase_skill_md_is_refused() {
    let error = refused(&one_file("skill.md"));
    assert!(chain(&error).contains("no `SKILL.md`"), "{}", chain(&error));
}

#[test]
fn refuses_a_file_and_a_folder_of_the_same_name() {
    let file_first = gzip(
        &RawTar::default()
            .file("SKILL.md", 0o644, b"x")
            .file("docs", 0o644, b"x")
            .dir("docs/")
            .finish(),
    );
    assert!(matches!(
        refused(&file_first),
        UnpackError::Duplicate { .. }
    ));
    let folder_first = gzip(
        &RawTar::default()
            .file("SKILL.md", 0o644, b"x")
            .dir("docs/")
            .file("docs", 0o644, b"x")
            .finish(),
    );
    assert!(matches!(
        refused(&folder_first),
        UnpackError::Duplicate { .. }
    ));
}

#[test]
fn refuses_an_empty_path() {
    assert_unsafe_path(&one_file(""), &PathProblem::Empty);
}

/// flate2 checks the CRC and length at the end of the gzip stream.
#[test]
fn refuses_gzip_stream_whose_checksum_does_not_match() {
    let mut tarball = gzip(&valid_tar());
    let crc = tarball.len() - 8;
    tarball[crc] ^= 0xff;
    assert!(matches!(refused(&tarball), UnpackError::Corrupt(_)));
}

// The target.

#[test]
fn refuses_existing_target_and_leaves_it_untouched() {
    let parent = TempDir::new().expect("temp dir");
    let target = parent.path().join("skill");
    fs_err::create_dir(&target).expect("create the target");
    fs_err::write(target.join("keep.txt"), b"mine").expect("write");

    let error = unpack(gzip(&valid_tar()).as_slice(), &target, &Limits::default())
        .expect_err("unpacked over an existing folder");

    assert!(
        matches!(&error, UnpackError::TargetExists { path } if *path == target),
        "{error:?}"
    );
    assert_eq!(names(parent.path()), ["skill"]);
    assert_eq!(names(&target), ["keep.txt"]);
    assert_eq!(
        fs_err::read(target.join("keep.txt")).expect("read"),
        b"mine"
    );
}

/// A dangling symlink is an existing target too: it is neither followed nor
/// replaced.
#[test]
fn refuses_target_that_is_a_dangling_symlink() {
    let parent = TempDir::new().expect("temp dir");
    let target = parent.path().join("skill");
    let elsewhere = parent.path().join("elsewhere");
    fs_err::os::unix::fs::symlink(&elsewhere, &target).expect("create a symlink");

    let error = unpack(gzip(&valid_tar()).as_slice(), &target, &Limits::default())
        .expect_err("unpacked through a symlink");

    assert!(
        matches!(&error, UnpackError::TargetExists { path } if *path == target),
        "{error:?}"
    );
    assert_eq!(names(parent.path()), ["skill"]);
    assert!(target.symlink_metadata().expect("stat").is_symlink());
}

// Archives that must be accepted.

/// `tar -C dir .` writes a `./` root entry and `./` before every path.
#[test]
fn accepts_leading_dot_slash_and_root_entry() {
    let tarball = gzip(
        &RawTar::default()
            .dir("./")
            .file("./SKILL.md", 0o644, b"# skill\n")
            .dir("./scripts/")
            .file("./scripts/run.sh", 0o755, b"#!/bin/sh\n")
            .finish(),
    );
    let unpacked = accepted(&tarball);
    assert_eq!(
        unpacked.listing(),
        ["SKILL.md", "scripts/", "scripts/run.sh"]
    );
    let paths: Vec<&str> = unpacked
        .skill
        .files
        .iter()
        .map(|f| f.path.as_str())
        .collect();
    assert_eq!(paths, ["SKILL.md", "scripts/run.sh"]);
    assert_eq!(unpacked.mode("scripts/run.sh"), 0o755);
}

#[test]
fn unpacks_valid_raw_archive() {
    let files: &[(&str, &[u8], u32)] = &[
        ("SKILL.md", b"---\nname: demo\n---\n# Demo\n", 0o644),
        ("references/deep/notes.md", b"notes\n", 0o644),
        ("scripts/run.sh", b"#!/bin/sh\necho hi\n", 0o755),
    ];
    let mut tar = RawTar::default();
    tar.dir("references/")
        .dir("references/deep/")
        .dir("scripts/");
    for (path, data, mode) in files {
        tar.file(path, *mode, data);
    }
    let unpacked = accepted(&gzip(&tar.finish()));

    assert_eq!(
        unpacked.listing(),
        [
            "SKILL.md",
            "references/",
            "references/deep/",
            "references/deep/notes.md",
            "scripts/",
            "scripts/run.sh",
        ]
    );
    for (index, (path, data, mode)) in files.iter().enumerate() {
        assert_eq!(unpacked.read(path), *data, "{path}");
        assert_eq!(unpacked.mode(path), *mode, "{path}");
        let file = &unpacked.skill.files[index];
        assert_eq!(file.path, *path);
        assert_eq!(file.size, data.len() as u64);
        assert_eq!(file.executable, *mode == 0o755);
        assert_eq!(file.sha256, <[u8; 32]>::from(Sha256::digest(data)));
    }
    assert_eq!(unpacked.skill.tree.as_str(), expected_tree(files));
}

#[test]
fn round_trips_pack_dir_output() {
    let source = TempDir::new().expect("temp dir");
    let files: &[(&str, &[u8], u32)] = &[
        ("SKILL.md", b"---\nname: demo\n---\n# Demo\n", 0o644),
        ("references/deep/notes.md", b"notes\n", 0o644),
        ("scripts/run.sh", b"#!/bin/sh\necho hi\n", 0o755),
    ];
    for (path, data, mode) in files {
        let path = source.path().join(path);
        fs_err::create_dir_all(path.parent().expect("a parent")).expect("create folders");
        fs_err::write(&path, data).expect("write");
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(*mode)).expect("chmod");
    }
    let packed = pack_dir(
        source.path(),
        "demo".parse().expect("a valid name"),
        semver::Version::new(1, 0, 0),
        &Limits::default(),
    )
    .expect("pack");

    let unpacked = accepted(&packed.tarball);

    assert_eq!(unpacked.skill.tree, packed.tree);
    let unpacked_digests: Vec<(&str, [u8; 32])> = unpacked
        .skill
        .files
        .iter()
        .map(|file| (file.path.as_str(), file.sha256))
        .collect();
    let packed_digests: Vec<(&str, [u8; 32])> = packed
        .files
        .iter()
        .map(|file| (file.path.as_str(), file.sha256))
        .collect();
    assert_eq!(unpacked_digests, packed_digests);
    for (path, data, mode) in files {
        assert_eq!(unpacked.read(path), *data, "{path}");
        assert_eq!(unpacked.mode(path), *mode, "{path}");
    }
}

/// A component over 100 bytes needs a GNU long-name record, which the packer
/// writes before a ustar header: the unpacker's agreement checks accept it.
#[test]
fn round_trips_a_name_that_needs_a_gnu_long_name_record() {
    let source = TempDir::new().expect("temp dir");
    let long = format!("references/{}.md", "n".repeat(150));
    for (path, data) in [("SKILL.md", &b"# Demo\n"[..]), (long.as_str(), b"notes\n")] {
        let path = source.path().join(path);
        fs_err::create_dir_all(path.parent().expect("a parent")).expect("create folders");
        fs_err::write(&path, data).expect("write");
    }
    let packed = pack_dir(
        source.path(),
        "demo".parse().expect("a valid name"),
        semver::Version::new(1, 0, 0),
        &Limits::default(),
    )
    .expect("pack");
    let unpacked = accepted(&packed.tarball);
    assert_eq!(unpacked.read(&long), b"notes\n");
    assert_eq!(unpacked.skill.tree, packed.tree);
}
