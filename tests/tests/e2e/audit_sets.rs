//! The audit against a set of malicious skills written for these tests
//! (`tests/fixtures/audit/malicious`: each must be caught by its rule, at
//! its severity or above) and a set of legitimate but tricky ones
//! (`tests/fixtures/audit/benign`: none may go above its allowed verdict).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use skillpkg_tests::TestContext;

fn fixtures(set: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/audit")
        .join(set)
}

fn rank(severity: &str) -> i32 {
    match severity {
        "clean" => -1,
        "info" => 0,
        "low" => 1,
        "medium" => 2,
        "high" => 3,
        other => panic!("unknown severity `{other}`"),
    }
}

/// Audits a set and returns each skill's report by folder name.
fn audit(set: &str) -> BTreeMap<String, Value> {
    let cx = TestContext::new();
    let dir = fixtures(set);
    let output = cx.skillpkg([
        std::ffi::OsStr::new("audit"),
        dir.as_os_str(),
        "--json".as_ref(),
    ]);
    assert!(output.code <= 1, "{}", output.stderr);
    output.json()["skills"]
        .as_array()
        .expect("skills")
        .iter()
        .map(|skill| {
            let path = skill["path"].as_str().unwrap();
            (path.rsplit('/').next().unwrap().to_owned(), skill.clone())
        })
        .collect()
}

fn expectations(set: &str) -> Vec<Vec<String>> {
    fs_err::read_to_string(fixtures(set).join("expected.tsv"))
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| line.split('\t').map(str::to_owned).collect())
        .collect()
}

#[test]
fn every_malicious_skill_is_caught_by_its_rule_at_its_severity() {
    let skills = audit("malicious");
    let expected = expectations("malicious");
    assert!(skills.len() >= 40, "the set has {} skills", skills.len());
    let misses: Vec<String> = expected
        .iter()
        .filter(|row| {
            let (name, rule, severity) = (&row[0], &row[1], &row[2]);
            !skills.get(name).is_some_and(|skill| {
                skill["findings"].as_array().unwrap().iter().any(|finding| {
                    finding["rule"] == rule.as_str()
                        && rank(finding["severity"].as_str().unwrap()) >= rank(severity)
                })
            })
        })
        .map(|row| format!("{} not caught by {} at {}", row[0], row[1], row[2]))
        .collect();
    assert!(misses.is_empty(), "missed:\n{}", misses.join("\n"));
    // Every skill of the set has an expectation.
    for name in skills.keys() {
        assert!(
            expected.iter().any(|row| &row[0] == name),
            "{name} has no line in expected.tsv"
        );
    }
}

#[test]
fn no_benign_skill_goes_above_its_allowed_verdict() {
    let skills = audit("benign");
    let too_high: Vec<String> = expectations("benign")
        .iter()
        .filter_map(|row| {
            let verdict = skills[&row[0]]["verdict"].as_str().unwrap();
            (rank(verdict) > rank(&row[1])).then(|| {
                format!(
                    "{} is {verdict}, at most {} expected: {}",
                    row[0], row[1], skills[&row[0]]["findings"]
                )
            })
        })
        .collect();
    assert!(too_high.is_empty(), "{}", too_high.join("\n"));
}
