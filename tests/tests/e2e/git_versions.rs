//! Versions people recognise (docs/sources.md, "Versions of skills from
//! git"): a skill from git whose SKILL.md gives no version is locked and
//! shown by its tag, else its short commit, never `0.0.0`; `outdated`
//! says when its branch moved and when a newer tag exists, and `update`
//! takes where the branch is now.

use std::path::Path;

use skillpkg_tests::ExampleProject;

use crate::sources::git;

fn commit(repo: &Path, body: &str) -> String {
    fs_err::write(
        repo.join("SKILL.md"),
        format!("---\nname: notes\ndescription: Takes notes. Use when asked to note something.\n---\n\n{body}\n"),
    )
    .unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", body]);
    git(repo, &["rev-parse", "HEAD"])
}

fn locked_version(project: &ExampleProject) -> String {
    let lock: toml::Table =
        toml::from_str(&fs_err::read_to_string(project.root.join("skills.lock")).unwrap()).unwrap();
    lock["skill"][0]["version"].as_str().unwrap().to_owned()
}

fn outdated(project: &ExampleProject) -> serde_json::Value {
    let output = project.run(&["outdated", "--json"]);
    assert_eq!(output.code, 0, "{output:?}");
    output.json()
}

#[test]
fn a_git_skill_without_a_version_is_known_by_its_tag_or_commit_and_outdated_reads_refs() {
    let project = ExampleProject::new(&["--target", "claude"]);
    let repo = project.sandbox.path().join("notes");
    fs_err::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let first = commit(&repo, "First.");
    let url = format!("git+file://{}", repo.display());

    // No tag: the short commit.
    let added = project.run(&["add", &url]);
    assert_eq!(added.code, 0, "{added:?}");
    let short = format!("git:{}", &first[..7]);
    assert_eq!(locked_version(&project), short);
    assert!(
        !added.stdout.contains("0.0.0") && !added.stderr.contains("0.0.0"),
        "{added:?}"
    );
    let listed = project.run(&["list", "--json"]);
    assert_eq!(listed.json()[0]["locked"], short.as_str(), "{listed:?}");
    assert_eq!(outdated(&project), serde_json::json!([]));

    // A tag at the locked commit: `update` takes its name.
    git(&repo, &["tag", "v1.0.0"]);
    let updated = project.run(&["update", "notes"]);
    assert_eq!(updated.code, 0, "{updated:?}");
    assert_eq!(locked_version(&project), "v1.0.0");

    // The branch moves: outdated says where to.
    let second = commit(&repo, "Second.");
    assert_eq!(
        outdated(&project),
        serde_json::json!([{
            "name": "notes", "current": "v1.0.0",
            "wanted": format!("git:{}", &second[..7]), "latest": "v1.0.0",
        }])
    );
    // Tagged, the newer tag is the latest too.
    git(&repo, &["tag", "-a", "v1.1.0", "-m", "1.1.0"]);
    assert_eq!(
        outdated(&project),
        serde_json::json!([{
            "name": "notes", "current": "v1.0.0", "wanted": "v1.1.0", "latest": "v1.1.0",
        }])
    );
    let table = project.run(&["outdated"]);
    assert!(
        table
            .stdout
            .lines()
            .any(|line| line.split_whitespace().collect::<Vec<_>>()
                == ["notes", "v1.0.0", "v1.1.0", "v1.1.0"]),
        "{table:?}"
    );
    let updated = project.run(&["update", "notes"]);
    assert_eq!(updated.code, 0, "{updated:?}");
    assert_eq!(locked_version(&project), "v1.1.0");
    let installed =
        fs_err::read_to_string(project.root.join(".claude/skills/notes/SKILL.md")).unwrap();
    assert!(installed.contains("Second."), "{installed}");
    assert_eq!(outdated(&project), serde_json::json!([]));

    // An entry pinned to a tag does not move with the branch; a newer tag
    // is still the latest.
    let pinned = ExampleProject::new(&["--target", "claude"]);
    let added = pinned.run(&["add", &format!("{url}#v1.0.0")]);
    assert_eq!(added.code, 0, "{added:?}");
    assert_eq!(locked_version(&pinned), "v1.0.0");
    commit(&repo, "Third.");
    assert_eq!(
        outdated(&pinned),
        serde_json::json!([{
            "name": "notes", "current": "v1.0.0", "wanted": "v1.0.0", "latest": "v1.1.0",
        }])
    );
}
