//! The benchmarks of bench/ start: each script's `--help` runs with the
//! tests' Python. A script named like a module of Python's standard library
//! (`collections.py`) would shadow it for every script beside it, which
//! then fails at its first import.

use std::path::Path;

#[test]
fn every_bench_script_starts_and_says_how_to_run_it() {
    let bench = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench");
    let python = skillpkg_tests::mcp_python();
    let mut scripts: Vec<_> = fs_err::read_dir(&bench)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "py"))
        .collect();
    scripts.sort();
    assert!(scripts.len() >= 10, "{scripts:?}");
    for script in scripts {
        let output = std::process::Command::new(&python)
            .arg(&script)
            .arg("--help")
            .current_dir(&bench)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let name = script.file_name().unwrap().to_string_lossy();
        if name == "benchkit.py" {
            // The library the others import: it runs nothing.
            assert!(output.status.success(), "{name}: {output:?}");
            continue;
        }
        assert!(
            output.status.success() && stdout.contains("usage"),
            "{name} does not start: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}
