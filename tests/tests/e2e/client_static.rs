//! The client against a static registry: a tree written with
//! `skillpkg_index`'s `StaticTree` in the test and read through `file://`,
//! so these tests need no server. `search`, `info`, `publish --dry-run`, and
//! the errors for read-only registries and missing settings.

use std::path::Path;

use skillpkg_index::archive::{Limits, pack_dir};
use skillpkg_index::checksum::Checksum;
use skillpkg_index::registry::tree::StaticTree;
use skillpkg_index::registry::{IndexDependency, IndexRecord, RegistryConfig};
use skillpkg_tests::{Output, TestContext, run};

/// A skill to put in the registry.
struct Published<'a> {
    name: &'static str,
    version: &'static str,
    description: &'a str,
    yanked_reason: Option<&'static str>,
}

const fn version<'a>(
    name: &'static str,
    version: &'static str,
    description: &'a str,
) -> Published<'a> {
    Published {
        name,
        version,
        description,
        yanked_reason: None,
    }
}

/// The registry most tests read: three skills, one with a yanked version.
const SKILLS: &[Published<'static>] = &[
    version(
        "commit-messages",
        "0.3.0",
        "Write commit messages. Also handles PDF changelogs.",
    ),
    version("pdf", "1.0.0", "Read PDF files."),
    version(
        "pdf-processing",
        "1.0.0",
        "Extract text and tables from PDF files.",
    ),
    Published {
        yanked_reason: Some("leaks the\nuser's files; use 1.2.0"),
        ..version(
            "pdf-processing",
            "1.1.0",
            "Extract text and tables from PDF files.",
        )
    },
    version(
        "pdf-processing",
        "1.2.0",
        "Extract text and tables from PDF files, fast.",
    ),
];

/// Writes a static tree at `<sandbox>/tree` holding `skills`, with
/// `config` as its config.json, and returns its `file://` URL.
fn static_registry(
    sandbox: &TestContext,
    skills: &[Published<'_>],
    config: &RegistryConfig,
) -> String {
    let tree = StaticTree::new(sandbox.path().join("tree"));
    tree.write_config(config).unwrap();
    let mut records: Vec<IndexRecord> = Vec::new();
    for skill in skills {
        let dir = sandbox.skill(
            &format!("sources/{}-{}/{}", skill.name, skill.version, skill.name),
            skill.name,
            &format!("version: {}\n", skill.version),
            "# Instructions\n",
        );
        let name = skill.name.parse().unwrap();
        let version: semver::Version = skill.version.parse().unwrap();
        let packed = pack_dir(&dir, name, version.clone(), &Limits::default()).unwrap();
        let published = "2026-11-22T10:00:00Z".parse().unwrap();
        tree.write_archive(&packed.name, &version, &packed.tarball, None, published)
            .unwrap();
        let deps = if skill.name == "pdf-processing" {
            vec![IndexDependency {
                name: "commit-messages".parse().unwrap(),
                req: "^0.3".parse().unwrap(),
            }]
        } else {
            Vec::new()
        };
        records.push(IndexRecord {
            v: 1,
            name: packed.name.clone(),
            vers: version,
            cksum: Checksum::from_digest(packed.sha256),
            size: packed.tarball.len() as u64,
            tree: packed.tree.to_string(),
            files: packed.files.len() as u64,
            deps,
            description: skill.description.into(),
            yanked: skill.yanked_reason.is_some(),
            yanked_reason: skill.yanked_reason.map(Into::into),
            signer: (skill.name == "pdf").then(|| "E53D620918B4F81F".to_owned()),
            published,
            audit: None,
        });
    }
    for name in records
        .iter()
        .map(|record| record.name.clone())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let versions: Vec<IndexRecord> = records
            .iter()
            .filter(|record| record.name == name)
            .cloned()
            .collect();
        tree.write_index(&name, &versions).unwrap();
    }
    tree.write_aggregates(&tree.read_all().unwrap(), config, None)
        .unwrap();
    file_url(tree.root())
}

fn file_url(path: &Path) -> String {
    url::Url::from_directory_path(path).unwrap().to_string()
}

/// A read-only tree (`"api": null`), as `skillpkg-registry build` writes.
fn read_only() -> RegistryConfig {
    RegistryConfig::read_only(8 * 1024 * 1024)
}

/// A tree whose API is somewhere nothing listens: fine for anything that
/// never calls it.
fn with_api() -> RegistryConfig {
    RegistryConfig {
        api: Some("http://127.0.0.1:9/api/v1".into()),
        ..read_only()
    }
}

fn skillpkg(sandbox: &TestContext, args: &[&str]) -> Output {
    sandbox.skillpkg(args)
}

/// Asserts an exit status, showing the whole output when it differs.
#[track_caller]
fn assert_code(output: &Output, code: i32) {
    assert_eq!(output.code, code, "{output:#?}");
}

#[test]
fn search_ranks_name_matches_first_and_counts() {
    let sandbox = TestContext::new();
    let registry = static_registry(&sandbox, SKILLS, &read_only());
    let output = skillpkg(&sandbox, &["search", "PDF", "--registry", &registry]);
    assert_code(&output, 0);
    // Columns are as wide as the longest name and version shown.
    assert_eq!(
        output.stdout,
        format!(
            "pdf              1.0.0  Read PDF files.\n\
             pdf-processing   1.2.0  Extract text and tables from PDF files, fast.\n\
             commit-messages  0.3.0  Write commit messages. Also handles PDF changelogs.\n\
             3 skills matching `PDF` in {registry}\n"
        )
    );
}

#[test]
fn search_needs_every_word_and_limit_says_how_many_more() {
    let sandbox = TestContext::new();
    let registry = static_registry(&sandbox, SKILLS, &read_only());
    let output = skillpkg(&sandbox, &["search", "pdf tables", "--registry", &registry]);
    assert_code(&output, 0);
    assert!(
        output.stdout.starts_with("pdf-processing  1.2.0  Extract"),
        "{output:#?}"
    );
    insta::assert_snapshot!(sandbox.redact(&output.stdout), @"
    pdf-processing  1.2.0  Extract text and tables from PDF files, fast.
    1 skill matching `pdf tables` in file://[HOME]/tree/
    ");

    let output = skillpkg(
        &sandbox,
        &["search", "pdf", "--limit", "1", "--registry", &registry],
    );
    assert_code(&output, 0);
    assert_eq!(output.stdout.lines().count(), 2, "{output:#?}");
    insta::assert_snapshot!(sandbox.redact(&output.stdout), @"
    pdf  1.0.0  Read PDF files.
    1 of 3 skills matching `pdf` in file://[HOME]/tree/ (--limit N shows more)
    ");

    let output = skillpkg(
        &sandbox,
        &["search", "nothing-like-this", "--registry", &registry],
    );
    assert_code(&output, 0);
    assert_eq!(
        output.stdout,
        format!("0 skills matching `nothing-like-this` in {registry}\n")
    );
}

#[test]
fn search_json_lists_the_matching_entries() {
    let sandbox = TestContext::new();
    let registry = static_registry(&sandbox, SKILLS, &read_only());
    let output = skillpkg(
        &sandbox,
        &["search", "tables", "--json", "--registry", &registry],
    );
    assert_code(&output, 0);
    assert_eq!(
        output.json(),
        serde_json::json!({
            "total": 1,
            "skills": [{
                "name": "pdf-processing",
                "version": "1.2.0",
                "description": "Extract text and tables from PDF files, fast.",
                "versions": 3,
            }],
        })
    );
}

#[test]
fn search_fits_long_descriptions_into_80_columns() {
    let sandbox = TestContext::new();
    let description = format!("Starts here. {}", "Very long words. ".repeat(20));
    let registry = static_registry(
        &sandbox,
        &[version("long", "1.0.0", &description)],
        &read_only(),
    );
    let output = skillpkg(&sandbox, &["search", "long", "--registry", &registry]);
    assert_code(&output, 0);
    let first = output.stdout.lines().next().unwrap();
    assert_eq!(first.chars().count(), 80, "{first:?}");
    assert!(first.starts_with("long  1.0.0  Starts here.") && first.ends_with('…'));
}

#[test]
fn info_shows_the_latest_version_that_is_not_yanked_and_every_version() {
    let sandbox = TestContext::new();
    let registry = static_registry(&sandbox, SKILLS, &read_only());
    let output = skillpkg(
        &sandbox,
        &["info", "pdf-processing", "--registry", &registry],
    );
    assert_code(&output, 0);
    let text = &output.stdout;
    for expected in [
        "pdf-processing 1.2.0\nExtract text and tables from PDF files, fast.\n",
        "\nchecksum:   sha256:",
        "\ntree:       h2:",
        "\nfiles:      1\n",
        "\ndepends on: commit-messages ^0.3\n",
        "\nsigner:     none (unsigned)\n",
        "\npublished:  2026-11-22T10:00:00Z\n",
        "\nversions:\n  1.2.0\n  1.1.0  (yanked: leaks the user's files; use 1.2.0)\n  1.0.0\n",
    ] {
        assert!(
            text.contains(expected),
            "{expected:?} missing from:\n{text}"
        );
    }
    let size = text.lines().find(|line| line.starts_with("size:")).unwrap();
    assert!(size.ends_with(" bytes)") && size.contains(" B ("), "{size}");
    assert!(!text.contains("\nyanked:"), "{text}");
}

#[test]
fn info_of_a_yanked_version_says_why() {
    let sandbox = TestContext::new();
    let registry = static_registry(&sandbox, SKILLS, &read_only());
    let output = skillpkg(
        &sandbox,
        &["info", "pdf-processing@1.1.0", "--registry", &registry],
    );
    assert_code(&output, 0);
    insta::assert_snapshot!(sandbox.redact_paths(&output.stdout), @"
    pdf-processing 1.1.0
    Extract text and tables from PDF files.

    size:       173 B (173 bytes)
    checksum:   sha256:afc8b5a02b7a77f221a588ed64ec4d081376694c5fb3facd86cba1863673a9a2
    tree:       h2:MWJyp6Y2Eodn8xVXQrNsZsCKwAEqPGz7Pvibt8oLNeQ=
    files:      1
    depends on: commit-messages ^0.3
    signer:     none (unsigned)
    published:  2026-11-22T10:00:00Z
    provenance: none
    yanked:     leaks the user's files; use 1.2.0

    versions:
      1.2.0
      1.1.0  (yanked: leaks the user's files; use 1.2.0)
      1.0.0
    ");
    let signed = skillpkg(&sandbox, &["info", "pdf", "--registry", &registry]);
    insta::assert_snapshot!(sandbox.redact_paths(&signed.stdout), @"
    pdf 1.0.0
    Read PDF files.

    size:       167 B (167 bytes)
    checksum:   sha256:cfe0b6c530ed6367a543297611e650f8355022f247fad9f8b089ed4c1f90e19e
    tree:       h2:fHh++tCZp6a650LnCXR4kgUgIsnE6UCX6QRV+IKGV94=
    files:      1
    depends on: none
    signer:     E53D620918B4F81F
    published:  2026-11-22T10:00:00Z
    provenance: none

    versions:
      1.0.0
    ");
}

#[test]
fn info_json_has_the_record_and_every_version() {
    let sandbox = TestContext::new();
    let registry = static_registry(&sandbox, SKILLS, &read_only());
    let output = skillpkg(
        &sandbox,
        &["info", "pdf-processing", "--json", "--registry", &registry],
    );
    assert_code(&output, 0);
    let json = output.json();
    assert_eq!(json["registry"], registry.as_str());
    let record = &json["record"];
    assert_eq!(record["name"], "pdf-processing");
    assert_eq!(record["vers"], "1.2.0");
    assert!(record["cksum"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(
        record["deps"][0],
        serde_json::json!({"name": "commit-messages", "req": "^0.3"})
    );
    assert_eq!(
        json["versions"],
        serde_json::json!([
            {"version": "1.2.0", "yanked": false, "yanked_reason": null},
            {"version": "1.1.0", "yanked": true, "yanked_reason": "leaks the\nuser's files; use 1.2.0"},
            {"version": "1.0.0", "yanked": false, "yanked_reason": null},
        ])
    );
}

#[test]
fn info_of_an_unknown_skill_names_it_and_the_registry() {
    let sandbox = TestContext::new();
    let registry = static_registry(&sandbox, SKILLS, &read_only());
    let output = skillpkg(
        &sandbox,
        &["info", "no-such-skill", "--registry", &registry],
    );
    assert_code(&output, 1);
    assert!(output.stdout.is_empty(), "{output:#?}");
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: no skill named `no-such-skill` in file://[HOME]/tree/
    hint: check the spelling, or look for it with `skillpkg search no-such-skill`
    ");
}

#[test]
fn info_of_an_unknown_version_lists_the_versions_there_are() {
    let sandbox = TestContext::new();
    let registry = static_registry(&sandbox, SKILLS, &read_only());
    let output = skillpkg(
        &sandbox,
        &["info", "pdf-processing@9.9.9", "--registry", &registry],
    );
    assert_code(&output, 1);
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: `pdf-processing` has no version 9.9.9 in file://[HOME]/tree/
    hint: its versions are: 1.2.0, 1.1.0 (yanked), 1.0.0
    ");
}

#[test]
fn a_bad_skill_argument_is_a_usage_error() {
    let sandbox = TestContext::new();
    let output = skillpkg(
        &sandbox,
        &["info", "PDF@1", "--registry", "file:///nowhere"],
    );
    assert_code(&output, 2);
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: invalid value 'PDF@1' for '<NAME[@VERSION]>': `PDF` is not a skill name: the name contains 'P' at position 1; only lowercase letters a-z, digits and `-` are allowed

    For more information, try '--help'.
    ");
    let output = skillpkg(&sandbox, &["yank", "pdf", "--registry", "file:///nowhere"]);
    assert_code(&output, 2);
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: invalid value 'pdf' for '<NAME@VERSION>': `pdf` has no version: write NAME@VERSION, like pdf@1.0.0

    For more information, try '--help'.
    ");
}

#[test]
fn publish_dry_run_shows_the_upload_and_needs_no_token() {
    let sandbox = TestContext::new();
    let registry = static_registry(&sandbox, &[], &with_api());
    let skill = sandbox.skill("pdf", "pdf", "version: 2.0.0\n", "# PDF\n");
    let before = skillpkg_tests::files_below(&sandbox.path().join("tree"));
    let output = run(sandbox
        .skillpkg_command()
        .args(["publish", "--dry-run", "--registry", &registry])
        .arg(&skill));
    assert_code(&output, 0);
    let text = &output.stdout;
    for expected in [
        "name:     pdf\n",
        "version:  2.0.0\n",
        "files:    1\n",
        "checksum: sha256:",
        "tree:     h2:",
        "upload:   PUT http://127.0.0.1:9/api/v1/skills\n",
    ] {
        assert!(
            text.contains(expected),
            "{expected:?} missing from:\n{text}"
        );
    }
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    note: 1 recommendation (non-portable-key 1); -v or `skillpkg validate [HOME]/pdf` lists them
         Dry run pdf 2.0.0 was not uploaded to file://[HOME]/tree/
    ");
    assert_eq!(
        skillpkg_tests::files_below(&sandbox.path().join("tree")),
        before
    );
    // Nothing is written next to the skill either.
    assert_eq!(fs_err::read_dir(&skill).unwrap().count(), 1);

    let json = run(sandbox
        .skillpkg_command()
        .args(["publish", "--dry-run", "--json", "--registry", &registry])
        .arg(&skill));
    assert_code(&json, 0);
    let json = json.json();
    assert_eq!(json["dry_run"], true);
    assert_eq!(json["name"], "pdf");
    assert_eq!(json["version"], "2.0.0");
    assert_eq!(json["upload"], "http://127.0.0.1:9/api/v1/skills");
    assert!(json["size"].as_u64().unwrap() > 0);
    assert!(json["sha256"].as_str().unwrap().starts_with("sha256:"));
}

#[test]
fn publish_dry_run_refuses_what_pack_refuses() {
    let sandbox = TestContext::new();
    let registry = static_registry(&sandbox, &[], &with_api());
    let skill = sandbox.skill("pdf", "pdf", "", "# PDF\n");
    let output = run(sandbox
        .skillpkg_command()
        .args(["publish", "--dry-run", "--registry", &registry])
        .arg(&skill));
    assert_code(&output, 1);
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @r#"
    error: cannot pack `[HOME]/pdf`: the skill has no version
    hint: add `version: "1.0.0"` under `metadata:` in the frontmatter, or pass `--version 1.0.0`
    "#);

    let output = run(sandbox
        .skillpkg_command()
        .args([
            "publish",
            "--dry-run",
            "--version",
            "1.0.0",
            "--registry",
            &registry,
        ])
        .arg(&skill));
    assert_code(&output, 0);
    insta::assert_snapshot!(sandbox.redact(&output.stdout), @"
    name:     pdf
    version:  1.0.0
    files:    1
    size:     153 B (153 bytes)
    checksum: sha256:241ba0e9418ac6b2b64d14713cb89175bcc7264c4c75fdec6ec7667b2df1e901
    tree:     h2:1AJFGExuT7r9vT3MgeBfVN6pAhCaZJuP+/QbpcAaZJs=
    upload:   PUT http://127.0.0.1:9/api/v1/skills
    ");
}

#[test]
fn publish_to_a_read_only_registry_says_to_use_its_server() {
    let sandbox = TestContext::new();
    let registry = static_registry(&sandbox, SKILLS, &read_only());
    let skill = sandbox.skill("pdf", "pdf", "version: 2.0.0\n", "# PDF\n");
    let output = run(sandbox
        .skillpkg_command()
        .args([
            "publish",
            "--no-sign",
            "--token",
            "t0ken",
            "--registry",
            &registry,
        ])
        .arg(&skill));
    assert_code(&output, 1);
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @r#"
    note: 1 recommendation (non-portable-key 1); -v or `skillpkg validate [HOME]/pdf` lists them
    error: file://[HOME]/tree/ is read-only (a static tree with no API); publish to its server instead
    hint: pass the URL of the registry's server with --registry; a mirror or a tree written by `skillpkg-registry build` has `"api": null` in its config.json
    "#);
    assert!(!output.stderr.contains("t0ken"), "{output:#?}");
}

#[test]
fn publish_without_a_token_says_how_to_get_one() {
    let sandbox = TestContext::new();
    let registry = static_registry(&sandbox, &[], &with_api());
    let skill = sandbox.skill("pdf", "pdf", "version: 2.0.0\n", "# PDF\n");
    let output = run(sandbox
        .skillpkg_command()
        .args(["publish", "--registry", &registry])
        .arg(&skill));
    assert_code(&output, 1);
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: no token for file://[HOME]/tree/
    hint: run `skillpkg login --registry file://[HOME]/tree/`, pass `--token TOKEN`, or set SKILLPKG_TOKEN
    ");
}

#[test]
fn login_without_a_registry_lists_the_three_ways_to_give_one() {
    let sandbox = TestContext::new();
    let output = skillpkg(&sandbox, &["login", "--token", "t0ken"]);
    assert_code(&output, 1);
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @r#"
    error: no registry is configured
    hint: pass `--registry URL`, set SKILLPKG_REGISTRY=URL, or add `registry = "URL"` to [HOME]/.config/skillpkg/config.toml or `[registry] url = "URL"` to skills.toml; the name of a `[registries.NAME]` table works in place of each URL, and `[registries.default]` is the default
    "#);
    assert!(!output.stderr.contains("t0ken"), "{output:#?}");
}

#[test]
fn login_to_a_read_only_registry_is_refused_and_stores_nothing() {
    let sandbox = TestContext::new();
    let registry = static_registry(&sandbox, SKILLS, &read_only());
    let output = skillpkg(
        &sandbox,
        &["login", "--token", "t0ken", "--registry", &registry],
    );
    assert_code(&output, 1);
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @r#"
    error: file://[HOME]/tree/ is read-only (a static tree with no API); log in to its server instead
    hint: pass the URL of the registry's server with --registry; a mirror or a tree written by `skillpkg-registry build` has `"api": null` in its config.json
    "#);
    assert!(
        !sandbox
            .path()
            .join(".config/skillpkg/credentials.toml")
            .exists()
    );
}

#[test]
fn a_missing_registry_setting_names_the_flag_the_variable_and_the_config_file() {
    let sandbox = TestContext::new();
    let config_dir = sandbox.path().join("settings");
    let output = run(sandbox
        .skillpkg_command()
        .env("SKILLPKG_CONFIG_DIR", &config_dir)
        .args(["search", "pdf"]));
    assert_code(&output, 1);
    let hint = output
        .stderr
        .lines()
        .find(|line| line.starts_with("hint: "))
        .unwrap();
    assert!(hint.contains("`--registry URL`"), "{hint}");
    assert!(hint.contains("SKILLPKG_REGISTRY=URL"), "{hint}");
    assert!(
        hint.contains(
            &config_dir
                .join("skillpkg/config.toml")
                .display()
                .to_string()
        ),
        "{hint}"
    );
}

#[test]
fn the_registry_comes_from_the_flag_then_the_environment_then_the_config_file() {
    let sandbox = TestContext::new();
    let registry = static_registry(&sandbox, SKILLS, &read_only());
    let config_dir = sandbox.path().join("settings");
    sandbox.write(
        "settings/skillpkg/config.toml",
        format!("registry = \"{registry}\"\n"),
    );
    let search = |env: Option<&str>, flag: Option<&str>| {
        let mut command = sandbox.skillpkg_command();
        command
            .env("SKILLPKG_CONFIG_DIR", &config_dir)
            .args(["search", "pdf", "--json"]);
        if let Some(env) = env {
            command.env("SKILLPKG_REGISTRY", env);
        }
        if let Some(flag) = flag {
            command.args(["--registry", flag]);
        }
        run(&mut command)
    };
    let from_file = search(None, None);
    assert_code(&from_file, 0);
    assert_eq!(from_file.json()["total"], 3);

    let nowhere = file_url(&sandbox.path().join("nowhere"));
    let from_env = search(Some(&nowhere), None);
    assert_code(&from_env, 1);
    insta::assert_snapshot!(sandbox.redact(&from_env.stderr), @"
    error: file://[HOME]/nowhere/ is not a skillpkg registry: it has no config.json
    hint: check the URL: a registry URL is the folder that holds config.json
    ");

    let from_flag = search(Some(&nowhere), Some(&registry));
    assert_code(&from_flag, 0);
}

#[test]
fn a_registry_of_a_newer_format_is_refused() {
    let sandbox = TestContext::new();
    sandbox.write("tree/config.json", r#"{"v":2,"something":"new"}"#);
    let registry = file_url(&sandbox.path().join("tree"));
    let output = skillpkg(&sandbox, &["search", "pdf", "--registry", &registry]);
    assert_code(&output, 1);
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: file://[HOME]/tree/ uses index format version 2, which this version of skillpkg does not know
    hint: upgrade skillpkg to read this registry
    ");
}

#[test]
fn a_password_in_the_registry_url_is_never_printed() {
    let sandbox = TestContext::new();
    // Port 9 (discard) on loopback: nothing listens, the connection fails.
    let output = skillpkg(
        &sandbox,
        &[
            "info",
            "pdf",
            "--registry",
            "http://alice:s3cret@127.0.0.1:9/",
        ],
    );
    assert_code(&output, 3);
    insta::assert_snapshot!(sandbox.redact(&output.stderr), @"
    error: cannot reach http://****@127.0.0.1:9/config.json
      Caused by: error sending request
      Caused by: client error (Connect)
      Caused by: tcp connect error
      Caused by: Connection refused (os error 111)
    hint: check the registry URL and your network, and that the registry is running
    ");
    assert!(
        !output.stderr.contains("s3cret") && !output.stderr.contains("alice"),
        "{output:#?}"
    );
}
