//! Every example skill of the five specifications validates, for every host
//! profile (`tests/fixtures/spec-examples/README.md` says where each comes
//! from). The specifications' examples are normative: a validator that
//! refuses one of them is wrong.

use std::path::{Path, PathBuf};

use skillpkg_index::skill::{Host, Severity, ValidateOptions, validate_skill};
use skillpkg_tests::{TestContext, run};

fn examples() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/spec-examples");
    let mut skills = Vec::new();
    for source in fs_err::read_dir(&root).unwrap() {
        let source = source.unwrap().path();
        if source.is_dir() {
            for skill in fs_err::read_dir(&source).unwrap() {
                skills.push(skill.unwrap().path());
            }
        }
    }
    skills.sort();
    skills
}

#[test]
fn every_spec_example_validates_for_every_host() {
    let skills = examples();
    assert_eq!(skills.len(), 8, "{skills:#?}");
    for skill in &skills {
        for (name, host) in Host::ALL {
            let options = ValidateOptions {
                host: *host,
                ..ValidateOptions::for_folder(skill)
            };
            let report = validate_skill(skill, &options);
            let errors: Vec<_> = report
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .collect();
            assert!(
                errors.is_empty(),
                "{} --host {name}: {errors:#?}",
                skill.display()
            );
            assert!(report.frontmatter.is_some());
        }
    }
}

#[test]
fn the_extended_example_yields_its_typed_model() {
    let skill = examples()
        .into_iter()
        .find(|path| {
            path.starts_with(
                Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/spec-examples/003-extended"),
            )
        })
        .unwrap();
    let report = validate_skill(&skill, &ValidateOptions::for_folder(&skill));
    let extensions = report.frontmatter.unwrap().extensions;
    let when = extensions.when_to_use.unwrap();
    assert_eq!(when.mentions, ["pdf", "ocr", "scan"]);
    assert_eq!(when.file_types, [".pdf"]);
    assert_eq!(extensions.tools.len(), 1);
    let tool = &extensions.tools[0];
    assert_eq!(tool.name.as_str(), "extract-text");
    assert_eq!(tool.implementation.entrypoint, "scripts/pdf.py");
    assert_eq!(tool.input_schema["required"], serde_json::json!(["path"]));
    let permissions = extensions.permissions.unwrap();
    assert_eq!(permissions.filesystem.write, ["output/**"]);
    assert!(permissions.network.outbound.is_empty());
    assert_eq!(permissions.processes.allow_subprocess, Some(false));
    assert_eq!(extensions.safety.unwrap().redact.unwrap().pii, Some(true));
}

#[test]
fn the_cli_accepts_the_spec_examples_under_every_named_host() {
    let sandbox = TestContext::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/spec-examples");
    let mut tallies = Vec::new();
    for host in [
        "claude-api",
        "claude-code",
        "codex",
        "copilot",
        "mcp",
        "openai",
    ] {
        let output = run(sandbox
            .skillpkg_command()
            .arg("validate")
            .arg("--host")
            .arg(host)
            .arg(&root));
        assert_eq!(
            output.code, 0,
            "--host {host}: {}{}",
            output.stdout, output.stderr
        );
        // The tally of each host; the diagnostics themselves are the
        // validator's, checked where each rule is.
        let tally = output.stdout.lines().last().unwrap_or_default();
        tallies.push(format!("{host}: {tally}"));
    }
    insta::assert_snapshot!(tallies.join("\n"), @"
    claude-api: 8 valid, 0 invalid, 7 warnings
    claude-code: 8 valid, 0 invalid, 4 warnings
    codex: 8 valid, 0 invalid, 6 warnings
    copilot: 8 valid, 0 invalid, 6 warnings
    mcp: 8 valid, 0 invalid, 6 warnings
    openai: 8 valid, 0 invalid, 6 warnings
    ");
}
