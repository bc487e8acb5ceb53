//! The one place that writes to the terminal.
//!
//! Human output is styled with ANSI codes and written through `anstream`,
//! which strips them when the stream is not a terminal, when `NO_COLOR` is set
//! or with `--color never`. `--quiet` silences status lines, never results or
//! errors; `--json` output is never styled.
//!
//! Errors quote what registries, archives and files said (an index line's
//! signer, a server's detail), so the error printer escapes every control
//! character but newlines and tabs: none of that text may drive the
//! terminal (retitle the window, clear the screen, move the cursor).
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "this module is the printer"
)]

use std::borrow::Cow;
use std::io::Write;

use anstyle::{AnsiColor, Style};

/// Styles used across commands.
pub mod style {
    use super::{AnsiColor, Style};

    pub const ERROR: Style = AnsiColor::Red.on_default().bold();
    pub const WARNING: Style = AnsiColor::Yellow.on_default().bold();
    pub const SUCCESS: Style = AnsiColor::Green.on_default().bold();
    pub const NOTE: Style = AnsiColor::Cyan.on_default().bold();
    pub const EMPHASIS: Style = Style::new().bold();
    pub const GUTTER: Style = AnsiColor::Blue.on_default().bold();
}

/// Writes results to stdout and status and errors to stderr.
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    quiet: bool,
    verbose: bool,
}

impl Printer {
    /// Creates a printer; `quiet` silences status lines.
    pub fn new(quiet: bool) -> Self {
        Self {
            quiet,
            verbose: false,
        }
    }

    /// The printer with `-v` given: details summed up otherwise are listed.
    #[must_use]
    pub fn verbose(self, verbose: bool) -> Self {
        Self { verbose, ..self }
    }

    /// Returns true if and only if `-v` was given.
    pub fn is_verbose(&self) -> bool {
        self.verbose
    }

    /// Returns true if and only if status output is silenced.
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// Writes one result line (or block) to stdout.
    pub fn result(&self, text: &str) {
        let mut stdout = anstream::stdout().lock();
        let _ = writeln!(stdout, "{text}");
    }

    /// Writes a JSON document to stdout.
    pub fn json(&self, value: &impl serde::Serialize) {
        let text = serde_json::to_string_pretty(value).expect("JSON output serialises");
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{text}");
    }

    /// Writes bytes to stdout as they are (a generated script or page).
    pub fn bytes(&self, bytes: &[u8]) {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(bytes);
    }

    /// Writes JSON that is already serialised (a document as a server sent
    /// it) to stdout.
    pub fn json_text(&self, text: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{text}");
    }

    /// Writes a right-aligned status verb and a message to stderr, like cargo.
    pub fn status(&self, verb: &str, message: &str) {
        if self.quiet {
            return;
        }
        let style = style::SUCCESS;
        let mut stderr = anstream::stderr().lock();
        let _ = writeln!(stderr, "{style}{verb:>12}{style:#} {message}");
    }

    /// Writes a block of text to stderr (diagnostics that accompany another result).
    pub fn diagnostic(&self, text: &str) {
        let mut stderr = anstream::stderr().lock();
        let _ = writeln!(stderr, "{text}");
    }

    /// Writes a prompt to stderr, without a newline, for input that follows
    /// on the same line.
    pub fn prompt(&self, text: &str) {
        let mut stderr = anstream::stderr().lock();
        let _ = write!(stderr, "{text}");
        let _ = stderr.flush();
    }

    /// Writes an error, its causes and a hint to stderr.
    pub fn error(&self, error: &anyhow::Error, hint: Option<&str>) {
        let (red, note) = (style::ERROR, style::NOTE);
        let mut stderr = anstream::stderr().lock();
        let _ = writeln!(
            stderr,
            "{red}error{red:#}: {}",
            terminal_safe(&error.to_string())
        );
        for cause in causes(error) {
            let _ = writeln!(stderr, "  Caused by: {}", terminal_safe(&cause));
        }
        if let Some(hint) = hint {
            let _ = writeln!(stderr, "{note}hint{note:#}: {}", terminal_safe(hint));
        }
    }
}

/// Returns the causes of `error` worth showing below it: each one's text,
/// leaving out a cause already said, word for word, by the error or a
/// cause above it (an error that quotes its source, a wrapper that repeats
/// the request's failure), so that no sentence is read twice.
pub fn causes(error: &anyhow::Error) -> Vec<String> {
    let mut said = vec![error.to_string()];
    for cause in error.chain().skip(1) {
        let text = cause.to_string();
        if !text.trim().is_empty() && !said.iter().any(|above| above.contains(&text)) {
            said.push(text);
        }
    }
    said.split_off(1)
}

/// Returns `text` with every control character other than a newline or a
/// tab, and every bidirectional control, escaped as Rust would write it
/// (`\u{1b}`), so that it shows what was there without acting on the
/// terminal or reordering the line.
fn terminal_safe(text: &str) -> Cow<'_, str> {
    let unsafe_character = |character: char| {
        (character.is_control() && !matches!(character, '\n' | '\t'))
            || skillpkg_index::skill::control::is_bidi_control(character)
    };
    if !text.chars().any(unsafe_character) {
        return Cow::Borrowed(text);
    }
    let mut safe = String::with_capacity(text.len() + 16);
    for character in text.chars() {
        if unsafe_character(character) {
            safe.extend(character.escape_debug());
        } else {
            safe.push(character);
        }
    }
    Cow::Owned(safe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_in_errors_are_shown_escaped_not_sent_to_the_terminal() {
        assert_eq!(
            terminal_safe("signer \u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}2J\r!"),
            r"signer \u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}2J\r!"
        );
        assert_eq!(
            terminal_safe("name \u{202e}gpj.exe"),
            r"name \u{202e}gpj.exe"
        );
        assert!(matches!(
            terminal_safe("no solution:\n\tpdf 1.0.0 needs base ^2"),
            Cow::Borrowed("no solution:\n\tpdf 1.0.0 needs base ^2")
        ));
    }

    #[test]
    fn a_cause_already_said_is_left_out() {
        let error = anyhow::anyhow!("operation timed out")
            .context("request or response body error")
            .context("request or response body error")
            .context("cannot read index/pd/f-/pdf: request or response body error");
        assert_eq!(causes(&error), vec!["operation timed out"]);

        let error = anyhow::anyhow!("operation timed out")
            .context("error sending request")
            .context("config.json did not answer in time");
        assert_eq!(
            causes(&error),
            vec!["error sending request", "operation timed out"]
        );
    }
}
