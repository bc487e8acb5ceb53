//! Gathering provenance for `publish --provenance`: the git repository,
//! commit and state of the skill folder, and the CI run, if any.

use std::path::Path;
use std::process::Command;

use skillpkg_index::signing::SourceInfo;

use crate::env_vars;
use crate::error::UserError;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// Returns where the skill in `dir` comes from. Refuses a work tree with
/// changes that are not committed unless `allow_dirty`: provenance that
/// names a commit the archive was not built from would mislead.
pub fn gather(dir: &Path, allow_dirty: bool) -> anyhow::Result<SourceInfo> {
    let commit = git(dir, &["rev-parse", "HEAD"]).ok_or_else(|| {
        UserError::new(format!("{} is not in a git repository with a commit", dir.display()))
            .with_hint("provenance names the commit the skill was built from: commit it, or publish without --provenance")
    })?;
    let repository = git(dir, &["remote", "get-url", "origin"]).map(|url| {
        if url.starts_with("git+") {
            url
        } else {
            format!("git+{url}")
        }
    });
    // Changes to the skill folder only: the rest of the repository does not
    // go into the archive.
    let dirty =
        git(dir, &["status", "--porcelain", "--", "."]).is_none_or(|status| !status.is_empty());
    if dirty && !allow_dirty {
        return Err(UserError::new(format!("{} has changes that are not committed", dir.display()))
            .with_hint("commit them so the provenance names what was published, or pass --allow-dirty (the provenance then says the tree was dirty)")
            .into());
    }
    let (builder, ci_run) = if var(env_vars::GITHUB_ACTIONS).as_deref() == Some("true") {
        let run = match (
            var(env_vars::GITHUB_SERVER_URL),
            var(env_vars::GITHUB_REPOSITORY),
            var(env_vars::GITHUB_RUN_ID),
        ) {
            (Some(server), Some(repository), Some(run)) => Some(format!(
                "{server}/{repository}/actions/runs/{run}/attempts/{}",
                var(env_vars::GITHUB_RUN_ATTEMPT).unwrap_or_else(|| "1".into())
            )),
            _ => None,
        };
        ("https://github.com/actions/runner".to_owned(), run)
    } else if var(env_vars::CI).is_some() {
        ("ci".to_owned(), None)
    } else {
        (
            format!("skillpkg/{} (local)", env!("CARGO_PKG_VERSION")),
            None,
        )
    };
    Ok(SourceInfo {
        repository,
        commit: Some(commit),
        dirty,
        builder,
        ci_run,
    })
}
