//! Every diagnostic code, triggered by the smallest skill that shows it, and
//! a check that no code is left without such a case.

use std::collections::BTreeSet;
use std::path::Path;

use skillpkg_index::skill::{Code, Host, Severity, SkillReport, ValidateOptions, validate_skill};

const NAME: &str = "sample";
const GOOD_FRONTMATTER: &str = "name: sample\ndescription: Does sample things. Use when testing.\n";

/// One case: the files of a skill folder named `sample`, the host to check
/// against, and the code the case must produce.
struct Case {
    code: Code,
    folder: &'static str,
    /// Shell commands run in the skill folder after the files are written,
    /// for what `fs` cannot make portably (FIFOs, symlinks, modes).
    setup: Option<&'static str>,
    files: Vec<(&'static str, Vec<u8>)>,
    host: Host,
    executable: &'static [&'static str],
}

fn case(code: Code, skill_md: impl Into<Vec<u8>>) -> Case {
    Case {
        code,
        folder: NAME,
        setup: None,
        files: vec![("SKILL.md", skill_md.into())],
        host: Host::Portable,
        executable: &[],
    }
}

fn with_frontmatter(extra: &str) -> String {
    format!("---\n{GOOD_FRONTMATTER}{extra}---\n# Body\n")
}

fn with_body(body: &str) -> String {
    format!("---\n{GOOD_FRONTMATTER}---\n{body}")
}

impl Case {
    fn file(mut self, path: &'static str, contents: impl Into<Vec<u8>>) -> Self {
        self.files.push((path, contents.into()));
        self
    }

    fn setup(mut self, script: &'static str) -> Self {
        self.setup = Some(script);
        self
    }

    /// Puts the skill in a folder of another name.
    fn folder(mut self, folder: &'static str) -> Self {
        self.folder = folder;
        self
    }

    fn without_skill_md(mut self) -> Self {
        self.files.retain(|(path, _)| *path != "SKILL.md");
        self
    }

    fn host(mut self, host: Host) -> Self {
        self.host = host;
        self
    }

    fn executable(mut self, paths: &'static [&'static str]) -> Self {
        self.executable = paths;
        self
    }

    fn run(&self) -> SkillReport {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join(self.folder);
        fs_err::create_dir_all(&dir).unwrap();
        for (path, contents) in &self.files {
            let file = dir.join(path);
            fs_err::create_dir_all(file.parent().unwrap()).unwrap();
            fs_err::write(&file, contents).unwrap();
        }
        for path in self.executable {
            set_mode(&dir.join(path), 0o755);
        }
        if let Some(script) = self.setup {
            let status = std::process::Command::new("sh")
                .arg("-c")
                .arg(script)
                .current_dir(&dir)
                .status()
                .unwrap();
            assert!(status.success(), "setup `{script}` failed");
        }
        validate_skill(
            &dir,
            &ValidateOptions {
                host: self.host,
                ..ValidateOptions::for_folder(&dir)
            },
        )
    }
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn tool(fields: &str) -> String {
    format!("tools:\n  - name: run\n    description: Runs.\n{fields}")
}

const CLOSED: &str = "{type: object, additionalProperties: false, properties: {}}";

/// A complete, valid tool with `replace` swapped into its YAML.
fn valid_tool(from: &str, to: &str) -> String {
    tool(&format!(
        "    input_schema: {CLOSED}\n    output_schema: {CLOSED}\n    implementation: {{runtime: python, entrypoint: scripts/run.py}}\n"
    ))
    .replace(from, to)
}

fn tool_case(code: Code, extra: &str) -> Case {
    case(code, with_frontmatter(extra))
        .file("scripts/run.py", "#!/usr/bin/env python3\n")
        .executable(&["scripts/run.py"])
}

fn cases() -> Vec<Case> {
    let big_body = "line\n".repeat(501);
    let many_files: Vec<(&'static str, Vec<u8>)> = (0..10_000)
        .map(|index| {
            (
                &*Box::leak(format!("assets/{}/{index}", index / 1000).into_boxed_str()),
                Vec::new(),
            )
        })
        .collect();
    let wordy_body = "word ".repeat(8_100);
    vec![
        case(Code::SkillMdMissing, "")
            .without_skill_md()
            .file("README.md", "# not a skill"),
        case(Code::SkillMdCase, "")
            .without_skill_md()
            .file("skill.md", with_body("body\n")),
        case(
            Code::NotUtf8,
            b"---\nname: sample\ndescription: caf\xe9\n---\n".to_vec(),
        ),
        case(Code::FrontmatterMissing, "# Title\n\nno frontmatter\n"),
        case(
            Code::FrontmatterUnclosed,
            format!("---\n{GOOD_FRONTMATTER}# Body\n"),
        ),
        case(
            Code::YamlSyntax,
            "---\nname: sample\ndescription: [unclosed\n---\nbody\n",
        ),
        case(
            Code::FrontmatterNotMapping,
            "---\n- just\n- a list\n---\nbody\n",
        ),
        case(
            Code::ControlCharacter,
            with_frontmatter("metadata:\n  author: \"me\\e[2J\"\n"),
        ),
        case(
            Code::FrontmatterTooLarge,
            with_frontmatter(&format!("notes: {}\n", "x".repeat(70_000))),
        ),
        case(
            Code::AmbiguousYaml,
            with_frontmatter("x-base: &b {license: MIT}\n<<: *b\n"),
        ),
        case(Code::NameMissing, "---\ndescription: No name.\n---\nbody\n"),
        case(
            Code::NameInvalid,
            "---\nname: Sample\ndescription: Capitals.\n---\nbody\n",
        ),
        case(
            Code::NameMismatch,
            "---\nname: other\ndescription: Wrong folder.\n---\nbody\n",
        ),
        case(
            Code::DescriptionMissing,
            "---\nname: sample\ndescription: \"  \"\n---\nbody\n",
        ),
        case(
            Code::DescriptionTooLong,
            format!(
                "---\nname: sample\ndescription: {}\n---\nbody\n",
                "d".repeat(1025)
            ),
        ),
        case(
            Code::CompatibilityInvalid,
            with_frontmatter(&format!("compatibility: {}\n", "c".repeat(501))),
        ),
        case(
            Code::InvalidFieldType,
            with_frontmatter("license: [MIT, Apache-2.0]\n"),
        ),
        case(Code::VersionInvalid, with_frontmatter("version: \"1.0\"\n")),
        case(
            Code::DependencyInvalid,
            with_frontmatter("depends_on: [\"Other@^1\"]\n"),
        ),
        tool_case(
            Code::ToolSchemaInvalid,
            &valid_tool("input_schema: {type: object,", "input_schema: {type: object, minProperties: -1,"),
        ),
        tool_case(Code::SpecVersionInvalid, "spec_version: \"3.0\"\n"),
        tool_case(Code::WhenToUseInvalid, "when_to_use: for pdf files\n"),
        tool_case(Code::ToolsInvalid, "tools: [codebase, search]\n"),
        tool_case(Code::ToolNameInvalid, &valid_tool("name: run", "name: bad--tool")),
        tool_case(
            Code::ToolNameDuplicate,
            &format!("{}{}", valid_tool("", ""), valid_tool("tools:\n", "")),
        ),
        tool_case(Code::ToolDescriptionInvalid, &valid_tool("description: Runs.", "description: \"\"")),
        tool_case(
            Code::ToolConfirmationInvalid,
            &valid_tool("    implementation:", "    confirmation: {level: sometimes}\n    implementation:"),
        ),
        tool_case(Code::ToolImplementationInvalid, &valid_tool(", entrypoint: scripts/run.py", "")),
        tool_case(Code::ToolRuntimeInvalid, &valid_tool("runtime: python", "runtime: ruby")),
        tool_case(Code::ToolEntrypointOutside, &valid_tool("scripts/run.py", "../run.py")),
        tool_case(Code::ToolEntrypointExtension, &valid_tool("runtime: python", "runtime: node")),
        tool_case(Code::ToolEntrypointMissing, &valid_tool("scripts/run.py", "scripts/none.py")),
        tool_case(Code::PermissionsInvalid, "permissions: {filesystem: {read: \"**/*.pdf\"}}\n"),
        tool_case(Code::PermissionGlobInvalid, "permissions: {filesystem: {read: [\"!secret/**\"]}}\n"),
        tool_case(Code::SafetyInvalid, "safety: {require_confirmation_for: [explode]}\n"),
        tool_case(Code::SecretsInvalid, "secrets: {required: [{name: MY KEY, usage: env}]}\n"),
        tool_case(Code::ProvenanceInvalid, "provenance: {source_commit: main}\n"),
        tool_case(Code::HostOverridesInvalid, "host_overrides: [{host: mcp}]\n"),
        tool_case(
            Code::HostOpenaiStrict,
            &valid_tool("input_schema: {type: object, additionalProperties: false, properties: {}}", "input_schema: {type: object, additionalProperties: false, properties: {a: {type: string}}}"),
        )
        .host(Host::OpenAi),
        tool_case(Code::HostNetwork, "permissions: {network: {outbound: [api.example.com]}}\n")
            .host(Host::ClaudeApi),
        tool_case(Code::ToolSchemaOpen, &valid_tool("input_schema: {type: object, additionalProperties: false,", "input_schema: {type: object,")),
        tool_case(Code::ToolOutputSchemaMissing, &valid_tool(&format!("    output_schema: {CLOSED}\n"), "")),
        tool_case(Code::PermissionOverbroad, "permissions: {filesystem: {write: [\"**/*\"]}}\n"),
        tool_case(Code::PermissionProtectedPath, "permissions: {filesystem: {write: [\".claude/**\"]}}\n"),
        tool_case(Code::HostOverrideUnknown, "host_overrides: [{host: vscode, config: {}}]\n"),
        tool_case(
            Code::HostDependencyInstall,
            &valid_tool("entrypoint: scripts/run.py}", "entrypoint: scripts/run.py, dependencies: {pip: [pdfplumber]}}"),
        )
        .host(Host::ClaudeApi),
        case(Code::ToolsJsonInvalid, with_frontmatter(""))
            .file("tools.json", "[{\"name\": \"t\"}]\n"),
        // A skill without tools has no tools.json: even `[]` is stale.
        case(Code::ToolsJsonStale, with_frontmatter("")).file("tools.json", "[]\n"),
        case(
            Code::HostXmlTag,
            "---\nname: sample\ndescription: Uses <tool> tags.\n---\nbody\n",
        )
        .host(Host::ClaudeApi),
        case(
            Code::HostReservedWord,
            "---\nname: claude-sample\ndescription: x\n---\nbody\n",
        )
        .folder("claude-sample")
        .host(Host::ClaudeApi),
        case(Code::HostSizeLimit, with_body("body\n"))
            .file("assets/big.bin", vec![0_u8; 8 * 1024 * 1024 + 1])
            .host(Host::ClaudeApi),
        case(
            Code::UnknownKey,
            with_frontmatter("homepage: https://example.com\n"),
        ),
        case(Code::NonPortableKey, with_frontmatter("tags: [pdf]\n")),
        case(
            Code::AmbiguousScalar,
            with_frontmatter("metadata:\n  beta: yes\n"),
        ),
        case(
            Code::MetadataValueNotString,
            with_frontmatter("metadata:\n  reviewed: true\n"),
        ),
        case(
            Code::AllowedToolsNotString,
            with_frontmatter("allowed-tools: [Read, Write]\n"),
        ),
        case(Code::BodyEmpty, with_body("\n\n")),
        case(Code::BodyTooLong, with_body(&big_body)),
        case(Code::BodyTooManyTokens, with_body(&wordy_body)),
        case(Code::ScriptNoShebang, with_body("body\n")).file("scripts/run.py", "print('hi')\n"),
        case(Code::ScriptNotExecutable, with_body("body\n"))
            .file("scripts/run.sh", "#!/bin/sh\necho hi\n"),
        case(
            Code::BrokenLink,
            with_body("See [the guide](references/missing.md).\n"),
        ),
        case(
            Code::LinkOutsideSkill,
            with_body("See [this](../other/SKILL.md).\n"),
        ),
        case(Code::SkillMdIgnored, with_body("body\n")).file(".skillignore", "*.md\n"),
        case(Code::Symlink, with_body("body\n")).setup("ln -s /etc/passwd passwd"),
        case(Code::SpecialFile, with_body("body\n")).setup("mkfifo pipe"),
        case(Code::UnportablePath, with_body("body\n")).file("assets/aux.txt", "x"),
        case(Code::PathCollision, with_body("body\n"))
            .file("assets/Notes.md", "x")
            .file("assets/notes.md", "y"),
        case(Code::VcsMetadata, with_body("body\n")).file(".Git/config", "[core]\n"),
        case(Code::UnreadableFile, with_body("body\n"))
            .file("assets/locked/x", "x")
            .setup("chmod 000 assets/locked"),
        Case {
            files: [
                vec![("SKILL.md", with_body("body\n").into_bytes())],
                many_files,
            ]
            .concat(),
            ..case(Code::TooManyFiles, "")
        },
        case(Code::TooLarge, with_body("body\n"))
            .file("assets/big.bin", vec![0_u8; 8 * 1024 * 1024 + 1]),
        case(Code::PossibleSecret, with_body("body\n"))
            .file(
                "scripts/env.sh",
                "#!/bin/sh\nexport KEY=AKIA2E0A8F3B244C9986\n",
            )
            .executable(&["scripts/env.sh"]),
    ]
}

#[test]
fn every_code_has_a_case_that_produces_it() {
    let cases = cases();
    let mut missing = Vec::new();
    for case in &cases {
        if case.code == Code::UnreadableFile && is_root() {
            // Permissions do not stop root: this case runs for other users only.
            continue;
        }
        let report = case.run();
        let found = report.diagnostics.iter().find(|d| d.code == case.code);
        match found {
            Some(diagnostic) => {
                assert_eq!(
                    diagnostic.severity,
                    case.code.default_severity(),
                    "{:?}",
                    case.code
                );
                assert_eq!(
                    report.is_valid(),
                    case.code.default_severity() == Severity::Warning,
                    "{:?}: {:#?}",
                    case.code,
                    report.diagnostics
                );
            }
            None => missing.push(format!(
                "{}: got {:?}",
                case.code,
                report
                    .diagnostics
                    .iter()
                    .map(|d| d.code)
                    .collect::<Vec<_>>()
            )),
        }
    }
    assert!(
        missing.is_empty(),
        "cases that did not produce their code:\n{}",
        missing.join("\n")
    );
    let mut covered: BTreeSet<Code> = cases.iter().map(|case| case.code).collect();
    // Found across skills, not in one: see the test below.
    covered.insert(Code::HostNameCollision);
    let uncovered: Vec<_> = Code::ALL
        .iter()
        .filter(|code| !covered.contains(code))
        .collect();
    assert!(uncovered.is_empty(), "codes without a case: {uncovered:?}");
}

#[test]
fn a_scalar_yaml_1_1_reads_otherwise_is_a_warning_with_both_readings_and_the_fix() {
    let report = case(
        Code::AmbiguousScalar,
        with_frontmatter(
            "metadata:\n  on: \"x\"\n  mode: 010\n  released: 2024-01-01\n  tools: [Read, no]\n  quoted: \"yes\"\n  block: |\n    yes\n  words: yes, this is prose\n",
        ),
    )
    .run();
    let found: Vec<_> = report
        .diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.code == Code::AmbiguousScalar)
        .map(|diagnostic| {
            let location = diagnostic.location.unwrap();
            (
                diagnostic.severity,
                location.line,
                location.column,
                diagnostic.message.as_str(),
                diagnostic.hint.as_deref().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                Severity::Warning,
                5,
                3,
                "the key `on` is the string \"on\" here (YAML 1.2) but the boolean true for YAML 1.1 parsers such as PyYAML",
                "quote it: `\"on\":`"
            ),
            (
                Severity::Warning,
                6,
                9,
                "`010` is the integer 10 here (YAML 1.2) but the integer 8 for YAML 1.1 parsers such as PyYAML",
                "write `10` for the integer 10, or quote it, `\"010\"`, for the text"
            ),
            (
                Severity::Warning,
                7,
                13,
                "`2024-01-01` is the string \"2024-01-01\" here (YAML 1.2) but a date for YAML 1.1 parsers such as PyYAML, and for js-yaml",
                "quote it: `\"2024-01-01\"`"
            ),
            (
                Severity::Warning,
                8,
                17,
                "`no` is the string \"no\" here (YAML 1.2) but the boolean false for YAML 1.1 parsers such as PyYAML",
                "quote it: `\"no\"`"
            ),
        ]
    );
    // A warning: the skill stays valid.
    assert_eq!(report.errors(), 0);
}

#[test]
fn scalars_read_two_ways_are_reported_ten_at_most() {
    let many: String = (0..25).map(|index| format!("  k{index}: on\n")).collect();
    let report = case(
        Code::AmbiguousScalar,
        with_frontmatter(&format!("metadata:\n{many}")),
    )
    .run();
    let found: Vec<_> = report
        .diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.code == Code::AmbiguousScalar)
        .collect();
    assert_eq!(found.len(), 10);
    assert!(
        found[9].message.ends_with("(and 15 more such scalars)"),
        "{}",
        found[9].message
    );
}

fn is_root() -> bool {
    let output = std::process::Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&output.stdout).trim() == "0"
}

#[test]
fn a_complete_skill_has_no_diagnostics_and_a_typed_model() {
    let report = case(
        Code::UnknownKey,
        "---\nname: sample\ndescription: >-\n  Folded\n  description.\nlicense: MIT\ncompatibility: Python 3\nallowed-tools: Bash(git log:*) Read\nmetadata:\n  author: me\n  version: \"2.1.0\"\n---\nSee [guide](references/guide.md#top) and <https://example.com>.\n",
    )
    .file("references/guide.md", "# Guide\n")
    .file("scripts/run.sh", "#!/bin/sh\n")
    .executable(&["scripts/run.sh"])
    .run();
    assert_eq!(report.diagnostics, Vec::new());
    let frontmatter = report.frontmatter.expect("valid");
    assert_eq!(frontmatter.name.as_str(), "sample");
    assert_eq!(frontmatter.description, "Folded description.");
    assert_eq!(frontmatter.allowed_tools, ["Bash(git log:*)", "Read"]);
    assert_eq!(
        frontmatter.version,
        Some(semver::Version::new(2, 1, 0)),
        "from metadata.version"
    );
    assert_eq!(
        frontmatter.metadata[0],
        ("author".to_owned(), "me".to_owned())
    );
}

#[test]
fn extension_keys_are_read_into_the_model() {
    let report = case(
        Code::UnknownKey,
        with_frontmatter("version: 1.2.3\ndepends_on: [\"base\", \"other@^1.2\"]\n"),
    )
    .run();
    assert!(report.is_valid(), "{:#?}", report.diagnostics);
    let frontmatter = report.frontmatter.unwrap();
    assert_eq!(frontmatter.version, Some(semver::Version::new(1, 2, 3)));
    let dependencies: Vec<String> = frontmatter
        .dependencies
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(dependencies, ["base", "other@^1.2"]);
}

#[test]
fn strict_makes_warnings_errors_and_allow_drops_them() {
    let temp = tempfile::tempdir().unwrap();
    let dir = temp.path().join(NAME);
    fs_err::create_dir_all(&dir).unwrap();
    fs_err::write(dir.join("SKILL.md"), with_frontmatter("homepage: x\n")).unwrap();
    let strict = validate_skill(
        &dir,
        &ValidateOptions {
            strict: true,
            ..ValidateOptions::for_folder(&dir)
        },
    );
    assert!(!strict.is_valid());
    assert_eq!(strict.diagnostics[0].severity, Severity::Error);
    let allowed = validate_skill(
        &dir,
        &ValidateOptions {
            strict: true,
            allow: vec![Code::UnknownKey],
            ..ValidateOptions::for_folder(&dir)
        },
    );
    assert!(allowed.is_valid() && allowed.diagnostics.is_empty());
}

#[test]
fn a_folder_name_check_can_be_skipped_for_unpacked_archives() {
    let temp = tempfile::tempdir().unwrap();
    fs_err::write(temp.path().join("SKILL.md"), with_body("body\n")).unwrap();
    let report = validate_skill(temp.path(), &ValidateOptions::default());
    assert!(report.is_valid(), "{:#?}", report.diagnostics);
}

#[test]
fn positions_point_at_the_offending_node() {
    let report = case(
        Code::InvalidFieldType,
        with_frontmatter("license:\n  - MIT\n"),
    )
    .run();
    let diagnostic = report
        .diagnostics
        .iter()
        .find(|d| d.code == Code::InvalidFieldType)
        .unwrap();
    let location = diagnostic.location.unwrap();
    assert_eq!((location.line, location.column), (5, 3));
    assert_eq!(diagnostic.source_line.as_deref(), Some("  - MIT"));
}

#[test]
fn docs_describe_every_code_and_no_other() {
    let docs = fs_err::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/skill-format.md"),
    )
    .unwrap();
    let documented: BTreeSet<&str> = docs
        .lines()
        .filter_map(|line| line.strip_prefix("### `")?.strip_suffix('`'))
        .collect();
    let codes: BTreeSet<&str> = Code::ALL.iter().map(|code| code.as_str()).collect();
    assert_eq!(
        documented, codes,
        "docs/skill-format.md and Code::ALL disagree"
    );
    for code in Code::ALL {
        let section = docs.split(&format!("### `{code}`")).nth(1).unwrap();
        let severity = match code.default_severity() {
            Severity::Error => "Error",
            Severity::Warning => "Warning",
        };
        assert!(
            section.trim_start().starts_with(severity),
            "the docs give `{code}` another severity than {severity}"
        );
    }
}

#[test]
fn a_name_used_in_two_codex_scopes_is_a_collision() {
    use skillpkg_index::skill::catalog;
    use skillpkg_index::skill::scope::Environment;

    let temp = tempfile::tempdir().unwrap();
    let repo = temp.path().join("repo");
    fs_err::create_dir_all(repo.join(".git")).unwrap();
    let write = |dir: std::path::PathBuf| {
        fs_err::create_dir_all(&dir).unwrap();
        fs_err::write(dir.join("SKILL.md"), with_frontmatter("")).unwrap();
        dir
    };
    let near = write(repo.join("sub/.codex/skills/sample"));
    let far = write(repo.join(".codex/skills/sample"));
    let environment = Environment {
        cwd: repo.join("sub"),
        home: Some(temp.path().join("home")),
        codex_home: None,
    };
    let found = catalog::discover(Host::Codex, &environment).unwrap();
    for (dir, other) in [(&near, &far), (&far, &near)] {
        let options = ValidateOptions {
            host: Host::Codex,
            ..ValidateOptions::for_folder(dir)
        };
        let mut report = validate_skill(dir, &options);
        found.check_collisions(&mut report, &options);
        let collisions: Vec<_> = report
            .diagnostics
            .iter()
            .filter(|d| d.code == Code::HostNameCollision)
            .collect();
        assert_eq!(collisions.len(), 1, "{:#?}", report.diagnostics);
        assert!(
            collisions[0]
                .message
                .contains(&other.join("SKILL.md").display().to_string())
        );
        assert!(report.is_valid(), "a collision is a warning");

        let strict = ValidateOptions {
            strict: true,
            ..options.clone()
        };
        let mut report = validate_skill(dir, &strict);
        found.check_collisions(&mut report, &strict);
        assert!(!report.is_valid() && report.frontmatter.is_none());

        let allowed = ValidateOptions {
            allow: vec![Code::HostNameCollision],
            ..options
        };
        let mut report = validate_skill(dir, &allowed);
        found.check_collisions(&mut report, &allowed);
        assert!(report.diagnostics.is_empty(), "{:#?}", report.diagnostics);
    }
}
