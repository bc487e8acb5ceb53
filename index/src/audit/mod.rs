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
//! Nothing unscanned is called clean. A file is read whole (up to
//! [`MAX_FILE_SCAN`]) and as each program that runs it reads it (NULs
//! skipped, UTF-16 decoded, other line ends; see `decode`); which files
//! are programs is decided by name, folder, mode and `#!` line (see
//! `kinds`). A program, `SKILL.md` or document that still cannot be read
//! as text, and any text past the limits, is an `unscanned-file` finding,
//! so no verdict vouches for what no one read; binary assets that are not
//! programs are listed in `not_scanned`.
//!
//! The rules are in [`rules`]; `docs/security.md` lists each with an
//! example, the conditions of its severity, and how to suppress it.

mod behaviour;
mod blocks;
mod chars;
mod code;
mod decode;
mod disguised;
mod encoded;
mod files;
mod folded;
mod frontmatter;
mod instructions;
mod kinds;
mod patterns;
mod pickle;
pub mod rules;
pub mod sarif;
mod secrets;
mod source;
mod text;
mod typosquat;
mod unicode;

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};

pub use rules::{Rule, Severity};
pub(crate) use secrets::known_secrets;
pub use text::Excerpt;

use crate::archive::walk::{self, EntryKind, WalkError};
use crate::skill::{Host, SKILL_MD};
use source::{Files, Folder, Loaded};
use text::{FileKind, Scan};

/// How much of one file is read: a skill archive's default size limit, so
/// that every file a registry accepts by default is read whole. The rest
/// of a larger file is an `unscanned-file` finding.
pub const MAX_FILE_SCAN: u64 = crate::archive::DEFAULT_MAX_BYTES;

/// How much of one skill is read as text, over all its files (binary
/// assets are not counted); the files past it are `unscanned-file`
/// findings.
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
    let subject = subject_of(&Folder(root));
    let paths: HashSet<&str> = entries
        .iter()
        .filter(|entry| matches!(entry.kind, EntryKind::File { .. }))
        .map(|entry| entry.path.as_str())
        .collect();
    for entry in &entries {
        match entry.kind {
            EntryKind::Directory => {}
            EntryKind::Symlink => {
                let target = std::fs::read_link(root.join(&entry.path))
                    .map(|target| target.display().to_string())
                    .unwrap_or_else(|_| "?".to_owned());
                let (severity, message) = files::judge_symlink(&entry.path, &target);
                audit.findings.push(files::whole_file(
                    Rule::Symlink,
                    severity,
                    &entry.path,
                    message,
                ));
            }
            EntryKind::Special => audit.not_scanned.push(NotScanned {
                file: entry.path.clone(),
                reason: "a socket, FIFO or device, not a file".to_owned(),
            }),
            EntryKind::File { size, executable } => {
                let file = FileEntry {
                    path: &entry.path,
                    size,
                    executable,
                };
                audit_file(&Folder(root), &file, options, &subject, &paths, &mut audit);
            }
        }
    }
    sort_findings(&mut audit);
    Ok(audit)
}

/// Audits a skill whose files a caller holds: `files` are its regular
/// files (`/`-separated path, size, executable), and `read` returns the
/// bytes of one of them. The runtime audits what it serves this way, from
/// bytes it checked against the hashes it serves, so what is judged is
/// what runs. A file `read` cannot give is reported unread, as in a folder.
pub fn audit_loaded<'a>(
    files: impl IntoIterator<Item = (&'a str, u64, bool)>,
    read: impl Fn(&str) -> std::io::Result<Vec<u8>>,
    options: &AuditOptions,
) -> SkillAudit {
    let source = Loaded(read);
    let subject = subject_of(&source);
    let mut audit = SkillAudit::default();
    let files: Vec<(&str, u64, bool)> = files.into_iter().collect();
    let paths: HashSet<&str> = files.iter().map(|(path, _, _)| *path).collect();
    for (path, size, executable) in files {
        let file = FileEntry {
            path,
            size,
            executable,
        };
        audit_file(&source, &file, options, &subject, &paths, &mut audit);
    }
    sort_findings(&mut audit);
    audit
}

fn sort_findings(audit: &mut SkillAudit) {
    audit.findings.sort_by(|a, b| {
        (&a.file, a.line, a.column, a.rule).cmp(&(&b.file, b.line, b.column, b.rule))
    });
}

/// A regular file of the skill, as the walk found it.
struct FileEntry<'a> {
    /// Relative to the skill's folder, `/`-separated.
    path: &'a str,
    size: u64,
    executable: bool,
}

/// Reports that `file` was not read whole, as a finding (the verdict is
/// never clean for what no one read) and in `not_scanned`.
fn unscanned(audit: &mut SkillAudit, file: &str, severity: Severity, reason: String) {
    audit.findings.push(files::whole_file(
        Rule::UnscannedFile,
        severity,
        file,
        reason.clone(),
    ));
    audit.not_scanned.push(NotScanned {
        file: file.to_owned(),
        reason,
    });
}

/// Audits one file into `audit`: reads it (a binary asset only as far as
/// its first bytes), says what it could not read, and scans each reading
/// of its text (see `decode`).
fn audit_file(
    files: &dyn Files,
    file: &FileEntry<'_>,
    options: &AuditOptions,
    subject: &[String],
    paths: &HashSet<&str>,
    audit: &mut SkillAudit,
) {
    let named = kinds::by_name(file.path, file.executable);
    // The budget may be passed by one head: a file past it is still
    // looked at, to tell an asset from a text that went unread.
    let cap = MAX_FILE_SCAN.min(MAX_SKILL_SCAN.saturating_sub(audit.bytes));
    let mut binary_head = false;
    let mut dressed = false;
    let read = files.read(file.path, cap, &mut |head| {
        // A binary asset that no name, mode or `#!` makes a program is
        // said, not read, and costs none of the budget. `MZ` files are
        // read on: a PE header may lie past the head.
        // A pickle is read whole: what it calls may be anywhere in it.
        binary_head = !named.must_read && !head.starts_with(b"MZ") && !pickle::is_pickle(head) && {
            let reading = decode::read(head);
            reading.is_binary() && !reading.has_shebang()
        };
        // Text behind one line of binary (a font's signature): a program
        // dressed as an asset, read as one.
        dressed = !named.must_read && files::text_behind_first_line(head);
        !binary_head || dressed
    });
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(error) => {
            unscanned(
                audit,
                file.path,
                Severity::Medium,
                format!("cannot be read: {error}"),
            );
            return;
        }
    };
    audit.files += 1;
    if let Some(callable) = pickle::runs_on_load(&bytes) {
        audit.findings.push(files::whole_file(
            Rule::DecodeExec,
            Severity::High,
            file.path,
            format!(
                "a Python pickle that calls `{callable}` when loaded: any script that unpickles it runs that"
            ),
        ));
    }
    let sniffed = files::sniff(&bytes);
    if let Some((rule, what)) = sniffed {
        audit.findings.push(files::whole_file(
            rule,
            rule.default_severity(),
            file.path,
            what.to_owned(),
        ));
        // A program or an archive by its first bytes is reported as what
        // it is; one that is also a script by name or mode is read on,
        // as a shell would run it.
        if !named.must_read {
            return;
        }
    }
    if binary_head {
        audit.not_scanned.push(NotScanned {
            file: file.path.to_owned(),
            reason: "binary data".to_owned(),
        });
        return;
    }
    let bytes = if dressed {
        audit.findings.push(files::whole_file(
            Rule::DisguisedText,
            Severity::Medium,
            file.path,
            "its first line is binary and the rest is text: a program dressed as an asset, which an interpreter runs all the same (its first line a comment)".to_owned(),
        ));
        files::first_line_blanked(&bytes)
    } else {
        bytes
    };
    let reading = decode::read(&bytes);
    // A YAML file shaped as a CI workflow or a compose file runs its
    // commands wherever it sits (a template copied into place later).
    let shebang = reading.has_shebang() || code::runs_as_yaml(file.path, reading.text());
    let kinds = if dressed {
        vec![FileKind::Script]
    } else {
        named.kinds(shebang)
    };
    let must_read = named.must_read || shebang || dressed;
    if !must_read && reading.is_binary() {
        audit.not_scanned.push(NotScanned {
            file: file.path.to_owned(),
            reason: "binary data".to_owned(),
        });
        return;
    }
    audit.bytes += bytes.len() as u64;
    // What is not text (an executable or archive already reported, or
    // `unscanned-file`) has no shape to judge (`minified-script`) nor a
    // disguise; its readings are scanned all the same, for what a shell
    // would run of it.
    let is_text = sniffed.is_none() && !reading.is_unreadable();
    let unreadable = must_read && sniffed.is_none() && !is_text;
    report_unread(file, &bytes, &reading, unreadable, audit);
    if must_read && is_text {
        report_disguise(file.path, &reading, audit);
    }
    // Each reading is scanned, by the rules of each kind the file is; a
    // finding that an earlier scan made on the same line (readings
    // without NULs keep the lines) or at the same offset (a reading with
    // other line ends keeps the offsets) is not repeated.
    let mut lines: HashSet<(Rule, Option<usize>)> = HashSet::new();
    let mut offsets: HashSet<(Rule, usize)> = HashSet::new();
    // A script in a language the audit parses is read as code first:
    // flows from where values come from to where they run, and its
    // commands with their strings folded (see `code`).
    // A notebook's code cells run when the notebook does.
    let notebook = file.path.to_ascii_lowercase().ends_with(".ipynb");
    // A page's or an image's scripts run where it is shown.
    let markup = code::is_markup(file.path);
    let code = (is_text && (kinds.contains(&FileKind::Script) || notebook || markup))
        .then(|| {
            let modules = local_modules(files, paths, file.path, reading.text());
            read_code(file.path, reading.text(), subject, &modules)
        })
        .flatten();
    let runs_data = code.as_ref().map(|code| code.runs_data);
    for (index, text) in reading.texts.iter().enumerate() {
        for (turn, &kind) in kinds.iter().enumerate() {
            let (findings, name) =
                scan_text(file.path, text, kind, is_text, runs_data, options, subject);
            if index == 0 && name.is_some() {
                audit.name = name;
            }
            let first = index == 0 && turn == 0;
            let fresh: Vec<(Finding, usize)> = findings
                .into_iter()
                .filter(|(finding, start)| {
                    first
                        || !lines.contains(&(finding.rule, finding.line))
                            && !offsets.contains(&(finding.rule, *start))
                })
                .collect();
            for (mut finding, start) in fresh {
                lines.insert((finding.rule, finding.line));
                offsets.insert((finding.rule, start));
                if index == 0
                    && let Some(code) = &code
                {
                    code.lower_own_use(&mut finding, start);
                }
                audit.findings.push(finding);
            }
        }
    }
    // A page's or an image's scripts are read by the script rules too.
    if markup
        && is_text
        && let Some(scripts) = code::embedded(file.path, reading.text())
    {
        let (findings, _) = scan_text(
            file.path,
            &scripts.text,
            FileKind::Script,
            false,
            None,
            options,
            subject,
        );
        for (finding, start) in findings {
            if lines.insert((finding.rule, finding.line)) {
                offsets.insert((finding.rule, start));
                audit.findings.push(finding);
            }
        }
    }
    // What the code reading found that the text did not say outright.
    if let Some(mut code) = code {
        for (mut finding, start) in std::mem::take(&mut code.findings) {
            if lines.insert((finding.rule, finding.line)) {
                offsets.insert((finding.rule, start));
                code.lower_own_use(&mut finding, start);
                audit.findings.push(finding);
            }
        }
    }
}

/// What reading a script as code found.
struct CodeFindings {
    /// The findings of its flows and of its folded commands (placed at
    /// the statements they fold), each with its offset.
    findings: Vec<(Finding, usize)>,
    /// Whether it runs code from a value that is not a constant.
    runs_data: bool,
    reading: code::Reading,
}

impl CodeFindings {
    /// Lowers a line rule's `credential-access` at `start` to `medium`
    /// where the statement only names the store or passes it to the tool
    /// that owns it: where the value goes is judged on its own.
    fn lower_own_use(&self, finding: &mut Finding, start: usize) {
        if finding.severity != Severity::High {
            return;
        }
        if finding.rule == Rule::CredentialAccess && self.reading.in_own_use(start) {
            finding.severity = Severity::Medium;
            finding.message.push_str(
                " (named, or passed to the tool that owns it: where it goes is judged apart)",
            );
        } else if finding.rule == Rule::Persistence && self.reading.in_own_use(start) {
            // A start-up file or job folder listed, tested or printed,
            // not written: a write is judged where it is made.
            finding.severity = Severity::Medium;
            finding
                .message
                .push_str(" (named, listed or printed here, not written)");
        } else if (self.reading.in_comment(start) || self.reading.in_pattern(start))
            && matches!(
                finding.rule,
                Rule::DownloadExec
                    | Rule::DecodeExec
                    | Rule::ReverseShell
                    | Rule::CredentialAccess
                    | Rule::Persistence
                    | Rule::Exfiltration
            )
        {
            // A comment does not run, nor does a pattern that matches
            // text (a scanner's `re.compile(r"iex.*downloadstring")`);
            // an agent reading the script still sees them.
            finding.severity = Severity::Medium;
            finding.message.push_str(if self.reading.in_comment(start) {
                " (in a comment)"
            } else {
                " (in a pattern that matches text)"
            });
        }
    }
}

/// `text` with each CR that no LF follows made an LF.
fn lone_carriage_returns_as_line_ends(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    for (index, character) in text.char_indices() {
        if character == '\r' && bytes.get(index + 1) != Some(&b'\n') {
            out.push('\n');
        } else {
            out.push(character);
        }
    }
    out
}

/// Reads the script `text` at `file` as code, when it is in a language
/// the audit parses or holds code in one (a Makefile's recipes).
fn read_code(
    file: &str,
    text: &str,
    subject: &[String],
    modules: &[code::Module],
) -> Option<CodeFindings> {
    let mut scan = Scan::new(file, text, FileKind::Script);
    scan.subject = subject.to_vec();
    let reading = match code::language(file, text) {
        Some(
            language @ (code::Lang::Python
            | code::Lang::JavaScript
            | code::Lang::TypeScript
            | code::Lang::Shell),
        ) if !modules.is_empty() && !text.contains('\r') => {
            code::read_linked(&mut scan, language, text, modules)?
        }
        Some(language @ (code::Lang::Python | code::Lang::JavaScript | code::Lang::TypeScript))
            if text.contains('\r') =>
        {
            // Python and JavaScript end a line at a lone CR: the code is
            // parsed as they read it, at the same offsets.
            let code = lone_carriage_returns_as_line_ends(text);
            code::read(&mut scan, language, &code, &[], &[])?
        }
        Some(language) => code::read(&mut scan, language, text, &[], &[])?,
        None => {
            let code::Embedded {
                lang,
                text: code,
                seeds,
            } = code::embedded(file, text)?;
            code::read(&mut scan, lang, &code, &[], &seeds)?
        }
    };
    // The folded commands, a line each, read by the line rules; what they
    // find is reported at the statement each line stands for.
    folded::report(&mut scan, &reading, FileKind::Script);
    let findings = scan.findings.into_iter().zip(scan.starts).collect();
    Some(CodeFindings {
        findings,
        runs_data: reading.runs_data,
        reading,
    })
}

/// The local modules the script `text` at `path` imports, among the
/// skill's regular files `paths`, read (see `code::link`).
fn local_modules(
    files: &dyn Files,
    paths: &HashSet<&str>,
    path: &str,
    text: &str,
) -> Vec<code::Module> {
    let Some(language) = code::language(path, text) else {
        return Vec::new();
    };
    let mut modules: Vec<code::Module> = Vec::new();
    for import in code::local_imports(language, path, text) {
        let Some(found) = import
            .candidates
            .iter()
            .find(|candidate| candidate.as_str() != path && paths.contains(candidate.as_str()))
        else {
            continue;
        };
        if modules.iter().any(|module| &module.path == found) {
            continue;
        }
        let Ok(bytes) = files.read(found, code::MAX_MODULE, &mut |_| true) else {
            continue;
        };
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        modules.push(code::Module {
            path: found.clone(),
            text,
            start: import.start,
            end: import.end,
        });
        if modules.len() == code::MAX_MODULES {
            break;
        }
    }
    modules
}

/// Reports what of a file the audit could not read: the part past the
/// size limit or the budget, text it cannot read as a program's
/// interpreter does (`unreadable`: a program, `SKILL.md` or document not
/// already reported as an executable or archive, whose text is not
/// text), and encodings its readers decode and the audit does not.
fn report_unread(
    file: &FileEntry<'_>,
    bytes: &[u8],
    reading: &decode::Reading<'_>,
    unreadable: bool,
    audit: &mut SkillAudit,
) {
    let read = bytes.len() as u64;
    if file.size > read {
        let reason = if read >= MAX_FILE_SCAN {
            format!(
                "larger than {} MiB: only its first {read} bytes were read",
                MAX_FILE_SCAN >> 20
            )
        } else {
            format!(
                "the skill's scan budget of {} MiB was used up: only the first {read} of its {} bytes were read",
                MAX_SKILL_SCAN >> 20,
                file.size
            )
        };
        unscanned(audit, file.path, Severity::Medium, reason);
    }
    if unreadable {
        unscanned(
            audit,
            file.path,
            Severity::Medium,
            format!(
                "{} of its {} characters are not text (bytes invalid in {}, or control characters), so what a program makes of them is unknown",
                reading.garbage,
                reading.chars,
                reading.encoding.name()
            ),
        );
    } else if reading.invalid > 0 && reading.encoding == decode::Encoding::Utf8 {
        audit.not_scanned.push(NotScanned {
            file: file.path.to_owned(),
            reason: "not valid UTF-8: scanned with U+FFFD in place of each bad byte".to_owned(),
        });
    }
    if let Some(undecoded) = decode::undecoded(reading.text()) {
        let severity = if undecoded.hiding {
            Severity::High
        } else {
            Severity::Medium
        };
        unscanned(audit, file.path, severity, format!("it {}", undecoded.what));
    }
}

/// Reports a program, `SKILL.md` or document that review tools show as
/// binary: NUL bytes, or a wide encoding.
fn report_disguise(file: &str, reading: &decode::Reading<'_>, audit: &mut SkillAudit) {
    let (severity, message) = if reading.nuls > 0 {
        (
            Severity::Medium,
            format!(
                "{} NUL bytes: sh skips them and runs the rest, while git and GitHub show the file as binary",
                reading.nuls
            ),
        )
    } else if reading.encoding != decode::Encoding::Utf8 {
        let severity = if reading.bom {
            Severity::Low
        } else {
            Severity::Medium
        };
        (
            severity,
            format!(
                "encoded in {}{}: git and GitHub show it as binary",
                reading.encoding.name(),
                if reading.bom {
                    ""
                } else {
                    " without a byte order mark"
                }
            ),
        )
    } else {
        return;
    };
    audit.findings.push(files::whole_file(
        Rule::DisguisedText,
        severity,
        file,
        message,
    ));
}

/// Scans one reading of a file's text with the rules its kind calls for
/// (a script's shape only when `shape`); returns the findings, each with
/// the offset where it starts, and, for `SKILL.md`, the skill's name.
fn scan_text(
    file: &str,
    text: &str,
    kind: FileKind,
    shape: bool,
    runs_data: Option<bool>,
    options: &AuditOptions,
    subject: &[String],
) -> (Vec<(Finding, usize)>, Option<String>) {
    let document = (kind == FileKind::SkillMd)
        .then(|| crate::skill::document::parse(text.as_bytes()).ok())
        .flatten();
    let name = document
        .as_ref()
        .and_then(|document| document.get("name"))
        .and_then(|(_, name)| name.value.as_str())
        .map(str::to_owned);
    let scanned = document
        .as_ref()
        .map_or(text, |document| document.text.as_str());
    let mut scan = Scan::new(file, scanned, kind);
    scan.subject = subject.to_vec();
    unicode::scan(&mut scan);
    secrets::scan(&mut scan);
    behaviour::scan(&mut scan);
    typosquat::scan(&mut scan);
    folded::scan_blocks(&mut scan);
    instructions::scan(&mut scan);
    encoded::scan(&mut scan);
    disguised::scan(&mut scan);
    blocks::scan(&mut scan);
    blocks::scan_claims(&mut scan);
    unicode::scan_hosts(&mut scan);
    files::scan_yaml_tags(&mut scan);
    match &document {
        Some(document) => frontmatter::scan(&mut scan, document, options.host),
        None => frontmatter::scan_data(&mut scan),
    }
    if kind == FileKind::Script && shape {
        files::scan_script(&mut scan, runs_data);
    }
    (scan.findings.into_iter().zip(scan.starts).collect(), name)
}

/// The lower-case words of four letters or more in the skill's `name`
/// and `description`: what the skill is about, which tells the site of its
/// own tool from any other (see `download-exec`).
fn subject_of(files: &dyn Files) -> Vec<String> {
    let Ok(bytes) = files.read(SKILL_MD, MAX_FILE_SCAN, &mut |_| true) else {
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
