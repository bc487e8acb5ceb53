//! `skillpkg init`: write skills.toml, with the targets the project's agents
//! read.

use crate::args::InitArgs;
use crate::error::ExitStatus;
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
    let path = manifest::create(&root, args.registry.as_deref(), &names, args.link)?;
    if args.json {
        printer.json(&serde_json::json!({
            "manifest": path,
            "link": args.link,
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
    if args.link && names.len() > 1 {
        printer.status(
            "Link",
            &format!(
                "one copy of each skill in {}, symlinks to it in {}",
                names[0],
                names[1..].join(", ")
            ),
        );
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
    let all = Agent::value_variants();
    let names: Vec<&str> = all.iter().map(|agent| agent.name()).collect();
    let items: Vec<String> = names.iter().map(|name| (*name).to_owned()).collect();
    let chosen = crate::ask::choose(
        "Which agent tools does this project use?",
        &items,
        &names,
        "Numbers or names separated by spaces (Enter for claude-code): ",
    )?;
    Ok(chosen
        .unwrap_or_default()
        .into_iter()
        .map(|index| all[index])
        .collect())
}
