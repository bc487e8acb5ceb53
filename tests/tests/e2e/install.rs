//! Installing end to end: the real client against the real server (and
//! nginx, and a misbehaving server for faults), into real agent folders.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use skillpkg_tests::{
    FaultyServer, Nginx, Output, Skill, TestContext, TestRegistry, is_executable, run,
};

/// A registry with signed skills (the server requires signatures), and a
/// project folder.
struct World {
    registry: TestRegistry,
    sandbox: TestContext,
}

impl World {
    fn new() -> Self {
        let sandbox = TestContext::new();
        let registry = TestRegistry::builder(&sandbox)
            .flags(&["--require-signatures"])
            .start();
        fs_err::create_dir_all(sandbox.path().join("project")).unwrap();
        Self { registry, sandbox }
    }

    fn project(&self) -> PathBuf {
        self.sandbox.path().join("project")
    }

    /// Runs skillpkg as the publisher.
    fn publisher(&self, args: &[&str]) -> Output {
        self.registry.publisher(args)
    }

    /// Runs skillpkg in the project, as its user.
    fn user(&self, args: &[&str]) -> Output {
        self.sandbox
            .user_in(&self.project(), &self.sandbox.path().join("cache"), args)
    }

    /// Publishes `name@version` (signed) depending on `deps`, with an
    /// executable script.
    fn publish(&self, name: &str, version: &str, deps: &[&str]) {
        let skill = Skill::new(name, version)
            .depends_on(deps)
            .body(&format!("# {name}\n"))
            .file(
                "scripts/run.sh",
                &format!("#!/bin/sh\necho {name} {version}\n"),
                true,
            );
        self.registry.publish(&skill);
    }

    fn init(&self, registry: &str) {
        let output = self.user(&[
            "init",
            "--target",
            "claude",
            "--target",
            "agents",
            "--registry",
            registry,
        ]);
        assert_eq!(output.code, 0, "{output:?}");
    }

    fn lock(&self) -> String {
        fs_err::read_to_string(self.project().join("skills.lock")).unwrap_or_default()
    }

    /// The installed skills of a target folder: name -> SKILL.md text.
    fn installed(&self, target: &str) -> BTreeMap<String, String> {
        let dir = self.project().join(target);
        let Ok(entries) = fs_err::read_dir(&dir) else {
            return BTreeMap::new();
        };
        entries
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.is_dir())
            .map(|path| {
                (
                    path.file_name().unwrap().to_string_lossy().into_owned(),
                    fs_err::read_to_string(path.join("SKILL.md")).unwrap(),
                )
            })
            .collect()
    }

    /// Everything a failed command must leave as it was.
    fn state(
        &self,
    ) -> (
        String,
        BTreeMap<String, String>,
        BTreeMap<String, String>,
        String,
    ) {
        (
            self.lock(),
            self.installed(".claude/skills"),
            self.installed(".agents/skills"),
            fs_err::read_to_string(self.project().join("skills.toml")).unwrap_or_default(),
        )
    }
}

#[test]
fn add_installs_into_two_targets_locks_and_remove_undoes_it() {
    let world = World::new();
    world.publish("pdf", "1.0.0", &[]);
    world.init(world.registry.url());
    let added = world.user(&["add", "pdf"]);
    assert_eq!(added.code, 0, "{added:?}");
    for target in [".claude/skills", ".agents/skills"] {
        assert_eq!(
            world.installed(target).keys().collect::<Vec<_>>(),
            ["pdf"],
            "{target}"
        );
        assert!(
            is_executable(&world.project().join(target).join("pdf/scripts/run.sh")),
            "exec bits are kept"
        );
    }
    let manifest = fs_err::read_to_string(world.project().join("skills.toml")).unwrap();
    assert!(manifest.contains("pdf = \"^1.0.0\""), "{manifest}");
    // What it writes is said once it is known, not `*` before.
    let said = &added.stderr;
    assert!(said.contains("Adding pdf\n"), "{said}");
    assert!(said.contains("Added pdf ^1.0.0 to skills.toml\n"), "{said}");
    let lock = world.lock();
    assert!(
        lock.contains("name = \"pdf\"\nversion = \"1.0.0\"\nsource = \"registry:default\""),
        "{lock}"
    );
    assert!(
        lock.contains("signer = \""),
        "the signer is pinned:\n{lock}"
    );
    assert!(!lock.contains(world.registry.url()), "no URL in the lock");
    assert!(
        !world.project().join(".codex").exists() && !world.project().join(".github").exists(),
        "no folder for targets not chosen"
    );
    let verified = world.user(&["verify"]);
    assert_eq!(verified.code, 0, "{verified:?}");
    insta::assert_snapshot!(world.sandbox.redact(&verified.stdout), @"2 verified, 0 changed");

    // A folder skillpkg did not install is never touched.
    world
        .sandbox
        .write("project/.claude/skills/mine/SKILL.md", "my own");
    let removed = world.user(&["remove", "pdf"]);
    assert_eq!(removed.code, 0, "{removed:?}");
    assert_eq!(
        world.installed(".claude/skills").keys().collect::<Vec<_>>(),
        ["mine"]
    );
    assert!(world.installed(".agents/skills").is_empty());
}

#[test]
fn locked_installs_pass_or_fail_loudly_and_offline_uses_the_cache() {
    let world = World::new();
    world.publish("pdf", "1.0.0", &[]);
    world.publish("csv", "1.0.0", &[]);
    world.init(world.registry.url());
    assert_eq!(world.user(&["add", "pdf"]).code, 0);
    // Another checkout: only the manifest and the lock.
    for target in [".claude", ".agents"] {
        fs_err::remove_dir_all(world.project().join(target)).unwrap();
    }
    let locked = world.user(&["install", "--locked"]);
    assert_eq!(locked.code, 0, "{locked:?}");
    assert_eq!(world.installed(".claude/skills").len(), 1);

    let manifest = world.project().join("skills.toml");
    let text = fs_err::read_to_string(&manifest).unwrap();
    fs_err::write(&manifest, format!("{text}csv = \"^1\"\n")).unwrap();
    let before = world.state();
    let refused = world.user(&["install", "--locked"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    insta::assert_snapshot!(world.sandbox.redact(&refused.stderr), @"
    error: skills.lock does not match skills.toml, and --locked forbids changing it
    hint: run `skillpkg install` without --locked, and commit the new skills.lock
    ");
    assert_eq!(world.state(), before, "nothing changed");
    fs_err::write(&manifest, text).unwrap();

    // Offline, from the cache, with the server gone.
    for target in [".claude", ".agents"] {
        fs_err::remove_dir_all(world.project().join(target)).unwrap();
    }
    let World {
        sandbox,
        mut registry,
    } = world;
    registry.server_mut().kill();
    let project = sandbox.path().join("project");
    let offline = run(sandbox
        .skillpkg_command()
        .current_dir(&project)
        .args(["install", "--frozen"])
        .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("user"))
        .env("SKILLPKG_CACHE_DIR", sandbox.path().join("cache")));
    assert_eq!(offline.code, 0, "{offline:?}");
    assert!(project.join(".agents/skills/pdf/SKILL.md").is_file());
}

#[test]
fn a_chain_of_three_dependencies_installs_whole() {
    let world = World::new();
    world.publish("base", "1.2.0", &[]);
    world.publish("middle", "2.0.0", &["base@^1.1"]);
    world.publish("top", "0.4.0", &["middle@2"]);
    world.init(world.registry.url());
    let added = world.user(&["add", "top"]);
    assert_eq!(added.code, 0, "{added:?}");
    assert_eq!(
        world.installed(".claude/skills").keys().collect::<Vec<_>>(),
        ["base", "middle", "top"]
    );
    let lock = world.lock();
    assert!(lock.contains("name = \"middle\""), "{lock}");
    assert!(lock.contains("dependencies = [\"middle\"]"), "{lock}");
    let tree = world.user(&["tree"]);
    assert_eq!(
        tree.stdout, "top 0.4.0\n└── middle 2.0.0\n    └── base 1.2.0\n",
        "{tree:?}"
    );

    // A newer base within ^1.1, and a new major of top that ^0.4 excludes.
    world.publish("base", "1.3.0", &[]);
    world.publish("top", "1.0.0", &["middle@2"]);
    let outdated = world.user(&["outdated", "--json"]);
    assert_eq!(outdated.code, 0, "{outdated:?}");
    let rows = outdated.json();
    let row = |name: &str| {
        rows.as_array()
            .unwrap()
            .iter()
            .find(|row| row["name"] == name)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(row("base")["latest"], "1.3.0");
    assert_eq!(row("top")["current"], "0.4.0");
    assert_eq!(row("top")["wanted"], "0.4.0", "^0.4.0 does not allow 1.0.0");
    assert_eq!(row("top")["latest"], "1.0.0");
    let updated = world.user(&["update", "base"]);
    assert_eq!(updated.code, 0, "{updated:?}");
    assert!(
        world
            .lock()
            .contains("name = \"base\"\nversion = \"1.3.0\""),
        "{}",
        world.lock()
    );
    assert!(
        world.lock().contains("name = \"top\"\nversion = \"0.4.0\""),
        "only what was named is updated"
    );
}

#[test]
fn a_version_conflict_is_explained_and_changes_nothing() {
    let world = World::new();
    world.publish("shared", "1.0.0", &[]);
    world.publish("shared", "2.0.0", &[]);
    world.publish("old-user", "1.0.0", &["shared@^1"]);
    world.publish("new-user", "1.0.0", &["shared@^2"]);
    world.init(world.registry.url());
    assert_eq!(world.user(&["add", "old-user"]).code, 0);
    let before = world.state();
    let conflict = world.user(&["add", "new-user"]);
    assert_eq!(conflict.code, 1, "{conflict:?}");
    insta::assert_snapshot!(world.sandbox.redact(&conflict.stderr), @"
          Adding new-user
    error: no set of skill versions satisfies every requirement:
    Because new-user 1.0.0 depends on shared 2.0.0 and old-user 1.0.0 depends on shared 1.0.0, old-user 1.0.0, new-user 1.0.0 are incompatible.
    And because your skills.toml depends on old-user 1.0.0 and your skills.toml depends on new-user 1.0.0, your skills.toml is forbidden.
    ");
    let (lock, claude, agents, _) = world.state();
    assert_eq!(
        (lock, claude, agents),
        (before.0, before.1, before.2),
        "installed state and lock unchanged"
    );
}

#[test]
fn yanked_versions_are_not_chosen_anew_but_locked_ones_still_install() {
    let world = World::new();
    world.publish("pdf", "1.0.0", &[]);
    world.publish("pdf", "1.1.0", &[]);
    world.init(world.registry.url());
    assert_eq!(world.user(&["add", "pdf@^1"]).code, 0);
    assert!(world.lock().contains("version = \"1.1.0\""));
    let yank = world.publisher(&[
        "yank",
        "pdf@1.1.0",
        "--reason",
        "broken",
        "--registry",
        world.registry.url(),
        "--token",
        world.registry.token(),
    ]);
    assert_eq!(yank.code, 0, "{yank:?}");
    // The locked (now yanked) version keeps installing.
    fs_err::remove_dir_all(world.project().join(".claude")).unwrap();
    let locked = world.user(&["install", "--locked"]);
    assert_eq!(locked.code, 0, "{locked:?}");
    assert!(world.installed(".claude/skills")["pdf"].contains("1.1.0"));
    // A fresh resolution does not pick it.
    let updated = world.user(&["update"]);
    assert_eq!(updated.code, 0, "{updated:?}");
    assert!(
        world.lock().contains("version = \"1.0.0\""),
        "{}",
        world.lock()
    );
}

#[test]
fn a_new_signer_is_refused_unless_allowed() {
    let world = World::new();
    world.publish("pdf", "1.0.0", &[]);
    world.init(world.registry.url());
    assert_eq!(world.user(&["add", "pdf"]).code, 0);
    // The publisher rotates to a new key, registered by the registry's admin.
    let old = world.publisher(&["key", "show", "--json"]).json()["signer"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        world.lock().contains(&format!("signer = \"{old}\"")),
        "{}",
        world.lock()
    );
    assert_eq!(
        world
            .publisher(&["key", "generate", "--no-password", "--force"])
            .code,
        0
    );
    let new = world.publisher(&["key", "show", "--json"]).json()["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let new_id = world.publisher(&["key", "show", "--json"]).json()["key_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let new_signer = world.publisher(&["key", "show", "--json"]).json()["signer"]
        .as_str()
        .unwrap()
        .to_owned();
    let added = run(world
        .sandbox
        .registry()
        .args(["key", "add", "--skill", "pdf", "--key", &new, "--root"])
        .arg(world.registry.data()));
    assert_eq!(added.code, 0, "{added:?}");
    world.publish("pdf", "1.1.0", &[]);

    let before = world.state();
    let refused = world.user(&["update"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    let said = world
        .sandbox
        .redact(&refused.stderr)
        .replace(&old, "[OLD]")
        .replace(&new_signer, "[NEW]")
        .replace(&new_id, "[NEW ID]");
    insta::assert_snapshot!(said, @"
    error: the signer of `pdf` changed: skills.lock pins [OLD], but pdf@1.1.0 is signed by [NEW] (key id [NEW ID])
    hint: if the publisher rotated keys, confirm it with them, then pass --allow-signer-change
    ");
    assert_eq!(world.state(), before);
    let allowed = world.user(&["update", "--allow-signer-change"]);
    assert_eq!(allowed.code, 0, "{allowed:?}");
    assert!(world.lock().contains(&format!("signer = \"{new_signer}\"")));
}

#[test]
fn installs_through_nginx_serve_the_same_bytes() {
    let world = World::new();
    world.publish("pdf", "1.0.0", &[]);
    let nginx = Nginx::serve(&world.registry.public());
    world.init(nginx.url());
    let added = world.user(&["add", "pdf"]);
    assert_eq!(added.code, 0, "{added:?}");
    assert_eq!(world.user(&["verify"]).code, 0);
}

/// Faults, each leaving the previous state intact.
#[test]
fn faults_leave_the_installed_state_and_lock_intact() {
    let world = World::new();
    world.publish("pdf", "1.0.0", &[]);
    world.publish("pdf", "1.1.0", &[]);
    let faulty = FaultyServer::serve(&world.registry.public());
    world.init(faulty.url());
    let manifest = world.project().join("skills.toml");
    let text = fs_err::read_to_string(&manifest).unwrap();
    fs_err::write(&manifest, format!("{text}pdf = \"=1.0.0\"\n")).unwrap();

    // 500s, then the server recovers: the retries carry the install through.
    faulty.faults().fail_next = 2;
    let recovered = world.user(&["install"]);
    assert_eq!(recovered.code, 0, "{recovered:?}");
    let before = world.state();
    fs_err::write(&manifest, format!("{text}pdf = \"=1.1.0\"\n")).unwrap();
    // Fails with `code` and changes nothing; returns what it said.
    let refusal = |code: i32| {
        let output = world.user(&["install"]);
        assert_eq!(output.code, code, "{output:?}");
        let (lock, claude, agents, _) = world.state();
        assert_eq!(
            (lock, claude, agents),
            (before.0.clone(), before.1.clone(), before.2.clone()),
            "state intact after: {}",
            output.stderr
        );
        world.sandbox.redact(&output.stderr)
    };

    // A download cut short.
    faulty.faults().truncate_archives = true;
    // A network failure, not the user's: exit 3.
    // Not a snapshot: a body cut short is reported as "cannot reach" with
    // a hint about the network.
    let said = refusal(3);
    assert!(said.contains("cannot download pdf@1.1.0"), "{said}");
    faulty.faults().truncate_archives = false;

    // An archive whose sha256 differs from the index.
    let archive = world.registry.public().join("dl/pdf/1.1.0/pdf-1.1.0.tgz");
    let original = fs_err::read(&archive).unwrap();
    let mut tampered = original.clone();
    let middle = tampered.len() / 2;
    tampered[middle] ^= 0xff;
    fs_err::write(&archive, &tampered).unwrap();
    insta::assert_snapshot!(refusal(1), @"
    error: pdf@1.1.0: the archive from the registry http://127.0.0.1:[PORT]/ is sha256:468b4c73e49904a63cc64688d398b96361c35705b7de97a50573285a3f14804c, but skills.lock says sha256:6785b4155a6bbbb9289b50623150b2432bfdfaf72ce1738faa83c76bfbe160d0: it was changed or cut short
    hint: try again; if it persists, the registry or a proxy serves wrong bytes
    ");
    fs_err::write(&archive, &original).unwrap();

    // An archive past the registry's size limit: the download stops there.
    fs_err::write(&archive, vec![0_u8; 9 * 1024 * 1024]).unwrap();
    insta::assert_snapshot!(refusal(3), @"
    error: cannot download pdf@1.1.0
      Caused by: http://127.0.0.1:[PORT]/dl/pdf/1.1.0/pdf-1.1.0.tgz is larger than the 8388608 bytes the registry allows; the download was stopped
    ");
    fs_err::write(&archive, &original).unwrap();

    // A bad signature.
    let signature = world
        .registry
        .public()
        .join("dl/pdf/1.1.0/pdf-1.1.0.tgz.minisig");
    let good = fs_err::read_to_string(&signature).unwrap();
    fs_err::write(&signature, good.replace("pdf@1.1.0", "pdf@1.1.1")).unwrap();
    insta::assert_snapshot!(refusal(1), @"
    error: pdf@1.1.0 failed verification
      Caused by: the trusted comment was changed after it was signed
    ");
    fs_err::write(&signature, good).unwrap();

    let installed = world.user(&["install"]);
    assert_eq!(installed.code, 0, "{installed:?}");
    assert!(world.installed(".claude/skills")["pdf"].contains("1.1.0"));
}

#[test]
fn a_project_without_a_manifest_says_how_to_start() {
    let sandbox = TestContext::new();
    let output = sandbox.skillpkg(["install"]);
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: no skills.toml in [HOME] or any folder above it
    hint: run `skillpkg init` to start a project
    ");
    let _ = Path::new(".");
}

#[test]
fn a_target_that_cannot_be_written_fails_and_changes_nothing() {
    let world = World::new();
    world.publish("pdf", "1.0.0", &[]);
    world.publish("csv", "1.0.0", &[]);
    world.init(world.registry.url());
    assert_eq!(world.user(&["add", "pdf"]).code, 0);
    let before = world.state();
    // Root ignores permissions, so a read-only folder would not stop it: the
    // agents target is a file instead, which no one can create folders in.
    fs_err::remove_dir_all(world.project().join(".agents")).unwrap();
    fs_err::write(world.project().join(".agents"), "not a folder").unwrap();
    let failed = world.user(&["add", "csv"]);
    assert_ne!(failed.code, 0, "{failed:?}");
    assert_eq!(world.lock(), before.0, "the lock is unchanged");
    assert_eq!(
        world.installed(".claude/skills"),
        before.1,
        "the other target is unchanged"
    );
    let leftovers: Vec<_> = fs_err::read_dir(world.project().join(".claude/skills"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with(".skillpkg-new-") || name.starts_with(".skillpkg-old-"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "temporary folders are removed: {leftovers:?}"
    );
}

#[test]
fn two_installs_at_once_in_one_project_both_finish_consistent() {
    let world = World::new();
    for index in 0..6 {
        world.publish(&format!("skill-{index}"), "1.0.0", &[]);
    }
    world.init(world.registry.url());
    let manifest = world.project().join("skills.toml");
    let mut text = fs_err::read_to_string(&manifest).unwrap();
    for index in 0..6 {
        text.push_str(&format!("skill-{index} = \"1\"\n"));
    }
    fs_err::write(&manifest, text).unwrap();
    let outputs: Vec<Output> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| world.user(&["install"])))
            .collect();
        handles
            .into_iter()
            .map(|handle| handle.join().unwrap())
            .collect()
    });
    for output in &outputs {
        assert_eq!(output.code, 0, "{output:?}");
    }
    let verified = world.user(&["verify"]);
    assert_eq!(verified.code, 0, "{verified:?}");
    insta::assert_snapshot!(world.sandbox.redact(&verified.stdout), @"12 verified, 0 changed");
}

#[test]
fn a_vendor_folder_installs_with_the_server_gone_and_an_empty_cache() {
    let world = World::new();
    world.publish("base", "1.0.0", &[]);
    world.publish("top", "1.0.0", &["base"]);
    world.init(world.registry.url());
    assert_eq!(world.user(&["add", "top"]).code, 0);
    let vendored = world.user(&["vendor", "vendor"]);
    assert_eq!(vendored.code, 0, "{vendored:?}");
    let vendor = world.project().join("vendor");
    assert!(
        vendor
            .join("dl/base/1.0.0/base-1.0.0.tgz.minisig")
            .is_file()
    );
    assert!(vendor.join("keys/top.json").is_file());
    let refused = world.user(&["vendor", "vendor"]);
    assert_eq!(
        refused.code, 1,
        "an existing folder is never overwritten: {refused:?}"
    );

    let World {
        sandbox,
        mut registry,
    } = world;
    registry.server_mut().kill();
    let project = sandbox.path().join("project");
    for target in [".claude", ".agents"] {
        fs_err::remove_dir_all(project.join(target)).unwrap();
    }
    let lock_before = fs_err::read_to_string(project.join("skills.lock")).unwrap();
    let installed = run(sandbox
        .skillpkg_command()
        .current_dir(&project)
        .args([
            "install",
            "--locked",
            "--registry",
            vendor.to_str().unwrap(),
        ])
        .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("user"))
        .env("SKILLPKG_CACHE_DIR", sandbox.path().join("empty-cache")));
    assert_eq!(installed.code, 0, "{installed:?}");
    assert!(
        project.join(".claude/skills/base/SKILL.md").is_file()
            && project.join(".agents/skills/top/SKILL.md").is_file()
    );
    assert_eq!(
        fs_err::read_to_string(project.join("skills.lock")).unwrap(),
        lock_before,
        "the lock is the same from the vendor folder"
    );
}

#[test]
fn verify_reports_a_script_that_lost_its_executable_bit_and_install_puts_it_back() {
    let world = World::new();
    world.publish("pdf", "1.0.0", &[]);
    world.init(world.registry.url());
    assert_eq!(world.user(&["add", "pdf"]).code, 0);
    let lock = world.lock();
    assert!(lock.contains("tree = \"h2:"), "{lock}");
    let script = world.project().join(".claude/skills/pdf/scripts/run.sh");
    fs_err::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();

    let verified = world.user(&["verify"]);
    assert_eq!(verified.code, 1, "{verified:?}");
    assert!(
        verified
            .stdout
            .contains("pdf in claude: the files differ from skills.lock"),
        "{}",
        verified.stdout
    );
    assert!(
        verified.stdout.contains("1 verified, 1 changed"),
        "{}",
        verified.stdout
    );
    let restored = world.user(&["install"]);
    assert_eq!(restored.code, 0, "{restored:?}");
    assert!(
        is_executable(&script),
        "install restores the executable bit"
    );
    assert_eq!(world.user(&["verify"]).code, 0);
}

#[test]
fn verify_fails_when_a_locked_skill_is_not_installed_and_install_brings_it() {
    let world = World::new();
    world.publish("pdf", "1.0.0", &[]);
    world.init(world.registry.url());
    assert_eq!(world.user(&["add", "pdf"]).code, 0);
    // As on a fresh clone: the lock and the manifest, no target folder.
    fs_err::remove_dir_all(world.project().join(".claude/skills")).unwrap();

    let verified = world.user(&["verify"]);
    assert_eq!(verified.code, 1, "{verified:?}");
    assert!(
        verified
            .stdout
            .contains("pdf in claude: missing (skills.lock has it, the folder does not)"),
        "{}",
        verified.stdout
    );
    assert!(
        verified.stdout.contains(" verified, 0 changed, 1 missing"),
        "{}",
        verified.stdout
    );
    assert!(
        verified
            .stderr
            .contains("1 locked skill(s) are not installed")
            && verified.stderr.contains("run `skillpkg install`"),
        "{}",
        verified.stderr
    );
    let json = world.user(&["verify", "--json"]);
    assert_eq!(json.code, 1, "{json:?}");
    let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        report["missing"],
        serde_json::json!([{"target": "claude", "name": "pdf"}])
    );

    assert_eq!(world.user(&["install"]).code, 0);
    let again = world.user(&["verify"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert!(
        again.stdout.contains(" verified, 0 changed") && !again.stdout.contains("missing"),
        "{}",
        again.stdout
    );
}

#[test]
fn a_lock_and_an_index_line_with_an_h1_tree_hash_still_install_and_verify() {
    use skillpkg_index::archive::{Limits, pack_dir, tree_hash_h1};
    let sandbox = TestContext::new();
    let mut registry = skillpkg_tests::static_registry::Registry::new(&sandbox);
    // A version published before h2: its index line has the h1 hash.
    let source = sandbox.path().join("source/legacy");
    Skill::new("legacy", "1.0.0")
        .file("scripts/run.sh", "#!/bin/sh\necho legacy\n", true)
        .write(&source);
    let packed = pack_dir(
        &source,
        "legacy".parse().unwrap(),
        "1.0.0".parse().unwrap(),
        &Limits::default(),
    )
    .unwrap();
    let h1 = tree_hash_h1(&packed.files).to_string();
    registry.publish_tarball("legacy", "1.0.0", &packed.tarball, &h1, packed.files.len());
    let project = sandbox.path().join("project");
    fs_err::create_dir_all(&project).unwrap();
    fs_err::write(
        project.join("skills.toml"),
        format!(
            "[registry]\nurl = \"{}\"\n\n[install]\ntargets = [\"claude\"]\n\n[skills]\nlegacy = {{ version = \"1\", allow-unsigned = true }}\n",
            registry.url()
        ),
    )
    .unwrap();
    let skillpkg = |args: &[&str]| {
        run(sandbox
            .skillpkg_command()
            .current_dir(&project)
            .args(args)
            .env("SKILLPKG_CACHE_DIR", sandbox.path().join("cache")))
    };
    let installed = skillpkg(&["install"]);
    assert_eq!(installed.code, 0, "{installed:?}");
    let lock = fs_err::read_to_string(project.join("skills.lock")).unwrap();
    assert!(
        lock.contains(&format!("tree = \"{h1}\"")),
        "the lock keeps the registry's h1: {lock}"
    );
    assert_eq!(skillpkg(&["verify"]).code, 0);
    fs_err::remove_dir_all(project.join(".claude")).unwrap();
    let locked = skillpkg(&["install", "--locked"]);
    assert_eq!(locked.code, 0, "{locked:?}");
    assert!(locked.stdout.contains("1 installed"), "{}", locked.stdout);
    // h1 sees contents, not modes.
    fs_err::write(project.join(".claude/skills/legacy/SKILL.md"), "edited").unwrap();
    assert_eq!(skillpkg(&["verify"]).code, 1);
    assert_eq!(skillpkg(&["install"]).code, 0);
    assert_eq!(skillpkg(&["verify"]).code, 0);
}

#[test]
fn init_picks_the_folders_the_named_agents_read_and_copilot_has_a_user_folder() {
    let world = World::new();
    world.publish("pdf", "1.0.0", &[]);
    let init = world.user(&[
        "init",
        "--agent",
        "claude-code,codex,copilot",
        "--registry",
        world.registry.url(),
    ]);
    assert_eq!(init.code, 0, "{init:?}");
    let manifest = fs_err::read_to_string(world.project().join("skills.toml")).unwrap();
    assert!(
        manifest.contains("targets = [\"claude\", \"agents\"]"),
        "{manifest}"
    );
    assert!(
        init.stderr
            .contains("Target claude: .claude/skills (read by claude-code and copilot)"),
        "{}",
        init.stderr
    );
    assert!(
        init.stderr
            .contains("Target agents: .agents/skills (read by codex and copilot)"),
        "{}",
        init.stderr
    );
    let both = world.user(&["init", "--agent", "codex", "--target", "claude"]);
    assert_eq!(
        both.code, 2,
        "--agent and --target are one choice: {both:?}"
    );

    let elsewhere = world.sandbox.path().join("json-project");
    fs_err::create_dir_all(&elsewhere).unwrap();
    let json = world.sandbox.user_in(
        &elsewhere,
        &world.sandbox.path().join("cache"),
        &["init", "--agent", "copilot", "--json"],
    );
    assert_eq!(json.code, 0, "{json:?}");
    let document: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(
        document["targets"],
        serde_json::json!([{
            "target": "copilot",
            "folder": ".github/skills",
            "agents": ["copilot"],
            "why": ".github/skills (read by copilot)",
        }])
    );

    // On a terminal, init asks which agents; Copilot reads .agents/skills
    // too, so one folder serves both.
    let asked = world.sandbox.path().join("asked-project");
    fs_err::create_dir_all(&asked).unwrap();
    let unset = world.sandbox.path().join("unset");
    let (success, transcript) = skillpkg_tests::on_terminal(
        &skillpkg_tests::binary("skillpkg"),
        &["init"],
        &asked,
        &[
            ("HOME", world.sandbox.path()),
            ("XDG_CONFIG_HOME", &unset),
            ("CLAUDE_CONFIG_DIR", &unset),
            ("CODEX_HOME", &unset),
            ("COPILOT_HOME", &unset),
        ],
        "Which agent tools does this project use?",
        "2 copilot",
    );
    assert!(success, "{transcript}");
    assert!(transcript.contains("2) codex (Codex)"), "{transcript}");
    let manifest = fs_err::read_to_string(asked.join("skills.toml")).unwrap();
    assert!(manifest.contains("targets = [\"agents\"]"), "{manifest}");

    // Copilot's user folder, for --global.
    let added = world.user(&[
        "add",
        "pdf",
        "--global",
        "--target",
        "copilot",
        "--registry",
        world.registry.url(),
    ]);
    assert_eq!(added.code, 0, "{added:?}");
    assert!(
        world
            .sandbox
            .path()
            .join(".copilot/skills/pdf/SKILL.md")
            .is_file(),
        "{added:?}"
    );
}

#[test]
fn verbose_logs_each_request_and_decision_and_the_log_filter_chooses_what() {
    let world = World::new();
    world.publish("pdf", "1.0.0", &[]);
    world.init(world.registry.url());
    let quiet = world.user(&["add", "pdf"]);
    assert_eq!(quiet.code, 0, "{quiet:?}");
    assert!(
        !quiet.stderr.contains(" INFO "),
        "no log without -v: {}",
        quiet.stderr
    );

    for target in [".claude", ".agents"] {
        fs_err::remove_dir_all(world.project().join(target)).unwrap();
    }
    let fresh_cache = world.sandbox.path().join("fresh-cache");
    let verbose = world
        .sandbox
        .user_in(&world.project(), &fresh_cache, &["-v", "install"]);
    assert_eq!(verbose.code, 0, "{verbose:?}");
    let log = &verbose.stderr;
    assert!(
        log.contains("INFO skills.lock satisfies skills.toml: nothing to resolve"),
        "{log}"
    );
    assert!(
        log.contains("INFO plan target=claude put=1 unchanged=0 remove=0"),
        "{log}"
    );
    assert!(
        log.contains("INFO pdf@1.0.0: not in the cache, downloading"),
        "{log}"
    );
    assert!(
        log.contains(&format!(
            "INFO GET url={}/config.json status=200",
            world.registry.url()
        )),
        "{log}"
    );
    assert!(!log.contains("DEBUG"), "-v is info: {log}");

    let details = world.user(&["-vv", "install", "--force"]);
    assert_eq!(details.code, 0, "{details:?}");
    assert!(
        details
            .stderr
            .contains("DEBUG skillpkg::project::install: put target=claude skill=pdf why=Forced"),
        "{}",
        details.stderr
    );

    // SKILLPKG_LOG chooses instead, in RUST_LOG's syntax, with no -v.
    let filtered = run(world
        .sandbox
        .skillpkg_command()
        .current_dir(world.project())
        .args(["install", "--force"])
        .env("SKILLPKG_CONFIG_DIR", world.sandbox.path().join("user"))
        .env("SKILLPKG_CACHE_DIR", &fresh_cache)
        .env("SKILLPKG_LOG", "skillpkg::client=info"));
    assert_eq!(filtered.code, 0, "{filtered:?}");
    assert!(
        !filtered.stderr.contains("plan target="),
        "{}",
        filtered.stderr
    );
    assert!(
        filtered
            .stderr
            .contains("INFO pdf@1.0.0: from the cache, checked"),
        "{}",
        filtered.stderr
    );
    let bad = world.user(&["-q", "-v", "install"]);
    assert_eq!(bad.code, 2, "-q and -v contradict: {bad:?}");
}
