//! Broken Universal extension values, each with the codes it must yield
//! (written from spec 003 and `docs/skill-format.md`) and a snapshot of the
//! full diagnostics (code, place, message, hint) that a reviewer reads.
//!
//! Every case starts from one valid tool-backed skill and breaks one thing,
//! so an unexpected extra code shows up as a failure too.

use std::collections::BTreeSet;

use skillpkg_index::skill::{Host, ValidateOptions, validate_skill};

const SCRIPT: &str = "#!/usr/bin/env python3\nimport json, sys\nprint(json.dumps({}))\n";

/// The valid skill every case edits: one tool, permissions, safety.
const VALID: &str = "---
name: sample
description: Extracts text from PDF files. Use when PDFs are mentioned.
when_to_use:
  mentions: [pdf]
  file_types: [.pdf]
permissions:
  filesystem:
    read: [\"**/*.pdf\"]
    write: [\"output/**\"]
  network:
    outbound: []
safety:
  require_confirmation_for: [destructive_writes]
  redact: {secrets: true, pii: true}
tools:
  - name: extract-text
    description: Extract text from a PDF file.
    input_schema:
      type: object
      additionalProperties: false
      properties:
        path: {type: string}
      required: [path]
    output_schema:
      type: object
      additionalProperties: false
      properties:
        text: {type: string}
      required: [text]
    implementation:
      runtime: python
      entrypoint: scripts/run.py
---
# Sample

Run `extract-text`.
";

struct Case {
    name: &'static str,
    /// `(from, to)` replacements applied to [`VALID`] in order.
    edits: &'static [(&'static str, &'static str)],
    host: Host,
    expected: &'static [&'static str],
}

const fn case(
    name: &'static str,
    edits: &'static [(&'static str, &'static str)],
    expected: &'static [&'static str],
) -> Case {
    Case {
        name,
        edits,
        host: Host::Mcp,
        expected,
    }
}

const TOOL_NAME: &str = "  - name: extract-text\n";
const RUNTIME: &str = "      runtime: python\n";
const ENTRYPOINT: &str = "      entrypoint: scripts/run.py\n";
const OUTPUT: &str = "    output_schema:\n      type: object\n      additionalProperties: false\n      properties:\n        text: {type: string}\n      required: [text]\n";
const INPUT_TYPE: &str = "    input_schema:\n      type: object\n";
const WHEN: &str = "when_to_use:\n  mentions: [pdf]\n  file_types: [.pdf]\n";
const READ: &str = "    read: [\"**/*.pdf\"]\n";
const OUTBOUND: &str = "    outbound: []\n";
const SAFETY: &str = "  require_confirmation_for: [destructive_writes]\n";
const REDACT: &str = "  redact: {secrets: true, pii: true}\n";
const TOOLS_END: &str = "      entrypoint: scripts/run.py\n---\n";

fn cases() -> Vec<Case> {
    vec![
        // tools: shape and names
        case(
            "tools-not-a-list",
            &[("tools:\n  - name", "tools: extract\nx_tools:\n  - name")],
            &["tools-invalid", "unknown-key"],
        ),
        case(
            "tools-as-agent-tool-names",
            &[(
                "tools:\n  - name",
                "tools: [codebase, search]\nx_tools:\n  - name",
            )],
            &["tools-invalid", "unknown-key"],
        ),
        case(
            "tool-not-a-mapping",
            &[(TOOL_NAME, "  - extract-text\n  - name: extract-text\n")],
            &["tools-invalid"],
        ),
        case(
            "tool-unknown-key",
            &[(TOOL_NAME, "  - name: extract-text\n    timeout: 5\n")],
            &["tools-invalid"],
        ),
        case(
            "tool-name-double-hyphen",
            &[(TOOL_NAME, "  - name: bad--tool\n")],
            &["tool-name-invalid"],
        ),
        case(
            "tool-name-uppercase",
            &[(TOOL_NAME, "  - name: ExtractText\n")],
            &["tool-name-invalid"],
        ),
        case(
            "tool-name-leading-hyphen",
            &[(TOOL_NAME, "  - name: -extract\n")],
            &["tool-name-invalid"],
        ),
        case(
            "tool-name-too-long",
            &[(
                TOOL_NAME,
                "  - name: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
            )],
            &["tool-name-invalid"],
        ),
        case(
            "tool-name-not-a-string",
            &[(TOOL_NAME, "  - name: 42\n")],
            &["tool-name-invalid"],
        ),
        case(
            "tool-name-missing",
            &[
                (TOOL_NAME, "  - description: x\n"),
                ("    description: Extract text from a PDF file.\n", ""),
            ],
            &["tool-name-invalid"],
        ),
        case(
            "tool-names-duplicated",
            &[(
                TOOLS_END,
                "      entrypoint: scripts/run.py\n  - name: extract-text\n    description: Again.\n    input_schema: {type: object, additionalProperties: false}\n    output_schema: {type: object, additionalProperties: false}\n    implementation: {runtime: python, entrypoint: scripts/run.py}\n---\n",
            )],
            &["tool-name-duplicate"],
        ),
        case(
            "tool-description-empty",
            &[(
                "    description: Extract text from a PDF file.\n",
                "    description: \"\"\n",
            )],
            &["tool-description-invalid"],
        ),
        case(
            "tool-description-missing",
            &[("    description: Extract text from a PDF file.\n", "")],
            &["tool-description-invalid"],
        ),
        // schemas
        case(
            "input-schema-missing",
            &[(INPUT_TYPE, "    other_schema:\n      type: object\n")],
            &["tool-schema-invalid", "tools-invalid"],
        ),
        case(
            "input-schema-not-object-type",
            &[(INPUT_TYPE, "    input_schema:\n      type: array\n")],
            &["tool-schema-invalid"],
        ),
        case(
            "input-schema-not-a-mapping",
            &[(
                INPUT_TYPE,
                "    input_schema: path\n    x_schema:\n      type: object\n",
            )],
            &["tool-schema-invalid", "tools-invalid"],
        ),
        case(
            "input-schema-bad-keyword-value",
            &[(
                INPUT_TYPE,
                "    input_schema:\n      type: object\n      minProperties: -1\n",
            )],
            &["tool-schema-invalid"],
        ),
        case(
            "input-schema-bad-regex",
            &[(
                "        path: {type: string}\n",
                "        path: {type: string, pattern: \"([a-z\"}\n",
            )],
            &["tool-schema-invalid"],
        ),
        case(
            "input-schema-remote-ref",
            &[(
                "        path: {type: string}\n",
                "        path: {$ref: \"https://example.com/s.json\"}\n",
            )],
            &["tool-schema-invalid"],
        ),
        case(
            "input-schema-open",
            &[
                (
                    INPUT_TYPE,
                    "    input_schema:\n      type: object\n      x-open: true\n",
                ),
                (
                    "      additionalProperties: false\n      properties:\n        path",
                    "      properties:\n        path",
                ),
            ],
            &["tool-schema-open"],
        ),
        case(
            "nested-schema-open",
            &[(
                "        path: {type: string}\n",
                "        path: {type: object, properties: {a: {type: string}}}\n",
            )],
            &["tool-schema-open"],
        ),
        case(
            "output-schema-missing",
            &[(OUTPUT, "")],
            &["tool-output-schema-missing"],
        ),
        case(
            "output-schema-not-object-type",
            &[(OUTPUT, "    output_schema: {type: string}\n")],
            &["tool-schema-invalid"],
        ),
        // confirmation
        case(
            "confirmation-level-unknown",
            &[(
                TOOL_NAME,
                "  - name: extract-text\n    confirmation: {level: sometimes}\n",
            )],
            &["tool-confirmation-invalid"],
        ),
        case(
            "confirmation-unknown-key",
            &[(
                TOOL_NAME,
                "  - name: extract-text\n    confirmation: {level: always, ask: true}\n",
            )],
            &["tool-confirmation-invalid"],
        ),
        // implementation
        case(
            "implementation-missing",
            &[(
                "    implementation:\n      runtime: python\n      entrypoint: scripts/run.py\n",
                "",
            )],
            &["tool-implementation-invalid"],
        ),
        case(
            "implementation-without-entrypoint",
            &[(ENTRYPOINT, "")],
            &["tool-implementation-invalid"],
        ),
        case(
            "implementation-unknown-key",
            &[(
                ENTRYPOINT,
                "      entrypoint: scripts/run.py\n      command: python3\n",
            )],
            &["tool-implementation-invalid"],
        ),
        case(
            "implementation-timeout-zero",
            &[(
                ENTRYPOINT,
                "      entrypoint: scripts/run.py\n      timeout_seconds: 0\n",
            )],
            &["tool-implementation-invalid"],
        ),
        case(
            "implementation-dependencies-unknown-manager",
            &[(
                ENTRYPOINT,
                "      entrypoint: scripts/run.py\n      dependencies: {cargo: [serde]}\n",
            )],
            &["tool-implementation-invalid"],
        ),
        case(
            "runtime-ruby",
            &[(RUNTIME, "      runtime: ruby\n")],
            &["tool-runtime-invalid"],
        ),
        case(
            "runtime-capitalised",
            &[(RUNTIME, "      runtime: Python\n")],
            &["tool-runtime-invalid"],
        ),
        case(
            "entrypoint-absolute",
            &[(ENTRYPOINT, "      entrypoint: /usr/local/bin/run.py\n")],
            &["tool-entrypoint-outside"],
        ),
        case(
            "entrypoint-climbs-out",
            &[(ENTRYPOINT, "      entrypoint: scripts/../../run.py\n")],
            &["tool-entrypoint-outside"],
        ),
        case(
            "entrypoint-backslash",
            &[(ENTRYPOINT, "      entrypoint: scripts\\\\run.py\n")],
            &["tool-entrypoint-outside"],
        ),
        case(
            "entrypoint-typescript-for-node",
            &[
                (RUNTIME, "      runtime: node\n"),
                (ENTRYPOINT, "      entrypoint: scripts/run.ts\n"),
            ],
            &["tool-entrypoint-extension"],
        ),
        case(
            "entrypoint-python-for-bash",
            &[(RUNTIME, "      runtime: bash\n")],
            &["tool-entrypoint-extension"],
        ),
        case(
            "entrypoint-missing-file",
            &[(ENTRYPOINT, "      entrypoint: scripts/missing.py\n")],
            &["tool-entrypoint-missing"],
        ),
        case(
            "entrypoint-is-a-folder",
            &[(ENTRYPOINT, "      entrypoint: scripts.py\n")],
            &["tool-entrypoint-missing"],
        ),
        // when_to_use
        case(
            "when-to-use-prose",
            &[(WHEN, "when_to_use: Use this for PDFs.\n")],
            &["when-to-use-invalid"],
        ),
        case(
            "when-to-use-unknown-key",
            &[(WHEN, "when_to_use:\n  keywords: [pdf]\n")],
            &["when-to-use-invalid"],
        ),
        case(
            "when-to-use-priority-negative",
            &[(WHEN, "when_to_use:\n  priority: -1\n")],
            &["when-to-use-invalid"],
        ),
        case(
            "when-to-use-mentions-not-strings",
            &[(WHEN, "when_to_use:\n  mentions: [{pdf: 1}]\n")],
            &["when-to-use-invalid"],
        ),
        // permissions
        case(
            "permissions-read-not-a-list",
            &[(READ, "    read: \"**/*.pdf\"\n")],
            &["permissions-invalid"],
        ),
        case(
            "permissions-unknown-section",
            &[(OUTBOUND, "    outbound: []\n  env:\n    allow: [HOME]\n")],
            &["permissions-invalid"],
        ),
        case(
            "permissions-subprocess-not-boolean",
            &[(
                OUTBOUND,
                "    outbound: []\n  processes:\n    allow_subprocess: sometimes\n",
            )],
            &["permissions-invalid"],
        ),
        case(
            "glob-negated",
            &[(READ, "    read: [\"!secrets/**\"]\n")],
            &["permission-glob-invalid"],
        ),
        case(
            "glob-absolute",
            &[(READ, "    read: [\"/etc/**\"]\n")],
            &["permission-glob-invalid"],
        ),
        case(
            "glob-home",
            &[(READ, "    read: [\"~/.ssh/*\"]\n")],
            &["permission-glob-invalid"],
        ),
        case(
            "glob-climbs-out",
            &[(READ, "    read: [\"../**\"]\n")],
            &["permission-glob-invalid"],
        ),
        case(
            "glob-unclosed-class",
            &[(READ, "    read: [\"docs/[a\"]\n")],
            &["permission-glob-invalid"],
        ),
        case(
            "glob-everything",
            &[(READ, "    read: [\"**/*\"]\n")],
            &["permission-overbroad"],
        ),
        case(
            "network-everything",
            &[(OUTBOUND, "    outbound: [\"*\"]\n")],
            &["permission-overbroad"],
        ),
        // safety
        case(
            "safety-not-a-mapping",
            &[(SAFETY, "  - destructive_writes\n"), (REDACT, "")],
            &["safety-invalid"],
        ),
        case(
            "safety-unknown-gate",
            &[(SAFETY, "  require_confirmation_for: [deletes]\n")],
            &["safety-invalid"],
        ),
        case(
            "safety-redact-not-boolean",
            &[(REDACT, "  redact: {secrets: yes}\n")],
            &["safety-invalid", "ambiguous-scalar"],
        ),
        // secrets, provenance, overrides, spec_version
        case(
            "secrets-a-list",
            &[(WHEN, "secrets: [OCR_KEY]\n")],
            &["secrets-invalid"],
        ),
        case(
            "secret-usage-file",
            &[(
                WHEN,
                "secrets:\n  required:\n    - {name: OCR_KEY, usage: file}\n",
            )],
            &["secrets-invalid"],
        ),
        case(
            "secret-name-with-space",
            &[(
                WHEN,
                "secrets:\n  required:\n    - {name: OCR KEY, usage: env}\n",
            )],
            &["secrets-invalid"],
        ),
        case(
            "secret-without-usage",
            &[(WHEN, "secrets:\n  required:\n    - {name: OCR_KEY}\n")],
            &["secrets-invalid"],
        ),
        case(
            "provenance-not-a-mapping",
            &[(WHEN, "provenance: github.com/org/repo\n")],
            &["provenance-invalid"],
        ),
        case(
            "provenance-repo-not-a-url",
            &[(WHEN, "provenance: {source_repo: org/repo}\n")],
            &["provenance-invalid"],
        ),
        case(
            "provenance-commit-a-branch",
            &[(WHEN, "provenance: {source_commit: main}\n")],
            &["provenance-invalid"],
        ),
        case(
            "provenance-reviewers-a-string",
            &[(WHEN, "provenance: {reviewed_by: alice}\n")],
            &["provenance-invalid"],
        ),
        case(
            "host-overrides-a-mapping",
            &[(WHEN, "host_overrides: {mcp: {}}\n")],
            &["host-overrides-invalid"],
        ),
        case(
            "host-override-without-config",
            &[(WHEN, "host_overrides: [{host: mcp}]\n")],
            &["host-overrides-invalid"],
        ),
        case(
            "host-override-unknown-host",
            &[(WHEN, "host_overrides: [{host: claude_code, config: {}}]\n")],
            &["host-override-unknown"],
        ),
        case(
            "spec-version-three",
            &[(WHEN, "spec_version: \"3.0\"\n")],
            &["spec-version-invalid"],
        ),
        case(
            "spec-version-number",
            &[(WHEN, "spec_version: 2.1\n")],
            &["spec-version-invalid"],
        ),
        // hosts
        Case {
            host: Host::OpenAi,
            ..case(
                "openai-optional-property",
                &[("      required: [path]\n", "      required: []\n")],
                &["host-openai-strict"],
            )
        },
        Case {
            host: Host::OpenAi,
            ..case(
                "openai-all-of",
                &[(
                    "        path: {type: string}\n",
                    "        path: {allOf: [{type: string}]}\n",
                )],
                &["host-openai-strict"],
            )
        },
        Case {
            host: Host::ClaudeApi,
            ..case(
                "claude-api-network",
                &[(OUTBOUND, "    outbound: [api.example.com]\n")],
                &["host-network"],
            )
        },
        Case {
            host: Host::ClaudeApi,
            ..case(
                "claude-api-dependencies",
                &[(
                    ENTRYPOINT,
                    "      entrypoint: scripts/run.py\n      dependencies: {pip: [pdfplumber==0.11.4]}\n",
                )],
                &["host-dependency-install"],
            )
        },
    ]
}

fn run(case: &Case) -> (BTreeSet<String>, String) {
    let mut text = VALID.to_owned();
    for (from, to) in case.edits {
        assert!(
            text.contains(from),
            "{}: `{from}` is not in the skill",
            case.name
        );
        text = text.replacen(from, to, 1);
    }
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join("sample");
    fs_err::create_dir_all(dir.join("scripts")).unwrap();
    fs_err::create_dir_all(dir.join("scripts.py")).unwrap();
    fs_err::write(dir.join("SKILL.md"), &text).unwrap();
    for script in ["scripts/run.py", "scripts/run.ts"] {
        fs_err::write(dir.join(script), SCRIPT).unwrap();
    }
    std::process::Command::new("chmod")
        .args(["+x", "scripts/run.py", "scripts/run.ts"])
        .current_dir(&dir)
        .status()
        .unwrap();
    let options = ValidateOptions {
        host: case.host,
        ..ValidateOptions::for_folder(&dir)
    };
    let report = validate_skill(&dir, &options);
    let codes = report
        .diagnostics
        .iter()
        .map(|d| d.code.to_string())
        .collect();
    let rendered = report
        .diagnostics
        .iter()
        .map(|d| {
            let place = d
                .location
                .map_or_else(String::new, |l| format!(":{}:{}", l.line, l.column));
            let hint = d
                .hint
                .as_deref()
                .map_or_else(String::new, |h| format!("\n    hint: {h}"));
            format!(
                "{}[{}] {}{place}: {}{hint}",
                d.severity,
                d.code,
                d.file.display(),
                d.message
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    (codes, rendered)
}

#[test]
fn the_valid_skill_is_valid_for_every_host() {
    for (name, host) in Host::ALL {
        let case = Case {
            host: *host,
            ..case("valid", &[], &[])
        };
        let (codes, rendered) = run(&case);
        let expected: BTreeSet<String> = if *host == Host::Portable {
            ["non-portable-key".to_owned()].into()
        } else {
            BTreeSet::new()
        };
        assert_eq!(codes, expected, "{name}:\n{rendered}");
    }
}

#[test]
fn every_broken_extension_yields_its_code() {
    let cases = cases();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    let mut names = BTreeSet::new();
    let mut failures = Vec::new();
    for case in &cases {
        assert!(names.insert(case.name), "two cases are named {}", case.name);
        let (codes, rendered) = run(case);
        let expected: BTreeSet<String> = case
            .expected
            .iter()
            .map(|code| (*code).to_owned())
            .collect();
        if codes != expected {
            failures.push(format!(
                "{}: expected {expected:?}, got {codes:?}\n{rendered}",
                case.name
            ));
            continue;
        }
        insta::assert_snapshot!(case.name, rendered);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
