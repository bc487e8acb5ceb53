//! `skillpkg yank`: yank a published version, or undo a yank.

use crate::ExitStatus;
use crate::args::YankArgs;
use crate::credentials::Token;
use crate::printer::Printer;
use crate::registry_client::{self, Action, Registry, RegistryUrl};
use crate::settings::{self, Environment};

pub fn run(args: &YankArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let environment = Environment::from_process();
    let registry_url = settings::registry(args.registry.registry.as_ref(), &environment)?;
    let token = settings::require_token(args.token.token.as_ref(), &environment, &registry_url)?;
    registry_client::block_on(yank(args, registry_url, token, printer))?
}

async fn yank(
    args: &YankArgs,
    registry_url: RegistryUrl,
    token: Token,
    printer: &Printer,
) -> anyhow::Result<ExitStatus> {
    let registry = Registry::open(registry_url, Some(token.clone())).await?;
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
