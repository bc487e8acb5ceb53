//! Reading what a skill archive is: its name and version, from its own
//! SKILL.md (unpacked with the hardened unpacker into a temporary folder).

use std::path::Path;

use anyhow::Context as _;
use skillpkg_index::archive::{self, Limits};
use skillpkg_index::skill::{self, SkillName, ValidateOptions};

use crate::error::UserError;

/// A skill archive's identity.
#[derive(Debug)]
pub struct Identity {
    pub name: SkillName,
    /// The frontmatter's version, if it has one.
    pub declared_version: Option<semver::Version>,
}

/// Unpacks `tarball` into a temporary folder and reads its SKILL.md.
pub fn identify(tarball: &[u8], file: &Path) -> anyhow::Result<Identity> {
    let temp = tempfile::tempdir().context("cannot create a temporary folder")?;
    let target = temp.path().join("skill");
    archive::unpack(tarball, &target, &Limits::default()).map_err(|error| {
        UserError::new(format!("{} is not a skill archive", file.display())).with_source(error)
    })?;
    let report = skill::validate_skill(&target, &ValidateOptions::default());
    let frontmatter = report.frontmatter.ok_or_else(|| {
        UserError::new(format!("the skill in {} is invalid", file.display()))
            .with_hint("unpack it and run `skillpkg validate` on it to see why")
    })?;
    Ok(Identity {
        name: frontmatter.name,
        declared_version: frontmatter.version,
    })
}

/// Returns the version of an archive: its frontmatter's, else the one in its
/// file name `<name>-<version>.tgz`.
pub fn version(identity: &Identity, file: &Path) -> anyhow::Result<semver::Version> {
    if let Some(version) = &identity.declared_version {
        return Ok(version.clone());
    }
    let from_name = file
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.strip_prefix(&format!("{}-", identity.name)))
        .and_then(|rest| rest.strip_suffix(".tgz"))
        .and_then(|version| version.parse().ok());
    from_name.ok_or_else(|| {
        UserError::new(format!("cannot tell the version of {}", file.display()))
            .with_hint(format!("its SKILL.md has no version; name the file `{}-<version>.tgz`, as `skillpkg pack` does", identity.name))
            .into()
    })
}
