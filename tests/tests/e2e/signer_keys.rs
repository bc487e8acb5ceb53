//! Signers are keys, not ids, end to end: a hostile registry (a static tree
//! written by hand) serves keys that carry another key's id, and the real
//! client decides by key: under `allowed-signers`, at `update` against the
//! lock's pin, and when a lock written with ids is upgraded.

use std::path::PathBuf;

use skillpkg_index::signing::{SecretKey, SignerKey};
use skillpkg_tests::static_registry::Registry;
use skillpkg_tests::{Output, TestContext, project_files, run};

struct World {
    sandbox: TestContext,
    registry: Registry,
}

impl World {
    fn new() -> Self {
        let sandbox = TestContext::new();
        let registry = Registry::new(&sandbox);
        fs_err::create_dir_all(sandbox.path().join("project")).unwrap();
        Self { sandbox, registry }
    }

    fn project(&self) -> PathBuf {
        self.sandbox.path().join("project")
    }

    fn user(&self, args: &[&str]) -> Output {
        run(self
            .sandbox
            .skillpkg_command()
            .current_dir(self.project())
            .args(args)
            .env("SKILLPKG_CACHE_DIR", self.sandbox.path().join("cache")))
    }

    fn manifest(&self, registry_table: &str, skills: &str) {
        fs_err::write(
            self.project().join("skills.toml"),
            format!(
                "[registry]\nurl = \"corp\"\n\n[registries.corp]\nindex = \"{}\"\n{registry_table}\n[install]\ntargets = [\"claude\"]\n\n[skills]\n{skills}",
                self.registry.url()
            ),
        )
        .unwrap();
    }

    fn registry_root(&self) -> PathBuf {
        self.registry.root().to_path_buf()
    }

    fn lock(&self) -> String {
        fs_err::read_to_string(self.project().join("skills.lock")).unwrap_or_default()
    }

    /// The bytes of skills.toml, skills.lock and every installed file.
    fn state(&self) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
        project_files(&self.project())
    }

    /// Returns true if and only if skills.lock pins `key`.
    fn pins(&self, key: &SecretKey) -> bool {
        self.lock()
            .contains(&format!("signer = \"{}\"", signer(key)))
    }

    /// A world whose project has `pdf@^1` locked at 1.0.0, signed by the
    /// registry's key, which it returns.
    fn with_pdf_locked() -> (Self, SecretKey) {
        let mut world = Self::new();
        let publisher = copy(world.registry.key());
        world
            .registry
            .publish(&world.sandbox, "pdf", "1.0.0", "one");
        world.manifest("", "");
        assert_eq!(world.user(&["add", "pdf@^1"]).code, 0);
        assert!(world.pins(&publisher), "{}", world.lock());
        (world, publisher)
    }
}

/// Another handle on `key`, through its key file.
fn copy(key: &SecretKey) -> SecretKey {
    SecretKey::from_file(&key.to_file(None).unwrap(), None).unwrap()
}

/// A fresh key that carries `of`'s key id: anyone can make one.
fn forged(of: &SecretKey) -> SecretKey {
    SecretKey::generate().unwrap().with_id(of.id())
}

fn signer(key: &SecretKey) -> String {
    SignerKey::of(&key.public()).to_string()
}

#[test]
fn a_key_carrying_an_allowed_publishers_id_is_refused_under_allowed_signers() {
    let mut world = World::new();
    let publisher = copy(world.registry.key());
    world
        .registry
        .publish(&world.sandbox, "pdf", "1.0.0", "by the publisher");
    // A second publisher's skill, signed by a key that carries the first
    // publisher's id, and listed under it in its keys file.
    let attacker = forged(&publisher);
    assert_eq!(attacker.id(), publisher.id());
    world.registry.sign_with(copy(&attacker));
    world
        .registry
        .publish(&world.sandbox, "evil", "1.0.0", "by the attacker");
    world.manifest(
        &format!("allowed-signers = [\"{}\"]\n", signer(&publisher)),
        "",
    );

    // The publisher's skill installs.
    let added = world.user(&["add", "pdf"]);
    assert_eq!(added.code, 0, "{added:?}");
    assert!(world.pins(&publisher), "{}", world.lock());

    // The attacker's does not, though its index line names an allowed id.
    let before = world.state();
    let refused = world.user(&["add", "evil"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains(&format!(
            "evil 1.0.0 is signed by key {} ({}), which `allowed-signers` of registry `corp` does not list ({})",
            publisher.id(),
            signer(&attacker),
            signer(&publisher)
        )),
        "{}",
        refused.stderr
    );
    assert_eq!(world.state(), before, "a refusal changes nothing");
    assert!(!world.project().join(".claude/skills/evil").exists());
}

#[test]
fn a_key_swapped_under_the_pinned_id_is_a_signer_change_at_update() {
    let (mut world, publisher) = World::with_pdf_locked();

    // A stolen owner token, or the registry's operator: the skill's keys
    // now list only a key that carries the pinned id, which signs 1.1.0.
    let attacker = forged(&publisher);
    world.registry.sign_with(copy(&attacker));
    world
        .registry
        .publish(&world.sandbox, "pdf", "1.1.0", "two");
    let before = world.state();
    let refused = world.user(&["update"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains(&format!(
            "error: the signer of `pdf` changed: skills.lock pins {}, but pdf@1.1.0 is signed by {} (key id {})",
            signer(&publisher),
            signer(&attacker),
            publisher.id()
        )) && refused.stderr.contains("--allow-signer-change"),
        "{}",
        refused.stderr
    );
    assert_eq!(world.state(), before, "a refusal changes nothing");

    // The keys file lies the other way: it lists the pinned key, while
    // the new version is signed by the attacker's key under the same id.
    world.registry.list_keys(vec![publisher.public()]);
    world
        .registry
        .publish(&world.sandbox, "pdf", "1.2.0", "three");
    let refused = world.user(&["update"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("pdf@1.2.0 failed verification")
            && refused.stderr.contains(&format!(
                "does not verify with the pinned signer {}",
                signer(&publisher)
            )),
        "{}",
        refused.stderr
    );
    assert_eq!(world.state(), before, "a refusal changes nothing");

    // Confirmed by the user, the new key is pinned.
    world.registry.sign_with(copy(&attacker));
    world
        .registry
        .publish(&world.sandbox, "pdf", "1.3.0", "four");
    let allowed = world.user(&["update", "--allow-signer-change"]);
    assert_eq!(allowed.code, 0, "{allowed:?}");
    assert!(world.pins(&attacker), "{}", world.lock());
}

#[test]
fn a_lock_that_pins_an_id_is_honoured_once_then_upgraded_to_the_key() {
    let (mut world, publisher) = World::with_pdf_locked();
    let keyed = world.lock();
    // The lock as an older skillpkg wrote it: the signer by id.
    let legacy = keyed.replace(&signer(&publisher), &publisher.id().to_string());
    assert_ne!(legacy, keyed);
    fs_err::write(world.project().join("skills.lock"), &legacy).unwrap();

    // --locked cannot upgrade it: it installs, and says so.
    fs_err::remove_dir_all(world.project().join(".claude")).unwrap();
    let locked = world.user(&["install", "--locked"]);
    assert_eq!(locked.code, 0, "{locked:?}");
    assert!(
        locked
            .stderr
            .contains("skills.lock pins the signer of `pdf` by key id only"),
        "{}",
        locked.stderr
    );
    assert_eq!(world.lock(), legacy);

    // A plain install pins the key, with a note, and keeps the version.
    let upgraded = world.user(&["install"]);
    assert_eq!(upgraded.code, 0, "{upgraded:?}");
    assert!(
        upgraded.stderr.contains(&format!(
            "skills.lock pinned the signer of `pdf` by key id {} only; it now pins the key itself, {}",
            publisher.id(),
            signer(&publisher)
        )),
        "{}",
        upgraded.stderr
    );
    assert_eq!(world.lock(), keyed);

    // An id pin cannot be upgraded to a key that did not sign the locked
    // archive: the operator swapped the keys under the pinned id.
    fs_err::write(world.project().join("skills.lock"), &legacy).unwrap();
    let attacker = forged(&publisher);
    world.registry.sign_with(copy(&attacker));
    world
        .registry
        .publish(&world.sandbox, "other", "1.0.0", "rewrites the keys");
    fs_err::copy(
        world.registry_root().join("keys/other.json"),
        world.registry_root().join("keys/pdf.json"),
    )
    .unwrap();
    let before = world.state();
    let refused = world.user(&["install"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("pdf@1.0.0 failed verification"),
        "{}",
        refused.stderr
    );
    assert_eq!(world.state(), before, "a refusal changes nothing");
}

#[test]
fn a_keys_file_listing_two_keys_under_one_id_is_refused() {
    let mut world = World::new();
    let publisher = copy(world.registry.key());
    let attacker = forged(&publisher);
    world
        .registry
        .list_keys(vec![publisher.public(), attacker.public()]);
    world
        .registry
        .publish(&world.sandbox, "pdf", "1.0.0", "one");
    world.manifest("", "");
    let refused = world.user(&["add", "pdf"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains(&format!(
            "registry `corp` lists 2 different keys with id {} for `pdf`",
            publisher.id()
        )),
        "{}",
        refused.stderr
    );
    assert!(!world.project().join("skills.lock").exists());
}
