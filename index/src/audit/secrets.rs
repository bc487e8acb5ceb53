//! Hard-coded secrets: private keys, tokens in known formats, and random
//! values assigned to secret-sounding names.
//!
//! `validate` reports the same known formats as `possible-secret`
//! warnings through [`known_secrets`]: one table serves both.

use std::sync::LazyLock;

use regex::Regex;

use super::patterns::PatternSet;
use super::text::Scan;
use super::{Rule, Severity};

/// What each known secret format is, and its pattern.
const SECRETS: &[(&str, &str)] = &[
    (
        "an AWS access key ID",
        r"(?-u:\b)(?:AKIA|ASIA)[0-9A-Z]{16}(?-u:\b)",
    ),
    (
        "a GitHub token",
        r"(?-u:\b)gh[pousr]_[A-Za-z0-9]{36,}(?-u:\b)",
    ),
    (
        "a GitHub fine-grained token",
        r"(?-u:\b)github_pat_[A-Za-z0-9_]{60,}(?-u:\b)",
    ),
    (
        "a GitLab token",
        r"(?-u:\b)glpat-[A-Za-z0-9_-]{20,}(?-u:\b)",
    ),
    ("an Anthropic API key", r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{32,}"),
    // After the Anthropic pattern: `sk-ant-` keys are skipped here.
    (
        "an OpenAI API key",
        r"(?-u:\b)sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}",
    ),
    (
        "a Slack token",
        r"(?-u:\b)xox[abprs]-[A-Za-z0-9-]{10,}(?-u:\b)",
    ),
    ("a Google API key", r"(?-u:\b)AIza[0-9A-Za-z_-]{35}(?-u:\b)"),
    (
        "a Stripe secret key",
        r"(?-u:\b)[sr]k_live_[0-9A-Za-z]{24,}(?-u:\b)",
    ),
    ("an npm token", r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)"),
    (
        "a PyPI token",
        r"(?-u:\b)pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
    ),
    ("a Hugging Face token", r"(?-u:\b)hf_[A-Za-z]{34}(?-u:\b)"),
    (
        "a SendGrid API key",
        r"(?-u:\b)SG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?-u:\b)",
    ),
    (
        "a private key",
        // A header alone is documentation; a key has a base64 body. Keys
        // in JSON (service accounts) write their line ends as `\n`.
        r"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY(?: BLOCK)?-----(?:\r?\n|\\n)(?:[A-Za-z0-9-]+: .*\r?\n)*(?:\r?\n|\\n)?[A-Za-z0-9+/=]{40,}",
    ),
];

/// Every match of a [`SECRETS`] pattern begins with one of these (a test
/// checks it with the patterns' own prefix literals): a text that holds
/// none, as nearly every text, needs no automaton built, and a search for
/// a few literals is built in microseconds where the patterns' set takes a
/// millisecond or more, most of a one-skill `validate`.
const SECRET_PREFIXES: &[&str] = &[
    "AKIA",
    "ASIA",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "sk-",
    "xoxa-",
    "xoxb-",
    "xoxp-",
    "xoxr-",
    "xoxs-",
    "AIza",
    "sk_live_",
    "rk_live_",
    "npm_",
    "pypi-",
    "hf_",
    "SG.",
    "-----BEGIN ",
];

static ANY_PREFIX: LazyLock<aho_corasick::AhoCorasick> = LazyLock::new(|| {
    aho_corasick::AhoCorasick::new(SECRET_PREFIXES).expect("valid secret prefixes")
});

/// Every secret pattern, found through its prefix: nearly every text
/// holds no secret, and one pass says so.
static ANY_SECRET: LazyLock<PatternSet> =
    LazyLock::new(|| PatternSet::new(SECRETS.iter().map(|(_, pattern)| *pattern)));

/// A value assigned to a secret-sounding name: `API_KEY = "..."`,
/// `password: ...`, `"client_secret": "..."`.
static ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(?-u:\b)([a-z0-9_.-]*(?:key|token|secret|passw(?:or)?d|pwd|credentials?|auth)[a-z0-9_]*)["']?\s*(?::=|=|:)\s*["']?([^\s"'`,;#)<>{}]{16,})"#,
    )
    .expect("valid assignment pattern")
});

/// An AWS secret access key: 40 characters of base64's alphabet. Alone it
/// is any random string; it is reported next to a key id or an AWS name.
static AWS_SECRET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:^|[^A-Za-z0-9/+])([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)")
        .expect("valid AWS secret pattern")
});

/// Returns true for documentation placeholders such as AWS's `AKIAIOSFODNN7EXAMPLE`.
pub(crate) fn is_placeholder(found: &str) -> bool {
    let lowered = found.to_ascii_lowercase();
    lowered.contains("example")
        || lowered.contains("xxxx")
        || lowered.contains("your")
        || lowered.contains("0000000")
        || lowered.contains("dummy")
        || lowered.contains("placeholder")
        || lowered.contains("redacted")
}

/// Returns each known-format secret in `text`: what it is, and its bytes.
pub(crate) fn known_secrets(text: &str) -> Vec<(&'static str, usize, usize)> {
    if !ANY_PREFIX.is_match(text) {
        return Vec::new();
    }
    let mut found = Vec::new();
    for index in ANY_SECRET.matches(text) {
        let what = &SECRETS[index].0;
        for matched in ANY_SECRET.regex(index).find_iter(text) {
            let secret = matched.as_str();
            if is_placeholder(secret) || (what.contains("OpenAI") && secret.starts_with("sk-ant-"))
            {
                continue;
            }
            found.push((*what, matched.start(), matched.end()));
        }
    }
    found
}

/// Names that end in "key" without being secrets: keys of data.
fn is_data_key(name: &str) -> bool {
    const DATA: &[&str] = &[
        "partition",
        "row",
        "sort",
        "primary",
        "foreign",
        "cache",
        "idempotency",
        "lookup",
        "hash",
        "map",
        "dict",
        "unique",
        "composite",
        "shard",
        "routing",
        "object",
        "s3",
        "file",
        "public",
        "pub",
        "range",
        "cluster",
        "index",
        "dedup",
        "group",
        "label",
        "i18n",
        "translation",
    ];
    let lowered = name.to_ascii_lowercase().replace(['_', '-', '.'], "");
    DATA.iter()
        .any(|data| lowered.starts_with(data) && lowered.ends_with("key"))
}

/// Returns true for a UUID, an identifier rather than a secret.
fn is_uuid(value: &str) -> bool {
    let parts: Vec<&str> = value.split('-').collect();
    parts.len() == 5
        && parts.iter().map(|part| part.len()).eq([8, 4, 4, 4, 12])
        && parts
            .iter()
            .all(|part| part.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Shannon entropy of `value` in bits per character.
fn entropy(value: &str) -> f64 {
    let mut counts = [0u32; 256];
    for byte in value.bytes() {
        counts[usize::from(byte)] += 1;
    }
    let length = value.len() as f64;
    counts
        .iter()
        .filter(|&&count| count > 0)
        .map(|&count| {
            let p = f64::from(count) / length;
            -p * p.log2()
        })
        .sum()
}

/// Returns true for values that look random: long, varied, mixing
/// character classes, and not a word, path, URL or variable reference.
fn looks_random(value: &str) -> bool {
    if value.len() < 16 || is_placeholder(value) {
        return false;
    }
    let classes = [
        value.bytes().any(|b| b.is_ascii_lowercase()),
        value.bytes().any(|b| b.is_ascii_uppercase()),
        value.bytes().any(|b| b.is_ascii_digit()),
    ]
    .into_iter()
    .filter(|&has| has)
    .count();
    let reference = value.contains('$')
        || value.contains("://")
        || value.contains('/') && !value.contains('+')
        || value.contains('(')
        || value.contains('.') && value.chars().filter(|&c| c == '.').count() > 1
        || value.starts_with("process.env")
        || value.starts_with("os.environ");
    !reference && classes >= 2 && value.bytes().any(|b| b.is_ascii_digit()) && entropy(value) >= 3.5
}

/// Returns true for 40 characters that look like an AWS secret access
/// key. AWS draws them from base64's alphabet, so `/` and `+` are as
/// common in them as any letter (about half of all keys hold a `/`):
/// unlike [`looks_random`], a slash does not make a value a path here,
/// though five or more do: about three keys in ten thousand hold as many.
fn looks_like_aws_secret(value: &str) -> bool {
    let classes = [
        value.bytes().any(|b| b.is_ascii_lowercase()),
        value.bytes().any(|b| b.is_ascii_uppercase()),
        value.bytes().any(|b| b.is_ascii_digit()),
    ]
    .into_iter()
    .filter(|&has| has)
    .count();
    !is_placeholder(value)
        && value.bytes().filter(|&b| b == b'/').count() <= 4
        && classes >= 2
        && value.bytes().any(|b| b.is_ascii_digit())
        && entropy(value) >= 3.5
}

/// Reports private keys, known tokens and secret assignments.
pub(crate) fn scan(scan: &mut Scan<'_>) {
    let text = scan.text;
    let known = known_secrets(text);
    let mut taken: Vec<(usize, usize)> = Vec::new();
    let mut aws_lines = Vec::new();
    for (what, start, end) in known {
        let rule = if what == "a private key" {
            Rule::PrivateKey
        } else {
            Rule::Credential
        };
        if what == "an AWS access key ID" {
            aws_lines.push(start);
        }
        // Cut a multi-line key to its first line for the report.
        let end = text[start..end]
            .find(['\n', '\r'])
            .map_or(end, |i| start + i);
        scan.report_masked(
            rule,
            Severity::High,
            start,
            end,
            format!("this looks like {what}"),
            true,
        );
        taken.push((start, end));
    }
    // AWS secret keys: on a line that names AWS or a secret, or within
    // three lines of an access key id.
    if text.contains("AKIA") || text.contains("ASIA") || text.to_ascii_lowercase().contains("aws") {
        let key_lines: Vec<usize> = aws_lines.iter().map(|&at| scan.line_of(at)).collect();
        let lines: Vec<(usize, usize, &str)> = scan.lines().collect();
        for (number, line_start, line) in lines {
            let lowered = line.to_ascii_lowercase();
            let named = lowered.contains("aws") && lowered.contains("secret");
            let near_key = key_lines.iter().any(|&key| key.abs_diff(number) <= 3);
            if !(named || near_key) {
                continue;
            }
            for captures in AWS_SECRET.captures_iter(line) {
                let found = captures.get(1).expect("group 1");
                let start = line_start + found.start();
                if taken
                    .iter()
                    .any(|&(from, to)| start < to && from < start + 40)
                    || !looks_like_aws_secret(found.as_str())
                {
                    continue;
                }
                scan.report_masked(
                    Rule::Credential,
                    Severity::High,
                    start,
                    start + 40,
                    "this looks like an AWS secret access key",
                    true,
                );
                taken.push((start, start + 40));
            }
        }
    }
    for captures in ASSIGNMENT.captures_iter(text) {
        let (name, value) = (
            captures.get(1).expect("name"),
            captures.get(2).expect("value"),
        );
        if taken
            .iter()
            .any(|&(from, to)| value.start() < to && from < value.end())
            || is_data_key(name.as_str())
            || is_uuid(value.as_str())
            || !looks_random(value.as_str())
        {
            continue;
        }
        scan.report_masked(
            Rule::SecretAssignment,
            Severity::Medium,
            value.start(),
            value.end(),
            format!("`{}` is assigned a random-looking value", name.as_str()),
            true,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::text::FileKind;
    use super::*;

    /// The prefilter is sound: every literal a match of a pattern can
    /// begin with, as regex-syntax extracts them, starts with a listed
    /// prefix. A pattern added without its prefix fails here.
    #[test]
    fn every_secret_pattern_begins_with_a_listed_prefix() {
        use regex_syntax::hir::literal::Extractor;
        for (what, pattern) in SECRETS {
            let hir = regex_syntax::parse(pattern).unwrap();
            let prefixes = Extractor::new().extract(&hir);
            let literals = prefixes
                .literals()
                .unwrap_or_else(|| panic!("{what}: no finite set of prefix literals"));
            assert!(!literals.is_empty(), "{what}: no prefix literal");
            for literal in literals {
                assert!(
                    SECRET_PREFIXES
                        .iter()
                        .any(|prefix| literal.as_bytes().starts_with(prefix.as_bytes())),
                    "{what}: a match can begin with {:?}, which no listed prefix begins",
                    String::from_utf8_lossy(literal.as_bytes())
                );
            }
        }
        // And the check itself can fail: a pattern with a prefix of its own.
        let hir = regex_syntax::parse(r"(?-u:\b)zz_[a-z]{8}").unwrap();
        let seq = Extractor::new().extract(&hir);
        assert!(seq.literals().unwrap().iter().all(|literal| {
            !SECRET_PREFIXES
                .iter()
                .any(|prefix| literal.as_bytes().starts_with(prefix.as_bytes()))
        }));
    }

    #[test]
    fn a_text_without_a_prefix_holds_no_known_secret() {
        assert!(known_secrets("token = ghp_").is_empty());
        let token = format!("ghp_{}", "a1B2".repeat(9));
        assert_eq!(known_secrets(&format!("token = {token}")).len(), 1);
    }

    fn findings(text: &str) -> Vec<(Rule, String)> {
        let mut scan = Scan::new("config.py", text, FileKind::Script);
        super::scan(&mut scan);
        scan.findings
            .iter()
            .map(|f| (f.rule, f.excerpt.as_ref().unwrap().text.clone()))
            .collect()
    }

    #[test]
    fn finds_an_aws_secret_key_next_to_its_key_id_and_masks_both() {
        let found = findings(
            "AWS_ACCESS_KEY_ID=AKIAQ3EGRQXJ5TLVKW7P\nAWS_SECRET_ACCESS_KEY=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\n",
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found.iter().all(|(rule, _)| *rule == Rule::Credential));
        assert!(found[1].1.contains("q9Zc8V**"), "{found:?}");
        assert!(!found.iter().any(|(_, excerpt)| excerpt.contains("Lm")));
    }

    /// About half of real AWS secret keys hold a `/`; the rule once took
    /// every one of them for a path.
    #[test]
    fn finds_an_aws_secret_key_holding_a_slash() {
        let found = findings(
            "AWS_ACCESS_KEY_ID=AKIAQ3EGRQXJ5TLVKW7P\nAWS_SECRET_ACCESS_KEY=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\n",
        );
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[1].1.contains("q9Zc8V**"), "{found:?}");
        // Without a key id, a line that names AWS and a secret.
        let found = findings("aws_secret_access_key = wJalrXUt/K7MDENG/bPxRfiCY3q8Lz0Vb2Nd4Hs1\n");
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, Rule::Credential);
        // A path is not a key, nor AWS's documentation key.
        assert!(findings("aws_secret_dir = /Users/alice2/Work/aws/Secrets/v1/Key9ab\n").is_empty());
        assert!(
            findings("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n")
                .is_empty()
        );
    }

    #[test]
    fn finds_assignments_of_random_values_but_not_placeholders_or_references() {
        assert_eq!(
            findings("API_TOKEN = \"Zx81kQp0Lr7vNw3tYb5M\"")
                .first()
                .map(|f| f.0),
            Some(Rule::SecretAssignment)
        );
        assert!(findings("API_TOKEN = os.environ[\"API_TOKEN\"]\npassword: <your-password-here>\nSECRET_KEY=changeme-in-production").is_empty());
        assert!(findings("partitionKey: \"tenantZx81kQp0Lr7vNw3tYb5M\"\nrowKey: 6ba7b810-9dad-11d1-80b4-00c04fd430c8").is_empty());
        assert!(
            findings("max_tokens: 4096\ntoken_url: https://example.com/oauth/token").is_empty()
        );
    }

    #[test]
    fn finds_private_keys_in_pem_and_in_json() {
        let body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7";
        let pem = format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n");
        let json = format!("{{\"private_key\": \"-----BEGIN PRIVATE KEY-----\\n{body}\\n\"}}");
        assert_eq!(findings(&pem)[0].0, Rule::PrivateKey);
        assert_eq!(findings(&json)[0].0, Rule::PrivateKey);
        assert!(findings("-----BEGIN PRIVATE KEY-----\n...\n").is_empty());
    }
}
