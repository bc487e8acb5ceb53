//! Frontmatter rules: raw YAML nodes in, the typed [`Frontmatter`] and
//! diagnostics out.
//!
//! Three families of keys are known (see `docs/skill-format.md`):
//! the base keys of the Agent Skills specification, the Universal Agent Skill
//! extension keys, and Claude Code's own keys. Extension and Claude Code keys
//! are validated for shape and reported as not portable; anything else is an
//! unknown key. Every problem is a diagnostic, never an early return, so one
//! run shows the author all of them.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::diagnostic::{Code, Diagnostic};
use super::document::{Node, SkillDocument, Value};
use super::{Dependency, Frontmatter, Host, SkillName, ValidateOptions};

pub(crate) const MAX_DESCRIPTION_LEN: usize = 1024;
pub(crate) const MAX_COMPATIBILITY_LEN: usize = 500;

/// The keys of the Agent Skills specification.
const BASE_KEYS: &[&str] = &[
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
];

// The Universal Agent Skill extension keys, which the spec's schema checks.
use super::extensions::UNIVERSAL_KEYS as EXTENSION_KEYS;

/// Claude Code's own frontmatter keys.
const CLAUDE_CODE_KEYS: &[&str] = &[
    "disable-model-invocation",
    "argument-hint",
    "user-invocable",
    "model",
    "mode",
];

/// The shape a known extension key must have.
#[derive(Clone, Copy)]
enum Shape {
    String,
    Bool,
    Scalar,
}

fn extension_shape(key: &str) -> Option<Shape> {
    Some(match key {
        "argument-hint" | "model" => Shape::String,
        "disable-model-invocation" | "user-invocable" => Shape::Bool,
        "mode" => Shape::Scalar,
        // The Universal extension keys are checked by the spec's schema
        // (`super::extensions`); `version` and `depends_on` by hand below.
        _ => return None,
    })
}

struct Checker<'a> {
    document: &'a SkillDocument,
    file: &'a Path,
    diagnostics: &'a mut Vec<Diagnostic>,
}

impl Checker<'_> {
    fn report(&mut self, code: Code, node: &Node, message: impl Into<String>) -> &mut Diagnostic {
        let diagnostic =
            Diagnostic::new(code, self.file, message).at(node.location, &self.document.text);
        self.diagnostics.push(diagnostic);
        self.diagnostics.last_mut().expect("just pushed")
    }

    fn report_at_top(&mut self, code: Code, message: impl Into<String>) -> &mut Diagnostic {
        let location = super::diagnostic::Location {
            line: 1,
            column: 1,
            end_column: 4,
        };
        let diagnostic =
            Diagnostic::new(code, self.file, message).at(location, &self.document.text);
        self.diagnostics.push(diagnostic);
        self.diagnostics.last_mut().expect("just pushed")
    }

    fn wrong_type(&mut self, key: &str, node: &Node, expected: &str) {
        self.report(
            Code::InvalidFieldType,
            node,
            format!("`{key}` must be {expected}, not {}", node.value.type_name()),
        );
    }

    /// Returns the string value of a field that must be a string, reporting anything else.
    fn string_field(&mut self, key: &str, node: &Node) -> Option<String> {
        match &node.value {
            Value::String(text) => Some(text.clone()),
            _ => {
                self.wrong_type(key, node, "a string");
                None
            }
        }
    }
}

/// Checks the frontmatter of `document` and returns the typed model when it
/// has no errors. Diagnostics are appended to `diagnostics`.
pub(crate) fn check_frontmatter(
    document: &SkillDocument,
    file: &Path,
    options: &ValidateOptions,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Frontmatter> {
    let errors_before = count_errors(diagnostics);
    let errors_at = diagnostics.len();
    super::control::check(document, file, diagnostics);
    super::ambiguous::check(document, file, diagnostics);
    let mut checker = Checker {
        document,
        file,
        diagnostics,
    };

    let name = check_name(&mut checker, options);
    let description = check_description(&mut checker);
    let mut fields = Fields::default();

    for (key_node, value) in &document.frontmatter {
        let Some(key) = key_node.value.as_str() else {
            checker
                .report(
                    Code::UnknownKey,
                    key_node,
                    format!("the key {} is not a string", describe(&key_node.value)),
                )
                .hint = Some("frontmatter keys are names like `description`".into());
            continue;
        };
        match key {
            "name" | "description" => {}
            "license" => fields.license = checker.string_field(key, value),
            "compatibility" => fields.compatibility = check_compatibility(&mut checker, value),
            "metadata" => fields.metadata = check_metadata(&mut checker, value),
            "allowed-tools" => fields.allowed_tools = check_allowed_tools(&mut checker, value),
            _ if EXTENSION_KEYS.contains(&key) || CLAUDE_CODE_KEYS.contains(&key) => {
                let claude_code_key = CLAUDE_CODE_KEYS.contains(&key);
                // Under a named host, the Universal keys are what its
                // adapter reads or harmlessly ignores; only the plain
                // specification (and validators such as skills-ref, which
                // refuse them) calls them not portable.
                let reported = if claude_code_key {
                    options.host != Host::ClaudeCode
                } else {
                    options.host == Host::Portable
                };
                if reported {
                    let who = if claude_code_key {
                        "Claude Code"
                    } else {
                        "the Universal Agent Skill extensions"
                    };
                    checker
                        .report(
                            Code::NonPortableKey,
                            key_node,
                            format!(
                                "`{key}` is a key of {who}, not of the Agent Skills specification"
                            ),
                        )
                        .hint =
                        Some("other agents ignore it; keep it only if your users need it".into());
                }
                match key {
                    "version" => fields.version = check_version(&mut checker, value),
                    "depends_on" => {
                        fields.dependencies =
                            check_dependencies(&mut checker, value, name.as_ref());
                    }
                    _ => check_shape(&mut checker, key, value),
                }
            }
            _ => {
                let diagnostic = checker.report(
                    Code::UnknownKey,
                    key_node,
                    format!("unknown frontmatter key `{key}`"),
                );
                diagnostic.hint = Some(match suggest_key(key) {
                    Some(known) => format!("did you mean `{known}`?"),
                    None => "agents ignore unknown keys; move custom data under `metadata`".into(),
                });
            }
        }
    }

    fields.extensions = super::extensions::check(&mut super::extensions::Report {
        document,
        file,
        diagnostics: checker.diagnostics,
    });

    if fields.version.is_none() {
        fields.version = fields
            .metadata
            .iter()
            .find(|(key, _)| key == "version")
            .and_then(|(_, version)| version.parse().ok());
    }

    if options.host == Host::ClaudeApi {
        check_claude_api(&mut checker);
        super::extensions::check_claude_api(
            &mut super::extensions::Report {
                document,
                file,
                diagnostics: checker.diagnostics,
            },
            &fields.extensions,
        );
    }

    if options.host == Host::OpenAi {
        super::extensions::check_openai(
            &mut super::extensions::Report {
                document,
                file,
                diagnostics: checker.diagnostics,
            },
            &fields.extensions,
        );
    }

    for diagnostic in &mut checker.diagnostics[errors_at..] {
        if diagnostic.severity == super::Severity::Error
            && options.tolerate.contains(&diagnostic.code)
        {
            diagnostic.severity = super::Severity::Warning;
        }
    }
    if count_errors(checker.diagnostics) > errors_before {
        return None;
    }
    Some(Frontmatter {
        name: name?,
        description: description?,
        license: fields.license,
        compatibility: fields.compatibility,
        metadata: fields.metadata,
        allowed_tools: fields.allowed_tools,
        version: fields.version,
        dependencies: fields.dependencies,
        extensions: fields.extensions,
    })
}

/// The optional fields, gathered while the keys are checked.
#[derive(Default)]
struct Fields {
    license: Option<String>,
    compatibility: Option<String>,
    metadata: Vec<(String, String)>,
    allowed_tools: Vec<String>,
    version: Option<semver::Version>,
    dependencies: Vec<Dependency>,
    extensions: super::model::Extensions,
}

fn count_errors(diagnostics: &[Diagnostic]) -> usize {
    diagnostics
        .iter()
        .filter(|d| d.severity == super::Severity::Error)
        .count()
}

fn describe(value: &Value) -> String {
    value
        .scalar_text()
        .map_or_else(|| value.type_name().to_owned(), |text| format!("`{text}`"))
}

fn check_name(checker: &mut Checker<'_>, options: &ValidateOptions) -> Option<SkillName> {
    let Some((_, node)) = checker.document.get("name") else {
        checker
            .report_at_top(Code::NameMissing, "the frontmatter has no `name`")
            .hint = Some(match &options.folder_name {
            Some(folder) => format!("add `name: {folder}` (the name must equal the folder name)"),
            None => "add `name:` with the skill's folder name".into(),
        });
        return None;
    };
    let text = checker.string_field("name", node)?;
    let name = match text.parse::<SkillName>() {
        Ok(name) => name,
        Err(error) => {
            let suggestion = suggest_name(&text);
            let diagnostic = checker.report(
                Code::NameInvalid,
                node,
                format!("`name` {text:?} is invalid: {error}"),
            );
            if !suggestion.is_empty() && suggestion != text {
                diagnostic.hint = Some(format!("a valid name would be `{suggestion}`"));
            }
            return None;
        }
    };
    if let Some(folder) = &options.folder_name
        && folder != name.as_str()
    {
        checker
            .report(
                Code::NameMismatch,
                node,
                format!("`name` is `{name}` but the folder is `{folder}`"),
            )
            .hint = Some(format!(
            "rename the folder to `{name}` or set `name: {folder}`"
        ));
    }
    // The name itself is good: an error above, unless tolerated, keeps
    // the frontmatter from being built.
    Some(name)
}

/// Turns a human title ("PDF Processing") into the name it most likely
/// meant, or an empty string when nothing of it is usable.
fn suggest_name(text: &str) -> String {
    SkillName::suggest(text)
        .map(|name| name.to_string())
        .unwrap_or_default()
}

fn check_description(checker: &mut Checker<'_>) -> Option<String> {
    let Some((_, node)) = checker.document.get("description") else {
        checker
            .report_at_top(
                Code::DescriptionMissing,
                "the frontmatter has no `description`",
            )
            .hint = Some("add `description:` saying what the skill does and when to use it".into());
        return None;
    };
    let text = checker.string_field("description", node)?;
    let length = text.chars().count();
    if text.trim().is_empty() {
        checker
            .report(Code::DescriptionMissing, node, "`description` is empty")
            .hint = Some("say what the skill does and when an agent should use it".into());
        return None;
    }
    if length > MAX_DESCRIPTION_LEN {
        checker
            .report(
                Code::DescriptionTooLong,
                node,
                format!(
                    "`description` is {length} characters long; the limit is {MAX_DESCRIPTION_LEN}"
                ),
            )
            .hint = Some(
            "move the details into the body, which is read only when the skill is used".into(),
        );
    }
    Some(text)
}

fn check_compatibility(checker: &mut Checker<'_>, node: &Node) -> Option<String> {
    let text = checker.string_field("compatibility", node)?;
    let length = text.chars().count();
    if text.trim().is_empty() || length > MAX_COMPATIBILITY_LEN {
        checker.report(
            Code::CompatibilityInvalid,
            node,
            format!(
                "`compatibility` must be 1 to {MAX_COMPATIBILITY_LEN} characters, not {length}"
            ),
        );
        return None;
    }
    Some(text)
}

fn check_metadata(checker: &mut Checker<'_>, node: &Node) -> Vec<(String, String)> {
    let Value::Mapping(entries) = &node.value else {
        checker.wrong_type("metadata", node, "a mapping of strings to strings");
        return Vec::new();
    };
    let mut metadata = Vec::new();
    for (key, value) in entries {
        let Some(key_text) = key.value.scalar_text() else {
            checker
                .report(
                    Code::MetadataValueNotString,
                    key,
                    format!("a `metadata` key is {}", key.value.type_name()),
                )
                .hint = Some("write the key as a name: `author:`".into());
            continue;
        };
        match &value.value {
            Value::String(text) => metadata.push((key_text, text.clone())),
            other => {
                // The text as written is what the author meant: `1.0`, not
                // the `1` the number prints as.
                let written = checker.document.source_of(value).map(str::to_owned);
                let diagnostic = checker.report(
                    Code::MetadataValueNotString,
                    value,
                    format!(
                        "`metadata.{key_text}` is {}; the specification allows only strings",
                        other.type_name()
                    ),
                );
                if let Some(text) = other.scalar_text() {
                    let quoted = written.unwrap_or_else(|| text.clone()).replace('"', "\\\"");
                    diagnostic.hint = Some(format!("quote it: `{key_text}: \"{quoted}\"`"));
                    metadata.push((key_text, text));
                } else {
                    diagnostic.hint = Some(format!(
                        "write `metadata.{key_text}` as one string, or move it out of `metadata` to a key of its own"
                    ));
                }
            }
        }
    }
    metadata
}

/// Splits an `allowed-tools` string on spaces and commas outside parentheses,
/// so `Bash(git log:*) Read, Write` gives three tools.
pub(crate) fn split_tools(text: &str) -> Vec<String> {
    let mut tools = Vec::new();
    let mut current = String::new();
    let mut depth = 0_usize;
    for character in text.chars() {
        match character {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth == 0 && (character.is_whitespace() || character == ',') {
            if !current.is_empty() {
                tools.push(std::mem::take(&mut current));
            }
        } else {
            current.push(character);
        }
    }
    if !current.is_empty() {
        tools.push(current);
    }
    tools
}

fn check_allowed_tools(checker: &mut Checker<'_>, node: &Node) -> Vec<String> {
    match &node.value {
        Value::String(text) => split_tools(text),
        Value::Sequence(items) => {
            let tools: Vec<String> = items
                .iter()
                .filter_map(|item| item.value.scalar_text())
                .collect();
            checker
                .report(
                    Code::AllowedToolsNotString,
                    node,
                    "`allowed-tools` is a list; the specification wants one space-separated string",
                )
                .hint = Some(format!("write `allowed-tools: {}`", tools.join(" ")));
            tools
        }
        _ => {
            checker.wrong_type("allowed-tools", node, "a space-separated string");
            Vec::new()
        }
    }
}

fn check_version(checker: &mut Checker<'_>, node: &Node) -> Option<semver::Version> {
    let text = node.value.scalar_text();
    match text.as_deref().map(str::parse::<semver::Version>) {
        Some(Ok(version)) => Some(version),
        Some(Err(error)) => {
            // Show `1.0` as written, not as the number YAML read.
            let document = checker.document;
            let text = document
                .source_of(node)
                .map_or_else(|| text.unwrap_or_default(), str::to_owned);
            checker
                .report(
                    Code::VersionInvalid,
                    node,
                    format!("`version` `{text}` is not a semantic version: {error}"),
                )
                .hint = Some("use three numbers, like `version: 1.0.0`".into());
            None
        }
        None => {
            checker.wrong_type("version", node, "a semantic version string");
            None
        }
    }
}

fn check_dependencies(
    checker: &mut Checker<'_>,
    node: &Node,
    own_name: Option<&SkillName>,
) -> Vec<Dependency> {
    let Value::Sequence(items) = &node.value else {
        checker.wrong_type(
            "depends_on",
            node,
            "a list of `name` or `name@requirement` strings",
        );
        return Vec::new();
    };
    let mut dependencies = Vec::new();
    for item in items {
        let Some(text) = item.value.as_str() else {
            checker.wrong_type(
                "depends_on",
                item,
                "a list of `name` or `name@requirement` strings",
            );
            continue;
        };
        match text.parse::<Dependency>() {
            Ok(dependency) if Some(&dependency.name) == own_name => {
                checker.report(
                    Code::DependencyInvalid,
                    item,
                    format!("the skill depends on itself (`{text}`)"),
                );
            }
            Ok(dependency) => dependencies.push(dependency),
            Err(error) => {
                checker
                    .report(
                        Code::DependencyInvalid,
                        item,
                        format!("dependency {text:?} is invalid: {error}"),
                    )
                    .hint = Some("write `other-skill` or `other-skill@^1.2`".into());
            }
        }
    }
    dependencies
}

fn check_shape(checker: &mut Checker<'_>, key: &str, node: &Node) {
    let Some(shape) = extension_shape(key) else {
        return;
    };
    let (ok, expected) = match shape {
        Shape::String => (matches!(node.value, Value::String(_)), "a string"),
        Shape::Bool => (matches!(node.value, Value::Bool(_)), "`true` or `false`"),
        Shape::Scalar => (node.value.scalar_text().is_some(), "a single value"),
    };
    if !ok {
        checker.wrong_type(key, node, expected);
    }
}

/// An opening, closing or self-closing tag with a name and no attributes
/// (`<b>`, `</tool>`, `<br/>`): what an XML tag in a description looks like,
/// while `a<b and c>d` is arithmetic.
static XML_TAG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"</?[A-Za-z][A-Za-z0-9_.:-]*\s*/?>").expect("valid regex"));

fn check_claude_api(checker: &mut Checker<'_>) {
    for key in ["name", "description"] {
        let Some((_, node)) = checker.document.get(key) else {
            continue;
        };
        let Some(text) = node.value.as_str() else {
            continue;
        };
        if let Some(tag) = XML_TAG.find(text) {
            checker.report(
                Code::HostXmlTag,
                node,
                format!(
                    "`{key}` contains the XML tag `{}`, which the Claude API refuses",
                    tag.as_str()
                ),
            );
        }
        if key == "name" {
            let lowered = text.to_lowercase();
            for word in ["anthropic", "claude"] {
                if lowered.contains(word) {
                    checker.report(Code::HostReservedWord, node, format!("`name` contains the reserved word `{word}`, which the Claude API refuses"));
                }
            }
        }
    }
}

/// Suggests the known key an unknown key was most likely meant to be.
fn suggest_key(unknown: &str) -> Option<&'static str> {
    let normalized = unknown.to_lowercase().replace('_', "-");
    let aliases = [
        ("dependencies", "depends_on"),
        ("depends-on", "depends_on"),
        ("requires", "depends_on"),
        ("keywords", "tags"),
    ];
    if let Some((_, known)) = aliases.iter().find(|(alias, _)| *alias == normalized) {
        return Some(known);
    }
    BASE_KEYS
        .iter()
        .chain(EXTENSION_KEYS)
        .chain(CLAUDE_CODE_KEYS)
        .copied()
        .filter(|known| *known != unknown)
        .map(|known| {
            (
                strsim::levenshtein(&normalized, &known.replace('_', "-")),
                known,
            )
        })
        .filter(|(distance, _)| *distance <= 2)
        .min()
        .map(|(_, known)| known)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_tools_on_spaces_and_commas_outside_parentheses() {
        assert_eq!(
            split_tools("Bash(gh issue:*) Read, Write"),
            ["Bash(gh issue:*)", "Read", "Write"]
        );
        assert_eq!(split_tools("  "), Vec::<String>::new());
    }

    #[test]
    fn suggests_close_keys() {
        assert_eq!(suggest_key("allowed_tools"), Some("allowed-tools"));
        assert_eq!(suggest_key("descripton"), Some("description"));
        assert_eq!(suggest_key("dependencies"), Some("depends_on"));
        assert_eq!(suggest_key("homepage"), None);
    }

    #[test]
    fn suggests_a_valid_name_from_a_title() {
        assert_eq!(suggest_name("PDF Processing"), "pdf-processing");
        assert_eq!(suggest_name("  My -- Tool!  "), "my-tool");
        assert_eq!(suggest_name("Café Crème"), "cafe-creme");
        assert_eq!(suggest_name("AUX"), "aux-skill");
    }
}
