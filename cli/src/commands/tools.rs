//! `skillpkg tools`: list a skill's tools, export them for a host, and keep
//! `tools.json` in step with `SKILL.md`.

use std::path::Path;

use serde_json::json;
use skillpkg_index::skill::model::Tool;
use skillpkg_index::skill::tools::{self, ExportFormat, TOOLS_JSON, tools_json};
use skillpkg_index::skill::{self, ValidateOptions};

use crate::args::{ToolsArgs, ToolsCommand, ToolsExportArgs, ToolsSyncArgs};
use crate::commands::validate::report_json;
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::render::{self, one_line, printable, truncate};

/// The width the tool list fits its descriptions into.
const TABLE_WIDTH: usize = 100;
const MIN_DESCRIPTION_WIDTH: usize = 20;

pub fn run(args: &ToolsArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    match &args.command {
        None => list(&args.dir, args.json, printer),
        Some(ToolsCommand::Export(args)) => export(args, printer),
        Some(ToolsCommand::Sync(args)) => sync(args, printer),
    }
}

/// Validates the skill in `dir` and returns its name and tools. An invalid
/// skill is refused: its diagnostics go to stderr (with `json`, its report
/// to stdout in `validate --json`'s shape). `tools.json` is left out of the
/// validation: these commands read `SKILL.md`, and `sync` exists to repair
/// the file.
fn load(dir: &Path, json: bool, printer: &Printer) -> anyhow::Result<(String, Vec<Tool>)> {
    if !dir.is_dir() {
        return Err(
            UserError::new(format!("`{}` is not a folder", dir.display()))
                .with_hint("give the path of the skill folder, the one that holds SKILL.md")
                .into(),
        );
    }
    let options = ValidateOptions {
        skip_tools_json: true,
        ..ValidateOptions::for_folder(dir)
    };
    let report = skill::validate_skill(dir, &options);
    let Some(frontmatter) = report.frontmatter.clone() else {
        if json {
            printer.json(&json!({ "error": "invalid skill", "skill": report_json(&report) }));
        } else {
            for diagnostic in &report.diagnostics {
                printer.diagnostic(&render::diagnostic(diagnostic, dir));
            }
        }
        let errors = report.errors();
        let plural = if errors == 1 { "" } else { "s" };
        return Err(UserError::new(format!(
            "cannot read the tools of `{}`: the skill has {errors} error{plural}",
            dir.display()
        ))
        .with_hint(format!(
            "fix them; `skillpkg validate {}` lists them",
            dir.display()
        ))
        .into());
    };
    // Validation refuses a `tools` value that does not fit the model, so a
    // valid skill's frontmatter holds every tool it declares.
    Ok((frontmatter.name.to_string(), frontmatter.extensions.tools))
}

fn list(dir: &Path, json: bool, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let (name, tools) = load(dir, json, printer)?;
    if json {
        printer.json(&json!({
            "skill": name,
            "tools": tools.iter().map(|tool| json!({
                "name": tool.name,
                "description": tool.description,
                "runtime": tool.implementation.runtime.as_str(),
                "entrypoint": tool.implementation.entrypoint,
                "handler": tool.implementation.handler,
                "timeout_seconds": tool.implementation.timeout_seconds,
                "confirmation": tool.confirmation.as_ref().and_then(|confirmation| confirmation.level),
            })).collect::<Vec<_>>(),
        }));
        return Ok(ExitStatus::Success);
    }
    if tools.is_empty() {
        printer.result(&format!("{name} declares no tools"));
        return Ok(ExitStatus::Success);
    }
    printer.result(&table(&tools));
    let plural = if tools.len() == 1 { "" } else { "s" };
    printer.result(&format!("{} tool{plural} in {name}", tools.len()));
    Ok(ExitStatus::Success)
}

/// `name  runtime  entrypoint  description`, one tool a line, fitted to
/// [`TABLE_WIDTH`] by shortening descriptions.
fn table(tools: &[Tool]) -> String {
    let rows: Vec<[String; 4]> = tools
        .iter()
        .map(|tool| {
            let entrypoint = match &tool.implementation.handler {
                Some(handler) => format!("{}:{handler}", tool.implementation.entrypoint),
                None => tool.implementation.entrypoint.clone(),
            };
            [
                tool.name.to_string(),
                tool.implementation.runtime.to_string(),
                one_line(&entrypoint),
                one_line(&tool.description),
            ]
        })
        .collect();
    let width = |column: usize| {
        rows.iter()
            .map(|row| row[column].chars().count())
            .max()
            .unwrap_or(0)
    };
    let (name_width, runtime_width, entrypoint_width) = (width(0), width(1), width(2));
    let description_width = TABLE_WIDTH
        .saturating_sub(name_width + runtime_width + entrypoint_width + 6)
        .max(MIN_DESCRIPTION_WIDTH);
    rows.iter()
        .map(|[name, runtime, entrypoint, description]| {
            format!(
                "{name:name_width$}  {runtime:runtime_width$}  {entrypoint:entrypoint_width$}  {}",
                truncate(description, description_width)
            )
            .trim_end()
            .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn export(args: &ToolsExportArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let (_, tools) = load(&args.dir, false, printer)?;
    let export = tools::export(&tools, args.format);
    let refused = export.text.is_none();
    for violation in &export.violations {
        printer.diagnostic(&render::strict_violation(violation, refused));
    }
    let Some(text) = export.text else {
        let count = export.violations.len();
        let plural = if count == 1 { "" } else { "s" };
        return Err(UserError::new(format!(
            "cannot export `{}` with --format {}: {count} problem{plural} with OpenAI's strict profile",
            args.dir.display(),
            args.format
        ))
        .with_hint("fix the schemas (docs/tools.md lists the rules), or use --format openai, which exports them with `strict: false`")
        .into());
    };
    if args.format == ExportFormat::OpenAi && !export.violations.is_empty() {
        let mut names: Vec<&str> = export
            .violations
            .iter()
            .map(|violation| violation.tool.as_str())
            .collect();
        names.dedup();
        printer.diagnostic(&format!(
            "note: exported with `strict: false`: {}",
            names.join(", ")
        ));
    }
    // The text ends with its newline; the printer adds one.
    printer.json_text(text.strip_suffix('\n').unwrap_or(&text));
    Ok(ExitStatus::Success)
}

fn sync(args: &ToolsSyncArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let dir = &args.dir;
    let (name, tools) = load(dir, args.json, printer)?;
    let plan = tools_json::plan_sync(dir, &tools).map_err(|error| {
        UserError::new(format!(
            "cannot sync the {TOOLS_JSON} of `{}`",
            dir.display()
        ))
        .with_hint(format!(
            "remove {} and run `skillpkg tools sync` again",
            dir.join(TOOLS_JSON).display()
        ))
        .with_source(error)
    })?;
    let path = dir.join(TOOLS_JSON);
    let (action, diff) = match &plan {
        tools_json::SyncPlan::UpToDate | tools_json::SyncPlan::NoTools => ("none", None),
        tools_json::SyncPlan::Create { contents } => {
            ("create", Some(tools_json::diff("", contents)))
        }
        tools_json::SyncPlan::Replace { diff, .. } => ("replace", Some(diff.clone())),
        tools_json::SyncPlan::Remove { diff } => ("remove", Some(diff.clone())),
    };
    if args.check {
        if args.json {
            printer.json(&json!({
                "skill": name, "file": path, "stale": plan.changes(), "action": action, "diff": diff,
            }));
        } else if let Some(diff) = &diff {
            printer.result(&printable(diff.trim_end()));
        }
        if !plan.changes() {
            printer.status("Fresh", &format!("{} matches SKILL.md", path.display()));
            return Ok(ExitStatus::Success);
        }
        return Err(UserError::new(format!(
            "{} is stale: it is not what `skillpkg tools sync` writes from SKILL.md",
            path.display()
        ))
        .with_hint(format!("run `skillpkg tools sync {}`", dir.display()))
        .into());
    }
    tools_json::apply_sync(dir, &plan).map_err(|error| {
        UserError::new(format!("cannot write {}", path.display())).with_source(error)
    })?;
    if args.json {
        printer.json(&json!({
            "skill": name, "file": path, "changed": plan.changes(), "action": action, "tools": tools.len(),
        }));
        return Ok(ExitStatus::Success);
    }
    let plural = if tools.len() == 1 { "" } else { "s" };
    match plan {
        tools_json::SyncPlan::UpToDate => printer.status(
            "Fresh",
            &format!(
                "{} is up to date ({} tool{plural})",
                path.display(),
                tools.len()
            ),
        ),
        tools_json::SyncPlan::NoTools => printer.status(
            "Skipped",
            &format!("{name} declares no tools: there is no {TOOLS_JSON} to write"),
        ),
        tools_json::SyncPlan::Create { .. } => printer.status(
            "Wrote",
            &format!("{} ({} tool{plural})", path.display(), tools.len()),
        ),
        tools_json::SyncPlan::Replace { .. } => printer.status(
            "Updated",
            &format!("{} ({} tool{plural})", path.display(), tools.len()),
        ),
        tools_json::SyncPlan::Remove { .. } => printer.status(
            "Removed",
            &format!("{}: {name} declares no tools", path.display()),
        ),
    }
    Ok(ExitStatus::Success)
}
