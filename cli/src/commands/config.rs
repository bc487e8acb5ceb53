//! `skillpkg config`: where skillpkg reads and writes, which registries a
//! command here would use, and the variables in effect, secrets redacted.

use serde_json::json;

use crate::args::ConfigArgs;
use crate::client::registries::{Definition, RegistrySpec};
use crate::client::settings::Environment;
use crate::commands::registries_here;
use crate::env_vars;
use crate::error::ExitStatus;
use crate::printer::Printer;
use crate::project::manifest;

const REDACTED: &str = "****";

pub fn run(args: &ConfigArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let environment = Environment::from_process();
    let project =
        manifest::find_root(&std::env::current_dir()?).map(|root| root.join(manifest::MANIFEST));
    // A broken config file is this command's error: it is what to fix.
    let registries = registries_here(args.registry.registry.as_deref())?;
    let default = registries.default_registry().ok();
    let paths = [
        ("config file", environment.config_file()),
        (
            "credentials",
            environment.credentials().map(|file| file.path().to_owned()),
        ),
        ("signing key", environment.default_signing_key()),
        ("cache", crate::client::cache::user_cache_dir()),
        ("state", crate::client::registry::trust::state_dir()),
        ("global skills", crate::project::global::root().ok()),
        ("project", project),
    ];
    let variables = variables(&environment);
    if args.json {
        printer.json(&json!({
            "paths": paths.iter().map(|(what, path)| (what.replace(' ', "_"), json!({
                "path": path,
                "exists": path.as_ref().is_some_and(|path| path.exists()),
            }))).collect::<serde_json::Map<_, _>>(),
            "default_registry": default.map(|spec| json!({ "name": spec.name, "index": spec.index.to_string() })),
            "registries": registries.specs().map(registry_json).collect::<Vec<_>>(),
            "environment": variables.iter().map(|(name, value)| (name.clone(), json!(value))).collect::<serde_json::Map<_, _>>(),
        }));
        return Ok(ExitStatus::Success);
    }
    let mut lines = Vec::new();
    for (what, path) in &paths {
        let shown = match path {
            Some(path) if path.exists() => path.display().to_string(),
            Some(path) => format!("{} (absent)", path.display()),
            None => "none".to_owned(),
        };
        lines.push(format!("{:<17} {shown}", format!("{what}:")));
    }
    let default = default.map_or_else(
        || "none".to_owned(),
        |spec| format!("{} {}", spec.name, spec.index),
    );
    lines.push(format!("{:<17} {default}", "default registry:"));
    lines.push("registries:".to_owned());
    let specs: Vec<&RegistrySpec> = registries.specs().collect();
    if specs.is_empty() {
        lines.push("  none".to_owned());
    }
    for spec in specs {
        let mut line = format!("  {}  {}", spec.name, spec.index);
        if let Some(mirror) = &spec.mirror {
            line.push_str(&format!("  mirror {mirror}"));
        }
        line.push_str(&format!("  ({})", defined_in(&spec.definition)));
        lines.push(line);
    }
    lines.push("environment:".to_owned());
    if variables.is_empty() {
        lines.push("  none of skillpkg's variables is set".to_owned());
    }
    for (name, value) in &variables {
        lines.push(format!("  {name}={value}"));
    }
    printer.result(&lines.join("\n"));
    Ok(ExitStatus::Success)
}

fn defined_in(definition: &Definition) -> String {
    match definition {
        Definition::Table(file) => format!("defined in {}", file.display()),
        Definition::Url => "given as a URL".to_owned(),
    }
}

fn registry_json(spec: &RegistrySpec) -> serde_json::Value {
    json!({
        "name": spec.name,
        "index": spec.index.to_string(),
        "mirror": spec.mirror.as_ref().map(ToString::to_string),
        "defined_in": match &spec.definition {
            Definition::Table(file) => Some(file),
            Definition::Url => None,
        },
    })
}

/// The variables skillpkg reads that are set, by name, secrets as `****`.
fn variables(environment: &Environment) -> Vec<(String, String)> {
    let mut set: Vec<(String, String)> = env_vars::SHOWN
        .iter()
        .filter_map(|(name, secret)| {
            let value = std::env::var_os(name).filter(|value| !value.is_empty())?;
            let shown = if *secret {
                REDACTED.to_owned()
            } else {
                value.to_string_lossy().into_owned()
            };
            Some(((*name).to_owned(), shown))
        })
        .collect();
    set.extend(
        environment
            .registry_tokens
            .keys()
            .map(|name| (name.clone(), REDACTED.to_owned())),
    );
    set.sort();
    set
}
