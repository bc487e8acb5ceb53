//! The audit line's fields and the writer's guarantees.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;
use crate::runtime::tool_call::ErrorCode;

const SECRET: &str = "sk-live-SECRET-0123456789";

fn redactor() -> Redactor {
    Redactor::new([("OCR_SERVICE_API_KEY", SECRET)])
}

fn trace() -> TraceId {
    TraceId::from_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap()
}

/// A failed call to spec 003's `extract-text`, with the secret in every
/// field a client or tool can fill.
fn record() -> AuditRecord {
    let mut record =
        AuditRecord::begin("session-7", trace(), "pdf-processing__extract-text").unwrap();
    record.skill = Some(SkillInfo::new(
        "pdf-processing",
        Some("1.0.0"),
        Some(
            &serde_json::from_value(
                json!({ "source_repo": "https://example.org/r", "source_commit": "0a1b2c3d" }),
            )
            .unwrap(),
        ),
    ));
    record.host_id = Some(format!("client/{SECRET}"));
    record.approval_state = ApprovalState::Approved;
    record.duration = Duration::from_millis(1234);
    record.exit_code = Some(2);
    record.outcome = Outcome::Error;
    record.error = Some(ToolError::new(
        ErrorCode::ToolFailed,
        format!("auth failed with {SECRET}"),
    ));
    record.denials = vec![format!("connect to api.example.org with {SECRET}")];
    record.arguments = json!({ "path": "in/a.pdf", "token": SECRET, "pages": [1, 2] })
        .as_object()
        .unwrap()
        .clone();
    record
}

fn parse(line: &[u8]) -> BTreeMap<String, Value> {
    assert_eq!(line.last(), Some(&b'\n'));
    assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1, "one line");
    serde_json::from_slice(line).unwrap()
}

#[test]
fn a_line_has_every_telemetry_field_of_spec_003() {
    let line = parse(&record().to_line(&redactor()));
    let keys: Vec<&str> = line.keys().map(String::as_str).collect();
    let mut expected = vec![
        "v",
        "ts",
        "session",
        "trace_id",
        "run_id",
        "tool",
        "skill_id",
        "skill_version",
        "skill_source_commit",
        "host_id",
        "adapter_id",
        "approval_state",
        "duration_ms",
        "exit_code",
        "outcome",
        "error_code",
        "error_message",
        "denials",
        "arguments",
        "arguments_bytes",
    ];
    expected.sort_unstable();
    assert_eq!(keys, expected);

    assert_eq!(line["v"], 1);
    assert_eq!(line["session"], "session-7");
    assert_eq!(line["trace_id"], "4bf92f3577b34da6a3ce929d0e0e4736");
    let run_id = line["run_id"].as_str().unwrap();
    assert_eq!(run_id.len(), 16);
    assert!(
        run_id
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    assert_eq!(line["tool"], "pdf-processing__extract-text");
    assert_eq!(line["skill_id"], "pdf-processing");
    assert_eq!(line["skill_version"], "1.0.0");
    assert_eq!(line["skill_source_commit"], "0a1b2c3d");
    assert_eq!(
        line["adapter_id"],
        format!("skillpkg/{}", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(line["approval_state"], "APPROVED");
    assert_eq!(line["duration_ms"], 1234);
    assert_eq!(line["exit_code"], 2);
    assert_eq!(line["outcome"], "error");
    assert_eq!(line["error_code"], "TOOL_FAILED");
    assert_eq!(line["arguments"]["path"], "in/a.pdf");
    assert_eq!(line["arguments"]["pages"], json!([1, 2]));
    assert!(line["arguments_bytes"].as_u64().unwrap() > 40);

    // RFC 3339, in UTC, to the millisecond.
    let ts = line["ts"].as_str().unwrap();
    ts.parse::<jiff::Timestamp>().unwrap();
    assert!(
        ts.ends_with('Z') && ts.len() == "2025-12-21T10:00:00.123Z".len(),
        "{ts}"
    );
}

#[test]
fn a_line_never_holds_a_secret() {
    let line = record().to_line(&redactor());
    let text = String::from_utf8(line.clone()).unwrap();
    assert!(!text.contains(SECRET), "{text}");
    let line = parse(&line);
    assert_eq!(line["arguments"]["token"], "[REDACTED:OCR_SERVICE_API_KEY]");
    assert_eq!(line["host_id"], "client/[REDACTED:OCR_SERVICE_API_KEY]");
    assert_eq!(
        line["error_message"],
        "auth failed with [REDACTED:OCR_SERVICE_API_KEY]"
    );
    assert_eq!(
        line["denials"],
        json!(["connect to api.example.org with [REDACTED:OCR_SERVICE_API_KEY]"])
    );
}

#[test]
fn unknown_fields_are_null_and_a_runtime_tool_has_no_skill() {
    let record = AuditRecord::begin("s", trace(), "skills_load").unwrap();
    let line = parse(&record.to_line(&Redactor::default()));
    for key in [
        "skill_id",
        "skill_version",
        "skill_source_commit",
        "host_id",
        "exit_code",
        "error_code",
        "error_message",
    ] {
        assert_eq!(line[key], Value::Null, "{key}");
    }
    assert_eq!(line["approval_state"], "NOT_REQUIRED");
    assert_eq!(line["outcome"], "ok");
    assert_eq!(line["denials"], json!([]));
    assert_eq!(line["arguments"], json!({}));
    assert_eq!(line["arguments_bytes"], 2);
}

#[test]
fn what_a_client_chooses_is_capped() {
    let mut record = AuditRecord::begin("s", trace(), "x".repeat(100_000)).unwrap();
    record.denials = vec!["d".repeat(10_000); 1000];
    let line = record.to_line(&Redactor::default());
    assert!(line.len() < 20_000, "{}", line.len());
    let line = parse(&line);
    assert_eq!(line["denials"].as_array().unwrap().len(), MAX_DENIALS + 1);
    assert!(line["tool"].as_str().unwrap().ends_with("…(+99800 chars)"));
}

#[test]
fn each_call_gets_its_own_run_id() {
    let one = AuditRecord::begin("s", trace(), "t").unwrap();
    let two = AuditRecord::begin("s", trace(), "t").unwrap();
    assert_ne!(one.run_id, two.run_id);
    assert_eq!(one.trace_id, two.trace_id);
}

#[cfg(unix)]
#[test]
fn the_log_is_created_private_and_appended_to() {
    use std::os::unix::fs::PermissionsExt as _;
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("audit.jsonl");
    let log = AuditLog::open(&path).unwrap();
    assert_eq!(log.path(), path);
    let mode = fs_err::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    log.append(&record(), &redactor()).unwrap();
    drop(log);
    // Reopening appends; nothing is truncated.
    let log = AuditLog::open(&path).unwrap();
    log.append(&record(), &redactor()).unwrap();
    let text = fs_err::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 2);
    for line in text.lines() {
        parse(format!("{line}\n").as_bytes());
    }
}

#[test]
fn a_log_that_cannot_be_opened_is_an_error_naming_it() {
    let folder = tempfile::tempdir().unwrap();
    let missing = folder.path().join("no-such-folder").join("audit.jsonl");
    let error = AuditLog::open(&missing).unwrap_err();
    assert!(matches!(error, AuditError::Open { .. }), "{error:?}");
    assert!(error.to_string().contains("no-such-folder"), "{error}");

    let error = AuditLog::open(folder.path()).unwrap_err();
    assert!(matches!(error, AuditError::NotAFile { .. }), "{error:?}");
    #[cfg(unix)]
    {
        // A device (and `/dev/stdout`, the MCP stream on stdio) is refused.
        let error = AuditLog::open(Path::new("/dev/null")).unwrap_err();
        assert!(matches!(error, AuditError::NotAFile { .. }), "{error:?}");
    }
}

#[test]
fn concurrent_writers_produce_whole_lines() {
    const WRITERS: usize = 8;
    const LINES: usize = 50;
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("audit.jsonl");
    // One writer per open file, as separate servers would have, each with
    // lines of about 16 KiB, far over any pipe's atomic size.
    std::thread::scope(|scope| {
        for writer in 0..WRITERS {
            let path = &path;
            scope.spawn(move || {
                let log = AuditLog::open(path).unwrap();
                let mut record =
                    AuditRecord::begin(format!("writer-{writer}"), trace(), "t").unwrap();
                record.arguments = (0..64)
                    .map(|key| (format!("k{key:02}"), json!(format!("{writer}").repeat(256))))
                    .collect();
                let line = record.to_line(&Redactor::default());
                assert!(line.len() > 16_000, "{}", line.len());
                for _ in 0..LINES {
                    log.append_line(&line).unwrap();
                }
            });
        }
    });
    let text = fs_err::read_to_string(&path).unwrap();
    let mut per_writer = BTreeMap::new();
    for line in text.lines() {
        let line: BTreeMap<String, Value> = serde_json::from_str(line).unwrap();
        let session = line["session"].as_str().unwrap().to_owned();
        let digit = session.strip_prefix("writer-").unwrap();
        // The line's body is its own writer's, not a mix.
        assert_eq!(line["arguments"]["k63"], json!(digit.repeat(256)));
        *per_writer.entry(session).or_insert(0) += 1;
    }
    assert_eq!(per_writer.len(), WRITERS);
    assert!(
        per_writer.values().all(|count| *count == LINES),
        "{per_writer:?}"
    );
}
