//! The one rule for text the registry stores from a client: no control
//! characters.
//!
//! What a client sends and the registry keeps (a yank reason, a user name,
//! the lines of a signature or of provenance) goes back out in index lines,
//! web pages, the audit trail that `skillpkg-registry events` prints one
//! tab-separated line an event, and every client's terminal. A terminal
//! acts on control characters: ESC starts sequences that clear the screen,
//! move the cursor or make a link whose text hides its target; CR and LF
//! let a line pass for two; C1 controls (U+0080 to U+009F) are the same
//! commands in one character; bidirectional controls make text display in
//! another order than it is stored. So:
//!
//! | what | refused |
//! |---|---|
//! | a string (a yank reason, a user name) | every control character (C0, tab and line feed included, DEL, C1) and bidirectional control |
//! | a stored file (a `.minisig`, an `.intoto.jsonl`), line by line | the same but tab, which a signature's trusted comment holds; lines end with LF or CRLF |
//! | the strings of a JSON file (an `.intoto.jsonl`'s envelopes and their statements), escaped or not | as a string |
//!
//! The skill's own text (`SKILL.md`'s frontmatter) has its rule in
//! `skillpkg_index::skill::control`, checked by validation, which allows
//! tab and line feed in a description (YAML block scalars hold them).
//! Names, versions and key ids are parsed into types that admit none.

use base64::Engine as _;
use skillpkg_index::skill::control::{describe, is_bidi_control};

/// Why a client's text cannot be stored.
#[derive(Debug, thiserror::Error)]
pub enum TextError {
    #[error(
        "{what} holds {}, at character {position}: text the registry stores is shown in terminals and web pages, where a control character can rewrite what is shown; remove it",
        describe(*character)
    )]
    Control {
        /// What the text is, for the message: "the yank reason".
        what: String,
        character: char,
        /// Where, from 1, in characters.
        position: usize,
    },
    #[error("{what} is {length} characters long; this registry keeps at most {limit}")]
    TooLong {
        what: String,
        length: usize,
        limit: usize,
    },
}

/// Returns true if and only if `character` may not be in a string the
/// registry stores: a control character (C0, DEL, C1) or a bidirectional
/// control.
pub fn is_refused(character: char) -> bool {
    character.is_control() || is_bidi_control(character)
}

/// Refuses `text`, a string to store, when it holds a character
/// [`is_refused`] or is longer than `limit` characters.
pub fn check_string(what: &str, text: &str, limit: usize) -> Result<(), TextError> {
    if let Some((index, character)) = text
        .chars()
        .enumerate()
        .find(|(_, character)| is_refused(*character))
    {
        return Err(TextError::Control {
            what: what.to_owned(),
            character,
            position: index + 1,
        });
    }
    let length = text.chars().count();
    if length > limit {
        return Err(TextError::TooLong {
            what: what.to_owned(),
            length,
            limit,
        });
    }
    Ok(())
}

/// Refuses `text`, a file to store, when a line of it holds a character
/// [`is_refused`] other than tab. Lines end with LF or CRLF.
pub fn check_lines(what: &str, text: &str) -> Result<(), TextError> {
    let mut position = 0;
    for line in text.split('\n') {
        let line_end = line.strip_suffix('\r').unwrap_or(line);
        if let Some((index, character)) = line_end
            .chars()
            .enumerate()
            .find(|(_, character)| *character != '\t' && is_refused(*character))
        {
            return Err(TextError::Control {
                what: what.to_owned(),
                character,
                position: position + index + 1,
            });
        }
        position += line.chars().count() + 1;
    }
    Ok(())
}

/// Refuses a JSON-lines file (an `.intoto.jsonl`) when a line of it, or a
/// string in it, escaped or not, holds a control character; a DSSE
/// envelope's base64 `payload` is decoded, and the strings of the JSON in
/// it checked too. Lines that are not JSON are left to the file's own
/// parser: only what would be stored and shown is checked here.
pub fn check_json_lines(what: &str, text: &str) -> Result<(), TextError> {
    check_lines(what, text)?;
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        check_json_strings(what, &value)?;
        let payload = value
            .get("payload")
            .and_then(serde_json::Value::as_str)
            .and_then(|payload| {
                base64::engine::general_purpose::STANDARD
                    .decode(payload)
                    .ok()
            })
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok());
        if let Some(statement) = payload {
            check_json_strings(what, &statement)?;
        }
    }
    Ok(())
}

/// Refuses `value` when one of its strings (keys included) holds a
/// character [`is_refused`].
fn check_json_strings(what: &str, value: &serde_json::Value) -> Result<(), TextError> {
    // The depth is bounded by serde_json's recursion limit (128).
    let check = |text: &str| check_string(what, text, usize::MAX);
    match value {
        serde_json::Value::String(text) => check(text),
        serde_json::Value::Array(values) => values
            .iter()
            .try_for_each(|value| check_json_strings(what, value)),
        serde_json::Value::Object(map) => map.iter().try_for_each(|(key, value)| {
            check(key)?;
            check_json_strings(what, value)
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_refuses_every_control_character_and_says_which() {
        for hostile in [
            "leaks\u{1b}[2J the key",
            "two\nlines",
            "a\ttab",
            "back\rwards",
            "del\u{7f}",
            "csi\u{9b}31m",
            "rtl\u{202e}gnp.exe",
        ] {
            assert!(
                check_string("the yank reason", hostile, 1000).is_err(),
                "{hostile:?}"
            );
        }
        let error = check_string("the yank reason", "ok\u{1b}[2J", 1000).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the yank reason holds U+001B (ESC), a control character, at character 3: text the registry stores is shown in terminals and web pages, where a control character can rewrite what is shown; remove it"
        );
        assert!(check_string("the yank reason", "leaks the API key — sorry", 1000).is_ok());
        assert!(matches!(
            check_string("the yank reason", &"x".repeat(1001), 1000),
            Err(TextError::TooLong { length: 1001, .. })
        ));
    }

    #[test]
    fn a_file_keeps_its_tabs_and_line_ends_and_nothing_else() {
        let signature = "untrusted comment: signature\nRUS...\r\ntrusted comment: skillpkg/1\tpdf@1.0.0\tsha256:00\nQMt...\n";
        assert!(check_lines("the signature", signature).is_ok());
        let hostile = "untrusted comment: \u{1b}]8;;https://evil\u{7}x\nRUS...\n";
        assert!(matches!(
            check_lines("the signature", hostile),
            Err(TextError::Control {
                character: '\u{1b}',
                position: 20,
                ..
            })
        ));
        assert!(check_lines("the signature", "a\rb\n").is_err(), "a lone CR");
    }

    #[test]
    fn json_strings_are_checked_escaped_and_in_a_base64_payload() {
        assert!(check_json_lines("the provenance", "{\"a\":\"b\"}\n").is_ok());
        assert!(check_json_lines("the provenance", "{\"a\":\"\\u001b[2J\"}\n").is_err());
        assert!(check_json_lines("the provenance", "{\"\\u009b\":1}\n").is_err());
        let payload = base64::engine::general_purpose::STANDARD
            .encode(r#"{"predicate":{"uri":"git+https://x\u001b[2J"}}"#);
        let envelope = format!("{{\"payload\":\"{payload}\",\"signatures\":[]}}\n");
        assert!(check_json_lines("the provenance", &envelope).is_err());
        let clean = base64::engine::general_purpose::STANDARD.encode(r#"{"uri":"git+https://x"}"#);
        assert!(
            check_json_lines(
                "the provenance",
                &format!("{{\"payload\":\"{clean}\",\"signatures\":[]}}\n")
            )
            .is_ok()
        );
    }
}
