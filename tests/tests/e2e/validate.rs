//! `skillpkg validate` end to end: the real binary on real folders.

use skillpkg_tests::{TestContext, run};

#[test]
fn a_valid_skill_passes_with_a_one_line_summary() {
    let sandbox = TestContext::new();
    sandbox.skill("pdf", "pdf", "", "# Use it\n");
    let output = sandbox.skillpkg(["validate", "pdf"]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(output.stdout, "1 valid, 0 invalid, 0 warnings\n");
}

#[test]
fn a_problem_is_shown_with_its_code_place_and_a_caret_under_it() {
    let sandbox = TestContext::new();
    sandbox.skill("pdf-tools", "pdf", "", "body\n");
    let output = sandbox.skillpkg(["validate", "pdf-tools"]);
    assert_eq!(output.code, 1, "{output:?}");
    let expected = "\
error[name-mismatch]: `name` is `pdf` but the folder is `pdf-tools`
 --> pdf-tools/SKILL.md:2:7
  |
2 | name: pdf
  |       ^^^
  = hint: rename the folder to `pdf` or set `name: pdf-tools`
";
    assert!(
        output.stdout.starts_with(expected),
        "got:\n{}",
        output.stdout
    );
    assert!(
        output.stdout.ends_with("0 valid, 1 invalid, 0 warnings\n"),
        "{}",
        output.stdout
    );
}

#[test]
fn a_folder_of_skills_is_searched_and_summarised() {
    let sandbox = TestContext::new();
    sandbox.skill("skills/good", "good", "", "body\n");
    sandbox.skill(
        "skills/warned",
        "warned",
        "homepage: https://example.com\n",
        "body\n",
    );
    sandbox.skill("skills/broken", "Broken Skill", "", "body\n");
    sandbox.skill("skills/good/nested", "nested", "", "body\n");
    sandbox.write("skills/.git/x/SKILL.md", "not a skill");
    let output = sandbox.skillpkg(["validate", "skills"]);
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stdout), @r#"
    error[name-invalid]: `name` "Broken Skill" is invalid: the name contains 'B' at position 1; only lowercase letters a-z, digits and `-` are allowed
     --> skills/broken/SKILL.md:2:7
      |
    2 | name: Broken Skill
      |       ^^^^^^^^^^^^
      = hint: a valid name would be `broken-skill`

    warning[unknown-key]: unknown frontmatter key `homepage`
     --> skills/warned/SKILL.md:4:1
      |
    4 | homepage: https://example.com
      | ^^^^^^^^
      = hint: agents ignore unknown keys; move custom data under `metadata`

    3 valid, 1 invalid, 1 warning
    "#);
    assert!(
        output.stdout.ends_with("3 valid, 1 invalid, 1 warning\n"),
        "{}",
        output.stdout
    );
}

#[test]
fn several_paths_are_validated_in_one_run() {
    let sandbox = TestContext::new();
    sandbox.skill("a", "a", "", "body\n");
    sandbox.skill("b", "b", "", "body\n");
    let skill_md = sandbox.path().join("b/SKILL.md");
    let output = run(sandbox
        .skillpkg_command()
        .arg("validate")
        .arg("a")
        .arg(&skill_md)
        .arg("a"));
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(
        output.stdout, "2 valid, 0 invalid, 0 warnings\n",
        "the same skill twice counts once"
    );
}

#[test]
fn strict_turns_every_warning_into_an_error() {
    let sandbox = TestContext::new();
    sandbox.skill("pdf", "pdf", "homepage: https://example.com\n", "body\n");
    let relaxed = sandbox.skillpkg(["validate", "pdf"]);
    assert_eq!(relaxed.code, 0, "{relaxed:?}");
    insta::assert_snapshot!(sandbox.redact(&relaxed.stdout), @"
    warning[unknown-key]: unknown frontmatter key `homepage`
     --> pdf/SKILL.md:4:1
      |
    4 | homepage: https://example.com
      | ^^^^^^^^
      = hint: agents ignore unknown keys; move custom data under `metadata`

    1 valid, 0 invalid, 1 warning
    ");
    let strict = run(sandbox
        .skillpkg_command()
        .args(["validate", "--strict", "pdf"]));
    assert_eq!(strict.code, 1, "{strict:?}");
    insta::assert_snapshot!(sandbox.redact(&strict.stdout), @"
    error[unknown-key]: unknown frontmatter key `homepage`
     --> pdf/SKILL.md:4:1
      |
    4 | homepage: https://example.com
      | ^^^^^^^^
      = hint: agents ignore unknown keys; move custom data under `metadata`

    0 valid, 1 invalid, 0 warnings
    ");
    assert!(
        strict.stdout.ends_with("0 valid, 1 invalid, 0 warnings\n"),
        "{}",
        strict.stdout
    );
}

#[test]
fn allow_silences_a_warning_code() {
    let sandbox = TestContext::new();
    sandbox.skill("pdf", "pdf", "homepage: https://example.com\n", "body\n");
    let output = run(sandbox.skillpkg_command().args([
        "validate",
        "--strict",
        "--allow",
        "unknown-key",
        "pdf",
    ]));
    assert_eq!(output.code, 0, "{output:?}");
    sandbox.skill("bad", "wrong", "", "body\n");
    let output =
        run(sandbox
            .skillpkg_command()
            .args(["validate", "--allow", "name-mismatch", "bad"]));
    assert_eq!(output.code, 1, "{output:?}");
    let output =
        run(sandbox
            .skillpkg_command()
            .args(["validate", "--allow", "no-such-code", "pdf"]));
    assert_eq!(output.code, 2, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: invalid value 'no-such-code' for '--allow <CODE>': unknown diagnostic code `no-such-code`; the codes are listed in docs/skill-format.md

    For more information, try '--help'.
    ");
}

#[test]
fn json_output_gives_codes_severities_and_positions() {
    let sandbox = TestContext::new();
    sandbox.skill("pdf", "pdf", "license: 3\nhomepage: x\n", "body\n");
    sandbox.skill("ok", "ok", "", "body\n");
    let output = run(sandbox
        .skillpkg_command()
        .args(["validate", "--json", "pdf", "ok"]));
    assert_eq!(output.code, 1, "{output:?}");
    let json = output.json();
    assert_eq!(
        json["summary"],
        serde_json::json!({ "valid": 1, "invalid": 1, "warnings": 1 })
    );
    let pdf = &json["skills"][0];
    assert_eq!(pdf["path"], "pdf");
    assert_eq!(pdf["valid"], false);
    assert_eq!(
        pdf["name"],
        serde_json::Value::Null,
        "an invalid skill has no validated name"
    );
    let diagnostics = pdf["diagnostics"].as_array().unwrap();
    let license = diagnostics
        .iter()
        .find(|d| d["code"] == "invalid-field-type")
        .expect("license diagnostic");
    assert_eq!(license["severity"], "error");
    assert_eq!(license["file"], "SKILL.md");
    assert_eq!(
        (license["line"].as_u64(), license["column"].as_u64()),
        (Some(4), Some(10))
    );
    assert!(
        license["message"]
            .as_str()
            .unwrap()
            .contains("`license` must be a string")
    );
    let homepage = diagnostics
        .iter()
        .find(|d| d["code"] == "unknown-key")
        .unwrap();
    assert_eq!(homepage["severity"], "warning");
    assert_eq!(json["skills"][1]["name"], "ok");
}

#[test]
fn the_claude_api_host_adds_its_rules() {
    let sandbox = TestContext::new();
    sandbox.write(
        "claude-helper/SKILL.md",
        "---\nname: claude-helper\ndescription: Helps with <b>bold</b> text.\n---\nbody\n",
    );
    let portable = run(sandbox
        .skillpkg_command()
        .args(["validate", "claude-helper"]));
    assert_eq!(portable.code, 0, "{portable:?}");
    let output =
        run(sandbox
            .skillpkg_command()
            .args(["validate", "--host", "claude-api", "claude-helper"]));
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stdout), @"
    error[host-reserved-word]: `name` contains the reserved word `claude`, which the Claude API refuses
     --> claude-helper/SKILL.md:2:7
      |
    2 | name: claude-helper
      |       ^^^^^^^^^^^^^

    error[host-xml-tag]: `description` contains the XML tag `<b>`, which the Claude API refuses
     --> claude-helper/SKILL.md:3:14
      |
    3 | description: Helps with <b>bold</b> text.
      |              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^

    0 valid, 1 invalid, 0 warnings
    ");
    let unknown =
        run(sandbox
            .skillpkg_command()
            .args(["validate", "--host", "emacs", "claude-helper"]));
    assert_eq!(unknown.code, 2);
    insta::assert_snapshot!(sandbox.redact(&unknown.stderr), @"
    error: invalid value 'emacs' for '--host <HOST>': unknown host `emacs`; expected one of: portable, claude-api, claude-code, codex, copilot, mcp, openai, all

    For more information, try '--help'.
    ");
}

#[test]
fn the_claude_code_host_accepts_its_own_keys() {
    let sandbox = TestContext::new();
    sandbox.skill("pdf", "pdf", "argument-hint: \"[file]\"\n", "body\n");
    let portable = sandbox.skillpkg(["validate", "pdf"]);
    insta::assert_snapshot!(sandbox.redact(&portable.stdout), @r#"
    warning[non-portable-key]: `argument-hint` is a key of Claude Code, not of the Agent Skills specification
     --> pdf/SKILL.md:4:1
      |
    4 | argument-hint: "[file]"
      | ^^^^^^^^^^^^^
      = hint: other agents ignore it; keep it only if your users need it

    1 valid, 0 invalid, 1 warning
    "#);
    let claude_code = run(sandbox.skillpkg_command().args([
        "validate",
        "--strict",
        "--host",
        "claude-code",
        "pdf",
    ]));
    assert_eq!(claude_code.code, 0, "{claude_code:?}");
}

#[test]
fn a_lowercase_skill_md_is_read_with_a_warning() {
    let sandbox = TestContext::new();
    sandbox.write(
        "pdf/skill.md",
        "---\nname: pdf\ndescription: Reads PDFs.\n---\nbody\n",
    );
    let output = sandbox.skillpkg(["validate", "pdf"]);
    assert_eq!(output.code, 0, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stdout), @"
    warning[skill-md-case]: the skill file is named `skill.md`, not `SKILL.md`
     --> pdf/skill.md
      = hint: rename it to `SKILL.md`: agents on case-sensitive file systems will not find it

    1 valid, 0 invalid, 1 warning
    ");
}

#[test]
fn crlf_line_ends_and_a_byte_order_mark_are_accepted() {
    let sandbox = TestContext::new();
    sandbox.write(
        "pdf/SKILL.md",
        "\u{feff}---\r\nname: pdf\r\ndescription: |\r\n  Reads PDFs.\r\n  Use for PDFs.\r\nmetadata:\r\n  author: me\r\n---\r\nbody\r\n",
    );
    let output = run(sandbox
        .skillpkg_command()
        .args(["validate", "--strict", "pdf"]));
    assert_eq!(output.code, 0, "{output:?}");
}

#[test]
fn a_path_that_does_not_exist_is_a_clear_error() {
    let sandbox = TestContext::new();
    let output = sandbox.skillpkg(["validate", "nowhere"]);
    assert_eq!(output.code, 1, "{output:?}");
    assert_eq!(
        output.stderr,
        "error: `nowhere` does not exist\nhint: give the path of a skill folder or a folder of skills\n"
    );
}

#[test]
fn a_folder_without_any_skill_is_invalid() {
    let sandbox = TestContext::new();
    sandbox.write("empty/README.md", "nothing here");
    let output = sandbox.skillpkg(["validate", "empty"]);
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stdout), @"
    error[skill-md-missing]: empty has no `SKILL.md`
     --> empty/SKILL.md
      = hint: a skill is a folder with a SKILL.md file; check the path

    0 valid, 1 invalid, 0 warnings
    ");
}

#[test]
fn broken_yaml_points_at_the_line() {
    let sandbox = TestContext::new();
    sandbox.write(
        "pdf/SKILL.md",
        "---\nname: pdf\ndescription: a: b: [c\n---\nbody\n",
    );
    let output = run(sandbox
        .skillpkg_command()
        .args(["validate", "--json", "pdf"]));
    assert_eq!(output.code, 1, "{output:?}");
    let diagnostic = &output.json()["skills"][0]["diagnostics"][0];
    assert_eq!(diagnostic["code"], "yaml-syntax");
    assert_eq!(diagnostic["line"], 3, "{diagnostic}");
}

#[test]
fn validate_reports_what_pack_would_refuse() {
    let sandbox = TestContext::new();
    let dir = sandbox.skill("pdf", "pdf", "", "See [the notes](notes.md).\n");
    std::os::unix::fs::symlink("/etc/passwd", dir.join("passwd")).unwrap();
    sandbox.write("pdf/notes.md", "left out");
    sandbox.write("pdf/.skillignore", "notes.md\n");
    let output = sandbox.skillpkg(["validate", "pdf"]);
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stdout), @"
    warning[broken-link]: the link `notes.md` points to a file that is not in the skill
     --> pdf/SKILL.md:5:5
      |
    5 | See [the notes](notes.md).
      |     ^^^^^^^^^^^^^^^^^^^^^
      = hint: check the spelling and case; files left out by `.skillignore` are not installed

    error[symlink]: `passwd` is a symlink; skills cannot contain symlinks
     --> pdf/passwd
      = hint: replace the symlink with a copy of its target, or list it in `.skillignore`

    0 valid, 1 invalid, 1 warning
    ");
}

#[test]
fn dot_dot_and_hidden_agent_folders_resolve_to_real_names() {
    let sandbox = TestContext::new();
    sandbox.skill("repo/.claude/skills/pdf", "pdf", "", "body\n");
    sandbox.skill("repo/.agents/skills/csv", "csv", "", "body\n");
    let output = sandbox.skillpkg(["validate", "repo"]);
    assert_eq!(output.code, 0, "{output:?}");
    assert_eq!(output.stdout, "2 valid, 0 invalid, 0 warnings\n");
    let inner = sandbox.path().join("repo/.claude/skills/pdf/scripts");
    fs_err::create_dir_all(&inner).unwrap();
    let output = run(sandbox
        .skillpkg_command()
        .current_dir(&inner)
        .args(["validate", ".."]));
    assert_eq!(output.code, 0, "`..` is the folder `pdf`: {output:?}");
}

#[test]
fn allowing_an_error_code_is_refused() {
    let sandbox = TestContext::new();
    sandbox.skill("pdf", "pdf", "", "body\n");
    let output =
        run(sandbox
            .skillpkg_command()
            .args(["validate", "--allow", "name-mismatch", "pdf"]));
    assert_eq!(output.code, 1, "{output:?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: `--allow name-mismatch` names an error; only warnings can be allowed
    hint: fix the error instead: an invalid skill cannot be packed or installed
    ");
}

/// The diagnostic shows the line it refuses; a terminal must not act on the
/// escape in it (here, one that would clear the screen), so it is shown as
/// the control picture `␛`, with the caret still under it.
#[test]
fn a_control_character_is_shown_not_sent() {
    let sandbox = TestContext::new();
    sandbox.write(
        "pdf/SKILL.md",
        "---\nname: pdf\ndescription: Reads PDFs.\u{1b}[2J\n---\nbody\n",
    );
    let output = run(sandbox
        .skillpkg_command()
        .args(["validate", "pdf"])
        .env_remove("NO_COLOR")
        .env("CLICOLOR_FORCE", "1"));
    assert_eq!(output.code, 1, "{output:?}");
    assert!(!output.stdout.contains("\u{1b}[2J"), "{:?}", output.stdout);
    // Colour escapes shown as `<ESC>`: the only ones are skillpkg's own.
    let said = sandbox.redact(&output.stdout).replace('\u{1b}', "<ESC>");
    insta::assert_snapshot!(said, @"
    <ESC>[1m<ESC>[31merror[control-character]<ESC>[0m<ESC>[1m: the frontmatter contains U+001B (ESC), a control character<ESC>[0m
     <ESC>[1m<ESC>[34m--><ESC>[0m pdf/SKILL.md:3:25
      <ESC>[1m<ESC>[34m|<ESC>[0m
    <ESC>[1m<ESC>[34m3<ESC>[0m <ESC>[1m<ESC>[34m|<ESC>[0m description: Reads PDFs.␛[2J
      <ESC>[1m<ESC>[34m|<ESC>[0m                         <ESC>[1m<ESC>[31m^<ESC>[0m
      <ESC>[1m<ESC>[34m=<ESC>[0m <ESC>[1mhint<ESC>[0m: remove it: terminals and indexes that show this text act on control characters (ESC starts sequences that rewrite the screen or hide links; CR overwrites the line)

    0 valid, 1 invalid, 0 warnings
    ");
    let plain = sandbox.skillpkg(["validate", "pdf"]);
    let expected = "\
error[control-character]: the frontmatter contains U+001B (ESC), a control character
 --> pdf/SKILL.md:3:25
  |
3 | description: Reads PDFs.\u{241b}[2J
  |                         ^
";
    assert!(plain.stdout.starts_with(expected), "got:\n{}", plain.stdout);
}

/// The codes and files of a skill's diagnostics in `validate --json` output.
fn codes_and_files(skill: &serde_json::Value) -> Vec<(String, String)> {
    skill["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap_or_default().to_owned(),
                d["file"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[cfg(unix)]
#[test]
fn a_skill_reached_through_a_symlinked_folder_is_named_after_the_link() {
    let sandbox = TestContext::new();
    sandbox.skill("repo/vendor/pdf-v2", "pdf", "", "body\n");
    fs_err::create_dir_all(sandbox.path().join("repo/.claude/skills")).unwrap();
    std::os::unix::fs::symlink(
        "../../vendor/pdf-v2",
        sandbox.path().join("repo/.claude/skills/pdf"),
    )
    .unwrap();

    let output =
        run(sandbox
            .skillpkg_command()
            .args(["validate", "--strict", "repo/.claude/skills/pdf"]));
    assert_eq!(output.code, 0, "the host sees the folder `pdf`: {output:?}");
    assert_eq!(output.stdout, "1 valid, 0 invalid, 0 warnings\n");

    let output =
        run(sandbox
            .skillpkg_command()
            .args(["validate", "--json", "repo/.claude/skills"]));
    assert_eq!(
        output.code, 0,
        "a linked skill is found by search: {output:?}"
    );
    assert_eq!(
        output.json()["skills"][0]["path"],
        "repo/.claude/skills/pdf"
    );

    // The folder itself is still `pdf-v2`, which `name` does not match.
    let output = run(sandbox
        .skillpkg_command()
        .args(["validate", "--json", "repo/vendor/pdf-v2"]));
    assert_eq!(output.code, 1, "{output:?}");
    assert_eq!(
        codes_and_files(&output.json()["skills"][0]),
        [("name-mismatch".to_owned(), "SKILL.md".to_owned())]
    );
}

#[cfg(unix)]
#[test]
fn a_symlink_to_an_ancestor_does_not_make_the_search_endless() {
    let sandbox = TestContext::new();
    sandbox.skill("skills/pdf", "pdf", "", "body\n");
    std::os::unix::fs::symlink("..", sandbox.path().join("skills/pdf/up")).unwrap();
    std::os::unix::fs::symlink(".", sandbox.path().join("skills/here")).unwrap();
    let output = run(sandbox
        .skillpkg_command()
        .args(["validate", "--json", "skills"]));
    let json = output.json();
    let paths: Vec<&str> = json["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|skill| skill["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["skills/pdf"], "{output:?}");
    // The skill itself may not hold a symlink: that is what packing refuses.
    assert_eq!(
        codes_and_files(&json["skills"][0]),
        [("symlink".to_owned(), "up".to_owned())]
    );
}

#[cfg(unix)]
#[test]
fn only_programs_in_scripts_need_a_shebang_and_the_exec_bit() {
    let sandbox = TestContext::new();
    sandbox.skill("docx", "docx", "", "body\n");
    // Data files that real skills keep beside their scripts.
    sandbox.write("docx/scripts/ooxml/schemas/wml.xsd", "<xs:schema/>\n");
    sandbox.write("docx/scripts/templates/comment.xml", "<w:comment/>\n");
    sandbox.write("docx/scripts/preview.html", "<html></html>\n");
    sandbox.write("docx/scripts/requirements.txt", "lxml\n");
    // Programs: one with no `#!`, one with `#!` but no exec bit, one with
    // no extension, and one in order.
    sandbox.write("docx/scripts/pack.py", "print('packing')\n");
    sandbox.write("docx/scripts/unpack.sh", "#!/bin/sh\necho unpacking\n");
    sandbox.write("docx/scripts/convert", "#!/usr/bin/env python3\nprint(1)\n");
    let ready = sandbox.write("docx/scripts/ready.mjs", "#!/usr/bin/env node\n");
    skillpkg_tests::set_executable(&ready, true);

    let output = run(sandbox
        .skillpkg_command()
        .args(["validate", "--json", "docx"]));
    assert_eq!(output.code, 0, "warnings only: {output:?}");
    let mut found = codes_and_files(&output.json()["skills"][0]);
    found.sort();
    let expected: Vec<(String, String)> = [
        ("script-no-shebang", "scripts/pack.py"),
        ("script-not-executable", "scripts/convert"),
        ("script-not-executable", "scripts/unpack.sh"),
    ]
    .iter()
    .map(|(code, file)| ((*code).to_owned(), (*file).to_owned()))
    .collect();
    assert_eq!(found, expected);
}

#[test]
fn an_email_autolink_is_not_a_link_to_a_file() {
    let sandbox = TestContext::new();
    sandbox.skill(
        "mail",
        "mail",
        "",
        "Write to <help@example.com>, or read [the guide](guide.md).\n",
    );
    let output = run(sandbox
        .skillpkg_command()
        .args(["validate", "--json", "mail"]));
    assert_eq!(output.code, 0, "{output:?}");
    let json = output.json();
    assert_eq!(
        codes_and_files(&json["skills"][0]),
        [("broken-link".to_owned(), "SKILL.md".to_owned())]
    );
    let message = json["skills"][0]["diagnostics"][0]["message"]
        .as_str()
        .unwrap();
    assert!(message.contains("`guide.md`"), "{message}");
}
