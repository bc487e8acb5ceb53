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
//!   PyYAML's unsafe loader.

use std::path::Path;

use super::diagnostic::{Code, Diagnostic};
use super::document::{Node, SkillDocument, Value};

/// Reports every merge key and foreign tag of `document`.
pub(crate) fn check(document: &SkillDocument, file: &Path, diagnostics: &mut Vec<Diagnostic>) {
    for (key, value) in &document.frontmatter {
        check_key(document, file, key, "the frontmatter", diagnostics);
        let name = key.value.scalar_text().unwrap_or_default();
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

fn check_node(
    document: &SkillDocument,
    file: &Path,
    node: &Node,
    path: &str,
    diagnostics: &mut Vec<Diagnostic>,
) {
    match &node.value {
        Value::Mapping(entries) => {
            for (key, value) in entries {
                check_key(document, file, key, &format!("`{path}`"), diagnostics);
                let inner = format!("{path}.{}", key.value.scalar_text().unwrap_or_default());
                check_node(document, file, value, &inner, diagnostics);
            }
        }
        Value::Sequence(items) => {
            for (index, item) in items.iter().enumerate() {
                check_node(
                    document,
                    file,
                    item,
                    &format!("{path}[{index}]"),
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
    holder: &str,
    diagnostics: &mut Vec<Diagnostic>,
) {
    if key.value.as_str() != Some("<<") {
        return;
    }
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
