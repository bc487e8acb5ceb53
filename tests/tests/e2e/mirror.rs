//! Mirrors and signed registry metadata, end to end: a real server with
//! root and index keys, `skillpkg mirror` copying it (through a static
//! server that counts requests), and clients that install through the copy
//! or refuse it when it lies.

use std::path::{Path, PathBuf};
use std::time::Duration;

use skillpkg_tests::{
    FaultyServer, Output, RegistryServer, Skill, TestContext, TestRegistry, run, wait_until,
};

/// A registry with signed metadata (one root key), a publisher, and a user.
struct World {
    registry: TestRegistry,
    sandbox: TestContext,
}

impl World {
    fn new(serve_args: &[&str]) -> Self {
        let sandbox = TestContext::new();
        let registry = TestRegistry::builder(&sandbox)
            .flags(serve_args)
            .signed_metadata()
            .start();
        Self { registry, sandbox }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.sandbox.path().join(relative)
    }

    /// Publishes `name@version`, signed.
    fn publish(&self, name: &str, version: &str) {
        let skill = Skill::new(name, version)
            .description(&format!("Does {name} things. Use when testing."));
        self.registry.publish(&skill);
    }

    /// Runs skillpkg as a user in `project` (created), with its own
    /// cache and state in the sandbox.
    fn user(&self, project: &str, args: &[&str]) -> Output {
        let dir = self.path(project);
        fs_err::create_dir_all(&dir).unwrap();
        self.user_with(project, args, "cache")
    }

    fn user_with(&self, project: &str, args: &[&str], cache: &str) -> Output {
        run(self
            .sandbox
            .skillpkg_command()
            .current_dir(self.path(project))
            .args(args)
            .env("SKILLPKG_CONFIG_DIR", self.path("user"))
            .env("SKILLPKG_CACHE_DIR", self.path(cache))
            .env("SKILLPKG_STATE_DIR", self.path("state"))
            .env("SKILLPKG_TEST_NO_RETRY_DELAY", "1"))
    }

    /// Mirrors `source` into `dest` and returns the run's JSON report.
    fn mirror(&self, source: &str, dest: &Path) -> serde_json::Value {
        let output = run(self
            .sandbox
            .skillpkg_command()
            .args(["mirror", source])
            .arg(dest)
            .args(["--all", "--json"])
            .env("SKILLPKG_CONFIG_DIR", self.path("mirror-config"))
            .env("SKILLPKG_STATE_DIR", self.path("mirror-state")));
        assert_eq!(output.code, 0, "{output:?}");
        output.json()
    }

    /// A project on `registry` that adds `skills`; returns its lock.
    fn install(&self, project: &str, registry: &str, skills: &[&str]) -> String {
        let init = self.user(
            project,
            &["init", "--target", "claude", "--registry", registry],
        );
        assert_eq!(init.code, 0, "{init:?}");
        let mut args = vec!["add"];
        args.extend_from_slice(skills);
        let added = self.user(project, &args);
        assert_eq!(added.code, 0, "{added:?}");
        fs_err::read_to_string(self.path(project).join("skills.lock")).unwrap()
    }

    /// Asserts that `output` failed and that `project` has nothing
    /// installed and no lock; returns what it said, redacted.
    fn refusal(&self, output: &Output, project: &str) -> String {
        assert_eq!(output.code, 3, "{output:?}");
        let project = self.path(project);
        assert!(!project.join("skills.lock").exists(), "no lock written");
        let installed = project.join(".claude/skills");
        assert!(
            fs_err::read_dir(&installed).map_or(true, |mut entries| entries.next().is_none()),
            "nothing installed in {}",
            installed.display()
        );
        self.sandbox.redact(&output.stderr)
    }
}

/// The path of the bin of the snapshot in `tree` that lists `path`: the
/// node named by the first byte of the sha256 of the path, the bin in it
/// by the high half of the second (docs/index-format.md).
fn bin_of(tree: &Path, path: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(path.as_bytes());
    let read = |relative: &str| -> serde_json::Value {
        serde_json::from_slice(&fs_err::read(tree.join(relative)).unwrap()).unwrap()
    };
    let meta = |sum: &serde_json::Value| {
        format!("meta/{}.json", &sum.as_str().unwrap()["sha256:".len()..])
    };
    let snapshot = read("snapshot.json");
    let node = read(&meta(
        &snapshot["signed"]["nodes"][format!("{:02x}", digest[0])],
    ));
    meta(&node["bins"][format!("{:x}", digest[1] >> 4)])
}

/// Copies a folder, for a second (stale or tampered) copy of a mirror.
fn copy_tree(from: &Path, to: &Path) {
    for (relative, bytes) in skillpkg_tests::files_below(from) {
        let path = to.join(relative);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, bytes).unwrap();
    }
}

fn url_of(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

#[test]
fn a_mirror_of_100_skills_installs_the_same_lock_and_updates_incrementally() {
    let world = World::new(&[]);
    let names: Vec<String> = (0..100).map(|index| format!("skill-{index:03}")).collect();
    for name in &names {
        world.publish(name, "1.0.0");
    }
    // The origin's tree, served by a static server that counts requests.
    let origin = FaultyServer::serve(&world.registry.public());
    let mirror = world.path("mirror");
    let first = world.mirror(origin.url(), &mirror);
    assert_eq!(first["skills"], 100);
    assert_eq!(first["downloaded"], 100);
    assert_eq!(first["signed_metadata"], true);
    let first_requests = origin.faults().served.len();
    assert!(first_requests >= 300, "{first_requests}");

    // The same lock from the origin and from the mirror (served by the
    // registry server itself, from a copy of the mirror as its public/).
    let some: Vec<&str> = names.iter().step_by(10).map(String::as_str).collect();
    let from_origin = world.install("origin-project", world.registry.url(), &some);
    let mirror_server_root = world.path("mirror-server");
    copy_tree(&mirror, &mirror_server_root.join("public"));
    let mirror_server = RegistryServer::start(&mirror_server_root, &[]);
    assert_eq!(
        skillpkg_tests::files_below(&mirror_server_root.join("public")),
        skillpkg_tests::files_below(&mirror),
        "the server serves a mirror unchanged"
    );
    let from_mirror = world.install("mirror-project", mirror_server.url(), &some);
    assert_eq!(
        from_origin, from_mirror,
        "the lock does not depend on the mirror"
    );
    assert!(
        from_origin.contains("source = \"registry:default\""),
        "{from_origin}"
    );

    // Five new publishes: the second run fetches those and the metadata.
    for index in 0..5 {
        world.publish(&format!("new-{index}"), "1.0.0");
    }
    origin.faults().served.clear();
    let second = world.mirror(origin.url(), &mirror);
    assert_eq!(second["skills"], 105);
    assert_eq!(second["downloaded"], 5);
    let served = origin.faults().served.clone();
    let archives: Vec<&String> = served
        .iter()
        .filter(|path| path.ends_with(".tgz"))
        .collect();
    assert_eq!(archives.len(), 5, "{served:?}");
    assert!(
        archives.iter().all(|path| path.contains("/new-")),
        "{archives:?}"
    );
    let index_files = served
        .iter()
        .filter(|path| path.starts_with("index/"))
        .count();
    assert_eq!(index_files, 5, "only the new index files: {served:?}");
    // The snapshot's nodes and bins: only those on the paths of the
    // files that changed, a node and a bin each at most.
    let signed_files = served
        .iter()
        .filter(|path| skillpkg_index::registry::metadata::in_snapshot(path))
        .count();
    let meta = served
        .iter()
        .filter(|path| path.starts_with("meta/"))
        .count();
    assert!(
        (1..=2 * signed_files).contains(&meta),
        "{meta} nodes and bins for {signed_files} changed files: {served:?}"
    );
    assert!(
        served.len() - meta < 40,
        "{} requests for 5 new skills: {served:?}",
        served.len()
    );
    assert!(
        mirror
            .join("dl/new-4/1.0.0/new-4-1.0.0.tgz.minisig")
            .is_file()
    );
    // A third run with nothing new fetches no archive, no index file and
    // no node or bin.
    origin.faults().served.clear();
    let third = world.mirror(origin.url(), &mirror);
    assert_eq!(third["downloaded"], 0);
    let served = origin.faults().served.clone();
    assert!(
        !served.iter().any(|path| path.starts_with("index/")
            || path.ends_with(".tgz")
            || path.starts_with("meta/")),
        "{served:?}"
    );
}

#[test]
fn with_the_origin_stopped_installs_go_through_the_mirror_vendor_and_cache() {
    let mut world = World::new(&[]);
    world.publish("alpha", "1.0.0");
    world.publish("beta", "2.0.0");
    let mirror = world.path("mirror");
    world.mirror(world.registry.url(), &mirror);
    let lock = world.install("project", world.registry.url(), &["alpha", "beta"]);
    let vendored = world.user("project", &["vendor", "vendor"]);
    assert_eq!(vendored.code, 0, "{vendored:?}");
    world.registry.server_mut().kill();

    let mirror_url = url_of(&mirror);
    for (registry, cache) in [(mirror_url.as_str(), "empty-1"), ("vendor", "empty-2")] {
        fs_err::remove_dir_all(world.path("project/.claude")).unwrap();
        let installed = world.user_with(
            "project",
            &["install", "--locked", "--registry", registry],
            cache,
        );
        assert_eq!(installed.code, 0, "{registry}: {installed:?}");
        assert!(world.path("project/.claude/skills/beta/SKILL.md").is_file());
        assert_eq!(
            fs_err::read_to_string(world.path("project/skills.lock")).unwrap(),
            lock
        );
    }
    // And from the cache alone.
    fs_err::remove_dir_all(world.path("project/.claude")).unwrap();
    let offline = world.user("project", &["install", "--offline"]);
    assert_eq!(offline.code, 0, "{offline:?}");
    assert!(
        world
            .path("project/.claude/skills/alpha/SKILL.md")
            .is_file()
    );
}

#[test]
fn mirrors_that_lie_are_refused_naming_the_registry_and_installing_nothing() {
    let world = World::new(&[]);
    world.publish("alpha", "1.0.0");
    world.publish("beta", "1.0.0");
    let mirror = world.path("mirror");
    world.mirror(world.registry.url(), &mirror);
    // An older copy, then a newer state of the mirror.
    let stale = world.path("stale");
    copy_tree(&mirror, &stale);
    world.publish("alpha", "1.1.0");
    world.mirror(world.registry.url(), &mirror);
    let mirror_url = url_of(&mirror);
    // The user trusts the mirror's current metadata.
    let seen = world.install("seen", &mirror_url, &["beta"]);
    assert!(seen.contains("beta"), "{seen}");

    // A changed index line (the mirror claims another checksum).
    let changed_line = world.path("changed-line");
    copy_tree(&mirror, &changed_line);
    let index = changed_line.join("index/al/ph/alpha");
    let text = fs_err::read_to_string(&index).unwrap();
    fs_err::write(&index, text.replace("\"yanked\":false", "\"yanked\":true")).unwrap();
    let refused = world.install_refused("p1", &changed_line, &["alpha"]);
    insta::assert_snapshot!(world.refusal(&refused, "p1"), @"
          Adding alpha
    error: registry file://[HOME]/changed-line/ cannot be trusted: index/al/ph/alpha differs from the registry's signed snapshot (version 5)
    hint: a file differs from what the registry signed: the mirror or cache changed it, or mixes two versions of the index; nothing was installed. Sync the mirror again or use the origin registry
    ");

    // A changed tarball, with its index line left alone.
    let changed_tarball = world.path("changed-tarball");
    copy_tree(&mirror, &changed_tarball);
    let tarball = changed_tarball.join("dl/alpha/1.1.0/alpha-1.1.0.tgz");
    let mut bytes = fs_err::read(&tarball).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    fs_err::write(&tarball, bytes).unwrap();
    let refused = world.install_refused("p2", &changed_tarball, &["alpha"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    insta::assert_snapshot!(world.sandbox.redact(&refused.stderr), @"
          Adding alpha
    error: alpha@1.1.0: the archive from the registry file://[HOME]/changed-tarball/ is sha256:d4e00ecaaa1d0aa6ba36f29efe2373fb57e52565c31c576285dc6ba53e23c17b, but skills.lock says sha256:06a55da697715b359016e98e9c7dda741c01fe7915c35661dcecc4526f89b545: it was changed or cut short
    hint: try again; if it persists, the registry or a proxy serves wrong bytes
    ");
    assert!(!world.path("p2/.claude/skills/alpha").exists());

    // Mixed snapshots: one index file from the older copy.
    let mixed = world.path("mixed");
    copy_tree(&mirror, &mixed);
    fs_err::copy(
        stale.join("index/al/ph/alpha"),
        mixed.join("index/al/ph/alpha"),
    )
    .unwrap();
    let refused = world.install_refused("p3", &mixed, &["alpha"]);
    insta::assert_snapshot!(world.refusal(&refused, "p3"), @"
          Adding alpha
    error: registry file://[HOME]/mixed/ cannot be trusted: index/al/ph/alpha differs from the registry's signed snapshot (version 5)
    hint: a file differs from what the registry signed: the mirror or cache changed it, or mixes two versions of the index; nothing was installed. Sync the mirror again or use the origin registry
    ");

    // The snapshot's bin that lists alpha's index file, changed or gone:
    // nodes and bins are named by their sha256, which the level above
    // signs.
    for (project, change) in [("p5", "changed"), ("p6", "removed")] {
        let copy = world.path(&format!("{change}-meta"));
        copy_tree(&mirror, &copy);
        let bin = copy.join(bin_of(&copy, "index/al/ph/alpha"));
        if change == "changed" {
            let text = fs_err::read_to_string(&bin).unwrap();
            fs_err::write(
                &bin,
                text.replace("\"files\":{", "\"files\":{\"index/x\":\"sha256:00\","),
            )
            .unwrap();
        } else {
            fs_err::remove_file(&bin).unwrap();
        }
        let refused = world.install_refused(project, &copy, &["alpha"]);
        let said = world.refusal(&refused, project);
        let expected = if change == "changed" {
            "differs from the registry's signed snapshot (version 5)"
        } else {
            "is in the registry's signed snapshot (version 5) but is missing"
        };
        assert!(
            said.contains("meta/") && said.contains(expected),
            "{change}: {said}"
        );
    }

    // Rollback: the older copy, at the mirror's own address, after the
    // user saw the newer one.
    let old_mirror = world.path("old-mirror");
    fs_err::rename(&mirror, &old_mirror).unwrap();
    copy_tree(&stale, &mirror);
    let refused = world.install_refused("p4", &mirror, &["beta"]);
    insta::assert_snapshot!(world.refusal(&refused, "p4"), @"
          Adding beta
    error: registry file://[HOME]/mirror/ cannot be trusted: timestamp.json is a rollback: it has version 4, older than version 5 seen before
    hint: it serves older metadata than skillpkg saw before: a stale mirror or cache, or an attack; nothing was installed. Use the origin registry, or wait until the mirror is synced again
    ");
}

impl World {
    /// Starts a project on the registry at `path` and adds `skills`,
    /// expecting a failure.
    fn install_refused(&self, project: &str, path: &Path, skills: &[&str]) -> Output {
        let init = self.user(
            project,
            &[
                "init",
                "--target",
                "claude",
                "--registry",
                path.to_str().unwrap(),
            ],
        );
        assert_eq!(init.code, 0, "{init:?}");
        let mut args = vec!["add"];
        args.extend_from_slice(skills);
        self.user(project, &args)
    }
}

#[test]
fn a_frozen_mirror_is_refused_once_its_timestamp_expires() {
    let world = World::new(&["--metadata-lifetime", "3s"]);
    world.publish("alpha", "1.0.0");
    let mirror = world.path("mirror");
    world.mirror(world.registry.url(), &mirror);
    // Until the clock passes the copy's timestamp.json, and no longer.
    use skillpkg_index::registry::metadata::{self, TimestampFile};
    let timestamp = fs_err::read(mirror.join("timestamp.json")).unwrap();
    let expires = metadata::parse::<TimestampFile>("timestamp.json", "timestamp", &timestamp)
        .unwrap()
        .signed
        .expires;
    assert!(
        wait_until(Duration::from_secs(10), || {
            std::time::SystemTime::now() > std::time::SystemTime::from(expires)
        }),
        "the 3 s lifetime has not run out after 10 s: expires {expires}"
    );
    let refused = world.install_refused("p", &mirror, &["alpha"]);
    insta::assert_snapshot!(world.refusal(&refused, "p"), @"
          Adding alpha
    error: registry file://[HOME]/mirror/ cannot be trusted: timestamp.json expired at [TIME]: the registry's metadata is frozen or stale
    hint: its metadata is past its expiry: a mirror that stopped syncing (run `skillpkg mirror` again), a registry that stopped re-signing (`skillpkg-registry keys sign`), or a clock far off; nothing was installed
    ");
    // The origin keeps re-signing, so it still installs.
    world.install("fresh", world.registry.url(), &["alpha"]);
}

#[test]
fn key_rotations_keep_clients_working_and_a_weak_root_rotation_is_refused() {
    let world = World::new(&[]);
    world.publish("alpha", "1.0.0");
    let first = world.install("before", world.registry.url(), &["alpha"]);
    assert!(first.contains("alpha"));
    let data = world.path("registry");
    // Two new root keys with threshold 2, signed by the old and both new.
    for name in ["root-b", "root-c"] {
        let generated = run(world
            .sandbox
            .registry()
            .args(["keys", "generate"])
            .arg(world.path(&format!("offline/{name}.key"))));
        assert_eq!(generated.code, 0, "{generated:?}");
    }
    let offline = |name: &str| world.path(&format!("offline/{name}"));
    // A new root of root-b and root-c (threshold 2), signed by `signers`.
    let rotate_root = |signers: &[&str]| {
        let mut command = world.sandbox.registry();
        command.args(["keys", "rotate-root", "--root"]).arg(&data);
        for signer in signers {
            command.arg("--sign-with").arg(offline(signer));
        }
        for new in ["root-b.key.pub", "root-c.key.pub"] {
            command.arg("--new-root-key").arg(offline(new));
        }
        run(command.args(["--threshold", "2"]))
    };
    let too_few = rotate_root(&["root.key", "root-b.key"]);
    assert_eq!(
        too_few.code, 1,
        "the tool refuses a root its clients would: {too_few:?}"
    );
    insta::assert_snapshot!(world.sandbox.redact(&too_few.stderr), @"
    error: the new root would not verify, so nothing was written
      Caused by: 2.root.json is signed by 1 valid root key(s), and the root role needs 2
    ");
    assert!(!data.join("public/2.root.json").exists());
    let rotated = rotate_root(&["root.key", "root-b.key", "root-c.key"]);
    assert_eq!(rotated.code, 0, "{rotated:?}");
    let index_rotated = run(world
        .sandbox
        .registry()
        .args(["keys", "rotate-index", "--root"])
        .arg(&data)
        .arg("--root-key")
        .arg(offline("root-b.key"))
        .arg("--root-key")
        .arg(offline("root-c.key")));
    assert_eq!(index_rotated.code, 0, "{index_rotated:?}");
    // The running server signs with the new index key at once; a client
    // that trusted root 1 walks to root 3 and installs.
    world.publish("beta", "1.0.0");
    let updated = world.user("before", &["add", "beta"]);
    assert_eq!(updated.code, 0, "{updated:?}");

    // A 4.root.json signed by one of the two root keys: a mirror that
    // offers it is refused.
    let mirror = world.path("mirror");
    world.mirror(world.registry.url(), &mirror);
    let forged = forge_root(&mirror, &offline("root-b.key"));
    fs_err::write(mirror.join("4.root.json"), forged).unwrap();
    let refused = world.install_refused("weak", &mirror, &["alpha"]);
    insta::assert_snapshot!(world.refusal(&refused, "weak"), @"
          Adding alpha
    error: registry file://[HOME]/mirror/ cannot be trusted: 4.root.json is signed by 1 valid root key(s), and the root role needs 2
    hint: the registry's keys do not vouch for its metadata; nothing was installed. If its operators really changed the root keys, ask them for the new root key and update `root-key`
    ");
}

/// Writes the next root after the mirror's newest, replacing its index key
/// with a fresh one, signed by the one root key `key_file`.
fn forge_root(mirror: &Path, key_file: &Path) -> Vec<u8> {
    use skillpkg_index::registry::metadata::{self, Root};
    use skillpkg_index::signing::SecretKey;
    let current: serde_json::Value =
        serde_json::from_slice(&fs_err::read(mirror.join("root.json")).unwrap()).unwrap();
    let mut root: Root = serde_json::from_value(current["signed"].clone()).unwrap();
    let attacker = SecretKey::generate().unwrap();
    root.version += 1;
    root.keys
        .insert(attacker.id().to_string(), attacker.public());
    root.roles.index.keyids = vec![attacker.id().to_string()];
    let key = SecretKey::from_file(&fs_err::read_to_string(key_file).unwrap(), None).unwrap();
    metadata::sign(&root, &[&key])
}

/// Writes a project whose skills come from the named registry `corp`,
/// configured by `table` (the lines of `[registries.corp]`).
fn corp_project(world: &World, project: &str, table: &str, skills: &[&str]) {
    let skills: String = skills
        .iter()
        .map(|name| format!("{name} = {{ version = \"1\", registry = \"corp\" }}\n"))
        .collect();
    let dir = world.path(project);
    fs_err::create_dir_all(&dir).unwrap();
    fs_err::write(
        dir.join("skills.toml"),
        format!(
            "[registries.corp]\n{table}\n[install]\ntargets = [\"claude\"]\n\n[skills]\n{skills}"
        ),
    )
    .unwrap();
}

#[test]
fn a_named_registry_pins_its_root_key_and_shares_what_it_saw_with_its_mirror() {
    let world = World::new(&[]);
    world.publish("alpha", "1.0.0");
    let mirror = world.path("mirror");
    world.mirror(world.registry.url(), &mirror);
    world.publish("alpha", "1.1.0");
    let root_key = fs_err::read_to_string(world.path("offline/root.key.pub")).unwrap();
    let root_key = root_key.lines().nth(1).unwrap();

    // A root key that is not the registry's: refused, naming `corp`.
    let other = run(world
        .sandbox
        .registry()
        .args(["keys", "generate"])
        .arg(world.path("offline/other.key")));
    assert_eq!(other.code, 0, "{other:?}");
    let wrong = other.stdout.trim().to_owned();
    let origin = world.registry.url();
    corp_project(
        &world,
        "pinned-wrong",
        &format!("index = \"{origin}\"\nroot-key = \"{wrong}\"\n"),
        &["alpha"],
    );
    let refused = world.user("pinned-wrong", &["install"]);
    // The pinned key is generated for the test: its id is [KEYID].
    let said = world
        .sandbox
        .redact_ids(&world.refusal(&refused, "pinned-wrong"));
    insta::assert_snapshot!(said, @"
    error: registry `corp` (http://127.0.0.1:[PORT]/) cannot be trusted: the pinned root key [KEYID] does not sign 1.root.json
    hint: the registry's keys do not vouch for its metadata; nothing was installed. If its operators really changed the root keys, ask them for the new root key and update `root-key`
    ");

    // The right one: installs from the origin, and records what it saw
    // under the name `corp`.
    corp_project(
        &world,
        "pinned",
        &format!("index = \"{origin}\"\nroot-key = \"{root_key}\"\n"),
        &["alpha"],
    );
    let installed = world.user("pinned", &["install"]);
    assert_eq!(installed.code, 0, "{installed:?}");
    let lock = fs_err::read_to_string(world.path("pinned/skills.lock")).unwrap();
    assert!(lock.contains("version = \"1.1.0\""), "{lock}");
    assert!(lock.contains("source = \"registry:corp\""), "{lock}");

    // The same registry through the mirror made before 1.1.0: a rollback of
    // what `corp` was seen at, though this client never read that mirror.
    let mirror_path = url_of(&mirror);
    corp_project(
        &world,
        "via-stale-mirror",
        &format!("index = \"{origin}\"\nmirror = \"{mirror_path}\"\n"),
        &["alpha"],
    );
    let refused = world.user("via-stale-mirror", &["install"]);
    insta::assert_snapshot!(world.refusal(&refused, "via-stale-mirror"), @"
    error: registry `corp` (file://[HOME]/mirror/) cannot be trusted: timestamp.json is a rollback: it has version 3, older than version 4 seen before
    hint: it serves older metadata than skillpkg saw before: a stale mirror or cache, or an attack; nothing was installed. Use the origin registry, or wait until the mirror is synced again
    ");

    // Synced again, the mirror installs the same lock as the origin.
    world.mirror(world.registry.url(), &mirror);
    let synced = world.user("via-stale-mirror", &["install"]);
    assert_eq!(synced.code, 0, "{synced:?}");
    assert_eq!(
        fs_err::read_to_string(world.path("via-stale-mirror/skills.lock")).unwrap(),
        lock
    );
}

#[test]
fn a_vendor_folder_installs_locked_for_a_registry_that_pins_its_root_key_and_requires_signatures() {
    let mut world = World::new(&[]);
    world.publish("alpha", "1.0.0");
    let root_key = fs_err::read_to_string(world.path("offline/root.key.pub")).unwrap();
    let root_key = root_key.lines().nth(1).unwrap().to_owned();
    let origin = world.registry.url().to_owned();
    let table = |index: &str| {
        format!("index = \"{index}\"\nroot-key = \"{root_key}\"\nrequire-signatures = true\n")
    };
    corp_project(&world, "project", &table(&origin), &["alpha"]);
    let installed = world.user("project", &["install"]);
    assert_eq!(installed.code, 0, "{installed:?}");
    let lock = fs_err::read_to_string(world.path("project/skills.lock")).unwrap();

    let vendored = world.user("project", &["vendor", "vendor"]);
    assert_eq!(vendored.code, 0, "{vendored:?}");
    // The command it prints for a named registry: point its index at the
    // folder, keeping `root-key` and `require-signatures` as they are.
    assert!(
        vendored
            .stdout
            .contains("and set `index = \"vendor\"` in `[registries.corp]`"),
        "{}",
        vendored.stdout
    );
    world.registry.server_mut().kill();
    let manifest = world.path("project/skills.toml");
    let text = fs_err::read_to_string(&manifest).unwrap();
    fs_err::write(&manifest, text.replace(&table(&origin), &table("vendor"))).unwrap();
    fs_err::remove_dir_all(world.path("project/.claude")).unwrap();
    let offline = world.user_with("project", &["install", "--locked"], "empty-cache");
    assert_eq!(offline.code, 0, "{offline:?}");
    assert!(
        world
            .path("project/.claude/skills/alpha/SKILL.md")
            .is_file()
    );
    assert_eq!(
        fs_err::read_to_string(world.path("project/skills.lock")).unwrap(),
        lock
    );

    // Neither pin is loosened: without --locked the index is read, and a
    // folder with no signed metadata is refused for `corp`; a changed
    // archive in the folder is refused by the lock's checksum.
    fs_err::remove_dir_all(world.path("project/.claude")).unwrap();
    let unlocked = world.user_with("project", &["update"], "empty-cache-2");
    assert_eq!(unlocked.code, 3, "{unlocked:?}");
    assert!(
        unlocked.stderr.contains("registry `corp`"),
        "{}",
        unlocked.stderr
    );
    let archive = fs_err::read_dir(world.path("project/vendor/dl/alpha"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .flat_map(|dir| fs_err::read_dir(dir).unwrap())
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|extension| extension == "tgz"))
        .expect("the vendored archive");
    let mut bytes = fs_err::read(&archive).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs_err::write(&archive, bytes).unwrap();
    let tampered = world.user_with("project", &["install", "--locked"], "empty-cache-3");
    assert_eq!(tampered.code, 1, "{tampered:?}");
    assert!(
        tampered.stderr.contains("but skills.lock says"),
        "{}",
        tampered.stderr
    );
    assert!(!world.path("project/.claude/skills/alpha").exists());
}
