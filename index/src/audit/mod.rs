//! The content audit: what a skill's files tell an agent to do, and what
//! its programs do, judged by rules with stable ids and severities.
//!
//! [`audit_folder`] reads every file of a skill folder (as it would be
//! packed: `.skillignore` applies) and returns a [`SkillAudit`]: findings
//! with a rule, a severity, a place and an excerpt that is safe to print
//! (hidden characters spelled out, secrets masked), plus the files it did
//! not scan and why. The same call judges at the three doors: `skillpkg
//! audit`, the registry at publish, and the client at install; so a
//! verdict means the same everywhere. The audit reads; it never runs
//! anything and never follows a link.
//!
//! The rules are in [`rules`]; `docs/security.md` lists each with an
//! example, the conditions of its severity, and how to suppress it.

mod behaviour;
mod files;
mod frontmatter;
mod instructions;
pub mod rules;
pub mod sarif;
mod secrets;
mod text;
mod unicode;

use std::collections::BTreeSet;
use std::io::Read as _;
use std::path::{Path, PathBuf};

pub use rules::{Rule, Severity};
pub(crate) use secrets::known_secrets;
pub use text::Excerpt;

use crate::archive::walk::{self, EntryKind, WalkError};
use crate::skill::{Host, SKILL_MD};
use text::{FileKind, Scan};

/// How much of one file is scanned; the rest is reported as not scanned.
pub const MAX_FILE_SCAN: u64 = 1024 * 1024;

/// How much of one skill is scanned, over all its files.
pub const MAX_SKILL_SCAN: u64 = 16 * 1024 * 1024;

/// One thing the audit found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    pub rule: Rule,
    /// The rule's default severity, or another its conditions set.
    pub severity: Severity,
    /// The file, relative to the skill's folder, `/`-separated.
    pub file: String,
    /// 1-based line, when the finding has a place in a text.
    pub line: Option<usize>,
    /// 1-based column in characters.
    pub column: Option<usize>,
    /// Exclusive end column on the same line.
    pub end_column: Option<usize>,
    /// The line, safe to print.
    pub excerpt: Option<Excerpt>,
    /// What was found, in one sentence.
    pub message: String,
}

impl serde::Serialize for Finding {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap as _;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("rule", &self.rule)?;
        map.serialize_entry("severity", &self.severity)?;
        map.serialize_entry("file", &self.file)?;
        if let (Some(line), Some(column), Some(end_column)) =
            (self.line, self.column, self.end_column)
        {
            map.serialize_entry("line", &line)?;
            map.serialize_entry("column", &column)?;
            map.serialize_entry("end_column", &end_column)?;
        }
        if let Some(excerpt) = &self.excerpt {
            map.serialize_entry("excerpt", &excerpt.text)?;
        }
        map.serialize_entry("message", &self.message)?;
        map.serialize_entry("why", self.rule.why())?;
        map.serialize_entry("fix", self.rule.fix())?;
        map.end()
    }
}

/// A finding an `[audit] allow` entry accepted, with its reason.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Suppressed {
    #[serde(flatten)]
    pub finding: Finding,
    pub reason: String,
}

/// A file that was not scanned, or only in part, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NotScanned {
    pub file: String,
    pub reason: String,
}

/// An accepted finding: a rule, for one skill or all, for one path (a
/// glob) or all, with the reason the user gave.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Allow {
    pub rule: Rule,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skill: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub reason: String,
}

impl Allow {
    /// Returns an error naming what is wrong with the entry: an empty
    /// reason, or a path that is not a glob.
    pub fn check(&self) -> Result<(), String> {
        if self.reason.trim().is_empty() {
            return Err(format!(
                "the `[audit] allow` entry for `{}` has an empty `reason`; say why the finding is accepted",
                self.rule
            ));
        }
        if let Some(path) = &self.path {
            globset::Glob::new(path).map_err(|error| {
                format!("the `[audit] allow` path `{path}` is not a valid glob: {error}")
            })?;
        }
        Ok(())
    }

    fn matches(&self, skill: Option<&str>, finding: &Finding) -> bool {
        if self.rule != finding.rule {
            return false;
        }
        if let Some(wanted) = &self.skill
            && skill != Some(wanted.as_str())
        {
            return false;
        }
        match &self.path {
            None => true,
            Some(path) => {
                path == &finding.file
                    || globset::Glob::new(path)
                        .map(|glob| glob.compile_matcher().is_match(&finding.file))
                        .unwrap_or(false)
            }
        }
    }
}

/// The worst severity found, or clean.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    Clean,
    Found(Severity),
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Clean => "clean",
            Self::Found(severity) => severity.as_str(),
        }
    }

    /// Returns true if and only if the verdict is at or above `severity`.
    pub fn reaches(self, severity: Severity) -> bool {
        matches!(self, Self::Found(found) if found >= severity)
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Verdict {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <String as serde::Deserialize>::deserialize(deserializer)?;
        if text == "clean" {
            return Ok(Self::Clean);
        }
        text.parse()
            .map(Self::Found)
            .map_err(serde::de::Error::custom)
    }
}

/// What an index record and `skills.lock` keep of an audit: the verdict
/// and the ids of the rules found, enough for a review diff to show a
/// change and for a client to decide before downloading.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub verdict: Verdict,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<String>,
}

/// The audit of one skill.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SkillAudit {
    /// The `name` of its SKILL.md, when it has one.
    pub name: Option<String>,
    pub findings: Vec<Finding>,
    pub suppressed: Vec<Suppressed>,
    pub not_scanned: Vec<NotScanned>,
    /// Files read, and bytes scanned over all of them.
    pub files: usize,
    pub bytes: u64,
}

impl SkillAudit {
    /// Returns the worst severity among the findings not suppressed.
    pub fn verdict(&self) -> Verdict {
        self.findings
            .iter()
            .map(|finding| finding.severity)
            .max()
            .map_or(Verdict::Clean, Verdict::Found)
    }

    /// Returns the verdict and the ids of the rules found, for records.
    pub fn summary(&self) -> Summary {
        let rules: BTreeSet<&str> = self
            .findings
            .iter()
            .map(|finding| finding.rule.id())
            .collect();
        Summary {
            verdict: self.verdict(),
            rules: rules.into_iter().map(str::to_owned).collect(),
        }
    }

    /// Moves the findings an entry of `allows` accepts into `suppressed`,
    /// with the entry's reason. `skill` is the name allows are matched on.
    pub fn suppress(&mut self, skill: Option<&str>, allows: &[Allow]) {
        let (kept, accepted): (Vec<Finding>, Vec<Finding>) = std::mem::take(&mut self.findings)
            .into_iter()
            .partition(|finding| !allows.iter().any(|allow| allow.matches(skill, finding)));
        self.findings = kept;
        for finding in accepted {
            let reason = allows
                .iter()
                .find(|allow| allow.matches(skill, &finding))
                .map(|allow| allow.reason.clone())
                .unwrap_or_default();
            self.suppressed.push(Suppressed { finding, reason });
        }
    }

    /// Counts the findings at each severity, least first.
    pub fn counts(&self) -> [usize; 4] {
        let mut counts = [0; 4];
        for finding in &self.findings {
            counts[finding.severity as usize] += 1;
        }
        counts
    }
}

/// What the audit is asked to take into account.
#[derive(Clone, Copy, Debug, Default)]
pub struct AuditOptions {
    /// The host profile whose rules apply (`network-forbidden-by-host`).
    pub host: Option<Host>,
}

/// Why a folder could not be audited at all.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error(transparent)]
    Walk(#[from] WalkError),
}

/// Audits the skill in `root`.
pub fn audit_folder(root: &Path, options: &AuditOptions) -> Result<SkillAudit, AuditError> {
    let entries = walk::walk(root)?;
    let mut audit = SkillAudit::default();
    let subject = subject_of(root);
    for entry in &entries {
        match entry.kind {
            EntryKind::Directory => {}
            EntryKind::Symlink => {
                let target = std::fs::read_link(root.join(&entry.path))
                    .map(|target| target.display().to_string())
                    .unwrap_or_else(|_| "?".to_owned());
                audit.findings.push(files::whole_file(
                    Rule::Symlink,
                    Severity::Low,
                    &entry.path,
                    format!("a symbolic link to `{target}`, not followed"),
                ));
            }
            EntryKind::Special => audit.not_scanned.push(NotScanned {
                file: entry.path.clone(),
                reason: "a socket, FIFO or device, not a file".to_owned(),
            }),
            EntryKind::File { size, .. } => {
                let path = root.join(&entry.path);
                if audit.bytes >= MAX_SKILL_SCAN {
                    audit.not_scanned.push(NotScanned {
                        file: entry.path.clone(),
                        reason: format!(
                            "the skill's scan budget of {} MiB was used up",
                            MAX_SKILL_SCAN >> 20
                        ),
                    });
                    continue;
                }
                let cap = MAX_FILE_SCAN.min(MAX_SKILL_SCAN - audit.bytes);
                match read_prefix(&path, cap) {
                    Ok(bytes) => {
                        audit.files += 1;
                        audit.bytes += bytes.len() as u64;
                        let truncated = size > bytes.len() as u64;
                        audit_bytes(
                            &entry.path,
                            &bytes,
                            truncated,
                            options,
                            &subject,
                            &mut audit,
                        );
                    }
                    Err(error) => audit.not_scanned.push(NotScanned {
                        file: entry.path.clone(),
                        reason: format!("cannot be read: {error}"),
                    }),
                }
            }
        }
    }
    audit.findings.sort_by(|a, b| {
        (&a.file, a.line, a.column, a.rule).cmp(&(&b.file, b.line, b.column, b.rule))
    });
    Ok(audit)
}

/// Reads at most `cap` bytes of the file at `path`.
fn read_prefix(path: &PathBuf, cap: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    fs_err::File::open(path)?
        .take(cap)
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

const SCRIPT_EXTENSIONS: &[&str] = &[
    "py",
    "sh",
    "bash",
    "zsh",
    "ksh",
    "fish",
    "js",
    "mjs",
    "cjs",
    "ts",
    "mts",
    "cts",
    "rb",
    "pl",
    "php",
    "lua",
    "r",
    "tcl",
    "awk",
    "swift",
    "kts",
    "groovy",
    "jl",
    "exs",
    "nu",
    "ps1",
    "psm1",
    "bat",
    "cmd",
    "vbs",
    "applescript",
    "scpt",
    "go",
    "rs",
    "java",
    "cs",
];

const DOCUMENT_EXTENSIONS: &[&str] = &["md", "markdown", "mdx", "txt", "rst", "adoc", "org"];

fn kind_of(path: &str, text: &str) -> FileKind {
    let file_name = path.rsplit('/').next().unwrap_or(path);
    let extension = file_name
        .rsplit_once('.')
        .map(|(_, extension)| extension.to_ascii_lowercase());
    let has = |list: &[&str]| {
        extension
            .as_deref()
            .is_some_and(|extension| list.contains(&extension))
    };
    if file_name.eq_ignore_ascii_case(SKILL_MD) && !path.contains('/') {
        FileKind::SkillMd
    } else if text.starts_with("#!")
        || has(SCRIPT_EXTENSIONS)
        || path.starts_with("scripts/") && !has(DOCUMENT_EXTENSIONS)
    {
        FileKind::Script
    } else if has(DOCUMENT_EXTENSIONS) || path.starts_with("references/") {
        FileKind::Document
    } else {
        FileKind::Other
    }
}

/// Audits one file's (first) bytes into `audit`.
fn audit_bytes(
    path: &str,
    bytes: &[u8],
    truncated: bool,
    options: &AuditOptions,
    subject: &[String],
    audit: &mut SkillAudit,
) {
    if let Some((rule, what)) = files::sniff(bytes) {
        audit.findings.push(files::whole_file(
            rule,
            rule.default_severity(),
            path,
            what.to_owned(),
        ));
        return;
    }
    let head = &bytes[..bytes.len().min(8192)];
    if memchr::memchr(0, head).is_some() {
        audit.not_scanned.push(NotScanned {
            file: path.to_owned(),
            reason: "binary data".to_owned(),
        });
        return;
    }
    let mut bytes = bytes;
    if truncated {
        // Cut at the last line end, so no character or line is half read.
        if let Some(end) = memchr::memrchr(b'\n', bytes) {
            bytes = &bytes[..=end];
        }
        audit.not_scanned.push(NotScanned {
            file: path.to_owned(),
            reason: format!(
                "larger than {} MiB: only its first {} bytes were scanned",
                MAX_FILE_SCAN >> 20,
                bytes.len()
            ),
        });
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => {
            audit.not_scanned.push(NotScanned {
                file: path.to_owned(),
                reason: "not valid UTF-8: scanned with U+FFFD in place of each bad byte".to_owned(),
            });
            String::from_utf8_lossy(bytes)
        }
    };
    let kind = kind_of(path, &text);
    let document = (kind == FileKind::SkillMd)
        .then(|| crate::skill::document::parse(text.as_bytes()).ok())
        .flatten();
    if let Some(document) = &document
        && let Some((_, name)) = document.get("name")
        && let Some(name) = name.value.as_str()
    {
        audit.name = Some(name.to_owned());
    }
    let scanned = document
        .as_ref()
        .map_or(&*text, |document| document.text.as_str());
    let mut scan = Scan::new(path, scanned, kind);
    scan.subject = subject.to_vec();
    unicode::scan(&mut scan);
    secrets::scan(&mut scan);
    behaviour::scan(&mut scan);
    instructions::scan(&mut scan);
    if let Some(document) = &document {
        frontmatter::scan(&mut scan, document, options.host);
    }
    if kind == FileKind::Script {
        files::scan_script(&mut scan);
    }
    audit.findings.append(&mut scan.findings);
}

/// The lower-case words of four letters or more in the skill's `name`
/// and `description`: what the skill is about, which tells the site of its
/// own tool from any other (see `download-exec`).
fn subject_of(root: &Path) -> Vec<String> {
    let Ok(bytes) = read_prefix(&root.join(SKILL_MD), MAX_FILE_SCAN) else {
        return Vec::new();
    };
    let Ok(document) = crate::skill::document::parse(&bytes) else {
        return Vec::new();
    };
    let mut words: Vec<String> = ["name", "description"]
        .iter()
        .filter_map(|key| {
            document
                .get(key)
                .and_then(|(_, value)| value.value.as_str().map(str::to_owned))
        })
        .flat_map(|text| {
            text.split(|c: char| !c.is_alphanumeric())
                .filter(|word| word.len() >= 4)
                .map(str::to_lowercase)
                .collect::<Vec<_>>()
        })
        .collect();
    words.sort();
    words.dedup();
    words
}

/// Compiles patterns into one set whose lazy DFA gets room to grow: the
/// sets are unions of many case-insensitive patterns, and at the default
/// cache size they spent most of a corpus run rebuilding their states.
pub(crate) fn large_set<'a>(patterns: impl IntoIterator<Item = &'a str>) -> regex::RegexSet {
    regex::RegexSetBuilder::new(patterns)
        .dfa_size_limit(64 << 20)
        .build()
        .expect("valid audit patterns")
}

/// Returns every skill folder at or below `path`: the folder itself when
/// it holds a SKILL.md, else the folders below it that do.
pub fn skill_folders(path: &Path) -> std::io::Result<Vec<PathBuf>> {
    if path.join(SKILL_MD).is_file() {
        return Ok(vec![path.to_owned()]);
    }
    crate::skill::discover_skills(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suppression_needs_the_same_rule_and_a_matching_path() {
        let mut audit = SkillAudit {
            findings: vec![
                files::whole_file(
                    Rule::Credential,
                    Severity::High,
                    "references/aws.md",
                    String::new(),
                ),
                files::whole_file(
                    Rule::Credential,
                    Severity::High,
                    "scripts/run.py",
                    String::new(),
                ),
                files::whole_file(
                    Rule::UnrestrictedShell,
                    Severity::Medium,
                    "SKILL.md",
                    String::new(),
                ),
            ],
            ..SkillAudit::default()
        };
        let allows = [Allow {
            rule: Rule::Credential,
            skill: Some("aws-docs".into()),
            path: Some("references/*.md".into()),
            reason: "documentation keys".into(),
        }];
        audit.suppress(Some("other"), &allows);
        assert!(audit.suppressed.is_empty());
        audit.suppress(Some("aws-docs"), &allows);
        assert_eq!(audit.suppressed.len(), 1);
        assert_eq!(audit.suppressed[0].finding.file, "references/aws.md");
        assert_eq!(audit.verdict(), Verdict::Found(Severity::High));
        assert_eq!(audit.summary().rules, ["credential", "unrestricted-shell"]);
    }

    #[test]
    fn verdicts_read_back_and_order() {
        let summary: Summary = serde_json::from_str(r#"{"verdict":"clean"}"#).unwrap();
        assert_eq!(summary.verdict, Verdict::Clean);
        assert!(Verdict::Found(Severity::High).reaches(Severity::Medium));
        assert!(!Verdict::Clean.reaches(Severity::Info));
        assert!(serde_json::from_str::<Summary>(r#"{"verdict":"severe"}"#).is_err());
    }
}
