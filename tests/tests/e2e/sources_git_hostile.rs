//! Hostile git repositories (docs/sources.md, "Bounded fetches"): packs
//! that cost a naive client gigabytes of memory and seconds of inflating,
//! sent by real git over file:// and git://, each refused by its headers
//! with a message that names the repository and what it holds; and
//! malformed repositories, which are their own fault (exit 1), named with
//! the path that is wrong.
//!
//! The hostile packs are sent by `uploadpack.packObjectsHook`, which git
//! reads only from its global configuration: the sandbox's `.gitconfig`
//! (the home of the `git upload-pack` skillpkg runs for file://) and the
//! daemon's `GIT_CONFIG_GLOBAL`. A served repository holds a small skill,
//! so that the server accepts the fetch, and the hook sends the
//! `hostile.pack` beside it instead of what git would pack.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::sources::{GitDaemon, World, commit_tree, git, raw_object, tree_entry};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// `uploadpack.packObjectsHook`, run as `HOOK git pack-objects ARGS` in the
/// repository's folder.
const HOOK: &str = "#!/bin/sh\n\
    if [ -f hostile.pack ]; then cat >/dev/null; exec cat hostile.pack; fi\n\
    exec \"$@\"\n";

const SKILL_MD: &[u8] =
    b"---\nname: hostile\ndescription: Holds more than it says. Use when testing.\n---\nhi\n";

const BLOB: u8 = 3;
const TREE: u8 = 2;
const OFS_DELTA: u8 = 6;

/// A pack entry's type and inflated size (gitformat-pack(5)).
fn entry_header(kind: u8, mut size: u64) -> Vec<u8> {
    let mut bytes = vec![(kind << 4) | (size & 0xf) as u8];
    size >>= 4;
    while size > 0 {
        *bytes.last_mut().unwrap() |= 0x80;
        bytes.push((size & 0x7f) as u8);
        size >>= 7;
    }
    bytes
}

/// A size in a delta's own header: 7 bits a byte, low bits first.
fn delta_size(mut value: u64) -> Vec<u8> {
    let mut bytes = Vec::new();
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            bytes.push(byte);
            return bytes;
        }
        bytes.push(byte | 0x80);
    }
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

/// A zlib stream of `size` zero bytes, about 1 KB a MiB as git writes
/// one, made in a moment: a MiB of zeros compressed with a full flush
/// (which ends on a byte boundary and forgets the window) is repeated, then
/// the rest, the end and the Adler-32 (of zeros: 1, and the count).
fn zlib_of_zeros(size: u64) -> Vec<u8> {
    fn deflate(
        compress: &mut flate2::Compress,
        input: &[u8],
        flush: flate2::FlushCompress,
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 << 10);
        compress.compress_vec(input, &mut out, flush).unwrap();
        assert!(out.len() < out.capacity(), "the output fit");
        out
    }
    let mut compress = flate2::Compress::new(flate2::Compression::best(), false);
    let zeros = vec![0_u8; MIB as usize];
    let chunk = deflate(&mut compress, &zeros, flate2::FlushCompress::Full);
    let mut stream = vec![0x78, 0xda];
    for _ in 0..size / MIB {
        stream.extend_from_slice(&chunk);
    }
    let tail = &zeros[..(size % MIB) as usize];
    stream.extend(deflate(&mut compress, tail, flate2::FlushCompress::Full));
    stream.extend(deflate(&mut compress, &[], flate2::FlushCompress::Finish));
    let adler = ((size % 65521) << 16) | 1;
    stream.extend((adler as u32).to_be_bytes());
    stream
}

/// A pack whose header declares `declared` entries, of `entries`. Its
/// trailer is zeros: every case is refused before it.
fn pack(declared: u32, entries: &[Vec<u8>]) -> Vec<u8> {
    let mut pack = b"PACK".to_vec();
    pack.extend(2_u32.to_be_bytes());
    pack.extend(declared.to_be_bytes());
    for entry in entries {
        pack.extend(entry);
    }
    pack.extend([0; 20]);
    pack
}

/// A blob (or tree) of `size` zeros, with its data.
fn zeros_entry(kind: u8, size: u64) -> Vec<u8> {
    let mut entry = entry_header(kind, size);
    entry.extend(zlib_of_zeros(size));
    entry
}

/// Writes the hook and a global git configuration that names it into the
/// sandbox (its `.gitconfig`: the home skillpkg and its `git upload-pack`
/// run in), and returns the configuration's path, for the daemon.
fn configure_hook(world: &World) -> PathBuf {
    let home = world.sandbox.path();
    let hook = home.join("pack-hook.sh");
    fs_err::write(&hook, HOOK).unwrap();
    skillpkg_tests::set_executable(&hook, true);
    let config = home.join(".gitconfig");
    fs_err::write(
        &config,
        format!("[uploadpack]\n\tpackObjectsHook = {}\n", hook.display()),
    )
    .unwrap();
    config
}

/// A bare repository `<name>.git` under `base` with one small skill at its
/// root, on `main`, and `pack` beside it as what the server sends instead.
fn served(base: &Path, name: &str, pack: Option<&[u8]>) -> PathBuf {
    let repo = base.join(format!("{name}.git"));
    fs_err::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "--bare", "-b", "main"]);
    let skill_md = raw_object(&repo, "blob", SKILL_MD);
    let tree = raw_object(&repo, "tree", &tree_entry("100644", "SKILL.md", &skill_md));
    commit_tree(&repo, "main", &tree);
    if let Some(pack) = pack {
        fs_err::write(repo.join("hostile.pack"), pack).unwrap();
    }
    repo
}

/// The URLs of `name` over both transports.
fn urls(base: &Path, daemon: &GitDaemon, name: &str) -> [String; 2] {
    [
        format!("file://{}", base.join(format!("{name}.git")).display()),
        format!("{}/{name}.git", daemon.url),
    ]
}

/// Asserts that `add git+URL` exits 1 saying `expected` about the
/// repository, and leaves the project and the cache as they were.
fn assert_refused(world: &World, url: &str, expected: &str) {
    let before = world.files();
    let output = world.user(&["add", &format!("git+{url}")]);
    assert_eq!(output.code, 1, "{url}: {output:?}");
    let said = format!("error: the git repository `{url}` {expected}");
    assert!(
        output.stderr.contains(&said),
        "{url}: wanted {said:?} in\n{}",
        output.stderr
    );
    assert!(
        output.stderr.contains("hint: nothing was installed"),
        "{}",
        output.stderr
    );
    assert_eq!(world.files(), before, "{url} changed the project");
    // No clone, not even a partial one, stays in the cache.
    let cache = world.sandbox.path().join("cache/git");
    let left: Vec<String> = fs_err::read_dir(&cache)
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|name| !name.ends_with(".lock"))
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "{url} left {left:?} in the cache");
}

#[test]
fn the_zeros_stream_is_a_valid_zlib_stream_of_zeros() {
    use std::io::Read as _;
    let size = 3 * MIB + 12_345;
    let mut inflated = Vec::new();
    flate2::read::ZlibDecoder::new(&zlib_of_zeros(size)[..])
        .read_to_end(&mut inflated)
        .unwrap();
    assert_eq!(inflated.len() as u64, size);
    assert!(inflated.iter().all(|byte| *byte == 0));
}

#[test]
fn packs_that_would_cost_gigabytes_are_refused_by_their_headers() {
    let world = World::new();
    let config = configure_hook(&world);
    let base = world.sandbox.path().join("served");

    // A small delta (16 KiB of "copy the 64 KiB base") whose result is 1 GiB.
    let base_blob = zlib(&[0; 65536]);
    let mut base_entry = entry_header(BLOB, 65536);
    base_entry.extend(&base_blob);
    let mut delta = delta_size(65536);
    delta.extend(delta_size(GIB));
    delta.extend(std::iter::repeat_n(0x80, (GIB / 65536) as usize));
    let mut delta_entry = entry_header(OFS_DELTA, delta.len() as u64);
    assert!(base_entry.len() < 128, "a distance of one byte");
    delta_entry.push(base_entry.len() as u8);
    delta_entry.extend(zlib(&delta));
    // 7 MiB blobs, each one a skill may hold, 600 MiB in all.
    let medium = zeros_entry(BLOB, 7 * MIB);
    let many: Vec<Vec<u8>> = (0..86).map(|_| medium.clone()).collect();
    // Declares 10 bytes, inflates to 11.
    let mut lying = entry_header(BLOB, 10);
    lying.extend(zlib(&[1; 11]));

    let cases: Vec<(&str, Vec<u8>, String)> = vec![
        (
            "blob-1g",
            pack(1, &[zeros_entry(BLOB, GIB)]),
            "holds a blob of 1.0 GiB (1073741824 bytes), more than the 8.0 MiB a skill may hold"
                .to_owned(),
        ),
        (
            "blob-8g",
            pack(1, &[zeros_entry(BLOB, 8 * GIB)]),
            "holds a blob of 8.0 GiB (8589934592 bytes), more than the 8.0 MiB a skill may hold"
                .to_owned(),
        ),
        (
            "delta-1g",
            pack(2, &[base_entry, delta_entry]),
            "holds a delta's result of 1.0 GiB (1073741824 bytes)".to_owned(),
        ),
        (
            "tree-1g",
            pack(1, &[zeros_entry(TREE, GIB)]),
            "holds a tree of 1.0 GiB".to_owned(),
        ),
        (
            "many",
            pack(86, &many),
            "sent objects that add up to more than the 512.0 MiB skillpkg fetches, once inflated"
                .to_owned(),
        ),
        (
            "count",
            pack(4_000_000_000, &[zeros_entry(BLOB, 10)]),
            "sent a pack of 4000000000 objects, more than the 200000 skillpkg fetches".to_owned(),
        ),
        (
            "lying",
            pack(1, &[lying]),
            "sent a pack that is not valid: an entry inflates to more than its header declares"
                .to_owned(),
        ),
    ];
    for (name, pack, _) in &cases {
        served(&base, name, Some(pack));
    }
    let daemon = GitDaemon::start_with_config(&base, Some(&config));
    for (name, _, expected) in &cases {
        for url in urls(&base, &daemon, name) {
            assert_refused(&world, &url, expected);
        }
    }
}

#[test]
fn a_tree_deeper_than_a_skill_may_be_is_refused_as_it_is_read() {
    let world = World::new();
    let base = world.sandbox.path().join("served");
    let repo = served(&base, "deep", None);
    let skill_md = raw_object(&repo, "blob", SKILL_MD);
    // Forty folders, one in the other: forty small objects.
    let mut level = raw_object(&repo, "tree", &tree_entry("100644", "leaf.txt", &skill_md));
    for _ in 0..40 {
        level = raw_object(&repo, "tree", &tree_entry("40000", "d", &level));
    }
    let mut root = tree_entry("100644", "SKILL.md", &skill_md);
    root.extend(tree_entry("40000", "d", &level));
    commit_tree(&repo, "main", &raw_object(&repo, "tree", &root));
    let daemon = GitDaemon::start_with_config(&base, None);
    for url in urls(&base, &daemon, "deep") {
        let before = world.files();
        let output = world.user(&["add", &format!("git+{url}")]);
        assert_eq!(output.code, 1, "{output:?}");
        assert!(
            output.stderr.contains("folders more than 16 deep"),
            "{}",
            output.stderr
        );
        assert_eq!(world.files(), before);
    }
}

/// Writes a repository `<name>.git` under `base` whose skill
/// `skills/hostile` holds `entry` beside its SKILL.md, and returns the
/// repository, its commit and the ids of the objects its commit needs.
fn malformed(
    base: &Path,
    name: &str,
    entry: impl FnOnce(&Path) -> Vec<u8>,
) -> (PathBuf, String, Vec<String>) {
    let repo = base.join(format!("{name}.git"));
    fs_err::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "--bare", "-b", "main"]);
    let skill_md = raw_object(&repo, "blob", SKILL_MD);
    let mut skill = tree_entry("100644", "SKILL.md", &skill_md);
    skill.extend(entry(&repo));
    let skill = raw_object(&repo, "tree", &skill);
    let skills = raw_object(&repo, "tree", &tree_entry("40000", "hostile", &skill));
    let root = raw_object(&repo, "tree", &tree_entry("40000", "skills", &skills));
    commit_tree(&repo, "main", &root);
    let commit = git(&repo, &["rev-parse", "main"]);
    let objects = git(
        &repo,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname)",
        ],
    );
    (repo, commit, objects.lines().map(str::to_owned).collect())
}

/// A valid pack of exactly `objects` of `repo`, written by git without
/// walking any tree (which a malformed one would stop).
fn pack_of(repo: &Path, objects: &[String]) -> Vec<u8> {
    let mut child = std::process::Command::new("git")
        .current_dir(repo)
        .args(["pack-objects", "--stdout", "-q"])
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", repo)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{}\n", objects.join("\n")).as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    output.stdout
}

#[test]
fn a_malformed_repository_is_its_own_fault_and_named_with_its_path() {
    let world = World::new();
    let config = configure_hook(&world);
    let base = world.sandbox.path().join("served");
    // `scripts` says folder, and its object is a file. git's own server
    // stops on it, so one copy is sent by the hook, packed object by object.
    let mut file = String::new();
    malformed(&base, "folder-is-file", |repo| {
        file = raw_object(repo, "blob", b"echo hi\n");
        tree_entry("40000", "scripts", &file)
    });
    let (sent, sent_commit, objects) = malformed(&base, "folder-is-file-sent", |repo| {
        tree_entry("40000", "scripts", &raw_object(repo, "blob", b"echo hi\n"))
    });
    fs_err::write(sent.join("hostile.pack"), pack_of(&sent, &objects)).unwrap();
    // `notes.md` says file, and its object is a folder.
    let mut folder = String::new();
    let (_, file_commit, _) = malformed(&base, "file-is-folder", |repo| {
        let inner = raw_object(repo, "blob", b"notes\n");
        folder = raw_object(repo, "tree", &tree_entry("100644", "a.md", &inner));
        tree_entry("100644", "notes.md", &folder)
    });
    let daemon = GitDaemon::start_with_config(&base, Some(&config));

    let cases = [
        (
            "folder-is-file-sent",
            format!(
                "is malformed at commit {sent_commit}: `skills/hostile/scripts` is marked as a folder (a tree), but its object {file} is a file (a blob)"
            ),
        ),
        (
            "file-is-folder",
            format!(
                "is malformed at commit {file_commit}: `skills/hostile/notes.md` is marked as a file (a blob), but its object {folder} is a folder (a tree)"
            ),
        ),
        (
            "folder-is-file",
            format!(
                "is damaged: its server stopped sending it, and said: `error: Object {file} not a tree`"
            ),
        ),
    ];
    for (name, expected) in &cases {
        for url in urls(&base, &daemon, name) {
            let before = world.files();
            let output = world.user(&["add", &format!("git+{url}")]);
            assert_eq!(output.code, 1, "{url}: {output:?}");
            let said = format!("error: the git repository `{url}` {expected}");
            assert!(
                output.stderr.contains(&said),
                "{url}: wanted {said:?} in\n{}",
                output.stderr
            );
            assert!(
                output
                    .stderr
                    .contains("hint: nothing was installed; the repository breaks git's rules"),
                "{}",
                output.stderr
            );
            assert_eq!(world.files(), before, "{url} changed the project");
        }
    }
}
