//! `skillpkg search`: find skills in a registry's `search.json`.

use serde_json::json;
use skillpkg_index::registry::{SearchEntry, SearchIndex};

use crate::args::SearchArgs;
use crate::client::registries::{Access, Registries, RegistrySpec};
use crate::client::registry;
use crate::commands::registries_here;
use crate::error::ExitStatus;
use crate::printer::Printer;
use crate::render::{one_line, truncate};
use crate::search::search;

/// The width the table is fitted to: the classic terminal, so lines do not
/// wrap in a default window or a CI log.
const TABLE_WIDTH: usize = 80;
/// Descriptions keep at least this many columns, however long names are.
const MIN_DESCRIPTION_WIDTH: usize = 20;

pub fn run(args: &SearchArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let registries = registries_here(args.registry.registry.as_deref())?;
    let spec = registries.default_registry()?;
    let registry_url = &spec.index;
    let index = registry::block_on(search_index(&registries, spec))??;
    let found = search(&index.skills, &args.query);
    let shown = &found[..found.len().min(args.limit)];
    if args.json {
        printer.json(&json!({ "total": found.len(), "skills": shown }));
        return Ok(ExitStatus::Success);
    }
    if !shown.is_empty() {
        printer.result(&table(shown));
    }
    let plural = if found.len() == 1 { "" } else { "s" };
    let summary = if shown.len() < found.len() {
        format!(
            "{} of {} skills matching `{}` in {registry_url} (--limit N shows more)",
            shown.len(),
            found.len(),
            args.query
        )
    } else {
        format!(
            "{} skill{plural} matching `{}` in {registry_url}",
            found.len(),
            args.query
        )
    };
    printer.result(&summary);
    Ok(ExitStatus::Success)
}

async fn search_index(registries: &Registries, spec: &RegistrySpec) -> anyhow::Result<SearchIndex> {
    let registry = registries.open(spec, Access::Read).await?;
    Ok(registry.search_index().await?)
}

/// `name  version  description`, one skill a line, fitted to
/// [`TABLE_WIDTH`] by shortening descriptions.
fn table(entries: &[&SearchEntry]) -> String {
    let name_width = entries
        .iter()
        .map(|entry| entry.name.as_str().len())
        .max()
        .unwrap_or(0);
    let version_width = entries
        .iter()
        .map(|entry| entry.version.to_string().len())
        .max()
        .unwrap_or(0);
    let description_width = TABLE_WIDTH
        .saturating_sub(name_width + version_width + 4)
        .max(MIN_DESCRIPTION_WIDTH);
    entries
        .iter()
        .map(|entry| {
            let description = truncate(&one_line(&entry.description), description_width);
            format!(
                "{:name_width$}  {:version_width$}  {description}",
                entry.name.as_str(),
                entry.version.to_string(),
            )
            .trim_end()
            .to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}
