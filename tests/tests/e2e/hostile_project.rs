//! Hostile project files: a cloned repository controls `skills.toml`, the
//! target records (`.skillpkg.json`), symlinks on the way to a target and
//! leftovers in it; a static registry controls what its archives hold. None
//! of it may make skillpkg write or delete outside the project's targets,
//! take over folders it did not install, or install something that is not
//! the skill it claims to be. And `add` changes skills.toml and skills.lock
//! together or not at all, even when killed.

use std::path::{Path, PathBuf};
use std::time::Duration;

use skillpkg_tests::static_registry::Registry;
use skillpkg_tests::{Output, TestContext, run};

/// A project folder in the sandbox with `manifest` as its skills.toml.
fn project(sandbox: &TestContext, manifest: &str) -> PathBuf {
    let project = sandbox.path().join("project");
    fs_err::create_dir_all(&project).unwrap();
    fs_err::write(project.join("skills.toml"), manifest).unwrap();
    project
}

fn manifest(url: &str, targets: &str, skills: &str) -> String {
    format!("[registry]\nurl = \"{url}\"\n\n[install]\ntargets = [{targets}]\n\n[skills]\n{skills}")
}

/// A skillpkg command in `project`, with its own config and cache folders.
fn command(sandbox: &TestContext, project: &Path, args: &[&str]) -> std::process::Command {
    let mut command = sandbox.skillpkg_command();
    command
        .current_dir(project)
        .args(args)
        .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("config"))
        .env("SKILLPKG_CACHE_DIR", sandbox.path().join("cache"));
    command
}

fn skillpkg(sandbox: &TestContext, project: &Path, args: &[&str]) -> Output {
    run(&mut command(sandbox, project, args))
}

/// A registry with `alpha@1.0.0`, and a project that wants it in `claude`.
fn alpha_project(sandbox: &TestContext) -> (Registry, PathBuf) {
    let mut registry = Registry::new(sandbox);
    registry.publish(sandbox, "alpha", "1.0.0", "alpha one");
    let project = project(
        sandbox,
        &manifest(&registry.url(), "\"claude\"", "alpha = \"1\"\n"),
    );
    (registry, project)
}

/// A folder of someone else's, with a file in it.
fn victim(path: &Path) {
    fs_err::create_dir_all(path).unwrap();
    fs_err::write(path.join("precious.txt"), "not skillpkg's").unwrap();
}

fn assert_victim_intact(path: &Path) {
    assert_eq!(
        fs_err::read_to_string(path.join("precious.txt"))
            .ok()
            .as_deref(),
        Some("not skillpkg's"),
        "{} was touched",
        path.display()
    );
}

#[test]
fn a_target_record_naming_paths_cannot_make_skillpkg_delete_folders() {
    let sandbox = TestContext::new();
    let (_registry, project) = alpha_project(&sandbox);
    let absolute = sandbox.path().join("absolute-victim");
    let climbing = sandbox.path().join("victim");
    victim(&absolute);
    victim(&climbing);
    let record = serde_json::json!({
        "v": 1,
        "skills": {
            absolute.to_str().unwrap(): {"version": "1.0.0", "tree": "h1:x"},
            "../../../victim": {"version": "1.0.0", "tree": "h1:x"},
        }
    });
    let record_path = project.join(".claude/skills/.skillpkg.json");
    fs_err::create_dir_all(record_path.parent().unwrap()).unwrap();
    fs_err::write(&record_path, record.to_string()).unwrap();
    let before = skillpkg_tests::project_files(&project);

    let mut said = Vec::new();
    for args in [
        &["install"][..],
        &["add", "alpha"],
        &["update"],
        &["remove", "alpha"],
    ] {
        let output = skillpkg(&sandbox, &project, args);
        assert_eq!(output.code, 1, "{args:?}: {output:?}");
        said.push(sandbox.redact(&output.stderr));
        assert_victim_intact(&absolute);
        assert_victim_intact(&climbing);
        assert_eq!(
            skillpkg_tests::project_files(&project),
            before,
            "{args:?} changed the project"
        );
    }
    insta::assert_snapshot!(said.join("---\n"), @"
    error: [HOME]/project/.claude/skills/.skillpkg.json is corrupt or was not written by skillpkg
      Caused by: the name contains '.' at position 1; only lowercase letters a-z, digits and `-` are allowed at line 1 column 28
    hint: check where it came from (a repository should not commit it), delete it, and run `skillpkg install --force` to take the folders over again
    ---
          Adding alpha
    error: [HOME]/project/.claude/skills/.skillpkg.json is corrupt or was not written by skillpkg
      Caused by: the name contains '.' at position 1; only lowercase letters a-z, digits and `-` are allowed at line 1 column 28
    hint: check where it came from (a repository should not commit it), delete it, and run `skillpkg install --force` to take the folders over again
    ---
    error: [HOME]/project/.claude/skills/.skillpkg.json is corrupt or was not written by skillpkg
      Caused by: the name contains '.' at position 1; only lowercase letters a-z, digits and `-` are allowed at line 1 column 28
    hint: check where it came from (a repository should not commit it), delete it, and run `skillpkg install --force` to take the folders over again
    ---
    error: [HOME]/project/.claude/skills/.skillpkg.json is corrupt or was not written by skillpkg
      Caused by: the name contains '.' at position 1; only lowercase letters a-z, digits and `-` are allowed at line 1 column 28
    hint: check where it came from (a repository should not commit it), delete it, and run `skillpkg install --force` to take the folders over again
    ");
}

#[test]
fn a_target_record_cannot_claim_a_folder_the_user_made() {
    let sandbox = TestContext::new();
    let mut registry = Registry::new(&sandbox);
    registry.publish(&sandbox, "alpha", "1.0.0", "alpha one");
    registry.publish(&sandbox, "helper", "1.0.0", "the published helper");
    let project = project(
        &sandbox,
        &manifest(&registry.url(), "\"claude\"", "alpha = \"1\"\n"),
    );
    // The repository's record claims `helper`, which the user made by hand.
    let handmade = project.join(".claude/skills/helper");
    victim(&handmade);
    let claim = serde_json::json!({
        "v": 1,
        "skills": { "helper": {"version": "1.0.0", "tree": "h1:0000000000000000000000000000000000000000000000000000000000000000"} }
    });
    fs_err::write(
        project.join(".claude/skills/.skillpkg.json"),
        claim.to_string(),
    )
    .unwrap();

    // Not in skills.toml, so the record calls it stale: it is left alone.
    let output = skillpkg(&sandbox, &project, &["install"]);
    assert_eq!(output.code, 0, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    warning: left [HOME]/project/.claude/skills/helper in place: its files changed since skillpkg installed it, so it is no longer managed (delete it yourself, or pass --force)
         Audited alpha 1.0.0: clean
       Installed alpha 1.0.0 into claude
    ");
    assert_victim_intact(&handmade);
    let record = fs_err::read_to_string(project.join(".claude/skills/.skillpkg.json")).unwrap();
    assert!(!record.contains("helper"), "still claimed: {record}");

    // Claimed again and asked for: replacing it needs --force.
    let record_path = project.join(".claude/skills/.skillpkg.json");
    let mut record: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&record_path).unwrap()).unwrap();
    record["skills"]["helper"] = claim["skills"]["helper"].clone();
    fs_err::write(&record_path, record.to_string()).unwrap();
    let before = skillpkg_tests::project_files(&project);
    let output = skillpkg(&sandbox, &project, &["add", "helper"]);
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
          Adding helper
    error: [HOME]/project/.claude/skills/helper was changed since skillpkg installed it (or was never installed by it: its files are not the ones recorded in [HOME]/project/.claude/skills/.skillpkg.json)
    hint: `skillpkg verify` shows what changed; move the folder away to keep your changes, or pass --force to replace it
    ");
    assert_victim_intact(&handmade);
    assert_eq!(
        skillpkg_tests::project_files(&project),
        before,
        "a refused add changed the project"
    );

    let output = skillpkg(&sandbox, &project, &["add", "helper", "--force"]);
    assert_eq!(output.code, 0, "{output:?}");
    let installed = fs_err::read_to_string(handmade.join("SKILL.md")).unwrap();
    assert!(installed.contains("the published helper"), "{installed}");
}

#[test]
fn an_edited_installed_skill_is_neither_replaced_nor_removed_without_force() {
    let sandbox = TestContext::new();
    let mut registry = Registry::new(&sandbox);
    registry.publish(&sandbox, "alpha", "1.0.0", "alpha one");
    registry.publish(&sandbox, "alpha", "1.1.0", "alpha two");
    let project = project(
        &sandbox,
        &manifest(&registry.url(), "\"claude\"", "alpha = \"=1.0.0\"\n"),
    );
    assert_eq!(skillpkg(&sandbox, &project, &["install"]).code, 0);
    let notes = project.join(".claude/skills/alpha/notes.md");
    fs_err::write(&notes, "my own notes").unwrap();

    let output = skillpkg(&sandbox, &project, &["add", "alpha@^1.1"]);
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
          Adding alpha ^1.1
    error: [HOME]/project/.claude/skills/alpha was changed since skillpkg installed it (or was never installed by it: its files are not the ones recorded in [HOME]/project/.claude/skills/.skillpkg.json)
    hint: `skillpkg verify` shows what changed; move the folder away to keep your changes, or pass --force to replace it
    ");
    assert_eq!(fs_err::read_to_string(&notes).unwrap(), "my own notes");

    let output = skillpkg(&sandbox, &project, &["remove", "alpha"]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(fs_err::read_to_string(&notes).unwrap(), "my own notes");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"warning: left [HOME]/project/.claude/skills/alpha in place: its files changed since skillpkg installed it, so it is no longer managed (delete it yourself, or pass --force)");
}

#[test]
fn a_target_outside_the_project_needs_the_users_say_so() {
    let sandbox = TestContext::new();
    let mut registry = Registry::new(&sandbox);
    registry.publish(&sandbox, "alpha", "1.0.0", "alpha one");
    let outside = sandbox.path().join("outside");
    let absolute = sandbox.path().join("absolute");
    let home_skills = sandbox.path().join("home/.claude");
    fs_err::create_dir_all(home_skills.join("skills")).unwrap();

    let mut said = Vec::new();
    for targets in [
        "\"../outside\"".to_owned(),
        format!("\"{}\"", absolute.display()),
        "\"./skills/../../outside\"".to_owned(),
    ] {
        let project = project(
            &sandbox,
            &manifest(&registry.url(), &targets, "alpha = \"1\"\n"),
        );
        let output = skillpkg(&sandbox, &project, &["install"]);
        assert_eq!(output.code, 1, "{targets}: {output:?}");
        said.push(sandbox.redact(&output.stderr));
        let output = skillpkg(&sandbox, &project, &["install"]);
        said.push(sandbox.redact(&output.stderr));
        assert!(
            !outside.exists() && !absolute.exists(),
            "{targets}: written"
        );
        assert!(!project.join("skills.lock").exists(), "{targets}: locked");
    }
    insta::assert_snapshot!(said.join("---\n"), @"
    error: the install target `../outside` is outside the project: `../outside` climbs out with `..`
    hint: a cloned skills.toml or a symlink in the repository can point a target anywhere; if you meant it, pass --allow-external-targets
    ---
    error: the install target `../outside` is outside the project: `../outside` climbs out with `..`
    hint: a cloned skills.toml or a symlink in the repository can point a target anywhere; if you meant it, pass --allow-external-targets
    ---
    error: the install target `[HOME]/absolute` is outside the project: [HOME]/absolute is not below [HOME]/project
    hint: a cloned skills.toml or a symlink in the repository can point a target anywhere; if you meant it, pass --allow-external-targets
    ---
    error: the install target `[HOME]/absolute` is outside the project: [HOME]/absolute is not below [HOME]/project
    hint: a cloned skills.toml or a symlink in the repository can point a target anywhere; if you meant it, pass --allow-external-targets
    ---
    error: the install target `./skills/../../outside` is outside the project: `skills/../../outside` climbs out with `..`
    hint: a cloned skills.toml or a symlink in the repository can point a target anywhere; if you meant it, pass --allow-external-targets
    ---
    error: the install target `./skills/../../outside` is outside the project: `skills/../../outside` climbs out with `..`
    hint: a cloned skills.toml or a symlink in the repository can point a target anywhere; if you meant it, pass --allow-external-targets
    ");

    // A symlink committed in the repository that leads to the user's own folder.
    let project = project(
        &sandbox,
        &manifest(&registry.url(), "\"claude\"", "alpha = \"1\"\n"),
    );
    std::os::unix::fs::symlink(&home_skills, project.join(".claude")).unwrap();
    let output = skillpkg(&sandbox, &project, &["install"]);
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: the install target `claude` is outside the project: [HOME]/project/.claude is a symlink to [HOME]/home/.claude
    hint: a cloned skills.toml or a symlink in the repository can point a target anywhere; if you meant it, pass --allow-external-targets
    ");
    assert!(
        fs_err::read_dir(home_skills.join("skills"))
            .unwrap()
            .next()
            .is_none(),
        "the user's folder was written"
    );
    fs_err::remove_file(project.join(".claude")).unwrap();

    // The user's own choice: a flag, or a target on the command line.
    fs_err::write(
        project.join("skills.toml"),
        manifest(&registry.url(), "\"../outside\"", "alpha = \"1\"\n"),
    )
    .unwrap();
    let output = skillpkg(&sandbox, &project, &["install", "--allow-external-targets"]);
    assert_eq!(output.code, 0, "{output:?}");
    assert!(outside.join("alpha/SKILL.md").is_file());
    let output = skillpkg(
        &sandbox,
        &project,
        &[
            "install",
            "--target",
            absolute.to_str().unwrap(),
            "--allow-external-targets",
        ],
    );
    assert_eq!(output.code, 0, "{output:?}");
    assert!(absolute.join("alpha/SKILL.md").is_file());
}

#[test]
fn an_archive_that_is_not_the_skill_it_claims_is_refused_at_install() {
    let sandbox = TestContext::new();
    let mut registry = Registry::new(&sandbox);
    // No SKILL.md at all.
    registry.publish_files("empty", "1.0.0", &[("README.md", "not a skill\n")]);
    // A SKILL.md that names another skill.
    let dir = sandbox.skill("src/imposter/other", "other", "", "# other\n");
    registry.publish_folder(&dir, "imposter", "1.0.0");
    let project = project(&sandbox, &manifest(&registry.url(), "\"claude\"", ""));
    let before = skillpkg_tests::project_files(&project);

    let mut said = Vec::new();
    for name in ["empty", "imposter"] {
        let output = skillpkg(&sandbox, &project, &["add", name]);
        assert_eq!(output.code, 1, "{name}: {output:?}");
        said.push(sandbox.redact(&output.stderr));
        assert_eq!(
            skillpkg_tests::project_files(&project),
            before,
            "{name}: the project changed"
        );
        assert!(!project.join(".claude/skills").join(name).exists());
    }
    insta::assert_snapshot!(said.join("---\n"), @"
          Adding empty
    error: cannot unpack empty@1.0.0
      Caused by: the archive has no `SKILL.md` file at its root
    hint: the registry serves an archive that skillpkg refuses to unpack; nothing was installed; report it to the registry's operator or the skill's publisher
    ---
          Adding imposter
    error: imposter@1.0.0 is not a valid skill: its SKILL.md names the skill `other`, not `imposter`
    hint: the registry serves an archive that was never validated; report it to the registry's operator or the skill's publisher
    ");
}

#[test]
fn versions_that_differ_only_in_build_metadata_are_refused_not_confused() {
    let sandbox = TestContext::new();
    let mut registry = Registry::new(&sandbox);
    registry.publish(&sandbox, "alpha", "1.0.0", "plain");
    registry.publish(&sandbox, "alpha", "1.0.0+build2", "build two");
    let project = project(&sandbox, &manifest(&registry.url(), "\"claude\"", ""));
    let before = skillpkg_tests::project_files(&project);
    let output = skillpkg(&sandbox, &project, &["add", "alpha@=1.0.0"]);
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
          Adding alpha =1.0.0
    error: the index of `alpha` in registry `default` lists both 1.0.0 and 1.0.0+build2, which are the same version
    hint: versions that differ only in build metadata are one version, and a registry must refuse the second; report it to the registry's operator
    ");
    assert_eq!(skillpkg_tests::project_files(&project), before);
}

#[test]
fn a_failed_add_leaves_skills_toml_as_it_was() {
    let sandbox = TestContext::new();
    let mut registry = Registry::new(&sandbox);
    registry.publish(&sandbox, "alpha", "1.0.0", "alpha one");
    let project = project(&sandbox, &manifest(&registry.url(), "\"claude\"", ""));
    let before = skillpkg_tests::project_files(&project);
    let output = skillpkg(&sandbox, &project, &["add", "no-such-skill"]);
    assert_eq!(output.code, 1, "{output:?}");
    assert_eq!(
        skillpkg_tests::project_files(&project),
        before,
        "skills.toml changed"
    );
}

#[test]
fn a_killed_add_or_remove_leaves_skills_toml_and_skills_lock_in_step() {
    let sandbox = TestContext::new();
    let mut registry = Registry::new(&sandbox);
    for index in 0..6 {
        let name = format!("skill-{index}");
        let dir = sandbox.skill(
            &format!("src/{name}"),
            &name,
            "",
            &format!("# {name}\n{}\n", "instructions ".repeat(2000)),
        );
        registry.publish_folder(&dir, &name, "1.0.0");
    }
    let project = project(
        &sandbox,
        &manifest(
            &registry.url(),
            "\"claude\", \"agents\"",
            "skill-0 = \"1\"\n",
        ),
    );
    assert_eq!(skillpkg(&sandbox, &project, &["install"]).code, 0);

    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut killed = 0;
    for round in 0..40 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let names: Vec<String> = (1..6).map(|index| format!("skill-{index}")).collect();
        let mut args = vec![if round % 2 == 0 { "add" } else { "remove" }];
        args.extend(names.iter().map(String::as_str));
        let mut child = command(&sandbox, &project, &args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(state % 90));
        if child.try_wait().unwrap().is_none() {
            killed += 1;
        }
        let _ = child.kill();
        let _ = child.wait();

        // Whatever the kill interrupted, the lock matches the manifest.
        let output = skillpkg(&sandbox, &project, &["install", "--locked"]);
        assert_eq!(output.code, 0, "round {round}: {output:?}");
        let manifest = fs_err::read_to_string(project.join("skills.toml")).unwrap();
        let lock = fs_err::read_to_string(project.join("skills.lock")).unwrap();
        for name in &names {
            assert_eq!(
                manifest.contains(&format!("{name} =")),
                lock.contains(&format!("name = \"{name}\"")),
                "round {round}: skills.toml and skills.lock disagree on {name}:\n{manifest}\n{lock}"
            );
        }
        // Leave the round in a known state for the next one.
        let _ = skillpkg(&sandbox, &project, &args);
    }
    assert!(killed >= 8, "only {killed} of 40 kills landed mid-command");
}

#[test]
fn a_project_lock_symlink_cannot_make_skillpkg_create_a_file_elsewhere() {
    let sandbox = TestContext::new();
    let (_registry, project) = alpha_project(&sandbox);
    let planted = sandbox.path().join("autostart/evil.desktop");
    fs_err::create_dir_all(planted.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&planted, project.join(".skillpkg-lock")).unwrap();
    let output = skillpkg(&sandbox, &project, &["install"]);
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: cannot open the project lock [HOME]/project/.skillpkg-lock
      Caused by: failed to open file `[HOME]/project/.skillpkg-lock`: Too many levels of symbolic links (os error 40)
    hint: if it is a symlink, delete it: skillpkg creates it as an empty file
    ");
    assert!(
        !planted.exists(),
        "skillpkg created a file through the symlink"
    );
    assert!(!project.join(".claude").exists());
}
