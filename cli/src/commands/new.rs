//! `skillpkg new`: create a skill folder from a template.

use skillpkg_index::skill::SkillName;
use skillpkg_index::skill::model::Runtime;
use skillpkg_index::skill::scaffold::{self, ScaffoldError, ScaffoldOptions};

use crate::args::NewArgs;
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;

pub fn run(args: &NewArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let name: SkillName = args.name.parse().map_err(|error| {
        let error =
            UserError::new(format!("`{}` is not a valid skill name", args.name)).with_source(error);
        match SkillName::suggest(&args.name) {
            Some(suggestion) => error.with_hint(format!(
                "use `{suggestion}`: lowercase letters, digits and single `-` inside"
            )),
            None => error.with_hint("use lowercase letters a-z, digits and single `-` inside"),
        }
    })?;
    let options = ScaffoldOptions {
        name: name.clone(),
        description: args.description.clone(),
        tool: args.tools.then(|| args.runtime.unwrap_or(Runtime::Python)),
    };
    // `new pdf` shows as `pdf`, not `./pdf`.
    let target = if args.path == std::path::Path::new(".") {
        std::path::PathBuf::from(name.as_str())
    } else {
        args.path.join(name.as_str())
    };
    let files = scaffold::create(&target, &options).map_err(|error| match error {
        ScaffoldError::TargetExists { path } => {
            UserError::new(format!("`{}` already exists", path.display()))
                .with_hint("choose another name or --path; nothing was written")
        }
        ScaffoldError::Invalid { errors } => {
            let first = errors.first();
            let error = UserError::new(format!(
                "the skill would not be valid: {}",
                first.map_or("", |diagnostic| diagnostic.message.as_str())
            ));
            match first.and_then(|diagnostic| diagnostic.hint.clone()) {
                Some(hint) => error.with_hint(format!("{hint}; nothing was written")),
                None => error.with_hint("change --description; nothing was written"),
            }
        }
        error @ ScaffoldError::Io { .. } => UserError::new("cannot create the skill")
            .with_source(error)
            .with_hint("check that the folder is writable"),
    })?;
    let written: Vec<&str> = files.iter().map(|file| file.path.as_str()).collect();
    printer.status(
        "Created",
        &format!("{} ({})", target.display(), written.join(", ")),
    );
    printer.status(
        "Next",
        &format!(
            "fill in {}, then run `skillpkg validate {}`",
            target.join("SKILL.md").display(),
            target.display()
        ),
    );
    Ok(ExitStatus::Success)
}
