//! `skillpkg validate`: check skills and report every problem.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use rayon::prelude::*;
use serde_json::json;
use skillpkg_index::skill::{self, Severity, SkillReport, ValidateOptions};

use crate::args::ValidateArgs;
use crate::printer::Printer;
use crate::{ExitStatus, UserError, render};

pub fn run(args: &ValidateArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    if let Some(code) = args
        .allow
        .iter()
        .find(|code| code.default_severity() == Severity::Error)
    {
        return Err(UserError::new(format!(
            "`--allow {code}` names an error; only warnings can be allowed"
        ))
        .with_hint("fix the error instead: an invalid skill cannot be packed or installed")
        .into());
    }
    // Each path costs a stat or two, and a corpus run names hundreds.
    let found: Vec<anyhow::Result<Vec<PathBuf>>> =
        args.paths.par_iter().map(|path| skill_dirs(path)).collect();
    let mut dirs = Vec::new();
    let mut seen = HashSet::new();
    for found in found {
        for dir in found? {
            if seen.insert(dir.clone()) {
                dirs.push(dir);
            }
        }
    }
    // Skills are independent: validate them on every core. `collect` keeps
    // the order of `dirs`, so the output is the same on any machine.
    let reports: Vec<SkillReport> = dirs
        .par_iter()
        .map(|dir| {
            let options = ValidateOptions {
                host: args.host,
                strict: args.strict,
                allow: args.allow.clone(),
                ..ValidateOptions::for_folder(dir)
            };
            skill::validate_skill(dir, &options)
        })
        .collect();

    let valid = reports.iter().filter(|report| report.is_valid()).count();
    let invalid = reports.len() - valid;
    let warnings: usize = reports.iter().map(SkillReport::warnings).sum();
    if args.json {
        printer.json(&json!({
            "skills": reports.par_iter().map(report_json).collect::<Vec<_>>(),
            "summary": { "valid": valid, "invalid": invalid, "warnings": warnings },
        }));
    } else {
        for report in &reports {
            for diagnostic in &report.diagnostics {
                printer.result(&render::diagnostic(diagnostic, &report.path));
            }
        }
        let plural = if warnings == 1 { "" } else { "s" };
        printer.result(&format!(
            "{valid} valid, {invalid} invalid, {warnings} warning{plural}"
        ));
    }
    Ok(if invalid == 0 {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// The JSON form of one skill's report.
pub fn report_json(report: &SkillReport) -> serde_json::Value {
    let frontmatter = report.frontmatter.as_ref();
    json!({
        "path": report.path,
        "name": frontmatter.map(|frontmatter| frontmatter.name.to_string()),
        "version": frontmatter.and_then(|frontmatter| frontmatter.version.as_ref()).map(ToString::to_string),
        "valid": report.is_valid(),
        "errors": report.errors(),
        "warnings": report.warnings(),
        "diagnostics": report.diagnostics,
    })
}

/// Returns the skill folders `path` stands for.
fn skill_dirs(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    // One stat answers for nearly every skill folder.
    if fs_err::symlink_metadata(path.join(skill::SKILL_MD)).is_ok() {
        return Ok(vec![path.to_owned()]);
    }
    let metadata = fs_err::metadata(path).map_err(|_| {
        UserError::new(format!("`{}` does not exist", path.display()))
            .with_hint("give the path of a skill folder or a folder of skills")
    })?;
    if metadata.is_file() {
        let is_skill_md = path
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.eq_ignore_ascii_case(skill::SKILL_MD));
        if !is_skill_md {
            return Err(UserError::new(format!(
                "`{}` is a file, not a skill folder",
                path.display()
            ))
            .with_hint("give the folder that holds SKILL.md")
            .into());
        }
        let parent = path
            .parent()
            .filter(|parent| !parent.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        return Ok(vec![parent.to_owned()]);
    }
    if skill::find_skill_md(path)
        .with_context(|| format!("cannot read {}", path.display()))?
        .is_some()
    {
        return Ok(vec![path.to_owned()]);
    }
    let found = skill::discover_skills(path)
        .with_context(|| format!("cannot search {} for skills", path.display()))?;
    // A folder with no skill at all is reported as a skill without SKILL.md,
    // so it counts as invalid and the summary says so.
    Ok(if found.is_empty() {
        vec![path.to_owned()]
    } else {
        found
    })
}
