//! Calling a skill's own tools (spec 003 §4-§9, docs/runtime-tools.md):
//! everything between an MCP `tools/call` and the process that carries the
//! tool out, as plain functions with no I/O, so each step is tested alone.
//!
//! ```text
//! tools/list    listed_tool(skill, tool)          name <skill>__<tool> (names),
//!                                                 inputSchema, outputSchema and
//!                                                 annotations from the MCP export
//! tools/call    WireNames::resolve(wire)          -> (skill, tool)
//!               SchemaCache::get(..)              input_schema compiled once
//!                 .check_arguments(args)          INVALID_ARGUMENT, every path
//!               confirmation_for(..)              ask first? (confirm)
//!                 .elicitation_request(..)        the form to send
//!               decide(answer)                    approval_state, APPROVAL_DENIED
//!               stdin_payload(args)               one line of JSON on stdin
//!               [the server runs the entrypoint]  -> ProcessResult
//!               interpret(process, schemas, ..)   success | async | error envelope
//!                 .into_call_tool_result()        structuredContent + text
//! ```
//!
//! Secrets are replaced by `[REDACTED:<NAME>]` ([`Redactor`]) in every
//! string that leaves here: results, error messages, confirmation prompts.
//! The server process, the sandbox and the audit line are elsewhere
//! (`runtime::exec`, `runtime::sandbox`, `runtime::audit`).

mod confirm;
mod error;
mod names;
mod outcome;
mod redact;
mod schema;

pub use confirm::{
    APPROVE_FIELD, Approval, ApprovalState, ConfirmationRequest, ElicitationAnswer,
    confirmation_for, decide,
};
pub use error::{ErrorCode, ToolError};
pub use names::{MAX_WIRE_NAME_LEN, NameCollision, ToolRef, WireNames, is_wire_name, wire_name};
pub use outcome::{
    Outcome, ProcessResult, ToolOutcome, interpret, json_kind, listed_tool, stdin_payload,
};
pub use redact::{MIN_SECRET_CHARS, Redactor};
pub use schema::{MAX_LISTED_ERRORS, SchemaCache, ToolSchemas};

/// Returns at most `max` characters of `text`, with `…(+N chars)` saying
/// how much was cut, so a capped message never hides that it was capped.
pub(crate) fn cap_chars(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => std::borrow::Cow::Borrowed(text),
        Some((cut, _)) => {
            let rest = text[cut..].chars().count();
            std::borrow::Cow::Owned(format!("{}…(+{rest} chars)", &text[..cut]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::cap_chars;

    #[test]
    fn capping_counts_characters_and_says_how_many_were_cut() {
        assert_eq!(cap_chars("hello", 5), "hello");
        assert_eq!(cap_chars("hello!", 5), "hello…(+1 chars)");
        // Never cuts inside a character.
        assert_eq!(cap_chars("ééééé", 2), "éé…(+3 chars)");
        assert_eq!(cap_chars("", 0), "");
    }
}
