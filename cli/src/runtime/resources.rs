//! MCP's Skills Extension (SEP-2640) over the catalog: each file of a
//! served skill is a resource at `skill://<skill>/<path>`; `resources/list`
//! shows each skill's `SKILL.md`, `resources/directory/read` a folder's
//! direct children. Only URIs of files in a manifest resolve, and every
//! read is checked against the manifest's digest ([`ServedSkill::read`]).

use std::collections::BTreeSet;

use base64::Engine as _;
use rmcp::model::{DIRECTORY_MIME_TYPE, ErrorData, ReadResourceResult, Resource, ResourceContents};

use super::catalog::{self, MAX_SKILL_BYTES, ServedCatalog, ServedSkill};

/// `resources/list`: each skill's `SKILL.md`, as SEP-2640 lists them; the
/// other files are in `skills/list` and `resources/directory/read`.
pub fn list(catalog: &ServedCatalog) -> Vec<Resource> {
    catalog
        .skills()
        .iter()
        .map(|skill| {
            let size = skill
                .file("SKILL.md")
                .map_or(0, |file| skill.listed(file).size);
            Resource::new(skill.uri("SKILL.md"), skill.name.clone())
                .with_description(skill.frontmatter.description.clone())
                .with_mime_type("text/markdown")
                .with_size(size)
        })
        .collect()
}

/// `resources/read`: the file at `uri`, as text when it is UTF-8 without
/// NUL, else base64.
pub fn read(catalog: &ServedCatalog, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    // SEP-2164: -32602 (rmcp picks the code by protocol version), with the
    // URI in `data`.
    let not_found = || {
        ErrorData::resource_not_found(
            format!("no skill file at {uri}"),
            Some(serde_json::json!({ "uri": uri })),
        )
    };
    let (skill, path) = catalog.resolve_uri(uri).ok_or_else(not_found)?;
    let bytes = skill
        .read(&path, MAX_SKILL_BYTES)
        .map_err(|error| match error {
            catalog::ReadError::NotInSkill { .. } => not_found(),
            other => ErrorData::internal_error(format!("{other}; {}", other.hint()), None),
        })?;
    let contents = match std::str::from_utf8(&bytes) {
        Ok(text) if !text.contains('\0') => ResourceContents::text(text, uri),
        _ => ResourceContents::blob(
            base64::engine::general_purpose::STANDARD.encode(&bytes),
            uri,
        ),
    };
    let mime = match (&contents, mime_type(&path)) {
        (_, Some(mime)) => mime,
        (ResourceContents::TextResourceContents { .. }, None) => "text/plain",
        (_, None) => OCTET_STREAM,
    };
    Ok(ReadResourceResult::new(vec![contents.with_mime_type(mime)]))
}

/// Refuses a cursor: every list this server answers fits in one page and
/// carries no `nextCursor`, so no cursor a client holds came from it.
pub fn no_cursor(cursor: Option<&str>) -> Result<(), ErrorData> {
    match cursor {
        None => Ok(()),
        Some(cursor) => Err(ErrorData::invalid_params(
            format!(
                "invalid cursor `{cursor}`: this server returns every item in one page, so there is no next page to ask for"
            ),
            None,
        )),
    }
}

/// `resources/directory/read`: the direct children of the folder at `uri`
/// (`skill://<name>` or `skill://<name>/` for the skill's root).
pub fn directory(catalog: &ServedCatalog, uri: &str) -> Result<Vec<Resource>, ErrorData> {
    let not_a_directory =
        || ErrorData::invalid_params(format!("not a directory of a skill: {uri}"), None);
    let (skill, path) = catalog.resolve_uri(uri).ok_or_else(not_a_directory)?;
    children(skill, &path).ok_or_else(not_a_directory)
}

/// The direct children of the folder `path` of `skill` (`""` or a path
/// with or without a trailing `/`), or `None` when it is not a folder.
fn children(skill: &ServedSkill, path: &str) -> Option<Vec<Resource>> {
    let prefix = match path.trim_end_matches('/') {
        "" => String::new(),
        folder => format!("{folder}/"),
    };
    let mut folders = BTreeSet::new();
    let mut children = Vec::new();
    for file in &skill.files {
        let Some(rest) = file.path.strip_prefix(&prefix) else {
            continue;
        };
        match rest.split_once('/') {
            Some((folder, _)) => {
                folders.insert(folder.to_owned());
            }
            None => {
                children.push(
                    Resource::new(skill.uri(&file.path), rest.to_owned())
                        .with_size(skill.listed(file).size)
                        .with_mime_type(listed_mime_type(&file.path)),
                );
            }
        }
    }
    if children.is_empty() && folders.is_empty() {
        return None;
    }
    for folder in folders {
        children.push(
            Resource::new(skill.uri(&format!("{prefix}{folder}")), folder)
                .with_mime_type(DIRECTORY_MIME_TYPE),
        );
    }
    Some(children)
}

/// What a file of no known type is.
const OCTET_STREAM: &str = "application/octet-stream";

/// The MIME type a listing gives `path` without reading it: by its name,
/// else `application/octet-stream`. (`resources/read`, which has the
/// bytes, says `text/plain` for a text file of no known type.)
pub fn listed_mime_type(path: &str) -> &'static str {
    mime_type(path).unwrap_or(OCTET_STREAM)
}

/// The MIME type of a skill file by its name, for the common ones.
pub fn mime_type(path: &str) -> Option<&'static str> {
    let name = path.rsplit('/').next().unwrap_or(path);
    if matches!(
        name,
        "LICENSE"
            | "LICENCE"
            | "NOTICE"
            | "README"
            | "Makefile"
            | "Dockerfile"
            | "requirements.txt"
    ) {
        return Some("text/plain");
    }
    let extension = name.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match extension.as_str() {
        "md" | "markdown" => "text/markdown",
        "txt" | "text" | "log" => "text/plain",
        "toml" => "application/toml",
        "xml" | "xsd" | "xsl" => "application/xml",
        "ts" | "tsx" | "mts" | "cts" => "text/x-typescript",
        "rb" => "text/x-ruby",
        "go" => "text/x-go",
        "rs" => "text/x-rust",
        "css" => "text/css",
        "tsv" => "text/tab-separated-values",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "zip" => "application/zip",
        "ttf" => "font/ttf",
        "woff2" => "font/woff2",
        "json" => "application/json",
        "yaml" | "yml" => "application/yaml",
        "py" => "text/x-python",
        "sh" => "text/x-shellscript",
        "js" | "mjs" => "text/javascript",
        "html" => "text/html",
        "csv" => "text/csv",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "svg" => "image/svg+xml",
        "pdf" => "application/pdf",
        _ => return None,
    })
}
