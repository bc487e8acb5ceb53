//! `skillpkg tools`: listing, exports for MCP, OpenAI and Claude, tools.json
//! and its staleness, end to end. The expected documents are written from
//! spec 003's mapping table, MCP 2025-11-25's `Tool`, the OpenAI Responses
//! API's function tools and the Claude Messages API's tools; two MCP SDKs
//! (Rust and Python) must accept the MCP export.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};
use skillpkg_tests::{TestContext, mcp_python, run, set_executable};

/// Three tools: two from spec 003's examples (`extract-text` and
/// `delete-output`, both strict) and one that breaks the strict profile in
/// four places.
const TOOLS: &str = r#"tools:
  - name: extract-text
    description: Extract text from a PDF file.
    input_schema:
      type: object
      additionalProperties: false
      properties:
        path: { type: string }
      required: [path]
    output_schema:
      type: object
      additionalProperties: false
      properties:
        text: { type: string }
        page_count: { type: integer, minimum: 0 }
      required: [text, page_count]
    implementation:
      runtime: python
      entrypoint: scripts/pdf.py
      handler: extract_text
  - name: delete-output
    description: Delete generated output files.
    confirmation:
      level: destructive_writes
      prompt: "This will delete files under output/**."
    input_schema:
      type: object
      additionalProperties: false
      properties:
        dry_run: { type: boolean }
      required: [dry_run]
    implementation:
      runtime: bash
      entrypoint: scripts/delete_output.sh
  - name: fetch-page
    description: Fetch a web page to read.
    confirmation: { level: external_network }
    input_schema:
      type: object
      properties:
        url: { type: string, format: uri }
        options:
          type: object
          properties:
            mode: { type: string, enum: [fast, exact] }
          required: [mode]
      required: [url]
    implementation:
      runtime: node
      entrypoint: scripts/fetch.mjs
      timeout_seconds: 30
"#;

/// Writes the skill `pdf` with [`TOOLS`] and its scripts.
fn pdf_skill(sandbox: &TestContext) -> PathBuf {
    let dir = sandbox.skill("pdf", "pdf", TOOLS, "# PDF\n\nUse the tools.\n");
    write_scripts(
        sandbox,
        "pdf",
        &[
            "scripts/pdf.py",
            "scripts/delete_output.sh",
            "scripts/fetch.mjs",
        ],
    );
    dir
}

/// Writes executable `scripts` into the skill folder `dir`: entrypoints
/// must exist for a skill to validate.
fn write_scripts(sandbox: &TestContext, dir: &str, scripts: &[&str]) {
    for script in scripts {
        let path = sandbox.write(&format!("{dir}/{script}"), "#!/usr/bin/env sh\n");
        set_executable(&path, true);
    }
}

fn extract_text_input() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": { "path": { "type": "string" } },
        "required": ["path"]
    })
}

fn extract_text_output() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "text": { "type": "string" },
            "page_count": { "type": "integer", "minimum": 0 }
        },
        "required": ["text", "page_count"]
    })
}

fn delete_output_input() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": { "dry_run": { "type": "boolean" } },
        "required": ["dry_run"]
    })
}

fn fetch_page_input() -> Value {
    json!({
        "type": "object",
        "properties": {
            "url": { "type": "string", "format": "uri" },
            "options": {
                "type": "object",
                "properties": { "mode": { "type": "string", "enum": ["fast", "exact"] } },
                "required": ["mode"]
            }
        },
        "required": ["url"]
    })
}

fn export(sandbox: &TestContext, format: &str) -> skillpkg_tests::Output {
    run(sandbox
        .skillpkg_command()
        .args(["tools", "export", "pdf", "--format", format]))
}

#[test]
fn the_list_shows_name_runtime_entrypoint_and_description() {
    let sandbox = TestContext::new();
    pdf_skill(&sandbox);
    let output = sandbox.skillpkg(["tools", "pdf"]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(
        output.stdout,
        "\
extract-text   python  scripts/pdf.py:extract_text  Extract text from a PDF file.
delete-output  bash    scripts/delete_output.sh     Delete generated output files.
fetch-page     node    scripts/fetch.mjs            Fetch a web page to read.
3 tools in pdf
"
    );

    let output = run(sandbox
        .skillpkg_command()
        .args(["tools", "--json"])
        .current_dir(sandbox.path().join("pdf")));
    assert_eq!(output.code, 0, "{output:?}");
    let listed = output.json();
    assert_eq!(listed["skill"], "pdf");
    assert_eq!(
        listed["tools"][1],
        json!({
            "name": "delete-output",
            "description": "Delete generated output files.",
            "runtime": "bash",
            "entrypoint": "scripts/delete_output.sh",
            "handler": null,
            "timeout_seconds": null,
            "confirmation": "destructive_writes"
        })
    );
    assert_eq!(listed["tools"][2]["timeout_seconds"], 30);
}

#[test]
fn mcp_export_maps_schemas_and_behaviour_hints() {
    let sandbox = TestContext::new();
    pdf_skill(&sandbox);
    let output = export(&sandbox, "mcp");
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(output.stderr, "", "an MCP export has nothing to warn about");
    assert_eq!(
        output.json(),
        json!([
            {
                "name": "extract-text",
                "description": "Extract text from a PDF file.",
                "inputSchema": extract_text_input(),
                "outputSchema": extract_text_output()
            },
            {
                "name": "delete-output",
                "description": "Delete generated output files.",
                "inputSchema": delete_output_input(),
                "annotations": { "destructiveHint": true }
            },
            {
                "name": "fetch-page",
                "description": "Fetch a web page to read.",
                "inputSchema": fetch_page_input(),
                "annotations": { "openWorldHint": true }
            }
        ])
    );
}

#[test]
fn openai_export_is_strict_where_it_can_be_and_says_why_not_elsewhere() {
    let sandbox = TestContext::new();
    pdf_skill(&sandbox);
    let output = export(&sandbox, "openai");
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(
        output.json(),
        json!([
            {
                "type": "function",
                "name": "extract-text",
                "description": "Extract text from a PDF file.",
                "parameters": extract_text_input(),
                "strict": true
            },
            {
                "type": "function",
                "name": "delete-output",
                "description": "Delete generated output files.",
                "parameters": delete_output_input(),
                "strict": true
            },
            {
                "type": "function",
                "name": "fetch-page",
                "description": "Fetch a web page to read.",
                "parameters": fetch_page_input(),
                "strict": false
            }
        ])
    );
    // One warning per violation, each with the JSON pointer of the schema
    // that breaks the rule (none for the root).
    let warnings: Vec<&str> = output
        .stderr
        .lines()
        .filter(|line| line.starts_with("warning["))
        .collect();
    assert_eq!(
        warnings,
        [
            "warning[additional-properties]: tool `fetch-page`, input_schema: the object schema does not set `additionalProperties: false`",
            "warning[required-missing]: tool `fetch-page`, input_schema: `required` leaves out `options`; strict mode needs every property listed (make one optional with a `null` type: `type: [string, \"null\"]`)",
            "warning[additional-properties]: tool `fetch-page`, input_schema at /properties/options: the object schema does not set `additionalProperties: false`",
            "warning[unsupported-format]: tool `fetch-page`, input_schema at /properties/url: strict mode does not support `format: uri`; it knows date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid",
        ],
        "{}",
        output.stderr
    );
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @r#"
    warning[additional-properties]: tool `fetch-page`, input_schema: the object schema does not set `additionalProperties: false`
    warning[required-missing]: tool `fetch-page`, input_schema: `required` leaves out `options`; strict mode needs every property listed (make one optional with a `null` type: `type: [string, "null"]`)
    warning[additional-properties]: tool `fetch-page`, input_schema at /properties/options: the object schema does not set `additionalProperties: false`
    warning[unsupported-format]: tool `fetch-page`, input_schema at /properties/url: strict mode does not support `format: uri`; it knows date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid
    note: exported with `strict: false`: fetch-page
    "#);
}

#[test]
fn openai_strict_export_prints_nothing_when_a_schema_is_not_strict() {
    let sandbox = TestContext::new();
    pdf_skill(&sandbox);
    let output = export(&sandbox, "openai-strict");
    assert_eq!(output.code, 1, "{output:?}");
    assert_eq!(output.stdout, "");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @r#"
    error[additional-properties]: tool `fetch-page`, input_schema: the object schema does not set `additionalProperties: false`
    error[required-missing]: tool `fetch-page`, input_schema: `required` leaves out `options`; strict mode needs every property listed (make one optional with a `null` type: `type: [string, "null"]`)
    error[additional-properties]: tool `fetch-page`, input_schema at /properties/options: the object schema does not set `additionalProperties: false`
    error[unsupported-format]: tool `fetch-page`, input_schema at /properties/url: strict mode does not support `format: uri`; it knows date-time, time, date, duration, email, hostname, ipv4, ipv6, uuid
    error: cannot export `pdf` with --format openai-strict: 4 problems with OpenAI's strict profile
    hint: fix the schemas (docs/tools.md lists the rules), or use --format openai, which exports them with `strict: false`
    "#);

    // Without the offending tool every function is strict.
    let strict_tools = TOOLS.split("  - name: fetch-page").next().unwrap();
    sandbox.skill("pdf", "pdf", strict_tools, "# PDF\n");
    let output = export(&sandbox, "openai-strict");
    assert_eq!(output.code, 0, "{output:?}");
    let functions = output.json();
    assert_eq!(functions.as_array().unwrap().len(), 2);
    assert!(
        functions
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["strict"] == true)
    );
}

#[test]
fn claude_export_has_name_description_and_input_schema() {
    let sandbox = TestContext::new();
    pdf_skill(&sandbox);
    let output = export(&sandbox, "claude");
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(
        output.json(),
        json!([
            { "name": "extract-text", "description": "Extract text from a PDF file.", "input_schema": extract_text_input() },
            { "name": "delete-output", "description": "Delete generated output files.", "input_schema": delete_output_input() },
            { "name": "fetch-page", "description": "Fetch a web page to read.", "input_schema": fetch_page_input() }
        ])
    );
}

#[test]
fn tools_json_is_the_frontmatter_tools_and_sync_writes_the_same_bytes() {
    let sandbox = TestContext::new();
    let dir = pdf_skill(&sandbox);
    let exported = export(&sandbox, "tools-json");
    assert_eq!(exported.code, 0, "{exported:?}");
    assert_eq!(
        exported.json()[1],
        json!({
            "name": "delete-output",
            "description": "Delete generated output files.",
            "confirmation": { "level": "destructive_writes", "prompt": "This will delete files under output/**." },
            "input_schema": delete_output_input(),
            "implementation": { "runtime": "bash", "entrypoint": "scripts/delete_output.sh" }
        })
    );
    // The spec's field order, two spaces, a final newline.
    assert!(
        exported.stdout.starts_with(
            "[\n  {\n    \"name\": \"extract-text\",\n    \"description\": \"Extract text from a PDF file.\",\n    \"input_schema\": {\n"
        ),
        "{}",
        exported.stdout
    );

    let output = sandbox.skillpkg(["tools", "sync", "pdf"]);
    assert_eq!(output.code, 0, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"       Wrote pdf/tools.json (3 tools)");
    let written = fs_err::read_to_string(dir.join("tools.json")).unwrap();
    assert_eq!(written, exported.stdout);

    // The same tools written in another YAML style give the same bytes.
    let flow: String = TOOLS
        .replace("required: [path]", "required:\n        - path")
        .replace("{ type: string }", "{\"type\": \"string\"}");
    assert_ne!(flow, TOOLS);
    let other = sandbox.skill("other/pdf", "pdf", &flow, "# Other\n");
    write_scripts(
        &sandbox,
        "other/pdf",
        &[
            "scripts/pdf.py",
            "scripts/delete_output.sh",
            "scripts/fetch.mjs",
        ],
    );
    let output = run(sandbox
        .skillpkg_command()
        .args(["tools", "sync", "other/pdf"]));
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(
        fs_err::read_to_string(other.join("tools.json")).unwrap(),
        written
    );

    let output = run(sandbox
        .skillpkg_command()
        .args(["validate", "pdf", "--json"]));
    assert_eq!(output.code, 0, "a fresh tools.json is valid: {output:?}");
}

#[cfg(unix)]
fn inode(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    fs_err::metadata(path).unwrap().ino()
}

#[test]
#[cfg(unix)]
fn sync_leaves_an_unchanged_file_alone_and_normalises_a_reformatted_one() {
    let sandbox = TestContext::new();
    let dir = pdf_skill(&sandbox);
    let tools_json = dir.join("tools.json");
    assert_eq!(sandbox.skillpkg(["tools", "sync", "pdf"]).code, 0);
    let before = inode(&tools_json);
    let output = run(sandbox
        .skillpkg_command()
        .args(["tools", "sync", "pdf", "--json"]));
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(output.json()["changed"], false);
    assert_eq!(output.json()["action"], "none");
    assert_eq!(
        inode(&tools_json),
        before,
        "an unchanged file is not rewritten"
    );

    // Minified: the same tools, so valid, but not the bytes sync writes.
    let value: Value = serde_json::from_str(&fs_err::read_to_string(&tools_json).unwrap()).unwrap();
    let canonical = fs_err::read_to_string(&tools_json).unwrap();
    fs_err::write(&tools_json, value.to_string()).unwrap();
    assert_eq!(sandbox.skillpkg(["validate", "pdf"]).code, 0);
    let output = run(sandbox
        .skillpkg_command()
        .args(["tools", "sync", "pdf", "--check"]));
    assert_eq!(output.code, 1, "{output:?}");
    assert_eq!(
        fs_err::read_to_string(&tools_json).unwrap(),
        value.to_string()
    );
    let output = sandbox.skillpkg(["tools", "sync", "pdf"]);
    assert_eq!(output.code, 0, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"     Updated pdf/tools.json (3 tools)");
    assert_eq!(fs_err::read_to_string(&tools_json).unwrap(), canonical);
    // Written by rename, with the permissions of an ordinary file.
    use std::os::unix::fs::PermissionsExt as _;
    let mode = fs_err::metadata(&tools_json).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o644);
}

#[test]
fn validate_reports_a_stale_tools_json_with_a_diff_and_sync_repairs_it() {
    let sandbox = TestContext::new();
    let dir = pdf_skill(&sandbox);
    assert_eq!(sandbox.skillpkg(["tools", "sync", "pdf"]).code, 0);
    let old = fs_err::read_to_string(dir.join("tools.json")).unwrap();
    let changed = TOOLS.replace(
        "Delete generated output files.",
        "Delete every generated output file.",
    );
    sandbox.skill("pdf", "pdf", &changed, "# PDF\n");

    let output = run(sandbox
        .skillpkg_command()
        .args(["validate", "pdf", "--json"]));
    assert_eq!(output.code, 1, "{output:?}");
    let report = output.json();
    let stale: Vec<&Value> = report["skills"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "tools-json-stale")
        .collect();
    assert_eq!(stale.len(), 1, "{report:#}");
    assert_eq!(stale[0]["severity"], "error");
    assert_eq!(stale[0]["file"], "tools.json");
    let hint = stale[0]["hint"].as_str().unwrap();
    assert!(hint.starts_with("run `skillpkg tools sync`"), "{hint}");
    assert!(
        hint.contains(
            "-    \"description\": \"Delete generated output files.\",\n+    \"description\": \"Delete every generated output file.\","
        ),
        "{hint}"
    );

    // --check writes nothing and shows the same change.
    let output = run(sandbox
        .skillpkg_command()
        .args(["tools", "sync", "--check", "pdf"]));
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stdout), @r#"
    --- tools.json
    +++ SKILL.md tools
    @@ -39,7 +39,7 @@
       },
       {
         "name": "delete-output",
    -    "description": "Delete generated output files.",
    +    "description": "Delete every generated output file.",
         "input_schema": {
           "additionalProperties": false,
           "properties": {
    "#);
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: pdf/tools.json is stale: it is not what `skillpkg tools sync` writes from SKILL.md
    hint: run `skillpkg tools sync pdf`
    ");
    assert_eq!(fs_err::read_to_string(dir.join("tools.json")).unwrap(), old);

    // A stale tools.json does not stop sync: sync is how it is repaired.
    let output = sandbox.skillpkg(["tools", "sync", "pdf"]);
    assert_eq!(output.code, 0, "{output:?}");
    let output = run(sandbox
        .skillpkg_command()
        .args(["tools", "sync", "--check", "pdf"]));
    assert_eq!(output.code, 0, "{output:?}");
    let output = sandbox.skillpkg(["validate", "pdf"]);
    assert_eq!(output.code, 0, "{output:?}");
}

#[test]
fn a_skill_without_tools_has_no_tools_json() {
    let sandbox = TestContext::new();
    let dir = sandbox.skill("plain", "plain", "", "# Plain\n");
    let output = sandbox.skillpkg(["tools", "sync", "plain"]);
    assert_eq!(output.code, 0, "{output:?}");
    assert!(!dir.join("tools.json").exists());

    sandbox.write("plain/tools.json", "[]\n");
    let output = sandbox.skillpkg(["validate", "plain"]);
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stdout), @"
    error[tools-json-stale]: `tools.json` is stale: SKILL.md declares no tools
     --> plain/tools.json
      = hint: run `skillpkg tools sync`: SKILL.md is the source of truth and hosts ignore a stale tools.json; the difference:
    --- tools.json
    +++ SKILL.md tools
    @@ -1 +0,0 @@
    -[]

    0 valid, 1 invalid, 0 warnings
    ");
    let output = sandbox.skillpkg(["tools", "sync", "plain"]);
    assert_eq!(output.code, 0, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"     Removed plain/tools.json: plain declares no tools");
    assert!(!dir.join("tools.json").exists());
    let output = sandbox.skillpkg(["tools", "plain"]);
    assert_eq!(output.stdout, "plain declares no tools\n");
}

#[test]
fn an_invalid_skill_is_refused_and_nothing_is_written() {
    let sandbox = TestContext::new();
    let dir = sandbox.skill("pdf-tools", "pdf", TOOLS, "# PDF\n");
    let mut said = Vec::new();
    for args in [
        &["tools", "sync", "pdf-tools"][..],
        &["tools", "export", "pdf-tools", "--format", "mcp"],
        &["tools", "pdf-tools"],
    ] {
        let output = sandbox.skillpkg(args);
        assert_eq!(output.code, 1, "{args:?}: {output:?}");
        assert_eq!(output.stdout, "", "{args:?}");
        said.push(sandbox.redact(&output.stderr));
    }
    insta::assert_snapshot!(said.join("---\n"), @"
    error[name-mismatch]: `name` is `pdf` but the folder is `pdf-tools`
     --> pdf-tools/SKILL.md:2:7
      |
    2 | name: pdf
      |       ^^^
      = hint: rename the folder to `pdf` or set `name: pdf-tools`

    warning[non-portable-key]: `tools` is a key of the Universal Agent Skill extensions, not of the Agent Skills specification
     --> pdf-tools/SKILL.md:4:1
      |
    4 | tools:
      | ^^^^^
      = hint: other agents ignore it; keep it only if your users need it

    warning[tool-output-schema-missing]: tool `delete-output` has an `input_schema` but no `output_schema`
      --> pdf-tools/SKILL.md:24:11
       |
    24 |   - name: delete-output
       |           ^^^^^^^^^^^^^
       = hint: declare what the tool returns, so hosts can check results (MCP `outputSchema`, structured outputs)

    warning[tool-schema-open]: `tools[2].input_schema` allows unknown properties at its top
      --> pdf-tools/SKILL.md:42:7
       |
    42 |       type: object
       |       ^
       = hint: set `additionalProperties: false` on every object schema, for predictable validation and OpenAI strict mode

    warning[tool-output-schema-missing]: tool `fetch-page` has an `input_schema` but no `output_schema`
      --> pdf-tools/SKILL.md:38:11
       |
    38 |   - name: fetch-page
       |           ^^^^^^^^^^
       = hint: declare what the tool returns, so hosts can check results (MCP `outputSchema`, structured outputs)

    error: cannot read the tools of `pdf-tools`: the skill has 1 error
    hint: fix them; `skillpkg validate pdf-tools` lists them
    ---
    error[name-mismatch]: `name` is `pdf` but the folder is `pdf-tools`
     --> pdf-tools/SKILL.md:2:7
      |
    2 | name: pdf
      |       ^^^
      = hint: rename the folder to `pdf` or set `name: pdf-tools`

    warning[non-portable-key]: `tools` is a key of the Universal Agent Skill extensions, not of the Agent Skills specification
     --> pdf-tools/SKILL.md:4:1
      |
    4 | tools:
      | ^^^^^
      = hint: other agents ignore it; keep it only if your users need it

    warning[tool-output-schema-missing]: tool `delete-output` has an `input_schema` but no `output_schema`
      --> pdf-tools/SKILL.md:24:11
       |
    24 |   - name: delete-output
       |           ^^^^^^^^^^^^^
       = hint: declare what the tool returns, so hosts can check results (MCP `outputSchema`, structured outputs)

    warning[tool-schema-open]: `tools[2].input_schema` allows unknown properties at its top
      --> pdf-tools/SKILL.md:42:7
       |
    42 |       type: object
       |       ^
       = hint: set `additionalProperties: false` on every object schema, for predictable validation and OpenAI strict mode

    warning[tool-output-schema-missing]: tool `fetch-page` has an `input_schema` but no `output_schema`
      --> pdf-tools/SKILL.md:38:11
       |
    38 |   - name: fetch-page
       |           ^^^^^^^^^^
       = hint: declare what the tool returns, so hosts can check results (MCP `outputSchema`, structured outputs)

    error: cannot read the tools of `pdf-tools`: the skill has 1 error
    hint: fix them; `skillpkg validate pdf-tools` lists them
    ---
    error[name-mismatch]: `name` is `pdf` but the folder is `pdf-tools`
     --> pdf-tools/SKILL.md:2:7
      |
    2 | name: pdf
      |       ^^^
      = hint: rename the folder to `pdf` or set `name: pdf-tools`

    warning[non-portable-key]: `tools` is a key of the Universal Agent Skill extensions, not of the Agent Skills specification
     --> pdf-tools/SKILL.md:4:1
      |
    4 | tools:
      | ^^^^^
      = hint: other agents ignore it; keep it only if your users need it

    warning[tool-output-schema-missing]: tool `delete-output` has an `input_schema` but no `output_schema`
      --> pdf-tools/SKILL.md:24:11
       |
    24 |   - name: delete-output
       |           ^^^^^^^^^^^^^
       = hint: declare what the tool returns, so hosts can check results (MCP `outputSchema`, structured outputs)

    warning[tool-schema-open]: `tools[2].input_schema` allows unknown properties at its top
      --> pdf-tools/SKILL.md:42:7
       |
    42 |       type: object
       |       ^
       = hint: set `additionalProperties: false` on every object schema, for predictable validation and OpenAI strict mode

    warning[tool-output-schema-missing]: tool `fetch-page` has an `input_schema` but no `output_schema`
      --> pdf-tools/SKILL.md:38:11
       |
    38 |   - name: fetch-page
       |           ^^^^^^^^^^
       = hint: declare what the tool returns, so hosts can check results (MCP `outputSchema`, structured outputs)

    error: cannot read the tools of `pdf-tools`: the skill has 1 error
    hint: fix them; `skillpkg validate pdf-tools` lists them
    ");
    assert!(!dir.join("tools.json").exists());
    let output = run(sandbox
        .skillpkg_command()
        .args(["tools", "export", "missing", "--format", "mcp"]));
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: `missing` is not a folder
    hint: give the path of the skill folder, the one that holds SKILL.md
    ");
    let output =
        run(sandbox
            .skillpkg_command()
            .args(["tools", "export", "pdf-tools", "--format", "yaml"]));
    assert_eq!(output.code, 2, "a usage error: {output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: invalid value 'yaml' for '--format <FORMAT>': unknown export format `yaml`; expected one of: mcp, openai, openai-strict, claude, tools-json

    For more information, try '--help'.
    ");
}

#[test]
fn a_tool_that_does_not_fit_the_model_is_refused_not_dropped() {
    let sandbox = TestContext::new();
    let dir = sandbox.skill(
        "half",
        "half",
        "tools:\n  - name: t\n    description: No implementation.\n    input_schema: {type: object}\n",
        "# Half\n",
    );
    sandbox.write("half/tools.json", "[]\n");
    let mut said = Vec::new();
    for args in [
        &["tools", "sync", "half"][..],
        &["tools", "export", "half", "--format", "mcp"],
    ] {
        let output = sandbox.skillpkg(args);
        assert_eq!(output.code, 1, "{args:?}: {output:?}");
        assert_eq!(output.stdout, "", "{args:?}");
        said.push(sandbox.redact(&output.stderr));
    }
    insta::assert_snapshot!(said.join("---\n"), @"
    warning[non-portable-key]: `tools` is a key of the Universal Agent Skill extensions, not of the Agent Skills specification
     --> half/SKILL.md:4:1
      |
    4 | tools:
      | ^^^^^
      = hint: other agents ignore it; keep it only if your users need it

    error[tool-implementation-invalid]: `tools[0]` has no `implementation`
     --> half/SKILL.md:5:5
      |
    5 |   - name: t
      |     ^
      = hint: add `implementation:` with `runtime:` (python, node or bash) and `entrypoint:` (a script in the skill)

    error: cannot read the tools of `half`: the skill has 1 error
    hint: fix them; `skillpkg validate half` lists them
    ---
    warning[non-portable-key]: `tools` is a key of the Universal Agent Skill extensions, not of the Agent Skills specification
     --> half/SKILL.md:4:1
      |
    4 | tools:
      | ^^^^^
      = hint: other agents ignore it; keep it only if your users need it

    error[tool-implementation-invalid]: `tools[0]` has no `implementation`
     --> half/SKILL.md:5:5
      |
    5 |   - name: t
      |     ^
      = hint: add `implementation:` with `runtime:` (python, node or bash) and `entrypoint:` (a script in the skill)

    error: cannot read the tools of `half`: the skill has 1 error
    hint: fix them; `skillpkg validate half` lists them
    ");
    assert_eq!(
        fs_err::read_to_string(dir.join("tools.json")).unwrap(),
        "[]\n"
    );
}

#[test]
fn help_shows_examples() {
    let sandbox = TestContext::new();
    let mut said = Vec::new();
    for args in [
        &["tools", "--help"][..],
        &["tools", "export", "--help"],
        &["tools", "sync", "--help"],
    ] {
        let output = sandbox.skillpkg(args);
        assert_eq!(output.code, 0, "{output:?}");
        said.push(sandbox.redact(&output.stdout));
    }
    insta::assert_snapshot!(said.join("---\n"), @"
    List a skill's tools, export them for an agent host, or write tools.json.

    Tools are what a skill declares under `tools` in its SKILL.md frontmatter (the Universal Agent Skill
    extension): a name, a description, JSON Schemas for input and output, and the program that runs
    them. Without a subcommand, lists them: name, runtime, entrypoint and description (--json for
    scripts). SKILL_DIR is the skill folder (default: the current folder). A skill that does not
    validate is refused with its diagnostics, and nothing is written. See docs/tools.md.

    Usage: skillpkg tools [OPTIONS] [SKILL_DIR]
           skillpkg tools <COMMAND>

    Commands:
      export  Print the tools as an agent host's API takes them, as JSON on stdout
      sync    Write tools.json from the tools in SKILL.md
      help    Print this message or the help of the given subcommand(s)

    Arguments:
      [SKILL_DIR]
              The skill folder
              
              [default: .]

    Options:
          --json
              Print the tools as JSON on stdout

      -q, --quiet
              Print only results and errors, no status lines

      -v, --verbose...
              Log what skillpkg does on stderr: -v each step (requests, cache, fetches, resolution), -vv
              details, -vvv everything, dependencies' too. SKILLPKG_LOG (`RUST_LOG` syntax) chooses
              instead

          --color <WHEN>
              When to use colour: `auto` uses it on a terminal unless NO_COLOR is set
              
              [default: auto]
              [possible values: auto, always, never]

      -h, --help
              Print help (see a summary with '-h')

    Examples:
      skillpkg tools skills/pdf-processing                            list the tools
      skillpkg tools export --format mcp > tools.mcp.json             MCP Tool objects
      skillpkg tools export skills/pdf --format openai-strict         OpenAI, strict or nothing
      skillpkg tools sync                                             write ./tools.json
      skillpkg tools sync --check                                     in CI: exit 1 if stale
    ---
    Print the tools as an agent host's API takes them, as JSON on stdout.

    Always a JSON array, one element per tool in SKILL.md's order: `mcp` (MCP Tool objects: name,
    description, inputSchema, outputSchema, and annotations from the confirmation level), `openai`
    (function tools for the Responses API, `strict: true` where the input schema meets OpenAI's strict
    profile, else `strict: false` with a warning on stderr per problem and its JSON pointer),
    `openai-strict` (the same, but any problem is an error and nothing is printed on stdout), `claude`
    (tools for the Messages API: name, description, input_schema), `tools-json` (exactly what `tools
    sync` writes).

    Usage: skillpkg tools export [OPTIONS] --format <FORMAT> [SKILL_DIR]

    Arguments:
      [SKILL_DIR]
              The skill folder
              
              [default: .]

    Options:
          --format <FORMAT>
              The shape to print: mcp, openai, openai-strict, claude or tools-json

      -q, --quiet
              Print only results and errors, no status lines

      -v, --verbose...
              Log what skillpkg does on stderr: -v each step (requests, cache, fetches, resolution), -vv
              details, -vvv everything, dependencies' too. SKILLPKG_LOG (`RUST_LOG` syntax) chooses
              instead

          --color <WHEN>
              When to use colour: `auto` uses it on a terminal unless NO_COLOR is set
              
              [default: auto]
              [possible values: auto, always, never]

      -h, --help
              Print help (see a summary with '-h')

    Examples:
      skillpkg tools export --format mcp
      skillpkg tools export skills/pdf-processing --format openai 2> strict-problems.txt
      skillpkg tools export skills/pdf-processing --format claude | jq '.[].name'
    ---
    Write tools.json from the tools in SKILL.md.

    SKILL.md is the source of truth; tools.json is a copy for hosts that read JSON (`validate` reports
    one that disagrees as `tools-json-stale`). The file is pretty JSON with two spaces of indent: the
    same SKILL.md always gives the same bytes. It is written atomically, and not at all when it is
    unchanged. A skill without tools has no tools.json: sync removes one that is there.

    Usage: skillpkg tools sync [OPTIONS] [SKILL_DIR]

    Arguments:
      [SKILL_DIR]
              The skill folder
              
              [default: .]

    Options:
          --check
              Write nothing; exit 1 and print the diff when tools.json is not what sync would write

          --json
              Print the result as JSON on stdout

      -q, --quiet
              Print only results and errors, no status lines

      -v, --verbose...
              Log what skillpkg does on stderr: -v each step (requests, cache, fetches, resolution), -vv
              details, -vvv everything, dependencies' too. SKILLPKG_LOG (`RUST_LOG` syntax) chooses
              instead

          --color <WHEN>
              When to use colour: `auto` uses it on a terminal unless NO_COLOR is set
              
              [default: auto]
              [possible values: auto, always, never]

      -h, --help
              Print help (see a summary with '-h')

    Examples:
      skillpkg tools sync skills/pdf-processing
      skillpkg tools sync --check      exit 1 and show the diff when tools.json is stale
    ");
}

/// Runs `validate --json` on `dir` and returns the codes it reports.
fn validate_codes(sandbox: &TestContext, dir: &str) -> (i32, Vec<String>, String) {
    let output = sandbox.skillpkg(["validate", "--json", dir]);
    let report = output.json();
    let diagnostics = report["skills"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .clone();
    let codes = diagnostics
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_owned())
        .collect();
    let messages = diagnostics
        .iter()
        .map(|d| d["message"].as_str().unwrap().to_owned())
        .collect::<Vec<_>>()
        .join("\n");
    (output.code, codes, messages)
}

#[test]
fn hostile_tools_json_files_are_diagnosed_not_crashed_on() {
    let sandbox = TestContext::new();
    let cases: [(&str, Vec<u8>, &str); 5] = [
        ("not-an-array", br#"{"tools": []}"#.to_vec(), "is not of type \"array\""),
        (
            "unknown-key",
            br#"[{"name": "t", "description": "d", "input_schema": {"type": "object"}, "implementation": {"runtime": "bash", "entrypoint": "t.sh"}, "run_as": "root"}]"#.to_vec(),
            "at /0: Additional properties are not allowed ('run_as' was unexpected)",
        ),
        ("nested", "[".repeat(1_000_000).into_bytes(), "recursion limit exceeded"),
        ("not-json", b"\xff\xfe[]".to_vec(), "is not valid JSON"),
        (
            "huge",
            {
                let mut bytes = b"[".to_vec();
                bytes.resize(8 * 1024 * 1024 + 1, b' ');
                bytes
            },
            "is 8388609 bytes long; the limit is 8388608",
        ),
    ];
    for (name, contents, expected) in cases {
        sandbox.skill(name, name, "", "# Body\n");
        sandbox.write(&format!("{name}/tools.json"), contents);
        let (code, codes, messages) = validate_codes(&sandbox, name);
        assert_eq!(code, 1, "{name}");
        assert!(
            codes.contains(&"tools-json-invalid".to_owned()),
            "{name}: {codes:?}"
        );
        assert!(messages.contains(expected), "{name}: {messages}");
    }

    // A folder or a device where the file should be: refused, never read.
    sandbox.skill("folder", "folder", "", "# Body\n");
    fs_err::create_dir_all(sandbox.path().join("folder/tools.json/x")).unwrap();
    let (_, codes, messages) = validate_codes(&sandbox, "folder");
    assert!(
        codes.contains(&"tools-json-invalid".to_owned()),
        "{codes:?}"
    );
    assert!(
        messages.contains("`tools.json` is not a regular file"),
        "{messages}"
    );
    #[cfg(unix)]
    {
        sandbox.skill("device", "device", "", "# Body\n");
        std::os::unix::fs::symlink("/dev/zero", sandbox.path().join("device/tools.json")).unwrap();
        let (code, codes, _) = validate_codes(&sandbox, "device");
        assert_eq!(code, 1);
        assert!(
            codes.contains(&"tools-json-invalid".to_owned()),
            "{codes:?}"
        );
        let output = sandbox.skillpkg(["tools", "sync", "device"]);
        assert_eq!(
            output.code, 1,
            "a symlinked tools.json is not replaced: {output:?}"
        );
    }
}

/// Returns an input schema of `levels` nested strict objects, as flow YAML.
fn nested_schema(levels: usize) -> String {
    let mut schema = r#"{"type": "string"}"#.to_owned();
    for _ in 0..levels {
        schema = format!(
            r#"{{"type": "object", "additionalProperties": false, "properties": {{"next": {schema}}}, "required": ["next"]}}"#
        );
    }
    schema
}

fn deep_tool(levels: usize) -> String {
    format!(
        "tools:\n  - name: deep\n    description: Deep.\n    input_schema: {}\n    implementation: {{runtime: bash, entrypoint: scripts/deep.sh}}\n",
        nested_schema(levels)
    )
}

#[test]
fn deeply_nested_tool_schemas_are_diagnosed_not_crashed_on() {
    let sandbox = TestContext::new();
    // Eleven object levels: one more than OpenAI's strict mode allows.
    sandbox.skill("deep", "deep", &deep_tool(11), "# Deep\n");
    write_scripts(&sandbox, "deep", &["scripts/deep.sh"]);
    let output = run(sandbox
        .skillpkg_command()
        .args(["tools", "export", "deep", "--format", "openai"]));
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(output.json()[0]["strict"], false);
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    warning[too-deep]: tool `deep`, input_schema at /properties/next/properties/next/properties/next/properties/next/properties/next/properties/next/properties/next/properties/next/properties/next/properties/next: objects nest 11 levels deep here; strict mode allows 10
    note: exported with `strict: false`: deep
    ");
    // Ten levels are fine.
    sandbox.skill("deep", "deep", &deep_tool(10), "# Deep\n");
    write_scripts(&sandbox, "deep", &["scripts/deep.sh"]);
    let output = run(sandbox.skillpkg_command().args([
        "tools",
        "export",
        "deep",
        "--format",
        "openai-strict",
    ]));
    assert_eq!(output.code, 0, "{output:?}");

    // Deeper than a frontmatter may nest: the skill is invalid, and refused.
    sandbox.skill("deeper", "deeper", &deep_tool(40), "# Deeper\n");
    write_scripts(&sandbox, "deeper", &["scripts/deep.sh"]);
    let output = run(sandbox
        .skillpkg_command()
        .args(["tools", "export", "deeper", "--format", "mcp"]));
    assert_eq!(output.code, 1, "{output:?}");
    assert_eq!(output.stdout, "");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @r#"
    error[frontmatter-too-large]: the frontmatter nests collections more than 64 levels deep
     --> deeper/SKILL.md:7:2273
      |
    7 |     input_schema: {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "object", "additionalProperties": false, "properties": {"next": {"type": "string"}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}}, "required": ["next"]}
      |                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                                 ^
      = hint: write the values out plainly: a frontmatter needs neither deep nesting nor large aliased values

    error: cannot read the tools of `deeper`: the skill has 1 error
    hint: fix them; `skillpkg validate deeper` lists them
    "#);
}

#[test]
fn the_rust_mcp_sdk_accepts_the_mcp_export() {
    let sandbox = TestContext::new();
    pdf_skill(&sandbox);
    let output = export(&sandbox, "mcp");
    assert_eq!(output.code, 0, "{output:?}");
    let exported = output.json();
    let tools: Vec<rmcp::model::Tool> =
        serde_json::from_value(exported.clone()).expect("rmcp reads every exported tool");
    assert_eq!(tools.len(), 3);
    for (tool, original) in tools.iter().zip(exported.as_array().unwrap()) {
        let again = serde_json::to_value(tool).unwrap();
        assert_eq!(again["inputSchema"], original["inputSchema"]);
        // Every field the export writes is one the SDK knows, under its name.
        assert_eq!(&again, original);
    }
    assert_eq!(tools[0].name, "extract-text");
    assert!(tools[0].output_schema.is_some());
    let annotations = tools[1]
        .annotations
        .as_ref()
        .expect("delete-output has hints");
    assert_eq!(annotations.destructive_hint, Some(true));
    assert_eq!(annotations.read_only_hint, None);
    let annotations = tools[2].annotations.as_ref().expect("fetch-page has hints");
    assert_eq!(annotations.open_world_hint, Some(true));
}

/// Validates each tool of a JSON array on stdin with the Python SDK's
/// `mcp.types.Tool`, and checks that dumping it again gives the same object
/// (the SDK ignores fields it does not know, so a misnamed one would be lost).
const PYTHON_CHECK: &str = r#"
import json, sys
from mcp.types import Tool
tools = json.load(sys.stdin)
for obj in tools:
    tool = Tool.model_validate(obj)
    again = tool.model_dump(by_alias=True, exclude_none=True, mode="json")
    assert again == obj, f"{again} != {obj}"
    assert tool.input_schema == obj["inputSchema"]
print(f"{len(tools)} tools valid")
"#;

#[test]
fn the_python_mcp_sdk_accepts_the_mcp_export() {
    let sandbox = TestContext::new();
    pdf_skill(&sandbox);
    let output = export(&sandbox, "mcp");
    assert_eq!(output.code, 0, "{output:?}");
    let python = mcp_python();
    let mut child = std::process::Command::new(&python)
        .args(["-c", PYTHON_CHECK])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", python.display()));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(output.stdout.as_bytes())
        .unwrap();
    let result = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout, "3 tools valid\n");
}
