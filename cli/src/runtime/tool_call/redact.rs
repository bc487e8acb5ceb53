//! Secret redaction: every occurrence of a declared secret's value becomes
//! `[REDACTED:<NAME>]` before text leaves the runtime (spec 003 §8: hosts
//! MUST redact secrets from logs and tool outputs).
//!
//! The secrets are the values, in the server's environment, of the names
//! skills list under `secrets.required`. All of them are found in one pass
//! of an Aho-Corasick automaton, so redacting 1 MiB of output costs one
//! linear scan, whatever the number of secrets.
//!
//! Rules, each tested below:
//! - a value shorter than [`MIN_SECRET_CHARS`] characters is not redacted:
//!   no real credential is that short, and replacing every `abc` would
//!   wreck the output while telling a reader where the value occurs; such
//!   names are listed by [`Redactor::skipped`] so the server can warn;
//! - values that overlap in the text (`abcdef` and `defghi` in
//!   `abcdefghi`) are replaced as one span named after both,
//!   `[REDACTED:A,B]`, so no part of either is left; values that merely
//!   touch are replaced one after the other;
//! - names that share a value are named together;
//! - matching is on bytes, and a UTF-8 value can only match at character
//!   boundaries, so redacting valid UTF-8 gives valid UTF-8;
//! - in JSON, strings and object keys are redacted once parsed, so a value
//!   that JSON escapes on the wire is found too; numbers are left alone;
//! - besides the value itself, its simple encodings ([`encodings`]) are
//!   replaced the same way: reversed, base64 (standard alphabet, with or
//!   without `=` padding), hex (lower and upper case) and URL-encoded
//!   (every byte but `A-Z a-z 0-9 - . _ ~` as `%XX`). These are exactly the
//!   forms a script produces by accident or with one standard call.
//!
//! This is a best-effort second line, not a wall: a tool that means to leak
//! what it was given can split, compress, encrypt or wrap a value in ways
//! no search finds (a value whose base64 is cut into lines, the value
//! inside `base64(user:value)`, any other cipher). The wall is that the
//! tool cannot send it anywhere: the sandbox's network rules.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine as _;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;

/// The shortest secret value, in characters, that is redacted.
pub const MIN_SECRET_CHARS: usize = 4;

/// What URL encoding leaves as it is: RFC 3986's unreserved characters.
const URL_UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// Returns the forms of `value` that are redacted: the value itself, then
/// reversed (by character), base64 (standard alphabet, padding left out so
/// that padded and unpadded output both match), hex in lower and in upper
/// case, and URL-encoded (uppercase `%XX` for every byte outside
/// [`URL_UNRESERVED`]). Forms equal to an earlier one are left out.
pub(crate) fn encodings(value: &str) -> Vec<String> {
    let mut forms = vec![
        value.to_owned(),
        value.chars().rev().collect(),
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(value),
        hex_lower(value.as_bytes()),
        hex_lower(value.as_bytes()).to_ascii_uppercase(),
        utf8_percent_encode(value, URL_UNRESERVED).to_string(),
    ];
    let mut seen = std::collections::HashSet::new();
    forms.retain(|form| seen.insert(form.clone()));
    forms
}

fn hex_lower(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut text, byte| {
        let _ = write!(text, "{byte:02x}");
        text
    })
}

/// Replaces declared secret values in text and JSON.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Finds every value, overlaps included; `None` with no values.
    matcher: Option<AhoCorasick>,
    /// For each pattern, the names that have its value, sorted.
    names: Vec<Vec<String>>,
    /// The values and their encodings, for [`Redactor::cut_partial_tail`].
    values: Vec<String>,
    skipped: Vec<String>,
}

impl fmt::Debug for Redactor {
    // The automaton holds the values: show only the names.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("names", &self.names)
            .field("skipped", &self.skipped)
            .finish_non_exhaustive()
    }
}

impl Redactor {
    /// Returns a redactor for `secrets`, pairs of a name and its value,
    /// that replaces each value and its [`encodings`]. Empty values are
    /// ignored; values under [`MIN_SECRET_CHARS`] characters are not
    /// redacted and their names are kept in [`Redactor::skipped`].
    pub fn new<N, V>(secrets: impl IntoIterator<Item = (N, V)>) -> Self
    where
        N: Into<String>,
        V: AsRef<str>,
    {
        let mut by_value: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut skipped = Vec::new();
        for (name, value) in secrets {
            let (name, value) = (name.into(), value.as_ref());
            if value.is_empty() {
                continue;
            }
            if value.chars().count() < MIN_SECRET_CHARS {
                skipped.push(name);
                continue;
            }
            for form in encodings(value) {
                let names = by_value.entry(form).or_default();
                if !names.contains(&name) {
                    names.push(name.clone());
                }
            }
        }
        skipped.sort();
        skipped.dedup();
        let (values, mut names): (Vec<String>, Vec<Vec<String>>) = by_value.into_iter().unzip();
        names.iter_mut().for_each(|names| names.sort());
        // Standard semantics: every occurrence of every value, overlapping
        // ones included, which leftmost-first or leftmost-longest would
        // hide (and leave the tail of a value in clear).
        let matcher = (!values.is_empty()).then(|| {
            AhoCorasick::builder()
                .match_kind(MatchKind::Standard)
                .build(&values)
                .expect("a few secret values fit the automaton's limits")
        });
        Self {
            matcher,
            names,
            values,
            skipped,
        }
    }

    /// Returns `text` without a trailing beginning of a secret (or of one
    /// of its [`encodings`]): output cut at a cap in the middle of a value
    /// would otherwise show its first characters, which no match finds. For
    /// text that was truncated.
    ///
    /// A tail that lies inside a whole value is kept: redaction replaces
    /// it, and cutting it off (the `z` of `wxyz` begins the reversed
    /// `zyxw`) would break that match and leave the rest in clear.
    pub fn cut_partial_tail<'a>(&self, text: &'a str) -> &'a str {
        let whole_from = self.matcher.as_ref().and_then(|matcher| {
            matcher
                .find_overlapping_iter(text)
                .filter(|found| found.end() == text.len())
                .map(|found| found.start())
                .min()
        });
        let mut end = text.len();
        for value in &self.values {
            let cut = (1..value.len())
                .rev()
                .filter(|&len| value.is_char_boundary(len))
                .find(|&len| text[..end].ends_with(&value[..len]));
            if let Some(len) = cut
                && whole_from.is_none_or(|from| end - len < from)
            {
                end -= len;
            }
        }
        &text[..end]
    }

    /// Returns the names whose values are too short to redact, sorted.
    pub fn skipped(&self) -> &[String] {
        &self.skipped
    }

    /// Returns `bytes` with every secret replaced.
    pub fn redact_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        let Some(matcher) = &self.matcher else {
            return Cow::Borrowed(bytes);
        };
        // Matches come in order of where they end, so each new one can only
        // overlap the spans at the end of the list: merging is amortised
        // constant time per match (a span's patterns are the few distinct
        // values in it, not one entry per match).
        let mut spans: Vec<Span> = Vec::new();
        for found in matcher.find_overlapping_iter(bytes) {
            let (start, end) = (found.start(), found.end());
            let pattern = found.pattern().as_usize();
            let Some(mut merged) = spans.pop_if(|last| last.end > start) else {
                spans.push(Span {
                    start,
                    end,
                    patterns: vec![pattern],
                });
                continue;
            };
            // Grown in place: most matches of a long run add nothing new.
            merged.start = merged.start.min(start);
            merged.end = merged.end.max(end);
            merged.add(pattern);
            while let Some(earlier) = spans.pop_if(|earlier| earlier.end > merged.start) {
                merged.start = merged.start.min(earlier.start);
                earlier.patterns.into_iter().for_each(|p| merged.add(p));
            }
            spans.push(merged);
        }
        if spans.is_empty() {
            return Cow::Borrowed(bytes);
        }
        let mut output = Vec::with_capacity(bytes.len());
        let mut at = 0;
        for span in spans {
            output.extend_from_slice(&bytes[at..span.start]);
            output.extend_from_slice(self.label(&span.patterns).as_bytes());
            at = span.end;
        }
        output.extend_from_slice(&bytes[at..]);
        Cow::Owned(output)
    }

    /// Returns `text` with every secret replaced.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        match self.redact_bytes(text.as_bytes()) {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            // Matches of UTF-8 values start and end on character
            // boundaries, so this never falls back to the lossy path.
            Cow::Owned(bytes) => Cow::Owned(
                String::from_utf8(bytes)
                    .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned()),
            ),
        }
    }

    /// Replaces secrets in every string and object key of `value`.
    pub fn redact_value(&self, value: &mut Value) {
        if self.matcher.is_none() {
            return;
        }
        match value {
            Value::String(text) => {
                if let Cow::Owned(redacted) = self.redact(text) {
                    *text = redacted;
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact_value(item)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (key, mut item) in entries {
                    self.redact_value(&mut item);
                    map.insert(self.redact(&key).into_owned(), item);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn label(&self, patterns: &[usize]) -> String {
        let mut names: Vec<&str> = patterns
            .iter()
            .flat_map(|pattern| self.names[*pattern].iter().map(String::as_str))
            .collect();
        names.sort_unstable();
        names.dedup();
        format!("[REDACTED:{}]", names.join(","))
    }
}

/// A run of bytes covered by one or more overlapping secrets.
struct Span {
    start: usize,
    end: usize,
    /// The distinct values found in it.
    patterns: Vec<usize>,
}

impl Span {
    fn add(&mut self, pattern: usize) {
        if !self.patterns.contains(&pattern) {
            self.patterns.push(pattern);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn redactor(secrets: &[(&str, &str)]) -> Redactor {
        Redactor::new(secrets.iter().copied())
    }

    #[test]
    fn every_occurrence_is_replaced_by_the_name() {
        let r = redactor(&[("API_KEY", "sk-12345"), ("OTHER", "hunter2!")]);
        assert_eq!(
            r.redact("key=sk-12345 again sk-12345, pw hunter2!."),
            "key=[REDACTED:API_KEY] again [REDACTED:API_KEY], pw [REDACTED:OTHER]."
        );
        assert!(matches!(r.redact("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn overlapping_values_are_replaced_as_one_span_named_after_both() {
        let r = redactor(&[("A", "abcdef"), ("B", "defghi")]);
        assert_eq!(r.redact("xabcdefghiy"), "x[REDACTED:A,B]y");
        // One value inside another.
        let r = redactor(&[("LONG", "0123456789"), ("SHORT", "3456")]);
        assert_eq!(
            r.redact("-0123456789-3456-"),
            "-[REDACTED:LONG,SHORT]-[REDACTED:SHORT]-"
        );
        // A value overlapping itself.
        let r = redactor(&[("REP", "abab")]);
        assert_eq!(r.redact("ababab"), "[REDACTED:REP]");
    }

    #[test]
    fn adjacent_values_are_replaced_one_after_the_other() {
        let r = redactor(&[("A", "abcd"), ("B", "efgh")]);
        assert_eq!(r.redact("abcdefgh"), "[REDACTED:A][REDACTED:B]");
        assert_eq!(r.redact("abcdabcd"), "[REDACTED:A][REDACTED:A]");
    }

    #[test]
    fn unicode_values_and_text_stay_valid_utf8() {
        let r = redactor(&[
            ("PASS", "pässwörd-ü"),
            ("EMOJI", "🔑🔑🔑🔑"),
            ("UML", "üüü"),
        ]);
        // Five keys hold two overlapping occurrences of four: all go.
        assert_eq!(
            r.redact("äpässwörd-üü and 🔑🔑🔑🔑🔑!"),
            "ä[REDACTED:PASS]ü and [REDACTED:EMOJI]!"
        );
        // The minimum counts characters: `üüü` is six bytes but three
        // characters, so it is too short.
        assert_eq!(r.skipped(), ["UML"]);
    }

    #[test]
    fn empty_and_short_values_are_not_redacted_and_short_ones_are_reported() {
        let r = redactor(&[("EMPTY", ""), ("PIN", "123"), ("OK", "1234")]);
        assert_eq!(r.skipped(), ["PIN"]);
        assert_eq!(
            r.redact("123 1234 12345"),
            "123 [REDACTED:OK] [REDACTED:OK]5"
        );
        let none = Redactor::default();
        assert_eq!(none.redact("anything"), "anything");
    }

    #[test]
    fn names_sharing_a_value_are_named_together() {
        let r = redactor(&[("B_KEY", "same-value"), ("A_KEY", "same-value")]);
        assert_eq!(r.redact("[same-value]"), "[[REDACTED:A_KEY,B_KEY]]");
    }

    #[test]
    fn json_strings_and_keys_are_redacted_after_parsing() {
        // On the wire the value's quote is escaped: a byte search on the
        // raw text would miss it, the parsed string does not.
        let r = redactor(&[("TOKEN", "to\"ken-1")]);
        let raw = r#"{"to\"ken-1": ["a to\"ken-1 b", 12, {"k": "to\"ken-1"}]}"#;
        assert_eq!(r.redact(raw), raw);
        let mut value: Value = serde_json::from_str(raw).unwrap();
        r.redact_value(&mut value);
        assert_eq!(
            value,
            json!({ "[REDACTED:TOKEN]": ["a [REDACTED:TOKEN] b", 12, { "k": "[REDACTED:TOKEN]" }] })
        );
    }

    #[test]
    fn debug_shows_names_never_values() {
        let r = redactor(&[("API_KEY", "sk-secret-value")]);
        let debug = format!("{r:?}");
        assert!(debug.contains("API_KEY"), "{debug}");
        assert!(!debug.contains("sk-secret-value"), "{debug}");
    }

    #[test]
    fn a_mebibyte_of_worst_case_text_is_redacted_in_one_pass() {
        // Every position starts a match of `aaaa` and of `aaaaaaaa`: the
        // most matches the automaton can report for two values.
        let r = redactor(&[("A4", "aaaa"), ("A8", "aaaaaaaa")]);
        let text = "a".repeat(1 << 20);
        let start = std::time::Instant::now();
        assert_eq!(r.redact(&text), "[REDACTED:A4,A8]");
        // Ordinary text with a few secrets.
        let mut text = "lorem ipsum dolor sit amet ".repeat(40_000);
        text.push_str("aaaa");
        assert!(r.redact(&text).ends_with("amet [REDACTED:A4]"));
        // Generous even for a debug build on a busy machine; a quadratic
        // merge would take minutes.
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn reversed_base64_hex_and_url_encoded_values_are_redacted_too() {
        let r = redactor(&[("TOKEN", "s3cr3t/value+1")]);
        for (form, encoded) in [
            ("itself", "s3cr3t/value+1"),
            ("reversed", "1+eulav/t3rc3s"),
            ("base64", "czNjcjN0L3ZhbHVlKzE="),
            ("hex", "7333637233742f76616c75652b31"),
            ("hex, upper case", "7333637233742F76616C75652B31"),
            ("URL-encoded", "s3cr3t%2Fvalue%2B1"),
        ] {
            assert!(
                r.redact(&format!("<{encoded}>"))
                    .starts_with("<[REDACTED:TOKEN]"),
                "{form}"
            );
        }
        // Padded or not, base64 is found; the padding, which says
        // nothing, stays.
        assert_eq!(r.redact("czNjcjN0L3ZhbHVlKzE="), "[REDACTED:TOKEN]=");
        assert_eq!(r.redact("czNjcjN0L3ZhbHVlKzE"), "[REDACTED:TOKEN]");
        // Exactly these forms: another encoding is not found.
        let rot13 = "f3pe3g/inyhr+1";
        assert_eq!(r.redact(rot13), rot13);
    }

    #[test]
    fn encodings_equal_to_the_value_are_listed_once() {
        // A palindrome is its own reverse, hex of digits only has no case,
        // and nothing in it needs URL encoding.
        assert_eq!(encodings("abba"), ["abba", "YWJiYQ", "61626261"]);
        assert_eq!(encodings("a/z").len(), 6);
        // A value with nothing to escape is its own URL encoding; a short
        // value's encodings are not redacted either.
        let r = redactor(&[("PIN", "123")]);
        assert_eq!(r.redact("321 MTIz 313233"), "321 MTIz 313233");
    }

    #[test]
    fn output_cut_in_a_secret_loses_the_secrets_beginning() {
        let redactor = redactor(&[("TOKEN", "sk-live-abcdef"), ("OTHER", "wxyz")]);
        // Cut after "sk-li": the five characters go, the rest stays.
        assert_eq!(redactor.cut_partial_tail("out: sk-li"), "out: ");
        assert_eq!(redactor.cut_partial_tail("out: s"), "out: ");
        // A whole value is not a partial one: redaction handles it, even
        // when its last character begins another form (reversed, `zyxw`).
        assert_eq!(redactor.cut_partial_tail("out: wxyz"), "out: wxyz");
        // A cut inside an encoded value loses its beginning too.
        assert_eq!(redactor.cut_partial_tail("out: 777879"), "out: ");
        assert_eq!(redactor.cut_partial_tail("out: zyx"), "out: ");
        assert_eq!(redactor.cut_partial_tail("nothing here"), "nothing here");
        assert_eq!(redactor.cut_partial_tail(""), "");
        assert_eq!(
            Redactor::default().cut_partial_tail("out: sk-li"),
            "out: sk-li"
        );
    }
}
