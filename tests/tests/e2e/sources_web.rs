//! Skills published on the web without a registry (docs/sources.md): the
//! discovery index of a real `skillpkg-registry serve` (0.2.0, archives),
//! and hand-made sites served by a real nginx (a 0.1.0 index with `files`,
//! a 0.2.0 `skill-md` entry, a tarball URL, and lies).

use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::Digest as _;
use skillpkg_tests::registry::{Skill, TestRegistry};
use skillpkg_tests::{Nginx, Output, TestContext, files_below, project_files, run, wait_until};

/// A project folder in a sandbox, with its own cache.
struct Project {
    sandbox: TestContext,
}

impl Project {
    fn new() -> Self {
        let sandbox = TestContext::new();
        fs_err::create_dir_all(sandbox.path().join("project")).unwrap();
        let project = Self { sandbox };
        let init = project.user(&["init", "--target", "claude"]);
        assert_eq!(init.code, 0, "{init:?}");
        project
    }

    fn dir(&self) -> PathBuf {
        self.sandbox.path().join("project")
    }

    fn user(&self, args: &[&str]) -> Output {
        self.sandbox
            .user_in(&self.dir(), &self.sandbox.path().join("cache"), args)
    }

    /// Runs skillpkg in the project with a cache of its own: another
    /// machine, with the same project.
    fn elsewhere(&self, args: &[&str]) -> Output {
        self.sandbox
            .user_in(&self.dir(), &self.sandbox.path().join("other-cache"), args)
    }

    fn read(&self, relative: &str) -> String {
        fs_err::read_to_string(self.dir().join(relative)).unwrap_or_default()
    }

    fn installed(&self, name: &str) -> PathBuf {
        self.dir().join(".claude/skills").join(name)
    }

    fn files(&self) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
        project_files(&self.dir())
    }

    /// Writes `skill` into the sandbox and returns its folder, to compare
    /// an installed copy with.
    fn expected(&self, skill: &Skill, name: &str) -> PathBuf {
        let dir = self.sandbox.path().join("expected").join(name);
        if dir.exists() {
            fs_err::remove_dir_all(&dir).unwrap();
        }
        skill.write(&dir);
        dir
    }
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", sha2::Sha256::digest(bytes))
}

/// Waits until the registry's discovery index lists `needle`.
fn wait_for_discovery(registry: &TestRegistry, needle: &str) -> serde_json::Value {
    let index = registry
        .public()
        .join(".well-known/agent-skills/index.json");
    assert!(
        wait_until(Duration::from_secs(10), || {
            fs_err::read_to_string(&index).is_ok_and(|text| text.contains(needle))
        }),
        "the discovery index lists {needle}"
    );
    serde_json::from_str(&fs_err::read_to_string(&index).unwrap()).unwrap()
}

fn digest_of(index: &serde_json::Value, name: &str) -> String {
    index["skills"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["name"] == name)
        .unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_skill_from_a_discovery_index_is_pinned_by_its_digest_and_changes_only_on_update() {
    let ctx = TestContext::new();
    let registry = TestRegistry::start(&ctx);
    let pdf = Skill::new("pdf", "1.0.0").file("scripts/run.sh", "#!/bin/sh\necho pdf\n", true);
    registry.publish(&pdf);
    registry.publish(&Skill::new("notes", "0.2.0"));
    let discovery = wait_for_discovery(&registry, "dl/notes/0.2.0/");
    let project = Project::new();
    // The registry's own URL is read as a registry (sources.rs); its
    // discovery index is read when it is named, and said.
    let site = format!("{}/.well-known/agent-skills/index.json", registry.url());

    let ambiguous = project.user(&["add", &site]);
    assert_eq!(ambiguous.code, 1, "{ambiguous:?}");
    assert!(
        ambiguous.stderr.contains("holds 2 skills: notes, pdf"),
        "{}",
        ambiguous.stderr
    );

    let added = project.user(&["add", &site, "--skill", "pdf"]);
    assert_eq!(added.code, 0, "{added:?}");
    assert!(
        added
            .stderr
            .contains("which is a skillpkg registry: its signature and version are not checked"),
        "{}",
        added.stderr
    );
    assert!(
        project
            .read("skills.toml")
            .contains(&format!("pdf = {{ index = \"{site}\" }}")),
        "{}",
        project.read("skills.toml")
    );
    let lock = project.read("skills.lock");
    assert!(
        lock.contains(&format!("source = \"index+{site}\"")),
        "{lock}"
    );
    assert!(
        lock.contains(&format!("checksum = \"{}\"", digest_of(&discovery, "pdf"))),
        "the lock pins the digest the index gives: {lock}"
    );
    assert_eq!(
        files_below(&project.installed("pdf")),
        files_below(&project.expected(&pdf, "pdf"))
    );

    // A new version is published: the locked install refuses the new
    // bytes (the folder was lost, so it must fetch), and changes nothing;
    // `update` takes them.
    let newer = Skill::new("pdf", "1.1.0").body("# pdf 1.1.0\nNewer.\n");
    registry.publish(&newer);
    wait_for_discovery(&registry, "dl/pdf/1.1.0/");
    fs_err::remove_dir_all(project.dir().join(".claude")).unwrap();
    let before = project.files();
    // The locked archive is still in this cache (and installs from it);
    // another machine must fetch it, and the site now serves other bytes.
    let refused = project.elsewhere(&["install"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("the discovery index now lists"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("skillpkg update pdf"),
        "{}",
        refused.stderr
    );
    assert_eq!(project.files(), before);
    let from_cache = project.user(&["install", "--locked"]);
    assert_eq!(from_cache.code, 0, "{from_cache:?}");
    assert_eq!(
        files_below(&project.installed("pdf")),
        files_below(&project.expected(&pdf, "pdf")),
        "the locked version, from the cache"
    );
    let updated = project.user(&["update", "pdf"]);
    assert_eq!(updated.code, 0, "{updated:?}");
    assert_eq!(
        files_below(&project.installed("pdf")),
        files_below(&project.expected(&newer, "pdf"))
    );
    assert!(project.read("skills.lock").contains("version = \"1.1.0\""));
}

/// Writes `skill`'s files under `dir` and returns their paths, sorted.
fn write_files(skill: &Skill, dir: &Path) -> Vec<String> {
    skill.write(dir);
    let mut files: Vec<String> = files_below(dir)
        .keys()
        .map(|path| path.to_string_lossy().replace('\\', "/"))
        .collect();
    files.sort();
    files
}

#[test]
fn older_indexes_skill_md_entries_and_tarballs_install_and_lies_are_refused() {
    let sandbox = TestContext::new();
    let site = sandbox.path().join("site");
    // 0.1.0: the files of each skill below the index's folder.
    let notes =
        Skill::new("notes", "1.0.0").file("scripts/run.sh", "#!/bin/sh\necho notes\n", false);
    let files = write_files(&notes, &site.join(".well-known/skills/notes"));
    let index_v1 = serde_json::json!({ "skills": [
        { "name": "notes", "description": "Takes notes.", "files": files },
        { "name": "escape", "description": "Reads outside.", "files": ["SKILL.md", "../../secret.txt"] },
        { "name": "encoded", "description": "Reads outside.", "files": ["SKILL.md", "%2e%2e/%2e%2e/secret.txt"] },
    ]});
    fs_err::write(
        site.join(".well-known/skills/index.json"),
        index_v1.to_string(),
    )
    .unwrap();
    // 0.2.0 elsewhere: a SKILL.md alone, and an entry whose digest lies.
    let other = site.join("other/.well-known/agent-skills");
    Skill::new("md-only", "2.0.0").write(&other.join("md-only"));
    Skill::new("liar", "2.0.0").write(&other.join("liar"));
    let md = fs_err::read(other.join("md-only/SKILL.md")).unwrap();
    let index_v2 = serde_json::json!({
        "$schema": "https://schemas.agentskills.io/discovery/0.2.0/schema.json",
        "skills": [
            { "name": "md-only", "type": "skill-md", "description": "One file.", "url": "md-only/SKILL.md", "digest": sha256(&md) },
            { "name": "liar", "type": "skill-md", "description": "Lies.", "url": "liar/SKILL.md", "digest": sha256(b"something else") },
        ]
    });
    fs_err::write(other.join("index.json"), index_v2.to_string()).unwrap();
    // A site may serve a config.json of its own, here a broken one: only
    // a registry's makes it a registry.
    fs_err::write(site.join("config.json"), "{ \"v\": 2, \"dl\": ").unwrap();
    // A tarball, as `skillpkg pack` writes it.
    let csv = Skill::new("csv", "1.0.0");
    csv.write(&sandbox.path().join("csv"));
    fs_err::create_dir_all(site.join("dl")).unwrap();
    let packed =
        run(sandbox
            .skillpkg_command()
            .args(["pack", "csv", "--output", "site/dl/csv-1.0.0.tgz"]));
    assert_eq!(packed.code, 0, "{packed:?}");
    let nginx = Nginx::serve(&site);

    let project = Project::new();
    let base = format!("{}/", nginx.url());
    let added = project.user(&["add", &base, "--all"]);
    assert_eq!(added.code, 0, "{added:?}");
    assert!(
        !added.stderr.contains("as a skillpkg registry"),
        "{}",
        added.stderr
    );
    assert!(
        added
            .stderr
            .contains("leaves out `escape`: the file \"../../secret.txt\""),
        "{}",
        added.stderr
    );
    assert!(
        added.stderr.contains("leaves out `encoded`: the file \"%2e%2e/%2e%2e/secret.txt\" (`%`, `#` and `?` would be read as part of a URL)"),
        "{}",
        added.stderr
    );
    assert_eq!(
        files_below(&project.installed("notes")),
        files_below(&project.expected(&notes, "notes")),
        "a 0.1.0 index's files land byte for byte"
    );
    let lock = project.read("skills.lock");
    assert!(
        lock.contains(&format!("source = \"index+{base}\"")),
        "{lock}"
    );

    let other_url = format!("{}/other/.well-known/agent-skills/index.json", nginx.url());
    let md_only = project.user(&["add", &other_url, "--skill", "md-only"]);
    assert_eq!(md_only.code, 0, "{md_only:?}");
    assert_eq!(
        fs_err::read(project.installed("md-only").join("SKILL.md")).unwrap(),
        md
    );

    // An index reached through a redirect: its relative URLs are relative
    // to where it was found.
    let target = other_url.clone();
    let moved = skillpkg_tests::scripted::ScriptedServer::start(move |_, stream| {
        skillpkg_tests::scripted::redirect(stream, "301 Moved Permanently", &target);
    });
    let redirected = project.user(&[
        "add",
        &format!("{}/old/index.json", moved.url()),
        "--skill",
        "md-only",
    ]);
    assert_eq!(redirected.code, 0, "{redirected:?}");

    let tarball_url = format!("{}/dl/csv-1.0.0.tgz", nginx.url());
    let tarball = project.user(&["add", &tarball_url]);
    assert_eq!(tarball.code, 0, "{tarball:?}");
    let tgz = fs_err::read(site.join("dl/csv-1.0.0.tgz")).unwrap();
    let lock = project.read("skills.lock");
    assert!(
        lock.contains(&format!(
            "source = \"url+{tarball_url}\"\nchecksum = \"{}\"",
            sha256(&tgz)
        )),
        "{lock}"
    );
    assert_eq!(
        files_below(&project.installed("csv")),
        files_below(&project.expected(&csv, "csv"))
    );

    // Offline, the tarball comes from the cache, checked against the lock.
    fs_err::remove_dir_all(project.installed("csv")).unwrap();
    let frozen = project.user(&["install", "--frozen"]);
    assert_eq!(frozen.code, 0, "{frozen:?}");
    assert_eq!(
        files_below(&project.installed("csv")),
        files_below(&project.expected(&csv, "csv"))
    );

    // Lies and changes: nothing installed, nothing changed.
    let before = project.files();
    let liar = project.user(&["add", &other_url, "--skill", "liar"]);
    assert_eq!(liar.code, 1, "{liar:?}");
    assert!(
        liar.stderr.contains("but the discovery index says"),
        "{}",
        liar.stderr
    );
    let escape = project.user(&["add", &base, "--skill", "escape"]);
    assert_eq!(escape.code, 1, "{escape:?}");
    assert!(
        escape.stderr.contains("has no skill `escape`"),
        "{}",
        escape.stderr
    );
    assert_eq!(project.files(), before);
    // The tarball is replaced by other bytes: the lock refuses them.
    let other_csv = Skill::new("csv", "1.0.1");
    fs_err::remove_dir_all(sandbox.path().join("csv")).unwrap();
    other_csv.write(&sandbox.path().join("csv"));
    fs_err::remove_file(site.join("dl/csv-1.0.0.tgz")).unwrap();
    let repacked =
        run(sandbox
            .skillpkg_command()
            .args(["pack", "csv", "--output", "site/dl/csv-1.0.0.tgz"]));
    assert_eq!(repacked.code, 0, "{repacked:?}");
    fs_err::remove_dir_all(project.installed("csv")).unwrap();
    let before = project.files();
    let changed = project.elsewhere(&["install", "--locked"]);
    assert_eq!(changed.code, 1, "{changed:?}");
    assert!(
        changed
            .stderr
            .contains(&format!("{tarball_url} now serves")),
        "{}",
        changed.stderr
    );
    assert_eq!(project.files(), before);
}

#[test]
fn an_index_of_100000_skills_is_read_whole_and_keeps_the_first_entry_of_a_name() {
    let sandbox = TestContext::new();
    let folder = sandbox.path().join("site/.well-known/agent-skills");
    // Two real skills: the last entry's, and the one of a name listed
    // twice; the other entries' files are never fetched.
    let last = Skill::new("n99999", "1.0.0");
    let first = Skill::new("n00000", "1.0.0");
    last.write(&sandbox.path().join("last"));
    first.write(&sandbox.path().join("first"));
    let last_md = fs_err::read(sandbox.path().join("last/SKILL.md")).unwrap();
    let first_md = fs_err::read(sandbox.path().join("first/SKILL.md")).unwrap();
    fs_err::create_dir_all(&folder).unwrap();
    fs_err::write(folder.join("n99999.md"), &last_md).unwrap();
    fs_err::write(folder.join("n00000.md"), &first_md).unwrap();
    let entries: Vec<serde_json::Value> = (0..100_000)
        .map(|number| {
            let (name, digest) = match number {
                0 => ("n00000".to_owned(), sha256(&first_md)),
                99_999 => ("n99999".to_owned(), sha256(&last_md)),
                // The second entry of `n00000`, with other files.
                50_000 => ("n00000".to_owned(), sha256(b"other")),
                _ => (
                    format!("n{number:05}"),
                    sha256(number.to_string().as_bytes()),
                ),
            };
            serde_json::json!({
                "name": name, "type": "skill-md", "description": "A skill.",
                "url": format!("{name}.md"), "digest": digest,
            })
        })
        .collect();
    let index = serde_json::json!({
        "$schema": "https://schemas.agentskills.io/discovery/0.2.0/schema.json",
        "skills": entries,
    })
    .to_string();
    assert!(
        (15 << 20..16 << 20).contains(&index.len()),
        "about 15 MiB, under the 16 MiB an index may hold: {}",
        index.len()
    );
    fs_err::write(folder.join("index.json"), index).unwrap();
    let nginx = Nginx::serve(&sandbox.path().join("site"));
    let project = Project::new();
    let site = format!("{}/", nginx.url());

    let added = project.user(&["add", &site, "--skill", "n99999"]);
    assert_eq!(added.code, 0, "{added:?}");
    assert_eq!(
        fs_err::read(project.installed("n99999").join("SKILL.md")).unwrap(),
        last_md
    );
    assert!(
        added
            .stderr
            .contains("leaves out `n00000`: listed twice (the first is kept)"),
        "{}",
        added.stderr
    );
    let first_kept = project.user(&["add", &site, "--skill", "n00000"]);
    assert_eq!(first_kept.code, 0, "{first_kept:?}");
    assert_eq!(
        fs_err::read(project.installed("n00000").join("SKILL.md")).unwrap(),
        first_md
    );
    let lock = project.read("skills.lock");
    assert!(lock.contains(&sha256(&first_md)), "{lock}");
}
