//! `skill_md`: the bytes as the `SKILL.md` of a skill folder, through the
//! parser and the full validation that `skillpkg validate`, `pack` and the
//! registry's publish run.

use skillpkg_index::skill::{self, Host, Severity, ValidateOptions};

/// The skill folder's name, which `name:` must equal to be valid.
const FOLDER: &str = "fuzz-skill";

/// Parses `data` as a `SKILL.md`, then validates a folder holding it as its
/// `SKILL.md`. The first byte picks the host and strictness, the rest is the
/// file. Checks that a skill is valid exactly when it has a frontmatter and
/// no error, and that every diagnostic's location is inside the file.
pub fn skill_md(data: &[u8]) {
    let Some((options_byte, text)) = crate::selector(data) else {
        return;
    };
    let _ = skill::document::parse(text);

    let dir = crate::scratch().join(FOLDER);
    fs_err::create_dir_all(&dir).expect("the skill folder can be made");
    crate::clear(&dir);
    fs_err::write(dir.join(skill::SKILL_MD), text).expect("SKILL.md can be written");

    let options = ValidateOptions {
        host: Host::ALL[usize::from(options_byte) % Host::ALL.len()].1,
        strict: options_byte & 0x80 != 0,
        allow: Vec::new(),
        folder_name: Some(FOLDER.to_owned()),
        ..ValidateOptions::default()
    };
    let report = skill::validate_skill(&dir, &options);
    let has_error = report
        .diagnostics
        .iter()
        .any(|diagnostic| diagnostic.severity == Severity::Error);
    assert_eq!(report.is_valid(), !has_error);
    // The documented contract: a frontmatter if and only if no error.
    assert_eq!(report.frontmatter.is_some(), report.is_valid());
    // Line numbers count CRLF and lone CR as one line end, as the parser does.
    let text = String::from_utf8_lossy(text)
        .replace("\r\n", "\n")
        .replace('\r', "\n");
    let lines = text.split('\n').count();
    for diagnostic in &report.diagnostics {
        if let Some(location) = diagnostic.location {
            assert!(
                location.line >= 1 && location.line <= lines,
                "diagnostic {} points at line {} of a {lines}-line file",
                diagnostic.code.as_str(),
                location.line
            );
        }
    }
}

/// The files `audit_script` writes its input as: each language the audit
/// parses and each file it cuts code out of.
const SCRIPT_NAMES: &[&str] = &[
    "scripts/run.sh",
    "scripts/run.py",
    "scripts/run.js",
    "scripts/run.ts",
    "assets/Makefile",
    "assets/Dockerfile",
    "package.json",
    "assets/.github/workflows/ci.yml",
    "assets/site.pth",
    "references/guide.md",
    "scripts/run.ps1",
    "scripts/run.cmd",
    "scripts/run.rb",
    "filters/run.lua",
    "tools/main.go",
    "assets/npmrc.template",
    "checks/run.sql",
];

/// `audit_script`: the bytes as one file of a skill (the first byte picks
/// which: a shell, Python, JavaScript, TypeScript or PowerShell script, a
/// batch file, a Makefile, a Dockerfile, `package.json`, a workflow, a
/// `.pth` file, a document, a Ruby, Lua or Go file read as tokens, an
/// `.npmrc` template or an SQL file),
/// through the whole audit: parsing, folding, the flows, the blocks of a
/// document. Checks that it ends, and that every finding is placed in the
/// file it names, within its lines (counting every line end it reads).
pub fn audit_script(data: &[u8]) {
    let Some((selector, text)) = crate::selector(data) else {
        return;
    };
    let name = SCRIPT_NAMES[usize::from(selector) % SCRIPT_NAMES.len()];
    let dir = crate::scratch().join("audit-skill");
    fs_err::create_dir_all(&dir).expect("the skill folder can be made");
    crate::clear(&dir);
    fs_err::write(
        dir.join(skill::SKILL_MD),
        "---\nname: audit-skill\ndescription: Fuzzed. Use when fuzzing.\n---\n# Fuzzed\n",
    )
    .expect("SKILL.md can be written");
    let path = dir.join(name);
    fs_err::create_dir_all(path.parent().expect("a parent")).expect("folders can be made");
    fs_err::write(&path, text).expect("the file can be written");
    let audit = skillpkg_index::audit::audit_folder(&dir, &Default::default())
        .expect("a folder of two files can be audited");
    // The audit also reads a file with the line ends other readers see
    // (a lone CR, U+2028, U+2029: Python, JavaScript, editors) as line
    // feeds, and places what it finds there on those lines.
    let lines = String::from_utf8_lossy(text)
        .replace("\r\n", "\n")
        .split(['\n', '\r', '\u{2028}', '\u{2029}'])
        .count();
    for finding in &audit.findings {
        if finding.file == name {
            if let Some(line) = finding.line {
                assert!(
                    line >= 1 && line <= lines + 1,
                    "{finding:?} past the file's {lines} lines"
                );
            }
        }
    }
}
