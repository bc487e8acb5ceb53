//! The fuzz targets (`fuzz/`, docs/contributing.md#fuzzing) in the normal
//! test run: they build, every input that once crashed one is replayed, and
//! each fuzzes for a few seconds from its seeds.
//!
//! This needs cargo-fuzz (`cargo install cargo-fuzz --locked`) and fails,
//! never skips, without it: a target that no longer builds or a regression
//! that comes back must not pass unseen. The targets build into
//! `fuzz/target`, apart from the workspace's `target`, so the two builds
//! never wait on each other's lock or undo each other's flags.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// Seconds each target fuzzes: enough to mutate the seeds a few thousand
/// times, short enough for CI.
const SECONDS_PER_TARGET: u32 = 10;

/// AddressSanitizer's options for the targets: its check that no two
/// globals share a name is off, since the tree-sitter grammars' generated
/// C has same-named `static` tables in one file (`map` in
/// tree-sitter-typescript), which it takes for a violation of C++'s one
/// definition rule; every other check stays on.
const ASAN_OPTIONS: &str = "detect_odr_violation=0";

/// Returns the repository's root.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
        .to_owned()
}

/// Returns true if and only if `variable`, set by the outer `cargo test` or
/// its caller, would change the fuzz build: where it goes, its flags, or,
/// for the variables cargo sets for a test (`CARGO_MANIFEST_DIR`,
/// `CARGO_PKG_*`), the fingerprints of build scripts that watch them, so
/// that the build here and one from a shell would keep rebuilding each
/// other's dependencies.
fn leaks_into_the_fuzz_build(variable: &str) -> bool {
    variable.starts_with("CARGO_PKG_")
        || [
            "CARGO_MANIFEST_DIR",
            "CARGO_MANIFEST_PATH",
            "CARGO_CRATE_NAME",
            "CARGO_PRIMARY_PACKAGE",
            "CARGO_TARGET_TMPDIR",
            "CARGO_RUSTC_CURRENT_DIR",
            "CARGO_TARGET_DIR",
            "CARGO_BUILD_TARGET_DIR",
            "CARGO_BUILD_TARGET",
            "CARGO_BUILD_RUSTFLAGS",
            "CARGO_ENCODED_RUSTFLAGS",
            "RUSTFLAGS",
            "OUT_DIR",
        ]
        .contains(&variable)
}

/// A command for `program`, run from the repository's root, without the
/// variables that would change the fuzz build.
fn command(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new(program);
    for (variable, _) in std::env::vars_os() {
        if variable.to_str().is_some_and(leaks_into_the_fuzz_build) {
            command.env_remove(variable);
        }
    }
    command.current_dir(repository());
    command
}

fn cargo() -> Command {
    command(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// Builds every target once for all the tests of this file, and returns the
/// folder that holds the binaries.
fn built_targets() -> &'static Path {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(|| {
        let installed = cargo()
            .args(["fuzz", "--version"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        assert!(
            installed,
            "cargo-fuzz is not installed: run `cargo install cargo-fuzz --locked` \
             (.ci/run does); see docs/contributing.md#fuzzing"
        );
        // cargo-fuzz passes nightly-only flags (-Z sanitizer, -C passes);
        // RUSTC_BOOTSTRAP lets this stable toolchain accept them.
        let output = cargo()
            .args(["fuzz", "build"])
            .env("RUSTC_BOOTSTRAP", "1")
            .output()
            .expect("cargo fuzz build runs");
        assert!(
            output.status.success(),
            "cargo fuzz build failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
        let version = command(rustc).arg("-vV").output().expect("rustc -vV runs");
        let version = String::from_utf8(version.stdout).expect("rustc -vV prints UTF-8");
        let host = version
            .lines()
            .find_map(|line| line.strip_prefix("host: "))
            .expect("rustc -vV names the host");
        repository().join("fuzz/target").join(host).join("release")
    })
}

/// Replays `target`'s regressions, then fuzzes it from its seeds for
/// [`SECONDS_PER_TARGET`] with `dictionary`.
fn check_target(target: &str, dictionary: Option<&str>) {
    let binary = built_targets().join(target);
    let fuzz = repository().join("fuzz");
    // The targets keep a scratch folder under $TMPDIR for their whole run;
    // this one goes when the test ends.
    let scratch = tempfile::tempdir().expect("a temporary folder");

    let regressions = fuzz.join("regressions").join(target);
    let mut inputs: Vec<PathBuf> = match fs_err::read_dir(&regressions) {
        Ok(entries) => entries
            .map(|entry| entry.expect("regressions are readable").path())
            .collect(),
        Err(_) => Vec::new(),
    };
    inputs.sort();
    if !inputs.is_empty() {
        // Given files, libFuzzer runs each once and stops at the first crash.
        let output = command(&binary)
            .env("TMPDIR", scratch.path())
            .env("ASAN_OPTIONS", ASAN_OPTIONS)
            .args(&inputs)
            .output()
            .expect("the fuzz target runs");
        assert!(
            output.status.success(),
            "a regression of {target} crashes again:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }

    // New inputs go to the first folder, a temporary one; the seeds and
    // regressions are read from the others and never written.
    let corpus = tempfile::tempdir().expect("a temporary corpus");
    let artifacts = fuzz.join("artifacts").join(target);
    fs_err::create_dir_all(&artifacts).expect("fuzz/artifacts can be made");
    let mut run = command(&binary);
    run.env("TMPDIR", scratch.path())
        .env("ASAN_OPTIONS", ASAN_OPTIONS)
        .arg(corpus.path())
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .arg(format!("-max_total_time={SECONDS_PER_TARGET}"))
        .arg("-rss_limit_mb=2048")
        .arg("-timeout=30");
    for folder in [fuzz.join("seeds").join(target), regressions] {
        if folder.is_dir() {
            run.arg(folder);
        }
    }
    if let Some(dictionary) = dictionary {
        run.arg(format!(
            "-dict={}",
            fuzz.join("dictionaries").join(dictionary).display()
        ));
    }
    let output = run.output().expect("the fuzz target runs");
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{target} crashed; the input is in fuzz/artifacts/{target} \
         (see docs/contributing.md#reproducing-and-minimising-a-crash):\n{log}"
    );
    assert!(
        log.contains("INITED") && log.contains("Done"),
        "{target} did not fuzz:\n{log}"
    );
}

#[test]
fn skill_md_parses_and_validates_without_crashing() {
    check_target("skill_md", Some("skill_md.dict"));
}

#[test]
fn unpack_raw_refuses_hostile_tarballs_without_writing_outside() {
    check_target("unpack_raw", Some("archive.dict"));
}

#[test]
fn unpack_entries_refuses_hostile_entries_without_writing_outside() {
    check_target("unpack_entries", None);
}

#[test]
fn index_files_and_config_parse_and_round_trip() {
    check_target("index_files", Some("json.dict"));
}

#[test]
fn signed_metadata_parses_and_verifies_without_crashing() {
    check_target("signed_metadata", Some("json.dict"));
}

#[test]
fn minisign_keys_parse_and_round_trip() {
    check_target("minisign_keys", Some("minisign.dict"));
}

#[test]
fn minisign_signatures_parse_round_trip_and_verify() {
    check_target("minisign_signature", Some("minisign.dict"));
}

#[test]
fn lockfile_parses_and_round_trips() {
    check_target("lockfile", Some("toml.dict"));
}

#[test]
fn the_audit_reads_any_script_or_document_without_crashing() {
    check_target("audit_script", None);
}

#[test]
fn manifest_parses_and_survives_edits() {
    check_target("manifest", Some("toml.dict"));
}
