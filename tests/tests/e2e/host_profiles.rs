//! `validate --host`: each host profile's rules, and `--host all`, the
//! table of which skill is portable to which host and why not.

use skillpkg_tests::{TestContext, run};

const TOOL: &str = "tools:
  - name: fetch-page
    description: Fetch a web page.
    input_schema: {type: object, additionalProperties: false, properties: {url: {type: string}}, required: [url]}
    output_schema: {type: object, additionalProperties: false, properties: {html: {type: string}}, required: [html]}
    implementation: {runtime: bash, entrypoint: scripts/fetch.sh}
";

fn online_skill(sandbox: &TestContext) {
    sandbox.skill(
        "skills/fetcher",
        "fetcher",
        &format!("{TOOL}permissions:\n  network:\n    outbound: [example.com]\n"),
        "# Fetcher\n\nRun `fetch-page`.\n",
    );
    let script = sandbox.write(
        "skills/fetcher/scripts/fetch.sh",
        "#!/bin/bash\necho '{\"html\": \"\"}'\n",
    );
    skillpkg_tests::set_executable(&script, true);
}

#[test]
fn host_all_shows_which_host_refuses_a_skill_and_why() {
    let sandbox = TestContext::new();
    online_skill(&sandbox);
    sandbox.skill("skills/plain", "plain", "", "# Plain\n\nDo plain things.\n");
    let output = run(sandbox
        .skillpkg_command()
        .args(["validate", "--host", "all", "skills"]));
    assert_eq!(output.code, 1, "{}{}", output.stdout, output.stderr);
    let lines: Vec<&str> = output.stdout.lines().collect();
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        [
            "skill",
            "portable",
            "claude-api",
            "claude-code",
            "codex",
            "copilot",
            "mcp",
            "openai"
        ]
    );
    // The Universal keys are not portable to the plain specification (a
    // warning), refused by the Claude API (no network), fine elsewhere.
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["fetcher", "warn", "no", "ok", "ok", "ok", "ok", "ok"]
    );
    assert_eq!(
        lines[2].split_whitespace().collect::<Vec<_>>(),
        ["plain", "ok", "ok", "ok", "ok", "ok", "ok", "ok"]
    );
    insta::assert_snapshot!(sandbox.redact(&output.stdout), @"
    skill    portable  claude-api  claude-code  codex  copilot  mcp  openai
    fetcher  warn      no          ok           ok     ok       ok   ok
    plain    ok        ok          ok           ok     ok       ok   ok
    fetcher: not portable to claude-api: host-network: `permissions.network.outbound` asks for example.com; the Claude API runs skills without network access
    2 skills, 1 not portable to every host
    ");
    assert!(
        !output.stdout.contains("invalid for every host"),
        "{}",
        output.stdout
    );
    assert!(
        output
            .stdout
            .ends_with("2 skills, 1 not portable to every host\n"),
        "{}",
        output.stdout
    );

    let json = run(sandbox
        .skillpkg_command()
        .args(["validate", "--host", "all", "--json", "skills"]))
    .json();
    let fetcher = &json["skills"][0]["hosts"];
    assert_eq!(fetcher["claude-api"]["portable"], false);
    assert_eq!(
        fetcher["claude-api"]["errors"],
        serde_json::json!(["host-network"])
    );
    assert_eq!(
        fetcher["portable"]["warnings"],
        serde_json::json!(["non-portable-key"])
    );
    assert_eq!(fetcher["mcp"]["portable"], true);
    assert_eq!(json["summary"]["not_portable_everywhere"], 1);
}

#[test]
fn host_all_passes_when_every_skill_suits_every_host() {
    let sandbox = TestContext::new();
    sandbox.skill("skills/plain", "plain", "", "# Plain\n\nDo plain things.\n");
    let output = run(sandbox
        .skillpkg_command()
        .args(["validate", "--host", "all", "skills"]));
    assert_eq!(output.code, 0, "{}{}", output.stdout, output.stderr);
    assert!(
        output
            .stdout
            .ends_with("1 skills, 0 not portable to every host\n"),
        "{}",
        output.stdout
    );
}

#[test]
fn an_error_every_host_shares_is_said_once() {
    let sandbox = TestContext::new();
    sandbox.skill(
        "skills/broken",
        "broken",
        "tools: [codebase]\n",
        "# Broken\n",
    );
    let output = run(sandbox
        .skillpkg_command()
        .args(["validate", "--host", "all", "skills"]));
    assert_eq!(output.code, 1);
    let said: Vec<&str> = output
        .stdout
        .lines()
        .filter(|line| line.contains("tools-invalid"))
        .collect();
    assert_eq!(said.len(), 1, "{}", output.stdout);
    assert!(
        said[0].starts_with("broken: invalid for every host: tools-invalid:"),
        "{}",
        said[0]
    );
}

#[test]
fn the_universal_keys_are_not_portable_only_to_the_plain_specification() {
    let sandbox = TestContext::new();
    online_skill(&sandbox);
    let portable = run(sandbox
        .skillpkg_command()
        .args(["validate", "--strict", "skills/fetcher"]));
    assert_eq!(portable.code, 1);
    insta::assert_snapshot!(sandbox.redact(&portable.stdout), @"
    error[non-portable-key]: `tools` is a key of the Universal Agent Skill extensions, not of the Agent Skills specification
     --> skills/fetcher/SKILL.md:4:1
      |
    4 | tools:
      | ^^^^^
      = hint: other agents ignore it; keep it only if your users need it

    error[non-portable-key]: `permissions` is a key of the Universal Agent Skill extensions, not of the Agent Skills specification
      --> skills/fetcher/SKILL.md:10:1
       |
    10 | permissions:
       | ^^^^^^^^^^^
       = hint: other agents ignore it; keep it only if your users need it

    0 valid, 1 invalid, 0 warnings
    ");
    for host in ["claude-code", "codex", "copilot", "mcp", "openai"] {
        let output = run(sandbox.skillpkg_command().args([
            "validate",
            "--strict",
            "--host",
            host,
            "skills/fetcher",
        ]));
        assert_eq!(output.code, 0, "--host {host}: {}", output.stdout);
    }
}

#[test]
fn an_unknown_host_lists_the_hosts() {
    let sandbox = TestContext::new();
    let output = run(sandbox
        .skillpkg_command()
        .args(["validate", "--host", "vscode", "."]));
    assert_eq!(output.code, 2, "{}", output.stderr);
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: invalid value 'vscode' for '--host <HOST>': unknown host `vscode`; expected one of: portable, claude-api, claude-code, codex, copilot, mcp, openai, all

    For more information, try '--help'.
    ");
}
