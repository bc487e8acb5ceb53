//! What a file is, by its bytes: compiled programs and archives that no
//! reviewer can read, and scripts that are minified or mostly an encoded
//! blob.

use std::sync::LazyLock;

use regex::Regex;

use super::text::Scan;
use super::{Finding, Rule, Severity};

/// Names a compiled program or an archive from the file's first bytes.
pub(crate) fn sniff(bytes: &[u8]) -> Option<(Rule, &'static str)> {
    let starts = |magic: &[u8]| bytes.starts_with(magic);
    if starts(b"\x7fELF") {
        return Some((Rule::NativeExecutable, "an ELF executable"));
    }
    if starts(b"MZ") && is_pe(bytes) {
        return Some((Rule::NativeExecutable, "a Windows PE executable"));
    }
    if [
        [0xfe, 0xed, 0xfa, 0xce],
        [0xfe, 0xed, 0xfa, 0xcf],
        [0xce, 0xfa, 0xed, 0xfe],
        [0xcf, 0xfa, 0xed, 0xfe],
    ]
    .iter()
    .any(|magic| starts(magic))
    {
        return Some((Rule::NativeExecutable, "a Mach-O executable"));
    }
    // 0xCAFEBABE is a universal Mach-O binary and a Java class file; the
    // binary counts its architectures where the class has its version.
    if starts(&[0xca, 0xfe, 0xba, 0xbe]) && bytes.len() >= 8 {
        let count = u32::from_be_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]);
        return Some(if count < 40 {
            (Rule::NativeExecutable, "a universal Mach-O executable")
        } else {
            (Rule::NativeExecutable, "a compiled Java class")
        });
    }
    if starts(b"\0asm") {
        return Some((Rule::NativeExecutable, "a WebAssembly module"));
    }
    // `python x.pyc` and `lua x.luac` run bytecode no reviewer reads. A
    // `.pyc` starts with its version's number (3000-3999 for Python 3,
    // 62211 for 2.7) and CR LF: control bytes no text starts with.
    if let Some(&[low, high, b'\r', b'\n']) = bytes.get(..4) {
        let number = u16::from_le_bytes([low, high]);
        if (3000..4000).contains(&number) || number == 62211 {
            return Some((Rule::NativeExecutable, "compiled Python bytecode"));
        }
    }
    if starts(b"\x1bLua") {
        return Some((Rule::NativeExecutable, "compiled Lua bytecode"));
    }
    if starts(b"PK\x03\x04") {
        // Office documents and EPUBs are zip files too, and templates of
        // them are ordinary assets; their first entry says what they are.
        let first_name = bytes
            .get(26..28)
            .map(|length| usize::from(u16::from_le_bytes([length[0], length[1]])))
            .and_then(|length| bytes.get(30..30 + length));
        let is_document = first_name.is_some_and(|name| {
            name == b"[Content_Types].xml"
                || name == b"mimetype"
                || name.starts_with(b"docProps/")
                || name.starts_with(b"word/")
                || name.starts_with(b"xl/")
                || name.starts_with(b"ppt/")
        });
        return (!is_document).then_some((Rule::NestedArchive, "a zip archive"));
    }
    let archives: &[(&[u8], &str)] = &[
        (b"\x1f\x8b", "a gzip archive"),
        (b"BZh", "a bzip2 archive"),
        (b"\xfd7zXZ\0", "an xz archive"),
        (b"\x28\xb5\x2f\xfd", "a zstd archive"),
        (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"),
        (b"Rar!\x1a\x07", "a RAR archive"),
    ];
    if let Some((_, what)) = archives.iter().find(|(magic, _)| starts(magic)) {
        return Some((Rule::NestedArchive, what));
    }
    if bytes.get(257..262) == Some(b"ustar") {
        return Some((Rule::NestedArchive, "a tar archive"));
    }
    None
}

/// Returns true when an `MZ` file has the PE header its offset names.
fn is_pe(bytes: &[u8]) -> bool {
    let Some(offset) = bytes.get(0x3c..0x40) else {
        return false;
    };
    let offset = u32::from_le_bytes([offset[0], offset[1], offset[2], offset[3]]) as usize;
    bytes.get(offset..offset.saturating_add(4)) == Some(b"PE\0\0")
}

/// A finding about a whole file.
pub(crate) fn whole_file(rule: Rule, severity: Severity, file: &str, message: String) -> Finding {
    Finding {
        rule,
        severity,
        file: file.to_owned(),
        line: None,
        column: None,
        end_column: None,
        excerpt: None,
        message,
    }
}

/// True when `head` is one line of binary (control characters or bytes
/// that are not UTF-8) followed by text: a few lines at least, no NULs,
/// all readable.
pub(crate) fn text_behind_first_line(head: &[u8]) -> bool {
    let Some(end) = head.iter().take(512).position(|&byte| byte == b'\n') else {
        return false;
    };
    let first = &head[..end];
    let binary = std::str::from_utf8(first).is_err()
        || first
            .iter()
            .any(|&byte| byte < 0x09 || (0x0e..0x20).contains(&byte) || byte == 0x7f);
    if !binary {
        return false;
    }
    let rest = &head[end + 1..];
    if rest.len() < 64 || rest.iter().filter(|&&byte| byte == b'\n').count() < 2 {
        return false;
    }
    let reading = super::decode::read(rest);
    !reading.is_binary() && !reading.is_unreadable() && reading.nuls == 0
}

/// `bytes` with the bytes of their first line made spaces.
pub(crate) fn first_line_blanked(bytes: &[u8]) -> Vec<u8> {
    let end = bytes
        .iter()
        .position(|&byte| byte == b'\n')
        .unwrap_or(bytes.len());
    let mut out = bytes.to_vec();
    out[..end].fill(b' ');
    out
}

/// YAML tags that make a loader build objects of the language it runs
/// in: PyYAML's `yaml.Loader`/`unsafe_load` calls what
/// `!!python/object/apply:` names, Ruby's `YAML.unsafe_load` and
/// js-yaml's old full schema likewise.
static YAML_CODE_TAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"!!python/(?:object(?:/apply|/new)?|name|module):[\w.]+|!ruby/(?:object|struct|hash|class):[\w:]+|!!js/(?:function|regexp)")
        .expect("valid YAML tag pattern")
});

/// Reports YAML tags that run code when the file is loaded.
pub(crate) fn scan_yaml_tags(scan: &mut Scan<'_>) {
    let text = scan.text;
    if !(text.contains("!!python/") || text.contains("!ruby/") || text.contains("!!js/")) {
        return;
    }
    let found: Vec<(usize, usize, String)> = YAML_CODE_TAG
        .find_iter(text)
        .map(|tag| (tag.start(), tag.end(), tag.as_str().to_owned()))
        .collect();
    // A document may quote one to teach it; a data file is loaded.
    let file = scan.file.to_ascii_lowercase();
    let prose = [".md", ".markdown", ".mdx", ".txt", ".rst", ".adoc", ".org"]
        .iter()
        .any(|extension| file.ends_with(extension));
    let severity = if prose {
        Severity::Medium
    } else {
        Severity::High
    };
    for (start, end, tag) in found {
        scan.report(
            Rule::DecodeExec,
            severity,
            start,
            end,
            format!("a YAML tag, `{tag}`, that an unsafe loader turns into a call when it reads the file"),
        );
    }
}

/// Judges a symbolic link at `path` (relative to the skill, `/`-separated)
/// to `target`, as written: a link into the skill is only unusual; one
/// out of it makes whoever reads or writes the skill's file (an agent
/// told to read `references/config`, a script saving its settings) read
/// or write the file outside, and one to a credential store or a file
/// that runs by itself is how a skill takes it without a word.
pub(crate) fn judge_symlink(path: &str, target: &str) -> (Severity, String) {
    let to = format!("a symbolic link to `{target}`, not followed");
    let store = super::code::is_store_path(target) || super::code::is_environ_file(target);
    if store {
        return (
            Severity::High,
            format!(
                "{to}: a credential store, which an agent or a script reading the skill's `{path}` reads instead"
            ),
        );
    }
    if let Some(what) = super::code::persistence_target(target) {
        return (
            Severity::High,
            format!("{to}: {what}, which writing the skill's `{path}` writes"),
        );
    }
    if leaves(path, target) {
        return (
            Severity::Medium,
            format!(
                "{to}: it points outside the skill, so reading or writing the skill's `{path}` reaches a file the skill does not hold"
            ),
        );
    }
    (Severity::Low, to)
}

/// True when `target`, the target of a link at `path` inside a skill, is
/// absolute, starts at a home folder or climbs out of the skill.
fn leaves(path: &str, target: &str) -> bool {
    let target = target.replace('\\', "/");
    if target.starts_with('/') || target.starts_with('~') || target.get(1..3) == Some(":/") {
        return true;
    }
    let mut depth = path.split('/').count().saturating_sub(1);
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => match depth.checked_sub(1) {
                Some(up) => depth = up,
                None => return true,
            },
            _ => depth += 1,
        }
    }
    false
}

/// Lines past this length are not written by hand.
const MINIFIED_LINE: usize = 1_000;

/// The first encoded blob in `text`: a run of 400 base64 letters (and
/// its padding), of 64 `\xHH` escapes, or of 64 numbers of two or three
/// digits each followed by a comma (a byte array). Searched byte by
/// byte: as a regular expression, the counted repetitions alone cost
/// more to compile than the rest of a small audit.
fn find_blob(text: &str) -> Option<std::ops::Range<usize>> {
    [base64_run(text), escape_run(text), number_run(text)]
        .into_iter()
        .flatten()
        .min_by_key(|range| range.start)
}

fn base64_run(text: &str) -> Option<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let letter = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'+' || byte == b'/';
    let mut at = 0;
    while at < bytes.len() {
        if !letter(bytes[at]) {
            at += 1;
            continue;
        }
        let start = at;
        while at < bytes.len() && letter(bytes[at]) {
            at += 1;
        }
        if at - start >= 400 {
            let padding = bytes[at..]
                .iter()
                .take(2)
                .take_while(|&&b| b == b'=')
                .count();
            return Some(start..at + padding);
        }
    }
    None
}

fn escape_run(text: &str) -> Option<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let escape = |at: usize| {
        bytes.get(at..at + 4).is_some_and(|unit| {
            unit[0] == b'\\'
                && unit[1] == b'x'
                && unit[2].is_ascii_hexdigit()
                && unit[3].is_ascii_hexdigit()
        })
    };
    let mut at = 0;
    while at < bytes.len() {
        if !escape(at) {
            at += 1;
            continue;
        }
        let start = at;
        while escape(at) {
            at += 4;
        }
        if (at - start) / 4 >= 64 {
            return Some(start..at);
        }
    }
    None
}

fn number_run(text: &str) -> Option<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let digits_from = |at: usize| {
        bytes[at..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let spaces_from = |at: usize| {
        text[at..]
            .char_indices()
            .find(|(_, c)| !c.is_whitespace())
            .map_or(text.len() - at, |(offset, _)| offset)
    };
    // One number and its comma from `at`, where `digits` digits start:
    // where the next may start.
    let unit = |at: usize, digits: usize| {
        let after = at + digits;
        let comma = after + spaces_from(after);
        (bytes.get(comma) == Some(&b',')).then(|| comma + 1 + spaces_from(comma + 1))
    };
    let mut at = 0;
    while at < bytes.len() {
        let run = if bytes[at].is_ascii_digit() {
            digits_from(at)
        } else {
            0
        };
        if run < 2 {
            at += run.max(1);
            continue;
        }
        // A chain may start within a longer number, at its last three.
        let start = at + run.saturating_sub(3);
        let mut count = 0;
        let mut next = unit(start, at + run - start);
        let mut end = at + run;
        while let Some(from) = next {
            count += 1;
            end = from;
            let digits = digits_from(from);
            next = if (2..=3).contains(&digits) {
                unit(from, digits)
            } else {
                None
            };
        }
        if count >= 64 {
            return Some(start..end);
        }
        // A chain from a later number in this one is a part of it.
        at = end.max(at + run);
    }
    None
}

static CHAR_CODES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:String\.fromCharCode|chr)\s*\(\s*\d+\s*\)(?:\s*\+\s*(?:String\.fromCharCode|chr)\s*\(\s*\d+\s*\)){15,}")
        .expect("valid char code pattern")
});

/// Something that turns data into running code.
static EVALUATES: LazyLock<Regex> = LazyLock::new(|| {
    // Calls, case as written (an icon named "Function App" is no call),
    // not methods (`re.compile(`); PowerShell's names in any case.
    Regex::new(r"(?:^|[^.\w])(?:eval|exec|execfile|compile|Function|b64decode|atob|marshal\.loads)\s*\(|(?i:(?-u:\b)(?:iex|invoke-expression|frombase64string)(?-u:\b)|(?-u:\b)base64\s+(?:-d|--decode)(?-u:\b))")
        .expect("valid evaluation pattern")
});

/// Reports minified and obfuscated scripts. `runs_data` says, for a
/// script read as code, whether it runs code from a value that is not a
/// constant; for others, the text is searched for an evaluation.
pub(crate) fn scan_script(scan: &mut Scan<'_>, runs_data: Option<bool>) {
    let longest = scan
        .lines()
        .map(|(number, start, line)| (line.len(), number, start))
        .max();
    let blob =
        find_blob(scan.text).or_else(|| CHAR_CODES.find(scan.text).map(|found| found.range()));
    if let Some(found) = blob {
        let evaluates = runs_data.unwrap_or_else(|| EVALUATES.is_match(scan.text));
        let (severity, message) = if evaluates {
            (
                Severity::High,
                "an encoded blob in a script that evaluates or decodes data",
            )
        } else {
            (Severity::Medium, "an encoded blob of data in a script")
        };
        let end = (found.start + 80).min(found.end);
        let end = (found.start..=end)
            .rev()
            .find(|&i| scan.text.is_char_boundary(i))
            .unwrap_or(found.start);
        scan.report(Rule::ObfuscatedScript, severity, found.start, end, message);
        return;
    }
    if let Some((length, _, start)) = longest.filter(|(length, _, _)| *length > MINIFIED_LINE) {
        scan.report(
            Rule::MinifiedScript,
            Severity::Low,
            start,
            start + 1,
            format!("a line of {length} characters"),
        );
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn blobs_are_found_where_the_pattern_finds_them() {
        let pattern = Regex::new(
            r"[A-Za-z0-9+/]{400,}={0,2}|(?:\\x[0-9a-fA-F]{2}){64,}|(?:\d{2,3}\s*,\s*){64,}",
        )
        .unwrap();
        let numbers = |n: usize, sep: &str| {
            (0..n)
                .map(|i| format!("{}{sep}", 10 + i % 240))
                .collect::<String>()
        };
        let escapes = |n: usize| {
            (0..n)
                .map(|i| format!("\\x{:02x}", i % 256))
                .collect::<String>()
        };
        let cases = [
            "short text".to_owned(),
            format!("x = '{}=='", "Ab9+/".repeat(80)),
            format!("x = '{}'", "Ab9+/".repeat(79)),
            format!("pre\n{}\n", escapes(64)),
            format!("pre {} ", escapes(63)),
            format!("\\x\\x{}", escapes(70)),
            format!("[{}]", numbers(64, ",")),
            format!("[{}]", numbers(63, ",")),
            format!("[1234,{}]", numbers(64, " , ")),
            format!("[{}1,{}]", numbers(30, ","), numbers(64, ",\n")),
            format!("[{}1234,{}]", numbers(40, ","), numbers(70, ", ")),
            format!("{} {}", escapes(10), "QUJD".repeat(120)),
            format!("é{}é", numbers(80, "\u{a0},")),
        ];
        for case in &cases {
            assert_eq!(
                find_blob(case).map(|found| found.start),
                pattern.find(case).map(|found| found.start()),
                "{case}"
            );
        }
    }
    use super::*;

    #[test]
    fn recognises_programs_and_archives_but_not_office_documents() {
        assert_eq!(
            sniff(b"\x7fELF\x02\x01\x01").map(|f| f.1),
            Some("an ELF executable")
        );
        let mut pe = vec![0u8; 0x80];
        pe[..2].copy_from_slice(b"MZ");
        pe[0x3c] = 0x40;
        pe[0x40..0x44].copy_from_slice(b"PE\0\0");
        assert_eq!(sniff(&pe).map(|f| f.1), Some("a Windows PE executable"));
        assert_eq!(sniff(b"MZ not a program"), None);
        assert_eq!(
            sniff(&[0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1]).map(|f| f.0),
            Some(Rule::NativeExecutable)
        );
        let mut zip = b"PK\x03\x04".to_vec();
        zip.resize(26, 0);
        zip.extend_from_slice(&[19, 0, 0, 0]);
        zip.extend_from_slice(b"[Content_Types].xml");
        assert_eq!(sniff(&zip), None);
        zip[30..49].copy_from_slice(b"payload/install.exe");
        assert_eq!(sniff(&zip).map(|f| f.0), Some(Rule::NestedArchive));
        assert_eq!(
            sniff(b"\x1f\x8b\x08\0").map(|f| f.1),
            Some("a gzip archive")
        );
        assert_eq!(sniff(b"#!/bin/sh\necho hi\n"), None);
        // Python 3.11's magic number, 3495.
        assert_eq!(
            sniff(b"\xa7\x0d\r\n\0\0\0\0").map(|f| f.1),
            Some("compiled Python bytecode")
        );
        assert_eq!(sniff(b"ab\r\nplain text"), None);
    }
}
