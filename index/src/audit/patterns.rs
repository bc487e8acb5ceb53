//! Many patterns over one text, found through the literals they contain.
//!
//! The audit's rules are hundreds of regular expressions, most of them a
//! word followed by `[^\n]*?` and another word. In one `RegexSet`, the
//! lazy DFA's states are the combinations of the patterns that are half
//! way through a line, and a corpus of real skills keeps building new
//! ones: determinizing them was a fifth of the audit's time. Instead, each
//! pattern's literals (strings one of which every match contains) are
//! taken from its syntax with the `regex-syntax` extractor, one
//! Aho-Corasick automaton finds them all in one pass, and only the
//! patterns whose literals occur are run, one small regex each. A pattern
//! with no finite set of literals is always run.
//!
//! The literals are found with the pattern's leading `(?i)` left out and
//! matched ignoring ASCII case, which finds every match the pattern has,
//! except where Unicode case folding makes a non-ASCII letter (the Kelvin
//! sign, a long s) stand for an ASCII one: a command or path spelt that
//! way is not the one a shell or file system would see.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::Regex;
use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::{Hir, HirKind};

/// A set of patterns, each compiled on first use.
pub(crate) struct PatternSet {
    sources: Vec<String>,
    compiled: Vec<OnceLock<Regex>>,
    /// The distinct literals of the patterns, ignoring ASCII case, as a
    /// DFA: the sets are searched for overlapping matches over every
    /// text, where the prefilter does not apply and an NFA (the default
    /// for sets this large) follows failure links byte by byte.
    literals: AhoCorasick,
    /// For each literal, the patterns that contain it.
    owners: Vec<Vec<usize>>,
    /// The patterns with no finite set of literals.
    always: Vec<usize>,
}

impl PatternSet {
    /// Builds the set; panics on an invalid pattern, as the audit's
    /// patterns are constants checked by its tests.
    pub(crate) fn new<'a>(patterns: impl IntoIterator<Item = &'a str>) -> Self {
        let sources: Vec<String> = patterns.into_iter().map(str::to_owned).collect();
        let mut literals: Vec<Vec<u8>> = Vec::new();
        let mut owners: Vec<Vec<usize>> = Vec::new();
        let mut always = Vec::new();
        for (index, source) in sources.iter().enumerate() {
            match literals_of(source) {
                Some(found) => {
                    for literal in found {
                        match literals.iter().position(|known| *known == literal) {
                            Some(at) => owners[at].push(index),
                            None => {
                                literals.push(literal);
                                owners.push(vec![index]);
                            }
                        }
                    }
                }
                None => always.push(index),
            }
        }
        let literals = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&literals)
            .expect("valid pattern literals");
        Self {
            compiled: sources.iter().map(|_| OnceLock::new()).collect(),
            sources,
            literals,
            owners,
            always,
        }
    }

    /// The pattern at `index`, compiled.
    pub(crate) fn regex(&self, index: usize) -> &Regex {
        self.compiled[index]
            .get_or_init(|| Regex::new(&self.sources[index]).expect("valid audit pattern"))
    }

    /// The patterns whose literals occur in `text`, in order: the ones
    /// that may match it.
    fn candidates(&self, text: &str) -> Vec<usize> {
        let mut seen = vec![false; self.sources.len()];
        for &index in &self.always {
            seen[index] = true;
        }
        for found in self.literals.find_overlapping_iter(text) {
            for &index in &self.owners[found.pattern().as_usize()] {
                seen[index] = true;
            }
        }
        seen.iter()
            .enumerate()
            .filter_map(|(index, &candidate)| candidate.then_some(index))
            .collect()
    }

    /// The patterns that may match each line of `text` (a line whose
    /// bytes hold one of a pattern's literals), by line number as
    /// `line_of` gives it for an offset.
    pub(crate) fn by_line(&self, text: &str, line_of: impl Fn(usize) -> usize) -> ByLine {
        let mut lines: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for found in self.literals.find_overlapping_iter(text) {
            let patterns = lines.entry(line_of(found.start())).or_default();
            patterns.extend(&self.owners[found.pattern().as_usize()]);
        }
        for patterns in lines.values_mut() {
            patterns.extend(&self.always);
            patterns.sort_unstable();
            patterns.dedup();
        }
        ByLine {
            lines,
            always: self.always.clone(),
        }
    }

    /// The patterns that match somewhere in `text`, in order.
    pub(crate) fn matches(&self, text: &str) -> Vec<usize> {
        self.candidates(text)
            .into_iter()
            .filter(|&index| self.regex(index).is_match(text))
            .collect()
    }

    /// True when any pattern matches somewhere in `text`.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.candidates(text)
            .into_iter()
            .any(|index| self.regex(index).is_match(text))
    }
}

/// The patterns that may match each line of a text.
pub(crate) struct ByLine {
    lines: BTreeMap<usize, Vec<usize>>,
    always: Vec<usize>,
}

impl ByLine {
    /// The patterns that may match line `line`, in order.
    pub(crate) fn at(&self, line: usize) -> &[usize] {
        self.lines.get(&line).unwrap_or(&self.always)
    }

    /// The lines that some pattern may match, with those patterns.
    pub(crate) fn lines(&self) -> impl Iterator<Item = (usize, &[usize])> {
        self.lines
            .iter()
            .map(|(line, patterns)| (*line, patterns.as_slice()))
    }

    /// True when no pattern may match any line.
    pub(crate) fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.always.is_empty()
    }

    /// The patterns that may match some line, in order: those whose
    /// literals the text holds anywhere, and those always run; the ones
    /// [`PatternSet::matches`] of the whole text would run.
    pub(crate) fn candidates(&self) -> Vec<usize> {
        let mut all: Vec<usize> = self.lines.values().flatten().copied().collect();
        all.extend(&self.always);
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// One pattern behind the screen of its literals: a text that holds
/// none of them is passed over at the speed of a memory search, without
/// running the pattern's automaton over it.
pub(crate) struct Screened(PatternSet);

impl Screened {
    /// Builds the pattern; panics on an invalid one, as the audit's
    /// patterns are constants checked by its tests.
    pub(crate) fn new(pattern: &str) -> Self {
        Self(PatternSet::new([pattern]))
    }

    /// True when the pattern matches somewhere in `text`.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.may_match(text) && self.0.regex(0).is_match(text)
    }

    /// False when `text` holds none of the pattern's literals, so that
    /// the pattern cannot match it or any part of it.
    fn may_match(&self, text: &str) -> bool {
        !self.0.always.is_empty() || self.0.literals.is_match(text)
    }
}

/// Literals one of which every match of `pattern` contains, lower-cased,
/// or `None` when no finite set of non-empty strings is found.
fn literals_of(pattern: &str) -> Option<Vec<Vec<u8>>> {
    let exact_case = pattern.strip_prefix("(?i)").unwrap_or(pattern);
    let hir = regex_syntax::Parser::new().parse(exact_case).ok()?;
    let mut lowered: Vec<Vec<u8>> = required(&hir)?
        .into_iter()
        .map(|literal| literal.to_ascii_lowercase())
        .collect();
    lowered.sort();
    lowered.dedup();
    Some(lowered)
}

/// The most selective set of literals one of which every match of `hir`
/// contains: of an alternation, what each branch requires; of a
/// concatenation, the best of the literal prefixes of each of its tails
/// and of what each of its parts requires, the best being the set whose
/// shortest literal is longest, then the smallest.
fn required(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    match hir.kind() {
        HirKind::Capture(capture) => required(&capture.sub),
        HirKind::Alternation(branches) => {
            let mut all = Vec::new();
            for branch in branches {
                all.extend(required(branch)?);
            }
            Some(all)
        }
        HirKind::Concat(parts) => {
            let mut best: Option<Vec<Vec<u8>>> = None;
            for at in 0..parts.len() {
                let tail = Hir::concat(parts[at..].to_vec());
                for found in [literal_prefixes(&tail), required(&parts[at])]
                    .into_iter()
                    .flatten()
                {
                    if best.as_ref().is_none_or(|known| better(&found, known)) {
                        best = Some(found);
                    }
                }
            }
            best
        }
        _ => literal_prefixes(hir),
    }
}

/// The literal prefixes of every match of `hir`, when they are a finite
/// set of non-empty strings.
fn literal_prefixes(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    let seq = Extractor::new().kind(ExtractKind::Prefix).extract(hir);
    let literals = seq.literals()?;
    if literals.is_empty() || literals.iter().any(|literal| literal.as_bytes().is_empty()) {
        return None;
    }
    Some(
        literals
            .iter()
            .map(|literal| literal.as_bytes().to_vec())
            .collect(),
    )
}

/// True when `one` is the more selective set of literals: its shortest is
/// longer, or as long with fewer literals.
fn better(one: &[Vec<u8>], other: &[Vec<u8>]) -> bool {
    let shortest = |set: &[Vec<u8>]| set.iter().map(Vec::len).min().unwrap_or(0);
    (shortest(one), std::cmp::Reverse(one.len()))
        > (shortest(other), std::cmp::Reverse(other.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_what_the_patterns_find_in_any_case() {
        let set = PatternSet::new([
            r"(?i)(?-u:\b)curl(?-u:\b)[^\n]*?\|\s*sh",
            r"(?i)(?:wget|fetch)\s",
            r"[A-Z]{3}\d",
            r"(?-u:\b)exact(?-u:\b)",
        ]);
        assert_eq!(set.matches("CURL -s x | sh"), [0]);
        assert_eq!(set.matches("Fetch it"), [1]);
        assert_eq!(set.matches("ABC1 and curl | sh"), [0, 2]);
        // A pattern without `(?i)` keeps its case: the literal only says
        // where to look.
        assert!(set.matches("EXACT").is_empty());
        assert_eq!(set.matches("an exact word"), [3]);
        assert!(!set.is_match("curl without a pipe"));
        assert!(set.is_match("wget http://x"));
        let text = "curl a | sh\nnothing\nabc9 fetch\n";
        let line_of = |offset: usize| text[..offset].matches('\n').count();
        let lines = set.by_line(text, line_of);
        // The third pattern has no literal: it may match any line.
        assert_eq!(lines.at(0), [0, 2]);
        assert_eq!(lines.at(1), [2]);
        assert_eq!(lines.at(2), [1, 2]);
        let literal_only = PatternSet::new([r"(?i)curl", r"fetch"]);
        let lines = literal_only.by_line(text, line_of);
        assert_eq!(lines.at(0), [0]);
        assert!(lines.at(1).is_empty());
        assert_eq!(lines.at(2), [1]);
        assert!(literal_only.by_line("nothing here", line_of).is_empty());
    }

    #[test]
    fn a_pattern_without_finite_literals_is_always_run() {
        assert_eq!(literals_of(r"[a-z]+\d"), None);
        assert_eq!(literals_of(r"(?i)A?b"), Some(vec![b"b".to_vec()]));
        // A word inside the pattern says more than a short start.
        assert_eq!(
            literals_of(r"(?i)(?:>|cp\s)\s*[\w/]*\.bashrc"),
            Some(vec![b".bashrc".to_vec()])
        );
        assert_eq!(literals_of(r"x*"), None);
        let set = PatternSet::new([r"\w+@\w+", r"(?i)zz"]);
        assert_eq!(set.matches("me@host"), [0]);
    }
}
