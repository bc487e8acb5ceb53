//! The raw `SKILL.md` document: frontmatter split from the body and parsed as
//! YAML 1.2 into a tree that keeps every node's position.
//!
//! This layer accepts any valid YAML (flow style, anchors, block scalars,
//! nested maps) and makes no judgement about keys or types: that is
//! [`super::validate`]'s job on top of it. Keeping the two apart means a
//! diagnostic can always point at the exact node it is about.
//!
//! Accepted on the way in: a UTF-8 byte order mark (dropped), CRLF line ends
//! (read as LF; line and column numbers are unchanged by this), and a closing
//! `---` or `...` line. Line and column numbers refer to the file as written.

use saphyr::{MarkedYaml, Scalar, YamlData};

use super::diagnostic::Location;
use super::yaml;
pub use super::yaml::{MAX_ALIAS_BYTES, MAX_DEPTH};

/// The most bytes a frontmatter may have as written. Its fields are short
/// (a description is at most 1024 characters); what a registry parses for
/// every upload must be small.
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;

/// A YAML node with its place in the file.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub value: Value,
    pub location: Location,
}

/// A YAML value, resolved with the YAML 1.2 core schema (so `yes` and
/// `2024-01-01` are strings, `true` is a boolean and `1.0` is a float).
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Integer(i64),
    Float(f64),
    String(String),
    Sequence(Vec<Node>),
    /// Keys in document order; YAML forbids duplicates and the parser refuses them.
    Mapping(Vec<(Node, Node)>),
}

impl Value {
    /// Returns the value as JSON: what the frontmatter says, with keys as
    /// their text (a non-string key becomes its scalar text, a collection
    /// key the empty string).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Null => serde_json::Value::Null,
            Self::Bool(value) => (*value).into(),
            Self::Integer(value) => (*value).into(),
            Self::Float(value) => (*value).into(),
            Self::String(value) => value.clone().into(),
            Self::Sequence(items) => items.iter().map(|item| item.value.to_json()).collect(),
            Self::Mapping(entries) => entries
                .iter()
                .map(|(key, value)| {
                    (
                        key.value.scalar_text().unwrap_or_default(),
                        value.value.to_json(),
                    )
                })
                .collect::<serde_json::Map<_, _>>()
                .into(),
        }
    }

    /// Returns the string if and only if the value is a YAML string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(text) => Some(text),
            _ => None,
        }
    }

    /// Returns the scalar as text (`true`, `1.5`, the string itself), or
    /// `None` for null, sequences and mappings.
    pub fn scalar_text(&self) -> Option<String> {
        match self {
            Self::Bool(value) => Some(value.to_string()),
            Self::Integer(value) => Some(value.to_string()),
            Self::Float(value) => Some(value.to_string()),
            Self::String(value) => Some(value.clone()),
            Self::Null | Self::Sequence(_) | Self::Mapping(_) => None,
        }
    }

    /// Returns a short name of the value's type, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool(_) => "a boolean",
            Self::Integer(_) => "an integer",
            Self::Float(_) => "a number",
            Self::String(_) => "a string",
            Self::Sequence(_) => "a list",
            Self::Mapping(_) => "a mapping",
        }
    }
}

/// A plain (unquoted, untagged) scalar that YAML 1.1 parsers read as
/// another type or value than this one does (`on`, `010`, `2024-01-01`):
/// see [`super::readings`].
#[derive(Clone, Debug, PartialEq)]
pub struct TwoWayScalar {
    /// The scalar's text.
    pub text: String,
    /// Where it starts (and, on that line, ends).
    pub location: Location,
    /// The 1-based line and column just past its end, in the file.
    pub end: (usize, usize),
    /// Whether it is a mapping's key.
    pub key: bool,
}

/// A `SKILL.md` split into its parts. The frontmatter is parsed; the body is not.
#[derive(Clone, Debug)]
pub struct SkillDocument {
    /// The file's text with the byte order mark removed and CRLF read as LF.
    pub text: String,
    /// The top-level frontmatter entries, in order. Keys are YAML nodes so
    /// that a non-string key can still be pointed at.
    pub frontmatter: Vec<(Node, Node)>,
    /// The Markdown after the closing `---`: the end of `text`.
    pub body: String,
    /// The 1-based line on which the body starts.
    pub body_line: usize,
    /// The first carriage return that is not part of a CRLF line end (read as
    /// a line end, and so at the end of its line), and how many there are.
    pub lone_carriage_returns: (Option<Location>, usize),
    /// The tags outside YAML's core schema (`!!python/object`, `!custom`), as
    /// written, with the place of the node they tag, in document order. They
    /// do not change what a node means here, but other parsers act on them.
    pub foreign_tags: Vec<(String, Location)>,
    /// The plain scalars YAML 1.1 parsers read differently, at any depth,
    /// keys included, in document order.
    pub two_way_scalars: Vec<TwoWayScalar>,
}

impl SkillDocument {
    /// Returns the text of `node` as written in the file, when it is on one
    /// line: `1.0`, not the number it was read as.
    pub fn source_of(&self, node: &Node) -> Option<&str> {
        let location = node.location;
        let line = self.text.lines().nth(location.line.checked_sub(1)?)?;
        let start = line.char_indices().nth(location.column.checked_sub(1)?)?.0;
        let end = line
            .char_indices()
            .nth(location.end_column.checked_sub(1)?)
            .map_or(line.len(), |(index, _)| index);
        line.get(start..end)
    }

    /// Returns the frontmatter as a JSON object, keys in document order where
    /// the map keeps it: the verbatim frontmatter MCP's `skills/list` serves.
    pub fn frontmatter_json(&self) -> serde_json::Map<String, serde_json::Value> {
        self.frontmatter
            .iter()
            .map(|(key, value)| {
                (
                    key.value.scalar_text().unwrap_or_default(),
                    value.value.to_json(),
                )
            })
            .collect()
    }

    /// Returns the frontmatter value of `key`, with the key's node.
    pub fn get(&self, key: &str) -> Option<(&Node, &Node)> {
        self.frontmatter
            .iter()
            .find(|(k, _)| k.value.as_str() == Some(key))
            .map(|(k, v)| (k, v))
    }
}

/// Why a `SKILL.md` could not be split or its frontmatter parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DocumentError {
    #[error("SKILL.md is not valid UTF-8 (first bad byte at offset {offset})")]
    NotUtf8 { offset: usize },
    #[error("SKILL.md does not start with a `---` frontmatter line")]
    FrontmatterMissing {
        /// The line of a later `---`, when there is text before the frontmatter.
        later_fence: Option<usize>,
    },
    #[error("the frontmatter opened on line 1 is never closed with `---`")]
    FrontmatterUnclosed,
    #[error("the frontmatter is not valid YAML: {message}")]
    YamlSyntax { message: String, location: Location },
    #[error("the frontmatter is {found}, not a mapping of keys to values")]
    NotMapping {
        found: &'static str,
        location: Location,
    },
    #[error("the frontmatter is {size} bytes long; the limit is {MAX_FRONTMATTER_BYTES}")]
    TooLarge { size: usize },
    #[error("the frontmatter nests collections more than {MAX_DEPTH} levels deep")]
    TooDeep { location: Location },
    #[error(
        "the frontmatter's aliases copy more than {} bytes of anchored values",
        MAX_ALIAS_BYTES
    )]
    AliasesTooLarge { location: Location },
}

/// Splits and parses a `SKILL.md` given as bytes.
pub fn parse(bytes: &[u8]) -> Result<SkillDocument, DocumentError> {
    let text = std::str::from_utf8(bytes).map_err(|error| DocumentError::NotUtf8 {
        offset: error.valid_up_to(),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // One vectorised look for a CR, which nearly no file has, spares both
    // passes that deal with them.
    let (lone_carriage_returns, text) = if has_carriage_return(text) {
        (find_lone_carriage_returns(text), normalize_line_ends(text))
    } else {
        ((None, 0), text.to_owned())
    };

    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if !is_fence(first, false) {
        let later_fence = text
            .lines()
            .position(|line| is_fence(line, false))
            .map(|i| i + 1);
        return Err(DocumentError::FrontmatterMissing { later_fence });
    }
    let yaml_start = first.len();
    let mut offset = yaml_start;
    let mut line_number = 1;
    let mut closing = None;
    for line in lines {
        line_number += 1;
        if is_fence(line, true) {
            closing = Some((offset, offset + line.len(), line_number));
            break;
        }
        offset += line.len();
    }
    let (yaml_end, body_start, closing_line) = closing.ok_or(DocumentError::FrontmatterUnclosed)?;
    let yaml = &text[yaml_start..yaml_end];
    if yaml.len() > MAX_FRONTMATTER_BYTES {
        return Err(DocumentError::TooLarge { size: yaml.len() });
    }
    let (frontmatter, foreign_tags, two_way_scalars) = parse_frontmatter(yaml)?;
    let body = text[body_start..].to_owned();
    Ok(SkillDocument {
        frontmatter,
        body,
        body_line: closing_line + 1,
        text,
        lone_carriage_returns,
        foreign_tags,
        two_way_scalars,
    })
}

/// Finds the carriage returns not followed by a line feed, placed where
/// [`normalize_line_ends`] leaves the line end they become.
pub(crate) fn find_lone_carriage_returns(text: &str) -> (Option<Location>, usize) {
    // Almost every file has no CR at all: one memchr pass says so, where the
    // walk below decodes every character.
    if !has_carriage_return(text) {
        return (None, 0);
    }
    let (mut first, mut count) = (None, 0);
    let (mut line, mut column) = (1, 1);
    let mut characters = text.chars().peekable();
    while let Some(character) = characters.next() {
        match character {
            // The line feed ends the line.
            '\r' if characters.peek() == Some(&'\n') => {}
            '\r' => {
                count += 1;
                first.get_or_insert(Location {
                    line,
                    column,
                    end_column: column + 1,
                });
                (line, column) = (line + 1, 1);
            }
            '\n' => (line, column) = (line + 1, 1),
            _ => column += 1,
        }
    }
    (first, count)
}

fn has_carriage_return(text: &str) -> bool {
    memchr::memchr(b'\r', text.as_bytes()).is_some()
}

/// Reads CRLF (Windows) and lone CR (classic Mac OS) line ends as LF.
pub(crate) fn normalize_line_ends(text: &str) -> String {
    if has_carriage_return(text) {
        text.replace("\r\n", "\n").replace('\r', "\n")
    } else {
        text.to_owned()
    }
}

/// Returns true if and only if `line` is a frontmatter fence: `---` (or, as a
/// closing fence, YAML's document end marker `...`) with only spaces after it.
fn is_fence(line: &str, closing: bool) -> bool {
    let trimmed = line.trim_end_matches(['\n', ' ', '\t']);
    trimmed == "---" || (closing && trimmed == "...")
}

/// The YAML starts on line 2 of the file, after the opening fence.
const YAML_FIRST_LINE: usize = 2;

/// The frontmatter's entries, its tags outside the core schema and its
/// plain scalars YAML 1.1 reads differently.
type Frontmatter = (
    Vec<(Node, Node)>,
    Vec<(String, Location)>,
    Vec<TwoWayScalar>,
);

fn parse_frontmatter(yaml: &str) -> Result<Frontmatter, DocumentError> {
    let at = |marker: &saphyr::Marker| {
        let column = marker.col() + 1;
        Location {
            line: marker.line() + YAML_FIRST_LINE - 1,
            column,
            end_column: column + 1,
        }
    };
    let loaded = yaml::load(yaml).map_err(|error| match error {
        yaml::LoadError::Syntax(error) => DocumentError::YamlSyntax {
            message: error.info().to_owned(),
            location: at(error.marker()),
        },
        yaml::LoadError::TooDeep(marker) => DocumentError::TooDeep {
            location: at(&marker),
        },
        yaml::LoadError::AliasesTooLarge(marker) => DocumentError::AliasesTooLarge {
            location: at(&marker),
        },
    })?;
    let foreign_tags = loaded
        .foreign_tags
        .iter()
        .map(|(tag, marker)| (tag.clone(), at(marker)))
        .collect();
    let two_way_scalars = loaded
        .two_way_scalars
        .iter()
        .map(|scalar| {
            let start = at(&scalar.span.start);
            let end = at(&scalar.span.end);
            TwoWayScalar {
                text: scalar.text.clone(),
                location: Location {
                    end_column: if end.line == start.line {
                        end.column.max(start.column + 1)
                    } else {
                        start.column + 1
                    },
                    ..start
                },
                end: (end.line, end.column),
                key: scalar.key,
            }
        })
        .collect();
    let documents = loaded.documents;
    if let Some(second) = documents.get(1) {
        // A `---` line inside the frontmatter (with a comment after it, say)
        // starts a second document that would otherwise be dropped unseen.
        return Err(DocumentError::YamlSyntax {
            message: "the frontmatter holds a second YAML document; only one mapping is allowed"
                .into(),
            location: location_of(second),
        });
    }
    let Some(root) = documents.first() else {
        // An empty frontmatter is an empty mapping: validation then names the
        // missing fields, which is more useful than "not a mapping".
        return Ok((Vec::new(), foreign_tags, two_way_scalars));
    };
    match convert(root).value {
        Value::Mapping(entries) => Ok((entries, foreign_tags, two_way_scalars)),
        Value::Null => Ok((Vec::new(), foreign_tags, two_way_scalars)),
        other => Err(DocumentError::NotMapping {
            found: other.type_name(),
            location: location_of(root),
        }),
    }
}

/// Parses a whole YAML or JSON file (a data file a skill ships) into its
/// first document, placed on the file's own lines; `None` when it is not
/// valid YAML or goes past the loader's limits.
pub(crate) fn parse_data(text: &str) -> Option<Node> {
    let loaded = yaml::load(text).ok()?;
    let mut root = convert(loaded.documents.first()?);
    on_file_lines(&mut root);
    Some(root)
}

/// Moves `node` and its children from frontmatter lines (which start on
/// the file's second line) to the lines of a file that is YAML whole.
fn on_file_lines(node: &mut Node) {
    node.location.line = node.location.line.saturating_sub(YAML_FIRST_LINE - 1);
    match &mut node.value {
        Value::Sequence(items) => items.iter_mut().for_each(on_file_lines),
        Value::Mapping(entries) => {
            for (key, value) in entries {
                on_file_lines(key);
                on_file_lines(value);
            }
        }
        _ => {}
    }
}

fn location_of(node: &MarkedYaml<'_>) -> Location {
    let start = node.span.start;
    let end = node.span.end;
    let line = start.line() + YAML_FIRST_LINE - 1;
    let column = start.col() + 1;
    let end_column = if end.line() == start.line() && end.col() > start.col() {
        end.col() + 1
    } else {
        column + 1
    };
    Location {
        line,
        column,
        end_column,
    }
}

fn convert(node: &MarkedYaml<'_>) -> Node {
    let value = match &node.data {
        YamlData::Value(scalar) => match scalar {
            Scalar::Null => Value::Null,
            Scalar::Boolean(value) => Value::Bool(*value),
            Scalar::Integer(value) => Value::Integer(*value),
            Scalar::FloatingPoint(value) => Value::Float(value.into_inner()),
            Scalar::String(value) => Value::String(value.to_string()),
        },
        YamlData::Representation(text, _, _) => Value::String(text.to_string()),
        YamlData::Sequence(items) => Value::Sequence(items.iter().map(convert).collect()),
        YamlData::Mapping(entries) => Value::Mapping(
            entries
                .iter()
                .map(|(key, value)| (convert(key), convert(value)))
                .collect(),
        ),
        // A tag does not change what the frontmatter means to us: read the
        // tagged node as it is. (Tags outside the core schema were noted by
        // the loader, for validation to refuse.)
        YamlData::Tagged(_, inner) => {
            return Node {
                location: location_of(node),
                ..convert(inner)
            };
        }
        YamlData::Alias(_) | YamlData::BadValue => Value::Null,
    };
    Node {
        value,
        location: location_of(node),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key_value<'a>(document: &'a SkillDocument, key: &str) -> &'a Value {
        &document
            .get(key)
            .unwrap_or_else(|| panic!("no key {key}"))
            .1
            .value
    }

    #[test]
    fn splits_frontmatter_and_body_and_keeps_positions() {
        let document = parse(b"---\nname: pdf\ndescription: Reads PDFs.\n---\n# Title\n").unwrap();
        let (key, value) = document.get("description").unwrap();
        assert_eq!(key.location.line, 3);
        assert_eq!(
            value.location,
            Location {
                line: 3,
                column: 14,
                end_column: 25
            }
        );
        assert_eq!(document.body, "# Title\n");
        assert_eq!(document.body_line, 5);
    }

    #[test]
    fn accepts_crlf_and_a_byte_order_mark() {
        let document =
            parse(b"\xef\xbb\xbf---\r\nname: pdf\r\ndescription: x\r\n---\r\nbody\r\n").unwrap();
        assert_eq!(key_value(&document, "name").as_str(), Some("pdf"));
        assert_eq!(document.get("description").unwrap().1.location.line, 3);
        assert_eq!(document.body, "body\n");
    }

    #[test]
    fn reads_block_scalars_and_nested_metadata() {
        let text = "---\nname: pdf\ndescription: >-\n  Folded\n  text.\nnotes: |\n  line one\n  line two\nmetadata:\n  author: me\n  nested:\n    deep: 1\n---\n";
        let document = parse(text.as_bytes()).unwrap();
        assert_eq!(
            key_value(&document, "description").as_str(),
            Some("Folded text.")
        );
        assert_eq!(
            key_value(&document, "notes").as_str(),
            Some("line one\nline two\n")
        );
        let Value::Mapping(metadata) = key_value(&document, "metadata") else {
            panic!()
        };
        assert_eq!(metadata[1].0.value.as_str(), Some("nested"));
        assert!(matches!(metadata[1].1.value, Value::Mapping(_)));
    }

    #[test]
    fn resolves_scalars_with_the_yaml_1_2_core_schema() {
        let document =
            parse(b"---\na: yes\nb: 2024-01-01\nc: true\nd: 1.0\ne: 3\nf: ~\ng: [x, y]\n---\n")
                .unwrap();
        assert_eq!(key_value(&document, "a"), &Value::String("yes".into()));
        assert_eq!(
            key_value(&document, "b"),
            &Value::String("2024-01-01".into())
        );
        assert_eq!(key_value(&document, "c"), &Value::Bool(true));
        assert_eq!(key_value(&document, "d"), &Value::Float(1.0));
        assert_eq!(key_value(&document, "e"), &Value::Integer(3));
        assert_eq!(key_value(&document, "f"), &Value::Null);
        assert!(matches!(key_value(&document, "g"), Value::Sequence(items) if items.len() == 2));
    }

    #[test]
    fn a_dashes_line_inside_a_block_scalar_closes_nothing_it_should_not() {
        // `---` indented inside a block scalar is content, not a fence.
        let document = parse(b"---\nname: x\ndescription: |\n  a\n  ---\n  b\n---\nbody").unwrap();
        assert_eq!(
            key_value(&document, "description").as_str(),
            Some("a\n---\nb\n")
        );
    }

    #[test]
    fn reports_missing_unclosed_and_broken_frontmatter() {
        assert_eq!(
            parse(b"# no frontmatter\n").unwrap_err(),
            DocumentError::FrontmatterMissing { later_fence: None }
        );
        assert_eq!(
            parse(b"intro\n---\nname: x\n---\n").unwrap_err(),
            DocumentError::FrontmatterMissing {
                later_fence: Some(2)
            }
        );
        assert_eq!(
            parse(b"---\nname: x\n").unwrap_err(),
            DocumentError::FrontmatterUnclosed
        );
        let DocumentError::YamlSyntax { location, .. } =
            parse(b"---\nname: x\ndescription: [a\n---\n").unwrap_err()
        else {
            panic!("expected a YAML error")
        };
        assert!(location.line >= 3, "{location:?}");
        assert!(matches!(
            parse(b"---\n- a\n---\n").unwrap_err(),
            DocumentError::NotMapping {
                found: "a list",
                ..
            }
        ));
        assert!(matches!(
            parse(b"---\nname: a\nname: b\n---\n").unwrap_err(),
            DocumentError::YamlSyntax { .. }
        ));
        assert!(matches!(
            parse(b"\xff---\n").unwrap_err(),
            DocumentError::NotUtf8 { offset: 0 }
        ));
    }

    #[test]
    fn a_second_yaml_document_is_an_error_not_silently_dropped() {
        let error = parse(b"---\nname: x\n--- # more\nfoo: bar\n---\nbody").unwrap_err();
        assert!(
            matches!(error, DocumentError::YamlSyntax { ref message, .. } if message.contains("second YAML document")),
            "{error:?}"
        );
    }

    #[test]
    fn lone_carriage_returns_end_lines_too_and_are_counted() {
        let document = parse(b"---\rname: pdf\rdescription: x\r---\rbody\r").unwrap();
        assert_eq!(document.body, "body\n");
        assert_eq!(
            document.lone_carriage_returns,
            (
                Some(Location {
                    line: 1,
                    column: 4,
                    end_column: 5
                }),
                5
            )
        );
        let crlf = parse(b"---\r\nname: pdf\r\n---\r\nbody\r\n").unwrap();
        assert_eq!(crlf.lone_carriage_returns, (None, 0));
    }

    #[test]
    fn source_of_gives_a_node_as_written() {
        let document = parse("---\nname: é\nversion: 1.0\n---\n".as_bytes()).unwrap();
        let (_, version) = document.get("version").unwrap();
        assert_eq!(version.value, Value::Float(1.0));
        assert_eq!(document.source_of(version), Some("1.0"));
        assert_eq!(
            document.source_of(document.get("name").unwrap().1),
            Some("é")
        );
    }

    #[test]
    fn an_empty_frontmatter_is_an_empty_mapping() {
        assert!(parse(b"---\n---\nbody").unwrap().frontmatter.is_empty());
    }
}
