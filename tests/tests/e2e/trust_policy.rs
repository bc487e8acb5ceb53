//! The trust policy of skills.toml (`[policy]`, `allowed-signers`) and
//! confusable names, end to end: the real client against the real server.
//!
//! A version's age is its index line's `published`, which the server sets
//! to the moment of the publish. To have versions of chosen ages, a test
//! publishes them, then builds a static copy of the tree with
//! `skillpkg-registry build` from the server's archives after setting each
//! archive's modification time, which is where `build` reads `published`
//! from (and where the server records it): no test-only switch in either
//! binary.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use skillpkg_tests::{Output, Skill, TestContext, TestRegistry, create_token, run};

const HOUR: Duration = Duration::from_secs(3600);
const DAY: Duration = Duration::from_secs(24 * 3600);

struct World {
    registry: TestRegistry,
    sandbox: TestContext,
}

impl World {
    fn new(flags: &[&str]) -> Self {
        let sandbox = TestContext::new();
        let registry = TestRegistry::builder(&sandbox).flags(flags).start();
        fs_err::create_dir_all(sandbox.path().join("project")).unwrap();
        Self { registry, sandbox }
    }

    fn project(&self) -> PathBuf {
        self.sandbox.path().join("project")
    }

    /// Runs skillpkg in the project, as its user.
    fn user(&self, args: &[&str]) -> Output {
        self.sandbox
            .user_in(&self.project(), &self.sandbox.path().join("cache"), args)
    }

    /// Writes the project's skills.toml.
    fn manifest(&self, text: &str) {
        fs_err::write(self.project().join("skills.toml"), text).unwrap();
    }

    /// The bytes of skills.toml and skills.lock.
    fn files(&self) -> (Vec<u8>, Option<Vec<u8>>) {
        (
            fs_err::read(self.project().join("skills.toml")).unwrap(),
            fs_err::read(self.project().join("skills.lock")).ok(),
        )
    }

    fn lock(&self) -> String {
        fs_err::read_to_string(self.project().join("skills.lock")).unwrap_or_default()
    }

    /// Publishes `name@version`, signed, with provenance: from a commit of
    /// a git repository of its own.
    fn publish_with_provenance(&self, name: &str, version: &str) {
        let repo = self
            .sandbox
            .path()
            .join("repos")
            .join(format!("{name}-{version}"));
        let dir = repo.join(name);
        Skill::new(name, version).write(&dir);
        git(&repo, &["init", "-q"]);
        git(
            &repo,
            &[
                "remote",
                "add",
                "origin",
                "https://example.com/acme/skills.git",
            ],
        );
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-q", "-m", version]);
        let published = self.registry.publisher(&[
            "publish",
            dir.to_str().unwrap(),
            "--provenance",
            "--registry",
            self.registry.url(),
            "--token",
            self.registry.token(),
        ]);
        assert_eq!(published.code, 0, "{published:?}");
    }

    /// A static copy of the registry's tree in which each `(name, version,
    /// age)` was published `age` ago: built with `skillpkg-registry build`
    /// from the server's archives, whose modification times it reads as
    /// `published`.
    fn aged_tree(&self, ages: &[(&str, &str, Duration)]) -> PathBuf {
        let archives = self.sandbox.path().join("aged-archives");
        copy_tree(&self.registry.public().join("dl"), &archives);
        for (name, version, age) in ages {
            let archive = archives.join(format!("{name}/{version}/{name}-{version}.tgz"));
            fs_err::OpenOptions::new()
                .write(true)
                .open(&archive)
                .unwrap()
                .file()
                .set_modified(SystemTime::now() - *age)
                .unwrap();
        }
        let tree = self.sandbox.path().join("aged");
        let built = run(self
            .sandbox
            .registry()
            .arg("build")
            .arg("--from")
            .arg(&archives)
            .arg("--out")
            .arg(&tree)
            .arg("--keys-from")
            .arg(self.registry.public()));
        assert_eq!(built.code, 0, "{built:?}");
        tree
    }
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

fn copy_tree(from: &Path, to: &Path) {
    fs_err::create_dir_all(to).unwrap();
    for entry in fs_err::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            fs_err::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn a_version_younger_than_the_minimum_release_age_is_passed_over_and_a_locked_one_kept() {
    let world = World::new(&[]);
    world
        .registry
        .publish(&Skill::new("pdf-processing", "1.2.0"));
    world
        .registry
        .publish(&Skill::new("pdf-processing", "1.3.0"));
    // A minute past five hours, so the age reads "5 hours" however long the
    // test takes.
    let tree = world.aged_tree(&[
        ("pdf-processing", "1.2.0", 10 * DAY),
        (
            "pdf-processing",
            "1.3.0",
            5 * HOUR + Duration::from_secs(60),
        ),
    ]);
    let manifest = format!(
        "[registry]\nurl = \"{}\"\n\n[install]\ntargets = [\"claude\"]\n\n[policy]\nminimum-release-age = \"3d\"\n\n[skills]\n",
        tree.display()
    );
    world.manifest(&manifest);

    let added = world.user(&["add", "pdf-processing"]);
    assert_eq!(added.code, 0, "{added:?}");
    assert!(
        world
            .lock()
            .contains("name = \"pdf-processing\"\nversion = \"1.2.0\""),
        "{}",
        world.lock()
    );

    // Only 1.3.0 meets `^1.3`, and it is 5 hours old: refused, naming it.
    let before = world.files();
    let refused = world.user(&["add", "pdf-processing@^1.3"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    // The registry is named as `--registry` takes it: here, its path.
    assert!(
        refused.stderr.contains("error: no version of `pdf-processing` in registry `")
            && refused.stderr.contains(
                "` that matches `^1.3` meets the policy of skills.toml: pdf-processing 1.3.0 was published 5 hours ago; the policy's minimum-release-age is 3d"
            ),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("hint: wait until ")
            && refused
                .stderr
                .contains(", when 1.3.0 is old enough, or require an older version"),
        "{}",
        refused.stderr
    );
    assert_eq!(world.files(), before, "a refusal changes nothing");
    let json = world.user(&["add", "pdf-processing@^1.3", "--json"]);
    assert_eq!(json.code, 1, "{json:?}");
    let unmet = &json.json()["error"]["unmet"];
    assert_eq!(unmet["kind"], "passed-over", "{unmet}");
    assert_eq!(unmet["passed_over"][0]["version"], "1.3.0");
    assert_eq!(unmet["passed_over"][0]["reason"], "too-young");
    assert_eq!(unmet["passed_over"][0]["minimum_release_age"], "3d");
    assert_eq!(world.files(), before, "a refusal changes nothing");

    // Locked before the policy, the young version stays: the lock chose it.
    world.manifest(&manifest.replace("[policy]\nminimum-release-age = \"3d\"\n\n", ""));
    let locked = world.user(&["add", "pdf-processing@^1.3"]);
    assert_eq!(locked.code, 0, "{locked:?}");
    assert!(
        world.lock().contains("version = \"1.3.0\""),
        "{}",
        world.lock()
    );
    let with_policy = fs_err::read_to_string(world.project().join("skills.toml"))
        .unwrap()
        .replace(
            "[skills]",
            "[policy]\nminimum-release-age = \"3d\"\n\n[skills]",
        );
    world.manifest(&with_policy);
    let before = world.files();
    for args in [&["install"][..], &["update"]] {
        let kept = world.user(args);
        assert_eq!(kept.code, 0, "{args:?}: {kept:?}");
        assert_eq!(world.files(), before, "{args:?} keeps the locked 1.3.0");
    }
}

#[test]
fn no_downgrade_refuses_an_update_that_lost_the_provenance_of_the_locked_version() {
    let world = World::new(&[]);
    world.publish_with_provenance("pdf", "1.0.0");
    world.manifest(&format!(
        "[registry]\nurl = \"{}\"\n\n[install]\ntargets = [\"claude\"]\n\n[policy]\ntrust = \"no-downgrade\"\n\n[skills]\n",
        world.registry.url()
    ));
    let added = world.user(&["add", "pdf"]);
    assert_eq!(added.code, 0, "{added:?}");
    assert!(
        world.lock().contains("version = \"1.0.0\"")
            && world.lock().contains("provenance = true\n"),
        "the lock records the provenance: {}",
        world.lock()
    );

    world.registry.publish(&Skill::new("pdf", "1.1.0"));
    let before = world.files();
    let refused = world.user(&["update"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains(
            "error: pdf 1.1.0 has no provenance that verifies, but the locked pdf 1.0.0 had provenance; the policy's trust = \"no-downgrade\" refuses the change"
        ),
        "{}",
        refused.stderr
    );
    assert!(
        refused
            .stderr
            .contains("hint: keep 1.0.0 (`skillpkg add pdf@=1.0.0`)"),
        "{}",
        refused.stderr
    );
    assert_eq!(world.files(), before, "a refusal changes nothing");
    let json = world.user(&["update", "--json"]);
    assert_eq!(json.code, 1, "{json:?}");
    let unmet = &json.json()["error"]["unmet"];
    assert_eq!(unmet["kind"], "downgrade", "{unmet}");
    assert_eq!(unmet["lost"], "provenance", "{unmet}");

    // A version that has provenance again is taken.
    world.publish_with_provenance("pdf", "1.2.0");
    let updated = world.user(&["update"]);
    assert_eq!(updated.code, 0, "{updated:?}");
    assert!(
        world.lock().contains("version = \"1.2.0\"")
            && world.lock().contains("provenance = true\n"),
        "{}",
        world.lock()
    );
}

#[test]
fn require_provenance_and_allowed_signers_pass_over_versions_and_name_why() {
    let world = World::new(&[]);
    world.publish_with_provenance("pdf", "1.0.0");
    world.registry.publish(&Skill::new("pdf", "1.1.0"));
    let url = world.registry.url();
    world.manifest(&format!(
        "[registry]\nurl = \"{url}\"\n\n[install]\ntargets = [\"claude\"]\n\n[policy]\nrequire-provenance = true\n\n[skills]\n"
    ));
    let added = world.user(&["add", "pdf"]);
    assert_eq!(added.code, 0, "{added:?}");
    assert!(
        world.lock().contains("version = \"1.0.0\"")
            && world.lock().contains("provenance = true\n"),
        "1.1.0 has no provenance: {}",
        world.lock()
    );

    let before = world.files();
    let refused = world.user(&["add", "pdf@^1.1"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains(
            "pdf 1.1.0 has no provenance; the policy's require-provenance passes over versions without it"
        ),
        "{}",
        refused.stderr
    );
    assert_eq!(world.files(), before, "a refusal changes nothing");

    // A registry that allows only another key's signatures.
    fs_err::remove_file(world.project().join("skills.lock")).unwrap();
    let stranger = skillpkg_index::signing::SignerKey::of(
        &skillpkg_index::signing::SecretKey::generate()
            .unwrap()
            .public(),
    );
    world.manifest(&format!(
        "[registry]\nurl = \"corp\"\n\n[registries.corp]\nindex = \"{url}\"\nallowed-signers = [\"{stranger}\"]\n\n[install]\ntargets = [\"claude\"]\n\n[skills]\n"
    ));
    let before = world.files();
    let refused = world.user(&["add", "pdf"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    let said = &refused.stderr;
    assert!(
        said.contains(
            "error: no version of `pdf` in registry `corp` that matches `*` meets the policy of skills.toml: pdf 1.1.0 is signed by key "
        ) && said.contains(&format!(", which `allowed-signers` of registry `corp` does not list ({stranger})\n")),
        "{said}"
    );
    assert_eq!(world.files(), before, "a refusal changes nothing");

    // A key id is no signer: anyone can give their key any id.
    world.manifest(&format!(
        "[registry]\nurl = \"corp\"\n\n[registries.corp]\nindex = \"{url}\"\nallowed-signers = [\"0000000000000001\"]\n\n[install]\ntargets = [\"claude\"]\n\n[skills]\n"
    ));
    let before = world.files();
    let refused = world.user(&["add", "pdf"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("has an `allowed-signers` entry that is not a signer's key: `0000000000000001` is a key id")
            && refused.stderr.contains("hint: a key id is 8 bytes its maker chooses"),
        "{}",
        refused.stderr
    );
    assert_eq!(world.files(), before, "a refusal changes nothing");
}

#[test]
fn a_confusable_new_name_is_refused_at_publish_and_add_warns_of_a_popular_neighbour() {
    let mut world = World::new(&["--confusable-min-downloads", "3"]);
    let url = world.registry.url().to_owned();
    world
        .registry
        .publish(&Skill::new("pdf-processing", "1.0.0"));
    let mallory_token = create_token(world.registry.data(), "mallory");
    let mallory = |name: &str| {
        let dir = world.sandbox.path().join("mallory").join(name);
        Skill::new(name, "1.0.0").write(&dir);
        run(world
            .sandbox
            .skillpkg_command()
            .arg("publish")
            .arg(&dir)
            .args(["--no-sign", "--registry", &url, "--token", &mallory_token])
            .env(
                "SKILLPKG_CONFIG_DIR",
                world.sandbox.path().join("mallory-config"),
            ))
    };

    // Looks alike: refused whatever the downloads.
    let refused = mallory("pdfprocessing");
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("`pdfprocessing` looks like `pdf-processing`"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("Choose another name"),
        "{}",
        refused.stderr
    );
    // One edit from a name with no downloads yet: allowed.
    let typo = mallory("pdf-procesing");
    assert_eq!(typo.code, 0, "{typo:?}");

    // Three downloads of the archive; a HEAD and the signature do not count.
    let http = reqwest::blocking::Client::new();
    let archive = format!("{url}/dl/pdf-processing/1.0.0/pdf-processing-1.0.0.tgz");
    for _ in 0..3 {
        assert!(http.get(&archive).send().unwrap().status().is_success());
    }
    assert!(http.head(&archive).send().unwrap().status().is_success());
    assert!(
        http.get(format!("{archive}.minisig"))
            .send()
            .unwrap()
            .status()
            .is_success()
    );

    // Now one edit from a popular skill: refused, with the code scripts read.
    let refused = mallory("pdf-processin");
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains(
            "`pdf-processin` is one edit from `pdf-processing`, a skill downloaded 3 times from this registry"
        ),
        "{}",
        refused.stderr
    );
    let packed = world.sandbox.path().join("pdf-processin.tgz");
    let pack = run(world
        .sandbox
        .skillpkg_command()
        .arg("pack")
        .arg(world.sandbox.path().join("mallory/pdf-processin"))
        .arg("-o")
        .arg(&packed));
    assert_eq!(pack.code, 0, "{pack:?}");
    let form = reqwest::blocking::multipart::Form::new()
        .text("name", "pdf-processin")
        .text("version", "1.0.0")
        .part(
            "tarball",
            reqwest::blocking::multipart::Part::bytes(fs_err::read(&packed).unwrap())
                .file_name("pdf-processin-1.0.0.tgz"),
        );
    let answer = http
        .put(format!("{url}/api/v1/skills"))
        .bearer_auth(&mallory_token)
        .multipart(form)
        .send()
        .unwrap();
    assert_eq!(answer.status().as_u16(), 409);
    let body: serde_json::Value = answer.json().unwrap();
    assert_eq!(body["code"], "conflict", "{body}");
    assert_eq!(body["errors"][0]["code"], "confusable-name", "{body}");

    // Its owner may publish a name one edit from it; the publish writes the
    // counts into the search index.
    world
        .registry
        .publish(&Skill::new("pdf-processings", "1.0.0"));
    let public = world.registry.public();
    let search =
        skillpkg_tests::search_entries(|path| fs_err::read_to_string(public.join(path)).unwrap());
    let downloads = |name: &str| {
        search
            .iter()
            .find(|entry| entry["name"] == name)
            .map(|entry| entry["downloads"].clone())
    };
    assert_eq!(downloads("pdf-processing"), Some(3.into()));
    // No downloads: no key, as in trees written before counting.
    assert_eq!(downloads("pdf-procesing"), Some(serde_json::Value::Null));
    // The counts are kept in the database: a server started again on the
    // folder has them.
    world.registry.server_mut().kill();
    let restarted = skillpkg_tests::RegistryServer::start(
        world.registry.data(),
        &["--confusable-min-downloads", "3"],
    );
    world.registry.replace_server(restarted);
    let url = world.registry.url().to_owned();
    world.registry.publish(&Skill::new("csv-tools", "1.0.0"));
    let public = world.registry.public();
    let search =
        skillpkg_tests::search_entries(|path| fs_err::read_to_string(public.join(path)).unwrap());
    assert!(
        search
            .iter()
            .any(|entry| entry["name"] == "pdf-processing" && entry["downloads"] == 3),
        "{search:?}"
    );

    // Adding the typo of a popular name warns, in text and in JSON.
    world.manifest(&format!(
        "[registry]\nurl = \"{url}\"\n\n[install]\ntargets = [\"claude\"]\n\n[skills]\n"
    ));
    let warning = "`pdf-procesing` is one edit from `pdf-processing`, which has 3 downloads to its 0: check that `pdf-procesing` is the skill you meant";
    let added = world.user(&["add", "pdf-procesing", "--allow-unsigned"]);
    assert_eq!(added.code, 0, "{added:?}");
    assert!(
        added.stderr.contains(&format!("warning: {warning}")),
        "{}",
        added.stderr
    );
    fs_err::remove_file(world.project().join("skills.lock")).unwrap();
    world.manifest(&format!(
        "[registry]\nurl = \"{url}\"\n\n[install]\ntargets = [\"claude\"]\n\n[skills]\n"
    ));
    let json = world.user(&["add", "pdf-procesing", "--allow-unsigned", "--json"]);
    assert_eq!(json.code, 0, "{json:?}");
    assert_eq!(json.json()["warnings"][0], warning, "{}", json.stdout);
    // The popular skill itself is added without a word.
    let popular = world.user(&["add", "pdf-processing"]);
    assert_eq!(popular.code, 0, "{popular:?}");
    assert!(!popular.stderr.contains("warning"), "{}", popular.stderr);
}
