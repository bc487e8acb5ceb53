//! A full disk: an install and a publish on a small filesystem (a tmpfs of
//! a few MiB that the test mounts; the tests run as root, as CI does) fail
//! with a clear error and nothing half-written, and succeed once space is
//! freed.

use std::path::{Path, PathBuf};
use std::process::Command;

use skillpkg_tests::static_registry::Registry;
use skillpkg_tests::{
    Output, RegistryServer, TestContext, create_token, files_below, project_files, run,
};

/// A tmpfs of `mebibytes` MiB mounted at `path`, unmounted when dropped.
struct SmallDisk {
    path: PathBuf,
}

impl SmallDisk {
    fn mount(path: &Path, mebibytes: u32) -> Self {
        fs_err::create_dir_all(path).unwrap();
        let output = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mebibytes}m"), "tmpfs"])
            .arg(path)
            .output()
            .expect("run mount");
        assert!(
            output.status.success(),
            "cannot mount a {mebibytes} MiB tmpfs at {} (the disk-full tests need root, as in CI): {}",
            path.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        Self {
            path: path.to_owned(),
        }
    }

    /// Fills the disk up to `keep_free` bytes with a ballast file.
    fn fill(&self, keep_free: u64) {
        let free = self.free();
        assert!(free > keep_free, "only {free} bytes free");
        fs_err::write(
            self.path.join("ballast"),
            vec![0x5a; (free - keep_free) as usize],
        )
        .unwrap();
    }

    fn free(&self) -> u64 {
        let output = Command::new("df")
            .args(["--output=avail", "-B1"])
            .arg(&self.path)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .nth(1)
            .and_then(|line| line.trim().parse().ok())
            .expect("df prints the free bytes")
    }

    fn free_up(&self) {
        fs_err::remove_file(self.path.join("ballast")).unwrap();
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

/// `bytes` of text that gzip cannot shrink much, so archives are as large
/// as the files they hold.
fn noise(seed: u64, bytes: usize) -> String {
    let mut state = seed | 1;
    (0..bytes)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            // Printable noise without `|`: random text must not spell a
            // command piped into a shell, which the registry's audit refuses.
            match b'!' + (state % 90) as u8 {
                b'|' => '~',
                byte => char::from(byte),
            }
        })
        .collect()
}

/// A skill folder `name` of about `bytes` bytes, in the sandbox.
fn big_skill(sandbox: &TestContext, name: &str, bytes: usize) -> PathBuf {
    let dir = sandbox.skill(
        &format!("src/{name}"),
        name,
        "version: 1.0.0\n",
        &format!("# {name}\n"),
    );
    sandbox.write(
        &format!("src/{name}/references/data.md"),
        noise(name.len() as u64 * 7919 + bytes as u64, bytes),
    );
    dir
}

/// No temporary or half-written file of skillpkg's anywhere below `root`.
fn assert_no_leftovers(root: &Path) {
    for path in files_below(root).keys() {
        let text = path.to_string_lossy();
        assert!(
            !text.contains(".skillpkg-new-")
                && !text.contains(".skillpkg-old-")
                && !text.contains(".tmp"),
            "left behind: {text}"
        );
    }
}

#[test]
fn an_install_on_a_full_disk_fails_cleanly_and_succeeds_once_space_is_freed() {
    let sandbox = TestContext::new();
    let mut registry = Registry::new(&sandbox);
    for name in ["alpha", "beta", "gamma"] {
        let dir = big_skill(&sandbox, name, 600 * 1024);
        registry.publish_folder(&dir, name, "1.0.0");
    }
    let disk = SmallDisk::mount(&sandbox.path().join("small"), 8);
    let project = disk.path.join("project");
    fs_err::create_dir_all(&project).unwrap();
    fs_err::write(
        project.join("skills.toml"),
        format!(
            "[registry]\nurl = \"{}\"\n\n[install]\ntargets = [\"claude\", \"agents\"]\n\n[skills]\nalpha = \"1\"\nbeta = \"1\"\ngamma = \"1\"\n",
            registry.url()
        ),
    )
    .unwrap();
    let skillpkg = |args: &[&str]| -> Output {
        run(sandbox
            .skillpkg_command()
            .current_dir(&project)
            .args(args)
            .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("config"))
            .env("SKILLPKG_CACHE_DIR", disk.path.join("cache")))
    };
    // The archives fit (1.8 MiB in the cache); the six folders do not.
    disk.fill(2_500_000);
    let before = project_files(&project);

    let output = skillpkg(&["install"]);
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: cannot unpack beta@1.0.0
      Caused by: I/O error on [HOME]/small/project/.claude/skills/.skillpkg-new-beta-[RANDOM]/references/data.md
      Caused by: failed to write to file `[HOME]/small/project/.claude/skills/.skillpkg-new-beta-[RANDOM]/references/data.md`: No space left on device (os error 28)
    hint: the registry serves an archive that skillpkg refuses to unpack; nothing was installed; report it to the registry's operator or the skill's publisher
    ");
    let after = project_files(&project);
    assert_eq!(after, before, "a failed install changed the project");
    assert_no_leftovers(&disk.path);
    // What the cache kept is whole: every entry is its first line, a
    // complete signature record, and an archive that hashes to its name.
    let entries = files_below(&disk.path.join("cache"));
    assert!(!entries.is_empty(), "the archives fit, so some were cached");
    for (path, bytes) in entries {
        let torn = || format!("{} is torn", path.display());
        let rest = bytes
            .strip_prefix(b"skillpkg-cache-entry 1\n".as_slice())
            .unwrap_or_else(|| panic!("{}", torn()));
        let end = rest
            .iter()
            .position(|byte| *byte == b'\n')
            .expect("a header line");
        let record: serde_json::Value =
            serde_json::from_slice(&rest[..end]).expect("a whole record");
        assert!(
            record["signature"].is_string() && record["key"].is_string(),
            "{}",
            torn()
        );
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let digest = skillpkg_index::checksum::Checksum::of(&rest[end + 1..]);
        assert_eq!(digest.hex(), name, "{}", torn());
    }

    disk.free_up();
    let output = skillpkg(&["install"]);
    assert_eq!(output.code, 0, "{output:?}");
    let output = skillpkg(&["verify"]);
    assert_eq!(output.code, 0, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stdout), @"6 verified, 0 changed");
}

#[test]
fn a_publish_to_a_full_disk_fails_cleanly_and_succeeds_once_space_is_freed() {
    let sandbox = TestContext::new();
    let disk = SmallDisk::mount(&sandbox.path().join("small"), 8);
    let data = disk.path.join("registry");
    let token = create_token(&data, "alice");
    let server = RegistryServer::start(&data, &[]);
    let publish = |dir: &Path| -> Output {
        run(sandbox.skillpkg_command().args([
            "publish",
            dir.to_str().unwrap(),
            "--registry",
            server.url(),
            "--token",
            &token,
            "--no-sign",
        ]))
    };
    let small = big_skill(&sandbox, "small", 20 * 1024);
    let output = publish(&small);
    assert_eq!(output.code, 0, "{output:?}");

    // The discovery index is written a moment after a publish.
    let discovery = server.public().join(".well-known/agent-skills/index.json");
    assert!(skillpkg_tests::wait_until(
        std::time::Duration::from_secs(10),
        || fs_err::read_to_string(&discovery).is_ok_and(|text| text.contains("\"small\""))
    ));
    let big = big_skill(&sandbox, "big", 2 * 1024 * 1024);
    disk.fill(1024 * 1024);
    let public_before = files_below(&server.public());
    let output = publish(&big);
    // A failing server is exit status 3, as every server failure is.
    assert_eq!(output.code, 3, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    note: 1 recommendation (non-portable-key 1); -v or `skillpkg validate [HOME]/src/big` lists them
    error: the registry failed the publish (HTTP 507 from http://127.0.0.1:[PORT]/api/v1/skills): the registry has no storage space left, so nothing was written; try again later, or tell its operator
    ");
    assert!(
        !output.stderr.contains(data.to_str().unwrap()),
        "the server's paths reached the client: {}",
        output.stderr
    );
    assert_eq!(
        files_below(&server.public()),
        public_before,
        "a failed publish changed the served tree"
    );
    assert_no_leftovers(&data);

    disk.free_up();
    let output = publish(&big);
    assert_eq!(output.code, 0, "{output:?}");
    let output = run(sandbox
        .skillpkg_command()
        .args(["info", "big", "--registry", server.url()]));
    assert_eq!(output.code, 0, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stdout), @"
    big 1.0.0
    Does big things. Use when testing.

    size:       1.6 MiB (1728447 bytes)
    checksum:   sha256:011c5517476085202e175e84f62cc2aba7cab379330864a5486368f236af5839
    tree:       h2:+1CsSeP90zDsKIYWXhMdCTgpE5O20O7eQLS6oAVIQDM=
    files:      2
    depends on: none
    signer:     none (unsigned)
    published:  [TIME]
    provenance: none

    versions:
      1.0.0
    ");
}
