//! The example material the quick start uses stays true: the example skills
//! are valid, and the checked-in example registry is exactly what
//! `examples/build-registry.sh` makes from them.

use std::path::{Path, PathBuf};

use skillpkg_tests::{TestContext, binary, run};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

#[test]
fn the_example_skills_are_valid() {
    let sandbox = TestContext::new();
    let output = run(sandbox
        .skillpkg_command()
        .arg("validate")
        .arg(workspace().join("examples/skills")));
    assert_eq!(output.code, 0, "{output:?}");
    assert!(
        output.stdout.ends_with("3 valid, 0 invalid, 2 warnings\n"),
        "{}",
        output.stdout
    );
}

#[test]
fn the_example_registry_is_what_the_build_script_makes() {
    let sandbox = TestContext::new();
    let archives = sandbox.path().join("archives");
    fs_err::create_dir_all(&archives).unwrap();
    for skill in ["commit-messages", "csv-insights", "pdf-processing"] {
        let output = run(sandbox
            .skillpkg_command()
            .arg("pack")
            .arg(workspace().join("examples/skills").join(skill))
            .arg("-o")
            .arg(&archives));
        assert_eq!(output.code, 0, "{output:?}");
    }
    // The fixed publish time of examples/build-registry.sh.
    let published = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_795_305_600);
    for entry in fs_err::read_dir(&archives).unwrap() {
        let file = fs_err::File::options()
            .write(true)
            .open(entry.unwrap().path())
            .unwrap();
        file.file().set_modified(published).unwrap();
    }
    let out = sandbox.path().join("registry");
    let output = run(std::process::Command::new(binary("skillpkg-registry"))
        .arg("build")
        .arg("--from")
        .arg(&archives)
        .arg("--out")
        .arg(&out));
    assert_eq!(output.code, 0, "{output:?}");
    let expected = skillpkg_tests::files_below(&workspace().join("examples/registry"));
    let built = skillpkg_tests::files_below(&out);
    assert_eq!(
        built.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "run examples/build-registry.sh and commit the result"
    );
    for (path, bytes) in &expected {
        assert!(
            &built[path] == bytes,
            "{} is stale: run examples/build-registry.sh and commit the result",
            path.display()
        );
    }
}

#[test]
fn add_with_a_registry_url_in_a_project_without_one_installs_and_records_it() {
    let sandbox = TestContext::new();
    let project = sandbox.path().join("project");
    fs_err::create_dir_all(&project).unwrap();
    let registry = workspace().join("examples/registry");
    let skillpkg = |args: &[&str]| {
        run(sandbox
            .skillpkg_command()
            .current_dir(&project)
            .args(args)
            .env("SKILLPKG_CONFIG_DIR", sandbox.path().join("config"))
            .env("SKILLPKG_CACHE_DIR", sandbox.path().join("cache")))
    };
    let init = skillpkg(&["init", "--target", "claude"]);
    assert_eq!(init.code, 0, "{init:?}");
    let added = skillpkg(&[
        "add",
        "csv-insights",
        "--registry",
        registry.to_str().unwrap(),
        "--allow-unsigned",
    ]);
    assert_eq!(added.code, 0, "{added:?}");
    assert!(
        project
            .join(".claude/skills/csv-insights/SKILL.md")
            .is_file()
    );
    // The project now names the registry, so a plain install elsewhere
    // (a teammate's clone) reads the same one.
    let manifest: toml::Table = fs_err::read_to_string(project.join("skills.toml"))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        manifest["registry"]["url"].as_str(),
        Some(registry.to_str().unwrap())
    );
    fs_err::remove_dir_all(project.join(".claude")).unwrap();
    let again = skillpkg(&["install", "--allow-unsigned"]);
    assert_eq!(again.code, 0, "{again:?}");
    assert!(
        project
            .join(".claude/skills/csv-insights/SKILL.md")
            .is_file()
    );
}
