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

use std::fmt;

use rmcp::model::CallToolResult;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use skillpkg_index::skill::model::{JsonObject, Tool};
use skillpkg_index::skill::tools::export;

use super::cap_chars;
use super::redact::Redactor;
use super::schema::ToolSchemas;

/// The stable error codes of the runtime; a tool's own error envelope may
/// carry any code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    /// The arguments do not match the tool's `input_schema`.
    InvalidArgument,
    /// No tool of that name is listed in the session (its skill is not
    /// loaded).
    NotFound,
    /// The tool needs the user's confirmation and did not get it.
    ApprovalDenied,
    /// The sandbox refused what the tool needed.
    PermissionDenied,
    /// The tool ran out of time and was stopped.
    Timeout,
    /// The client cancelled the call.
    Cancelled,
    /// The tool exited with a failure status, or was killed, without
    /// printing an error envelope.
    ToolFailed,
    /// What the tool printed is not the result protocol, or does not
    /// match its `output_schema`.
    OutputInvalid,
    /// The tool printed more than the output cap.
    OutputTooLarge,
    /// The tool's runtime could not be started.
    Unavailable,
    /// A fault of the runtime itself.
    Internal,
    /// The session is not in the state the call needs (no skill loaded,
    /// or not the one named).
    FailedPrecondition,
    /// A skill's files no longer hash to what was checked.
    Integrity,
}

impl ErrorCode {
    /// Every code.
    pub const ALL: [ErrorCode; 13] = [
        Self::InvalidArgument,
        Self::NotFound,
        Self::ApprovalDenied,
        Self::PermissionDenied,
        Self::Timeout,
        Self::Cancelled,
        Self::ToolFailed,
        Self::OutputInvalid,
        Self::OutputTooLarge,
        Self::Unavailable,
        Self::Internal,
        Self::FailedPrecondition,
        Self::Integrity,
    ];

    /// Returns the code as it is written in envelopes and the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidArgument => "INVALID_ARGUMENT",
            Self::NotFound => "NOT_FOUND",
            Self::ApprovalDenied => "APPROVAL_DENIED",
            Self::PermissionDenied => "PERMISSION_DENIED",
            Self::Timeout => "TIMEOUT",
            Self::Cancelled => "CANCELLED",
            Self::ToolFailed => "TOOL_FAILED",
            Self::OutputInvalid => "OUTPUT_INVALID",
            Self::OutputTooLarge => "OUTPUT_TOO_LARGE",
            Self::Unavailable => "UNAVAILABLE",
            Self::Internal => "INTERNAL",
            Self::FailedPrecondition => "FAILED_PRECONDITION",
            Self::Integrity => "INTEGRITY",
        }
    }

    /// Returns true if and only if the same call may succeed when simply
    /// made again. Only running out of time qualifies: every other code
    /// says something about the call, the tool or a decision that a retry
    /// does not change. ([`super::decide`] marks a failed confirmation
    /// request retriable case by case.)
    pub fn retriable(self) -> bool {
        matches!(self, Self::Timeout)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The `error` of spec 003's error envelope.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolError {
    /// One of [`ErrorCode`], or the tool's own code.
    pub code: String,
    pub message: String,
    #[serde(default)]
    pub retriable: bool,
    /// Anything else: `details` from the runtime (the failing paths), or
    /// whatever fields a tool's own error carries.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ToolError {
    /// Returns an error with `code`'s default [`ErrorCode::retriable`].
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code: code.as_str().to_owned(),
            message: message.into(),
            retriable: code.retriable(),
            extra: JsonObject::new(),
        }
    }

    /// Sets `retriable`.
    pub fn with_retriable(mut self, retriable: bool) -> Self {
        self.retriable = retriable;
        self
    }

    /// Sets `details`.
    pub fn with_details(mut self, details: Value) -> Self {
        self.extra.insert("details".to_owned(), details);
        self
    }

    /// Returns the whole envelope: `{"status":"error","error":{...}}`.
    pub fn envelope(&self) -> Value {
        serde_json::json!({ "status": "error", "error": self })
    }

    /// Returns the MCP result of this error: the envelope as structured
    /// content and as text, `isError: true`.
    pub fn into_call_tool_result(self) -> CallToolResult {
        CallToolResult::structured_error(self.envelope())
    }

    fn redact(&mut self, redactor: &Redactor) {
        self.message = redactor.redact(&self.message).into_owned();
        let mut extra = Value::Object(std::mem::take(&mut self.extra));
        redactor.redact_value(&mut extra);
        if let Value::Object(extra) = extra {
            self.extra = extra;
        }
    }
}

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
