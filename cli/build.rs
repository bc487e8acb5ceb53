//! Puts the commit the binary was built from into `skillpkg --version`
//! (`skillpkg 0.1.0 (3f2a9c1d7e4b 2026-11-26)`), when it is built from a git
//! checkout with `git` at hand; a build from a source archive says the
//! version alone. `SKILLPKG_BUILD_COMMIT` (a hash and a date) overrides it,
//! for packagers who build outside the repository.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=SKILLPKG_BUILD_COMMIT");
    let version = env!("CARGO_PKG_VERSION");
    let commit = std::env::var("SKILLPKG_BUILD_COMMIT")
        .ok()
        .filter(|commit| !commit.trim().is_empty())
        .or_else(commit_from_git);
    let long = match commit {
        Some(commit) => format!("{version} ({})", commit.trim()),
        None => version.to_owned(),
    };
    println!("cargo:rustc-env=SKILLPKG_LONG_VERSION={long}");
}

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git").args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    Some(text.trim().to_owned()).filter(|text| !text.is_empty())
}

/// The checkout's commit and its date, and the files to watch so that the
/// next commit builds again.
fn commit_from_git() -> Option<String> {
    let git_dir = PathBuf::from(git(&["rev-parse", "--absolute-git-dir"])?);
    println!("cargo:rerun-if-changed={}", git_dir.join("HEAD").display());
    println!(
        "cargo:rerun-if-changed={}",
        git_dir.join("packed-refs").display()
    );
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        println!(
            "cargo:rerun-if-changed={}",
            git_dir.join(reference).display()
        );
    }
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    let date = git(&["log", "-1", "--format=%cs", "HEAD"])?;
    Some(format!("{commit} {date}"))
}
