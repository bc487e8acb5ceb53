//! Named registries end to end: a project that takes skills from two real
//! servers, a registry moved to a static copy without touching the lock,
//! private registries and their tokens, and mirrors that are down.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use skillpkg_tests::{Output, Skill, TestContext, TestRegistry, files_below, free_port, run};

/// Two registry servers (`main`, the default, and `corp`), one publisher
/// with a signing key for both, and a project folder.
struct World {
    main: TestRegistry,
    corp: TestRegistry,
    sandbox: TestContext,
}

impl World {
    /// `corp_flags` are the extra flags of the corp server (`--auth-required`).
    fn new(corp_flags: &[&str]) -> Self {
        let sandbox = TestContext::new();
        let main = TestRegistry::builder(&sandbox).data("main-data").start();
        let corp = TestRegistry::builder(&sandbox)
            .data("corp-data")
            .flags(corp_flags)
            .start();
        fs_err::create_dir_all(sandbox.path().join("project")).unwrap();
        Self {
            main,
            corp,
            sandbox,
        }
    }

    fn project(&self) -> PathBuf {
        self.sandbox.path().join("project")
    }

    /// Publishes `name@version`, depending on `deps`, to `registry`.
    fn publish(&self, registry: &TestRegistry, name: &str, version: &str, deps: &[&str]) {
        registry.publish(&Skill::new(name, version).depends_on(deps));
    }

    /// Runs skillpkg in the project as its user, with `env` added.
    fn user(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = self.sandbox.skillpkg_command();
        command
            .current_dir(self.project())
            .args(args)
            .env("SKILLPKG_CONFIG_DIR", self.sandbox.path().join("user"))
            .env("SKILLPKG_CACHE_DIR", self.sandbox.path().join("cache"))
            .env("SKILLPKG_TEST_NO_RETRY_DELAY", "1");
        for (name, value) in env {
            command.env(name, value);
        }
        run(&mut command)
    }

    fn write_manifest(&self, text: &str) {
        self.sandbox.write("project/skills.toml", text);
    }

    fn manifest(&self) -> String {
        fs_err::read_to_string(self.project().join("skills.toml")).unwrap()
    }

    fn lock(&self) -> String {
        fs_err::read_to_string(self.project().join("skills.lock")).unwrap_or_default()
    }

    /// The installed skills: name -> SKILL.md text.
    fn installed(&self) -> BTreeMap<String, String> {
        let Ok(entries) = fs_err::read_dir(self.project().join(".claude/skills")) else {
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

    /// Forgets everything installed and cached (the lock stays), so the
    /// next install has to download every archive.
    fn forget_downloads(&self) {
        for dir in [
            self.project().join(".claude"),
            self.sandbox.path().join("cache"),
        ] {
            if dir.exists() {
                fs_err::remove_dir_all(dir).unwrap();
            }
        }
    }
}

/// The `[[skill]]` entry of `name` in a lock, up to its `dependencies`.
fn locked<'lock>(lock: &'lock str, name: &str) -> &'lock str {
    let start = lock
        .find(&format!("name = \"{name}\"\n"))
        .unwrap_or_else(|| panic!("`{name}` is not locked:\n{lock}"));
    let end = lock[start..].find("dependencies").unwrap() + start;
    &lock[start..end]
}

/// Copies the tree below `from` into `to`.
fn copy_tree(from: &Path, to: &Path) {
    for (relative, bytes) in files_below(from) {
        let path = to.join(relative);
        fs_err::create_dir_all(path.parent().unwrap()).unwrap();
        fs_err::write(path, bytes).unwrap();
    }
}

#[test]
fn a_project_takes_each_skill_from_its_registry_and_the_lock_names_them() {
    let world = World::new(&[]);
    world.publish(&world.main, "pdf", "1.0.0", &[]);
    // `base` is in both registries: corp's skills get corp's.
    world.publish(&world.main, "base", "2.0.0", &[]);
    world.publish(&world.corp, "base", "1.0.0", &[]);
    world.publish(&world.corp, "style", "1.0.0", &["base"]);
    world.publish(&world.corp, "extra", "1.1.0", &[]);
    world.publish(&world.main, "docs", "0.3.0", &[]);
    world.write_manifest(&format!(
        "[registry]\nurl = \"{}\"\n\n[registries.corp]\nindex = \"{}\"\n\n[install]\ntargets = [\"claude\"]\n\n[skills]\npdf = \"^1\"\nstyle = {{ version = \"^1\", registry = \"corp\" }}\n",
        world.main.url(),
        world.corp.url()
    ));

    let installed = world.user(&["install"], &[]);
    assert_eq!(installed.code, 0, "{installed:?}");
    let lock = world.lock();
    assert!(
        locked(&lock, "pdf").contains("source = \"registry:default\""),
        "{lock}"
    );
    assert!(
        locked(&lock, "style").contains("source = \"registry:corp\""),
        "{lock}"
    );
    let base = locked(&lock, "base");
    assert!(
        base.contains("version = \"1.0.0\"\nsource = \"registry:corp\""),
        "a dependency comes from the registry of the skill that depends on it:\n{lock}"
    );
    assert!(!lock.contains("http"), "no URL in the lock:\n{lock}");
    assert_eq!(
        world.installed().keys().collect::<Vec<_>>(),
        ["base", "pdf", "style"]
    );
    assert!(world.installed()["base"].contains("# base 1.0.0"));

    // `add --registry NAME` records the registry; the default keeps the short form.
    let added = world.user(&["add", "extra", "--registry", "corp"], &[]);
    assert_eq!(added.code, 0, "{added:?}");
    let added = world.user(&["add", "docs", "--registry", world.main.url()], &[]);
    assert_eq!(added.code, 0, "{added:?}");
    let manifest = world.manifest();
    assert!(
        manifest.contains("extra = { version = \"^1.1.0\", registry = \"corp\" }"),
        "{manifest}"
    );
    assert!(manifest.contains("docs = \"^0.3.0\"\n"), "{manifest}");
    let lock = world.lock();
    assert!(
        locked(&lock, "extra").contains("source = \"registry:corp\""),
        "{lock}"
    );
    assert!(
        locked(&lock, "docs").contains("source = \"registry:default\""),
        "{lock}"
    );

    // The same name from two registries is refused, naming both.
    let before = (world.lock(), world.installed());
    world
        .sandbox
        .write("project/skills.toml", format!("{manifest}base = \"^2\"\n"));
    let conflict = world.user(&["install"], &[]);
    assert_eq!(conflict.code, 1, "{conflict:?}");
    insta::assert_snapshot!(world.sandbox.redact(&conflict.stderr), @"
    error: `base` is wanted from two registries: `corp` (a dependency of `style`) and `default` (skills.toml)
    hint: a project takes each skill name from one registry; a dependency comes from the registry of the skill that depends on it, so set `registry` of `base` in skills.toml to match, or drop one of the skills
    ");
    assert_eq!((world.lock(), world.installed()), before, "nothing changed");

    // A registry that is not configured is named, with the ones that are.
    world.write_manifest(&format!(
        "{manifest}unknown = {{ version = \"1\", registry = \"elsewhere\" }}\n"
    ));
    let unknown = world.user(&["install"], &[]);
    assert_eq!(unknown.code, 1, "{unknown:?}");
    insta::assert_snapshot!(world.sandbox.redact(&unknown.stderr), @r#"
    error: skills.toml takes `unknown` from registry `elsewhere`
      Caused by: no registry named `elsewhere` is configured
    hint: the configured registries are `corp`; define it with a `[registries.elsewhere]` table and its `index = "URL"` in skills.toml or [HOME]/user/skillpkg/config.toml
    "#);
}

#[test]
fn pointing_a_registry_at_a_static_copy_changes_nothing_in_the_lock() {
    let mut world = World::new(&[]);
    world.publish(&world.main, "pdf", "1.0.0", &[]);
    world.publish(&world.corp, "base", "1.0.0", &[]);
    world.publish(&world.corp, "style", "1.0.0", &["base"]);
    let manifest = |corp_index: &str| {
        format!(
            "[registry]\nurl = \"{}\"\n\n[registries.corp]\nindex = \"{corp_index}\"\n\n[install]\ntargets = [\"claude\"]\n\n[skills]\npdf = \"^1\"\nstyle = {{ version = \"^1\", registry = \"corp\" }}\n",
            world.main.url(),
        )
    };
    world.write_manifest(&manifest(world.corp.url()));
    let installed = world.user(&["install"], &[]);
    assert_eq!(installed.code, 0, "{installed:?}");
    let lock = fs_err::read(world.project().join("skills.lock")).unwrap();

    // The copy is a plain path, relative to the project; the server is gone.
    copy_tree(
        &world.corp.public(),
        &world.sandbox.path().join("corp-copy"),
    );
    world.corp.server_mut().kill();
    world.write_manifest(&manifest("../corp-copy"));
    world.forget_downloads();
    let from_copy = world.user(&["install", "--locked"], &[]);
    assert_eq!(from_copy.code, 0, "{from_copy:?}");
    assert_eq!(
        fs_err::read(world.project().join("skills.lock")).unwrap(),
        lock,
        "skills.lock is byte for byte the same"
    );
    assert_eq!(
        world.installed().keys().collect::<Vec<_>>(),
        ["base", "pdf", "style"]
    );

    // The same through a file:// URL, read as corp's mirror.
    let copy = url::Url::from_directory_path(world.sandbox.path().join("corp-copy")).unwrap();
    world.write_manifest(
        &manifest(world.corp.url())
            .replace("[install]", &format!("mirror = \"{copy}\"\n\n[install]")),
    );
    world.forget_downloads();
    let from_mirror = world.user(&["install", "--locked"], &[]);
    assert_eq!(from_mirror.code, 0, "{from_mirror:?}");
    assert_eq!(
        fs_err::read(world.project().join("skills.lock")).unwrap(),
        lock
    );
}

#[test]
fn a_private_registry_installs_with_its_token_and_without_one_says_how_to_give_it() {
    let world = World::new(&["--auth-required"]);
    world.publish(&world.corp, "style", "1.0.0", &[]);
    let token = world.corp.token().to_owned();
    let corp = world.corp.url().to_owned();
    // Only corp is configured: the project needs no default registry.
    world.write_manifest(&format!(
        "[registries.corp]\nindex = \"{corp}\"\n\n[install]\ntargets = [\"claude\"]\n\n[skills]\nstyle = {{ version = \"^1\", registry = \"corp\" }}\n"
    ));
    let install = |env: &[(&str, &str)]| {
        world.forget_downloads();
        let _ = fs_err::remove_file(world.project().join("skills.lock"));
        world.user(&["install"], env)
    };

    let anonymous = install(&[]);
    assert_eq!(anonymous.code, 1, "{anonymous:?}");
    insta::assert_snapshot!(world.sandbox.redact(&anonymous.stderr), @"
    error: cannot read registry `corp`
      Caused by: registry `corp` (http://127.0.0.1:[PORT]/) needs a token, and none is configured
      Caused by: http://127.0.0.1:[PORT]/config.json answered HTTP 401
    hint: run `skillpkg login --registry corp`, set SKILLPKG_REGISTRY_CORP_TOKEN, or add a `token-command` to `[registries.corp]` in [HOME]/user/skillpkg/config.toml
    ");
    assert!(world.installed().is_empty());

    let with_variable = install(&[("SKILLPKG_REGISTRY_CORP_TOKEN", &token)]);
    assert_eq!(with_variable.code, 0, "{with_variable:?}");
    assert_eq!(world.installed().keys().collect::<Vec<_>>(), ["style"]);

    // SKILLPKG_TOKEN is the default registry's, and corp is not the default.
    let with_default_token = install(&[("SKILLPKG_TOKEN", &token)]);
    assert_eq!(with_default_token.code, 1, "{with_default_token:?}");

    let wrong = install(&[("SKILLPKG_REGISTRY_CORP_TOKEN", "skp_not-a-real-one")]);
    assert_eq!(wrong.code, 1, "{wrong:?}");
    insta::assert_snapshot!(world.sandbox.redact(&wrong.stderr), @"
    error: cannot read registry `corp`
      Caused by: registry `corp` (http://127.0.0.1:[PORT]/) refused the token from $SKILLPKG_REGISTRY_CORP_TOKEN
      Caused by: http://127.0.0.1:[PORT]/config.json answered HTTP 401
    hint: the token is unknown, revoked or for another registry: run `skillpkg login --registry corp`, set SKILLPKG_REGISTRY_CORP_TOKEN, or add a `token-command` to `[registries.corp]` in [HOME]/user/skillpkg/config.toml
    ");
    assert!(
        !wrong.stderr.contains("skp_not-a-real-one"),
        "{}",
        wrong.stderr
    );

    // A token-command in the user config, for the same index.
    world
        .sandbox
        .write("secret/corp-token", format!("{token}\n"));
    let secret = world.sandbox.path().join("secret/corp-token");
    world.sandbox.write(
        "user/skillpkg/config.toml",
        format!(
            "[registries.corp]\nindex = \"{corp}\"\ntoken-command = \"cat '{}'\"\n",
            secret.display()
        ),
    );
    let with_command = install(&[]);
    assert_eq!(with_command.code, 0, "{with_command:?}");
    assert_eq!(world.installed().keys().collect::<Vec<_>>(), ["style"]);
    fs_err::remove_file(world.sandbox.path().join("user/skillpkg/config.toml")).unwrap();

    // `login --registry corp` stores the token under corp's index URL.
    let login = world.user(&["login", "--registry", "corp", "--token", &token], &[]);
    assert_eq!(login.code, 0, "{login:?}");
    let credentials =
        fs_err::read_to_string(world.sandbox.path().join("user/skillpkg/credentials.toml"))
            .unwrap();
    assert!(
        credentials.contains(&format!("[registries.\"{corp}/\"]")),
        "{credentials}"
    );
    let with_login = install(&[]);
    assert_eq!(with_login.code, 0, "{with_login:?}");

    for output in [
        &anonymous,
        &with_variable,
        &with_default_token,
        &wrong,
        &with_command,
        &login,
        &with_login,
    ] {
        assert!(
            !output.stdout.contains(&token) && !output.stderr.contains(&token),
            "a token was shown: {output:?}"
        );
    }
}

#[test]
fn a_mirror_that_is_down_fails_unless_fallback_to_origin_reads_the_index() {
    let world = World::new(&[]);
    world.publish(&world.corp, "style", "1.0.0", &[]);
    let dead = format!("http://127.0.0.1:{}", free_port());
    let manifest = |fallback: bool| {
        format!(
            "[registries.corp]\nindex = \"{}\"\nmirror = \"{dead}\"\nfallback-to-origin = {fallback}\n\n[install]\ntargets = [\"claude\"]\n\n[skills]\nstyle = {{ version = \"^1\", registry = \"corp\" }}\n",
            world.corp.url()
        )
    };
    world.write_manifest(&manifest(false));
    let down = world.user(&["install"], &[]);
    assert_eq!(down.code, 3, "an unreachable server is exit 3: {down:?}");
    insta::assert_snapshot!(world.sandbox.redact(&down.stderr), @"
    error: cannot read registry `corp` from its mirror http://127.0.0.1:[PORT]/ (`fallback-to-origin` is off)
      Caused by: cannot reach http://127.0.0.1:[PORT]/config.json
      Caused by: error sending request
      Caused by: client error (Connect)
      Caused by: tcp connect error
      Caused by: Connection refused (os error 111)
    hint: check the registry URL and your network, and that the registry is running
    ");
    assert!(world.installed().is_empty() && world.lock().is_empty());

    world.write_manifest(&manifest(true));
    let fell_back = world.user(&["install"], &[]);
    assert_eq!(fell_back.code, 0, "{fell_back:?}");
    assert_eq!(world.installed().keys().collect::<Vec<_>>(), ["style"]);
    let lock = world.lock();
    assert!(
        locked(&lock, "style").contains("source = \"registry:corp\""),
        "{lock}"
    );
    assert!(!lock.contains("http"), "{lock}");
}
