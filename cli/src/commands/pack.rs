//! `skillpkg pack`: validate a skill and write its deterministic tarball.

use skillpkg_index::fs::write_atomic;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::json;
use skillpkg_index::archive::{self, Limits, PackedSkill, human_bytes, tree_hash::hex};
use skillpkg_index::name::SkillName;
use skillpkg_index::skill::{self, Frontmatter, SkillReport, ValidateOptions};

use crate::args::PackArgs;
use crate::commands::validate::report_json;
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::render;

pub fn run(args: &PackArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let dir = &args.path;
    let Packed {
        skill: packed,
        report,
    } = validate_and_pack(dir, args.version.as_ref(), args.json, printer)?;
    let output = output_path(args.output.as_deref(), &packed.file_name())?;
    // 0644: a tarball is for others to read.
    write_atomic(&output, &packed.tarball)?;
    if is_inside(&output, dir) && !is_own_tarball_at_root(&output, dir, &packed) {
        printer.diagnostic(&format!(
            "warning: {} is inside the skill folder; list it in {}/.skillignore so the next pack leaves it out",
            output.display(),
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

/// A skill that passed validation, packed in memory.
#[derive(Debug)]
pub struct Packed {
    pub skill: PackedSkill,
    /// The validation report, warnings included.
    pub report: SkillReport,
}

/// Validates the skill in `dir` and packs it in memory: the part of `pack`
/// that `publish` shares, so both refuse and accept exactly the same
/// skills. Diagnostics are printed (on stderr; with `json`, an invalid
/// skill's report is printed as JSON on stdout instead, in `validate
/// --json`'s shape). `version` is the `--version` flag.
pub fn validate_and_pack(
    dir: &Path,
    version: Option<&semver::Version>,
    json: bool,
    printer: &Printer,
) -> anyhow::Result<Packed> {
    if !dir.is_dir() {
        return Err(
            UserError::new(format!("`{}` is not a folder", dir.display()))
                .with_hint("give the path of the skill folder, the one that holds SKILL.md")
                .into(),
        );
    }
    let options = ValidateOptions::for_folder(dir);
    // A valid skill's name is its folder's: pack under that name while the
    // skill is validated, on another core. The archive's bytes depend on
    // the name (its own tarballs are left out) but not on the version,
    // which validation reads. A skill named otherwise is invalid, so the
    // guess is only wasted on a skill that is refused anyway.
    let guess = options
        .folder_name
        .as_deref()
        .and_then(|name| name.parse::<SkillName>().ok());
    let (report, packing) = std::thread::scope(|scope| {
        let packing = guess.map(|name| (name.clone(), scope.spawn(|| pack_files(dir, name))));
        let report = skill::validate_skill(dir, &options);
        let packed = packing.map(|(name, packing)| (name, packing.join()));
        (report, packed)
    });
    if json && !report.is_valid() {
        // Scripts get the diagnostics in the same shape `validate --json` uses.
        printer.json(&json!({ "error": "invalid skill", "skill": report_json(&report) }));
    } else if !json {
        // Recommendations are one line unless `-v`: they are advice, and a
        // list of them buries what matters.
        let summed = !printer.is_verbose() && report.is_valid();
        let mut recommendations = std::collections::BTreeMap::new();
        for diagnostic in &report.diagnostics {
            if summed && diagnostic.code.is_recommendation() {
                *recommendations.entry(diagnostic.code.as_str()).or_insert(0) += 1;
                continue;
            }
            printer.diagnostic(&render::diagnostic(diagnostic, dir));
        }
        if !recommendations.is_empty() {
            let count: usize = recommendations.values().sum();
            let codes: Vec<String> = recommendations
                .iter()
                .map(|(code, count)| format!("{code} {count}"))
                .collect();
            printer.diagnostic(&format!(
                "note: {count} recommendation{} ({}); -v or `skillpkg validate {}` lists them",
                if count == 1 { "" } else { "s" },
                codes.join(", "),
                dir.display()
            ));
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
    let version = resolve_version(version, &frontmatter, dir)?;
    let packed = match packing {
        Some((_, Err(panic))) => std::panic::resume_unwind(panic),
        Some((guess, Ok(packed))) if guess == frontmatter.name => packed,
        _ => pack_files(dir, frontmatter.name),
    };
    let mut skill = packed.with_context(|| format!("cannot pack `{}`", dir.display()))?;
    skill.version = version;
    Ok(Packed { skill, report })
}

/// Packs the files of `dir` as skill `name`. The version is set by the
/// caller: it is not in the archive's bytes.
fn pack_files(dir: &Path, name: SkillName) -> Result<PackedSkill, archive::PackError> {
    let unset = semver::Version::new(0, 0, 0);
    archive::pack_dir(dir, name, unset, &Limits::default())
}

/// The version to pack: `--version`, else the frontmatter's. A `--version`
/// that contradicts the frontmatter is refused: the tarball's own SKILL.md
/// would then disagree with its file name and index entry.
fn resolve_version(
    flag: Option<&semver::Version>,
    frontmatter: &Frontmatter,
    dir: &Path,
) -> anyhow::Result<semver::Version> {
    match (flag, &frontmatter.version) {
        (Some(flag), Some(declared)) if flag != declared => Err(UserError::new(format!(
            "`--version {flag}` contradicts the version {declared} that `{}` declares",
            dir.display()
        ))
        .with_hint("change the version in SKILL.md, or drop `--version`")
        .into()),
        (Some(version), _) | (None, Some(version)) => Ok(version.clone()),
        (None, None) => {
            let found = frontmatter
                .metadata
                .iter()
                .find(|(key, _)| key == "version");
            let hint = match found {
                Some((_, text)) => format!(
                    "`metadata.version` is {text:?}, which is not a semantic version: write it as MAJOR.MINOR.PATCH, like `1.0.0`"
                ),
                // `metadata.version`, not a top-level `version`: the base
                // specification has no such key, and `validate --strict`
                // refuses what is not portable.
                None => "add `version: \"1.0.0\"` under `metadata:` in the frontmatter, or pass `--version 1.0.0`".to_owned(),
            };
            Err(UserError::new(format!(
                "cannot pack `{}`: the skill has no version",
                dir.display()
            ))
            .with_hint(hint)
            .into())
        }
    }
}

fn output_path(output: Option<&Path>, file_name: &str) -> anyhow::Result<PathBuf> {
    let path = match output {
        Some(path) if path.is_dir() => path.join(file_name),
        Some(path) => path.to_owned(),
        None => PathBuf::from(file_name),
    };
    let parent = parent_of(&path);
    if !parent.is_dir() {
        return Err(UserError::new(format!(
            "cannot write {}: the folder {} does not exist",
            path.display(),
            parent.display()
        ))
        .with_hint(format!("create it first: `mkdir -p {}`", parent.display()))
        .into());
    }
    Ok(path)
}

fn parent_of(path: &Path) -> &Path {
    path.parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

fn is_inside(file: &Path, dir: &Path) -> bool {
    let (Ok(parent), Ok(dir)) = (
        fs_err::canonicalize(parent_of(file)),
        fs_err::canonicalize(dir),
    ) else {
        return false;
    };
    parent.starts_with(dir)
}

/// Returns true for `<name>-<anything>.tgz` at the skill's root, which
/// packing leaves out (see `archive::package_entries`).
fn is_own_tarball_at_root(file: &Path, dir: &Path, packed: &PackedSkill) -> bool {
    let same_dir = match (
        fs_err::canonicalize(parent_of(file)),
        fs_err::canonicalize(dir),
    ) {
        (Ok(parent), Ok(dir)) => parent == dir,
        _ => false,
    };
    let name = file
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or("");
    same_dir && name.starts_with(&format!("{}-", packed.name)) && name.ends_with(".tgz")
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
        format!("checksum: sha256:{}", hex(&packed.sha256)),
        format!("tree:     {}", packed.tree),
        format!("path:     {}", output.display()),
    ]
    .join("\n")
}

fn packed_json(packed: &PackedSkill, output: &Path, report: &SkillReport) -> serde_json::Value {
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
