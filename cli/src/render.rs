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
