//! A `SKILL.md` rewritten so that every agent's YAML parser reads its
//! frontmatter alike.
//!
//! Each plain scalar that YAML 1.1 parsers read differently
//! ([`super::readings`]) is replaced, in place, by a form both YAML 1.1 and
//! 1.2 read as the value skillpkg read (and validated): a string is quoted
//! (`on` becomes `"on"`, a key `on:` becomes `"on":`), a number is written
//! as that number (`010` becomes `10`, `1e3` becomes `1000.0`). Every other
//! byte of the file stays as it is: comments, layout, line ends, the body.
//!
//! The result is checked before it is returned: it must parse to the same
//! frontmatter and have no such scalar left. Anything unexpected (a lone
//! carriage return, which moves lines; a scalar whose text is not found
//! where the parser put it) gives `None`, and the file is used as written.

use super::document::{self, SkillDocument};
use super::readings;

/// Returns the `SKILL.md` given as `bytes` with every plain scalar that YAML
/// 1.1 and 1.2 read differently rewritten so that both read it as YAML 1.2
/// does; `None` when there is nothing to rewrite or the file does not parse.
pub fn unambiguous_text(bytes: &[u8]) -> Option<String> {
    let parsed = document::parse(bytes).ok()?;
    if parsed.two_way_scalars.is_empty() || parsed.lone_carriage_returns.1 > 0 {
        return None;
    }
    let raw = std::str::from_utf8(bytes).ok()?;
    let lines = line_starts(raw);
    let mut rewritten = String::with_capacity(raw.len() + 2 * parsed.two_way_scalars.len());
    let mut copied = 0;
    for scalar in &parsed.two_way_scalars {
        let mut start = offset(raw, &lines, scalar.location.line, scalar.location.column)?;
        let end = offset(raw, &lines, scalar.end.0, scalar.end.1)?;
        let mut source = raw.get(start..end)?;
        // An anchored scalar's place starts at its anchor, `&name on`.
        if let Some(anchored) = source.strip_prefix('&') {
            let after = anchored.find(char::is_whitespace)?;
            let value = anchored[after..].trim_start();
            start = end - value.len();
            source = value;
        }
        // A plain scalar over several lines is folded: its lines joined by
        // single spaces.
        if start < copied || source.split_whitespace().ne(scalar.text.split_whitespace()) {
            return None;
        }
        let form = readings::unambiguous_form(&scalar.text, readings::yaml_1_2(&scalar.text))?;
        rewritten.push_str(&raw[copied..start]);
        rewritten.push_str(&form);
        copied = end;
    }
    rewritten.push_str(&raw[copied..]);
    reads_alike(&parsed, &rewritten).then_some(rewritten)
}

/// Returns true if and only if `rewritten` parses to the frontmatter of
/// `original` and no YAML 1.1 parser reads any of it differently.
fn reads_alike(original: &SkillDocument, rewritten: &str) -> bool {
    document::parse(rewritten.as_bytes()).is_ok_and(|parsed| {
        parsed.two_way_scalars.is_empty()
            && parsed.frontmatter_json() == original.frontmatter_json()
            && parsed.body == original.body
    })
}

/// The byte offset at which each line of `text` starts.
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|index| index + 1))
        .collect()
}

/// The byte offset of the 1-based `line` and `column` (in characters).
/// Line 1 holds the opening `---` (and perhaps a byte order mark), never a
/// scalar.
fn offset(text: &str, lines: &[usize], line: usize, column: usize) -> Option<usize> {
    if line < 2 {
        return None;
    }
    let start = *lines.get(line - 1)?;
    let rest = &text[start..];
    let within = match rest.char_indices().nth(column - 1) {
        Some((index, _)) => index,
        // Just past the last character of the text.
        None if rest.chars().count() == column - 1 => rest.len(),
        None => return None,
    };
    Some(start + within)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewrite(text: &str) -> Option<String> {
        unambiguous_text(text.as_bytes())
    }

    #[test]
    fn quotes_strings_and_rewrites_numbers_in_place() {
        let text = "---\nname: x # a comment\ndescription: Reads.\non: yes\nmetadata:\n  release: 2024-01-01\n  mode: 010\n  list: [no, off, 1e3, \"yes\"]\n  text: >\n    yes\n---\nbody: on\n";
        assert_eq!(
            rewrite(text).unwrap(),
            "---\nname: x # a comment\ndescription: Reads.\n\"on\": \"yes\"\nmetadata:\n  release: \"2024-01-01\"\n  mode: 10\n  list: [\"no\", \"off\", 1000.0, \"yes\"]\n  text: >\n    yes\n---\nbody: on\n"
        );
    }

    #[test]
    fn keeps_crlf_a_byte_order_mark_anchors_and_keys_in_flow() {
        let text = "\u{feff}---\r\nname: x\r\ndescription: d\r\na: &anchor on\r\nb: *anchor\r\nc: {y: 1, key: é, Off: 08}\r\n---\r\nbody\r\n";
        assert_eq!(
            rewrite(text).unwrap(),
            "\u{feff}---\r\nname: x\r\ndescription: d\r\na: &anchor \"on\"\r\nb: *anchor\r\nc: {\"y\": 1, key: é, \"Off\": 8}\r\n---\r\nbody\r\n"
        );
    }

    #[test]
    fn leaves_alone_what_every_parser_reads_alike() {
        for text in [
            "---\nname: x\ndescription: Use it on yes days.\n---\n",
            "---\nname: x\ndescription: \"yes\"\nversion: '010'\n---\n",
            "---\nname: x\ndescription: |\n  on\n---\n",
            "---\nname: x\nversion: 1.0.0\nflag: true\ncount: 12\n---\n",
            "---\nname: x\ntagged: !!str on\n---\n",
        ] {
            assert_eq!(rewrite(text), None, "{text}");
        }
    }

    #[test]
    fn a_scalar_folded_over_lines_is_quoted_whole() {
        let text = "---\nname: x\nwhen: 2001-12-14\n  21:59:43.10 -5\n---\n";
        assert_eq!(
            rewrite(text).unwrap(),
            "---\nname: x\nwhen: \"2001-12-14 21:59:43.10 -5\"\n---\n"
        );
    }

    #[test]
    fn a_lone_carriage_return_is_left_as_written() {
        assert_eq!(rewrite("---\rname: x\ron: 1\r---\r"), None);
    }
}
