//! `skillpkg select`: which skills a request calls for, with each skill's
//! score and the triggers behind it.

use std::path::Path;

use serde_json::json;
use skillpkg_index::skill::select::{self, Candidate, Request, Scored};

use crate::args::SelectArgs;
use crate::commands::scopes::skills_from;
use crate::error::ExitStatus;
use crate::printer::Printer;
use crate::render::one_line;

pub fn run(args: &SelectArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let catalog = skills_from(&args.source)?;
    let candidates: Vec<Candidate<'_>> = catalog
        .active()
        .map(|(_, loaded)| Candidate {
            name: loaded.frontmatter.name.as_str(),
            tools: loaded
                .frontmatter
                .extensions
                .tools
                .iter()
                .map(|tool| tool.name.as_str())
                .collect(),
            when_to_use: loaded.frontmatter.extensions.when_to_use.as_ref(),
        })
        .collect();
    let files: Vec<&Path> = args.files.iter().map(|file| file.as_path()).collect();
    let intents: Vec<&str> = args.intents.iter().map(String::as_str).collect();
    let request = Request {
        text: &args.request,
        files: &files,
        intents: &intents,
        threshold: args.threshold,
    };
    let selection = select::select(&request, &candidates);
    // A score of 0 is said with why: no triggers to match, or none matched.
    let has_triggers = |name: &str| {
        candidates
            .iter()
            .any(|candidate| candidate.name == name && candidate.when_to_use.is_some())
    };
    let location = |name: &str| {
        catalog
            .active()
            .find(|(_, loaded)| loaded.frontmatter.name.as_str() == name)
            .map(|(found, _)| found.location.clone())
    };
    if args.json {
        printer.json(&json!({
            "threshold": selection.threshold,
            "explicit": selection.explicit,
            "selected": selection.selected().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            "candidates": selection.candidates.iter().map(|candidate| {
                let mut value = serde_json::to_value(candidate).expect("serialises");
                value["location"] = json!(location(&candidate.name));
                if candidate.score == 0 && candidate.explicit.is_none() {
                    value["why"] = json!(zero_score(has_triggers(&candidate.name)));
                }
                value
            }).collect::<Vec<_>>(),
        }));
        return Ok(ExitStatus::Success);
    }
    if selection.candidates.is_empty() {
        printer.result("no skills here: nothing to select from (see `skillpkg scopes`)");
        return Ok(ExitStatus::Success);
    }
    let width = selection
        .candidates
        .iter()
        .map(|candidate| candidate.name.len())
        .max()
        .unwrap_or(0);
    let mut lines = Vec::new();
    for candidate in &selection.candidates {
        let mut line = candidate_line(candidate, width, selection.explicit);
        // Where the request names skills, scores do not decide: no why.
        if candidate.score == 0 && !selection.explicit {
            line.push_str(&format!(" ({})", zero_score(has_triggers(&candidate.name))));
        }
        lines.push(line);
        for found in &candidate.matches {
            lines.push(format!("    {}", one_line(&found.to_string())));
        }
    }
    let selected = selection.selected().count();
    lines.push(if selection.explicit {
        format!("{selected} selected: named in the request, so scores do not decide")
    } else {
        format!(
            "{selected} selected with a score of {} or more",
            selection.threshold
        )
    });
    printer.result(&lines.join("\n"));
    Ok(ExitStatus::Success)
}

fn candidate_line(candidate: &Scored, width: usize, explicit: bool) -> String {
    let status = if candidate.selected {
        "selected"
    } else if explicit {
        "not named"
    } else {
        "below threshold"
    };
    let mut line = format!(
        "{status:15} {:width$}  score {}",
        candidate.name, candidate.score
    );
    if let Some(priority) = candidate.priority {
        line.push_str(&format!(", priority {priority}"));
    }
    if let Some(named) = &candidate.explicit {
        let word = one_line(&named.word);
        line.push_str(&if named.tool {
            format!(" (the request names its tool {word})")
        } else {
            " (the request names it)".to_owned()
        });
    }
    line
}

/// Why a skill that the request does not name scored 0.
fn zero_score(has_triggers: bool) -> &'static str {
    if has_triggers {
        "none of its `when_to_use` triggers matched the request"
    } else {
        "it declares no `when_to_use` triggers: only a request that names it or one of its tools selects it"
    }
}
