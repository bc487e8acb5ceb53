//! The audit against a set of malicious skills written for these tests
//! (`tests/fixtures/audit/malicious`: each must be caught by its rule, at
//! its severity or above) and a set of legitimate but tricky ones
//! (`tests/fixtures/audit/benign`: none may go above its allowed verdict),
//! and a set of evasive attacks (`tests/fixtures/audit/evasive`: strings
//! built in pieces, values that flow to where they run, code in files
//! read as prose, spread instructions, persistence and look-alikes),
//! each to be caught by one of its rules at its severity.

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

/// The evasive attacks not caught yet, each with the part of the plan in
/// docs/security.md ("Reading code") that is to catch it. The test fails
/// when one of them is caught (move it out of the list) or when any
/// other is missed.
const NOT_CAUGHT_YET: &[(&str, &str)] = &[];

#[test]
fn evasive_attacks_are_caught_by_one_of_their_rules() {
    let skills = audit("evasive");
    let expected = expectations("evasive");
    assert!(skills.len() >= 50, "the set has {} skills", skills.len());
    let mut misses = Vec::new();
    let mut newly_caught = Vec::new();
    for row in &expected {
        let (name, rules, severity) = (&row[0], &row[2], &row[3]);
        let caught = skills.get(name).is_some_and(|skill| {
            skill["findings"].as_array().unwrap().iter().any(|finding| {
                rules.split(',').any(|rule| finding["rule"] == rule)
                    && rank(finding["severity"].as_str().unwrap()) >= rank(severity)
            })
        });
        let known = NOT_CAUGHT_YET.iter().any(|(known, _)| known == name);
        match (caught, known) {
            (false, false) => misses.push(format!(
                "{name} ({}) not caught by {rules} at {severity}: {}",
                row[1],
                skills
                    .get(name)
                    .map_or(Value::Null, |skill| skill["findings"].clone())
            )),
            (true, true) => newly_caught.push(name.clone()),
            _ => {}
        }
    }
    assert!(misses.is_empty(), "missed:\n{}", misses.join("\n"));
    assert!(
        newly_caught.is_empty(),
        "caught now, take them out of NOT_CAUGHT_YET: {newly_caught:?}"
    );
    for name in skills.keys() {
        assert!(
            expected.iter().any(|row| &row[0] == name),
            "{name} has no line in expected.tsv"
        );
    }
}
