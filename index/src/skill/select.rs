//! Deterministic skill selection (spec 003 §10, "Selection & Progressive
//! Disclosure"): which skills a request calls for, and why.
//!
//! ```text
//! 1. explicit   the request names a skill or one of its tools as a whole word
//!               (`pdf-processing`, `$pdf-processing`, `/pdf-processing`): the
//!               named skills are the selection, whatever the scores
//! 2. score      +3 per when_to_use.file_types entry a file matches
//!               +2 per when_to_use.mentions entry the request mentions
//!               +1 per when_to_use.intents entry among the given intents
//! 3. select     score >= threshold (default 3)
//! 4. order      score desc, when_to_use.priority desc (absent lowest), name asc
//! ```
//!
//! A **whole-word match** of a phrase (a mention, a skill or tool name) is an
//! occurrence in the request, both lowercased (Unicode) and with every run of
//! whitespace read as one space, where the character before it and the
//! character after it are not word characters; word characters are letters,
//! digits, `_` and `-` (the characters of skill names). The check is made
//! only on a side where the phrase itself ends in a word character, so
//! `c++` matches in `c++ code`. Hence `ocr` matches in `Run OCR, please` and
//! in `scan.ocr`, but not in `ocrmypdf`, `ocr_result` or `ocr-tool`; `pdf`
//! does not match `pdfs` (there is no stemming: list the forms you want).
//!
//! A **file type** (`.pdf`, or `pdf`, which means the same) matches a file
//! whose name, lowercased, ends with it (`report.PDF`, `a.tar.gz` for
//! `.gz` and `.tar.gz`), or is it without the dot (`Dockerfile` for
//! `dockerfile`). Files are the ones given, and the **file-looking words**
//! of the request: words that, stripped of surrounding quotes, brackets and
//! sentence punctuation, end in `.` and 1 to 10 letters or digits (of a path
//! or URL, the last segment counts).
//!
//! Each entry of `mentions`, `file_types` and `intents` counts once however
//! often it matches; entries repeated in the list (ignoring case, and for
//! file types the leading dot) count once.

use std::path::Path;

use serde::Serialize;

use super::model::WhenToUse;

/// The default score a skill needs to be selected.
pub const DEFAULT_THRESHOLD: u32 = 3;

/// Points per matched entry.
pub const FILE_TYPE_POINTS: u32 = 3;
pub const MENTION_POINTS: u32 = 2;
pub const INTENT_POINTS: u32 = 1;

/// What a request brings to selection.
#[derive(Clone, Debug)]
pub struct Request<'a> {
    /// The user's words.
    pub text: &'a str,
    /// Files the request is about (only their names are read).
    pub files: &'a [&'a Path],
    /// Intents the host derived (`document_extraction`).
    pub intents: &'a [&'a str],
    pub threshold: u32,
}

/// A skill that may be selected.
#[derive(Clone, Debug)]
pub struct Candidate<'a> {
    pub name: &'a str,
    /// The names of the skill's tools.
    pub tools: Vec<&'a str>,
    pub when_to_use: Option<&'a WhenToUse>,
}

/// How a skill scored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Scored {
    pub name: String,
    pub score: u32,
    pub priority: Option<u64>,
    /// How the request names the skill, when it does.
    pub explicit: Option<Explicit>,
    pub matches: Vec<Match>,
    pub selected: bool,
}

/// How a request names a skill.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Explicit {
    /// The skill's name, or the name of the tool that was named.
    pub word: String,
    /// True when `word` is one of the skill's tools.
    pub tool: bool,
    /// The byte offset of the first whole-word occurrence in the
    /// lowercased request (orders explicitly named skills).
    #[serde(skip)]
    pub position: usize,
}

/// One trigger that matched, and the points it gave.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Match {
    pub points: u32,
    #[serde(flatten)]
    pub trigger: Trigger,
}

/// The entry of `when_to_use` that matched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Trigger {
    /// `file_types` entry `entry` matched by `file`, a given file or (when
    /// `in_request`) a file-looking word of the request.
    FileType {
        entry: String,
        file: String,
        in_request: bool,
    },
    Mention {
        entry: String,
    },
    Intent {
        entry: String,
    },
}

impl std::fmt::Display for Match {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.trigger {
            Trigger::FileType {
                entry,
                file,
                in_request: false,
            } => write!(f, "+{} file_type {entry} ({file})", self.points),
            Trigger::FileType { entry, file, .. } => {
                write!(
                    f,
                    "+{} file_type {entry} ({file}, in the request)",
                    self.points
                )
            }
            Trigger::Mention { entry } => write!(f, "+{} mention {entry:?}", self.points),
            Trigger::Intent { entry } => write!(f, "+{} intent {entry:?}", self.points),
        }
    }
}

/// The outcome of selection: every candidate, selected ones first, each in
/// the order of spec 003 (explicitly named skills in the order the request
/// names them).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Selection {
    pub threshold: u32,
    /// True when the request names a skill, so scores did not decide.
    pub explicit: bool,
    pub candidates: Vec<Scored>,
}

impl Selection {
    /// Returns the selected skills, in order.
    pub fn selected(&self) -> impl Iterator<Item = &Scored> {
        self.candidates
            .iter()
            .filter(|candidate| candidate.selected)
    }
}

/// Runs the selection algorithm over `candidates`.
pub fn select(request: &Request<'_>, candidates: &[Candidate<'_>]) -> Selection {
    let text = normalize(request.text);
    let request_files = file_words(request.text);
    let mut scored: Vec<Scored> = candidates
        .iter()
        .map(|candidate| score(candidate, request, &text, &request_files))
        .collect();
    let explicit = scored.iter().any(|candidate| candidate.explicit.is_some());
    for candidate in &mut scored {
        candidate.selected = if explicit {
            candidate.explicit.is_some()
        } else {
            candidate.score >= request.threshold
        };
    }
    scored.sort_by(|a, b| {
        b.selected
            .cmp(&a.selected)
            .then_with(|| {
                let position = |c: &Scored| c.explicit.as_ref().map(|e| e.position);
                match (position(a), position(b)) {
                    (Some(a), Some(b)) => a.cmp(&b),
                    _ => std::cmp::Ordering::Equal,
                }
            })
            .then_with(|| b.score.cmp(&a.score))
            .then_with(|| b.priority.cmp(&a.priority))
            .then_with(|| a.name.cmp(&b.name))
    });
    Selection {
        threshold: request.threshold,
        explicit,
        candidates: scored,
    }
}

fn score(
    candidate: &Candidate<'_>,
    request: &Request<'_>,
    text: &str,
    request_files: &[String],
) -> Scored {
    let mut explicit: Option<Explicit> = None;
    let names = std::iter::once((candidate.name, false))
        .chain(candidate.tools.iter().map(|tool| (*tool, true)));
    for (word, tool) in names {
        if let Some(position) = find_word(text, &normalize(word))
            && explicit.as_ref().is_none_or(|e| position < e.position)
        {
            explicit = Some(Explicit {
                word: word.to_owned(),
                tool,
                position,
            });
        }
    }
    let mut matches = Vec::new();
    if let Some(when) = candidate.when_to_use {
        let given = request
            .files
            .iter()
            .filter_map(|path| path.file_name())
            .map(|name| (name.to_string_lossy().into_owned(), false));
        let files: Vec<(String, bool)> = given
            .chain(request_files.iter().map(|word| (word.clone(), true)))
            .collect();
        for entry in distinct(&when.file_types, |key| key.trim_start_matches('.')) {
            if let Some((file, in_request)) = files
                .iter()
                .find(|(file, _)| file_type_matches(entry, file))
            {
                matches.push(Match {
                    points: FILE_TYPE_POINTS,
                    trigger: Trigger::FileType {
                        entry: entry.to_owned(),
                        file: file.clone(),
                        in_request: *in_request,
                    },
                });
            }
        }
        for entry in distinct(&when.mentions, |key| key) {
            if mentions(text, entry) {
                matches.push(Match {
                    points: MENTION_POINTS,
                    trigger: Trigger::Mention {
                        entry: entry.to_owned(),
                    },
                });
            }
        }
        for entry in distinct(&when.intents, |key| key) {
            let wanted = entry.trim();
            if request
                .intents
                .iter()
                .any(|intent| intent.trim().eq_ignore_ascii_case(wanted))
            {
                matches.push(Match {
                    points: INTENT_POINTS,
                    trigger: Trigger::Intent {
                        entry: entry.to_owned(),
                    },
                });
            }
        }
    }
    Scored {
        name: candidate.name.to_owned(),
        score: matches
            .iter()
            .fold(0u32, |total, m| total.saturating_add(m.points)),
        priority: candidate.when_to_use.and_then(|when| when.priority),
        explicit,
        matches,
        selected: false,
    }
}

/// Returns the entries of `list` without blanks or repeats: entries whose
/// normalized text, passed through `key`, is the same.
fn distinct(list: &[String], key: impl Fn(&str) -> &str) -> Vec<&str> {
    let mut seen: Vec<String> = Vec::new();
    let mut kept = Vec::new();
    for entry in list {
        let normalized = normalize(entry);
        let key = key(&normalized).to_owned();
        if key.is_empty() || seen.contains(&key) {
            continue;
        }
        seen.push(key);
        kept.push(entry.as_str());
    }
    kept
}

/// Returns true if and only if `request` mentions `mention` as a whole
/// word (the rule in the module documentation).
pub fn mentions(request: &str, mention: &str) -> bool {
    find_word(&normalize(request), &normalize(mention)).is_some()
}

/// Lowercases `text` and reads each run of whitespace as one space.
fn normalize(text: &str) -> String {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// Returns the byte offset of the first whole-word occurrence of `needle`
/// in `haystack` (both normalized).
fn find_word(haystack: &str, needle: &str) -> Option<usize> {
    let first = needle.chars().next()?;
    let last = needle.chars().next_back()?;
    let mut from = 0;
    while let Some(found) = haystack[from..].find(needle) {
        let start = from + found;
        let end = start + needle.len();
        let before = haystack[..start].chars().next_back();
        let after = haystack[end..].chars().next();
        let clear_before = !is_word_char(first) || !before.is_some_and(is_word_char);
        let clear_after = !is_word_char(last) || !after.is_some_and(is_word_char);
        if clear_before && clear_after {
            return Some(start);
        }
        // Overlapping occurrences may still match: go on one character later.
        from = start + first.len_utf8();
    }
    None
}

/// Returns true if and only if the file named `file` has the type `entry`.
pub fn file_type_matches(entry: &str, file: &str) -> bool {
    let entry = entry.trim().to_lowercase();
    let bare = entry.strip_prefix('.').unwrap_or(&entry);
    if bare.is_empty() {
        return false;
    }
    let file = file.to_lowercase();
    file == bare || file.ends_with(&format!(".{bare}"))
}

/// Returns the file-looking words of `text` (the rule in the module
/// documentation), each the last segment of its path, in order.
pub fn file_words(text: &str) -> Vec<String> {
    const OPENING: &[char] = &['"', '\'', '`', '(', '[', '{', '<'];
    const CLOSING: &[char] = &[
        '"', '\'', '`', ')', ']', '}', '>', ',', ';', ':', '!', '?', '.',
    ];
    text.split_whitespace()
        .filter_map(|word| {
            let word = word.trim_start_matches(OPENING).trim_end_matches(CLOSING);
            let name = word.rsplit(['/', '\\']).next().unwrap_or(word);
            let (_, extension) = name.rsplit_once('.')?;
            let looks_like_file = (1..=10).contains(&extension.len())
                && extension.chars().all(|c| c.is_ascii_alphanumeric());
            looks_like_file.then(|| name.to_owned())
        })
        .collect()
}

#[cfg(test)]
mod tests;
