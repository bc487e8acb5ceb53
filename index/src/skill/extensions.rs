//! The Universal Agent Skill extensions, checked by the spec's own schema
//! and then by the rules a schema cannot say.
//!
//! Step one validates the whole frontmatter, turned into JSON, against the
//! frontmatter schema of spec 003 (Appendix A), embedded in the binary and
//! compiled once. Each schema error is mapped by its instance path to a
//! stable code of its own family (`tools[0].implementation.runtime` ->
//! `tool-runtime-invalid`) and placed at the YAML node it is about. Errors
//! on the base keys (`name`, `description`, `metadata`, ...) and on
//! `version` and `depends_on` are left to the hand-written checks in
//! [`super::validate`], which say more (a suggested name, a semver reason)
//! and are deliberately lenient where the real world is (`metadata` values
//! that are not strings, `allowed-tools` as a list: warnings). Keys the
//! schema does not know are `unknown-key` warnings there, as the spec
//! allows extra keys to be ignored.
//!
//! Step two reads every extension key whose value passed the schema into
//! the typed [`Extensions`] and checks what JSON Schema cannot: unique tool
//! names, entrypoints that stay inside the skill and fit their runtime,
//! tool schemas that are themselves valid JSON Schema 2020-12, permission
//! globs, secret names, provenance values. Entrypoints are checked against
//! the skill's files in [`check_entrypoints`], once the files are known.
//!
//! The schemas as printed in spec 003 double every backslash in their regex
//! patterns (`^2\\\\.[0-9]+$`), which would reject `version: "1.0.0"`; the
//! embedded copies use the intended patterns (`^2\\.[0-9]+$` in JSON).

use std::path::Path;
use std::sync::LazyLock;

use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::LocationSegment;
use serde_json::Value as Json;

use super::diagnostic::{Code, Diagnostic, Location};
use super::document::{Node, SkillDocument, Value};
use super::model::{Extensions, JsonObject, RESERVED_HOSTS, Runtime, Tool};
use super::protected;

/// Appendix A of spec 003, with the intended regex escapes.
pub const FRONTMATTER_SCHEMA: &str = include_str!("schemas/frontmatter.schema.json");
/// Appendix B of spec 003.
pub const TOOLS_SCHEMA: &str = include_str!("schemas/tools.schema.json");

static FRONTMATTER_VALIDATOR: LazyLock<jsonschema::Validator> =
    LazyLock::new(|| compile(FRONTMATTER_SCHEMA));

/// The compiled `tools.json` schema (Appendix B).
pub static TOOLS_VALIDATOR: LazyLock<jsonschema::Validator> =
    LazyLock::new(|| compile(TOOLS_SCHEMA));

fn compile(schema: &str) -> jsonschema::Validator {
    let schema: Json = serde_json::from_str(schema).expect("the embedded schema is JSON");
    jsonschema::draft202012::new(&schema).expect("the embedded schema compiles")
}

/// The Universal keys whose schema errors the hand-written checks report
/// (a semver reason, a dependency's parse error); the base keys are theirs
/// too, as is every key outside [`UNIVERSAL_KEYS`].
const CHECKED_BY_HAND: &[&str] = &["version", "depends_on"];

/// The Universal extension keys the typed model holds or the schema shapes.
pub(crate) const UNIVERSAL_KEYS: &[&str] = &[
    "version",
    "tags",
    "when_to_use",
    "tools",
    "permissions",
    "safety",
    "secrets",
    "depends_on",
    "provenance",
    "host_overrides",
    "evaluation",
    "extensions",
    "spec_version",
];

/// Where diagnostics go and what they point into.
pub(crate) struct Report<'a> {
    pub document: &'a SkillDocument,
    pub file: &'a Path,
    pub diagnostics: &'a mut Vec<Diagnostic>,
}

impl Report<'_> {
    fn push(
        &mut self,
        code: Code,
        location: Option<Location>,
        message: String,
        hint: Option<String>,
    ) {
        let mut diagnostic = Diagnostic::new(code, self.file, message);
        if let Some(location) = location {
            diagnostic = diagnostic.at(location, &self.document.text);
        }
        diagnostic.hint = hint;
        // The schema can report one spot twice (a pattern and a length).
        if !self.diagnostics.iter().any(|d| {
            d.code == diagnostic.code
                && d.location == diagnostic.location
                && d.file == diagnostic.file
        }) {
            self.diagnostics.push(diagnostic);
        }
    }
}

/// Checks the Universal extension keys of `document` and returns the typed
/// model of those that are valid.
pub(crate) fn check(report: &mut Report<'_>) -> Extensions {
    let mut object = JsonObject::new();
    for (key, value) in &report.document.frontmatter {
        if let Some(key) = key.value.as_str() {
            object.insert(key.to_owned(), value.value.to_json());
        }
    }
    let mut failed_keys = Vec::new();
    // Only errors under a schema-checked key are reported, and an error's
    // path names a key the frontmatter has: without one (most skills have
    // only base keys) there is nothing to report, and the schema, the most
    // expensive part of a one-skill run, need not be compiled.
    let schema_checked = |key: &String| {
        UNIVERSAL_KEYS.contains(&key.as_str()) && !CHECKED_BY_HAND.contains(&key.as_str())
    };
    let has_checked_key = object.keys().any(schema_checked);
    let instance = Json::Object(object);
    let errors = has_checked_key
        .then(|| FRONTMATTER_VALIDATOR.iter_errors(&instance))
        .into_iter()
        .flatten();
    for error in errors {
        let path: Vec<Segment> = error.instance_path().iter().map(Segment::from).collect();
        let Some(Segment::Key(top)) = path.first() else {
            // Required keys, unknown keys and a non-mapping frontmatter are
            // the hand-written checks' business.
            continue;
        };
        if !schema_checked(top) {
            continue;
        }
        failed_keys.push(top.clone());
        schema_diagnostic(report, &path, error.kind(), &error.to_string());
    }

    let mut extensions = Extensions::default();
    let Json::Object(object) = instance else {
        unreachable!("built as an object")
    };
    for (key, value) in object {
        if failed_keys.contains(&key) || !UNIVERSAL_KEYS.contains(&key.as_str()) {
            continue;
        }
        if key == "safety" && !check_safety(report, &value) {
            continue;
        }
        if key == "provenance" && !check_provenance_types(report, &value) {
            continue;
        }
        if let Err(error) = extensions.read(&key, value) {
            let code = family_code(&key);
            let location =
                node_at(report.document, &[Segment::Key(key.clone())]).map(|n| n.location);
            report.push(code, location, format!("`{key}` is invalid: {error}"), None);
        }
    }
    check_tools(report, &extensions);
    check_permissions(report, &extensions);
    check_secrets(report, &extensions);
    check_provenance(report, &extensions);
    check_host_overrides(report, &extensions);
    extensions
}

/// One step of a path into the frontmatter.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

impl From<LocationSegment<'_>> for Segment {
    fn from(segment: LocationSegment<'_>) -> Self {
        match segment {
            LocationSegment::Property(key) => Self::Key(key.into_owned()),
            LocationSegment::Index(index) => Self::Index(index),
        }
    }
}

/// Renders a path the way messages name fields: `tools[0].implementation`.
fn display_path(path: &[Segment]) -> String {
    let mut text = String::new();
    for segment in path {
        match segment {
            Segment::Key(key) => {
                if !text.is_empty() {
                    text.push('.');
                }
                text.push_str(key);
            }
            Segment::Index(index) => text.push_str(&format!("[{index}]")),
        }
    }
    text
}

/// Returns the node at `path`, or `None` when the path leaves the document.
fn node_at<'a>(document: &'a SkillDocument, path: &[Segment]) -> Option<&'a Node> {
    let (Segment::Key(first), rest) = path.split_first()? else {
        return None;
    };
    let mut node = document.get(first)?.1;
    for segment in rest {
        node = match (segment, &node.value) {
            (Segment::Key(key), Value::Mapping(entries)) => entries
                .iter()
                .find(|(k, _)| k.value.as_str() == Some(key))
                .map(|(_, v)| v)?,
            (Segment::Index(index), Value::Sequence(items)) => items.get(*index)?,
            _ => return None,
        };
    }
    Some(node)
}

/// Returns the key node of `key` in the mapping at `path`.
fn key_node_at<'a>(document: &'a SkillDocument, path: &[Segment], key: &str) -> Option<&'a Node> {
    if path.is_empty() {
        return document.get(key).map(|(k, _)| k);
    }
    match &node_at(document, path)?.value {
        Value::Mapping(entries) => entries
            .iter()
            .find(|(k, _)| k.value.as_str() == Some(key))
            .map(|(k, _)| k),
        _ => None,
    }
}

/// The code of each top-level extension key's family.
fn family_code(key: &str) -> Code {
    match key {
        "spec_version" => Code::SpecVersionInvalid,
        "when_to_use" => Code::WhenToUseInvalid,
        "tools" => Code::ToolsInvalid,
        "permissions" => Code::PermissionsInvalid,
        "safety" => Code::SafetyInvalid,
        "secrets" => Code::SecretsInvalid,
        "provenance" => Code::ProvenanceInvalid,
        "host_overrides" => Code::HostOverridesInvalid,
        _ => Code::InvalidFieldType,
    }
}

/// The code of a schema error at `path` inside `tools`.
fn tool_code(path: &[Segment], kind: &ValidationErrorKind) -> Code {
    match path.get(2) {
        None => match kind {
            ValidationErrorKind::Required { property } => match property.as_str() {
                Some("name") => Code::ToolNameInvalid,
                Some("description") => Code::ToolDescriptionInvalid,
                Some("input_schema") => Code::ToolSchemaInvalid,
                Some("implementation") => Code::ToolImplementationInvalid,
                _ => Code::ToolsInvalid,
            },
            _ => Code::ToolsInvalid,
        },
        Some(Segment::Key(field)) => match field.as_str() {
            "name" => Code::ToolNameInvalid,
            "description" => Code::ToolDescriptionInvalid,
            "input_schema" | "output_schema" => Code::ToolSchemaInvalid,
            "confirmation" => Code::ToolConfirmationInvalid,
            "implementation" if path.get(3) == Some(&Segment::Key("runtime".into())) => {
                Code::ToolRuntimeInvalid
            }
            "implementation" => Code::ToolImplementationInvalid,
            _ => Code::ToolsInvalid,
        },
        Some(Segment::Index(_)) => Code::ToolsInvalid,
    }
}

fn schema_diagnostic(
    report: &mut Report<'_>,
    path: &[Segment],
    kind: &ValidationErrorKind,
    fallback: &str,
) {
    let Segment::Key(top) = &path[0] else {
        return;
    };
    let code = if top == "tools" && path.len() > 1 {
        tool_code(path, kind)
    } else {
        family_code(top)
    };
    let field = display_path(path);
    let node = node_at(report.document, path);
    let mut location = node.map(|node| node.location);
    let mut hint = None;
    let message = match kind {
        ValidationErrorKind::Type { kind } => {
            let expected = format!("{kind:?}").to_lowercase();
            let expected = expected.trim_start_matches("single(").trim_end_matches(')');
            let found = node.map_or("something else", |node| node.value.type_name());
            if top == "when_to_use" && path.len() == 1 {
                hint = Some("spec 003's `when_to_use` is a mapping of `mentions`, `file_types`, `intents` and `priority`; say in prose when to use the skill in `description`".into());
            }
            if top == "tools"
                && path.len() == 2
                && matches!(node.map(|n| &n.value), Some(Value::String(_)))
            {
                hint = Some("`tools` holds tool definitions (spec 003); a list of agent tool names to pre-approve belongs in `allowed-tools`".into());
            }
            if hint.is_none() {
                let last = path.iter().rev().find_map(|segment| match segment {
                    Segment::Key(key) => Some(key.as_str()),
                    Segment::Index(_) => None,
                });
                let key = last.unwrap_or("key");
                hint = Some(match expected {
                    "array" if key == "tools" || key == "host_overrides" => {
                        format!(
                            "write `{key}:` then one `- ` entry per item, each a mapping (see docs/skill-format.md)"
                        )
                    }
                    "array" => format!(
                        "write a YAML list: `{key}: [first, second]`, or one `- item` per line"
                    ),
                    "object" => {
                        format!("write a mapping under `{key}:`, one `name: value` per line")
                    }
                    "boolean" => format!("write `{key}: true` or `{key}: false`"),
                    "string" => format!("quote the value: `{key}: \"...\"`"),
                    "integer" => format!("write a whole number: `{key}: 1`"),
                    _ => format!("see docs/skill-format.md for the shape of `{key}`"),
                });
            }
            format!("`{field}` must be {}, not {found}", article(expected))
        }
        ValidationErrorKind::Required { property } => {
            let property = property.as_str().unwrap_or_default();
            hint = Some(required_hint(top, property));
            if field.is_empty() {
                format!("`{property}` is required")
            } else {
                format!("`{field}` has no `{property}`")
            }
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let key = unexpected.first().cloned().unwrap_or_default();
            if let Some(key_node) = key_node_at(report.document, path, &key) {
                location = Some(key_node.location);
            }
            hint = known_keys_hint(path, &key);
            format!("`{field}` has the unknown key `{key}`")
        }
        ValidationErrorKind::Enum { options } => {
            let allowed: Vec<String> = options
                .as_array()
                .map(|items| {
                    items
                        .iter()
                        .map(|item| format!("`{}`", item.as_str().unwrap_or_default()))
                        .collect()
                })
                .unwrap_or_default();
            let found = node
                .and_then(|node| node.value.scalar_text())
                .unwrap_or_default();
            if code == Code::ToolRuntimeInvalid {
                hint = Some(
                    "spec 003 defines three runtimes; run other languages from a `bash` entrypoint"
                        .into(),
                );
            }
            format!(
                "`{field}` is `{found}`; expected one of {}",
                allowed.join(", ")
            )
        }
        ValidationErrorKind::Pattern { .. } => {
            let found = node
                .and_then(|node| node.value.as_str())
                .unwrap_or_default()
                .to_owned();
            match code {
                Code::ToolNameInvalid => {
                    let reason = found
                        .parse::<super::model::ToolName>()
                        .err()
                        .unwrap_or_default();
                    hint = Some("tool names follow the skill name rules: lowercase letters, digits and single hyphens, like `extract-text`".into());
                    format!("tool name `{found}` is invalid: {reason}")
                }
                Code::SpecVersionInvalid => {
                    hint = Some("this is the version of spec 003 the skill follows, like `spec_version: \"2.1\"`".into());
                    format!("`spec_version` `{found}` is not `2.<minor>`")
                }
                _ => format!("`{field}` `{found}` does not have the required form"),
            }
        }
        ValidationErrorKind::MinLength { .. } => format!("`{field}` is empty"),
        ValidationErrorKind::MaxLength { limit } => {
            let length = node
                .and_then(|node| node.value.as_str())
                .map_or(0, |text| text.chars().count());
            format!("`{field}` is {length} characters long; the limit is {limit}")
        }
        ValidationErrorKind::Minimum { limit } => {
            let found = node
                .and_then(|node| node.value.scalar_text())
                .unwrap_or_default();
            format!("`{field}` is {found}; the minimum is {limit}")
        }
        _ => format!("`{field}` is invalid: {fallback}"),
    };
    report.push(code, location, message, hint);
}

fn article(word: &str) -> String {
    match word {
        "object" => "a mapping".into(),
        "array" => "a list".into(),
        "integer" => "an integer".into(),
        "boolean" => "`true` or `false`".into(),
        other => format!("a {other}"),
    }
}

fn required_hint(top: &str, property: &str) -> String {
    match (top, property) {
        ("tools", "name") => "give the tool a `name:` such as `extract-text`".into(),
        ("tools", "description") => "add `description:` saying what the tool does".into(),
        ("tools", "input_schema") => {
            "add `input_schema:` with `type: object` and the tool's arguments as `properties`".into()
        }
        ("tools", "implementation") => {
            "add `implementation:` with `runtime:` (python, node or bash) and `entrypoint:` (a script in the skill)".into()
        }
        ("tools", "runtime") => "add `runtime: python`, `node` or `bash`".into(),
        ("tools", "entrypoint") => "add `entrypoint:` with the script's path inside the skill, like `scripts/run.py`".into(),
        ("secrets", _) => "each secret needs `name:` (the environment variable) and `usage: env`".into(),
        ("host_overrides", _) => "each override needs `host:` and `config:`".into(),
        _ => format!("add `{property}`"),
    }
}

/// Lists the keys the schema allows where `unknown` was found, with the
/// closest one first when it is a likely typo.
fn known_keys_hint(path: &[Segment], unknown: &str) -> Option<String> {
    let schema: &Json = &FRONTMATTER_SCHEMA_JSON;
    let mut node = schema.get("properties")?;
    let mut object = None;
    for segment in path {
        match segment {
            Segment::Key(key) => {
                let property = node.get(key)?;
                let resolved = resolve_ref(schema, property);
                object = Some(resolved);
                node = resolved.get("properties").unwrap_or(&Json::Null);
            }
            Segment::Index(_) => {
                let items = resolve_ref(schema, object?.get("items")?);
                object = Some(items);
                node = items.get("properties").unwrap_or(&Json::Null);
            }
        }
    }
    let known: Vec<&String> = node.as_object()?.keys().collect();
    let closest = known
        .iter()
        .map(|key| (strsim::levenshtein(unknown, key), *key))
        .filter(|(distance, _)| *distance <= 2)
        .min();
    let list = known
        .iter()
        .map(|key| format!("`{key}`"))
        .collect::<Vec<_>>()
        .join(", ");
    Some(match closest {
        Some((_, key)) => format!("did you mean `{key}`? The keys allowed here are {list}"),
        None => format!("the keys allowed here are {list}"),
    })
}

static FRONTMATTER_SCHEMA_JSON: LazyLock<Json> =
    LazyLock::new(|| serde_json::from_str(FRONTMATTER_SCHEMA).expect("embedded schema is JSON"));

fn resolve_ref<'a>(schema: &'a Json, node: &'a Json) -> &'a Json {
    match node.get("$ref").and_then(Json::as_str) {
        Some(reference) => reference
            .strip_prefix('#')
            .and_then(|pointer| schema.pointer(pointer))
            .unwrap_or(node),
        None => node,
    }
}

/// Checks the keys of `safety` the spec defines (the schema leaves
/// `safety` open), each at its own node. Returns false if one is invalid.
fn check_safety(report: &mut Report<'_>, safety: &Json) -> bool {
    const LEVELS: &[&str] = &["never", "always", "destructive_writes", "external_network"];
    let mut valid = true;
    let top = Segment::Key("safety".into());
    if let Some(gates) = safety.get("require_confirmation_for") {
        let path = [top.clone(), Segment::Key("require_confirmation_for".into())];
        match gates.as_array() {
            Some(items) => {
                for (index, item) in items.iter().enumerate() {
                    if item.as_str().is_some_and(|level| LEVELS.contains(&level)) {
                        continue;
                    }
                    valid = false;
                    let mut item_path = path.to_vec();
                    item_path.push(Segment::Index(index));
                    let location = location_of(report, &item_path);
                    let shown = item
                        .as_str()
                        .map_or_else(|| item.to_string(), str::to_owned);
                    report.push(
                        Code::SafetyInvalid,
                        location,
                        format!("`safety.require_confirmation_for[{index}]` is `{shown}`, not a confirmation gate"),
                        Some(format!("the gates are {}", LEVELS.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", "))),
                    );
                }
            }
            None => {
                valid = false;
                let location = location_of(report, &path);
                report.push(
                    Code::SafetyInvalid,
                    location,
                    "`safety.require_confirmation_for` must be a list".into(),
                    Some("write `require_confirmation_for: [destructive_writes]`".into()),
                );
            }
        }
    }
    if let Some(redact) = safety.get("redact") {
        let path = [top, Segment::Key("redact".into())];
        let problem = match redact.as_object() {
            None => Some((
                "`safety.redact` must be a mapping".to_owned(),
                path.to_vec(),
            )),
            Some(entries) => entries.iter().find_map(|(key, value)| {
                let mut entry_path = path.to_vec();
                entry_path.push(Segment::Key(key.clone()));
                match key.as_str() {
                    "secrets" | "pii" if !value.is_boolean() => Some((
                        format!("`safety.redact.{key}` must be `true` or `false`"),
                        entry_path,
                    )),
                    "secrets" | "pii" => None,
                    _ => Some((
                        format!("`safety.redact` has the unknown key `{key}`"),
                        entry_path,
                    )),
                }
            }),
        };
        if let Some((message, at)) = problem {
            valid = false;
            let location = location_of(report, &at);
            report.push(
                Code::SafetyInvalid,
                location,
                message,
                Some("write `redact: {secrets: true, pii: true}`".into()),
            );
        }
    }
    valid
}

/// Checks the types of the `provenance` keys spec 003 shows (the schema
/// leaves `provenance` open), each at its own node.
fn check_provenance_types(report: &mut Report<'_>, provenance: &Json) -> bool {
    let mut valid = true;
    for (key, expected) in [
        ("source_repo", "a string"),
        ("source_commit", "a string"),
        ("signature", "a string"),
        ("reviewed_by", "a list of strings"),
    ] {
        let Some(value) = provenance.get(key) else {
            continue;
        };
        let ok = match key {
            "reviewed_by" => value
                .as_array()
                .is_some_and(|items| items.iter().all(Json::is_string)),
            _ => value.is_string(),
        };
        if !ok {
            valid = false;
            let location = location_of(
                report,
                &[Segment::Key("provenance".into()), Segment::Key(key.into())],
            );
            report.push(
                Code::ProvenanceInvalid,
                location,
                format!("`provenance.{key}` must be {expected}"),
                None,
            );
        }
    }
    valid
}

fn tool_path(index: usize, rest: &[&str]) -> Vec<Segment> {
    let mut path = vec![Segment::Key("tools".into()), Segment::Index(index)];
    path.extend(rest.iter().map(|key| Segment::Key((*key).into())));
    path
}

fn location_of(report: &Report<'_>, path: &[Segment]) -> Option<Location> {
    node_at(report.document, path).map(|node| node.location)
}

fn check_tools(report: &mut Report<'_>, extensions: &Extensions) {
    let mut seen: Vec<&str> = Vec::new();
    for (index, tool) in extensions.tools.iter().enumerate() {
        if seen.contains(&tool.name.as_str()) {
            let location = location_of(report, &tool_path(index, &["name"]));
            report.push(
                Code::ToolNameDuplicate,
                location,
                format!("two tools are named `{}`", tool.name),
                Some("tool names must be unique within a skill: hosts call tools by name".into()),
            );
        }
        seen.push(tool.name.as_str());
        check_tool_schema(report, index, "input_schema", &tool.input_schema);
        match &tool.output_schema {
            Some(schema) => check_tool_schema(report, index, "output_schema", schema),
            None => {
                let location = location_of(report, &tool_path(index, &["name"]));
                report.push(
                    Code::ToolOutputSchemaMissing,
                    location,
                    format!("tool `{}` has an `input_schema` but no `output_schema`", tool.name),
                    Some("declare what the tool returns, so hosts can check results (MCP `outputSchema`, structured outputs)".into()),
                );
            }
        }
        check_entrypoint_path(report, index, tool);
    }
}

fn check_tool_schema(report: &mut Report<'_>, index: usize, field: &str, schema: &JsonObject) {
    let path = tool_path(index, &[field]);
    let location = location_of(report, &path);
    let name = display_path(&path);
    let json = Json::Object(schema.clone());
    if schema.get("type").and_then(Json::as_str) != Some("object") {
        report.push(
            Code::ToolSchemaInvalid,
            location,
            format!("`{name}` must have `type: object` at its top"),
            Some("tool arguments and results are JSON objects: put them under `properties`".into()),
        );
        return;
    }
    if let Err(error) = jsonschema::draft202012::meta::validate(&json) {
        report.push(
            Code::ToolSchemaInvalid,
            location,
            format!("`{name}` is not valid JSON Schema 2020-12: {error}"),
            None,
        );
        return;
    }
    // The meta-schema does not look inside regexes or follow `$ref`s:
    // compiling does, as a call will (no `$ref` is ever fetched).
    if let Err(error) = super::tools::compile_schema(&json) {
        let error = error.to_string();
        // Say what happened in the author's terms, not the library's.
        let problem = match error.split('\'').nth(1) {
            Some(reference) if error.contains("is not present in a registry") => format!(
                "it refers to `{reference}`, outside the schema, and schemas are never fetched"
            ),
            _ => error,
        };
        report.push(
            Code::ToolSchemaInvalid,
            location,
            format!("`{name}` cannot be compiled: {problem}"),
            Some("a tool schema must be self-contained: use `$defs` and `#/...` references, and regex patterns that compile".into()),
        );
        return;
    }
    if let Some(pointer) = first_open_object(&json, String::new()) {
        let at = if pointer.is_empty() {
            "its top".to_owned()
        } else {
            format!("`{pointer}`")
        };
        report.push(
            Code::ToolSchemaOpen,
            location,
            format!("`{name}` allows unknown properties at {at}"),
            Some("set `additionalProperties: false` on every object schema, for predictable validation and OpenAI strict mode".into()),
        );
    }
}

/// Returns the JSON pointer of the first object schema that does not set
/// `additionalProperties: false`.
fn first_open_object(schema: &Json, pointer: String) -> Option<String> {
    let object = schema.as_object()?;
    let is_object = object.get("type").and_then(Json::as_str) == Some("object")
        || object.contains_key("properties");
    if is_object && object.get("additionalProperties") != Some(&Json::Bool(false)) {
        return Some(pointer);
    }
    for (key, value) in object {
        match key.as_str() {
            "properties" | "$defs" | "definitions" | "patternProperties" => {
                for (name, sub) in value.as_object().into_iter().flatten() {
                    if let Some(found) =
                        first_open_object(sub, format!("{pointer}/{key}/{}", escape_pointer(name)))
                    {
                        return Some(found);
                    }
                }
            }
            "items" | "additionalProperties" | "not" => {
                if let Some(found) = first_open_object(value, format!("{pointer}/{key}")) {
                    return Some(found);
                }
            }
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                for (position, sub) in value.as_array().into_iter().flatten().enumerate() {
                    if let Some(found) =
                        first_open_object(sub, format!("{pointer}/{key}/{position}"))
                    {
                        return Some(found);
                    }
                }
            }
            _ => {}
        }
    }
    None
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Why an entrypoint path cannot name a file inside the skill, if it cannot.
fn entrypoint_problem(entrypoint: &str) -> Option<&'static str> {
    if entrypoint.is_empty() {
        return Some("it is empty");
    }
    if entrypoint.contains('\\') {
        return Some("it contains `\\`; paths in a skill use `/`");
    }
    if entrypoint.starts_with('/') || entrypoint.as_bytes().get(1) == Some(&b':') {
        return Some("it is absolute; paths are relative to the skill folder");
    }
    if entrypoint.split('/').any(|part| part == "..") {
        return Some("it climbs out with `..`");
    }
    if entrypoint.chars().any(char::is_control) {
        return Some("it contains a control character");
    }
    None
}

fn check_entrypoint_path(report: &mut Report<'_>, index: usize, tool: &Tool) {
    let implementation = &tool.implementation;
    let path = tool_path(index, &["implementation", "entrypoint"]);
    let location = location_of(report, &path);
    let entrypoint = &implementation.entrypoint;
    if let Some(problem) = entrypoint_problem(entrypoint) {
        report.push(
            Code::ToolEntrypointOutside,
            location,
            format!("the entrypoint `{entrypoint}` of tool `{}` does not stay inside the skill: {problem}", tool.name),
            Some("name a file inside the skill folder, like `scripts/run.py`".into()),
        );
        return;
    }
    let runtime = implementation.runtime;
    let extension = Path::new(entrypoint)
        .extension()
        .and_then(|extension| extension.to_str())
        .unwrap_or_default();
    if !runtime.extensions().contains(&extension) {
        let expected = runtime
            .extensions()
            .iter()
            .map(|extension| format!("`.{extension}`"))
            .collect::<Vec<_>>()
            .join(" or ");
        let hint = if runtime == Runtime::Node && extension == "ts" {
            "Node cannot run TypeScript as is: compile it to `.js` or `.mjs` and point the entrypoint there".to_owned()
        } else {
            match Runtime::ALL
                .into_iter()
                .find(|other| other.extensions().contains(&extension))
            {
                Some(other) => format!("a `.{extension}` file runs with `runtime: {other}`"),
                None => format!("rename the script to end in {expected}"),
            }
        };
        report.push(
            Code::ToolEntrypointExtension,
            location,
            format!("the entrypoint `{entrypoint}` of tool `{}` does not end in {expected}, as `runtime: {runtime}` requires", tool.name),
            Some(hint),
        );
    }
}

/// Checks that every tool's entrypoint is a file the skill holds (and
/// packs: `files` is the packaging walk, so an ignored file counts as
/// missing).
pub(crate) fn check_entrypoints(
    report: &mut Report<'_>,
    extensions: &Extensions,
    files: &dyn Fn(&str) -> bool,
) {
    for (index, tool) in extensions.tools.iter().enumerate() {
        let entrypoint = &tool.implementation.entrypoint;
        if entrypoint_problem(entrypoint).is_some() {
            continue;
        }
        let normalized = entrypoint.trim_start_matches("./");
        if !files(normalized) {
            let location =
                location_of(report, &tool_path(index, &["implementation", "entrypoint"]));
            report.push(
                Code::ToolEntrypointMissing,
                location,
                format!("the entrypoint `{entrypoint}` of tool `{}` is not a file in the skill", tool.name),
                Some("create the script, fix the path, or check that `.skillignore` does not leave it out".into()),
            );
        }
    }
}

/// Patterns that grant everything they could: the spec's example of an
/// overbroad permission is `**/*`.
fn is_overbroad_glob(glob: &str) -> bool {
    let trimmed = glob.trim_start_matches("./");
    trimmed
        .split('/')
        .all(|part| part.chars().all(|c| c == '*'))
}

fn check_permissions(report: &mut Report<'_>, extensions: &Extensions) {
    let Some(permissions) = &extensions.permissions else {
        return;
    };
    for (access, globs) in [
        ("read", &permissions.filesystem.read),
        ("write", &permissions.filesystem.write),
    ] {
        for (index, glob) in globs.iter().enumerate() {
            let path = [
                Segment::Key("permissions".into()),
                Segment::Key("filesystem".into()),
                Segment::Key(access.into()),
                Segment::Index(index),
            ];
            let location = location_of(report, &path);
            if let Some(problem) = glob_problem(glob) {
                report.push(
                    Code::PermissionGlobInvalid,
                    location,
                    format!("`permissions.filesystem.{access}` pattern `{glob}` is invalid: {problem}"),
                    Some("patterns match root-relative paths with `/`: `*` within a folder, `**` across folders, like `output/**` or `**/*.pdf`".into()),
                );
                continue;
            }
            if is_overbroad_glob(glob) {
                report.push(
                    Code::PermissionOverbroad,
                    location,
                    format!("`permissions.filesystem.{access}` pattern `{glob}` grants every file"),
                    Some("grant only what the skill needs, like `**/*.pdf` or `output/**`".into()),
                );
            }
            // The same rule `skillpkg mcp` refuses the grant by; a warning
            // here, since only the operator who runs the skill can decide.
            let protected_access = match access {
                "read" => protected::Access::Read,
                _ => protected::Access::Write,
            };
            if let Some(hit) = protected::glob_reaches(glob, protected_access) {
                report.push(
                    Code::PermissionProtectedPath,
                    location,
                    hit.describe(protected_access, glob),
                    Some(format!(
                        "`skillpkg mcp` refuses this grant; grant a folder of the skill's own, like `output/**`, or, to run it anyway, start `skillpkg mcp --allow-grant '{}={glob}'`",
                        report
                            .document
                            .get("name")
                            .and_then(|(_, node)| node.value.as_str())
                            .unwrap_or("SKILL")
                    )),
                );
            }
        }
    }
    for (index, host) in permissions.network.outbound.iter().enumerate() {
        let trimmed = host.trim();
        if trimmed.is_empty()
            || trimmed.chars().all(|c| matches!(c, '*' | '.'))
            || trimmed == "0.0.0.0/0"
        {
            let path = [
                Segment::Key("permissions".into()),
                Segment::Key("network".into()),
                Segment::Key("outbound".into()),
                Segment::Index(index),
            ];
            let location = location_of(report, &path);
            if trimmed.is_empty() {
                report.push(
                    Code::PermissionGlobInvalid,
                    location,
                    "`permissions.network.outbound` holds an empty host".into(),
                    Some(
                        "list host names, like `api.example.com`; an empty list means no network"
                            .into(),
                    ),
                );
            } else {
                report.push(
                    Code::PermissionOverbroad,
                    location,
                    format!("`permissions.network.outbound` entry `{host}` grants every host"),
                    Some("list the hosts the skill talks to, like `api.example.com`".into()),
                );
            }
        }
    }
}

/// Why a filesystem permission glob breaks the spec's glob rules, if it does.
fn glob_problem(glob: &str) -> Option<String> {
    if glob.is_empty() {
        return Some("it is empty".into());
    }
    if glob.starts_with('!') {
        return Some(
            "negation (`!`) is not part of the spec's globs; permissions only grant".into(),
        );
    }
    if glob.contains('\\') {
        return Some("it contains `\\`; separate folders with `/`".into());
    }
    if glob.starts_with('/') || glob.starts_with('~') || glob.as_bytes().get(1) == Some(&b':') {
        return Some("it is absolute; patterns are relative to the root the host grants".into());
    }
    if glob.split('/').any(|part| part == "..") {
        return Some("it climbs out with `..`".into());
    }
    globset::GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .err()
        .map(|error| error.kind().to_string())
}

fn check_secrets(report: &mut Report<'_>, extensions: &Extensions) {
    let mut seen = Vec::new();
    for (index, secret) in extensions.secrets.iter().enumerate() {
        let path = [
            Segment::Key("secrets".into()),
            Segment::Key("required".into()),
            Segment::Index(index),
            Segment::Key("name".into()),
        ];
        let location = location_of(report, &path);
        let name = &secret.name;
        if !is_env_var_name(name) {
            report.push(
                Code::SecretsInvalid,
                location,
                format!("secret name `{name}` is not an environment variable name"),
                Some("secrets are passed as environment variables: use letters, digits and `_`, like `OCR_SERVICE_API_KEY`".into()),
            );
        } else if seen.contains(&name) {
            report.push(
                Code::SecretsInvalid,
                location,
                format!("the secret `{name}` is listed twice"),
                None,
            );
        }
        seen.push(name);
    }
}

fn check_provenance(report: &mut Report<'_>, extensions: &Extensions) {
    let Some(provenance) = &extensions.provenance else {
        return;
    };
    if let Some(repo) = &provenance.source_repo {
        let parsed = url::Url::parse(repo);
        let ok = parsed.as_ref().is_ok_and(|url| {
            matches!(url.scheme(), "https" | "http" | "ssh" | "git") && url.host_str().is_some()
        });
        if !ok {
            let location = location_of(
                report,
                &[
                    Segment::Key("provenance".into()),
                    Segment::Key("source_repo".into()),
                ],
            );
            report.push(
                Code::ProvenanceInvalid,
                location,
                format!("`provenance.source_repo` `{repo}` is not a repository URL"),
                Some("write the repository's URL, like `https://github.com/org/repo`".into()),
            );
        }
    }
    if let Some(commit) = &provenance.source_commit {
        let ok = (7..=64).contains(&commit.len()) && commit.chars().all(|c| c.is_ascii_hexdigit());
        if !ok {
            let location = location_of(
                report,
                &[
                    Segment::Key("provenance".into()),
                    Segment::Key("source_commit".into()),
                ],
            );
            report.push(
                Code::ProvenanceInvalid,
                location,
                format!("`provenance.source_commit` `{commit}` is not a commit hash"),
                Some("write the full hexadecimal commit id (`git rev-parse HEAD`)".into()),
            );
        }
    }
}

fn check_host_overrides(report: &mut Report<'_>, extensions: &Extensions) {
    for (index, host_override) in extensions.host_overrides.iter().enumerate() {
        if RESERVED_HOSTS.contains(&host_override.host.as_str()) {
            continue;
        }
        let path = [
            Segment::Key("host_overrides".into()),
            Segment::Index(index),
            Segment::Key("host".into()),
        ];
        let location = location_of(report, &path);
        let closest = RESERVED_HOSTS
            .iter()
            .map(|known| (strsim::levenshtein(&host_override.host, known), *known))
            .min()
            .filter(|(distance, _)| *distance <= 3);
        let list = RESERVED_HOSTS.join(", ");
        report.push(
            Code::HostOverrideUnknown,
            location,
            format!(
                "`host_overrides[{index}].host` `{}` is not a host identifier spec 003 reserves",
                host_override.host
            ),
            Some(match closest {
                Some((_, known)) => {
                    format!("did you mean `{known}`? The reserved identifiers are {list}")
                }
                None => {
                    format!("the reserved identifiers are {list}; hosts look only for their own")
                }
            }),
        );
    }
}

/// The rules the Claude API adds for the extensions: its code execution
/// container has no network and installs no packages (spec 003, "Host
/// Profile: Claude API").
pub(crate) fn check_claude_api(report: &mut Report<'_>, extensions: &Extensions) {
    if let Some(permissions) = &extensions.permissions
        && !permissions.network.outbound.is_empty()
    {
        let location = location_of(
            report,
            &[
                Segment::Key("permissions".into()),
                Segment::Key("network".into()),
                Segment::Key("outbound".into()),
            ],
        );
        report.push(
                Code::HostNetwork,
                location,
                format!(
                    "`permissions.network.outbound` asks for {}; the Claude API runs skills without network access",
                    permissions.network.outbound.join(", ")
                ),
                Some("make the skill work offline and set `outbound: []`, or do not target the Claude API".into()),
            );
    }
    for (index, tool) in extensions.tools.iter().enumerate() {
        let Some(dependencies) = &tool.implementation.dependencies else {
            continue;
        };
        if dependencies.requires_install() {
            let location = location_of(
                report,
                &tool_path(index, &["implementation", "dependencies"]),
            );
            report.push(
                Code::HostDependencyInstall,
                location,
                format!("tool `{}` declares dependencies to install; the Claude API installs no packages", tool.name),
                Some("vendor the dependencies into the skill or rely on packages the container already has, and say so in `dependencies.notes`".into()),
            );
        }
    }
}

/// The rule OpenAI adds: a tool is called with `strict: true` only when
/// its input schema meets the strict profile (spec 003, "OpenAI
/// Strict-Compatible Schema Profile"; the checks are in
/// [`super::tools::strict`]). Each break is named by its JSON pointer.
pub(crate) fn check_openai(report: &mut Report<'_>, extensions: &Extensions) {
    for (index, tool) in extensions.tools.iter().enumerate() {
        let location = location_of(report, &tool_path(index, &["input_schema"]));
        for violation in super::tools::strict::check(&tool.input_schema) {
            let at = if violation.pointer.is_empty() {
                "its top".to_owned()
            } else {
                format!("`{}`", violation.pointer)
            };
            report.push(
                Code::HostOpenaiStrict,
                location,
                format!(
                    "the input schema of tool `{}` breaks OpenAI's strict profile at {at}: {}",
                    tool.name, violation.message
                ),
                Some("OpenAI calls the tool with `strict: true` only if every object schema sets `additionalProperties: false` and lists every property in `required` (use `type: [\"string\", \"null\"]` for optional ones); see docs/tools.md".into()),
            );
        }
    }
}

/// Returns true if and only if `name` is a portable environment variable
/// name, `[A-Za-z_][A-Za-z0-9_]*`: what a secret's name must be, and what
/// the runtime accepts in a script's `env`.
pub fn is_env_var_name(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printed_patterns_reject_what_the_fixed_ones_accept() {
        // As printed in spec 003, JSON "\\\\." is the regex `\\.`: a
        // backslash, then any character.
        let printed =
            regex::Regex::new(r"^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)$").unwrap();
        assert!(!printed.is_match("1.0.0"));
        let schema: Json = serde_json::from_str(FRONTMATTER_SCHEMA).unwrap();
        let version = schema["properties"]["version"]["pattern"].as_str().unwrap();
        assert!(regex::Regex::new(version).unwrap().is_match("1.0.0"));
        assert!(
            regex::Regex::new(version)
                .unwrap()
                .is_match("1.0.0-rc.1+build.5")
        );
        assert!(!regex::Regex::new(version).unwrap().is_match("1.0"));
        let spec_version = schema["properties"]["spec_version"]["pattern"]
            .as_str()
            .unwrap();
        assert!(regex::Regex::new(spec_version).unwrap().is_match("2.1"));
        assert!(!regex::Regex::new(spec_version).unwrap().is_match("2x1"));
    }

    #[test]
    fn both_embedded_schemas_compile() {
        LazyLock::force(&FRONTMATTER_VALIDATOR);
        LazyLock::force(&TOOLS_VALIDATOR);
    }

    #[test]
    fn overbroad_globs_are_those_made_only_of_stars() {
        for glob in ["*", "**", "**/*", "./**", "**/**/*"] {
            assert!(is_overbroad_glob(glob), "{glob}");
        }
        for glob in ["**/*.pdf", "output/**", "*.md", "a/*"] {
            assert!(!is_overbroad_glob(glob), "{glob}");
        }
    }

    #[test]
    fn globs_are_checked_for_the_spec_rules() {
        assert!(glob_problem("!secret/**").unwrap().contains("negation"));
        assert!(glob_problem("/etc/**").unwrap().contains("absolute"));
        assert!(glob_problem("C:/x").unwrap().contains("absolute"));
        assert!(glob_problem("out\\x").unwrap().contains('\\'));
        assert!(glob_problem("../x").unwrap().contains(".."));
        assert!(glob_problem("a/[b").is_some());
        assert!(glob_problem("a/{b,c}/**/*.pdf").is_none());
    }

    #[test]
    fn entrypoints_must_stay_inside() {
        assert!(entrypoint_problem("scripts/run.py").is_none());
        assert!(entrypoint_problem("./run.sh").is_none());
        for bad in [
            "",
            "/usr/bin/x.py",
            "../x.py",
            "scripts/../../x.py",
            "C:/x.py",
            "a\\b.py",
        ] {
            assert!(entrypoint_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn open_objects_are_found_at_any_depth() {
        let closed = serde_json::json!({"type": "object", "additionalProperties": false,
            "properties": {"a": {"type": "string"}}});
        assert_eq!(first_open_object(&closed, String::new()), None);
        let nested = serde_json::json!({"type": "object", "additionalProperties": false,
            "properties": {"o/k": {"type": "array", "items": {"type": "object", "properties": {}}}}});
        assert_eq!(
            first_open_object(&nested, String::new()).as_deref(),
            Some("/properties/o~1k/items")
        );
    }
}
