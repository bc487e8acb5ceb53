//! `[policy]` holds for skills from git repositories, discovery indexes and
//! tarball URLs too: a key such a source cannot meet stops the install
//! before anything is fetched, naming the key and the per-skill way out
//! (`policy-exempt`), and changes nothing.

use std::path::{Path, PathBuf};

use skillpkg_tests::Skill;

use crate::sources::{World, git};

/// A repository under `base` holding the skill `name` at its root.
fn repository(base: &Path, name: &str) -> PathBuf {
    let repo = base.join(format!("{name}.git"));
    Skill::new(name, "1.0.0").write(&repo);
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "the skill"]);
    repo
}

/// Replaces the `[skills]` and `[policy]` of the project's skills.toml.
fn write_manifest(world: &World, policy: &str, skills: &str) {
    let path = world.project().join("skills.toml");
    let text = fs_err::read_to_string(&path).unwrap();
    let head = text.split("[skills]").next().unwrap().to_owned();
    let head = head.split("[policy]").next().unwrap().to_owned();
    fs_err::write(
        &path,
        format!("{head}[policy]\n{policy}\n[skills]\n{skills}"),
    )
    .unwrap();
}

#[test]
fn a_policy_a_git_source_cannot_meet_stops_the_install_until_the_skill_is_exempted() {
    let world = World::new();
    let repo = repository(&world.sandbox.path().join("served"), "notes");
    let url = format!("file://{}", repo.display());
    let entry = |exempt: &str| format!("notes = {{ git = \"{url}\"{exempt} }}\n");
    write_manifest(
        &world,
        "require-signature = true\nminimum-release-age = \"1d\"\n",
        &entry(""),
    );

    let before = world.files();
    let refused = world.user(&["install"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains(&format!(
            "error: `notes` comes from the git repository {url}, which carries no publisher signature, so it cannot meet `require-signature`"
        )) && refused.stderr.contains(
            "add `policy-exempt = [\"require-signature\", \"minimum-release-age\"]` to its entry in skills.toml"
        ),
        "{}",
        refused.stderr
    );
    assert_eq!(world.files(), before, "a refusal changes nothing");

    // Exempt from one key: the other still stops it.
    write_manifest(
        &world,
        "require-signature = true\nminimum-release-age = \"1d\"\n",
        &entry(", policy-exempt = [\"require-signature\"]"),
    );
    let before = world.files();
    let refused = world.user(&["install"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains(
            "which gives no publication time skillpkg can check, so it cannot meet `minimum-release-age`"
        ),
        "{}",
        refused.stderr
    );
    assert_eq!(world.files(), before, "a refusal changes nothing");

    // A key that is no policy key is an error naming it.
    write_manifest(
        &world,
        "require-signature = true\n",
        &entry(", policy-exempt = [\"require-signatur\"]"),
    );
    let refused = world.user(&["install"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("has `policy-exempt` entry \"require-signatur\", which is none of the keys"),
        "{}",
        refused.stderr
    );

    // Exempt from both: it installs, and the policy still holds for others.
    write_manifest(
        &world,
        "require-signature = true\nminimum-release-age = \"1d\"\n",
        &entry(", policy-exempt = [\"require-signature\", \"minimum-release-age\"]"),
    );
    let installed = world.user(&["install"]);
    assert_eq!(installed.code, 0, "{installed:?}");
    assert!(
        world
            .project()
            .join(".claude/skills/notes/SKILL.md")
            .is_file()
    );
}

#[test]
fn a_signed_registry_skill_replaced_by_a_git_source_is_a_downgrade_under_no_downgrade() {
    let world = World::new();
    let added = world.user(&["add", "csv-insights"]);
    assert_eq!(added.code, 0, "{added:?}");
    let repo = repository(&world.sandbox.path().join("served"), "csv-insights");
    let url = format!("file://{}", repo.display());
    write_manifest(
        &world,
        "trust = \"no-downgrade\"\n",
        &format!("csv-insights = {{ git = \"{url}\" }}\n"),
    );
    let before = world.files();
    let refused = world.user(&["install"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains(
            "which carries neither the signature nor the provenance the locked registry version had (`trust = \"no-downgrade\"`), so it cannot meet `trust`"
        ),
        "{}",
        refused.stderr
    );
    assert_eq!(world.files(), before, "a refusal changes nothing");

    // Without the policy the same change is the project's choice.
    write_manifest(
        &world,
        "",
        &format!("csv-insights = {{ git = \"{url}\" }}\n"),
    );
    let installed = world.user(&["install"]);
    assert_eq!(installed.code, 0, "{installed:?}");
}
