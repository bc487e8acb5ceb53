//! # skillpkg
//!
//! The command-line client, in layers that import only downwards
//! (docs/architecture.md):
//!
//! - [`commands`]: one thin file per command: clap arguments ([`args`])
//!   in, a library call, output through the one [`printer::Printer`];
//!   [`outcome`] turns a failure into its exit status and hint.
//! - [`project`]: skills.toml, skills.lock, resolution, and install as
//!   plan, fetch, stage, commit; [`runtime`] (feature `runtime`): the MCP
//!   skill runtime, `skillpkg mcp`.
//! - [`client`]: registries and their configuration, credentials, the
//!   archive cache, and [`client::fetch_verified`], the only path from the
//!   network or the cache to a checked archive.
//! - [`error`]: the errors that are the user's to fix, below everything.
//!
//! The formats both sides speak are in `skillpkg-index`; this crate never
//! depends on the registry server, nor it on this one.

pub mod args;
pub mod ask;
pub mod client;
pub mod commands;
pub mod env_vars;
pub mod error;
pub mod logging;
pub mod outcome;
pub mod printer;
pub mod project;
pub mod provenance;
pub mod render;
#[cfg(feature = "runtime")]
pub mod runtime;
pub mod search;
pub mod signing_key;
pub mod skill_archive;
pub mod spec;

pub use error::{ExitStatus, UserError};

/// Runs the parsed command line.
pub fn run(cli: args::Cli, printer: &printer::Printer) -> anyhow::Result<ExitStatus> {
    match cli.command {
        args::Command::Validate(args) => commands::validate::run(&args, printer),
        args::Command::Audit(args) => commands::audit::run(&args, printer),
        args::Command::New(args) => commands::new::run(&args, printer),
        args::Command::Pack(args) => commands::pack::run(&args, printer),
        args::Command::Publish(args) => commands::publish::run(&args, printer),
        args::Command::Yank(args) => commands::yank::run(&args, printer),
        args::Command::Login(args) => commands::login::run(&args, printer),
        args::Command::Search(args) => commands::search::run(&args, printer),
        args::Command::Info(args) => commands::info::run(&args, printer),
        args::Command::Key(command) => commands::key::run(&command, printer),
        args::Command::Init(args) => commands::init::run(&args, printer),
        args::Command::Add(args) => commands::add::run(&args, printer),
        args::Command::Remove(args) => commands::add::remove(&args, printer),
        args::Command::Install(args) => commands::install::run(&args, printer),
        args::Command::Update(args) => commands::install::update(&args, printer),
        args::Command::Lock(args) => commands::install::lock(&args, printer),
        args::Command::List(args) => commands::list::run(&args, printer),
        args::Command::Tree(args) => commands::tree::run(&args, printer),
        args::Command::Vendor(args) => commands::vendor::run(&args, printer),
        args::Command::Mirror(args) => commands::mirror::run(&args, printer),
        args::Command::Outdated(args) => commands::outdated::run(&args, printer),
        args::Command::Sign(args) => commands::sign::run(&args, printer),
        args::Command::Verify(args) => commands::verify::run(&args, printer),
        args::Command::Scopes(args) => commands::scopes::run(&args, printer),
        args::Command::Prompt(args) => commands::prompt::run(&args, printer),
        args::Command::Select(args) => commands::select::run(&args, printer),
        args::Command::Tools(args) => commands::tools::run(&args, printer),
        #[cfg(feature = "runtime")]
        args::Command::Mcp(args) => match &args.command {
            None => commands::mcp::run(&args, printer),
            Some(args::McpCommand::Install(install)) => {
                commands::mcp_setup::install(install, printer)
            }
            Some(args::McpCommand::Uninstall(setup)) => {
                commands::mcp_setup::uninstall(setup, printer)
            }
        },
        args::Command::Config(args) => commands::config::run(&args, printer),
        args::Command::Completions(args) => commands::completions::run(&args, printer),
        args::Command::Man(args) => commands::completions::man(&args, printer),
    }
}
