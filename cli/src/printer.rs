//! The one place that writes to the terminal.
//!
//! Human output is styled with ANSI codes and written through `anstream`,
//! which strips them when the stream is not a terminal, when `NO_COLOR` is set
//! or with `--color never`. `--quiet` silences status lines, never results or
//! errors; `--json` output is never styled.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "this module is the printer"
)]

use std::io::Write;

use anstyle::{AnsiColor, Style};

use crate::render::printable;

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
}

impl Printer {
    /// Creates a printer; `quiet` silences status lines.
    pub fn new(quiet: bool) -> Self {
        Self { quiet }
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

    /// Writes an error, its causes and a hint to stderr. Their text may
    /// quote a registry's reply or an archive's entry names, so control
    /// characters in it are shown, never sent (see [`printable`]).
    pub fn error(&self, error: &anyhow::Error, hint: Option<&str>) {
        let (red, note) = (style::ERROR, style::NOTE);
        let mut stderr = anstream::stderr().lock();
        let _ = writeln!(
            stderr,
            "{red}error{red:#}: {}",
            printable(&error.to_string())
        );
        for cause in error.chain().skip(1) {
            let _ = writeln!(stderr, "  Caused by: {}", printable(&cause.to_string()));
        }
        if let Some(hint) = hint {
            let _ = writeln!(stderr, "{note}hint{note:#}: {}", printable(hint));
        }
    }
}
