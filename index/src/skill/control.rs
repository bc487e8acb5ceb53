//! Control characters in `SKILL.md`: what is refused, where, and why.
//!
//! Frontmatter text is stored in the index, `search.json` and the discovery
//! index, and shown in terminals by `search`, `info` and every other tool
//! that lists skills. A terminal acts on control characters: ESC starts
//! sequences that clear the screen, move the cursor, retitle the window or
//! make a link (OSC 8) whose text hides its target; CR returns to the start
//! of the line, so later text overwrites earlier; C1 controls (U+0080 to
//! U+009F) are the same commands in one character. Bidirectional controls
//! (U+202A-U+202E, U+2066-U+2069) make text display in another order than it
//! is stored (CVE-2021-42574, "Trojan Source"). So:
//!
//! | where | refused |
//! |---|---|
//! | frontmatter values (every string, at any depth) | C0 controls but tab and line feed, DEL, C1 controls, bidirectional controls |
//! | frontmatter keys | the same, and tab and line feed: a key is a one-line name |
//! | frontmatter, raw (comments included) | the same as values |
//! | body | C0 controls but tab and line feed, DEL, C1 controls |
//! | anywhere | a carriage return that is not part of a CRLF line end |
//!
//! Tab and line feed stay allowed in values: YAML block scalars (`|`) hold
//! them, they only move the cursor as text would, and every place that shows
//! a value on one line folds whitespace into single spaces. The body may use
//! bidirectional controls, which right-to-left prose can need; it is read by
//! agents, not listed in indexes.
//!
//! A control character can be in the file as written (a raw byte) or come
//! from an escape in a double-quoted YAML string (`"\e[2J"`). Raw ones are
//! found by scanning the text and reported at their exact line and column;
//! escaped ones by walking the parsed frontmatter, reported at their node.

use std::path::Path;

use super::diagnostic::{Code, Diagnostic, Location};
use super::document::{Node, SkillDocument, Value};

/// Raw control characters reported one by one; past this, the last report
/// counts the rest, so a file full of them cannot flood the output.
const MAX_REPORTED: usize = 10;

/// Returns true if and only if `character` is a bidirectional embedding,
/// override or isolate control (U+202A-U+202E, U+2066-U+2069).
pub fn is_bidi_control(character: char) -> bool {
    matches!(character, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Returns true if and only if `character` may not appear in a frontmatter
/// value: a C0 control other than tab and line feed, DEL, a C1 control or a
/// bidirectional control.
pub fn is_refused_in_value(character: char) -> bool {
    (character.is_control() && !matches!(character, '\t' | '\n')) || is_bidi_control(character)
}

/// Returns true if and only if `character` may not appear in a frontmatter
/// key: as in a value, and tab and line feed too.
fn is_refused_in_key(character: char) -> bool {
    character.is_control() || is_bidi_control(character)
}

/// Returns true if and only if `character` may not appear in the body.
fn is_refused_in_body(character: char) -> bool {
    character.is_control() && !matches!(character, '\t' | '\n')
}

/// Describes `character` for a message: `U+001B (ESC), a control character`.
pub fn describe(character: char) -> String {
    const C0: [&str; 32] = [
        "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS", "TAB", "LF", "VT", "FF",
        "CR", "SO", "SI", "DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM",
        "SUB", "ESC", "FS", "GS", "RS", "US",
    ];
    let code = u32::from(character);
    let (name, kind) = match character {
        '\0'..='\u{1f}' => (C0[code as usize], "a control character"),
        '\u{7f}' => ("DEL", "a control character"),
        '\u{9b}' => ("CSI", "a C1 control character"),
        '\u{9d}' => ("OSC", "a C1 control character"),
        '\u{80}'..='\u{9f}' => ("", "a C1 control character"),
        '\u{202a}' => ("LRE", "a bidirectional control"),
        '\u{202b}' => ("RLE", "a bidirectional control"),
        '\u{202c}' => ("PDF", "a bidirectional control"),
        '\u{202d}' => ("LRO", "a bidirectional control"),
        '\u{202e}' => ("RLO", "a bidirectional control"),
        '\u{2066}' => ("LRI", "a bidirectional control"),
        '\u{2067}' => ("RLI", "a bidirectional control"),
        '\u{2068}' => ("FSI", "a bidirectional control"),
        '\u{2069}' => ("PDI", "a bidirectional control"),
        _ => ("", "a character"),
    };
    if name.is_empty() {
        format!("U+{code:04X}, {kind}")
    } else {
        format!("U+{code:04X} ({name}), {kind}")
    }
}

/// Returns advice on removing `character`.
fn hint(character: char) -> &'static str {
    if is_bidi_control(character) {
        "remove it: bidirectional controls make text display in another order than it is stored, so readers see something else than agents and indexes get"
    } else if matches!(character, '\t' | '\n') {
        "keys are one-line names: remove it, or move the text into a value"
    } else {
        "remove it: terminals and indexes that show this text act on control characters (ESC starts sequences that rewrite the screen or hide links; CR overwrites the line)"
    }
}

/// Reports every refused control character of `document`.
pub(crate) fn check(document: &SkillDocument, file: &Path, diagnostics: &mut Vec<Diagnostic>) {
    check_lone_carriage_returns(
        document.lone_carriage_returns,
        &document.text,
        file,
        diagnostics,
    );
    check_raw(document, file, diagnostics);
    let raw_frontmatter = frontmatter_text(document);
    let walk = Walk {
        document,
        file,
        raw_frontmatter,
    };
    for (key, value) in &document.frontmatter {
        let path = || {
            key.value
                .scalar_text()
                .map_or_else(|| "(a key)".to_owned(), |text| escaped(&text))
        };
        walk.node(key, &path, true, diagnostics);
        walk.node(value, &path, false, diagnostics);
    }
}

/// Reports the first of `found` lone carriage returns in `text` (with its
/// line ends normalised), and how many more there are.
pub(crate) fn check_lone_carriage_returns(
    found: (Option<Location>, usize),
    text: &str,
    file: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let (Some(location), count) = found else {
        return;
    };
    let more = match count {
        0 | 1 => String::new(),
        _ => format!(" (and {} more in the file)", count - 1),
    };
    diagnostics.push(
        Diagnostic::new(
            Code::ControlCharacter,
            file,
            format!("a carriage return (U+000D) ends a line without a line feed{more}"),
        )
        .at(location, text)
        .with_hint("end lines with LF or CRLF: many readers do not take a lone CR as a line end, and a terminal uses it to overwrite the line"),
    );
}

/// The frontmatter as written: the lines before the body.
pub(crate) fn frontmatter_text(document: &SkillDocument) -> &str {
    // The body is the end of the text, so what comes before it is this.
    &document.text[..document.text.len() - document.body.len()]
}

/// Reports raw control characters at their line and column.
fn check_raw(document: &SkillDocument, file: &Path, diagnostics: &mut Vec<Diagnostic>) {
    let text = &document.text;
    // The body is the end of the text; everything before it is frontmatter.
    let body_start = text.len() - document.body.len();
    let mut found: Vec<(Location, char)> = Vec::new();
    let mut total = 0;
    for offset in candidates(text.as_bytes()) {
        let character = text[offset..]
            .chars()
            .next()
            .expect("a candidate byte starts a character");
        let refused = if offset < body_start {
            is_refused_in_value(character)
        } else {
            is_refused_in_body(character)
        };
        if refused {
            total += 1;
            if found.len() < MAX_REPORTED {
                let location =
                    super::lint::location_at(text, offset, offset + character.len_utf8());
                found.push((location, character));
            }
        }
    }
    let shown = found.len();
    for (index, (location, character)) in found.into_iter().enumerate() {
        let part = if location.line < document.body_line {
            "the frontmatter"
        } else {
            "the body"
        };
        let more = if index + 1 == shown && total > shown {
            format!(" (and {} more in the file)", total - shown)
        } else {
            String::new()
        };
        diagnostics.push(
            Diagnostic::new(
                Code::ControlCharacter,
                file,
                format!("{part} contains {}{more}", describe(character)),
            )
            .at(location, &document.text)
            .with_hint(hint(character)),
        );
    }
}

/// Returns, in order, the offsets in `bytes` (UTF-8) where a refused
/// character may start: every refused character begins with a C0 byte
/// other than tab and line feed, DEL, 0xC2 (the C1 controls, U+0080-U+009F)
/// or 0xE2 (the bidirectional controls), and each of these bytes starts a
/// character.
///
/// Two vectorised passes find them without decoding the text, which is
/// nearly always clean: one tests blocks of bytes for a control character
/// (almost never there), one finds each 0xC2 and 0xE2 (common: dashes,
/// arrows, quotes and no-break spaces start so) and keeps those whose next
/// bytes make a refused character.
fn candidates(bytes: &[u8]) -> impl Iterator<Item = usize> {
    const BLOCK: usize = 64;
    // `|` and `&`, not `||` and `&&`: without branches the compiler tests
    // a block with a few vector instructions.
    fn is_control(byte: u8) -> bool {
        (byte < 0x20) & (byte != b'\t') & (byte != b'\n') | (byte == 0x7f)
    }
    fn any_control(block: &[u8]) -> bool {
        let mut any = 0_u8;
        for &byte in block {
            any |= u8::from(is_control(byte));
        }
        any != 0
    }
    let mut found: Vec<usize> = bytes
        .chunks(BLOCK)
        .enumerate()
        .filter(|(_, block)| any_control(block))
        .flat_map(|(index, block)| {
            block
                .iter()
                .enumerate()
                .filter(|(_, byte)| is_control(**byte))
                .map(move |(within, _)| index * BLOCK + within)
        })
        .collect();
    let controls = found.len();
    found.extend(
        memchr::memchr2_iter(0xc2, 0xe2, bytes).filter(|offset| may_be_refused_at(bytes, *offset)),
    );
    if controls > 0 && found.len() > controls {
        found.sort_unstable();
    }
    found.into_iter()
}

/// Returns false for the common characters that share a first byte with
/// refused ones, by their next bytes: `—`, `→` and `“` start with 0xE2 like
/// the bidirectional controls (E2 80 AA-AE, E2 81 A6-A9), `©` and the
/// no-break space with 0xC2 like the C1 controls (C2 80-9F).
fn may_be_refused_at(bytes: &[u8], offset: usize) -> bool {
    let next = |step: usize| bytes.get(offset + step).copied();
    match bytes[offset] {
        0xc2 => matches!(next(1), Some(0x80..=0x9f)),
        0xe2 => matches!(
            (next(1), next(2)),
            (Some(0x80), Some(0xaa..=0xae)) | (Some(0x81), Some(0xa6..=0xa9))
        ),
        _ => false,
    }
}

/// The walk over the parsed frontmatter.
struct Walk<'a> {
    document: &'a SkillDocument,
    file: &'a Path,
    /// The frontmatter as written, to tell raw characters from escaped ones.
    raw_frontmatter: &'a str,
}

impl Walk<'_> {
    /// Reports the key or value at `node`, named by `path` (`metadata.author`,
    /// `tools[0].name`), or any string below it, that holds a refused
    /// character which is not in the file as written, and so came from an
    /// escape. The path is rendered only for a report: rendering one for
    /// every node of a large frontmatter cost more than the check itself.
    fn node(
        &self,
        node: &Node,
        path: &dyn Fn() -> String,
        is_key: bool,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        match &node.value {
            Value::String(text) => self.string(node, text, path, is_key, diagnostics),
            Value::Sequence(items) => {
                for (index, item) in items.iter().enumerate() {
                    self.node(item, &|| format!("{}[{index}]", path()), false, diagnostics);
                }
            }
            Value::Mapping(entries) => {
                for (key, value) in entries {
                    let inner = || match key.value.scalar_text() {
                        Some(text) => format!("{}.{}", path(), escaped(&text)),
                        None => format!("{}.(a key)", path()),
                    };
                    self.node(key, &inner, true, diagnostics);
                    self.node(value, &inner, false, diagnostics);
                }
            }
            Value::Null | Value::Bool(_) | Value::Integer(_) | Value::Float(_) => {}
        }
    }

    fn string(
        &self,
        node: &Node,
        text: &str,
        path: &dyn Fn() -> String,
        is_key: bool,
        diagnostics: &mut Vec<Diagnostic>,
    ) {
        let refused = if is_key {
            is_refused_in_key
        } else {
            is_refused_in_value
        };
        let Some((position, character)) = text.chars().enumerate().find(|(_, c)| refused(*c))
        else {
            return;
        };
        // The raw scan has reported it where it stands.
        if is_refused_in_value(character) && self.raw_frontmatter.contains(character) {
            return;
        }
        let path = path();
        let what = if is_key {
            format!("the key `{path}`")
        } else {
            format!("`{path}`")
        };
        diagnostics.push(
            Diagnostic::new(
                Code::ControlCharacter,
                self.file,
                format!(
                    "{what} contains {} at character {}",
                    describe(character),
                    position + 1
                ),
            )
            .at(node.location, &self.document.text)
            .with_hint(hint(character)),
        );
    }
}

/// Returns `text` with refused characters written as `\u{1b}`, so a message
/// about them never carries them.
fn escaped(text: &str) -> String {
    text.chars()
        .map(|character| {
            if is_refused_in_key(character) {
                character.escape_unicode().to_string()
            } else {
                character.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_controls_by_name() {
        assert_eq!(describe('\u{1b}'), "U+001B (ESC), a control character");
        assert_eq!(describe('\u{9b}'), "U+009B (CSI), a C1 control character");
        assert_eq!(describe('\u{85}'), "U+0085, a C1 control character");
        assert_eq!(
            describe('\u{202e}'),
            "U+202E (RLO), a bidirectional control"
        );
    }

    #[test]
    fn candidates_are_where_refused_characters_may_stand() {
        let text = "a\u{1b}b — → “c” ©\u{a0}\u{85}\u{202e}\u{2066}\u{2069}\u{7f}\t\n";
        let found: Vec<char> = candidates(text.as_bytes())
            .map(|offset| text[offset..].chars().next().unwrap())
            .collect();
        assert_eq!(
            found,
            [
                '\u{1b}', '\u{85}', '\u{202e}', '\u{2066}', '\u{2069}', '\u{7f}'
            ]
        );
        // Past a block boundary too.
        let long = format!("{}\u{9b}", "x".repeat(100));
        assert_eq!(candidates(long.as_bytes()).collect::<Vec<_>>(), [100]);
    }

    #[test]
    fn tabs_and_line_feeds_are_allowed_in_values_only() {
        for character in ['\t', '\n'] {
            assert!(!is_refused_in_value(character));
            assert!(is_refused_in_key(character));
        }
        for character in ['\r', '\u{1b}', '\u{7f}', '\u{9b}', '\u{2066}'] {
            assert!(is_refused_in_value(character), "{character:?}");
        }
        assert!(!is_refused_in_body('\u{202e}'));
        assert!(!is_refused_in_value('\u{200d}'), "emoji sequences use ZWJ");
    }
}
