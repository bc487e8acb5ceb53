//! `skillpkg info`: a skill's details and versions, from its index file.

use serde_json::json;
use skillpkg_index::archive::human_bytes;
use skillpkg_index::registry::{IndexRecord, latest};

use crate::args::InfoArgs;
use crate::client::registries::{Access, Registries, RegistrySpec};
use crate::client::registry;
use crate::client::registry_url::RegistryUrl;
use crate::commands::registries_here;
use crate::commands::verify::{provenance_lines, registry_provenance};
use crate::error::{ExitStatus, UserError};
use crate::printer::Printer;
use crate::render::one_line;
use crate::spec::SkillSpec;
use skillpkg_index::signing::Provenance;

pub fn run(args: &InfoArgs, printer: &Printer) -> anyhow::Result<ExitStatus> {
    let registries = registries_here(args.registry.registry.as_deref())?;
    let spec = registries.default_registry()?;
    let registry_url = spec.index.clone();
    let (records, index, provenance) =
        registry::block_on(records(&registries, spec, &args.skill))??;
    let record = &records[index];
    if args.json {
        printer.json(&json!({
            "registry": registry_url.to_string(),
            "record": record,
            "provenance": match &provenance {
                Some(Ok(provenance)) => json!(provenance),
                Some(Err(error)) => json!({ "error": error }),
                None => serde_json::Value::Null,
            },
            "versions": records.iter().rev().map(|record| json!({
                "version": record.vers.to_string(),
                "yanked": record.yanked,
                "yanked_reason": record.yanked_reason,
            })).collect::<Vec<_>>(),
        }));
    } else {
        printer.result(&info_text(record, &records, provenance.as_ref()));
    }
    Ok(ExitStatus::Success)
}

/// The versions, the index of the one to show, and its provenance (verified
/// against the registry's keys), if it has one.
async fn records(
    registries: &Registries,
    spec: &RegistrySpec,
    skill: &SkillSpec,
) -> anyhow::Result<(Vec<IndexRecord>, usize, Option<Result<Provenance, String>>)> {
    let registry = registries.open(spec, Access::Read).await?;
    let records = registry.index(&skill.name).await?;
    let selected = select(&records, skill, registry.url())?;
    let index = records
        .iter()
        .position(|record| std::ptr::eq(record, selected))
        .expect("selected from the records");
    let provenance = registry_provenance(&registry, &records[index]).await;
    Ok((records, index, provenance))
}

/// The version asked for, else the latest that is not yanked, else (every
/// version being yanked) the latest.
fn select<'records>(
    records: &'records [IndexRecord],
    skill: &SkillSpec,
    registry: &RegistryUrl,
) -> anyhow::Result<&'records IndexRecord> {
    let Some(version) = &skill.version else {
        return Ok(latest(records)
            .or_else(|| records.iter().max_by(|a, b| a.vers.cmp(&b.vers)))
            .expect("an index file that was found lists a version"));
    };
    records
        .iter()
        .find(|record| &record.vers == version)
        .ok_or_else(|| {
            let versions: Vec<String> = records
                .iter()
                .rev()
                .map(|record| {
                    if record.yanked {
                        format!("{} (yanked)", record.vers)
                    } else {
                        record.vers.to_string()
                    }
                })
                .collect();
            UserError::new(format!(
                "`{}` has no version {version} in {registry}",
                skill.name
            ))
            .with_hint(format!("its versions are: {}", versions.join(", ")))
            .into()
        })
}

fn info_text(
    record: &IndexRecord,
    records: &[IndexRecord],
    provenance: Option<&Result<Provenance, String>>,
) -> String {
    let mut lines = vec![
        format!("{} {}", record.name, record.vers),
        one_line(&record.description),
        String::new(),
        format!(
            "size:       {} ({} bytes)",
            human_bytes(record.size),
            record.size
        ),
        format!("checksum:   {}", record.cksum),
        format!("tree:       {}", one_line(&record.tree)),
        format!("files:      {}", record.files),
    ];
    let dependencies = if record.deps.is_empty() {
        "none".to_owned()
    } else {
        record
            .deps
            .iter()
            .map(|dependency| format!("{} {}", dependency.name, dependency.req))
            .collect::<Vec<_>>()
            .join(", ")
    };
    lines.push(format!("depends on: {dependencies}"));
    lines.push(format!(
        "signer:     {}",
        record
            .signer
            .as_deref()
            .map_or_else(|| "none (unsigned)".to_owned(), one_line)
    ));
    lines.push(format!("published:  {}", record.published));
    match provenance {
        Some(Ok(provenance)) => lines.extend(provenance_lines(provenance)),
        Some(Err(error)) => lines.push(format!("provenance: does not verify: {}", one_line(error))),
        None => lines.push("provenance: none".to_owned()),
    }
    if record.yanked {
        let reason = record
            .yanked_reason
            .as_deref()
            .map_or_else(|| "yes (no reason given)".to_owned(), one_line);
        lines.push(format!("yanked:     {reason}"));
    }
    lines.push(String::new());
    lines.push("versions:".to_owned());
    for other in records.iter().rev() {
        if other.yanked {
            lines.push(format!("  {}  ({})", other.vers, yank_note(other)));
        } else {
            lines.push(format!("  {}", other.vers));
        }
    }
    lines.join("\n")
}

fn yank_note(record: &IndexRecord) -> String {
    match &record.yanked_reason {
        Some(reason) => format!("yanked: {}", one_line(reason)),
        None => "yanked".to_owned(),
    }
}
