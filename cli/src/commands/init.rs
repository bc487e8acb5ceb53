//! `skillpkg init`: write skills.toml, with the targets the project's agents
//! read (the agents named, or else those installed on this machine).

use crate::args::InitArgs;
use crate::error::ExitStatus;
use crate::printer::Printer;
use crate::project::agents::{self, Agent, Detection, Environment};
use crate::project::manifest;
use crate::project::targets;

pub fn run(args: &InitArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let root = std::env::current_dir()?;
    // Only a bare `init` looks for agents: `--agent` and `--target` are the
    // user's answer already.
    let detected = if args.agents.is_empty() && args.targets.is_empty() {
        agents::detect(&Environment::from_process(), &root)
    } else {
        Vec::new()
    };
    if !args.json {
        for detection in &detected {
            printer.status(
                "Detected",
                &format!(
                    "{} ({} exists)",
                    detection.agent.id,
                    detection.found.display()
                ),
            );
        }
    }
    let agents = if !args.agents.is_empty() {
        args.agents.clone()
    } else if args.targets.is_empty() {
        ask(&detected)?
    } else {
        Vec::new()
    };
    let chosen: Vec<(String, Option<targets::AgentTarget>)> = if !agents.is_empty() {
        targets::targets_for(&agents)
            .into_iter()
            .map(|target| (target.target.clone(), Some(target)))
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
            "agents": agents.iter().map(|agent| agent.id).collect::<Vec<_>>(),
            "detected": detected.iter().map(|detection| serde_json::json!({
                "agent": detection.agent.id,
                "name": detection.agent.name,
                "found": detection.found,
            })).collect::<Vec<_>>(),
            "targets": chosen.iter().map(|(target, agents)| serde_json::json!({
                "target": target,
                "folder": agents.as_ref().map(|agents| agents.folder),
                "agents": agents.as_ref().map(|agents| &agents.readers),
                "why": agents.as_ref().map(targets::AgentTarget::why),
            })).collect::<Vec<_>>(),
        }));
        return Ok(ExitStatus::Success);
    }
    printer.status(
        "Created",
        &format!("{} (targets: {})", path.display(), names.join(", ")),
    );
    for (target, agents) in &chosen {
        if let Some(agents) = agents {
            printer.status("Target", &format!("{target}: {}", agents.why()));
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
    if agents.iter().any(|agent| agent.id == "codex") {
        printer.status(
            "Note",
            "current Codex reads .agents/skills (and .codex/skills); older releases read only .codex/skills (target `codex`)",
        );
    }
    Ok(ExitStatus::Success)
}

/// On a terminal, asks which agent tools the project uses, offering the
/// ones `detected` and the three most common; an empty answer takes those
/// detected. Elsewhere it takes those detected. No agent means the default
/// target.
fn ask(detected: &[Detection]) -> anyhow::Result<Vec<&'static Agent>> {
    let found: Vec<&'static Agent> = detected.iter().map(|detection| detection.agent).collect();
    let mut offered = found.clone();
    for id in ["claude-code", "codex", "copilot"] {
        let agent = agents::find(id).expect("a common agent is in the table");
        if !offered.iter().any(|offered| offered.id == id) {
            offered.push(agent);
        }
    }
    let items: Vec<String> = offered
        .iter()
        .map(|agent| {
            if found.iter().any(|found| found.id == agent.id) {
                format!("{} ({}, detected)", agent.id, agent.name)
            } else {
                format!("{} ({})", agent.id, agent.name)
            }
        })
        .collect();
    let names: Vec<&str> = offered.iter().map(|agent| agent.id).collect();
    let default = if found.is_empty() {
        "claude-code".to_owned()
    } else {
        found
            .iter()
            .map(|agent| agent.id)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let chosen = crate::ask::choose(
        "Which agent tools does this project use? (another: `skillpkg init --agent ID`, ids in docs/agents.md)",
        &items,
        &names,
        &format!("Numbers or ids separated by spaces (Enter for {default}): "),
    )?;
    Ok(match chosen {
        Some(indexes) if !indexes.is_empty() => {
            indexes.into_iter().map(|index| offered[index]).collect()
        }
        // No terminal, or Enter.
        _ => found,
    })
}
