//! `skillpkg yank`: yank a published version, or undo a yank.

use crate::args::YankArgs;
use crate::client::registries::{Access, Registries, RegistrySpec};
use crate::client::registry::{self, Action};
use crate::client::token::Token;
use crate::commands::registries_here;
use crate::error::ExitStatus;
use crate::printer::Printer;

pub fn run(args: &YankArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let registries = registries_here(args.registry.registry.as_deref())?
        .with_token_flag(args.token.token.clone());
    let spec = registries.default_registry()?;
    let token = registries.require_token(spec)?;
    registry::block_on(yank(args, &registries, spec, token, printer))?
}

async fn yank(
    args: &YankArgs,
    registries: &Registries,
    spec: &RegistrySpec,
    token: Token,
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    let registry = registries.open(spec, Access::Write).await?;
    let (name, version) = (&args.skill.name, &args.skill.version);
    if args.undo {
        let api = registry.api(Action::Unyank)?;
        api.unyank(&token, name, version).await?;
        printer.status("Unyanked", &format!("{} in {}", args.skill, registry.url()));
    } else {
        let api = registry.api(Action::Yank)?;
        api.yank(&token, name, version, args.reason.as_deref())
            .await?;
        printer.status("Yanked", &format!("{} in {}", args.skill, registry.url()));
    }
    Ok(ExitStatus::Success)
}
