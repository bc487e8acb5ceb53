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
//! Also: text that comes from a registry, made fit for one line of a table.

use std::fmt::Write as _;
use std::path::Path;

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
        diagnostic.code, diagnostic.message
    );
    let path = skill_dir.join(&diagnostic.file);
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
    let _ = writeln!(
        out,
        "{pad}{gutter}-->{gutter:#} {}{location}",
        path.display()
    );
    if let Some((location, line)) = snippet {
        let line = line.replace('\t', " ");
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
        let _ = writeln!(out, "{pad} {gutter}={gutter:#} {bold}hint{bold:#}: {hint}");
    }
    out
}

/// Returns `text` on one line: runs of whitespace and control characters
/// become one space, so a description can neither break a table nor send
/// terminal escapes.
pub fn one_line(text: &str) -> String {
    let mut line = String::with_capacity(text.len());
    for word in text
        .split(|character: char| character.is_whitespace() || character.is_control())
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
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abcd", 4), "abcd");
    }
}
