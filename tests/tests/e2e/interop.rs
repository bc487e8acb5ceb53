//! Other installers read a skillpkg registry: the `skills` CLI of npm
//! (`skills@1.7.4`, under Node 22) installs from the server's discovery
//! index (docs/sources.md, "Discovery index, both ways").

use std::process::Command;
use std::time::Duration;

use skillpkg_tests::registry::{Skill, TestRegistry};
use skillpkg_tests::{TestContext, files_below, run, skills_cli, wait_until};

#[test]
fn the_skills_cli_installs_from_a_skillpkg_registry_byte_for_byte() {
    let ctx = TestContext::new();
    let registry = TestRegistry::start(&ctx);
    let pdf_old = Skill::new("pdf", "1.0.0").body("# PDF\nThe old one.\n");
    let pdf = Skill::new("pdf", "1.1.0")
        .description("Reads PDFs. Use when the user has a PDF.")
        .body("# PDF\nRun `scripts/run.sh`.\n")
        .file("scripts/run.sh", "#!/bin/sh\necho pdf\n", true)
        .file("references/forms.md", "# Forms\n\nFill them in.\n", false);
    let notes = Skill::new("notes", "0.2.0").body("# Notes\n");
    for skill in [&pdf_old, &pdf, &notes] {
        registry.publish(skill);
    }
    // The discovery index is written a moment after a publish.
    let index = registry
        .public()
        .join(".well-known/agent-skills/index.json");
    assert!(
        wait_until(Duration::from_secs(10), || {
            fs_err::read_to_string(&index).is_ok_and(|text| {
                text.contains("dl/pdf/1.1.0/") && text.contains("dl/notes/0.2.0/")
            })
        }),
        "the discovery index lists the latest versions"
    );

    let project = ctx.path().join("project");
    fs_err::create_dir_all(&project).unwrap();
    let (node, cli) = skills_cli();
    let url = format!("{}/", registry.url());
    let output = run(Command::new(&node)
        .arg(&cli)
        .args(["add", &url, "--skill", "*", "--agent", "claude-code"])
        .args(["--copy", "--yes"])
        .current_dir(&project)
        .env("HOME", ctx.path().join("home"))
        // No telemetry: the tests reach nothing beyond loopback.
        .env("DISABLE_TELEMETRY", "1")
        .env("DO_NOT_TRACK", "1")
        .env("NO_COLOR", "1"));
    assert_eq!(output.code, 0, "{output:?}");

    for (name, skill) in [("pdf", &pdf), ("notes", &notes)] {
        let source = ctx.path().join("expected").join(name);
        skill.write(&source);
        let installed = project.join(".claude/skills").join(name);
        assert_eq!(
            files_below(&installed),
            files_below(&source),
            "{name} is installed byte for byte, at its latest version"
        );
    }
}
