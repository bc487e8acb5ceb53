//! `skillpkg validate`: check skills and report every problem.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use rayon::prelude::*;
use serde_json::json;
use skillpkg_index::skill::{self, Severity, SkillReport, ValidateOptions};

use crate::args::{HostSelection, ValidateArgs};
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::render;

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
    let host = match args.host {
        HostSelection::One(host) => host,
        HostSelection::All => return run_matrix(args, &dirs, printer),
    };
    let codex = if host == skill::Host::Codex {
        codex_catalog()?
    } else {
        None
    };
    // Skills are independent: validate them on every core. `collect` keeps
    // the order of `dirs`, so the output is the same on any machine.
    let reports: Vec<SkillReport> = dirs
        .par_iter()
        .map(|dir| validate_one(dir, host, args, codex.as_ref()))
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

/// What Codex sees from here. Codex loads skills from several scopes at
/// once, so a name used in two of them is worth a warning; the scopes are
/// read once for all skills.
fn codex_catalog() -> anyhow::Result<Option<skill::catalog::Catalog>> {
    let environment = crate::client::settings::agent_environment()?;
    Ok(skill::catalog::discover(skill::Host::Codex, &environment).ok())
}

/// Validates the skill in `dir` for `host` with the command's options,
/// and, for Codex, against the other skills `codex` holds.
fn validate_one(
    dir: &Path,
    host: skill::Host,
    args: &ValidateArgs,
    codex: Option<&skill::catalog::Catalog>,
) -> SkillReport {
    let options = ValidateOptions {
        host,
        strict: args.strict,
        allow: args.allow.clone(),
        ..ValidateOptions::for_folder(dir)
    };
    let mut report = skill::validate_skill(dir, &options);
    if let (skill::Host::Codex, Some(catalog)) = (host, codex) {
        catalog.check_collisions(&mut report, &options);
    }
    report
}

/// `validate --host all`: every skill against every host profile, as a
/// table of verdicts followed by the reason for each one that fails.
fn run_matrix(
    args: &ValidateArgs,
    dirs: &[PathBuf],
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    let hosts = skill::Host::ALL;
    let codex = codex_catalog()?;
    // rows[skill][host]
    let rows: Vec<Vec<SkillReport>> = dirs
        .par_iter()
        .map(|dir| {
            hosts
                .iter()
                .map(|(_, host)| validate_one(dir, *host, args, codex.as_ref()))
                .collect()
        })
        .collect();
    let failing = rows
        .iter()
        .filter(|reports| reports.iter().any(|report| !report.is_valid()))
        .count();
    if args.json {
        let skills: Vec<_> = rows
            .iter()
            .zip(dirs)
            .map(|(reports, dir)| {
                let verdicts: serde_json::Map<String, serde_json::Value> = hosts
                    .iter()
                    .zip(reports)
                    .map(|((name, _), report)| {
                        let codes = |severity| {
                            let mut codes: Vec<String> = report
                                .diagnostics
                                .iter()
                                .filter(|d| d.severity == severity)
                                .map(|d| d.code.to_string())
                                .collect();
                            codes.dedup();
                            codes
                        };
                        (
                            (*name).to_owned(),
                            json!({
                                "portable": report.is_valid(),
                                "errors": codes(Severity::Error),
                                "warnings": codes(Severity::Warning),
                            }),
                        )
                    })
                    .collect();
                json!({ "path": dir, "hosts": verdicts })
            })
            .collect();
        printer.json(&json!({
            "hosts": hosts.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
            "skills": skills,
            "summary": { "skills": dirs.len(), "not_portable_everywhere": failing },
        }));
    } else {
        let mut names: Vec<String> = dirs.iter().map(|dir| label(dir)).collect();
        // Two skills of one name (in two scopes) are told apart by path.
        let repeated: Vec<bool> = names
            .iter()
            .map(|name| names.iter().filter(|other| *other == name).count() > 1)
            .collect();
        for ((name, dir), repeated) in names.iter_mut().zip(dirs).zip(repeated) {
            if repeated {
                *name = dir.display().to_string();
            }
            *name = render::one_line(name);
        }
        let first = names
            .iter()
            .map(|name| name.chars().count())
            .max()
            .unwrap_or(0)
            .max(5);
        let mut table = format!("{:first$}", "skill");
        for (name, _) in hosts {
            table.push_str(&format!("  {name}"));
        }
        for (name, reports) in names.iter().zip(&rows) {
            table.push_str(&format!("\n{name:first$}"));
            for ((host, _), report) in hosts.iter().zip(reports) {
                let verdict = if !report.is_valid() {
                    "no"
                } else if report.warnings() > 0 {
                    "warn"
                } else {
                    "ok"
                };
                table.push_str(&format!("  {verdict:width$}", width = host.len()));
            }
        }
        printer.result(
            &table
                .lines()
                .map(str::trim_end)
                .collect::<Vec<_>>()
                .join("\n"),
        );
        for (name, reports) in names.iter().zip(&rows) {
            let errors = |report: &SkillReport| -> Vec<(skill::Code, String)> {
                report
                    .diagnostics
                    .iter()
                    .filter(|d| d.severity == Severity::Error)
                    .map(|d| (d.code, d.message.clone()))
                    .collect()
            };
            // What every host refuses is said once; the rest per host.
            let everywhere: Vec<_> = errors(&reports[0])
                .into_iter()
                .filter(|error| reports.iter().all(|report| errors(report).contains(error)))
                .collect();
            for (code, message) in &everywhere {
                printer.result(&render::one_line(&format!(
                    "{name}: invalid for every host: {code}: {message}"
                )));
            }
            for ((host, _), report) in hosts.iter().zip(reports) {
                for (code, message) in errors(report)
                    .iter()
                    .filter(|error| !everywhere.contains(error))
                {
                    printer.result(&render::one_line(&format!(
                        "{name}: not portable to {host}: {code}: {message}"
                    )));
                }
            }
        }
        printer.result(&format!(
            "{} skills, {failing} not portable to every host",
            dirs.len()
        ));
    }
    Ok(if failing == 0 {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}

/// A short name for a skill folder in the table: its folder name.
fn label(dir: &Path) -> String {
    dir.file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}
