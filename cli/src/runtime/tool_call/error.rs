//! The errors a tool call ends with: the runtime's stable codes and the
//! error a client receives.

use std::fmt;

use rmcp::model::CallToolResult;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use skillpkg_index::skill::model::JsonObject;

use super::redact::Redactor;

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

    pub(super) fn redact(&mut self, redactor: &Redactor) {
        self.message = redactor.redact(&self.message).into_owned();
        let mut extra = Value::Object(std::mem::take(&mut self.extra));
        redactor.redact_value(&mut extra);
        if let Value::Object(extra) = extra {
            self.extra = extra;
        }
    }
}
