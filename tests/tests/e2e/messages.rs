//! The words a new user tries, and the errors they meet first: the
//! aliases other package managers taught them, and a target folder that
//! cannot be written, named as theirs to fix.

use skillpkg_tests::{ExampleProject, project_files};

#[test]
fn uninstall_rm_and_ls_are_the_commands_users_expect() {
    let project = ExampleProject::new(&[]);
    for skill in ["pdf-processing", "csv-insights"] {
        let added = project.run(&["add", skill, "--allow-unsigned", "-q"]);
        assert_eq!(added.code, 0, "{added:?}");
    }
    let listed = project.run(&["ls", "--json"]);
    assert_eq!(listed.code, 0, "{listed:?}");
    assert!(listed.stdout.contains("csv-insights"), "{}", listed.stdout);

    let uninstalled = project.run(&["uninstall", "pdf-processing"]);
    assert_eq!(uninstalled.code, 0, "{uninstalled:?}");
    assert!(!project.root.join(".claude/skills/pdf-processing").exists());
    let removed = project.run(&["rm", "csv-insights"]);
    assert_eq!(removed.code, 0, "{removed:?}");
    assert!(!project.root.join(".claude/skills/csv-insights").exists());
    assert!(!project.manifest().contains("csv-insights"));

    // `--help` says the aliases, so they can be found.
    let help = project.run(&["--help"]);
    assert!(help.stdout.contains("uninstall"), "{}", help.stdout);
}

#[test]
fn a_target_folder_that_cannot_be_written_is_the_users_error_and_changes_nothing() {
    let project = ExampleProject::new(&[]);
    // A file where the agent's folder must be (a broken checkout, a
    // mistake): no folder can be made there.
    fs_err::create_dir_all(project.root.join(".claude")).unwrap();
    fs_err::write(project.root.join(".claude/skills"), "not a folder\n").unwrap();
    let before = project_files(&project.root);

    let output = project.run(&["add", "pdf-processing", "--allow-unsigned"]);
    assert_eq!(output.code, 1, "{output:?}");
    assert!(
        output.stderr.contains(&format!(
            "cannot write the install target `claude` ({}): a file stands where a folder must be",
            project.root.join(".claude/skills").display()
        )),
        "{}",
        output.stderr
    );
    assert!(
        output.stderr.contains("hint: make it a folder"),
        "{}",
        output.stderr
    );
    assert_eq!(project_files(&project.root), before);
}

#[test]
fn recommendations_are_one_line_at_pack_unless_verbose() {
    let project = ExampleProject::new(&[]);
    let skill = project.root.join("noisy");
    fs_err::create_dir_all(skill.join("scripts")).unwrap();
    fs_err::write(
        skill.join("SKILL.md"),
        "---\nname: noisy\ndescription: Makes noise. Use when testing.\nmetadata:\n  version: \"1.0.0\"\n---\n\n# Noisy\n\nRun the scripts.\n",
    )
    .unwrap();
    for script in ["a", "b", "c"] {
        fs_err::write(skill.join(format!("scripts/{script}.py")), "print(1)\n").unwrap();
    }
    let out = project.root.join("noisy.tgz");
    let plain = project.run(&["pack", "noisy", "-o", out.to_str().unwrap()]);
    assert_eq!(plain.code, 0, "{plain:?}");
    let lines: Vec<&str> = plain
        .stderr
        .lines()
        .filter(|line| line.contains("script-no-shebang"))
        .collect();
    assert_eq!(
        lines,
        [
            "note: 3 recommendations (script-no-shebang 3); -v or `skillpkg validate noisy` lists them"
        ],
        "{}",
        plain.stderr
    );
    let verbose = project.run(&["pack", "noisy", "-o", out.to_str().unwrap(), "-v"]);
    assert_eq!(verbose.code, 0, "{verbose:?}");
    for script in ["a", "b", "c"] {
        assert!(
            verbose.stderr.contains(&format!("scripts/{script}.py")),
            "{}",
            verbose.stderr
        );
    }
}
