//! # skillpkg
//!
//! The command-line client. Each command is a thin file under [`commands`]:
//! clap arguments ([`args`]) in, a call into `skillpkg-index` (or, later, the
//! resolver and installer), output through the one [`printer::Printer`].

pub mod args;
pub mod commands;
pub mod error;
pub mod printer;
pub mod render;

pub use error::{ExitStatus, UserError};

/// Runs the parsed command line.
pub fn run(cli: args::Cli, printer: &printer::Printer) -> anyhow::Result<ExitStatus> {
    match cli.command {
        args::Command::Validate(args) => commands::validate::run(&args, printer),
        args::Command::Pack(args) => commands::pack::run(&args, printer),
    }
}
