//! `skillpkg completions` and `skillpkg man`: shell completion scripts and
//! manual pages, made from the same clap definition the command line is
//! parsed with, so they cannot fall out of step with it.

use clap::CommandFactory as _;
use skillpkg_index::fs::write_atomic;

use crate::args::{Cli, CompletionsArgs, ManArgs};
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;

const NAME: &str = "skillpkg";

/// Prints the completion script for the chosen shell.
pub fn run(args: &CompletionsArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, NAME, &mut script);
    printer.bytes(&script);
    Ok(ExitStatus::Success)
}

/// Prints the main manual page, or writes every page into `--out`.
pub fn man(args: &ManArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let mut command = Cli::command();
    // Every command's arguments, which are otherwise built only for the
    // command that runs.
    command.build();
    let Some(dir) = &args.out else {
        printer.bytes(&render(&command)?);
        return Ok(ExitStatus::Success);
    };
    if !dir.is_dir() {
        return Err(UserError::new(format!(
            "cannot write the manual pages: {} is not a folder",
            dir.display()
        ))
        .with_hint(format!("create it first: `mkdir -p {}`", dir.display()))
        .into());
    }
    let mut pages = Vec::new();
    pages_of(&command, NAME, &mut pages)?;
    for (file_name, page) in &pages {
        write_atomic(&dir.join(file_name), page)?;
    }
    printer.status(
        "Wrote",
        &format!("{} manual pages to {}", pages.len(), dir.display()),
    );
    Ok(ExitStatus::Success)
}

/// Collects the page of `command`, known as `name` (`skillpkg-key-show`),
/// and those of its commands, as (file name, roff).
fn pages_of(
    command: &clap::Command,
    name: &str,
    pages: &mut Vec<(String, Vec<u8>)>,
) -> anyhow::Result<()> {
    let named = command
        .clone()
        .name(name.to_owned())
        .bin_name(name.replace('-', " "));
    pages.push((format!("{name}.1"), render(&named)?));
    for sub in command.get_subcommands() {
        if sub.is_hide_set() || sub.get_name() == "help" {
            continue;
        }
        pages_of(sub, &format!("{name}-{}", sub.get_name()), pages)?;
    }
    Ok(())
}

fn render(command: &clap::Command) -> anyhow::Result<Vec<u8>> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone()).render(&mut page)?;
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command's `--help` ends with examples that start with the
    /// command itself (or a pipe into it), so a new command without them
    /// fails here.
    #[test]
    fn every_command_has_examples_of_itself() {
        fn check(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for sub in command.get_subcommands() {
                if sub.get_name() == "help" {
                    continue;
                }
                let path = format!("{path} {}", sub.get_name());
                let examples = sub
                    .get_after_help()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                let shows_itself = examples.starts_with("Examples:\n")
                    && examples.lines().skip(1).any(|line| line.contains(&path));
                if !shows_itself {
                    missing.push(path.clone());
                }
                check(sub, &path, missing);
            }
        }
        let mut command = Cli::command();
        command.build();
        let mut missing = Vec::new();
        check(&command, NAME, &mut missing);
        assert!(missing.is_empty(), "no examples of themselves: {missing:?}");
    }

    #[test]
    fn every_command_has_a_page_and_subcommands_are_named_after_their_parents() {
        let mut command = Cli::command();
        command.build();
        let mut pages = Vec::new();
        pages_of(&command, NAME, &mut pages).unwrap();
        let names: Vec<&str> = pages.iter().map(|(name, _)| name.as_str()).collect();
        for expected in [
            "skillpkg.1",
            "skillpkg-publish.1",
            "skillpkg-key-generate.1",
        ] {
            assert!(names.contains(&expected), "{expected} in {names:?}");
        }
        assert!(!names.iter().any(|name| name.contains("help")), "{names:?}");
        let publish = &pages
            .iter()
            .find(|(name, _)| name == "skillpkg-publish.1")
            .unwrap()
            .1;
        let publish = String::from_utf8_lossy(publish);
        assert!(
            publish.contains("\\-\\-dry\\-run"),
            "the options are on the page"
        );
    }
}
