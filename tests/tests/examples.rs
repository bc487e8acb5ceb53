//! The example material the quick start uses stays true: the example skills
//! are valid, and the checked-in example registry is exactly what
//! `examples/build-registry.sh` makes from them.

use std::path::{Path, PathBuf};

use skillpkg_tests::{Sandbox, binary, run};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

#[test]
fn the_example_skills_are_valid() {
    let sandbox = Sandbox::new();
    let output = run(sandbox
        .skillpkg()
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
    let sandbox = Sandbox::new();
    let archives = sandbox.path().join("archives");
    fs_err::create_dir_all(&archives).unwrap();
    for skill in ["commit-messages", "csv-insights", "pdf-processing"] {
        let output = run(sandbox
            .skillpkg()
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
