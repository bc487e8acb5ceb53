//! `skillpkg init`: write skills.toml, with the targets the project's agents
//! read.

use crate::args::InitArgs;
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::project::manifest;
use crate::project::targets::{self, Agent};

pub fn run(args: &InitArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let root = std::env::current_dir()?;
    let agents = if args.agents.is_empty() && args.targets.is_empty() {
        ask()?
    } else {
        args.agents.clone()
    };
    let chosen: Vec<(String, Option<String>)> = if !agents.is_empty() {
        targets::targets_for(&agents)
            .into_iter()
            .map(|(target, why)| (target, Some(why)))
            .collect()
    } else if args.targets.is_empty() {
        vec![("claude".to_owned(), None)]
    } else {
        args.targets
            .iter()
            .map(|target| (target.clone(), None))
            .collect()
    };
    let names: Vec<String> = chosen.iter().map(|(target, _)| target.clone()).collect();
    for target in &names {
        targets::resolve(target, &root, false, true)?;
    }
    let path = manifest::create(&root, args.registry.as_deref(), &names)?;
    if args.json {
        printer.json(&serde_json::json!({
            "manifest": path,
            "targets": chosen.iter().map(|(target, why)| serde_json::json!({ "target": target, "why": why })).collect::<Vec<_>>(),
        }));
        return Ok(ExitStatus::Success);
    }
    printer.status(
        "Created",
        &format!("{} (targets: {})", path.display(), names.join(", ")),
    );
    for (target, why) in &chosen {
        if let Some(why) = why {
            printer.status("Target", &format!("{target}: {why}"));
        }
    }
    if agents.contains(&Agent::Codex) {
        printer.status(
            "Note",
            "current Codex reads .agents/skills; older releases read .codex/skills (target `codex`)",
        );
    }
    Ok(ExitStatus::Success)
}

/// On a terminal, asks which agent tools the project uses; elsewhere (and
/// for an empty answer) none, which means the default target.
fn ask() -> anyhow::Result<Vec<Agent>> {
    use clap::ValueEnum as _;
    use std::io::{BufRead as _, IsTerminal as _, Write as _};
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(Vec::new());
    }
    let all = Agent::value_variants();
    let mut stderr = std::io::stderr().lock();
    writeln!(stderr, "Which agent tools does this project use?")?;
    for (number, agent) in all.iter().enumerate() {
        writeln!(stderr, "  {}) {}", number + 1, agent.name())?;
    }
    write!(
        stderr,
        "Numbers separated by spaces (Enter for claude-code): "
    )?;
    stderr.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let mut agents = Vec::new();
    for word in line
        .split([' ', ','])
        .map(str::trim)
        .filter(|word| !word.is_empty())
    {
        let agent = word
            .parse::<usize>()
            .ok()
            .and_then(|number| number.checked_sub(1))
            .and_then(|index| all.get(index))
            .or_else(|| all.iter().find(|agent| agent.name() == word))
            .ok_or_else(|| {
                UserError::new(format!("`{word}` is not one of the agents listed"))
                    .with_hint("nothing was written; run `skillpkg init` again, or pass --agent")
            })?;
        agents.push(*agent);
    }
    Ok(agents)
}
