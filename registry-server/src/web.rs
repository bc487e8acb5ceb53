//! The registry's web pages (docs/web.md): static HTML written into the
//! tree beside `search.json`, so that any static host serves them.
//!
//! ```text
//! index.html            the home page, with the search (assets/search.js)
//! skills.html           every skill, A to Z
//! skills/<name>.html    a skill's page
//! assets/skillpkg.css   assets/search.js
//! ```
//!
//! Everything a publisher wrote (descriptions, yank reasons, provenance
//! claims, `SKILL.md`) is hostile: pages are built with `maud`, which
//! escapes all text, and the Markdown is rendered with raw HTML shown as
//! text and then cleaned by `ammonia`.

use maud::{DOCTYPE, Markup, PreEscaped, html};
use skillpkg_index::archive::Limits;
use skillpkg_index::registry::tree::{StaticTree, TreeError};
use skillpkg_index::registry::{
    AllRecords, IndexRecord, KeysFile, archive_path, keys_path, latest, provenance_path,
};
use skillpkg_index::signing::{SourceInfo, verify_provenance};
use skillpkg_index::skill::SkillName;

/// Where the home page is.
pub const HOME_PATH: &str = "index.html";
/// Where the list of every skill is: beside the skills' pages, not among
/// them, where a skill named `index` would take its place.
pub const LIST_PATH: &str = "skills.html";
/// The style sheet.
pub const STYLE_PATH: &str = "assets/skillpkg.css";
/// The search script.
pub const SCRIPT_PATH: &str = "assets/search.js";

/// What every page says wrote it: a server that finds another home page
/// rewrites every skill's page (the pages' markup changed).
pub const GENERATOR: &str = "skillpkg-registry pages 1";

/// The content security policy every page carries in a `<meta>`: its own
/// script and style sheet, and nothing else.
pub const META_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'";

/// The most of `SKILL.md`'s body a page renders; the rest is left out,
/// with a note.
const MAX_BODY_BYTES: usize = 256 * 1024;

/// The deepest nesting of block quotes and lists a page renders: deeper
/// containers are flattened into their parents. HTML parsers (ammonia's
/// html5ever among them) take time that grows with the square of the
/// depth, and `>` repeated a few thousand times costs a publish minutes.
const MAX_NESTING: usize = 16;

const STYLE: &str = include_str!("web/skillpkg.css");
const SCRIPT: &str = include_str!("web/search.js");

/// The limits an archive is read within for its page: the registry's.
pub fn limits(max_skill_bytes: u64) -> Limits {
    Limits {
        max_unpacked_bytes: max_skill_bytes,
        max_packed_bytes: max_skill_bytes,
        ..Limits::default()
    }
}

/// The path of `name`'s page.
pub fn page_path(name: &SkillName) -> String {
    format!("skills/{name}.html")
}

/// One skill in the list of every skill.
#[derive(Clone, Debug)]
pub struct Listed {
    pub name: SkillName,
    pub version: String,
    pub description: String,
}

/// What a skill's page shows of the archive of its shown version.
#[derive(Clone, Debug)]
struct Contents {
    /// `SKILL.md`'s body (after the frontmatter), or why it cannot be shown.
    body: Result<String, String>,
    /// Path, size, executable.
    files: Vec<(String, u64, bool)>,
}

/// Where the shown version was built, as its provenance says.
#[derive(Clone, Debug)]
enum Built {
    /// No provenance file.
    Unknown,
    /// Verified against the signer's key.
    Verified(SourceInfo),
    /// There, but it does not verify: why.
    Invalid(String),
}

/// Writes the pages that do not depend on the skills: the home page and
/// the assets. Returns true if and only if the home page there was
/// written by pages of another [`GENERATOR`] (or is missing), when every
/// skill's page is to be written again.
pub fn write_shell(tree: &StaticTree) -> Result<bool, TreeError> {
    let home_page = home().into_string();
    let stale = tree.read_file(HOME_PATH)?.is_none_or(|old| {
        !String::from_utf8_lossy(&old).contains(&format!("content=\"{GENERATOR}\""))
    });
    tree.write_file(STYLE_PATH, STYLE.as_bytes())?;
    tree.write_file(SCRIPT_PATH, SCRIPT.as_bytes())?;
    tree.write_file(HOME_PATH, home_page.as_bytes())?;
    Ok(stale)
}

/// Writes every page: the shell, the list and each skill's page
/// (`skillpkg-registry build`).
pub fn write_all(tree: &StaticTree, all: &AllRecords, limits: &Limits) -> Result<(), TreeError> {
    write_shell(tree)?;
    write_list(tree, &listed(all))?;
    for (name, records) in all {
        write_skill(tree, name, records, limits)?;
    }
    Ok(())
}

/// Writes the list of every skill.
pub fn write_list(tree: &StaticTree, listed: &[Listed]) -> Result<(), TreeError> {
    tree.write_file(LIST_PATH, list(listed).into_string().as_bytes())
}

/// Writes `name`'s page from its index lines, reading the shown version's
/// archive, its provenance and the skill's keys from the tree.
pub fn write_skill(
    tree: &StaticTree,
    name: &SkillName,
    records: &[IndexRecord],
    limits: &Limits,
) -> Result<(), TreeError> {
    let Some(record) = shown(records) else {
        return Ok(());
    };
    let contents = match tree.read_file(&archive_path(name, &record.vers))? {
        Some(bytes) => read_contents(&bytes, limits),
        None => Contents {
            body: Err("the archive is not in this registry".into()),
            files: Vec::new(),
        },
    };
    let keys = match tree.read_file(&keys_path(name))? {
        Some(bytes) => KeysFile::parse(&bytes).ok(),
        None => None,
    };
    let built = match tree.read_file(&provenance_path(name, &record.vers))? {
        None => Built::Unknown,
        Some(bytes) => built(&bytes, record, keys.as_ref()),
    };
    let page = skill_page(name, records, record, &contents, &built);
    tree.write_file(&page_path(name), page.into_string().as_bytes())
}

/// The version a page shows: the newest that is not yanked, or the newest.
fn shown(records: &[IndexRecord]) -> Option<&IndexRecord> {
    latest(records).or_else(|| records.iter().max_by(|a, b| a.vers.cmp(&b.vers)))
}

/// Unpacks an archive with the hardened unpacker into a temporary folder
/// and reads its file list and `SKILL.md`'s body.
fn read_contents(tarball: &[u8], limits: &Limits) -> Contents {
    let unreadable = |why: String| Contents {
        body: Err(why),
        files: Vec::new(),
    };
    let Ok(scratch) = tempfile::tempdir() else {
        return unreadable("no temporary folder to read the archive in".into());
    };
    let dir = scratch.path().join("skill");
    let unpacked = match skillpkg_index::archive::unpack(tarball, &dir, limits) {
        Ok(unpacked) => unpacked,
        Err(error) => return unreadable(format!("the archive cannot be read: {error}")),
    };
    let files = unpacked
        .files
        .iter()
        .map(|file| (file.path.clone(), file.size, file.executable))
        .collect();
    let body = fs_err::read(dir.join("SKILL.md"))
        .map_err(|_| "the archive has no SKILL.md".to_owned())
        .and_then(|bytes| {
            skillpkg_index::skill::document::parse(&bytes)
                .map(|document| document.body)
                .map_err(|error| format!("its SKILL.md cannot be read: {error}"))
        });
    Contents { body, files }
}

/// What a provenance file says, once verified against the key that signed
/// the archive.
fn built(bytes: &[u8], record: &IndexRecord, keys: Option<&KeysFile>) -> Built {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Built::Invalid("the provenance is not UTF-8".into());
    };
    let Some(signer) = &record.signer else {
        return Built::Invalid(
            "the archive is not signed, so its provenance proves nothing".into(),
        );
    };
    let Some(key) = keys.and_then(|keys| keys.keys.iter().find(|key| &key.id == signer)) else {
        return Built::Invalid(format!("the signer's key {signer} is not in the keys file"));
    };
    match verify_provenance(text, &key.key, &record.cksum) {
        Ok(provenance) => Built::Verified(provenance.source),
        Err(error) => Built::Invalid(error.to_string()),
    }
}

/// Renders `SKILL.md`'s Markdown as clean HTML: raw HTML is shown as text
/// (an HTML block as code), headings go one level down (the page's `h1` is
/// the skill's name), images become links, and `ammonia` keeps only safe
/// tags and attributes, and links to `http`, `https` and `mailto`.
pub fn markdown(text: &str) -> String {
    use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
    let lower = |level: HeadingLevel| match level {
        HeadingLevel::H1 => HeadingLevel::H2,
        HeadingLevel::H2 => HeadingLevel::H3,
        HeadingLevel::H3 => HeadingLevel::H4,
        HeadingLevel::H4 => HeadingLevel::H5,
        HeadingLevel::H5 | HeadingLevel::H6 => HeadingLevel::H6,
    };
    let (text, cut) = if text.len() > MAX_BODY_BYTES {
        let mut end = MAX_BODY_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        (&text[..end], true)
    } else {
        (text, false)
    };
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    // How deep the containers are, and how many of them were left out.
    let mut depth = 0usize;
    let mut flattened: Vec<bool> = Vec::new();
    let events = Parser::new_ext(text, options).filter_map(|event| {
        let container = |tag: &Tag<'_>| {
            matches!(
                tag,
                Tag::BlockQuote(_) | Tag::List(_) | Tag::Item | Tag::FootnoteDefinition(_)
            )
        };
        let event = match event {
            Event::Start(tag) if container(&tag) => {
                depth += 1;
                let keep = depth <= MAX_NESTING;
                flattened.push(!keep);
                return keep.then_some(Event::Start(tag));
            }
            Event::End(
                end @ (TagEnd::BlockQuote(_)
                | TagEnd::List(_)
                | TagEnd::Item
                | TagEnd::FootnoteDefinition),
            ) => {
                depth = depth.saturating_sub(1);
                let dropped = flattened.pop().unwrap_or(false);
                return (!dropped).then_some(Event::End(end));
            }
            Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
            Event::Start(Tag::HtmlBlock) => Event::Start(Tag::CodeBlock(CodeBlockKind::Indented)),
            Event::End(TagEnd::HtmlBlock) => Event::End(TagEnd::CodeBlock),
            Event::Start(Tag::Heading { level, .. }) => Event::Start(Tag::Heading {
                level: lower(level),
                id: None,
                classes: Vec::new(),
                attrs: Vec::new(),
            }),
            Event::End(TagEnd::Heading(level)) => Event::End(TagEnd::Heading(lower(level))),
            Event::Start(Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            }) => Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }),
            Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
            // A checkbox would be cleaned away: the marker is shown.
            Event::TaskListMarker(done) => Event::Text(if done { "[x] " } else { "[ ] " }.into()),
            other => other,
        };
        Some(event)
    });
    let mut rendered = String::new();
    pulldown_cmark::html::push_html(&mut rendered, events);
    let mut clean = ammonia::Builder::default()
        .url_schemes(["http", "https", "mailto"].into())
        .url_relative(ammonia::UrlRelative::Deny)
        .link_rel(Some("nofollow noopener noreferrer"))
        .clean(&rendered)
        .to_string();
    if cut {
        clean.push_str(&format!(
            "<p><em>The rest of SKILL.md, past its first {} KiB, is not shown here.</em></p>",
            MAX_BODY_BYTES / 1024
        ));
    }
    clean
}

/// A page: the document around `main`. `root` leads from the page to the
/// tree's root (`""` or `"../"`).
fn page(title: &str, root: &str, main: &Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                meta name="generator" content=(GENERATOR);
                // For hosts that send no policy of their own (the server
                // sends it as a header, with `frame-ancestors`, which only
                // a header can carry).
                meta http-equiv="Content-Security-Policy" content=(META_POLICY);
                title { (title) }
                link rel="stylesheet" href={ (root) (STYLE_PATH) };
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.site {
                    a.brand href={ (root) (HOME_PATH) } { "skillpkg registry" }
                    nav aria-label="Registry" {
                        a href={ (root) (HOME_PATH) } { "Search" }
                        a href={ (root) (LIST_PATH) } { "All skills" }
                    }
                }
                main #main tabindex="-1" { (main) }
                footer.site {
                    p {
                        "A static page of this registry's files. Install with "
                        a href="https://github.com/skillpkg/skillpkg" { "skillpkg" }
                        "."
                    }
                }
            }
        }
    }
}

/// The home page: the search.
fn home() -> Markup {
    page(
        "Skills — skillpkg registry",
        "",
        &html! {
            h1 { "Find a skill" }
            form #search role="search" action=(HOME_PATH) method="get" {
                label for="q" { "Search skills by name or description" }
                div.field {
                    input #q type="search" name="q" autocomplete="off" spellcheck="false";
                    button type="submit" { "Search" }
                }
            }
            p #status role="status" aria-live="polite" {}
            ol #results.results {}
            noscript {
                p { "The search needs JavaScript. "
                    a href=(LIST_PATH) { "Every skill is listed here." } }
            }
            script src=(SCRIPT_PATH) defer {}
        },
    )
}

/// The list of every skill.
fn list(listed: &[Listed]) -> Markup {
    page(
        "All skills — skillpkg registry",
        "",
        &html! {
            h1 { "All skills" }
            p { (listed.len()) " skills, A to Z." }
            ol.results {
                @for skill in listed {
                    li {
                        a href={ "skills/" (skill.name) ".html" } { (skill.name) }
                        " "
                        span.version { (skill.version) }
                        p { (skill.description) }
                    }
                }
            }
        },
    )
}

/// A skill's page.
fn skill_page(
    name: &SkillName,
    records: &[IndexRecord],
    shown: &IndexRecord,
    contents: &Contents,
    built: &Built,
) -> Markup {
    let mut versions: Vec<&IndexRecord> = records.iter().collect();
    versions.sort_by(|a, b| b.vers.cmp(&a.vers));
    let verdict = shown.audit.as_ref();
    page(
        &format!("{name} — skillpkg registry"),
        "../",
        &html! {
            h1 { (name) }
            p.lede { (shown.description) }
            dl.facts {
                dt { "Version" }
                dd {
                    (shown.vers)
                    @if shown.yanked { " " strong.yanked { "(yanked)" } }
                }
                dt { "Published" }
                dd { (date(shown)) }
                dt { "Audit" }
                dd {
                    @match verdict {
                        Some(summary) => {
                            span class={ "verdict verdict-" (summary.verdict) } { (summary.verdict) }
                            @if !summary.rules.is_empty() {
                                " (" (summary.rules.join(", ")) ")"
                            }
                        }
                        None => { "not audited by this registry" }
                    }
                }
                dt { "Signed by" }
                dd {
                    @match &shown.signer {
                        Some(key) => { "key " code { (key) } }
                        None => { "not signed" }
                    }
                }
            }
            section aria-labelledby="install" {
                h2 #install { "Install" }
                pre { code { "skillpkg add " (name) } }
            }
            section aria-labelledby="provenance" {
                h2 #provenance { "Provenance" }
                (provenance(built))
            }
            section aria-labelledby="readme" {
                h2 #readme { "SKILL.md" }
                @match &contents.body {
                    Ok(body) => { div.markdown { (PreEscaped(markdown(body))) } }
                    Err(why) => { p { (why) } }
                }
            }
            section aria-labelledby="files" {
                h2 #files { "Files" }
                @if contents.files.is_empty() {
                    p { "No files to show." }
                } @else {
                    div.scroll {
                        table {
                            caption { (contents.files.len()) " files of version " (shown.vers) }
                            thead { tr { th scope="col" { "Path" } th scope="col" { "Size" } } }
                            tbody {
                                @for (path, size, executable) in &contents.files {
                                    tr {
                                        td {
                                            code { (path) }
                                            @if *executable { " " span.tag { "executable" } }
                                        }
                                        td.number { (bytes(*size)) }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            section aria-labelledby="versions" {
                h2 #versions { "Versions" }
                div.scroll {
                    table {
                        caption { (versions.len()) " versions, newest first" }
                        thead {
                            tr {
                                th scope="col" { "Version" }
                                th scope="col" { "Published" }
                                th scope="col" { "Size" }
                                th scope="col" { "Audit" }
                                th scope="col" { "Signer" }
                            }
                        }
                        tbody {
                            @for record in &versions {
                                tr class=[record.yanked.then_some("yanked")] {
                                    th scope="row" {
                                        (record.vers)
                                        @if record.yanked {
                                            " " strong.yanked { "yanked" }
                                            @if let Some(reason) = &record.yanked_reason {
                                                ": " (printable(reason))
                                            }
                                        }
                                    }
                                    td { (date(record)) }
                                    td.number { (bytes(record.size)) }
                                    td {
                                        @match &record.audit {
                                            Some(summary) => { (summary.verdict) }
                                            None => { "—" }
                                        }
                                    }
                                    td {
                                        @match &record.signer {
                                            Some(key) => { code { (key) } }
                                            None => { "unsigned" }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        },
    )
}

/// What the provenance section says.
fn provenance(built: &Built) -> Markup {
    match built {
        Built::Unknown => html! { p { "No provenance was published with this version." } },
        Built::Invalid(why) => html! {
            p.warning { "The provenance published with this version does not verify: " (why) }
        },
        Built::Verified(source) => html! {
            dl.facts {
                dt { "Repository" }
                dd {
                    @match &source.repository {
                        Some(repository) => { (link_or_text(repository.strip_prefix("git+").unwrap_or(repository))) }
                        None => { "not in a repository" }
                    }
                }
                dt { "Commit" }
                dd {
                    @match &source.commit {
                        Some(commit) => { code { (commit) } @if source.dirty { " (with changes not committed)" } }
                        None => { "unknown" }
                    }
                }
                dt { "Built by" }
                dd { (source.builder) }
                @if let Some(run) = &source.ci_run {
                    dt { "CI run" }
                    dd { (link_or_text(run)) }
                }
            }
        },
    }
}

/// A link when `url` is `https`, its text otherwise.
fn link_or_text(url: &str) -> Markup {
    if url.starts_with("https://") {
        html! { a href=(url) rel="nofollow noopener noreferrer" { (url) } }
    } else {
        html! { (url) }
    }
}

/// The day a version was published: `2026-11-22`.
/// `text` with the characters the registry no longer stores from a
/// client (`crate::text`) shown as U+FFFD: a yank reason recorded before
/// the rule, or in a tree imported from elsewhere.
fn printable(text: &str) -> String {
    text.chars()
        .map(|character| {
            if crate::text::is_refused(character) {
                char::REPLACEMENT_CHARACTER
            } else {
                character
            }
        })
        .collect()
}

fn date(record: &IndexRecord) -> String {
    record.published.strftime("%Y-%m-%d").to_string()
}

/// A size for people: `812 B`, `4.2 KiB`, `1.3 MiB`.
fn bytes(size: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if size < 1024 {
        return format!("{size} B");
    }
    let mut value = size as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// The skills of `all` a list shows, by name.
pub fn listed(all: &AllRecords) -> Vec<Listed> {
    all.iter()
        .filter_map(|(name, records)| {
            let shown = shown(records)?;
            Some(Listed {
                name: name.clone(),
                version: shown.vers.to_string(),
                description: shown.description.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_keeps_no_script_raw_html_or_dangerous_link() {
        let hostile = "# Title\n\n<script>alert(1)</script>\n\nText <img src=x onerror=alert(2)> and \
            [a link](javascript:alert(3)) and [mail](mailto:a@example.com) and \
            [file](references/guide.md) and ![pixel](https://tracker.example/p.png)\n\n\
            <iframe src=\"https://evil.example\"></iframe>\n";
        let html = markdown(hostile);
        // The raw HTML is shown as text, escaped, never as elements.
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<iframe"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
            "{html}"
        );
        assert!(
            html.contains("&lt;img src=x onerror=alert(2)&gt;"),
            "{html}"
        );
        assert!(!html.contains("javascript:"), "{html}");
        // Headings go one level down.
        assert!(html.contains("<h2>Title</h2>"), "{html}");
        // mailto and https stay, relative links lose their target, an
        // image is a link.
        assert!(html.contains("href=\"mailto:a@example.com\""), "{html}");
        assert!(!html.contains("references/guide.md\""), "{html}");
        assert!(
            html.contains("<a href=\"https://tracker.example/p.png\" rel=\"nofollow noopener noreferrer\">pixel</a>"),
            "{html}"
        );
    }

    #[test]
    fn deep_nesting_and_long_bodies_cost_little() {
        // A few thousand `>` took an HTML parser minutes: the containers
        // past the deepest kept are flattened, the text kept.
        for hostile in [
            format!("{}deep", ">".repeat(50_000)),
            format!("{}deep", "- ".repeat(50_000)),
        ] {
            let started = std::time::Instant::now();
            let html = markdown(&hostile);
            assert!(html.contains("deep"), "{html}");
            let opened = html.matches("<blockquote>").count() + html.matches("<ul>").count();
            assert!(opened <= MAX_NESTING, "{opened} containers");
            assert!(started.elapsed() < std::time::Duration::from_secs(5));
        }
        // Nesting up to the limit is kept as written.
        let html = markdown("> > quoted twice");
        assert_eq!(html.matches("<blockquote>").count(), 2, "{html}");
        // A body past the limit is cut, with a note, on a character.
        let long = "é".repeat(MAX_BODY_BYTES);
        let html = markdown(&long);
        assert!(
            html.contains("is not shown here"),
            "{}",
            &html[html.len() - 200..]
        );
        assert!(html.len() < MAX_BODY_BYTES + 1024);
    }

    #[test]
    fn task_list_markers_are_shown() {
        let html = markdown("- [x] done\n- [ ] to do\n");
        assert!(
            html.contains("[x] done") && html.contains("[ ] to do"),
            "{html}"
        );
    }

    #[test]
    fn page_text_is_escaped() {
        let listed = vec![Listed {
            name: "pdf".parse().unwrap(),
            version: "1.0.0".into(),
            description: "<b>bold</b> & \"quoted\"".into(),
        }];
        let html = list(&listed).into_string();
        assert!(
            html.contains("&lt;b&gt;bold&lt;/b&gt; &amp; &quot;quoted&quot;"),
            "{html}"
        );
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(bytes(812), "812 B");
        assert_eq!(bytes(4300), "4.2 KiB");
        assert_eq!(bytes(8 * 1024 * 1024), "8.0 MiB");
    }
}
