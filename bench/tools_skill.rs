//! Validation cost of a skill with many tools: 20 tools, each with an input
//! and an output object schema of five properties and a script that exists.
//!
//! Run: `cargo run --release -p skillpkg-index --example tools-bench`
//!
//! Writes the skill into a temporary folder, then times `validate_skill` on
//! it (reading SKILL.md, parsing the frontmatter, checking every tool schema
//! against JSON Schema 2020-12, walking the folder, reading the scripts):
//! one untimed round to warm the page cache and the schemas compiled once,
//! then the median of the timed rounds. Target: under 5 ms.
#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use skillpkg_index::skill::{self, Severity, ValidateOptions};

const TOOLS: usize = 20;
const ROUNDS: usize = 201;
const TARGET: Duration = Duration::from_millis(5);

fn main() {
    let root = tempfile::tempdir().expect("a temporary folder");
    let dir = root.path().join("many-tools");
    write_skill(&dir);
    let options = ValidateOptions::for_folder(&dir);

    let report = skill::validate_skill(&dir, &options);
    let errors: Vec<_> = report
        .diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.severity == Severity::Error)
        .collect();
    assert!(
        errors.is_empty(),
        "the generated skill is valid: {errors:#?}"
    );
    let warnings: Vec<String> = report
        .diagnostics
        .iter()
        .map(|diagnostic| diagnostic.code.to_string())
        .collect();

    let mut times: Vec<Duration> = (0..ROUNDS)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(skill::validate_skill(&dir, &options));
            start.elapsed()
        })
        .collect();
    times.sort();
    let median = times[ROUNDS / 2];
    let milliseconds = |time: Duration| time.as_secs_f64() * 1e3;
    println!(
        "skill:     {TOOLS} tools, input and output schemas of 5 properties each, {} bytes of SKILL.md",
        fs_err::metadata(dir.join("SKILL.md"))
            .expect("SKILL.md")
            .len()
    );
    println!("warnings:  {}", warnings.join(", "));
    println!(
        "validate:  median {:.3} ms, fastest {:.3} ms, 90th percentile {:.3} ms ({ROUNDS} rounds)",
        milliseconds(median),
        milliseconds(times[0]),
        milliseconds(times[ROUNDS * 9 / 10]),
    );
    println!(
        "target:    under {} ms: {}",
        TARGET.as_millis(),
        if median < TARGET { "met" } else { "MISSED" }
    );
}

/// Writes the skill: SKILL.md with the tools in its frontmatter, and one
/// executable Python script per tool.
fn write_skill(dir: &Path) {
    let mut text = String::from(
        "---\nname: many-tools\ndescription: Twenty example tools. Use when measuring validation.\n\
         metadata:\n  version: \"1.0.0\"\npermissions:\n  network:\n    outbound: []\n\
         safety:\n  require_confirmation_for: [destructive_writes]\ntools:\n",
    );
    for index in 1..=TOOLS {
        let tool = format!("tool-{index:02}");
        let script = format!("scripts/tool_{index:02}.py");
        write!(
            text,
            "  - name: {tool}
    description: Example tool number {index}; reads a file and reports on it.
    input_schema:
      type: object
      additionalProperties: false
      properties:
        path: {{ type: string, description: The file to read. }}
        limit: {{ type: integer, minimum: 1, maximum: 1000 }}
        mode: {{ type: string, enum: [fast, thorough] }}
        tags: {{ type: array, items: {{ type: string }} }}
        dry_run: {{ type: boolean }}
      required: [path, limit, mode, tags, dry_run]
    output_schema:
      type: object
      additionalProperties: false
      properties:
        ok: {{ type: boolean }}
        summary: {{ type: string }}
        count: {{ type: integer, minimum: 0 }}
        warnings: {{ type: array, items: {{ type: string }} }}
        score: {{ type: [number, \"null\"] }}
      required: [ok, summary, count, warnings, score]
    implementation:
      runtime: python
      entrypoint: {script}
"
        )
        .expect("write to a string");
        let path = dir.join(&script);
        fs_err::create_dir_all(path.parent().expect("scripts/")).expect("create scripts/");
        fs_err::write(
            &path,
            "#!/usr/bin/env python3\nimport json, sys\njson.dump({\"ok\": True}, sys.stdout)\n",
        )
        .expect("write a script");
        set_executable(&path);
    }
    text.push_str("---\n# Many tools\n\nCall the tool that fits the file at hand.\n");
    fs_err::write(dir.join("SKILL.md"), text).expect("write SKILL.md");
}

#[cfg(unix)]
fn set_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    fs_err::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[cfg(not(unix))]
fn set_executable(_path: &Path) {}
