//! `skillpkg mcp --listen` against the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`, pinned in `.ci/run`): every server
//! scenario at 2025-11-25, every scenario revision 2026-07-28 requires, and
//! SEP-2640's three skills scenarios. The checks that need the suite's own
//! fixture server are listed, each with why, in
//! tests/mcp_conformance/expected-failures.yml; the suite itself fails the
//! run on any other failure and on a listed check that passes.

use std::path::Path;
use std::process::Command;

use skillpkg_tests::{MCP_CONFORMANCE_VERSION, McpHttpServer, TestContext, mcp_conformance, run};

/// Two skills, each with a folder inside (the directory scenario lists the
/// first skill's children and wants a subfolder among them), and a binary
/// file.
fn project() -> TestContext {
    let sandbox = TestContext::new();
    sandbox.project_skill(
        "data-analysis",
        "",
        &[("references/pandas.md", "# Pandas\nRead tables.\n")],
    );
    sandbox.project_skill(
        "pdf-processing",
        "license: MIT\n",
        &[
            ("references/forms.md", "# Forms\nFill fields.\n"),
            (
                "scripts/extract.py",
                "import sys\nprint('pages', sys.argv[1:])\n",
            ),
            ("assets/logo.png", "\u{89}PNG\r\n\u{1a}\n\0\0\0\rIHDR"),
        ],
    );
    sandbox
}

/// Runs the suite with `arguments` against `server`; returns its output
/// after asserting that it exited 0.
fn suite(server: &McpHttpServer, sandbox: &TestContext, arguments: &[&str]) -> String {
    let (node, script) = mcp_conformance();
    let baseline =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp_conformance/expected-failures.yml");
    let version = run(Command::new(&node).arg(&script).arg("--version"));
    assert_eq!(
        version.stdout.trim(),
        MCP_CONFORMANCE_VERSION,
        "the suite the baseline was written for"
    );
    let mut command = Command::new(&node);
    command
        .arg(&script)
        .args(["server", "--url", &server.url])
        .args(arguments)
        .arg("--output-dir")
        .arg(sandbox.path().join("results"));
    if !arguments.contains(&"--scenario") {
        command.arg("--expected-failures").arg(&baseline);
    }
    let output = run(&mut command);
    assert_eq!(
        output.code,
        0,
        "conformance {arguments:?}:\n{}\n{}\nserver:\n{}",
        output.stdout,
        output.stderr,
        server.stderr()
    );
    format!("{}{}", output.stdout, output.stderr)
}

#[test]
fn every_server_scenario_passes_at_2025_11_25_but_those_of_the_fixture_server() {
    let sandbox = project();
    let server = McpHttpServer::start(sandbox.mcp(&[]));
    let output = suite(&server, &sandbox, &["--spec-version", "2025-11-25"]);
    for scenario in [
        "server-initialize",
        "server-session-lifecycle",
        "tools-list",
        "resources-list",
        "prompts-list",
        "dns-rebinding-protection",
    ] {
        assert!(
            output.contains(&format!("✓ {scenario}:")),
            "{scenario} passes:\n{output}"
        );
    }
}

#[test]
fn every_scenario_2026_07_28_requires_passes_but_those_of_the_fixture_server() {
    let sandbox = project();
    let server = McpHttpServer::start(sandbox.mcp(&[]));
    let output = suite(&server, &sandbox, &["--requirements", "2026-07-28"]);
    for scenario in [
        "caching",
        "sep-2164-resource-not-found",
        "http-header-validation",
        "dns-rebinding-protection",
        "tools-list",
        "resources-list",
        "prompts-list",
    ] {
        assert!(
            output.contains(&format!("✓ {scenario}:")),
            "{scenario} passes:\n{output}"
        );
    }
}

#[test]
fn the_three_sep_2640_scenarios_pass_with_no_expected_failure() {
    let sandbox = project();
    let server = McpHttpServer::start(sandbox.mcp(&[]));
    for (scenario, checks) in [
        ("sep-2640-skills-directory", 7),
        ("sep-2640-skills-enumeration", 32),
        ("sep-2640-skills-manifest", 6),
    ] {
        let output = suite(&server, &sandbox, &["--scenario", scenario]);
        assert!(
            output.contains(&format!("Passed: {checks}/{checks}, 0 failed, 0 warnings")),
            "{scenario}:\n{output}"
        );
    }
}
