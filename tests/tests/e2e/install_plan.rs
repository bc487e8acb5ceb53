//! The install plan, seen from the command line: names and ranges the
//! registry cannot meet are named before anything changes, `update` of a
//! name the project lacks is refused, and installed folders edited by hand
//! are put back, naming the files that differed.

use std::path::PathBuf;

use skillpkg_tests::ExampleProject;

/// A project installing into `claude` from the example registry.
struct Project(ExampleProject);

impl std::ops::Deref for Project {
    type Target = ExampleProject;

    fn deref(&self) -> &ExampleProject {
        &self.0
    }
}

impl Project {
    fn new() -> Self {
        Self(ExampleProject::new(&["--target", "claude"]))
    }

    fn skill(&self, name: &str) -> PathBuf {
        self.root.join(".claude/skills").join(name)
    }
}

#[test]
fn an_unknown_name_is_named_with_close_names_and_changes_nothing() {
    let project = Project::new();
    let before = project.manifest();
    let output = project.run(&["add", "pdf-procesing", "--allow-unsigned"]);
    assert_eq!(output.code, 1, "{output:?}");
    let registry = format!("file://{}/", ExampleProject::registry().display());
    assert!(
        output.stderr.contains(&format!(
            "error: no skill named `pdf-procesing` in registry `{registry}`\nhint: did you mean `pdf-processing`?\n"
        )),
        "{}",
        output.stderr
    );
    assert_eq!(project.manifest(), before);
    assert!(!project.root.join("skills.lock").exists());

    let output = project.run(&["add", "pdf-procesing", "--allow-unsigned", "--json"]);
    assert_eq!(output.code, 1, "{output:?}");
    let json = output.json();
    let unmet = &json["error"]["unmet"];
    assert_eq!(unmet["kind"], "no-such-skill");
    assert_eq!(unmet["name"], "pdf-procesing");
    assert_eq!(unmet["suggestions"], serde_json::json!(["pdf-processing"]));
    assert_eq!(json["error"]["hint"], "did you mean `pdf-processing`?");
    assert_eq!(project.manifest(), before);
}

#[test]
fn a_range_nothing_meets_lists_the_versions_there_are() {
    let project = Project::new();
    let before = project.manifest();
    let output = project.run(&["add", "pdf-processing@^9", "--allow-unsigned", "--json"]);
    assert_eq!(output.code, 1, "{output:?}");
    let json = output.json();
    let unmet = &json["error"]["unmet"];
    assert_eq!(unmet["kind"], "no-matching-version");
    assert_eq!(unmet["requirement"], "^9");
    assert_eq!(
        unmet["versions"],
        serde_json::json!([{"version": "1.2.0", "yanked": false}])
    );
    assert!(
        output
            .stderr
            .contains("matches `^9`; it has 1.2.0\nhint: change the requirement of `pdf-processing` in skills.toml, for example to \"^1.2.0\""),
        "{}",
        output.stderr
    );
    assert_eq!(project.manifest(), before);
}

#[test]
fn update_of_a_name_the_project_lacks_is_an_error() {
    let project = Project::new();
    let added = project.run(&["add", "pdf-processing", "--allow-unsigned"]);
    assert_eq!(added.code, 0, "{added:?}");
    let lock = fs_err::read_to_string(project.root.join("skills.lock")).unwrap();
    let output = project.run(&["update", "pdf-procesing", "--allow-unsigned"]);
    assert_eq!(output.code, 1, "{output:?}");
    assert!(
        output.stderr.contains(
            "error: `pdf-procesing` is not a skill of this project: skills.toml does not ask for it and skills.lock does not have it\nhint: did you mean `pdf-processing`?"
        ),
        "{}",
        output.stderr
    );
    assert_eq!(
        fs_err::read_to_string(project.root.join("skills.lock")).unwrap(),
        lock
    );
    // A name the project has is updated as before.
    let output = project.run(&["update", "pdf-processing", "--allow-unsigned"]);
    assert_eq!(output.code, 0, "{output:?}");
}

#[test]
fn a_folder_edited_by_hand_is_restored_naming_the_files() {
    let project = Project::new();
    let added = project.run(&["add", "pdf-processing", "--allow-unsigned"]);
    assert_eq!(added.code, 0, "{added:?}");
    let skill = project.skill("pdf-processing");
    let original = fs_err::read(skill.join("SKILL.md")).unwrap();
    fs_err::write(skill.join("SKILL.md"), "edited\n").unwrap();
    fs_err::write(skill.join("notes.md"), "mine\n").unwrap();

    // CI's --locked install notices and restores them too.
    let output = project.run(&["install", "--locked", "--allow-unsigned", "--json"]);
    assert_eq!(output.code, 0, "{output:?}");
    let json = output.json();
    assert_eq!(
        json["restored"],
        serde_json::json!([{
            "name": "pdf-processing",
            "target": "claude",
            "files": ["SKILL.md (changed)", "notes.md (added)"],
        }])
    );
    assert_eq!(json["unchanged"], 0);
    assert_eq!(fs_err::read(skill.join("SKILL.md")).unwrap(), original);
    assert!(!skill.join("notes.md").exists());

    // Now in place: nothing to do.
    let output = project.run(&["install", "--allow-unsigned"]);
    assert_eq!(output.code, 0, "{output:?}");
    assert!(
        output
            .stdout
            .contains("0 installed, 0 removed, 1 already in place"),
        "{}",
        output.stdout
    );

    // A removed file is named too, in the human report.
    fs_err::remove_file(skill.join("SKILL.md")).unwrap();
    let output = project.run(&["install", "--allow-unsigned"]);
    assert_eq!(output.code, 0, "{output:?}");
    assert!(
        output.stderr.contains(
            "Restored pdf-processing in claude: its files were changed by hand (SKILL.md (removed))"
        ),
        "{}",
        output.stderr
    );
    assert_eq!(fs_err::read(skill.join("SKILL.md")).unwrap(), original);
}
