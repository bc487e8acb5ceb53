//! `skillpkg audit`: judge skills' content with the rules of
//! `skillpkg_index::audit`, and print the findings for people, scripts or
//! code scanning.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde_json::json;
use skillpkg_index::audit::{self, Allow, AuditOptions, Finding, Severity, SkillAudit, Verdict};

use crate::args::{AuditArgs, AuditFormat};
use crate::commands::install::{project_targets, root_for};
use crate::error::{ExitStatus, UserError};
use crate::printer::{Printer, style};
use crate::project::manifest;
use crate::render::printable;

/// One audited skill: where it is, as given, and what was found.
#[derive(Debug)]
pub struct Audited {
    pub path: PathBuf,
    pub audit: SkillAudit,
}

pub fn run(args: &AuditArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let (folders, allows) = if args.installed {
        installed_folders(args.global)?
    } else {
        let paths = if args.paths.is_empty() {
            vec![PathBuf::from(".")]
        } else {
            args.paths.clone()
        };
        (given_folders(&paths)?, project_allows()?)
    };
    let options = AuditOptions { host: args.host };
    let audited = audit_all(&folders, &options, &allows)?;
    let format = if args.json {
        AuditFormat::Json
    } else {
        args.format
    };
    match format {
        AuditFormat::Json => printer.json(&report_json(&audited)),
        AuditFormat::Sarif => {
            let bases: Vec<(String, &SkillAudit)> = audited
                .iter()
                .map(|audited| (uri_base(&audited.path), &audited.audit))
                .collect();
            printer.json(&audit::sarif::to_sarif(&bases, env!("CARGO_PKG_VERSION")));
        }
        AuditFormat::Human => {
            for audited in &audited {
                printer.result(&render_skill(audited));
            }
            printer.result(&summary_line(&audited));
        }
    }
    let failing = audited
        .iter()
        .any(|audited| audited.audit.verdict().reaches(args.fail_on));
    Ok(if failing {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// Audits each folder (on every core), applying the allows to each.
pub fn audit_all(
    folders: &[PathBuf],
    options: &AuditOptions,
    allows: &[Allow],
) -> anyhow::Result<Vec<Audited>> {
    folders
        .par_iter()
        .map(|folder| {
            let mut found = audit::audit_folder(folder, options).map_err(|error| {
                UserError::new(format!("cannot audit {}", folder.display()))
                    .with_hint("check that the folder is readable and its file names are UTF-8")
                    .with_source(error)
            })?;
            let name = found.name.clone().or_else(|| folder_name(folder));
            found.suppress(name.as_deref(), allows);
            Ok(Audited {
                path: folder.clone(),
                audit: found,
            })
        })
        .collect()
}

fn folder_name(folder: &Path) -> Option<String> {
    let absolute = std::path::absolute(folder).ok()?;
    absolute.file_name()?.to_str().map(str::to_owned)
}

/// The skill folders the paths stand for, each once, in order.
fn given_folders(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut folders = Vec::new();
    let mut seen: HashSet<PathBuf> = HashSet::new();
    for path in paths {
        if !path.exists() {
            return Err(
                UserError::new(format!("`{}` does not exist", path.display()))
                    .with_hint("give the path of a skill folder or a folder of skills")
                    .into(),
            );
        }
        let found = audit::skill_folders(path).map_err(|error| {
            UserError::new(format!("cannot search {} for skills", path.display()))
                .with_source(error)
        })?;
        if found.is_empty() {
            return Err(UserError::new(format!("no skill in `{}`", path.display()))
                .with_hint(
                    "a skill is a folder with a SKILL.md; give its path or a folder above it",
                )
                .into());
        }
        for folder in found {
            // A set, not a search of the list: a folder of hundreds of
            // skills made that quadratic.
            if seen.insert(folder.clone()) {
                folders.push(folder);
            }
        }
    }
    Ok(folders)
}

/// The `[audit] allow` entries of the project around the working folder.
fn project_allows() -> anyhow::Result<Vec<Allow>> {
    let cwd = std::env::current_dir()?;
    Ok(match manifest::find_root(&cwd) {
        Some(root) => manifest::read(&root)?.audit_allow,
        None => Vec::new(),
    })
}

/// The folders of the skills installed in the project's targets.
fn installed_folders(global: bool) -> anyhow::Result<(Vec<PathBuf>, Vec<Allow>)> {
    let root = root_for(global, false)?;
    let manifest = manifest::read(&root)?;
    let mut folders = Vec::new();
    // Each folder once, by where it really is: the symlinks of a linked
    // install lead to the first target's copy, audited there; a link or a
    // folder that leads anywhere else is audited where it leads, whatever
    // the record (a project file) says it is.
    let mut seen = std::collections::HashSet::new();
    for target in project_targets(&manifest, &[], &root, global, true)? {
        for name in target.state()?.skills.keys() {
            let folder = target.dir.join(name.as_str());
            let real = fs_err::canonicalize(&folder).unwrap_or_else(|_| folder.clone());
            if seen.insert(real) {
                folders.push(folder);
            }
        }
    }
    if folders.is_empty() {
        return Err(
            UserError::new("no skill is installed in this project's targets")
                .with_hint("run `skillpkg install` first, or give the folders to audit")
                .into(),
        );
    }
    Ok((folders, manifest.audit_allow))
}

/// The path files are relative to in SARIF: the skill's folder as given,
/// `/`-separated.
fn uri_base(path: &Path) -> String {
    let text = path.display().to_string().replace('\\', "/");
    text.strip_prefix("./").unwrap_or(&text).to_owned()
}

/// The JSON report: one entry per skill, and a summary.
pub fn report_json(audited: &[Audited]) -> serde_json::Value {
    let mut totals = [0usize; 4];
    let mut worst = Verdict::Clean;
    let skills: Vec<serde_json::Value> = audited
        .iter()
        .map(|audited| {
            let audit = &audited.audit;
            for (total, count) in totals.iter_mut().zip(audit.counts()) {
                *total += count;
            }
            worst = worst.max(audit.verdict());
            json!({
                "path": audited.path,
                "name": audit.name,
                "verdict": audit.verdict(),
                "findings": audit.findings,
                "suppressed": audit.suppressed,
                "not_scanned": audit.not_scanned,
                "files": audit.files,
                "bytes": audit.bytes,
            })
        })
        .collect();
    json!({
        "v": 1,
        "skills": skills,
        "summary": {
            "skills": audited.len(),
            "findings": {
                "high": totals[Severity::High as usize],
                "medium": totals[Severity::Medium as usize],
                "low": totals[Severity::Low as usize],
                "info": totals[Severity::Info as usize],
            },
            "verdict": worst,
        },
    })
}

fn severity_style(severity: Severity) -> anstyle::Style {
    match severity {
        Severity::High => style::ERROR,
        Severity::Medium => style::WARNING,
        Severity::Low | Severity::Info => style::NOTE,
    }
}

/// Renders one finding with the file's place and a caret under the span.
pub fn render_finding(finding: &Finding, skill_dir: &Path) -> String {
    let level_style = severity_style(finding.severity);
    let (bold, gutter) = (style::EMPHASIS, style::GUTTER);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{level_style}{}[{}]{level_style:#}{bold}: {}{bold:#}",
        finding.severity,
        finding.rule,
        printable(&finding.message)
    );
    let path = printable(&skill_dir.join(&finding.file).display().to_string());
    let place = match (finding.line, finding.column) {
        (Some(line), Some(column)) => format!(":{line}:{column}"),
        _ => String::new(),
    };
    let number = finding.line.map_or(String::new(), |line| line.to_string());
    let pad = " ".repeat(number.len().max(1));
    let _ = writeln!(out, "{pad}{gutter}-->{gutter:#} {path}{place}");
    if let Some(excerpt) = &finding.excerpt {
        let text = printable(&excerpt.text.replace('\t', " "));
        let _ = writeln!(out, "{pad} {gutter}|{gutter:#}");
        let _ = writeln!(out, "{gutter}{number}{gutter:#} {gutter}|{gutter:#} {text}");
        let _ = writeln!(
            out,
            "{pad} {gutter}|{gutter:#} {}{level_style}{}{level_style:#}",
            " ".repeat(excerpt.start),
            "^".repeat(excerpt.width)
        );
    }
    let _ = writeln!(
        out,
        "{pad} {gutter}={gutter:#} {bold}why{bold:#}: {}",
        finding.rule.why()
    );
    let _ = writeln!(
        out,
        "{pad} {gutter}={gutter:#} {bold}fix{bold:#}: {}",
        finding.rule.fix()
    );
    out
}

fn counts_text(audit: &SkillAudit) -> String {
    let counts = audit.counts();
    let parts: Vec<String> = Severity::ALL
        .iter()
        .rev()
        .filter(|severity| counts[**severity as usize] > 0)
        .map(|severity| format!("{} {severity}", counts[*severity as usize]))
        .collect();
    if parts.is_empty() {
        "no findings".to_owned()
    } else {
        parts.join(", ")
    }
}

/// Renders one skill: a header with its verdict, then its findings, the
/// suppressed ones with their reasons, and what was not scanned.
pub fn render_skill(audited: &Audited) -> String {
    let audit = &audited.audit;
    let bold = style::EMPHASIS;
    let verdict = audit.verdict();
    let verdict_text = match verdict {
        Verdict::Clean => format!("{}clean{:#}", style::SUCCESS, style::SUCCESS),
        Verdict::Found(severity) => {
            let level = severity_style(severity);
            format!("{level}{severity}{level:#}")
        }
    };
    let mut out = String::new();
    let name = audit
        .name
        .as_deref()
        .map(printable)
        .unwrap_or_else(|| "(no name)".to_owned());
    let _ = writeln!(
        out,
        "{bold}{name}{bold:#} ({}): {verdict_text} ({})",
        printable(&audited.path.display().to_string()),
        counts_text(audit)
    );
    for finding in &audit.findings {
        out.push_str(&render_finding(finding, &audited.path));
    }
    for suppressed in &audit.suppressed {
        let finding = &suppressed.finding;
        let place = match finding.line {
            Some(line) => format!(":{line}"),
            None => String::new(),
        };
        let _ = writeln!(
            out,
            "{}suppressed{:#}[{}] {}{place}: {} (allowed in skills.toml: {})",
            style::NOTE,
            style::NOTE,
            finding.rule,
            printable(&finding.file),
            printable(&finding.message),
            printable(&suppressed.reason)
        );
    }
    for skipped in &audit.not_scanned {
        let _ = writeln!(
            out,
            "{}note{:#}: not scanned: {} ({})",
            style::NOTE,
            style::NOTE,
            printable(&skipped.file),
            skipped.reason
        );
    }
    out
}

fn summary_line(audited: &[Audited]) -> String {
    let mut by_verdict = [0usize; 5];
    for audited in audited {
        let index = match audited.audit.verdict() {
            Verdict::Clean => 0,
            Verdict::Found(severity) => severity as usize + 1,
        };
        by_verdict[index] += 1;
    }
    let plural = if audited.len() == 1 { "" } else { "s" };
    format!(
        "{} skill{plural} audited: {} high, {} medium, {} low, {} info, {} clean",
        audited.len(),
        by_verdict[4],
        by_verdict[3],
        by_verdict[2],
        by_verdict[1],
        by_verdict[0]
    )
}
