//! Warnings about the body and the files of a skill: things that are legal
//! but that an author almost always wants to know about.

use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{Event, LinkType, Parser, Tag};

use super::diagnostic::{Code, Diagnostic, Location};
use super::document::SkillDocument;
use crate::archive::walk::{self, EntryKind, WalkEntry};

/// Bodies longer than this many lines should move detail into `references/`.
pub(crate) const MAX_BODY_LINES: usize = 500;
/// Bodies estimated over this many tokens crowd an agent's context.
pub(crate) const MAX_BODY_TOKENS: usize = 10_000;
/// Files larger than this are not scanned for secrets.
const MAX_SCANNED_FILE: u64 = 1024 * 1024;

/// Checks the Markdown body: length, size, and relative links.
pub(crate) fn check_body(
    document: &SkillDocument,
    root: &Path,
    entries: Option<&[WalkEntry]>,
    file: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let body = &document.body;
    let at_body = Location {
        line: document.body_line,
        column: 1,
        end_column: 2,
    };
    if body.trim().is_empty() {
        diagnostics.push(
            Diagnostic::new(
                Code::BodyEmpty,
                file,
                "the body is empty: the skill gives the agent no instructions",
            )
            .with_hint("write the instructions below the closing `---`"),
        );
        return;
    }
    // What `lines().count()` gives, counted without splitting the text.
    let lines = count_line_feeds(body) + usize::from(!body.ends_with('\n'));
    if lines > MAX_BODY_LINES {
        diagnostics.push(
            Diagnostic::new(
                Code::BodyTooLong,
                file,
                format!("the body is {lines} lines long; keep it under {MAX_BODY_LINES}"),
            )
            .at(at_body, &document.text)
            .with_hint("move detail into files under `references/` and link to them"),
        );
    }
    // About four characters a token for English prose and code: a rough
    // estimate is enough for a warning, and needs no tokenizer.
    let tokens = body.chars().count() / 4;
    if tokens > MAX_BODY_TOKENS {
        diagnostics.push(
            Diagnostic::new(
                Code::BodyTooManyTokens,
                file,
                format!("the body is about {tokens} tokens; keep it under {MAX_BODY_TOKENS}"),
            )
            .at(at_body, &document.text)
            .with_hint(
                "move detail into files under `references/`, which agents read only when needed",
            ),
        );
    }
    check_links(document, root, entries, file, diagnostics);
}

/// Returns the number of line feeds in `text`, counted in blocks of 255
/// bytes whose per-byte tallies fit in a `u8`, which the compiler turns
/// into wide vector instructions.
fn count_line_feeds(text: &str) -> usize {
    text.as_bytes()
        .chunks(255)
        .map(|block| {
            let in_block: u8 = block.iter().map(|byte| u8::from(*byte == b'\n')).sum();
            usize::from(in_block)
        })
        .sum()
}

fn check_links(
    document: &SkillDocument,
    root: &Path,
    entries: Option<&[WalkEntry]>,
    file: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) {
    // Most bodies have no link to a local file, and need not be parsed as
    // Markdown at all.
    if !may_link_locally(&document.body) {
        return;
    }
    let body_offset = document.text.len() - document.body.len();
    let mut lines = None;
    for (event, range) in Parser::new(&document.body).into_offset_iter() {
        let destination = match event {
            Event::Start(
                Tag::Link {
                    link_type,
                    dest_url,
                    ..
                }
                | Tag::Image {
                    link_type,
                    dest_url,
                    ..
                },
            ) if !matches!(link_type, LinkType::Autolink | LinkType::Email) => dest_url,
            _ => continue,
        };
        let Some(target) = local_target(&destination) else {
            continue;
        };
        let diagnostic = match resolve_inside(&target) {
            None => Diagnostic::new(
                Code::LinkOutsideSkill,
                file,
                format!("the link `{destination}` points outside the skill folder"),
            )
            .with_hint("only the skill folder is installed: copy the file into it"),
            Some(relative) if !is_packaged(&relative, root, entries) => Diagnostic::new(
                Code::BrokenLink,
                file,
                format!("the link `{destination}` points to a file that is not in the skill"),
            )
            .with_hint(
                "check the spelling and case; files left out by `.skillignore` are not installed",
            ),
            Some(_) => continue,
        };
        let lines = lines.get_or_insert_with(|| LineIndex::new(&document.text));
        diagnostics.push(lines.place(
            diagnostic,
            body_offset + range.start,
            body_offset + range.end,
        ));
    }
}

/// Where the lines of a text start, so that placing many byte offsets in it
/// (every broken link of a long body) costs a binary search each rather
/// than a scan from the top: thousands of links would take quadratic time.
struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> LineIndex<'a> {
    fn new(text: &'a str) -> Self {
        let starts = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', text.as_bytes()).map(|index| index + 1))
            .collect();
        Self { text, starts }
    }

    /// Places `diagnostic` at the bytes `start..end` of the text, with the
    /// line and columns of [`location_at`] and the line's text that
    /// [`Diagnostic::at`] keeps.
    fn place(&self, mut diagnostic: Diagnostic, start: usize, end: usize) -> Diagnostic {
        let index = self
            .starts
            .partition_point(|line_start| *line_start <= start)
            - 1;
        let line_start = self.starts[index];
        let line_end = self
            .starts
            .get(index + 1)
            .map_or(self.text.len(), |next| next - 1);
        let column = self.text[line_start..start].chars().count() + 1;
        let end_column = column + self.text[start..end.min(line_end)].chars().count().max(1);
        diagnostic.location = Some(Location {
            line: index + 1,
            column,
            end_column,
        });
        diagnostic.source_line = Some(self.text[line_start..line_end].to_owned());
        diagnostic
    }
}

/// Returns false only if `body` surely has no link or image to a local
/// file, judged from its text without parsing it.
///
/// Every link that can name a local file is inline (`[text](target)`, with
/// `](` right before the target, spaces and one line end allowed) or uses a
/// definition (`[label]: target`); autolinks always carry a scheme or an
/// address. So it is enough that each `](` and `]:` is followed by a target
/// that [`local_target`] turns down: a URL, an anchor, nothing. The text
/// there is cut at the first space, `)` or `>`, which never makes it longer
/// than the target Markdown reads; a cut with `\` or `&` in it (escapes and
/// entities, which the parser decodes) counts as local.
fn may_link_locally(body: &str) -> bool {
    let bytes = body.as_bytes();
    // `]` is rare in prose: finding each one is faster than searching for
    // the two pairs.
    memchr::memchr_iter(b']', bytes)
        .filter(|index| matches!(bytes.get(index + 1), Some(b'(' | b':')))
        .any(|index| {
            let rest = body[index + 2..].trim_start_matches(|c: char| c.is_ascii_whitespace());
            let rest = rest.strip_prefix('<').unwrap_or(rest);
            let end = rest
                .find(|c: char| c.is_ascii_whitespace() || c == ')' || c == '>')
                .unwrap_or(rest.len());
            let target = &rest[..end];
            target.contains(['\\', '&']) || local_target(target).is_some()
        })
}

/// Returns true if and only if `relative` is a file or folder of the skill:
/// one of the packaged entries, compared byte for byte (so a link that only
/// works on a case-insensitive file system is caught), or, when the folder
/// could not be walked, something that exists on disk.
fn is_packaged(relative: &Path, root: &Path, entries: Option<&[WalkEntry]>) -> bool {
    if relative.as_os_str().is_empty() {
        return true;
    }
    match entries {
        Some(entries) => {
            let wanted = relative
                .to_string_lossy()
                .replace(std::path::MAIN_SEPARATOR, "/");
            // The walk sorts its entries bytewise.
            entries
                .binary_search_by(|entry| entry.path.as_bytes().cmp(wanted.as_bytes()))
                .is_ok()
        }
        None => root.join(relative).exists(),
    }
}

/// Returns the local file a link destination refers to, or `None` for URLs,
/// `mailto:` and the like, and links to an anchor in the same file.
fn local_target(destination: &str) -> Option<String> {
    let path = destination.split(['#', '?']).next().unwrap_or("");
    if path.is_empty() {
        return None;
    }
    let has_scheme = path.split_once(':').is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    if has_scheme || path.starts_with("//") {
        return None;
    }
    Some(percent_decode(path))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = bytes
            .get(index + 1..index + 3)
            .and_then(|pair| std::str::from_utf8(pair).ok());
        match (
            bytes[index],
            hex.and_then(|pair| u8::from_str_radix(pair, 16).ok()),
        ) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                index += 3;
            }
            (byte, _) => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

/// Returns the normalised relative path if and only if it stays inside the skill.
fn resolve_inside(target: &str) -> Option<PathBuf> {
    let mut resolved = PathBuf::new();
    for component in Path::new(target).components() {
        match component {
            Component::Normal(part) => resolved.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                if !resolved.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(resolved)
}

/// Turns a byte range of `text` into a line and character columns.
pub(crate) fn location_at(text: &str, start: usize, end: usize) -> Location {
    let before = &text[..start];
    let line_start = before.rfind('\n').map_or(0, |index| index + 1);
    let line = before.matches('\n').count() + 1;
    let column = text[line_start..start].chars().count() + 1;
    let line_end = text[start..]
        .find('\n')
        .map_or(text.len(), |index| start + index);
    let end_column = column + text[start..end.min(line_end)].chars().count().max(1);
    Location {
        line,
        column,
        end_column,
    }
}

/// Checks the files of the skill: scripts and secrets.
pub(crate) fn check_files(
    root: &Path,
    entries: &[WalkEntry],
    skill_md: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) {
    for entry in entries {
        let EntryKind::File { size, executable } = entry.kind else {
            continue;
        };
        // SKILL.md is scanned on its normalised text by the caller, so that
        // its positions match the rest of its diagnostics; it is no script.
        if Path::new(&entry.path) == skill_md {
            continue;
        }
        // Only text files can hold a secret we can see or a shebang.
        let bytes = if size <= MAX_SCANNED_FILE {
            walk::read_file(&root.join(&entry.path), size, MAX_SCANNED_FILE + 1).ok()
        } else {
            None
        };
        let Some(text) = bytes
            .as_deref()
            .and_then(|bytes| std::str::from_utf8(bytes).ok())
        else {
            // Binary files (not UTF-8) are compiled programs or data:
            // neither needs a `#!` line.
            continue;
        };
        if entry.path.starts_with("scripts/") && is_script(&entry.path, text) {
            check_script(entry, text, executable, diagnostics);
        }
        scan_secrets(text, Path::new(&entry.path), diagnostics);
    }
}

/// The extensions of files that are run as programs, by a `#!` line or an
/// interpreter named on the command line: the languages agents' scripts are
/// written in. Anything else under `scripts/` (schemas, templates, data,
/// documentation, Windows scripts that run by extension) is left alone.
const SCRIPT_EXTENSIONS: &[&str] = &[
    "py", "sh", "bash", "zsh", "ksh", "fish", "js", "mjs", "cjs", "ts", "mts", "cts", "rb", "pl",
    "php", "lua", "r", "tcl", "awk", "swift", "kts", "groovy", "jl", "exs", "nu",
];

/// Returns true if and only if the file at `path` (under `scripts/`, with
/// content `text`) is a script that should carry a `#!` line and the exec
/// bit: it has one of the [`SCRIPT_EXTENSIONS`], or it has no extension and
/// is text (`scripts/deploy`), which can only run through a `#!` line.
/// Dotfiles and Python package markers are never run directly.
fn is_script(path: &str, text: &str) -> bool {
    let file_name = path.rsplit('/').next().unwrap_or(path);
    if file_name.starts_with('.') || file_name == "__init__.py" {
        return false;
    }
    match file_name.rsplit_once('.') {
        Some((_, extension)) => SCRIPT_EXTENSIONS
            .iter()
            .any(|known| known.eq_ignore_ascii_case(extension)),
        // A file without an extension is a program only if it is text; an
        // empty one is a placeholder.
        None => !text.trim().is_empty(),
    }
}

fn check_script(
    entry: &WalkEntry,
    text: &str,
    executable: bool,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let has_shebang = text.starts_with("#!");
    if !has_shebang {
        diagnostics.push(
            Diagnostic::new(
                Code::ScriptNoShebang,
                &entry.path,
                format!("`{}` has no `#!` line", entry.path),
            )
            .with_hint(
                "start it with a line like `#!/usr/bin/env python3` so agents can run it directly",
            ),
        );
    } else if !executable {
        diagnostics.push(
            Diagnostic::new(
                Code::ScriptNotExecutable,
                &entry.path,
                format!("`{}` is not executable", entry.path),
            )
            .with_hint(format!(
                "run `chmod +x {}`; the exec bit is kept in the package",
                entry.path
            )),
        );
    }
}

/// Keeps the first six characters of a secret, enough to recognise which
/// one it is, and replaces the rest with `*`.
fn mask(secret: &str) -> String {
    secret
        .chars()
        .enumerate()
        .map(|(index, character)| {
            if index < 6 || character == '-' && secret.starts_with("-----") {
                character
            } else {
                '*'
            }
        })
        .collect()
}

/// Reports every match of a secret pattern in `text`.
pub(crate) fn scan_secrets(text: &str, file: &Path, diagnostics: &mut Vec<Diagnostic>) {
    // The audit's table of known formats: one list for both reports.
    for (what, start, end) in crate::audit::known_secrets(text) {
        let secret = &text[start..end];
        let mut diagnostic = Diagnostic::new(Code::PossibleSecret, file, format!("this looks like {what}"))
            .at(location_at(text, start, end), text)
            .with_hint("never publish credentials: remove it, revoke it, and read it from the environment instead");
        // The report goes to terminals and CI logs: never repeat the secret.
        let first_line = secret.lines().next().unwrap_or(secret);
        diagnostic.source_line = diagnostic
            .source_line
            .map(|line| line.replace(first_line, &mask(first_line)));
        diagnostics.push(diagnostic);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_link_targets() {
        assert_eq!(
            local_target("references/api.md#auth"),
            Some("references/api.md".into())
        );
        assert_eq!(local_target("my%20file.md"), Some("my file.md".into()));
        assert_eq!(local_target("https://example.com/x"), None);
        assert_eq!(local_target("mailto:a@b.c"), None);
        assert_eq!(local_target("#section"), None);
        assert_eq!(resolve_inside("a/../b.md"), Some(PathBuf::from("b.md")));
        assert_eq!(resolve_inside("../outside.md"), None);
        assert_eq!(resolve_inside("/etc/passwd"), None);
    }

    #[test]
    fn bodies_without_local_links_need_no_parse() {
        for body in [
            "No link at all.",
            "See [the site](https://example.com) and [top](#top).",
            "Mail [us](mailto:a@b.c), or [nothing]().",
            "[docs]: https://example.com/docs \"Docs\"\n",
            "[a](<https://example.com/a b>)",
        ] {
            assert!(!may_link_locally(body), "{body}");
        }
        for body in [
            "Read [the guide](references/guide.md).",
            "![logo](assets/logo.png)",
            "[a](\n  refs/x.md)",
            "[a]:\n  ./x.md",
            "[a](<assets/a b.png>)",
            "[a](&#104;ttp://x)",
            "[a](http\\://x)",
            "Both [x](https://x.y) and [y](y.md).",
            // Code is no link, but telling needs the parser: it is parsed.
            "`x[0](1)`",
        ] {
            assert!(may_link_locally(body), "{body}");
        }
    }

    #[test]
    fn the_line_index_places_as_location_at_and_at_do() {
        let text = "---\nname: x\n---\nab [l](x.md) cé\n\nlast [m](y.md)";
        let lines = LineIndex::new(text);
        for needle in ["[l]", "cé", "[m]", "name"] {
            let start = text.find(needle).unwrap();
            let end = start + needle.len() + 3;
            let placed = lines.place(
                Diagnostic::new(Code::BrokenLink, "SKILL.md", "m"),
                start,
                end,
            );
            let expected = Diagnostic::new(Code::BrokenLink, "SKILL.md", "m")
                .at(location_at(text, start, end), text);
            assert_eq!(placed, expected, "{needle}");
        }
    }

    #[test]
    fn locates_byte_ranges_in_characters() {
        let text = "ab\ncé x\n";
        let start = text.find('x').unwrap();
        assert_eq!(
            location_at(text, start, start + 1),
            Location {
                line: 2,
                column: 4,
                end_column: 5
            }
        );
    }

    #[test]
    fn finds_secrets_but_not_placeholders() {
        let mut diagnostics = Vec::new();
        let text = "key = AKIAIOSFODNN7EXAMPLE\ntoken = ghp_0123456789abcdefghijABCDEFGHIJ012345\n";
        scan_secrets(text, Path::new("x"), &mut diagnostics);
        assert_eq!(diagnostics.len(), 1);
        assert_eq!(diagnostics[0].location.unwrap().line, 2);
        assert!(diagnostics[0].message.contains("GitHub"));
        let shown = diagnostics[0].source_line.as_deref().unwrap();
        assert_eq!(
            shown,
            format!("token = ghp_01{}", "*".repeat(34)),
            "the secret is masked"
        );
    }

    #[test]
    fn finds_modern_openai_keys_once_and_real_private_keys_only() {
        let mut diagnostics = Vec::new();
        let openai = format!(
            "OPENAI_API_KEY=sk-proj-{}_{}",
            "a1B2c3D4e5".repeat(3),
            "Zz9-Yy8".repeat(3)
        );
        let anthropic = format!("ANTHROPIC_API_KEY=sk-ant-api03-{}", "Q1w2E3r4T5".repeat(4));
        scan_secrets(
            &format!("{openai}\n{anthropic}\n"),
            Path::new(".env"),
            &mut diagnostics,
        );
        let found: Vec<&str> = diagnostics.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            found,
            [
                "this looks like an Anthropic API key",
                "this looks like an OpenAI API key"
            ]
        );

        let mut diagnostics = Vec::new();
        scan_secrets(
            "```\n-----BEGIN PRIVATE KEY-----\n...\n```\n",
            Path::new("x"),
            &mut diagnostics,
        );
        assert!(
            diagnostics.is_empty(),
            "a header in documentation is no key"
        );
        let key = format!(
            "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB".repeat(2)
        );
        scan_secrets(&key, Path::new("id"), &mut diagnostics);
        assert_eq!(diagnostics.len(), 1);
    }

    #[test]
    fn counts_line_feeds_across_blocks() {
        let text = "a\n".repeat(300) + "tail";
        assert_eq!(count_line_feeds(&text), 300);
        assert_eq!(count_line_feeds(&text), text.matches('\n').count());
        assert_eq!(count_line_feeds(""), 0);
    }

    #[test]
    fn only_programs_in_scripts_are_scripts() {
        for path in [
            "scripts/run.py",
            "scripts/build.SH",
            "scripts/lib/convert.mjs",
            "scripts/check.ts",
            "scripts/report.R",
            "scripts/tool",
        ] {
            assert!(is_script(path, "print(1)\n"), "{path} is a script");
        }
        for path in [
            "scripts/README.md",
            "scripts/schema.xsd",
            "scripts/office/ooxml/wml.xml",
            "scripts/template.html",
            "scripts/config.json",
            "scripts/setup.ps1",
            "scripts/run.bat",
            "scripts/pkg/__init__.py",
            "scripts/.gitkeep",
            "scripts/requirements.txt",
        ] {
            assert!(!is_script(path, "text\n"), "{path} is not a script");
        }
        assert!(
            !is_script("scripts/EMPTY", " \n"),
            "an empty file with no extension is a placeholder"
        );
    }
}
