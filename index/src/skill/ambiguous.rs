//! YAML that other parsers read differently from this one.
//!
//! The frontmatter is checked here with a YAML 1.2 parser, and read by each
//! agent with its own, often a YAML 1.1 one (js-yaml's default schema,
//! PyYAML). Where those would see something else than what was checked, the
//! check means nothing, so the frontmatter is refused (`ambiguous-yaml`):
//!
//! - a merge key, `<<: *base`: YAML 1.2 has none, so here it is a key named
//!   `<<`; js-yaml and PyYAML merge the aliased mapping into the one holding
//!   it, so a frontmatter could carry an `allowed-tools` that only agents
//!   see;
//! - a tag outside the core schema (`!!python/object/apply:os.system`,
//!   `!custom`): ignored here, an error for js-yaml, and code that runs for
//!   PyYAML's unsafe loader;
//! - a line or paragraph separator (U+2028, U+2029) as written: YAML 1.1
//!   breaks lines there, YAML 1.2 does not, so `description: d<LS>name: x`
//!   is one value here and a second `name` for PyYAML. (NEL, U+0085, the
//!   third such break, is a C1 control and refused as one.)
//!
//! Plain scalars that YAML 1.1 parsers read as another type or value
//! (`on`, `010`, `2024-01-01`, a key `on:`) are only warned about
//! (`ambiguous-scalar`): they are common in published skills, where they
//! are nearly always meant as the text they are here, and quoting them
//! is the whole fix. The runtime serves them quoted
//! ([`super::unambiguous`]).

use std::path::Path;

use super::diagnostic::{Code, Diagnostic};
use super::document::{Node, SkillDocument, Value};
use super::readings;

/// Separators (and scalars read two ways) reported one by one; past this,
/// the last report counts the rest.
const MAX_REPORTED: usize = 10;

/// Reports every merge key, foreign tag, line separator and scalar read
/// two ways of `document`.
pub(crate) fn check(document: &SkillDocument, file: &Path, diagnostics: &mut Vec<Diagnostic>) {
    check_separators(document, file, diagnostics);
    check_scalars(document, file, diagnostics);
    for (key, value) in &document.frontmatter {
        check_key(
            document,
            file,
            key,
            &|| "the frontmatter".to_owned(),
            diagnostics,
        );
        let name = || key.value.scalar_text().unwrap_or_default();
        check_node(document, file, value, &name, diagnostics);
    }
    for (tag, location) in &document.foreign_tags {
        diagnostics.push(
            Diagnostic::new(
                Code::AmbiguousYaml,
                file,
                format!(
                    "the tag `{tag}` is not one of YAML's core tags: it is ignored here, but other parsers fail on it or act on it (PyYAML's unsafe loader runs Python for `!!python/` tags)"
                ),
            )
            .at(*location, &document.text)
            .with_hint("remove the tag and write the value plainly"),
        );
    }
}

/// Checks the keys at and below `node`, whose path `path` renders
/// (`tools[0].input_schema`). Paths are rendered only for a report: most
/// frontmatters have none, and rendering one for every node of a large
/// frontmatter cost more than the rest of the check.
fn check_node(
    document: &SkillDocument,
    file: &Path,
    node: &Node,
    path: &dyn Fn() -> String,
    diagnostics: &mut Vec<Diagnostic>,
) {
    match &node.value {
        Value::Mapping(entries) => {
            for (key, value) in entries {
                check_key(
                    document,
                    file,
                    key,
                    &|| format!("`{}`", path()),
                    diagnostics,
                );
                let inner =
                    || format!("{}.{}", path(), key.value.scalar_text().unwrap_or_default());
                check_node(document, file, value, &inner, diagnostics);
            }
        }
        Value::Sequence(items) => {
            for (index, item) in items.iter().enumerate() {
                check_node(
                    document,
                    file,
                    item,
                    &|| format!("{}[{index}]", path()),
                    diagnostics,
                );
            }
        }
        Value::Null | Value::Bool(_) | Value::Integer(_) | Value::Float(_) | Value::String(_) => {}
    }
}

fn check_key(
    document: &SkillDocument,
    file: &Path,
    key: &Node,
    holder: &dyn Fn() -> String,
    diagnostics: &mut Vec<Diagnostic>,
) {
    if key.value.as_str() != Some("<<") {
        return;
    }
    let holder = holder();
    diagnostics.push(
        Diagnostic::new(
            Code::AmbiguousYaml,
            file,
            format!(
                "`<<` is a YAML 1.1 merge key: here (YAML 1.2) it is a key named `<<`, but js-yaml and PyYAML merge the aliased mapping into {holder}, so agents would read keys that were never checked"
            ),
        )
        .at(key.location, &document.text)
        .with_hint("write the keys out instead of merging them in"),
    );
}

/// Reports the line and paragraph separators of the frontmatter as written.
fn check_separators(document: &SkillDocument, file: &Path, diagnostics: &mut Vec<Diagnostic>) {
    let raw = super::control::frontmatter_text(document);
    // A substring search first: nearly no file has either, and the walk
    // below decodes every character.
    if !raw.contains('\u{2028}') && !raw.contains('\u{2029}') {
        return;
    }
    let found: Vec<(usize, usize, char)> = raw
        .split('\n')
        .enumerate()
        .flat_map(|(line, text)| {
            text.chars()
                .enumerate()
                .filter(|(_, c)| matches!(c, '\u{2028}' | '\u{2029}'))
                .map(move |(column, c)| (line + 1, column + 1, c))
        })
        .collect();
    let shown = found.len().min(MAX_REPORTED);
    for (index, (line, column, character)) in found.iter().take(shown).enumerate() {
        let more = if index + 1 == shown && found.len() > shown {
            format!(" (and {} more)", found.len() - shown)
        } else {
            String::new()
        };
        let location = super::diagnostic::Location {
            line: *line,
            column: *column,
            end_column: column + 1,
        };
        diagnostics.push(
            Diagnostic::new(
                Code::AmbiguousYaml,
                file,
                format!(
                    "the frontmatter contains U+{:04X}, a line break for YAML 1.1 parsers (PyYAML) and ordinary text for YAML 1.2 ones{more}",
                    u32::from(*character)
                ),
            )
            .at(location, &document.text)
            .with_hint("remove it, or replace it with a space or a line feed"),
        );
    }
}

/// Reports the plain scalars YAML 1.1 parsers read differently, each with
/// both readings and the form every parser reads as this one.
fn check_scalars(document: &SkillDocument, file: &Path, diagnostics: &mut Vec<Diagnostic>) {
    let found = &document.two_way_scalars;
    let shown = found.len().min(MAX_REPORTED);
    for (index, scalar) in found.iter().take(shown).enumerate() {
        let Some(two) = readings::two_readings(&scalar.text) else {
            continue;
        };
        let more = if index + 1 == shown && found.len() > shown {
            format!(" (and {} more such scalars)", found.len() - shown)
        } else {
            String::new()
        };
        let text = &scalar.text;
        let subject = if scalar.key {
            format!("the key `{text}`")
        } else {
            format!("`{text}`")
        };
        let colon = if scalar.key { ":" } else { "" };
        let quoted = readings::unambiguous_form(text, readings::Reading::String)
            .unwrap_or_else(|| format!("\"{text}\""));
        let hint = match readings::unambiguous_form(text, two.here) {
            Some(form) if two.here == readings::Reading::String => {
                format!("quote it: `{form}{colon}`")
            }
            Some(form) => format!(
                "write `{form}{colon}` for {}, or quote it, `{quoted}{colon}`, for the text",
                two.here.describe(text)
            ),
            None => format!("quote it: `{quoted}{colon}`"),
        };
        diagnostics.push(
            Diagnostic::new(
                Code::AmbiguousScalar,
                file,
                format!(
                    "{subject} is {} here (YAML 1.2) but {} for {}{more}",
                    two.here.describe(text),
                    two.yaml_1_1.describe(text),
                    two.readers,
                ),
            )
            .at(scalar.location, &document.text)
            .with_hint(hint),
        );
    }
}
