//! The user's own skills (`--global`, docs/manifest.md): added, installed,
//! listed, verified and removed from anywhere, with a skills.toml and
//! skills.lock of their own, never touching a project's files.

use std::path::{Path, PathBuf};

use skillpkg_tests::{Output, Skill, TestContext, TestRegistry, project_files};

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
        for name in ["pdf", "notes"] {
            registry.publish(&Skill::new(name, "1.0.0").body(&format!("# {name}\n")));
        }
        Self { registry, sandbox }
    }

    /// Runs skillpkg in `dir` as the sandbox's user (its home is the
    /// sandbox).
    fn user(&self, dir: &Path, args: &[&str]) -> Output {
        fs_err::create_dir_all(dir).unwrap();
        self.sandbox
            .user_in(dir, &self.sandbox.path().join("cache"), args)
    }

    fn home(&self, relative: &str) -> PathBuf {
        self.sandbox.path().join(relative)
    }

    /// The folder of the user's own skills.toml and skills.lock: the
    /// platform's user data folder, below the home.
    fn global(&self) -> PathBuf {
        self.home(".local/share/skillpkg/global")
    }

    fn global_manifest(&self) -> String {
        fs_err::read_to_string(self.global().join("skills.toml")).unwrap_or_default()
    }
}

#[test]
fn skills_added_with_global_install_from_anywhere_and_never_touch_a_project() {
    let world = World::new();
    let url = world.registry.url().to_owned();

    // Outside any project.
    let anywhere = world.home("anywhere");
    let added = world.user(&anywhere, &["add", "-g", "pdf", "--registry", &url]);
    assert_eq!(added.code, 0, "{added:?}");
    for folder in [".claude/skills", ".agents/skills"] {
        assert!(
            world.home(folder).join("pdf/SKILL.md").is_file(),
            "pdf is not in ~/{folder}: {added:?}"
        );
    }
    let manifest = world.global_manifest();
    assert!(manifest.contains("pdf = \"^1.0.0\""), "{manifest}");
    assert!(
        manifest.contains(&url),
        "the registry is recorded: {manifest}"
    );
    let lock = fs_err::read_to_string(world.global().join("skills.lock")).unwrap();
    assert!(lock.contains("name = \"pdf\""), "{lock}");
    assert!(
        fs_err::read_dir(&anywhere).unwrap().next().is_none(),
        "the working folder was written to"
    );

    // Inside a project: the project is neither read nor written.
    let project = world.home("project");
    let init = world.user(&project, &["init", "--target", "claude"]);
    assert_eq!(init.code, 0, "{init:?}");
    // A project whose targets would be refused changes nothing either.
    fs_err::write(
        project.join("skills.toml"),
        "[install]\ntargets = [\"../outside\"]\n\n[skills]\n",
    )
    .unwrap();
    let before = project_files(&project);
    let added = world.user(&project, &["add", "--global", "notes"]);
    assert_eq!(added.code, 0, "{added:?}");
    assert_eq!(
        project_files(&project),
        before,
        "a --global add changed the project"
    );
    assert!(!world.home("outside").exists());
    assert!(world.home(".claude/skills/notes/SKILL.md").is_file());
    assert!(world.global_manifest().contains("notes = \"^1.0.0\""));

    // Listed and verified from anywhere.
    let listed = world.user(&anywhere, &["list", "-g", "--json"]);
    assert_eq!(listed.code, 0, "{listed:?}");
    let mut rows: Vec<(String, String)> = listed
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["target"].as_str().unwrap().to_owned(),
                row["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    rows.sort();
    assert_eq!(
        rows,
        [
            ("agents".to_owned(), "notes".to_owned()),
            ("agents".to_owned(), "pdf".to_owned()),
            ("claude".to_owned(), "notes".to_owned()),
            ("claude".to_owned(), "pdf".to_owned()),
        ]
    );
    let verified = world.user(&anywhere, &["verify", "-g"]);
    assert_eq!(verified.code, 0, "{verified:?}");
    assert!(
        verified.stdout.contains("4 verified, 0 changed"),
        "{verified:?}"
    );

    // A user folder deleted: verify says so, install restores it.
    fs_err::remove_dir_all(world.home(".claude/skills/pdf")).unwrap();
    let missing = world.user(&anywhere, &["verify", "-g"]);
    assert_eq!(missing.code, 1, "{missing:?}");
    assert!(
        missing.stdout.contains("pdf in claude: missing"),
        "{missing:?}"
    );
    let restored = world.user(&anywhere, &["install", "-g"]);
    assert_eq!(restored.code, 0, "{restored:?}");
    assert!(world.home(".claude/skills/pdf/SKILL.md").is_file());

    // Removed from everywhere, from inside the project.
    let removed = world.user(&project, &["remove", "-g", "pdf"]);
    assert_eq!(removed.code, 0, "{removed:?}");
    for folder in [".claude/skills", ".agents/skills"] {
        assert!(!world.home(folder).join("pdf").exists(), "{folder}");
        assert!(world.home(folder).join("notes").exists(), "{folder}");
    }
    assert!(!world.global_manifest().contains("pdf ="));
    assert_eq!(
        project_files(&project),
        before,
        "a --global remove changed the project"
    );
}

#[test]
fn a_failed_first_global_add_leaves_nothing_and_other_commands_say_there_are_none() {
    let world = World::new();
    let url = world.registry.url().to_owned();
    let anywhere = world.home("anywhere");

    // Nothing added with --global yet: listed as none, installed as an
    // error that says how to add one.
    let listed = world.user(&anywhere, &["list", "-g", "--json"]);
    assert_eq!(listed.code, 0, "{listed:?}");
    assert_eq!(listed.json(), serde_json::json!([]));
    let install = world.user(&anywhere, &["install", "-g"]);
    assert_eq!(install.code, 1, "{install:?}");
    assert!(
        install
            .stderr
            .contains("no skills were added with --global yet"),
        "{install:?}"
    );
    assert!(
        install.stderr.contains("skillpkg add --global NAME"),
        "{install:?}"
    );

    // A first add that fails leaves no skills.toml behind.
    let failed = world.user(
        &anywhere,
        &["add", "-g", "no-such-skill", "--registry", &url],
    );
    assert_ne!(failed.code, 0, "{failed:?}");
    assert!(!world.global().join("skills.toml").exists(), "{failed:?}");
    assert!(!world.home(".claude/skills/no-such-skill").exists());
    assert!(!anywhere.join("skills.toml").exists());
}
