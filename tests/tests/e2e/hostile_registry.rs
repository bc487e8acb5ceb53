//! A registry that serves what no honest registry would: archives that carry
//! version control metadata or that other tar readers read differently, and
//! index records whose text holds terminal escapes. The archives are
//! correctly checksummed, so only the client's own checks stand between them
//! and the project. A static `file://` tree written in the test stands in
//! for the registry: an old registry, or one that was broken into, skips the
//! publish-time validation these archives would fail.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use skillpkg_index::archive::{FileDigest, tree_hash};
use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::tree::StaticTree;
use skillpkg_index::registry::{IndexRecord, RegistryConfig};
use skillpkg_tests::{Output, RegistryServer, TestContext, create_token, files_below, run};

const SKILL_MD: &[u8] = b"---\nname: evil\ndescription: Looks helpful.\n---\n# Evil\n";

/// One entry of a hostile archive: a PAX global header's records, or a file.
enum Entry<'a> {
    GlobalHeader(&'a [u8]),
    File(&'a str, &'a [u8]),
}

/// Writes the archive of `entries` with the `tar` crate (which writes
/// `.git` paths and global headers as asked) and gzips it.
fn archive(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for entry in entries {
        let mut header = tar::Header::new_ustar();
        header.set_mode(0o644);
        header.set_mtime(315_532_800);
        match entry {
            Entry::GlobalHeader(records) => {
                header.set_entry_type(tar::EntryType::XGlobalHeader);
                header.set_size(records.len() as u64);
                builder
                    .append_data(&mut header, "pax_global_header", *records)
                    .unwrap();
            }
            Entry::File(path, data) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_size(data.len() as u64);
                builder.append_data(&mut header, path, *data).unwrap();
            }
        }
    }
    let tar = builder.into_inner().unwrap();
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(&tar).unwrap();
    encoder.finish().unwrap()
}

/// Writes a static registry at `<sandbox>/tree` serving `evil@1.0.0` as
/// `tarball`, with an index record whose checksum is the tarball's and whose
/// tree hash is that of `files`, and returns its `file://` URL.
fn registry_serving(sandbox: &TestContext, tarball: &[u8], files: &[(&str, &[u8])]) -> String {
    registry_serving_with(sandbox, tarball, files, "Looks helpful.", None)
}

/// [`registry_serving`] with the record's description and yank reason.
fn registry_serving_with(
    sandbox: &TestContext,
    tarball: &[u8],
    files: &[(&str, &[u8])],
    description: &str,
    yanked_reason: Option<&str>,
) -> String {
    let tree = StaticTree::new(sandbox.path().join("tree"));
    let config = RegistryConfig::read_only(8 * 1024 * 1024);
    tree.write_config(&config).unwrap();
    let name = "evil".parse().unwrap();
    let version: semver::Version = "1.0.0".parse().unwrap();
    let published = "2026-11-22T10:00:00Z".parse().unwrap();
    tree.write_archive(&name, &version, tarball, None, published)
        .unwrap();
    let mut digests: Vec<FileDigest> = files
        .iter()
        .map(|(path, data)| FileDigest {
            path: (*path).to_owned(),
            sha256: <sha2::Sha256 as sha2::Digest>::digest(data).into(),
            executable: false,
        })
        .collect();
    digests.sort_by(|a, b| a.path.cmp(&b.path));
    let record = IndexRecord {
        v: 1,
        name: name.clone(),
        vers: version,
        cksum: Checksum::of(tarball),
        size: tarball.len() as u64,
        tree: tree_hash(&digests).to_string(),
        files: files.len() as u64,
        deps: Vec::new(),
        description: description.into(),
        yanked: yanked_reason.is_some(),
        yanked_reason: yanked_reason.map(Into::into),
        signer: None,
        published,
        audit: None,
    };
    tree.write_index(&name, &[record]).unwrap();
    tree.write_aggregates(&tree.read_all().unwrap(), &config, None)
        .unwrap();
    url::Url::from_directory_path(tree.root())
        .unwrap()
        .to_string()
}

/// A project set up to install into `.claude/skills` from `registry`.
fn project(sandbox: &TestContext, registry: &str) -> PathBuf {
    let project = sandbox.path().join("project");
    fs_err::create_dir_all(&project).unwrap();
    let init = user(
        sandbox,
        &project,
        &["init", "--target", "claude", "--registry", registry],
    );
    assert_eq!(init.code, 0, "{init:#?}");
    project
}

fn user(sandbox: &TestContext, project: &Path, args: &[&str]) -> Output {
    run(sandbox
        .skillpkg_command()
        .current_dir(project)
        .args(args)
        .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("config"))
        .env("SKILLPKG_CACHE_DIR", sandbox.path().join("cache")))
}

/// Runs `skillpkg add evil` against a registry serving `tarball` and expects
/// a refusal, with the project left as it was; returns what it said.
fn add_refusal(tarball: &[u8], files: &[(&str, &[u8])]) -> String {
    let sandbox = TestContext::new();
    let registry = registry_serving(&sandbox, tarball, files);
    let project = project(&sandbox, &registry);
    // The empty file every install takes a lock on is no change.
    fs_err::write(project.join(".skillpkg-lock"), b"").unwrap();
    let before = files_below(&project);

    let added = user(&sandbox, &project, &["add", "evil", "--allow-unsigned"]);

    assert_ne!(added.code, 0, "{added:#?}");
    assert_eq!(files_below(&project), before, "the project changed");
    assert!(!project.join(".claude/skills/evil").exists());
    sandbox.redact(&added.stderr)
}

#[test]
fn installing_an_archive_carrying_git_config_is_refused_and_changes_nothing() {
    let marker = "/tmp/skillpkg-fsmonitor-ran";
    let config = format!("[core]\n\tfsmonitor = \"touch {marker}; false\"\n");
    let files: &[(&str, &[u8])] = &[
        ("SKILL.md", SKILL_MD),
        (".git/HEAD", b"ref: refs/heads/main\n"),
        (".git/config", config.as_bytes()),
    ];
    let tarball = archive(&[
        Entry::File("SKILL.md", SKILL_MD),
        Entry::File(".git/HEAD", b"ref: refs/heads/main\n"),
        Entry::File(".git/config", config.as_bytes()),
    ]);
    insta::assert_snapshot!(add_refusal(&tarball, files), @"
          Adding evil
    error: cannot unpack evil@1.0.0
      Caused by: entry `.git/HEAD` has an unsafe path
      Caused by: `.git` is Git metadata, which Git reads and may act on (running hooks or commands) in the folder a skill is installed in
    hint: the registry serves an archive that skillpkg refuses to unpack; nothing was installed; report it to the registry's operator or the skill's publisher
    ");
}

/// GNU tar and Python's `tarfile` apply a global header's `path` to the
/// entries after it: they would write `SKILL.md` two folders up.
#[test]
fn installing_an_archive_with_a_pax_global_header_is_refused_and_changes_nothing() {
    let records = b"23 path=../../SKILL.md\n";
    let tarball = archive(&[
        Entry::GlobalHeader(records),
        Entry::File("SKILL.md", SKILL_MD),
    ]);
    insta::assert_snapshot!(add_refusal(&tarball, &[("SKILL.md", SKILL_MD)]), @"
          Adding evil
    error: cannot unpack evil@1.0.0
      Caused by: entry `pax_global_header` is a PAX global header; only regular files and directories are allowed
    hint: the registry serves an archive that skillpkg refuses to unpack; nothing was installed; report it to the registry's operator or the skill's publisher
    ");
}

// The same archives, published to the real server.

/// Publishes `tarball` as `name@1.0.0` with `token`, and returns the status
/// and the JSON reply.
fn publish(
    server: &RegistryServer,
    token: &str,
    name: &str,
    tarball: Vec<u8>,
) -> (u16, serde_json::Value) {
    let form = reqwest::blocking::multipart::Form::new()
        .text("name", name.to_owned())
        .text("version", "1.0.0")
        .part(
            "tarball",
            reqwest::blocking::multipart::Part::bytes(tarball).file_name("skill.tgz"),
        );
    let response = reqwest::blocking::Client::new()
        .put(format!("{}/api/v1/skills", server.url()))
        .bearer_auth(token)
        .multipart(form)
        .send()
        .expect("the server answers");
    let status = response.status().as_u16();
    (status, response.json().unwrap_or(serde_json::Value::Null))
}

/// Publishes `tarball` as `evil@1.0.0` to a fresh server and expects a 400
/// whose detail holds every one of `needles`, with nothing written, and a
/// server that still publishes an honest skill afterwards.
fn publish_is_refused(tarball: Vec<u8>, needles: &[&str]) {
    let root = tempfile::tempdir().unwrap();
    let token = create_token(root.path(), "alice");
    let server = RegistryServer::start(root.path(), &[]);
    let before = skillpkg_tests::served_files_below(&server.public());
    let (status, body) = publish(&server, &token, "evil", tarball);
    assert_eq!(status, 400, "{body}");
    let detail = body["errors"][0]["detail"].as_str().unwrap_or_default();
    for needle in needles {
        assert!(detail.contains(needle), "`{needle}` not in {body}");
    }
    assert_eq!(
        skillpkg_tests::served_files_below(&server.public()),
        before,
        "a refused publish wrote"
    );

    let honest = b"---\nname: honest\ndescription: Does honest things.\n---\n# Honest\n";
    let (status, body) = publish(
        &server,
        &token,
        "honest",
        archive(&[Entry::File("SKILL.md", honest)]),
    );
    assert_eq!(status, 201, "the server is still up: {body}");
}

#[test]
fn publishing_an_archive_carrying_git_config_is_refused_and_writes_nothing() {
    let tarball = archive(&[
        Entry::File("SKILL.md", SKILL_MD),
        Entry::File(
            "scripts/.Git/config",
            b"[core]\n\tfsmonitor = touch /tmp/x\n",
        ),
    ]);
    publish_is_refused(tarball, &["`scripts/.Git/config`", "Git metadata"]);
}

#[test]
fn publishing_an_archive_with_a_pax_global_header_is_refused_and_writes_nothing() {
    let tarball = archive(&[
        Entry::GlobalHeader(b"23 path=../../SKILL.md\n"),
        Entry::File("SKILL.md", SKILL_MD),
    ]);
    publish_is_refused(tarball, &["PAX global header"]);
}

// Index records whose text a terminal would act on.

/// ESC sequences that clear the screen and make a link whose text hides its
/// target, a CR that would overwrite the line, a C1 CSI, and a right-to-left
/// override that would show the rest of the line reversed.
const HOSTILE_TEXT: &str = "Looks helpful.\u{1b}]8;;https://evil.example\u{7}Docs\u{1b}]8;;\u{7}\u{1b}[2J\rGone\u{9b}31m\u{202e}exe.txt";

/// Asserts that `output` holds no character a terminal acts on: no control
/// but line feed, no bidirectional control.
#[track_caller]
fn assert_printable(output: &Output) {
    for (stream, text) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        let sent: Vec<char> = text
            .chars()
            .filter(|c| (c.is_control() && *c != '\n') || ('\u{202a}'..='\u{202e}').contains(c))
            .collect();
        assert!(sent.is_empty(), "{stream} sends {sent:?}: {output:#?}");
    }
}

/// Runs skillpkg as in a terminal with colour forced, so that nothing
/// between the command and the test strips escapes.
fn in_terminal(sandbox: &TestContext, args: &[&str]) -> Output {
    run(sandbox
        .skillpkg_command()
        .args(args)
        .env_remove("NO_COLOR")
        .env("CLICOLOR_FORCE", "1"))
}

#[test]
fn search_and_info_never_print_control_characters_from_the_registry() {
    let tarball = archive(&[Entry::File("SKILL.md", SKILL_MD)]);
    let files: &[(&str, &[u8])] = &[("SKILL.md", SKILL_MD)];
    let sandbox = TestContext::new();
    let registry = registry_serving_with(&sandbox, &tarball, files, HOSTILE_TEXT, None);
    let search = in_terminal(&sandbox, &["search", "helpful", "--registry", &registry]);
    assert_eq!(search.code, 0, "{search:#?}");
    assert_printable(&search);
    assert!(
        search
            .stdout
            .starts_with("evil  1.0.0  Looks helpful. ]8;;https://evil.example Docs"),
        "{search:#?}"
    );

    // Yanked, so that `info` shows the reason too.
    let sandbox = TestContext::new();
    let registry =
        registry_serving_with(&sandbox, &tarball, files, HOSTILE_TEXT, Some(HOSTILE_TEXT));
    let info = in_terminal(&sandbox, &["info", "evil", "--registry", &registry]);
    assert_eq!(info.code, 0, "{info:#?}");
    assert_printable(&info);
    insta::assert_snapshot!(sandbox.redact(&info.stdout), @"
    evil 1.0.0
    Looks helpful. ]8;;https://evil.example Docs ]8;; [2J Gone 31m exe.txt

    size:       137 B (137 bytes)
    checksum:   sha256:23c7bd1ace507c6e52c8750bd0b59eb9db9c7983a1d22ffa421c59cbdbb1d70c
    tree:       h2:KhZHITxz/oRfmRXlmc40ENsHaOrIOWDCgk+UKCBzhdU=
    files:      1
    depends on: none
    signer:     none (unsigned)
    published:  [TIME]
    provenance: none
    yanked:     Looks helpful. ]8;;https://evil.example Docs ]8;; [2J Gone 31m exe.txt

    versions:
      1.0.0  (yanked: Looks helpful. ]8;;https://evil.example Docs ]8;; [2J Gone 31m exe.txt)
    ");
}

/// An error can quote what the registry sent (here, the name of an archive
/// entry): it is shown, not sent to the terminal.
#[test]
fn errors_never_print_control_characters_from_an_archive() {
    let sandbox = TestContext::new();
    let files: &[(&str, &[u8])] = &[("SKILL.md", SKILL_MD), ("\u{1b}[2Jx\u{202e}", b"x")];
    let tarball = archive(&[
        Entry::File("SKILL.md", SKILL_MD),
        Entry::File("\u{1b}[2Jx\u{202e}", b"x"),
    ]);
    let registry = registry_serving(&sandbox, &tarball, files);
    let project = project(&sandbox, &registry);
    let added = run(sandbox
        .skillpkg_command()
        .current_dir(&project)
        .args(["add", "evil", "--allow-unsigned"])
        .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("config"))
        .env("SKILLPKG_CACHE_DIR", sandbox.path().join("cache"))
        .env_remove("NO_COLOR")
        .env("CLICOLOR_FORCE", "1"));
    assert_ne!(added.code, 0, "{added:#?}");
    // The error's own styles are escapes too: check the lines after them.
    let text: String = added
        .stderr
        .lines()
        .filter(|line| line.contains("Caused by"))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(text.contains(r"entry `\u{1b}[2Jx\u{202e}`"), "{added:#?}");
    assert_printable(&Output {
        code: added.code,
        stdout: added.stdout,
        stderr: text,
    });
}

/// The server validates what it is sent: a description carrying escapes
/// never reaches the index, `search.json` or the discovery index.
#[test]
fn publishing_a_description_with_terminal_escapes_is_refused_and_writes_nothing() {
    let skill_md = b"---\nname: evil\ndescription: \"Looks helpful.\\e]8;;https://evil.example\\aDocs\"\n---\n# Evil\n";
    let tarball = archive(&[Entry::File("SKILL.md", skill_md)]);
    publish_is_refused(tarball, &["control-character", "U+001B (ESC)"]);
}

/// Each `- ` is one more level: 60 KB of them overflowed the 2 MiB stack of
/// the thread validating the upload, which aborted the whole server.
#[test]
fn publishing_a_deeply_nested_frontmatter_is_refused_and_the_server_stays_up() {
    let skill_md = format!(
        "---\nname: evil\ndescription: d\nmetadata:\n  x:\n  {}a\n---\n# Evil\n",
        "- ".repeat(30_000)
    );
    let tarball = archive(&[Entry::File("SKILL.md", skill_md.as_bytes())]);
    publish_is_refused(tarball, &["frontmatter-too-large", "64 levels"]);
}
