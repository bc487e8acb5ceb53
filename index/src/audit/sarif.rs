//! SARIF 2.1.0, the format GitHub code scanning and other tools read.
//!
//! One run with every rule in the tool's driver, one result per finding,
//! suppressed findings as results with an external suppression and its
//! justification (suppressions are never silent), and the files not
//! scanned as notifications of the invocation.

use serde_json::{Value, json};

use super::{Finding, Rule, Severity, SkillAudit};

/// The SARIF level of a severity.
fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::High => "error",
        Severity::Medium => "warning",
        Severity::Low | Severity::Info => "note",
    }
}

/// GitHub's `security-severity`: a CVSS-like score it maps to critical,
/// high, medium and low.
fn security_severity(severity: Severity) -> &'static str {
    match severity {
        Severity::High => "8.0",
        Severity::Medium => "5.0",
        Severity::Low => "2.0",
        Severity::Info => "0.0",
    }
}

/// Returns the PascalCase name SARIF viewers show for a rule.
fn rule_name(rule: Rule) -> String {
    rule.id()
        .split('-')
        .map(|word| {
            let mut characters = word.chars();
            characters
                .next()
                .map(|first| first.to_ascii_uppercase().to_string() + characters.as_str())
                .unwrap_or_default()
        })
        .collect()
}

fn rule_json(rule: Rule) -> Value {
    let mut json = json!({
        "id": rule.id(),
        "shortDescription": { "text": capitalise(rule.title()) },
        "fullDescription": { "text": capitalise(rule.why()) },
        "help": {
            "text": format!("{} Fix: {}", capitalise(rule.why()), rule.fix()),
            "markdown": format!("{}\n\n**Fix:** {}", capitalise(rule.why()), rule.fix()),
        },
        "helpUri": format!("https://github.com/skillpkg/skillpkg/blob/main/docs/security.md#{}", rule.id()),
        "defaultConfiguration": { "level": level(rule.default_severity()) },
        "properties": {
            "tags": ["security"],
            "security-severity": security_severity(rule.default_severity()),
        },
    });
    // SARIF wants a name only where it differs from the id, and viewers
    // compare the two ignoring case.
    if rule.id().contains('-') {
        json["name"] = rule_name(rule).into();
    }
    json
}

fn capitalise(text: &str) -> String {
    let mut characters = text.chars();
    let mut sentence = characters
        .next()
        .map(|first| first.to_uppercase().collect::<String>() + characters.as_str())
        .unwrap_or_default();
    if !sentence.ends_with('.') {
        sentence.push('.');
    }
    sentence
}

/// Joins a skill's location and a file inside it into a URI: relative
/// when the skill was given by a relative path, `file://` when absolute.
fn uri(base: &str, file: &str) -> String {
    let base = base.trim_end_matches('/');
    let (scheme, base) = match base.strip_prefix('/') {
        Some(rest) => ("file:///", rest),
        None => ("", base),
    };
    let joined = if base.is_empty() || base == "." {
        file.to_owned()
    } else {
        format!("{base}/{file}")
    };
    // A URI reference: percent-encode what RFC 3986 does not allow.
    let mut encoded = scheme.to_owned();
    for byte in joined.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

fn result_json(base: &str, finding: &Finding) -> Value {
    let mut region = serde_json::Map::new();
    if let (Some(line), Some(column), Some(end_column)) =
        (finding.line, finding.column, finding.end_column)
    {
        region.insert("startLine".into(), line.into());
        region.insert("startColumn".into(), column.into());
        region.insert("endColumn".into(), end_column.max(column + 1).into());
        if let Some(excerpt) = &finding.excerpt {
            region.insert("snippet".into(), json!({ "text": excerpt.text }));
        }
    }
    let mut location = json!({
        "physicalLocation": {
            "artifactLocation": { "uri": uri(base, &finding.file) },
        }
    });
    if !region.is_empty() {
        location["physicalLocation"]["region"] = Value::Object(region);
    }
    json!({
        "ruleId": finding.rule.id(),
        "ruleIndex": Rule::ALL.iter().position(|rule| *rule == finding.rule).unwrap_or(0),
        "level": level(finding.severity),
        "message": { "text": format!("{}: {}", capitalise(&finding.message).trim_end_matches('.'), finding.rule.why()) },
        "locations": [location],
        "partialFingerprints": {
            "skillpkgFinding/v1": format!("{}:{}:{}", finding.rule.id(), uri(base, &finding.file), finding.excerpt.as_ref().map_or("", |excerpt| excerpt.text.as_str())),
        },
        "properties": { "severity": finding.severity.as_str() },
    })
}

/// Renders the audits of several skills, each with the path its files
/// are relative to, as one SARIF log.
pub fn to_sarif(audits: &[(String, &SkillAudit)], version: &str) -> Value {
    let mut results = Vec::new();
    let mut notifications = Vec::new();
    for (base, audit) in audits {
        for finding in &audit.findings {
            results.push(result_json(base, finding));
        }
        for suppressed in &audit.suppressed {
            let mut result = result_json(base, &suppressed.finding);
            result["suppressions"] = json!([{
                "kind": "external",
                "status": "accepted",
                "justification": suppressed.reason,
            }]);
            results.push(result);
        }
        for skipped in &audit.not_scanned {
            notifications.push(json!({
                "level": "note",
                "message": { "text": format!("{} was not fully scanned: {}", uri(base, &skipped.file), skipped.reason) },
                "locations": [{ "physicalLocation": { "artifactLocation": { "uri": uri(base, &skipped.file) } } }],
            }));
        }
    }
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "skillpkg-audit",
                    "semanticVersion": version,
                    "informationUri": "https://github.com/skillpkg/skillpkg/blob/main/docs/security.md",
                    "rules": Rule::ALL.iter().map(|rule| rule_json(*rule)).collect::<Vec<_>>(),
                }
            },
            "invocations": [{
                "executionSuccessful": true,
                "toolExecutionNotifications": notifications,
            }],
            "results": results,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_uris() {
        assert_eq!(rule_name(Rule::DownloadExec), "DownloadExec");
        assert_eq!(
            uri("skills/a b", "scripts/x.sh"),
            "skills/a%20b/scripts/x.sh"
        );
        assert_eq!(uri(".", "SKILL.md"), "SKILL.md");
        assert_eq!(uri("/tmp/x", "SKILL.md"), "file:///tmp/x/SKILL.md");
    }
}
