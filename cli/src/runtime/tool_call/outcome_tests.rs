//! The result protocol, one process result per row of the module's table.

use serde_json::{Value, json};
use skillpkg_index::skill::model::{JsonObject, Tool};

use super::*;

fn extract_text() -> Tool {
    serde_json::from_value(json!({
        "name": "extract-text",
        "description": "Extract text from a PDF file.",
        "input_schema": {
            "type": "object",
            "additionalProperties": false,
            "properties": { "path": { "type": "string" } },
            "required": ["path"]
        },
        "output_schema": {
            "type": "object",
            "additionalProperties": false,
            "properties": { "text": { "type": "string" } },
            "required": ["text"]
        },
        "implementation": { "runtime": "python", "entrypoint": "scripts/pdf.py", "handler": "extract_text" }
    }))
    .unwrap()
}

fn schemas() -> ToolSchemas {
    ToolSchemas::compile(&extract_text()).unwrap()
}

fn exited(code: i32, stdout: &str, stderr: &str) -> ProcessResult {
    ProcessResult {
        exit_code: Some(code),
        stdout: stdout.as_bytes().to_vec(),
        stderr: stderr.as_bytes().to_vec(),
        ..ProcessResult::default()
    }
}

fn run(process: &ProcessResult) -> ToolOutcome {
    interpret(process, &schemas(), &Redactor::default())
}

/// The error's code, message and retriable flag.
fn error_of(outcome: &ToolOutcome) -> (&str, &str, bool) {
    let error = outcome
        .error()
        .unwrap_or_else(|| panic!("not an error: {outcome:?}"));
    (&error.code, &error.message, error.retriable)
}

#[test]
fn a_result_matching_the_output_schema_is_a_success() {
    let outcome = run(&exited(0, "{\"text\": \"hello\"}\n", "some progress\n"));
    assert_eq!(outcome, ToolOutcome::Success(json!({ "text": "hello" })));
    assert_eq!(outcome.outcome(), Outcome::Ok);
    let result = outcome.into_call_tool_result();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(result.structured_content, Some(json!({ "text": "hello" })));
    let text = &result.content[0].as_text().unwrap().text;
    assert_eq!(
        serde_json::from_str::<Value>(text).unwrap(),
        json!({ "text": "hello" })
    );
}

#[test]
fn the_tools_own_error_passes_through_whatever_the_exit_status() {
    // Spec 003's canonical envelope, exactly.
    let printed = r#"{"status":"error","error":{"code":"INVALID_ARGUMENT","message":"path must end with .pdf","retriable":false}}"#;
    for code in [0, 1] {
        let outcome = run(&exited(code, printed, "Traceback ..."));
        assert_eq!(
            error_of(&outcome),
            ("INVALID_ARGUMENT", "path must end with .pdf", false)
        );
        let result = outcome.into_call_tool_result();
        assert_eq!(result.is_error, Some(true));
        assert_eq!(
            result.structured_content.unwrap(),
            serde_json::from_str::<Value>(printed).unwrap()
        );
    }
    // The tool's own code, retriable flag and extra fields are kept.
    let outcome = run(&exited(
        3,
        r#"{"status":"error","error":{"code":"OCR_BUSY","message":"try later","retriable":true,"details":{"after_s":5}}}"#,
        "",
    ));
    let error = outcome.error().unwrap();
    assert_eq!((error.code.as_str(), error.retriable), ("OCR_BUSY", true));
    assert_eq!(error.extra["details"], json!({ "after_s": 5 }));
    // `retriable` may be left out: false.
    let outcome = run(&exited(
        1,
        r#"{"status":"error","error":{"code":"E","message":"m"}}"#,
        "",
    ));
    assert_eq!(error_of(&outcome), ("E", "m", false));
}

#[test]
fn a_malformed_error_envelope_is_output_invalid() {
    for printed in [
        r#"{"status":"error"}"#,
        r#"{"status":"error","error":"boom"}"#,
        r#"{"status":"error","error":{"message":"no code"}}"#,
        r#"{"status":"error","error":{"code":"","message":"empty code"}}"#,
        r#"{"status":"error","error":{"code":"E","message":"m","retriable":"yes"}}"#,
    ] {
        let outcome = run(&exited(1, printed, ""));
        let (code, message, retriable) = error_of(&outcome);
        assert_eq!((code, retriable), ("OUTPUT_INVALID", false), "{printed}");
        assert!(message.contains("envelope"), "{message}");
    }
}

#[test]
fn an_async_handle_passes_through_unchecked() {
    // Not checked against output_schema, which describes the final result.
    let printed = json!({ "status": "async", "task": { "id": "task_123", "status": "running" } });
    let outcome = run(&exited(0, &printed.to_string(), ""));
    assert_eq!(outcome, ToolOutcome::Async(printed.clone()));
    assert_eq!(outcome.outcome(), Outcome::Async);
    let result = outcome.into_call_tool_result();
    assert_eq!(result.is_error, Some(false));
    assert_eq!(result.structured_content, Some(printed));
}

#[test]
fn a_failure_status_without_an_envelope_is_tool_failed_with_stderrs_end() {
    let outcome = run(&exited(2, "", "starting\nValueError: not a PDF\n"));
    let (code, message, retriable) = error_of(&outcome);
    assert_eq!((code, retriable), ("TOOL_FAILED", false));
    assert!(message.contains("exited with status 2"), "{message}");
    assert!(message.ends_with("ValueError: not a PDF"), "{message}");

    // A success-shaped result does not hide a failure status.
    let outcome = run(&exited(1, r#"{"text":"partial"}"#, ""));
    let (code, message, _) = error_of(&outcome);
    assert_eq!(code, "TOOL_FAILED");
    assert!(message.contains("printed nothing on stderr"), "{message}");

    // Killed by a signal.
    let killed = ProcessResult {
        exit_code: None,
        ..exited(0, "", "")
    };
    assert!(error_of(&run(&killed)).1.contains("killed by a signal"));

    // Only the end of a long stderr is quoted.
    let long = format!("{}THE END", "x".repeat(10_000));
    let outcome = run(&exited(1, "", &long));
    let message = error_of(&outcome).1;
    assert!(
        message.ends_with("THE END") && message.contains('…'),
        "{message}"
    );
    assert!(message.chars().count() < 2100, "{}", message.len());
}

#[test]
fn stdout_that_is_not_one_json_object_is_output_invalid() {
    for (printed, says) in [
        ("", "printed nothing"),
        ("  \n", "printed nothing"),
        ("hello", "not JSON"),
        ("{\"text\": \"a\"", "not JSON"),
        (
            "{\"text\":\"a\"}\n{\"text\":\"b\"}\n",
            "more than one JSON value",
        ),
        ("{\"text\":\"a\"} trailing", "more than one JSON value"),
        ("[1, 2]", "an array"),
        ("\"text\"", "a string"),
        ("null", "null"),
    ] {
        let outcome = run(&exited(0, printed, ""));
        let (code, message, retriable) = error_of(&outcome);
        assert_eq!((code, retriable), ("OUTPUT_INVALID", false), "{printed:?}");
        assert!(message.contains(says), "{printed:?}: {message}");
    }
    // Invalid UTF-8 is not JSON either.
    let outcome = run(&ProcessResult {
        stdout: b"{\"text\":\"\xff\"}".to_vec(),
        ..exited(0, "", "")
    });
    assert_eq!(error_of(&outcome).0, "OUTPUT_INVALID");
}

#[test]
fn a_result_not_matching_the_output_schema_is_output_invalid_with_its_paths() {
    let outcome = run(&exited(0, r#"{"text": 42, "extra": 1}"#, ""));
    let error = outcome.error().unwrap();
    assert_eq!(error.code, "OUTPUT_INVALID");
    let paths: Vec<&str> = error.extra["details"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["instance_path"].as_str().unwrap())
        .collect();
    assert!(paths.contains(&"/text") && paths.contains(&""), "{paths:?}");
}

#[test]
fn what_the_runtime_did_decides_before_what_was_printed() {
    let good = exited(0, r#"{"text":"done"}"#, "");
    let cases = [
        (
            ProcessResult {
                cancelled: true,
                timed_out: true,
                ..good.clone()
            },
            "CANCELLED",
            false,
        ),
        (
            ProcessResult {
                denied: Some("network access is not granted".into()),
                timed_out: true,
                ..good.clone()
            },
            "PERMISSION_DENIED",
            false,
        ),
        (
            ProcessResult {
                timed_out: true,
                exit_code: None,
                stdout_truncated: true,
                ..good.clone()
            },
            "TIMEOUT",
            true,
        ),
        (
            ProcessResult {
                stdout_truncated: true,
                ..good.clone()
            },
            "OUTPUT_TOO_LARGE",
            false,
        ),
    ];
    for (process, expected, retriable) in cases {
        let outcome = run(&process);
        let (code, message, is_retriable) = error_of(&outcome);
        assert_eq!((code, is_retriable), (expected, retriable), "{message}");
    }
    let denied = run(&ProcessResult {
        denied: Some("network access is not granted".into()),
        ..good
    });
    assert!(
        error_of(&denied)
            .1
            .contains("network access is not granted")
    );
}

#[test]
fn secrets_are_redacted_from_results_and_errors() {
    let redactor = Redactor::new([("OCR_SERVICE_API_KEY", "sk-live-0123456789")]);
    let schemas = schemas();
    let outcome = interpret(
        &exited(0, r#"{"text":"key is sk-live-0123456789"}"#, ""),
        &schemas,
        &redactor,
    );
    assert_eq!(
        outcome,
        ToolOutcome::Success(json!({ "text": "key is [REDACTED:OCR_SERVICE_API_KEY]" }))
    );
    for process in [
        exited(1, "", "auth failed for sk-live-0123456789\n"),
        exited(0, "oops sk-live-0123456789", ""),
        exited(
            1,
            r#"{"status":"error","error":{"code":"AUTH","message":"bad sk-live-0123456789","details":{"k":"sk-live-0123456789"}}}"#,
            "",
        ),
        exited(
            0,
            r#"{"status":"async","task":{"id":"sk-live-0123456789"}}"#,
            "",
        ),
    ] {
        let result = interpret(&process, &schemas, &redactor).into_call_tool_result();
        let wire = serde_json::to_string(&result).unwrap();
        assert!(!wire.contains("sk-live-0123456789"), "{wire}");
        assert!(wire.contains("[REDACTED:OCR_SERVICE_API_KEY]"), "{wire}");
    }
}

#[test]
fn every_runtime_code_is_distinct_and_only_timeouts_are_retried() {
    let names: std::collections::BTreeSet<&str> =
        ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(names.len(), ErrorCode::ALL.len());
    for code in ErrorCode::ALL {
        // Serde and `as_str` agree.
        assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
        assert_eq!(code.retriable(), code == ErrorCode::Timeout, "{code}");
    }
    let error = ToolError::new(ErrorCode::NotFound, "no tool `x__y` in this session");
    assert_eq!(
        error.envelope(),
        json!({ "status": "error", "error": { "code": "NOT_FOUND", "message": "no tool `x__y` in this session", "retriable": false } })
    );
}

#[test]
fn stdin_is_one_line_of_compact_json() {
    let mut arguments = JsonObject::new();
    arguments.insert("path".into(), json!("a\nb.pdf"));
    arguments.insert("pages".into(), json!([1, 2]));
    let payload = stdin_payload(&arguments);
    assert_eq!(payload.last(), Some(&b'\n'));
    assert_eq!(payload.iter().filter(|b| **b == b'\n').count(), 1);
    let parsed: JsonObject = serde_json::from_slice(&payload).unwrap();
    assert_eq!(parsed, arguments);
    assert_eq!(stdin_payload(&JsonObject::new()), b"{}\n");
}

#[test]
fn a_listed_tool_is_the_mcp_export_under_its_wire_name() {
    let tool = extract_text();
    let listed = serde_json::to_value(listed_tool("pdf-processing", &tool)).unwrap();
    assert_eq!(listed["name"], "pdf-processing__extract-text");
    assert_eq!(listed["title"], "pdf-processing: extract-text");
    assert_eq!(listed["description"], "Extract text from a PDF file.");
    assert_eq!(
        listed["inputSchema"],
        Value::Object(tool.input_schema.clone())
    );
    assert_eq!(
        listed["outputSchema"],
        Value::Object(tool.output_schema.clone().unwrap())
    );
    assert!(listed.get("annotations").is_none());

    let mut destructive = tool;
    destructive.confirmation =
        Some(serde_json::from_value(json!({ "level": "destructive_writes" })).unwrap());
    let listed = serde_json::to_value(listed_tool(&"s".repeat(64), &destructive)).unwrap();
    assert_eq!(listed["annotations"], json!({ "destructiveHint": true }));
    assert_eq!(listed["name"].as_str().unwrap().len(), 64);
}
