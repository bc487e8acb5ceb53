//! `skillpkg prompt`: the `<available_skills>` block (and `<active_skills>`)
//! for the skills an agent uses, as XML or JSON.

use skillpkg_index::skill::prompt::{Prompt, PromptError};

use crate::args::{PromptArgs, PromptFormat};
use crate::commands::scopes::skills_from;
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;

pub fn run(args: &PromptArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let catalog = skills_from(&args.source)?;
    let prompt = Prompt::build(&catalog, &args.active).map_err(|error| match error {
        PromptError::UnknownSkill { .. } => {
            anyhow::Error::from(UserError::new(error.to_string()).with_hint(
                "run `skillpkg scopes` to see every skill, and why one is shadowed or skipped",
            ))
        }
        other => other.into(),
    })?;
    match args.format {
        // The block ends with a newline already; `result` adds none of its own.
        PromptFormat::Xml => printer.result(prompt.to_xml().trim_end_matches('\n')),
        PromptFormat::Json => printer.json(&prompt),
    }
    Ok(ExitStatus::Success)
}
