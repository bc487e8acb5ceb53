//! One file per command: glue between arguments and the libraries.

pub mod add;
pub mod audit;
pub mod completions;
pub mod config;
pub mod info;
pub mod init;
pub mod install;
pub mod key;
pub mod list;
pub mod login;
#[cfg(feature = "runtime")]
pub mod mcp;
#[cfg(feature = "runtime")]
pub mod mcp_setup;
pub mod mirror;
pub mod new;
pub mod outdated;
pub mod pack;
pub mod prompt;
pub mod publish;
pub mod scopes;
pub mod search;
pub mod select;
pub mod sign;
pub mod tools;
pub mod tree;
pub mod validate;
pub mod vendor;
pub mod verify;
pub mod yank;

use crate::client::registries::Registries;
use crate::client::settings::Environment;
use crate::project::manifest;

/// Returns the registries a command outside a project's workflow (`info`,
/// `search`, `publish`, ...) may use: the user's, and those of the project
/// around the working folder, if there is one. `flag` is `--registry`.
pub fn registries_here(flag: Option<&str>) -> anyhow::Result<Registries> {
    let cwd = std::env::current_dir()?;
    let manifest = manifest::find_root(&cwd)
        .map(|root| manifest::read(&root))
        .transpose()?;
    Registries::load(
        Environment::from_process(),
        manifest
            .as_ref()
            .map(manifest::Manifest::registry_config)
            .as_ref(),
        flag,
    )
}
