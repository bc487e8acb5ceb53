//! What a tool call gives back: spec 003's Runtime Result Protocol (§9)
//! over MCP.
//!
//! A tool reads its arguments as one line of JSON on stdin
//! ([`stdin_payload`]) and prints one JSON value on stdout. [`interpret`]
//! turns what the process did ([`ProcessResult`], filled in by the server
//! from the executor) into one of three outcomes:
//!
//! ```text
//! success   a JSON object, checked against output_schema   isError: false
//! async     {"status":"async", ...} passed through          isError: false
//! error     {"status":"error","error":{"code","message",    isError: true
//!            "retriable", ...}}
//! ```
//!
//! Each is returned as `structuredContent` and, for clients that read only
//! text, the same JSON as a text block. The checks, in order (the first
//! that applies decides):
//!
//! ```text
//! cancelled by the client                    CANCELLED          retriable: false
//! refused by the sandbox                     PERMISSION_DENIED  false
//! out of time                                TIMEOUT            true
//! stdout hit its cap                         OUTPUT_TOO_LARGE   false
//! stdout is an error envelope                the tool's own code and retriable,
//!                                            whatever the exit status
//! exit status not 0, or killed by a signal   TOOL_FAILED        false (stderr's tail
//!                                                                in the message)
//! stdout empty, not JSON, several values,    OUTPUT_INVALID     false
//!   not an object, a malformed envelope,
//!   or not matching output_schema
//! {"status":"async", ...}                    async, as printed
//! anything else                              success
//! ```
//!
//! Before the tool runs the server can fail a call too: `INVALID_ARGUMENT`
//! (arguments against `input_schema`), `APPROVAL_DENIED` (confirmation),
//! `NOT_FOUND` (no such tool in the session), `UNAVAILABLE` (the runtime
//! could not be started), `INTERNAL`. Secrets are redacted from every
//! string of every outcome.

use rmcp::model::CallToolResult;
use serde::Serialize;
use serde_json::Value;
use skillpkg_index::skill::model::{JsonObject, Tool};
use skillpkg_index::skill::tools::export;

use super::cap_chars;
use super::error::{ErrorCode, ToolError};
use super::redact::Redactor;
use super::schema::ToolSchemas;

/// How a call ended, as the audit log records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Ok,
    Async,
    Error,
    /// Nothing ran: the user's confirmation was asked for in the result
    /// (2026-07-28's `InputRequiredResult`).
    InputRequired,
}

/// What a call gives back.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolOutcome {
    /// The tool's result: a JSON object, redacted.
    Success(Value),
    /// The tool's task handle, `{"status":"async", ...}`, redacted.
    Async(Value),
    Error(ToolError),
}

impl ToolOutcome {
    /// Returns the outcome for the audit log.
    pub fn outcome(&self) -> Outcome {
        match self {
            Self::Success(_) => Outcome::Ok,
            Self::Async(_) => Outcome::Async,
            Self::Error(_) => Outcome::Error,
        }
    }

    /// Returns the error, if it is one.
    pub fn error(&self) -> Option<&ToolError> {
        match self {
            Self::Error(error) => Some(error),
            Self::Success(_) | Self::Async(_) => None,
        }
    }

    /// Returns the MCP result: the value as structured content and as
    /// text, `isError` set for errors.
    pub fn into_call_tool_result(self) -> CallToolResult {
        match self {
            Self::Success(value) | Self::Async(value) => CallToolResult::structured(value),
            Self::Error(error) => error.into_call_tool_result(),
        }
    }
}

impl From<ToolError> for ToolOutcome {
    fn from(error: ToolError) -> Self {
        Self::Error(error)
    }
}

/// What the process that carried a tool out did, as the executor reports
/// it; the server fills it in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessResult {
    /// The exit status; `None` when a signal ended the process.
    pub exit_code: Option<i32>,
    /// Everything printed on stdout, up to the cap.
    pub stdout: Vec<u8>,
    /// Everything printed on stderr, up to the cap.
    pub stderr: Vec<u8>,
    /// True when the process ran out of time and was killed.
    pub timed_out: bool,
    /// True when stdout reached the output cap and the rest was dropped.
    pub stdout_truncated: bool,
    /// True when the client cancelled the call and the process was stopped.
    pub cancelled: bool,
    /// Why the sandbox refused the run, when it did.
    pub denied: Option<String>,
}

/// The most of stderr's end a `TOOL_FAILED` message quotes, in characters.
const STDERR_TAIL_CHARS: usize = 2000;

/// The most of stdout an `OUTPUT_INVALID` message quotes, in characters.
const STDOUT_HEAD_CHARS: usize = 200;

/// Returns the bytes a tool reads on stdin: its arguments as one line of
/// compact JSON (a newline inside a string is escaped, so `read -r` in
/// bash gets it whole), ending in `\n`.
pub fn stdin_payload(arguments: &JsonObject) -> Vec<u8> {
    let mut payload = serde_json::to_vec(arguments).expect("a JSON object serializes");
    payload.push(b'\n');
    payload
}

/// Returns the MCP `Tool` that `tools/list` shows for `tool` of `skill`:
/// the MCP export (`inputSchema`, `outputSchema`, annotations), named by
/// [`super::wire_name`], titled `<skill>: <tool>` for people, since a cut
/// name no longer shows them.
pub fn listed_tool(skill: &str, tool: &Tool) -> rmcp::model::Tool {
    let exported = export::mcp(std::slice::from_ref(tool));
    let mut value = serde_json::to_value(&exported[0]).expect("an MCP tool serializes");
    value["name"] = Value::String(super::wire_name(skill, tool.name.as_str()));
    value["title"] = Value::String(format!("{skill}: {}", tool.name));
    serde_json::from_value(value).expect("the MCP export has the shape of rmcp's Tool")
}

/// Interprets what the process did (see the module's table), checks a
/// result against the tool's `output_schema` and redacts every string.
pub fn interpret(
    process: &ProcessResult,
    schemas: &ToolSchemas,
    redactor: &Redactor,
) -> ToolOutcome {
    let mut outcome = classify(process, schemas, redactor);
    match &mut outcome {
        ToolOutcome::Success(value) | ToolOutcome::Async(value) => redactor.redact_value(value),
        ToolOutcome::Error(error) => error.redact(redactor),
    }
    outcome
}

fn classify(process: &ProcessResult, schemas: &ToolSchemas, redactor: &Redactor) -> ToolOutcome {
    if process.cancelled {
        return ToolError::new(
            ErrorCode::Cancelled,
            "the call was cancelled and the tool stopped",
        )
        .into();
    }
    if let Some(reason) = &process.denied {
        return ToolError::new(
            ErrorCode::PermissionDenied,
            format!("the sandbox refused the tool: {reason}"),
        )
        .into();
    }
    if process.timed_out {
        return ToolError::new(
            ErrorCode::Timeout,
            "the tool did not finish in time and was stopped (its `implementation.timeout_seconds` sets the limit)",
        )
        .into();
    }
    if process.stdout_truncated {
        return ToolError::new(
            ErrorCode::OutputTooLarge,
            "the tool printed more than the output cap; its result was cut and cannot be read",
        )
        .into();
    }
    let value = match single_json_value(&process.stdout) {
        Ok(value) => Some(value),
        Err(problem) => {
            if process.exit_code != Some(0) {
                None
            } else {
                let head = redactor
                    .redact(&String::from_utf8_lossy(&process.stdout))
                    .into_owned();
                return ToolError::new(
                    ErrorCode::OutputInvalid,
                    format!(
                        "{problem}; a tool prints exactly one JSON object on stdout (it printed: {})",
                        cap_chars(head.trim(), STDOUT_HEAD_CHARS)
                    ),
                )
                .into();
            }
        }
    };
    let status = value
        .as_ref()
        .and_then(|value| value.get("status"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    // The tool's own error stands whatever its exit status: many tools
    // print the envelope and exit 1.
    if let (Some("error"), Some(value)) = (status.as_deref(), &value) {
        return tool_error(value).into();
    }
    if process.exit_code != Some(0) {
        return process_failed(process, redactor).into();
    }
    let value = value.expect("exit status 0 with stdout that is not one JSON value returned above");
    if status.as_deref() == Some("async") {
        return ToolOutcome::Async(value);
    }
    if !value.is_object() {
        return ToolError::new(
            ErrorCode::OutputInvalid,
            format!(
                "the tool printed {}, and a result is a JSON object",
                json_kind(&value)
            ),
        )
        .into();
    }
    match schemas.check_output(&value) {
        Ok(()) => ToolOutcome::Success(value),
        Err(error) => error.into(),
    }
}

/// Returns the one JSON value in `stdout`, or what is wrong with it.
fn single_json_value(stdout: &[u8]) -> Result<Value, String> {
    let mut values = serde_json::Deserializer::from_slice(stdout).into_iter::<Value>();
    match values.next() {
        None => Err("the tool printed nothing on stdout".to_owned()),
        Some(Err(error)) => Err(format!("stdout is not JSON ({error})")),
        Some(Ok(value)) => match values.next() {
            None => Ok(value),
            Some(_) => Err("stdout holds more than one JSON value, or text after it".to_owned()),
        },
    }
}

/// The tool's own error envelope, checked for shape.
fn tool_error(envelope: &Value) -> ToolError {
    match envelope
        .get("error")
        .cloned()
        .map(serde_json::from_value::<ToolError>)
    {
        Some(Ok(error)) if !error.code.is_empty() => error,
        _ => {
            let text = envelope.to_string();
            ToolError::new(
                ErrorCode::OutputInvalid,
                format!(
                    "the tool reported an error without the envelope's shape \
                     ({{\"status\":\"error\",\"error\":{{\"code\":\"...\",\"message\":\"...\",\"retriable\":false}}}}): {}",
                    cap_chars(&text, STDOUT_HEAD_CHARS)
                ),
            )
        }
    }
}

/// `TOOL_FAILED`, quoting the end of stderr, where the reason usually is.
fn process_failed(process: &ProcessResult, redactor: &Redactor) -> ToolError {
    let how = match process.exit_code {
        Some(code) => format!("exited with status {code}"),
        None => "was killed by a signal".to_owned(),
    };
    // Redacted whole before cutting, so a cut cannot split a secret and
    // leave part of it in clear.
    let stderr = redactor
        .redact(&String::from_utf8_lossy(&process.stderr))
        .into_owned();
    let stderr = stderr.trim();
    if stderr.is_empty() {
        return ToolError::new(
            ErrorCode::ToolFailed,
            format!(
                "the tool {how} without an error envelope on stdout, and printed nothing on stderr"
            ),
        );
    }
    let count = stderr.chars().count();
    let tail = if count > STDERR_TAIL_CHARS {
        let start = stderr
            .char_indices()
            .nth(count - STDERR_TAIL_CHARS)
            .map_or(0, |(at, _)| at);
        format!("…{}", &stderr[start..])
    } else {
        stderr.to_owned()
    };
    ToolError::new(
        ErrorCode::ToolFailed,
        format!("the tool {how}; stderr ends with:\n{tail}"),
    )
}

/// What kind of JSON value `value` is, for a message: `a string`.
pub fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
#[path = "outcome_tests.rs"]
mod tests;
