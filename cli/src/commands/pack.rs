//! `skillpkg pack`: validate a skill and write its deterministic tarball.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::json;
use skillpkg_index::archive::{self, Limits, PackedSkill, human_bytes, tree_hash::hex};
use skillpkg_index::skill::{self, ValidateOptions};

use crate::args::PackArgs;
use crate::printer::Printer;
use crate::{ExitStatus, UserError, render};

pub fn run(args: &PackArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let dir = &args.path;
    if !dir.is_dir() {
        return Err(
            UserError::new(format!("`{}` is not a folder", dir.display()))
                .with_hint("give the path of the skill folder, the one that holds SKILL.md")
                .into(),
        );
    }
    let report = skill::validate_skill(dir, &ValidateOptions::for_folder(dir));
    if !args.json {
        for diagnostic in &report.diagnostics {
            printer.diagnostic(&render::diagnostic(diagnostic, dir));
        }
    }
    let Some(frontmatter) = report.frontmatter.clone() else {
        let errors = report.errors();
        let plural = if errors == 1 { "" } else { "s" };
        return Err(UserError::new(format!(
            "cannot pack `{}`: the skill has {errors} error{plural}",
            dir.display()
        ))
        .with_hint(format!(
            "fix them; `skillpkg validate {}` lists them",
            dir.display()
        ))
        .into());
    };
    let version = match args.version.clone().or(frontmatter.version.clone()) {
        Some(version) => version,
        None => {
            let found = frontmatter
                .metadata
                .iter()
                .find(|(key, _)| key == "version");
            let hint = match found {
                Some((_, text)) => format!(
                    "`metadata.version` is {text:?}, which is not a semantic version: write it as MAJOR.MINOR.PATCH, like `1.0.0`"
                ),
                None => {
                    "add `version: 1.0.0` to the frontmatter, or pass `--version 1.0.0`".to_owned()
                }
            };
            return Err(UserError::new(format!(
                "cannot pack `{}`: the skill has no version",
                dir.display()
            ))
            .with_hint(hint)
            .into());
        }
    };
    let name = frontmatter.name;
    let packed = archive::pack_dir(dir, name, version, &Limits::default())
        .with_context(|| format!("cannot pack `{}`", dir.display()))?;

    let output = output_path(args.output.as_deref(), &packed.file_name());
    write_atomically(&output, &packed.tarball)?;
    if is_inside(&output, dir) {
        printer.diagnostic(&format!(
            "warning: the tarball is inside the skill folder; add `*.tgz` to {}/.skillignore so the next pack leaves it out",
            dir.display()
        ));
    }

    if args.json {
        printer.json(&packed_json(&packed, &output, &report));
    } else {
        printer.status(
            "Packed",
            &format!("{} {} to {}", packed.name, packed.version, output.display()),
        );
        printer.result(&packed_text(&packed, &output));
    }
    Ok(ExitStatus::Success)
}

fn output_path(output: Option<&Path>, file_name: &str) -> PathBuf {
    match output {
        Some(path) if path.is_dir() => path.join(file_name),
        Some(path) => path.to_owned(),
        None => PathBuf::from(file_name),
    }
}

/// Writes `bytes` to a temporary file beside `path` and renames it into place,
/// so a reader never sees half a tarball and a failure leaves no file.
fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let parent = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(parent)
        .with_context(|| format!("cannot write into {}", parent.display()))?;
    file.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    file.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

fn is_inside(file: &Path, dir: &Path) -> bool {
    match (std::path::absolute(file), fs_err::canonicalize(dir)) {
        (Ok(file), Ok(dir)) => file
            .parent()
            .and_then(|parent| fs_err::canonicalize(parent).ok())
            .is_some_and(|parent| parent.starts_with(dir)),
        _ => false,
    }
}

fn packed_text(packed: &PackedSkill, output: &Path) -> String {
    let tarball_bytes = packed.tarball.len() as u64;
    [
        format!("name:     {}", packed.name),
        format!("version:  {}", packed.version),
        format!("files:    {}", packed.files.len()),
        format!(
            "unpacked: {} ({} bytes)",
            human_bytes(packed.unpacked_bytes),
            packed.unpacked_bytes
        ),
        format!(
            "tarball:  {} ({tarball_bytes} bytes)",
            human_bytes(tarball_bytes)
        ),
        format!("sha256:   sha256:{}", hex(&packed.sha256)),
        format!("tree:     {}", packed.tree),
        format!("path:     {}", output.display()),
    ]
    .join("\n")
}

fn packed_json(
    packed: &PackedSkill,
    output: &Path,
    report: &skill::SkillReport,
) -> serde_json::Value {
    json!({
        "name": packed.name,
        "version": packed.version.to_string(),
        "path": output,
        "files": packed.files.len(),
        "directories": packed.directories,
        "unpacked_size": packed.unpacked_bytes,
        "tarball_size": packed.tarball.len(),
        "sha256": format!("sha256:{}", hex(&packed.sha256)),
        "tree": packed.tree.as_str(),
        "contents": packed.files.iter().map(|file| json!({ "path": file.path, "sha256": hex(&file.sha256) })).collect::<Vec<_>>(),
        "warnings": report.diagnostics,
    })
}
