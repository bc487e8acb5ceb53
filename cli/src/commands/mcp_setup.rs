//! `skillpkg mcp install` and `skillpkg mcp uninstall`: register the
//! server with an agent, or take it out (docs/runtime.md, "Setting it up
//! in an agent"). The editing is `runtime::setup`'s; this is the glue.

use serde_json::json;

use crate::args::{McpInstallArgs, McpSetupArgs};
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::runtime::setup::{self, Action, Agent, Change, Homes, Launch, Plan, Scope};

pub fn install(args: &McpInstallArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let setup_args = &args.setup;
    let scope = scope(setup_args)?;
    let program = match &args.program {
        Some(program) if program.is_empty() => {
            return Err(UserError::new("--command is empty")
                .with_hint("give the program the agent starts, such as `skillpkg`")
                .into());
        }
        Some(program) => program.clone(),
        None => std::env::current_exe()
            .map_err(|error| {
                UserError::new("cannot tell where this skillpkg is")
                    .with_source(error)
                    .with_hint("give the program the agent starts with --command")
            })?
            .display()
            .to_string(),
    };
    // In a project the agent starts the server in the project (or tells
    // it the folder); a global entry names a project only when asked to.
    let pinned = match (&scope, &setup_args.project) {
        (Scope::Global, Some(project)) => Some(std::path::absolute(project)?),
        _ => None,
    };
    let launch = Launch::new(
        setup_args.agent,
        &program,
        args.host.map(skillpkg_index::skill::Host::as_str),
        pinned.as_deref(),
        &serve_args(args)?,
    );
    let change = Change::Install {
        launch,
        force: args.force,
    };
    let plan = setup::plan(
        setup_args.agent,
        &scope,
        &Homes::from_process(),
        &setup_args.name,
        &change,
    )?;
    finish(setup_args, &scope, &plan, printer)?;
    if !setup_args.json
        && !setup_args.dry_run
        && plan.action == Action::Added
        && let Some(note) = approval_note(setup_args.agent, &scope)
    {
        printer.status("Note", note);
    }
    Ok(ExitStatus::Success)
}

pub fn uninstall(args: &McpSetupArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let scope = scope(args)?;
    let plan = setup::plan(
        args.agent,
        &scope,
        &Homes::from_process(),
        &args.name,
        &Change::Uninstall,
    )?;
    finish(args, &scope, &plan, printer)?;
    Ok(ExitStatus::Success)
}

/// Writes the plan (unless `--dry-run`) and says what it did.
fn finish(
    args: &McpSetupArgs,
    scope: &Scope,
    plan: &Plan,
    printer: &Printer,
) -> anyhow::Result<()> {
    if !args.dry_run {
        plan.apply()?;
    }
    let scope_name = match scope {
        Scope::Project(_) => "project",
        Scope::Global => "global",
    };
    if args.json {
        let mut report = json!({
            "agent": args.agent.as_str(),
            "scope": scope_name,
            "file": plan.path,
            "name": args.name.as_str(),
            "action": plan.action,
            "dry_run": args.dry_run,
        });
        if plan.target != plan.path {
            report["written"] = json!(plan.target);
        }
        if args.dry_run {
            report["diff"] = json!(plan.diff());
        }
        printer.json(&report);
        return Ok(());
    }
    let file = plan.path.display();
    let name = &args.name;
    let agent = args.agent.as_str();
    if args.dry_run {
        if plan.changes() {
            printer.result(plan.diff().trim_end());
        }
        let would = match plan.action {
            Action::Added => format!("would add `{name}` to {file}"),
            Action::Updated => format!("would update `{name}` in {file}"),
            Action::Removed => format!("would remove `{name}` from {file}"),
            Action::Unchanged => format!("`{name}` in {file} is already as it would be written"),
            Action::Absent => format!("{file} has no server `{name}`"),
        };
        printer.status("Dry run", &format!("{would}; nothing was written"));
        return Ok(());
    }
    let (verb, message) = match plan.action {
        Action::Added => (
            "Added",
            format!("`{name}` to {file} ({agent}, {scope_name})"),
        ),
        Action::Updated => (
            "Updated",
            format!("`{name}` in {file} ({agent}, {scope_name})"),
        ),
        Action::Unchanged => (
            "Unchanged",
            format!("`{name}` in {file} is already up to date; nothing was written"),
        ),
        Action::Removed => (
            "Removed",
            format!("`{name}` from {file} ({agent}, {scope_name})"),
        ),
        Action::Absent => (
            "Note",
            format!("{file} has no server `{name}`; nothing was removed"),
        ),
    };
    printer.status(verb, &message);
    if plan.target != plan.path && plan.changes() {
        printer.status(
            "Note",
            &format!("{file} is a symlink: {} was written", plan.target.display()),
        );
    }
    Ok(())
}

/// The project the files are in, or the user's configuration.
fn scope(args: &McpSetupArgs) -> anyhow::Result<Scope> {
    if args.global {
        return Ok(Scope::Global);
    }
    let project = match &args.project {
        Some(project) => project.clone(),
        None => std::env::current_dir()?,
    };
    if !project.is_dir() {
        return Err(
            UserError::new(format!("`{}` is not a folder", project.display()))
                .with_hint("give the project folder with --project, or use --global")
                .into(),
        );
    }
    Ok(Scope::Project(std::path::absolute(project)?))
}

/// The serve options to start the server with, as `skillpkg mcp` takes
/// them.
fn serve_args(args: &McpInstallArgs) -> anyhow::Result<Vec<String>> {
    let mut serve = Vec::new();
    let mut option = |name: &str, value: String| {
        serve.push(format!("--{name}"));
        serve.push(value);
    };
    if let Some(max_active) = args.max_active {
        option("max-active", max_active.to_string());
    }
    for grant in &args.allow_grant {
        option("allow-grant", grant.to_string());
    }
    for skill in &args.allow_risk {
        option("allow-risk", skill.to_string());
    }
    if let Some(timeout) = args.timeout {
        option("timeout", timeout.to_string());
    }
    if let Some(timeout) = args.client_timeout {
        option("client-timeout", timeout.to_string());
    }
    if !args.pass_env.is_empty() {
        option("pass-env", args.pass_env.join(","));
    }
    if let Some(file) = &args.audit_log {
        // The agent starts the server in a folder of its choosing.
        option(
            "audit-log",
            std::path::absolute(file)?.display().to_string(),
        );
    }
    if args.allow_modified {
        serve.push("--allow-modified".to_owned());
    }
    if args.unsandboxed {
        serve.push("--unsandboxed".to_owned());
    }
    Ok(serve)
}

/// What the user must still do before a newly added project server runs.
fn approval_note(agent: Agent, scope: &Scope) -> Option<&'static str> {
    match (agent, scope) {
        (Agent::ClaudeCode, Scope::Project(_)) => Some(
            "Claude Code asks to approve the servers of a project's .mcp.json when it next starts here",
        ),
        (Agent::Codex, Scope::Project(_)) => Some(
            "Codex reads a project's .codex/config.toml only once you trust the project (it asks when it first starts here)",
        ),
        (Agent::Copilot, Scope::Project(_)) => Some(
            "the Copilot CLI reads a project's .github/mcp.json only in a folder you trust (it asks when it first starts here)",
        ),
        _ => None,
    }
}
