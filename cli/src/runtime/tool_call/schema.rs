//! A tool's `input_schema` and `output_schema`, compiled once and checked
//! on every call.
//!
//! Compiling is the index's [`compile_schema`], the one configuration the
//! schemas were already checked with when the skill was loaded (JSON Schema
//! 2020-12, no `$ref` fetched), so a schema that loaded compiles here. It
//! costs far more than validating, so [`SchemaCache`] keeps each tool's
//! compiled schemas for the life of the server, shared by its sessions.
//!
//! Errors list every failing instance path (a JSON pointer, `""` for the
//! top), at most [`MAX_LISTED_ERRORS`], each message capped. The messages
//! never quote the value that failed (the validator's "masked" form): it
//! can be megabytes long, or a secret, and the caller already has it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};
use skillpkg_index::skill::model::{JsonObject, Tool};
use skillpkg_index::skill::tools::compile_schema;

use super::cap_chars;
use super::error::{ErrorCode, ToolError};

/// How many failing paths an error lists; the rest are counted.
pub const MAX_LISTED_ERRORS: usize = 10;

/// The longest message kept for one failing path, in characters.
const MAX_ERROR_CHARS: usize = 200;

/// A tool's compiled schemas.
#[derive(Debug)]
pub struct ToolSchemas {
    input: jsonschema::Validator,
    output: Option<jsonschema::Validator>,
}

impl ToolSchemas {
    /// Compiles the schemas of `tool`. A failure is `INTERNAL`: validation
    /// at load compiled the same schemas the same way.
    pub fn compile(tool: &Tool) -> Result<Self, ToolError> {
        let compile = |field: &str, schema: &JsonObject| {
            compile_schema(&Value::Object(schema.clone())).map_err(|error| {
                ToolError::new(
                    ErrorCode::Internal,
                    format!(
                        "the `{field}` of the tool `{}` does not compile: {}",
                        tool.name,
                        cap_chars(&error.to_string(), MAX_ERROR_CHARS)
                    ),
                )
            })
        };
        Ok(Self {
            input: compile("input_schema", &tool.input_schema)?,
            output: tool
                .output_schema
                .as_ref()
                .map(|schema| compile("output_schema", schema))
                .transpose()?,
        })
    }

    /// Checks call arguments against `input_schema`; `INVALID_ARGUMENT`
    /// with every failing path otherwise. Absent arguments are `{}`.
    pub fn check_arguments(&self, arguments: &JsonObject) -> Result<(), ToolError> {
        let instance = Value::Object(arguments.clone());
        check(&self.input, &instance).map_err(|(summary, details)| {
            ToolError::new(
                ErrorCode::InvalidArgument,
                format!("the arguments do not match the tool's input_schema: {summary}"),
            )
            .with_details(details)
        })
    }

    /// Checks a tool's result against `output_schema`, when it has one;
    /// `OUTPUT_INVALID` with every failing path otherwise.
    pub fn check_output(&self, value: &Value) -> Result<(), ToolError> {
        let Some(output) = &self.output else {
            return Ok(());
        };
        check(output, value).map_err(|(summary, details)| {
            ToolError::new(
                ErrorCode::OutputInvalid,
                format!("the tool's result does not match its output_schema: {summary}"),
            )
            .with_details(details)
        })
    }
}

/// Returns a one-line summary and the `details` object of the ways
/// `instance` fails `validator`.
fn check(validator: &jsonschema::Validator, instance: &Value) -> Result<(), (String, Value)> {
    let mut listed = Vec::new();
    let mut total = 0usize;
    for error in validator.iter_errors(instance) {
        total += 1;
        if listed.len() < MAX_LISTED_ERRORS {
            let path = error.instance_path().as_str().to_owned();
            let message = cap_chars(&error.masked().to_string(), MAX_ERROR_CHARS).into_owned();
            listed.push((path, message));
        }
    }
    if total == 0 {
        return Ok(());
    }
    let mut summary = listed
        .iter()
        .map(|(path, message)| {
            if path.is_empty() {
                format!("at the top: {message}")
            } else {
                format!("at `{path}`: {message}")
            }
        })
        .collect::<Vec<_>>()
        .join("; ");
    let more = total - listed.len();
    if more > 0 {
        summary.push_str(&format!("; and {more} more"));
    }
    let errors: Vec<Value> = listed
        .into_iter()
        .map(|(path, message)| json!({ "instance_path": path, "message": message }))
        .collect();
    Err((summary, json!({ "errors": errors, "more": more })))
}

/// The key of a compiled tool: the skill, the version of its files (its
/// tree hash: a skill changed while serving declares its tools anew), the
/// tool.
type Key = (String, String, String);

/// Every tool's compiled schemas, compiled on first use; shared by all
/// sessions. A skill's tools of an older version go when its new version
/// is compiled.
#[derive(Debug, Default)]
pub struct SchemaCache {
    compiled: Mutex<HashMap<Key, Arc<ToolSchemas>>>,
}

impl SchemaCache {
    /// Returns an empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Returns the compiled schemas of `tool` of the skill `skill` whose
    /// files hash to `version`, compiling them the first time.
    pub fn get(
        &self,
        skill: &str,
        version: &str,
        tool: &Tool,
    ) -> Result<Arc<ToolSchemas>, ToolError> {
        let key = (
            skill.to_owned(),
            version.to_owned(),
            tool.name.as_str().to_owned(),
        );
        // A panic elsewhere cannot leave the map half-updated: it is only
        // ever read or given a whole entry.
        if let Some(found) = self.lock().get(&key) {
            return Ok(Arc::clone(found));
        }
        // Compiled outside the lock so other calls are not held up; should
        // two compile the same tool at once, the first one stored wins.
        let compiled = Arc::new(ToolSchemas::compile(tool)?);
        let mut cache = self.lock();
        cache.retain(|(name, was, _), _| name != skill || was == version);
        Ok(Arc::clone(cache.entry(key).or_insert(compiled)))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Arc<ToolSchemas>>> {
        self.compiled.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(input: Value, output: Option<Value>) -> Tool {
        let mut tool = json!({
            "name": "extract-text",
            "description": "Extract text from a PDF file.",
            "implementation": { "runtime": "python", "entrypoint": "scripts/pdf.py" }
        });
        tool["input_schema"] = input;
        if let Some(output) = output {
            tool["output_schema"] = output;
        }
        serde_json::from_value(tool).unwrap()
    }

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    /// The input schema of spec 003's `extract-text`, with a page range.
    fn extract_text() -> Tool {
        tool(
            json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "path": { "type": "string", "pattern": "\\.pdf$" },
                    "pages": { "type": "array", "items": { "type": "integer", "minimum": 1 } }
                },
                "required": ["path"]
            }),
            Some(json!({
                "type": "object",
                "additionalProperties": false,
                "properties": { "text": { "type": "string" } },
                "required": ["text"]
            })),
        )
    }

    #[test]
    fn valid_arguments_pass() {
        let schemas = ToolSchemas::compile(&extract_text()).unwrap();
        schemas
            .check_arguments(&object(json!({ "path": "a.pdf", "pages": [1, 2] })))
            .unwrap();
    }

    #[test]
    fn every_failing_path_is_listed_without_the_values() {
        let schemas = ToolSchemas::compile(&extract_text()).unwrap();
        let error = schemas
            .check_arguments(&object(json!({
                "path": "secret-looking-value.txt",
                "pages": [1, 0, "two"],
                "extra": true
            })))
            .unwrap_err();
        assert_eq!(error.code, "INVALID_ARGUMENT");
        assert!(!error.retriable);
        let details = &error.extra["details"];
        let mut paths: Vec<&str> = details["errors"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["instance_path"].as_str().unwrap())
            .collect();
        paths.sort_unstable();
        assert_eq!(paths, ["", "/pages/1", "/pages/2", "/path"]);
        assert_eq!(details["more"], 0);
        assert!(
            error.message.contains("at `/pages/1`") && error.message.contains("at the top"),
            "{}",
            error.message
        );
        assert!(
            !error.message.contains("secret-looking-value"),
            "{}",
            error.message
        );
    }

    #[test]
    fn the_example_of_docs_runtime_tools_is_what_a_client_gets() {
        let schemas = ToolSchemas::compile(&extract_text()).unwrap();
        let error = schemas
            .check_arguments(&object(json!({ "pages": [1, 0] })))
            .unwrap_err();
        assert_eq!(
            error.envelope(),
            json!({
                "status": "error",
                "error": {
                    "code": "INVALID_ARGUMENT",
                    "message": "the arguments do not match the tool's input_schema: at `/pages/1`: value is less than the minimum of 1; at the top: \"path\" is a required property",
                    "retriable": false,
                    "details": {
                        "errors": [
                            { "instance_path": "/pages/1", "message": "value is less than the minimum of 1" },
                            { "instance_path": "", "message": "\"path\" is a required property" }
                        ],
                        "more": 0
                    }
                }
            })
        );
    }

    #[test]
    fn missing_arguments_are_reported_at_the_top() {
        let schemas = ToolSchemas::compile(&extract_text()).unwrap();
        let error = schemas.check_arguments(&JsonObject::new()).unwrap_err();
        assert_eq!(error.extra["details"]["errors"][0]["instance_path"], "");
        assert!(error.message.contains("\"path\""), "{}", error.message);
    }

    #[test]
    fn the_list_is_capped_and_the_rest_counted() {
        let schemas = ToolSchemas::compile(&extract_text()).unwrap();
        let pages: Vec<i64> = vec![0; 25];
        let error = schemas
            .check_arguments(&object(json!({ "path": "a.pdf", "pages": pages })))
            .unwrap_err();
        let details = &error.extra["details"];
        assert_eq!(
            details["errors"].as_array().unwrap().len(),
            MAX_LISTED_ERRORS
        );
        assert_eq!(details["more"], 25 - MAX_LISTED_ERRORS);
        assert!(
            error.message.ends_with("; and 15 more"),
            "{}",
            error.message
        );
    }

    #[test]
    fn output_is_checked_only_when_there_is_an_output_schema() {
        let schemas = ToolSchemas::compile(&extract_text()).unwrap();
        schemas.check_output(&json!({ "text": "hello" })).unwrap();
        let error = schemas
            .check_output(&json!({ "txt": "hello" }))
            .unwrap_err();
        assert_eq!(error.code, "OUTPUT_INVALID");
        assert!(error.message.contains("output_schema"), "{}", error.message);

        let open = ToolSchemas::compile(&tool(json!({ "type": "object" }), None)).unwrap();
        open.check_output(&json!({ "anything": [1, 2] })).unwrap();
    }

    #[test]
    fn a_remote_ref_is_refused_not_fetched() {
        // Validation at load refuses such a schema; should one reach here
        // anyway, compiling must fail without a network access.
        let remote = tool(
            json!({ "type": "object", "$ref": "https://example.invalid/schema.json" }),
            None,
        );
        let error = ToolSchemas::compile(&remote).unwrap_err();
        assert_eq!(error.code, "INTERNAL");
        assert!(error.message.contains("input_schema"), "{}", error.message);
    }

    #[test]
    fn the_cache_compiles_each_tool_once() {
        let cache = SchemaCache::new();
        let tool = extract_text();
        let one = cache.get("pdf-processing", "h2:a", &tool).unwrap();
        let two = cache.get("pdf-processing", "h2:a", &tool).unwrap();
        assert!(Arc::ptr_eq(&one, &two));
        let other = cache.get("other-skill", "h2:a", &tool).unwrap();
        assert!(!Arc::ptr_eq(&one, &other));
        // A new version of the skill is compiled anew, and the old one goes.
        let newer = cache.get("pdf-processing", "h2:b", &tool).unwrap();
        assert!(!Arc::ptr_eq(&one, &newer));
        assert_eq!(cache.lock().len(), 2);
    }
}
