//! The OpenAI strict profile: can a tool's `input_schema` be sent with
//! `strict: true`?
//!
//! OpenAI's Structured Outputs (and function calling with `strict: true`)
//! accept only a subset of JSON Schema and refuse the whole request when a
//! schema leaves it. Spec 003 ("OpenAI Strict-Compatible Schema Profile")
//! requires `additionalProperties: false` on every object schema and advises
//! listing every property in `required`; OpenAI's own documentation
//! (<https://platform.openai.com/docs/guides/structured-outputs#supported-schemas>)
//! adds the rest, which this module checks:
//!
//! ```text
//! root            type: object, and no anyOf at the root
//! every object    additionalProperties: false; every property in `required`
//! keywords        allOf, oneOf, not, dependentRequired, dependentSchemas,
//!                 if, then, else are refused
//! format          only date-time, time, date, duration, email, hostname,
//!                 ipv4, ipv6, uuid
//! limits          10 levels of nested objects, 5,000 properties in all,
//!                 1,000 enum values in all, 120,000 characters of property
//!                 names, definition names, enum and const values, and
//!                 15,000 characters for an enum of more than 250 strings
//! ```
//!
//! The walk goes through `properties`, `items`, `prefixItems`, `anyOf`,
//! `$defs` and `definitions`; it never follows `$ref`, so a recursive
//! schema is walked once. Each finding names the JSON pointer (RFC 6901) of
//! the schema that breaks the rule, relative to the tool's `input_schema`
//! (`""` is the schema itself).

use serde::Serialize;
use serde_json::Value;

use crate::skill::model::JsonObject;

/// Object schemas may nest this many levels deep, the root counting as one.
pub const MAX_NESTING_DEPTH: usize = 10;
/// Object properties a schema may have in all.
pub const MAX_PROPERTIES: usize = 5_000;
/// Enum values a schema may have in all.
pub const MAX_ENUM_VALUES: usize = 1_000;
/// Characters of property names, definition names, enum values and const
/// values a schema may have in all.
pub const MAX_TEXT_LENGTH: usize = 120_000;
/// An enum of more than this many string values is limited to
/// [`MAX_LARGE_ENUM_TEXT_LENGTH`] characters.
pub const LARGE_ENUM_VALUES: usize = 250;
/// The characters an enum of more than [`LARGE_ENUM_VALUES`] strings may have.
pub const MAX_LARGE_ENUM_TEXT_LENGTH: usize = 15_000;

/// Keywords strict mode refuses. OpenAI documents the composition and
/// conditional ones; `oneOf` is not on its list of supported keywords (only
/// `anyOf` is) and the API answers "'oneOf' is not permitted".
pub const UNSUPPORTED_KEYWORDS: &[&str] = &[
    "allOf",
    "oneOf",
    "not",
    "dependentRequired",
    "dependentSchemas",
    "if",
    "then",
    "else",
];

/// The string formats strict mode supports.
pub const SUPPORTED_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// How deep the walk goes into nested JSON before it stops: far beyond any
/// schema strict mode accepts (ten object levels take about twenty), and
/// shallow enough that a hostile schema cannot exhaust the stack.
const MAX_WALK_DEPTH: usize = 128;

/// Which rule of the strict profile a schema breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// The root schema is not `type: object`.
    RootNotObject,
    /// The root schema has `anyOf`.
    RootAnyOf,
    /// An object schema lacks `additionalProperties: false`.
    AdditionalProperties,
    /// An object schema's `required` leaves out some of its properties.
    RequiredMissing,
    /// A keyword strict mode refuses.
    UnsupportedKeyword,
    /// A `format` strict mode does not know.
    UnsupportedFormat,
    /// Objects nest more than [`MAX_NESTING_DEPTH`] levels deep.
    TooDeep,
    /// More than [`MAX_PROPERTIES`] properties in all.
    TooManyProperties,
    /// More than [`MAX_ENUM_VALUES`] enum values in all.
    TooManyEnumValues,
    /// More than [`MAX_TEXT_LENGTH`] characters of names and values.
    TooMuchText,
    /// An enum of more than [`LARGE_ENUM_VALUES`] strings that is longer than
    /// [`MAX_LARGE_ENUM_TEXT_LENGTH`] characters.
    LargeEnumTooLong,
}

impl Rule {
    /// Returns the kebab-case name used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::RootNotObject => "root-not-object",
            Self::RootAnyOf => "root-any-of",
            Self::AdditionalProperties => "additional-properties",
            Self::RequiredMissing => "required-missing",
            Self::UnsupportedKeyword => "unsupported-keyword",
            Self::UnsupportedFormat => "unsupported-format",
            Self::TooDeep => "too-deep",
            Self::TooManyProperties => "too-many-properties",
            Self::TooManyEnumValues => "too-many-enum-values",
            Self::TooMuchText => "too-much-text",
            Self::LargeEnumTooLong => "large-enum-too-long",
        }
    }
}

/// One way a schema leaves the strict profile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Violation {
    /// The JSON pointer of the offending schema within `input_schema`.
    pub pointer: String,
    pub rule: Rule,
    /// What is wrong, in one sentence that does not repeat the pointer.
    pub message: String,
}

/// Returns every way `schema` (a tool's `input_schema`) breaks the strict
/// profile, in document order; empty if and only if OpenAI's strict mode
/// accepts it as far as its documentation says.
pub fn check(schema: &JsonObject) -> Vec<Violation> {
    let mut walk = Walk::default();
    match schema.get("type") {
        Some(Value::String(kind)) if kind == "object" => {}
        other => walk.report(
            "",
            Rule::RootNotObject,
            match other {
                Some(kind) => {
                    format!("the root schema has `type: {kind}`; strict mode needs `type: object`")
                }
                None => {
                    "the root schema has no `type`; strict mode needs `type: object`".to_owned()
                }
            },
        ),
    }
    if schema.contains_key("anyOf") {
        walk.report(
            "",
            Rule::RootAnyOf,
            "the root schema uses `anyOf`, which strict mode allows only below the root",
        );
    }
    walk.schema(schema, &mut String::new(), 0, 0);
    walk.totals();
    walk.violations
}

#[derive(Default)]
struct Walk {
    violations: Vec<Violation>,
    properties: usize,
    enum_values: usize,
    text_length: usize,
}

impl Walk {
    fn report(&mut self, pointer: &str, rule: Rule, message: impl Into<String>) {
        self.violations.push(Violation {
            pointer: pointer.to_owned(),
            rule,
            message: message.into(),
        });
    }

    /// Checks the schema at `pointer`; `objects` is how many object schemas
    /// enclose it, `depth` how many JSON levels.
    fn schema(&mut self, schema: &JsonObject, pointer: &mut String, objects: usize, depth: usize) {
        if depth > MAX_WALK_DEPTH {
            self.report(
                pointer,
                Rule::TooDeep,
                format!("the schema nests more than {MAX_WALK_DEPTH} levels of JSON; it was not checked further"),
            );
            return;
        }
        let objects = if is_object_schema(schema) {
            self.object(schema, pointer, objects + 1);
            objects + 1
        } else {
            objects
        };
        for keyword in UNSUPPORTED_KEYWORDS {
            if schema.contains_key(*keyword) {
                self.report(
                    pointer,
                    Rule::UnsupportedKeyword,
                    format!("strict mode does not support `{keyword}`"),
                );
            }
        }
        let format = schema.get("format").and_then(Value::as_str);
        if let Some(format) = format.filter(|format| !SUPPORTED_FORMATS.contains(format)) {
            self.report(
                pointer,
                Rule::UnsupportedFormat,
                format!(
                    "strict mode does not support `format: {format}`; it knows {}",
                    SUPPORTED_FORMATS.join(", ")
                ),
            );
        }
        if let Some(Value::Array(values)) = schema.get("enum") {
            self.enumeration(values, pointer);
        }
        if let Some(Value::String(value)) = schema.get("const") {
            self.text_length += value.chars().count();
        }
        self.children(schema, pointer, objects, depth);
    }

    fn object(&mut self, schema: &JsonObject, pointer: &str, level: usize) {
        if level == MAX_NESTING_DEPTH + 1 {
            // Once per branch: the levels below would repeat the finding.
            self.report(
                pointer,
                Rule::TooDeep,
                format!(
                    "objects nest {level} levels deep here; strict mode allows {MAX_NESTING_DEPTH}"
                ),
            );
        }
        match schema.get("additionalProperties") {
            Some(Value::Bool(false)) => {}
            None => self.report(
                pointer,
                Rule::AdditionalProperties,
                "the object schema does not set `additionalProperties: false`",
            ),
            Some(other) => self.report(
                pointer,
                Rule::AdditionalProperties,
                format!(
                    "the object schema sets `additionalProperties` to {}; strict mode needs `false`",
                    short(other)
                ),
            ),
        }
        let Some(Value::Object(properties)) = schema.get("properties") else {
            return;
        };
        self.properties += properties.len();
        self.text_length += properties
            .keys()
            .map(|name| name.chars().count())
            .sum::<usize>();
        let required: Vec<&str> = match schema.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let missing: Vec<String> = properties
            .keys()
            .filter(|name| !required.contains(&name.as_str()))
            .map(|name| format!("`{name}`"))
            .collect();
        if !missing.is_empty() {
            self.report(
                pointer,
                Rule::RequiredMissing,
                format!(
                    "`required` leaves out {}; strict mode needs every property listed (make one optional with a `null` type: `type: [string, \"null\"]`)",
                    missing.join(", ")
                ),
            );
        }
    }

    fn enumeration(&mut self, values: &[Value], pointer: &str) {
        self.enum_values += values.len();
        let strings: Vec<&str> = values.iter().filter_map(Value::as_str).collect();
        let length: usize = strings.iter().map(|value| value.chars().count()).sum();
        self.text_length += length;
        if strings.len() > LARGE_ENUM_VALUES && length > MAX_LARGE_ENUM_TEXT_LENGTH {
            self.report(
                pointer,
                Rule::LargeEnumTooLong,
                format!(
                    "the enum has {} string values of {length} characters in all; past {LARGE_ENUM_VALUES} values strict mode allows {MAX_LARGE_ENUM_TEXT_LENGTH} characters",
                    strings.len()
                ),
            );
        }
    }

    fn children(
        &mut self,
        schema: &JsonObject,
        pointer: &mut String,
        objects: usize,
        depth: usize,
    ) {
        for keyword in ["properties", "$defs", "definitions"] {
            let Some(Value::Object(members)) = schema.get(keyword) else {
                continue;
            };
            if keyword != "properties" {
                self.text_length += members
                    .keys()
                    .map(|name| name.chars().count())
                    .sum::<usize>();
            }
            for (name, member) in members {
                self.child(member, pointer, &[keyword, name], objects, depth);
            }
        }
        match schema.get("items") {
            Some(Value::Array(items)) => {
                for (index, item) in items.iter().enumerate() {
                    self.child(
                        item,
                        pointer,
                        &["items", &index.to_string()],
                        objects,
                        depth,
                    );
                }
            }
            Some(item) => self.child(item, pointer, &["items"], objects, depth),
            None => {}
        }
        for keyword in ["prefixItems", "anyOf"] {
            if let Some(Value::Array(members)) = schema.get(keyword) {
                for (index, member) in members.iter().enumerate() {
                    self.child(
                        member,
                        pointer,
                        &[keyword, &index.to_string()],
                        objects,
                        depth,
                    );
                }
            }
        }
    }

    fn child(
        &mut self,
        value: &Value,
        pointer: &mut String,
        segments: &[&str],
        objects: usize,
        depth: usize,
    ) {
        // Boolean schemas (`items: true`) have nothing to walk.
        let Value::Object(schema) = value else {
            return;
        };
        let length = pointer.len();
        for segment in segments {
            push_segment(pointer, segment);
        }
        self.schema(schema, pointer, objects, depth + segments.len());
        pointer.truncate(length);
    }

    /// Adds the findings about the whole schema, reported at its root.
    fn totals(&mut self) {
        if self.properties > MAX_PROPERTIES {
            self.report(
                "",
                Rule::TooManyProperties,
                format!(
                    "the schema has {} object properties in all; strict mode allows {MAX_PROPERTIES}",
                    self.properties
                ),
            );
        }
        if self.enum_values > MAX_ENUM_VALUES {
            self.report(
                "",
                Rule::TooManyEnumValues,
                format!(
                    "the schema has {} enum values in all; strict mode allows {MAX_ENUM_VALUES}",
                    self.enum_values
                ),
            );
        }
        if self.text_length > MAX_TEXT_LENGTH {
            self.report(
                "",
                Rule::TooMuchText,
                format!(
                    "property names, definition names, enum and const values add up to {} characters; strict mode allows {MAX_TEXT_LENGTH}",
                    self.text_length
                ),
            );
        }
    }
}

/// Returns true if and only if `schema` describes objects: its `type` is or
/// includes `object`, or it has `properties`.
fn is_object_schema(schema: &JsonObject) -> bool {
    let typed_object = match schema.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "object"),
        _ => false,
    };
    typed_object || schema.contains_key("properties")
}

/// Appends one reference token to a JSON pointer, escaped as RFC 6901 asks.
fn push_segment(pointer: &mut String, segment: &str) {
    pointer.push('/');
    pointer.push_str(&segment.replace('~', "~0").replace('/', "~1"));
}

/// Returns a value as short JSON for a message.
fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 40 {
        text
    } else {
        format!("{}…", text.chars().take(39).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn violations(schema: Value) -> Vec<(String, Rule)> {
        let Value::Object(schema) = schema else {
            panic!("a schema is an object")
        };
        check(&schema)
            .into_iter()
            .map(|violation| (violation.pointer, violation.rule))
            .collect()
    }

    #[test]
    fn a_strict_schema_passes() {
        let schema = json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "path": { "type": "string", "format": "date" },
                "unit": { "type": ["string", "null"], "enum": ["F", "C", null] },
                "rows": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "additionalProperties": false,
                        "properties": { "id": { "type": "integer", "minimum": 0 } },
                        "required": ["id"]
                    }
                },
                "value": { "anyOf": [{ "type": "string" }, { "$ref": "#/$defs/cell" }] }
            },
            "required": ["path", "unit", "rows", "value"],
            "$defs": {
                "cell": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": { "column": { "type": "string" } },
                    "required": ["column"]
                }
            }
        });
        assert_eq!(violations(schema), []);
    }

    #[test]
    fn nested_objects_are_named_by_their_pointer() {
        let schema = json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "options": {
                    "type": "object",
                    "additionalProperties": false,
                    "properties": {
                        "mode": {
                            "type": "object",
                            "properties": { "a/b": { "type": "string" }, "c~d": { "type": "string" } },
                            "required": ["a/b"]
                        }
                    },
                    "required": ["mode"]
                },
                "tags": { "type": "array", "items": { "type": "object", "additionalProperties": true } }
            },
            "required": ["options"]
        });
        assert_eq!(
            violations(schema),
            [
                (String::new(), Rule::RequiredMissing),
                (
                    "/properties/options/properties/mode".to_owned(),
                    Rule::AdditionalProperties
                ),
                (
                    "/properties/options/properties/mode".to_owned(),
                    Rule::RequiredMissing
                ),
                (
                    "/properties/tags/items".to_owned(),
                    Rule::AdditionalProperties
                ),
            ]
        );
    }

    #[test]
    fn missing_required_names_each_property() {
        let Value::Object(schema) = json!({
            "type": "object",
            "additionalProperties": false,
            "properties": { "a": {}, "b": {}, "c": {} },
            "required": ["b"]
        }) else {
            unreachable!()
        };
        let found = check(&schema);
        assert_eq!(found.len(), 1);
        assert!(
            found[0].message.contains("`a`, `c`"),
            "{}",
            found[0].message
        );
    }

    #[test]
    fn the_root_must_be_a_plain_object() {
        assert_eq!(
            violations(json!({ "anyOf": [{ "type": "object" }] })),
            [
                (String::new(), Rule::RootNotObject),
                (String::new(), Rule::RootAnyOf),
                ("/anyOf/0".to_owned(), Rule::AdditionalProperties),
            ]
        );
    }

    #[test]
    fn unsupported_keywords_and_formats_are_reported_where_they_are() {
        let schema = json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "when": { "type": "string", "format": "uri" },
                "either": { "oneOf": [{ "type": "string" }, { "type": "number" }] },
                "both": { "allOf": [{ "type": "string" }], "not": { "const": "x" } }
            },
            "required": ["when", "either", "both"],
            "if": { "required": ["when"] }
        });
        assert_eq!(
            violations(schema),
            [
                (String::new(), Rule::UnsupportedKeyword),
                ("/properties/both".to_owned(), Rule::UnsupportedKeyword),
                ("/properties/both".to_owned(), Rule::UnsupportedKeyword),
                ("/properties/either".to_owned(), Rule::UnsupportedKeyword),
                ("/properties/when".to_owned(), Rule::UnsupportedFormat),
            ]
        );
    }

    /// Returns an object schema nesting `levels` objects, each strict.
    fn nested(levels: usize) -> Value {
        let mut schema = json!({ "type": "string" });
        for _ in 0..levels {
            schema = json!({
                "type": "object",
                "additionalProperties": false,
                "properties": { "next": schema },
                "required": ["next"]
            });
        }
        schema
    }

    #[test]
    fn ten_levels_of_objects_pass_and_eleven_do_not() {
        assert_eq!(violations(nested(10)), []);
        let pointer = "/properties/next".repeat(10);
        assert_eq!(violations(nested(11)), [(pointer, Rule::TooDeep)]);
    }

    #[test]
    fn a_hostile_depth_stops_the_walk_without_overflowing() {
        // Arrays do not count as object levels, so only the walk's own bound stops this.
        let mut schema = json!({ "type": "string" });
        for _ in 0..400 {
            schema = json!({ "type": "array", "items": schema });
        }
        let schema = json!({ "type": "object", "additionalProperties": false, "properties": { "deep": schema }, "required": ["deep"] });
        let found = violations(schema);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].1, Rule::TooDeep);
    }

    #[test]
    fn limits_on_the_whole_schema() {
        let properties: serde_json::Map<String, Value> = (0..=MAX_PROPERTIES)
            .map(|index| (format!("p{index}"), json!({ "type": "string" })))
            .collect();
        let names: Vec<&String> = properties.keys().collect();
        let schema = json!({
            "type": "object",
            "additionalProperties": false,
            "required": names,
            "properties": properties,
        });
        assert_eq!(
            violations(schema),
            [(String::new(), Rule::TooManyProperties)]
        );

        let values: Vec<String> = (0..=MAX_ENUM_VALUES).map(|i| format!("{i:0>60}")).collect();
        let schema = json!({
            "type": "object",
            "additionalProperties": false,
            "properties": { "pick": { "enum": values } },
            "required": ["pick"]
        });
        assert_eq!(
            violations(schema),
            [
                ("/properties/pick".to_owned(), Rule::LargeEnumTooLong),
                (String::new(), Rule::TooManyEnumValues),
            ]
        );
    }
}
