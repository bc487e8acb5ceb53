//! One scanned text file: byte offsets to lines and columns, and excerpts
//! that are safe to print.

use super::chars;
use super::{Finding, Rule, Severity};

/// The longest excerpt kept, in characters: enough to recognise the line,
/// short enough for a terminal and a SARIF viewer.
const MAX_EXCERPT: usize = 160;

/// What kind of file a text is, which decides the rules that read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// The skill's `SKILL.md`.
    SkillMd,
    /// Markdown or plain text the agent reads: references and docs.
    Document,
    /// A program: what something runs, by name, folder, executable bit or
    /// `#!` line (see `kinds`).
    Script,
    /// Any other text: data, templates, configuration.
    Other,
}

/// A text being scanned, with the findings made about it.
pub(crate) struct Scan<'a> {
    pub file: &'a str,
    pub text: &'a str,
    pub kind: FileKind,
    /// The lower-case words (4 letters or more) of the skill's name and
    /// description: what the skill is about.
    pub subject: Vec<String>,
    /// The byte offset at which each line starts.
    line_starts: Vec<usize>,
    pub findings: Vec<Finding>,
    /// The byte offset in `text` at which each finding starts, in step
    /// with `findings`: what tells two readings' findings apart when their
    /// lines differ (see `decode`).
    pub starts: Vec<usize>,
}

impl<'a> Scan<'a> {
    pub(super) fn new(file: &'a str, text: &'a str, kind: FileKind) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|index| index + 1));
        Self {
            file,
            text,
            kind,
            subject: Vec::new(),
            line_starts,
            findings: Vec::new(),
            starts: Vec::new(),
        }
    }

    /// Returns the 0-based line that holds byte `offset`.
    pub(super) fn line_of(&self, offset: usize) -> usize {
        self.line_starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1)
    }

    /// Returns the bytes of the text a 1-based [`Location`] covers on its line.
    pub(super) fn span_of(&self, location: crate::skill::Location) -> (usize, usize) {
        let line = location
            .line
            .saturating_sub(1)
            .min(self.line_starts.len() - 1);
        let text = self.line_text(line);
        let byte = |column: usize| {
            text.char_indices()
                .nth(column.saturating_sub(1))
                .map_or(text.len(), |(index, _)| index)
        };
        let start = self.line_starts[line];
        (
            start + byte(location.column),
            start + byte(location.end_column.max(location.column)),
        )
    }

    /// Returns the byte offset at which 0-based line `line` starts.
    pub(super) fn line_start(&self, line: usize) -> usize {
        self.line_starts[line.min(self.line_starts.len() - 1)]
    }

    /// Returns the text of the 0-based line `line`, without its line end.
    pub(super) fn line_text(&self, line: usize) -> &'a str {
        let start = self.line_starts[line];
        let end = self
            .line_starts
            .get(line + 1)
            .map_or(self.text.len(), |next| next - 1);
        self.text[start..end].trim_end_matches('\r')
    }

    /// Returns the lines as (0-based number, byte offset of its start, text).
    pub(super) fn lines(&self) -> impl Iterator<Item = (usize, usize, &'a str)> + '_ {
        (0..self.line_starts.len()).map(|line| (line, self.line_starts[line], self.line_text(line)))
    }

    /// Reports `rule` at `severity` for the bytes `start..end`.
    pub(super) fn report(
        &mut self,
        rule: Rule,
        severity: Severity,
        start: usize,
        end: usize,
        message: impl Into<String>,
    ) {
        self.report_masked(rule, severity, start, end, message, false);
    }

    /// Like [`Scan::report`], masking the reported bytes in the excerpt:
    /// for secrets, which must never be repeated into a CI log.
    pub(super) fn report_masked(
        &mut self,
        rule: Rule,
        severity: Severity,
        start: usize,
        end: usize,
        message: impl Into<String>,
        mask: bool,
    ) {
        let line = self.line_of(start);
        let line_start = self.line_starts[line];
        let line_text = self.line_text(line);
        // A rule may place a finding by bytes (`start + 1`); the span is
        // widened to whole characters, whatever the line holds.
        let start_in_line = floor_boundary(line_text, start.saturating_sub(line_start));
        let end_in_line =
            ceil_boundary(line_text, end.saturating_sub(line_start).max(start_in_line));
        let column = line_text[..start_in_line].chars().count() + 1;
        let end_column = column + line_text[start_in_line..end_in_line].chars().count().max(1);
        let excerpt = excerpt(line_text, start_in_line, end_in_line, mask);
        self.starts.push(start);
        self.findings.push(Finding {
            rule,
            severity,
            file: self.file.to_owned(),
            line: Some(line + 1),
            column: Some(column),
            end_column: Some(end_column),
            excerpt: Some(excerpt),
            message: message.into(),
        });
    }
}

/// The last character boundary of `text` at or before `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The first character boundary of `text` at or after `at`.
fn ceil_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// A line of a scanned file made safe to print, with the span a finding
/// is about, counted in characters of `text`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Excerpt {
    pub text: String,
    pub start: usize,
    pub width: usize,
}

/// Returns a character that stands for `character` when it would be
/// invisible, reorder the line, or control the terminal; `None` when it
/// prints as itself.
fn stand_in(character: char) -> Option<String> {
    let code = u32::from(character);
    let hidden = character.is_control() && character != '\t'
        || chars::is_bidi(character)
        || chars::is_invisible(character)
        || chars::is_tag(character)
        || chars::is_variation_selector(character);
    hidden.then(|| format!("<U+{code:04X}>"))
}

/// Returns `text` safe to print in a message: hidden characters spelled
/// out, cut to `max` characters.
pub(crate) fn printable(text: &str, max: usize) -> String {
    let mut shown = String::new();
    for (count, character) in text.chars().enumerate() {
        if count >= max {
            shown.push('…');
            break;
        }
        match stand_in(character) {
            Some(stand_in) => shown.push_str(&stand_in),
            None => shown.push(character),
        }
    }
    shown
}

/// Builds the excerpt of `line` for the bytes `start..end`: hidden
/// characters spelled out (so that what is hidden is what is shown), cut
/// around the span when the line is long, the span masked for secrets.
fn excerpt(line: &str, start: usize, end: usize, mask: bool) -> Excerpt {
    let mut text = String::new();
    let (mut span_start, mut span_end) = (0, 0);
    let mut count = 0;
    for (index, character) in line.char_indices() {
        if index == start {
            span_start = count;
        }
        let in_span = index >= start && index < end;
        let shown = if mask && in_span {
            // Keep enough of a secret to tell which one it is.
            if index - start < 6 {
                character.to_string()
            } else {
                "*".to_owned()
            }
        } else {
            stand_in(character).unwrap_or_else(|| character.to_string())
        };
        count += shown.chars().count();
        text.push_str(&shown);
        if in_span {
            span_end = count;
        }
    }
    if start >= line.len() {
        span_start = count;
    }
    span_end = span_end.max(span_start);
    let total = count;
    // Cut long lines to a window around the span.
    if total > MAX_EXCERPT {
        let width = (span_end - span_start).min(MAX_EXCERPT - 2);
        let from = span_start.saturating_sub((MAX_EXCERPT - 2 - width) / 2);
        let to = (from + MAX_EXCERPT - 2).min(total);
        let from = to.saturating_sub(MAX_EXCERPT - 2);
        let mut cut: String = text.chars().skip(from).take(to - from).collect();
        let mut shift = 0;
        if from > 0 {
            cut.insert(0, '…');
            shift = 1;
        }
        if to < total {
            cut.push('…');
        }
        return Excerpt {
            text: cut,
            start: span_start - from + shift,
            width: width.max(1),
        };
    }
    Excerpt {
        text,
        start: span_start,
        width: (span_end - span_start).max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_findings_in_characters_and_spells_out_hidden_ones() {
        let text = "first\nsé \u{202e}evil\n";
        let mut scan = Scan::new("SKILL.md", text, FileKind::Document);
        let start = text.find('\u{202e}').unwrap();
        scan.report(Rule::BidiControl, Severity::High, start, start + 3, "x");
        let finding = &scan.findings[0];
        assert_eq!(
            (finding.line, finding.column, finding.end_column),
            (Some(2), Some(4), Some(5))
        );
        let excerpt = finding.excerpt.as_ref().unwrap();
        assert_eq!(excerpt.text, "sé <U+202E>evil");
        assert_eq!((excerpt.start, excerpt.width), (3, 8));
    }

    #[test]
    fn a_span_placed_inside_a_character_is_widened_to_whole_ones() {
        let text = "x\n\u{fffe}\u{fffe}&&\n";
        let mut scan = Scan::new("scripts/a.sh", text, FileKind::Script);
        let line = text.find('\u{fffe}').unwrap();
        // Each byte pair inside the two wide characters, and past the end.
        for (start, end) in [
            (line, line + 1),
            (line + 1, line + 2),
            (line + 4, line + 99),
        ] {
            scan.report(Rule::MinifiedScript, Severity::Low, start, end, "x");
        }
        let placed: Vec<_> = scan
            .findings
            .iter()
            .map(|finding| (finding.line, finding.column, finding.end_column))
            .collect();
        assert_eq!(
            placed,
            [
                (Some(2), Some(1), Some(2)),
                (Some(2), Some(1), Some(2)),
                (Some(2), Some(2), Some(5)),
            ]
        );
    }

    #[test]
    fn masks_secrets_and_cuts_long_lines_around_the_span() {
        let line = format!("{}KEY=abcdefghijklmnop{}", "x".repeat(300), "y".repeat(300));
        let start = line.find("abcdef").unwrap();
        let excerpt = excerpt(&line, start, start + 16, true);
        assert!(
            excerpt.text.contains("abcdef**********"),
            "{}",
            excerpt.text
        );
        assert!(!excerpt.text.contains("ghij"));
        assert!(excerpt.text.starts_with('…') && excerpt.text.ends_with('…'));
        assert!(excerpt.text.chars().count() <= MAX_EXCERPT);
        let shown: String = excerpt
            .text
            .chars()
            .skip(excerpt.start)
            .take(excerpt.width)
            .collect();
        assert_eq!(shown, "abcdef**********");
    }
}
