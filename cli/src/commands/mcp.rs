//! `skillpkg mcp`: read the catalog, then serve it over MCP on stdio until
//! the client closes the connection (docs/runtime.md).

use std::sync::Arc;

use rmcp::ServiceExt as _;

use crate::args::McpArgs;
use crate::commands::scopes::DEFAULT_HOST;
use crate::printer::Printer;
use crate::runtime::catalog::{Options, ServedCatalog};
use crate::runtime::server::{Shared, SkillServer};
use crate::{ExitStatus, UserError, env_vars};

pub fn run(args: &McpArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let project = match &args.project {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()?,
    };
    if !project.is_dir() {
        return Err(
            UserError::new(format!("`{}` is not a folder", project.display()))
                .with_hint("give the project folder the agent works in with --project")
                .into(),
        );
    }
    let project = std::path::absolute(&project)?;
    let options = Options {
        host: args.host.unwrap_or(DEFAULT_HOST),
        project,
        home: dirs::home_dir(),
        codex_home: std::env::var_os(env_vars::CODEX_HOME)
            .filter(|value| !value.is_empty())
            .map(Into::into),
        allow_modified: args.allow_modified,
        cache: crate::project::install::cache_dir().ok(),
    };
    let catalog = Arc::new(ServedCatalog::load(&options)?);
    for note in &catalog.notes {
        printer.status("Note", note);
    }
    printer.status(
        "Serving",
        &format!(
            "{} skill(s) {} would use from {} over MCP on stdio",
            catalog.skills().len(),
            options.host.as_str(),
            options.project.display()
        ),
    );
    let shared = Arc::new(Shared::new(catalog, args.max_active));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let service = SkillServer::new(shared)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|error| {
                UserError::new("the MCP client did not complete the handshake").with_source(error)
            })?;
        service.waiting().await?;
        anyhow::Ok(())
    })?;
    Ok(ExitStatus::Success)
}
