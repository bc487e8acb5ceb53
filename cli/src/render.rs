//! Renders diagnostics for people: a header, a `-->` location, the source
//! line with a caret under the bad spot, and a hint.
//!
//! ```text
//! error[name-mismatch]: `name` is `pdf` but the folder is `pdf-tools`
//!   --> skills/pdf-tools/SKILL.md:2:7
//!    |
//!  2 | name: pdf
//!    |       ^^^
//!    = hint: rename the folder to `pdf` or set `name: pdf-tools`
//! ```
//!
//! Also: text that comes from a registry, an archive or a skill file, made
//! safe for a terminal. Such text may hold control characters (ESC starts
//! sequences that rewrite the screen or hide a link's target, CR overwrites
//! the line) or bidirectional controls (which reorder what is shown): an old
//! or hostile registry may serve what validation would refuse, and
//! `validate` shows the very lines it refuses. So every such text goes
//! through [`one_line`] or [`printable`] before it is printed.

use std::fmt::Write as _;
use std::path::Path;

use skillpkg_index::skill::control::is_bidi_control;
use skillpkg_index::skill::tools::ToolViolation;
use skillpkg_index::skill::{Diagnostic, Severity};

use crate::printer::style;

/// Renders one diagnostic about a file of the skill in `skill_dir`.
pub fn diagnostic(diagnostic: &Diagnostic, skill_dir: &Path) -> String {
    let (level, level_style) = match diagnostic.severity {
        Severity::Error => ("error", style::ERROR),
        Severity::Warning => ("warning", style::WARNING),
    };
    let (bold, gutter) = (style::EMPHASIS, style::GUTTER);
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{level_style}{level}[{}]{level_style:#}{bold}: {}{bold:#}",
        diagnostic.code,
        printable(&diagnostic.message)
    );
    let path = printable(&skill_dir.join(&diagnostic.file).display().to_string());
    let (location, snippet) = match (&diagnostic.location, &diagnostic.source_line) {
        (Some(location), Some(line)) => (
            format!(":{}:{}", location.line, location.column),
            Some((location, line)),
        ),
        (Some(location), None) => (format!(":{}:{}", location.line, location.column), None),
        _ => (String::new(), None),
    };
    let number_width = snippet.map_or(1, |(location, _)| location.line.to_string().len());
    let pad = " ".repeat(number_width);
    let _ = writeln!(out, "{pad}{gutter}-->{gutter:#} {path}{location}");
    if let Some((location, line)) = snippet {
        // One character for one, so the caret stays under its column.
        let line = printable(&line.replace('\t', " "));
        let line_length = line.chars().count();
        let start = location.column.saturating_sub(1).min(line_length);
        let width = location
            .end_column
            .saturating_sub(location.column)
            .max(1)
            .min((line_length - start).max(1));
        let _ = writeln!(out, "{pad} {gutter}|{gutter:#}");
        let _ = writeln!(
            out,
            "{gutter}{}{gutter:#} {gutter}|{gutter:#} {line}",
            location.line
        );
        let _ = writeln!(
            out,
            "{pad} {gutter}|{gutter:#} {}{level_style}{}{level_style:#}",
            " ".repeat(start),
            "^".repeat(width)
        );
    }
    if let Some(hint) = &diagnostic.hint {
        let _ = writeln!(
            out,
            "{pad} {gutter}={gutter:#} {bold}hint{bold:#}: {}",
            printable(hint)
        );
    }
    out
}

/// Renders one way a tool's input schema leaves OpenAI's strict profile:
/// an error when the export was refused for it, else a warning.
///
/// ```text
/// warning[additional-properties]: tool `delete-output`, input_schema at /properties/options: the object schema does not set `additionalProperties: false`
/// ```
pub fn strict_violation(violation: &ToolViolation, is_error: bool) -> String {
    let (level, level_style) = if is_error {
        ("error", style::ERROR)
    } else {
        ("warning", style::WARNING)
    };
    let bold = style::EMPHASIS;
    let place = if violation.violation.pointer.is_empty() {
        String::new()
    } else {
        format!(" at {}", printable(&violation.violation.pointer))
    };
    // Pointers and messages quote property names from the skill: shown, never sent.
    format!(
        "{level_style}{level}[{}]{level_style:#}{bold}: tool `{}`, input_schema{place}: {}{bold:#}",
        violation.violation.rule.as_str(),
        violation.tool,
        printable(&violation.violation.message)
    )
}

/// Returns `text` with every control character but line feed and tab, and
/// every bidirectional control, replaced by a visible stand-in of one
/// character: the Unicode control picture for C0 controls and DEL (`␛` for
/// ESC), `�` for the others. Lines and columns stay where they were.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|character| match character {
            '\n' | '\t' => character,
            '\0'..='\u{1f}' => char::from_u32(0x2400 + u32::from(character)).unwrap_or('\u{fffd}'),
            '\u{7f}' => '\u{2421}',
            _ if character.is_control() || is_bidi_control(character) => '\u{fffd}',
            _ => character,
        })
        .collect()
}

/// Returns `text` on one line: runs of whitespace, control characters and
/// bidirectional controls become one space, so a description can neither
/// break a table, nor send terminal escapes, nor reorder what follows it.
pub fn one_line(text: &str) -> String {
    let mut line = String::with_capacity(text.len());
    for word in text
        .split(|character: char| {
            character.is_whitespace() || character.is_control() || is_bidi_control(character)
        })
        .filter(|word| !word.is_empty())
    {
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    line
}

/// Returns `text` cut to at most `width` characters, ending in `…` when cut.
pub fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_text_fits_one_line() {
        assert_eq!(
            one_line("  Read\n\tPDF \u{1b}[2J files. "),
            "Read PDF [2J files."
        );
        assert_eq!(
            one_line("evil\u{202e}txt.exe \u{9b}31m\rok"),
            "evil txt.exe 31m ok"
        );
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abcd", 4), "abcd");
    }

    #[test]
    fn printable_text_shows_controls_without_sending_them() {
        assert_eq!(
            printable("a\u{1b}[2Jb\rc\u{7f}\u{9b}\u{202e}\n\tz"),
            "a\u{241b}[2Jb\u{240d}c\u{2421}\u{fffd}\u{fffd}\n\tz"
        );
        let rendered = diagnostic(
            &Diagnostic::new(
                skillpkg_index::skill::Code::ControlCharacter,
                "SKILL.md",
                "bad \u{1b}]0;title\u{7}",
            )
            .at(
                skillpkg_index::skill::Location {
                    line: 1,
                    column: 14,
                    end_column: 15,
                },
                "description: \u{1b}[2J",
            )
            .with_hint("\u{9b}"),
            Path::new("skill"),
        );
        // The styles are the renderer's own escapes; none of the text's passes.
        for sent in ["\u{1b}]0;", "\u{1b}[2J", "\u{7}", "\u{9b}"] {
            assert!(!rendered.contains(sent), "{sent:?} in {rendered:?}");
        }
        assert!(
            rendered.contains("description: \u{241b}[2J\n"),
            "{rendered}"
        );
    }
}
