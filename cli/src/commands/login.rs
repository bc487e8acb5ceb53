//! `skillpkg login`: check a token with a registry and store it.

use std::io::{BufRead as _, IsTerminal as _};

use anyhow::Context as _;

use crate::args::LoginArgs;
use crate::client::registries::{Access, Registries, RegistrySpec};
use crate::client::registry::{self, Action};
use crate::client::settings::Environment;
use crate::client::token::{Token, TokenError};
use crate::commands::registries_here;
use crate::env_vars;
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;

pub fn run(args: &LoginArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let environment = Environment::from_process();
    let registries = registries_here(args.registry.registry.as_deref())?;
    // A registry's token is stored under its index URL, where `login`
    // checks it.
    let described = {
        let spec = registries.default_registry()?;
        spec.describe_at(&spec.index)
    };
    let credentials = environment.credentials().ok_or_else(|| {
        UserError::new("cannot find a config folder to store the token in").with_hint(format!(
            "set {} to the folder skillpkg should keep its settings in",
            env_vars::SKILLPKG_CONFIG_DIR
        ))
    })?;
    let token = match &args.token {
        Some(token) => token.clone(),
        None => read_token(&described, printer)?,
    };
    // The token being checked is the one every read of this login uses.
    let registries = registries.with_token_flag(Some(token.clone()));
    let spec = registries.default_registry()?;
    let user = registry::block_on(user(&registries, spec, &token))??;
    credentials.store(&spec.index, &token)?;
    printer.status("Logged in", &format!("to {described} as {user}"));
    Ok(ExitStatus::Success)
}

/// Asks the registry whose token this is, which also proves it is valid.
async fn user(
    registries: &Registries,
    spec: &RegistrySpec,
    token: &Token,
) -> anyhow::Result<String> {
    let registry = registries.open(spec, Access::Write).await?;
    Ok(registry.api(Action::Login)?.user(token).await?)
}

/// Reads one line from stdin: the token, typed or pasted (without echo) on
/// a terminal, or piped in by a script.
fn read_token(registry: &str, printer: &Printer) -> anyhow::Result<Token> {
    let stdin = std::io::stdin();
    let mut line = String::new();
    if stdin.is_terminal() {
        // From the terminal itself, without echo.
        printer.prompt(&format!("Paste your token for {registry}: "));
        line = rpassword::read_password().context("cannot read the token from the terminal")?;
    } else {
        stdin
            .lock()
            .read_line(&mut line)
            .context("cannot read the token from stdin")?;
    }
    line.parse().map_err(|error: TokenError| {
        let message = if error == TokenError::Empty {
            "no token was given".to_owned()
        } else {
            "the token read from stdin is not valid".to_owned()
        };
        UserError::new(message)
            .with_hint("pass the token the registry gave you with --token, or as one line on stdin")
            .with_source(error)
            .into()
    })
}
