//! `skillpkg pack` end to end: determinism, what GNU tar sees in the
//! tarball, round trips, and every refusal.

use std::path::Path;
use std::process::Command;

use skillpkg_tests::{TestContext, is_executable, run, set_executable};

/// A skill with a script, a nested reference and an empty folder.
fn example_skill(sandbox: &TestContext, parent: &str) -> std::path::PathBuf {
    let dir = sandbox.skill(
        &format!("{parent}/pdf"),
        "pdf",
        "version: 1.2.3\n",
        "# PDF\n\nRead [the guide](references/deep/guide.md).\n",
    );
    let script = sandbox.write(
        &format!("{parent}/pdf/scripts/run.sh"),
        "#!/bin/sh\necho hi\n",
    );
    set_executable(&script, true);
    sandbox.write(
        &format!("{parent}/pdf/references/deep/guide.md"),
        "# Guide\n",
    );
    sandbox.write(&format!("{parent}/pdf/assets/data.bin"), [0_u8, 1, 2, 255]);
    fs_err::create_dir_all(dir.join("assets/empty")).unwrap();
    dir
}

fn pack(sandbox: &TestContext, dir: &Path, output: &Path) -> skillpkg_tests::Output {
    run(sandbox
        .skillpkg_command()
        .arg("pack")
        .arg(dir)
        .arg("-o")
        .arg(output)
        .arg("--json"))
}

/// The `h1:` hash computed by coreutils alone, as Go's dirhash defines it.
fn shell_tree_hash(dir: &Path) -> String {
    // h2 (docs/archive-format.md): git's mode for an executable file
    // (owner, group or other may run it) or any other.
    let script = r#"find . -type f -printf '%P\n' | LC_ALL=C sort | while IFS= read -r f; do
        case "$(stat -c %a "$f")" in *[1357]*) mode=100755 ;; *) mode=100644 ;; esac
        printf '%s %s %s\n' "$(sha256sum < "$f" | cut -d' ' -f1)" "$mode" "$f"; done |
        sha256sum | cut -d' ' -f1 | tr a-f A-F | basenc --base16 -d | base64"#;
    let output = Command::new("bash")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(output.status.success());
    format!("h2:{}", String::from_utf8(output.stdout).unwrap().trim())
}

#[test]
fn packing_twice_and_from_another_place_gives_identical_bytes() {
    let sandbox = TestContext::new();
    let first = example_skill(&sandbox, "one");
    let a = pack(&sandbox, &first, &sandbox.path().join("a.tgz"));
    assert_eq!(a.code, 0, "{a:?}");
    let b = pack(&sandbox, &first, &sandbox.path().join("b.tgz"));
    assert_eq!(b.code, 0, "{b:?}");

    // The same content elsewhere, written in another order, with other
    // times and other permission bits that do not matter.
    let second = sandbox.path().join("two/deeper/pdf");
    sandbox.write("two/deeper/pdf/assets/data.bin", [0_u8, 1, 2, 255]);
    sandbox.write("two/deeper/pdf/references/deep/guide.md", "# Guide\n");
    let script = sandbox.write("two/deeper/pdf/scripts/run.sh", "#!/bin/sh\necho hi\n");
    {
        use std::os::unix::fs::PermissionsExt;
        fs_err::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
        let guide = second.join("references/deep/guide.md");
        fs_err::set_permissions(&guide, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    fs_err::copy(first.join("SKILL.md"), second.join("SKILL.md")).unwrap();
    fs_err::create_dir_all(second.join("assets/empty")).unwrap();
    let status = Command::new("touch")
        .args(["-d", "2001-02-03"])
        .arg(second.join("SKILL.md"))
        .status()
        .unwrap();
    assert!(status.success());
    let c = pack(&sandbox, &second, &sandbox.path().join("c.tgz"));
    assert_eq!(c.code, 0, "{c:?}");

    let bytes = |name: &str| fs_err::read(sandbox.path().join(name)).unwrap();
    assert_eq!(bytes("a.tgz"), bytes("b.tgz"));
    assert_eq!(bytes("a.tgz"), bytes("c.tgz"));
    assert_eq!(a.json()["sha256"], c.json()["sha256"]);
}

#[test]
fn gnu_tar_sees_sorted_entries_with_fixed_owners_modes_and_times() {
    let sandbox = TestContext::new();
    let dir = example_skill(&sandbox, "src");
    sandbox.write("src/pdf/.git/HEAD", "ref: x");
    sandbox.write("src/pdf/scripts/__pycache__/x.pyc", "x");
    sandbox.write("src/pdf/.DS_Store", "x");
    sandbox.write("src/pdf/notes.log", "x");
    sandbox.write("src/pdf/.skillignore", "*.log\n");
    sandbox.write("src/pdf/.hidden-config", "kept");
    let output = pack(&sandbox, &dir, &sandbox.path().join("pdf.tgz"));
    assert_eq!(output.code, 0, "{output:?}");

    let listing = Command::new("tar")
        .args(["--numeric-owner", "--utc", "-tvzf", "pdf.tgz"])
        .current_dir(sandbox.path())
        .output()
        .unwrap();
    assert!(listing.status.success());
    let listing = String::from_utf8(listing.stdout).unwrap();
    let entries: Vec<(String, String, String, String)> = listing
        .lines()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            (
                fields[0].into(),
                fields[1].into(),
                format!("{} {}", fields[3], fields[4]),
                fields[5].into(),
            )
        })
        .collect();
    let expected = [
        ("-rw-r--r--", ".hidden-config"),
        ("-rw-r--r--", "SKILL.md"),
        ("drwxr-xr-x", "assets/"),
        ("-rw-r--r--", "assets/data.bin"),
        ("drwxr-xr-x", "assets/empty/"),
        ("drwxr-xr-x", "references/"),
        ("drwxr-xr-x", "references/deep/"),
        ("-rw-r--r--", "references/deep/guide.md"),
        ("drwxr-xr-x", "scripts/"),
        ("-rwxr-xr-x", "scripts/run.sh"),
    ];
    assert_eq!(entries.len(), expected.len(), "{listing}");
    for ((mode, owner, time, path), (expected_mode, expected_path)) in entries.iter().zip(expected)
    {
        assert_eq!(
            (mode.as_str(), path.as_str()),
            (expected_mode, expected_path),
            "{listing}"
        );
        assert_eq!(owner, "0/0", "{listing}");
        assert_eq!(time, "1980-01-01 00:00", "{listing}");
    }

    // The gzip header: no file name, no time, OS "unknown".
    let tarball = fs_err::read(sandbox.path().join("pdf.tgz")).unwrap();
    assert_eq!(
        &tarball[..4],
        &[0x1f, 0x8b, 8, 0],
        "gzip magic, deflate, no flags"
    );
    assert_eq!(&tarball[4..8], &[0, 0, 0, 0], "mtime 0");
    assert_eq!(tarball[9], 255, "OS unknown");
}

#[test]
fn unpacking_gives_back_every_file_its_bytes_exec_bit_and_tree_hash() {
    let sandbox = TestContext::new();
    let dir = example_skill(&sandbox, "src");
    let tarball = sandbox.path().join("pdf.tgz");
    let output = pack(&sandbox, &dir, &tarball);
    assert_eq!(output.code, 0, "{output:?}");
    let json = output.json();
    let tree = json["tree"].as_str().unwrap().to_owned();
    assert_eq!(
        tree,
        shell_tree_hash(&dir),
        "the tree hash of the source folder"
    );

    let sha256sum = Command::new("sha256sum").arg(&tarball).output().unwrap();
    let digest = String::from_utf8(sha256sum.stdout).unwrap();
    assert_eq!(
        json["sha256"],
        format!("sha256:{}", digest.split_whitespace().next().unwrap())
    );
    assert_eq!(
        json["tarball_size"],
        fs_err::metadata(&tarball).unwrap().len()
    );
    assert_eq!(json["files"], 4);
    assert_eq!(
        json["unpacked_size"],
        4 + 18
            + 8
            + json["contents"][0]["path"]
                .as_str()
                .map_or(0, |_| fs_err::metadata(dir.join("SKILL.md")).unwrap().len())
    );

    // GNU tar's view of the archive.
    let by_tar = sandbox.path().join("by-tar");
    fs_err::create_dir_all(&by_tar).unwrap();
    let status = Command::new("tar")
        .arg("-xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(&by_tar)
        .status()
        .unwrap();
    assert!(status.success());
    // skillpkg's own hardened unpacker.
    let by_skillpkg = sandbox.path().join("by-skillpkg");
    let unpacked = skillpkg_index::archive::unpack(
        fs_err::File::open(&tarball).unwrap(),
        &by_skillpkg,
        &skillpkg_index::archive::Limits::default(),
    )
    .unwrap();
    assert_eq!(unpacked.tree.as_str(), tree);

    for root in [&by_tar, &by_skillpkg] {
        for file in [
            "SKILL.md",
            "scripts/run.sh",
            "references/deep/guide.md",
            "assets/data.bin",
        ] {
            assert_eq!(
                fs_err::read(root.join(file)).unwrap(),
                fs_err::read(dir.join(file)).unwrap(),
                "{file}"
            );
            assert_eq!(
                is_executable(&root.join(file)),
                file == "scripts/run.sh",
                "{file}"
            );
        }
        assert!(root.join("assets/empty").is_dir());
        assert_eq!(shell_tree_hash(root), tree);
    }
}

#[test]
fn human_output_names_every_figure() {
    let sandbox = TestContext::new();
    let dir = example_skill(&sandbox, "src");
    let output = run(sandbox.skillpkg_command().arg("pack").arg(&dir));
    assert_eq!(output.code, 0, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stdout), @"
    name:     pdf
    version:  1.2.3
    files:    4
    unpacked: 162 B (162 bytes)
    tarball:  389 B (389 bytes)
    checksum: sha256:11a60a2ee879cf2ca3e39d35edeb569bbb85839cfb91fbe058fe6bf5eb933b94
    tree:     h2:eLtWh1GnL3TqGEmNUsp09QqxNrYMKcGc43ZL2WnTcdk=
    path:     pdf-1.2.3.tgz
    ");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    note: 1 recommendation (non-portable-key 1); -v or `skillpkg validate [HOME]/src/pdf` lists them
          Packed pdf 1.2.3 to pdf-1.2.3.tgz
    ");
    assert!(
        sandbox.path().join("pdf-1.2.3.tgz").is_file(),
        "written to the current folder by default"
    );
}

/// Asserts that a pack failed with status 1, a message containing `needle`,
/// and left no tarball behind.
fn assert_refused(sandbox: &TestContext, dir: &Path, needle: &str) -> String {
    let out = sandbox.path().join("out");
    fs_err::create_dir_all(&out).unwrap();
    let output = run(sandbox
        .skillpkg_command()
        .arg("pack")
        .arg(dir)
        .arg("-o")
        .arg(&out));
    assert_eq!(output.code, 1, "{output:?}");
    assert!(
        output.stderr.contains(needle),
        "`{needle}` missing from:\n{}",
        output.stderr
    );
    assert_eq!(
        fs_err::read_dir(&out).unwrap().count(),
        0,
        "nothing is written"
    );
    output.stderr
}

#[test]
fn a_symlink_is_refused_by_name() {
    let sandbox = TestContext::new();
    let dir = sandbox.skill("pdf", "pdf", "version: 1.0.0\n", "body\n");
    std::os::unix::fs::symlink("/etc/passwd", dir.join("passwd")).unwrap();
    let stderr = assert_refused(
        &sandbox,
        &dir,
        "`passwd` is a symlink; skills cannot contain symlinks",
    );
    insta::assert_snapshot!(sandbox.redact(&stderr), @"
    warning[non-portable-key]: `version` is a key of the Universal Agent Skill extensions, not of the Agent Skills specification
     --> [HOME]/pdf/SKILL.md:4:1
      |
    4 | version: 1.0.0
      | ^^^^^^^
      = hint: other agents ignore it; keep it only if your users need it

    error[symlink]: `passwd` is a symlink; skills cannot contain symlinks
     --> [HOME]/pdf/passwd
      = hint: replace the symlink with a copy of its target, or list it in `.skillignore`

    error: cannot pack `[HOME]/pdf`: the skill has 1 error
    hint: fix them; `skillpkg validate [HOME]/pdf` lists them
    ");
}

#[test]
fn a_skill_over_the_size_limit_unpacked_is_refused_with_its_largest_files() {
    let sandbox = TestContext::new();
    let dir = sandbox.skill("big", "big", "version: 1.0.0\n", "body\n");
    for (index, mebibytes) in [1_usize, 2, 3, 1, 1, 1].iter().enumerate() {
        sandbox.write(
            &format!("big/assets/file{index}.bin"),
            vec![0_u8; mebibytes * 1024 * 1024],
        );
    }
    let stderr = assert_refused(&sandbox, &dir, "unpacked");
    insta::assert_snapshot!(sandbox.redact(&stderr), @"
    warning[too-large]: the skill is 9.0 MiB unpacked (9437270 bytes), 1.0 MiB over the 8.0 MiB limit
     --> [HOME]/big/
      = hint: the largest files are: assets/file2.bin (3.0 MiB), assets/file1.bin (2.0 MiB), assets/file0.bin (1.0 MiB), assets/file3.bin (1.0 MiB), assets/file4.bin (1.0 MiB); list what the skill does not need in `.skillignore`

    note: 1 recommendation (non-portable-key 1); -v or `skillpkg validate [HOME]/big` lists them
    error: cannot pack `[HOME]/big`
      Caused by: the skill is 9.0 MiB unpacked (9437270 bytes), 1.0 MiB over the 8.0 MiB limit
    hint: the largest files are: assets/file2.bin (3.0 MiB), assets/file1.bin (2.0 MiB), assets/file0.bin (1.0 MiB), assets/file3.bin (1.0 MiB), assets/file4.bin (1.0 MiB); list what the skill does not need in `.skillignore`
    ");
    assert!(
        !stderr.contains("SKILL.md ("),
        "only the five largest are listed:\n{stderr}"
    );
}

#[test]
fn a_skill_over_the_size_limit_packed_is_refused() {
    let sandbox = TestContext::new();
    let dir = sandbox.skill("noise", "noise", "version: 1.0.0\n", "body\n");
    // Incompressible bytes just under the unpacked limit: tar and gzip
    // framing push the tarball over it.
    let skill_md = fs_err::metadata(dir.join("SKILL.md")).unwrap().len() as usize;
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let noise: Vec<u8> = (0..8 * 1024 * 1024 - skill_md - 64)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    sandbox.write("noise/assets/noise.bin", noise);
    let stderr = assert_refused(&sandbox, &dir, "packed (");
    insta::assert_snapshot!(sandbox.redact(&stderr), @"
    note: 1 recommendation (non-portable-key 1); -v or `skillpkg validate [HOME]/noise` lists them
    error: cannot pack `[HOME]/noise`
      Caused by: the skill is 8.0 MiB packed (8390137 bytes), 1.5 KiB over the 8.0 MiB limit
    hint: the largest files are: assets/noise.bin (8.0 MiB), SKILL.md (90 B); list what the skill does not need in `.skillignore`
    ");
}

#[test]
fn more_than_ten_thousand_entries_are_refused() {
    let sandbox = TestContext::new();
    let dir = sandbox.skill("many", "many", "version: 1.0.0\n", "body\n");
    for folder in 0..10 {
        let folder = dir.join(format!("assets/{folder}"));
        fs_err::create_dir_all(&folder).unwrap();
        for file in 0..1000 {
            fs_err::write(folder.join(file.to_string()), "").unwrap();
        }
    }
    assert_refused(
        &sandbox,
        &dir,
        "the skill has 10012 files and folders; the limit is 10000",
    );
}

#[test]
fn a_path_that_is_not_portable_is_refused() {
    let sandbox = TestContext::new();
    let dir = sandbox.skill("pdf", "pdf", "version: 1.0.0\n", "body\n");
    sandbox.write("pdf/assets/aux.txt", "x");
    assert_refused(&sandbox, &dir, "`assets/aux.txt` is not a portable path");
    fs_err::remove_file(dir.join("assets/aux.txt")).unwrap();
    sandbox.write("pdf/assets/Notes.md", "x");
    sandbox.write("pdf/assets/notes.md", "x");
    assert_refused(
        &sandbox,
        &dir,
        "would be the same file on macOS and Windows",
    );
}

#[test]
fn a_skill_without_a_version_is_refused_until_one_is_given() {
    let sandbox = TestContext::new();
    let dir = sandbox.skill("pdf", "pdf", "metadata:\n  version: \"1.0\"\n", "body\n");
    let stderr = assert_refused(&sandbox, &dir, "cannot pack");
    insta::assert_snapshot!(sandbox.redact(&stderr), @r#"
    error: cannot pack `[HOME]/pdf`: the skill has no version
    hint: `metadata.version` is "1.0", which is not a semantic version: write it as MAJOR.MINOR.PATCH, like `1.0.0`
    "#);
    let output = run(sandbox.skillpkg_command().arg("pack").arg(&dir).args([
        "--version",
        "1.0.0",
        "--json",
    ]));
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(output.json()["version"], "1.0.0");
}

#[test]
fn an_invalid_skill_is_not_packed() {
    let sandbox = TestContext::new();
    let dir = sandbox.skill("pdf", "other", "version: 1.0.0\n", "body\n");
    let stderr = assert_refused(&sandbox, &dir, "error[name-mismatch]");
    insta::assert_snapshot!(sandbox.redact(&stderr), @"
    error[name-mismatch]: `name` is `other` but the folder is `pdf`
     --> [HOME]/pdf/SKILL.md:2:7
      |
    2 | name: other
      |       ^^^^^
      = hint: rename the folder to `other` or set `name: pdf`

    warning[non-portable-key]: `version` is a key of the Universal Agent Skill extensions, not of the Agent Skills specification
     --> [HOME]/pdf/SKILL.md:4:1
      |
    4 | version: 1.0.0
      | ^^^^^^^
      = hint: other agents ignore it; keep it only if your users need it

    error: cannot pack `[HOME]/pdf`: the skill has 1 error
    hint: fix them; `skillpkg validate [HOME]/pdf` lists them
    ");
}

#[test]
fn packing_from_inside_the_skill_folder_twice_gives_the_same_bytes() {
    let sandbox = TestContext::new();
    let dir = example_skill(&sandbox, "src");
    let first = run(sandbox
        .skillpkg_command()
        .current_dir(&dir)
        .args(["pack", "--json"]));
    assert_eq!(first.code, 0, "{first:?}");
    let second = run(sandbox
        .skillpkg_command()
        .current_dir(&dir)
        .args(["pack", "--json"]));
    assert_eq!(second.code, 0, "{second:?}");
    assert_eq!(
        first.json()["sha256"],
        second.json()["sha256"],
        "the first tarball is not packed into the second"
    );
    assert!(!second.stderr.contains("warning"), "{}", second.stderr);
    use std::os::unix::fs::PermissionsExt;
    let mode = fs_err::metadata(dir.join("pdf-1.2.3.tgz"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644, "others can read the tarball");
}

/// The sha256 of the tarball of `example_skill`. The format's properties
/// are checked independently (GNU tar's listing, the gzip header, round
/// trips); this pins the bytes, so that a change of compression backend or
/// level, header layout or ordering is seen. If it changes on purpose, the
/// archive format changed: say so in docs/archive-format.md.
const EXAMPLE_SKILL_SHA256: &str =
    "sha256:11a60a2ee879cf2ca3e39d35edeb569bbb85839cfb91fbe058fe6bf5eb933b94";

#[test]
fn the_bytes_of_a_known_skill_are_pinned() {
    let sandbox = TestContext::new();
    let dir = example_skill(&sandbox, "src");
    let output = pack(&sandbox, &dir, &sandbox.path().join("pdf.tgz"));
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(output.json()["sha256"], EXAMPLE_SKILL_SHA256);
}

#[test]
fn a_skill_file_that_would_not_be_packed_is_refused() {
    let sandbox = TestContext::new();
    let dir = sandbox.skill("pdf", "pdf", "version: 1.0.0\n", "body\n");
    sandbox.write("pdf/.skillignore", "*.md\n");
    let stderr = assert_refused(&sandbox, &dir, "error[skill-md-ignored]");
    insta::assert_snapshot!(sandbox.redact(&stderr), @"
    warning[non-portable-key]: `version` is a key of the Universal Agent Skill extensions, not of the Agent Skills specification
     --> [HOME]/pdf/SKILL.md:4:1
      |
    4 | version: 1.0.0
      | ^^^^^^^
      = hint: other agents ignore it; keep it only if your users need it

    error[skill-md-ignored]: `SKILL.md` is left out by a `.skillignore` pattern
     --> [HOME]/pdf/SKILL.md
      = hint: remove the pattern that matches `SKILL.md` from `.skillignore`

    error: cannot pack `[HOME]/pdf`: the skill has 1 error
    hint: fix them; `skillpkg validate [HOME]/pdf` lists them
    ");

    let lower = sandbox.path().join("lower/pdf");
    fs_err::create_dir_all(&lower).unwrap();
    fs_err::copy(dir.join("SKILL.md"), lower.join("skill.md")).unwrap();
    let stderr = assert_refused(
        &sandbox,
        &lower,
        "the skill file is `skill.md`; a package needs it named `SKILL.md`",
    );
    insta::assert_snapshot!(sandbox.redact(&stderr), @"
    warning[skill-md-case]: the skill file is named `skill.md`, not `SKILL.md`
     --> [HOME]/lower/pdf/skill.md
      = hint: rename it to `SKILL.md`: agents on case-sensitive file systems will not find it

    note: 1 recommendation (non-portable-key 1); -v or `skillpkg validate [HOME]/lower/pdf` lists them
    error: cannot pack `[HOME]/lower/pdf`
      Caused by: the skill file is `skill.md`; a package needs it named `SKILL.md`
    hint: rename `skill.md` to `SKILL.md`
    ");
}

#[test]
fn a_version_flag_that_contradicts_the_frontmatter_is_refused() {
    let sandbox = TestContext::new();
    let dir = sandbox.skill("pdf", "pdf", "version: 1.0.0\n", "body\n");
    let stderr = run(sandbox
        .skillpkg_command()
        .arg("pack")
        .arg(&dir)
        .args(["--version", "2.0.0"]))
    .stderr;
    insta::assert_snapshot!(sandbox.redact(&stderr), @"
    note: 1 recommendation (non-portable-key 1); -v or `skillpkg validate [HOME]/pdf` lists them
    error: `--version 2.0.0` contradicts the version 1.0.0 that `[HOME]/pdf` declares
    hint: change the version in SKILL.md, or drop `--version`
    ");
    assert!(!sandbox.path().join("pdf-2.0.0.tgz").exists());
    let agreeing = run(sandbox
        .skillpkg_command()
        .arg("pack")
        .arg(&dir)
        .args(["--version", "1.0.0"]));
    assert_eq!(agreeing.code, 0, "{agreeing:?}");
}

#[test]
fn json_output_of_an_invalid_skill_carries_its_diagnostics() {
    let sandbox = TestContext::new();
    let dir = sandbox.skill("pdf", "other", "version: 1.0.0\n", "body\n");
    let output = run(sandbox
        .skillpkg_command()
        .arg("pack")
        .arg(&dir)
        .arg("--json"));
    assert_eq!(output.code, 1, "{output:?}");
    let json = output.json();
    assert_eq!(json["skill"]["valid"], false);
    assert_eq!(json["skill"]["diagnostics"][0]["code"], "name-mismatch");
}

#[test]
fn an_output_folder_that_does_not_exist_is_a_clear_error() {
    let sandbox = TestContext::new();
    let dir = sandbox.skill("pdf", "pdf", "version: 1.0.0\n", "body\n");
    let output = run(sandbox
        .skillpkg_command()
        .arg("pack")
        .arg(&dir)
        .args(["-o", "dist/pdf.tgz"]));
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    note: 1 recommendation (non-portable-key 1); -v or `skillpkg validate [HOME]/pdf` lists them
    error: cannot write dist/pdf.tgz: the folder dist does not exist
    hint: create it first: `mkdir -p dist`
    ");
}
