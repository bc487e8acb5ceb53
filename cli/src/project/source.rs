//! Where a skill's files are, when a manifest entry names a place and not
//! a version (docs/sources.md): a local folder (`{ path = "skills/pdf" }`),
//! a git repository (`{ git = URL, rev = REV, path = PATH }`), a site's
//! discovery index or a tarball URL; how each is written in skills.toml
//! and in skills.lock, and how `add` reads one from its argument.
//!
//! This is the leaf of the sources: it reads and writes the entries and
//! fetches nothing ([`super::sources`] does).

use std::path::Path;

use skillpkg_index::skill;

use super::lockfile::{
    GIT_SOURCE_PREFIX, INDEX_SOURCE_PREFIX, LockedSkill, PATH_SOURCE_PREFIX, URL_SOURCE_PREFIX,
};

/// A manifest entry that names where a skill's files are, not a version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Direct {
    /// `{ path = "skills/pdf" }`: a folder, relative to the project's root
    /// (or absolute), read again at every install.
    Path(String),
    /// `{ git = URL, rev = REV, path = PATH }`.
    Git(GitSource),
    /// `{ index = URL }`: the skill of that name in the discovery index of
    /// a site (or at that URL).
    Index(String),
    /// `{ url = URL }`: a tarball of the skill's folder.
    Url(String),
}

/// A skill in a git repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitSource {
    /// The repository: `https://`, `ssh://`, `git://` or `file://` URL, or
    /// a local path.
    pub url: String,
    /// A branch, a tag or a commit; the remote's default branch when
    /// absent.
    pub rev: Option<String>,
    /// The skill's folder inside the repository; its root when absent.
    pub path: Option<String>,
}

/// The keys of a skill's table that name where its files are.
pub const DIRECT_KEYS: [&str; 5] = ["path", "git", "rev", "index", "url"];

/// Returns true if and only if a `[skills]` table names where the skill's
/// files are rather than a version.
pub fn is_direct_table(has: &dyn Fn(&str) -> bool) -> bool {
    ["path", "git", "index", "url"].into_iter().any(has)
}

impl Direct {
    /// Reads a `[skills]` table that has `path` or `git`; `invalid` words
    /// the error for the entry.
    pub fn from_table(
        table: &toml::Table,
        invalid: &dyn Fn(String) -> anyhow::Error,
    ) -> anyhow::Result<Direct> {
        let string = |key: &str| -> anyhow::Result<Option<String>> {
            match table.get(key) {
                None => Ok(None),
                Some(toml::Value::String(text)) if !text.trim().is_empty() => {
                    Ok(Some(text.clone()))
                }
                Some(_) => Err(invalid(format!(
                    "has a `{key}` that is not a non-empty string"
                ))),
            }
        };
        if let Some(key) = table
            .keys()
            .find(|key| !DIRECT_KEYS.contains(&key.as_str()))
        {
            return Err(invalid(format!(
                "has `{key}`, which a skill from a folder, a git repository, a discovery index or a URL cannot have (their keys are `path`, `git` with `rev` and `path`, `index` and `url`)"
            )));
        }
        let kinds: Vec<&str> = ["git", "index", "url"]
            .into_iter()
            .filter(|key| table.contains_key(*key))
            .collect();
        if kinds.len() > 1 {
            return Err(invalid(format!(
                "has both `{}` and `{}`",
                kinds[0], kinds[1]
            )));
        }
        for key in ["index", "url"] {
            if let Some(url) = string(key)? {
                if let Some(other) = ["path", "rev"]
                    .into_iter()
                    .find(|other| table.contains_key(*other))
                {
                    return Err(invalid(format!("has `{other}` beside `{key}`")));
                }
                super::web::parse_url(&url)
                    .map_err(|error| invalid(format!("has `{key} = \"{url}\"`: {error}")))?;
                return Ok(if key == "index" {
                    Direct::Index(url)
                } else {
                    Direct::Url(url)
                });
            }
        }
        let path = string("path")?;
        if let Some(path) = &path {
            check_relative_path(path)
                .map_err(|why| invalid(format!("has `path = \"{path}\"`, {why}")))?;
        }
        match string("git")? {
            Some(url) => {
                check_git_url(&url)
                    .map_err(|why| invalid(format!("has `git = \"{url}\"`, {why}")))?;
                Ok(Direct::Git(GitSource {
                    url,
                    rev: string("rev")?,
                    path: path.map(|path| normalize(&path)),
                }))
            }
            None if table.contains_key("rev") => Err(invalid("has `rev` without `git`".into())),
            None => Ok(Direct::Path(
                path.expect("a direct entry has `path` or `git`"),
            )),
        }
    }

    /// The entry as skills.toml writes it.
    pub fn to_toml(&self) -> toml_edit::InlineTable {
        let mut table = toml_edit::InlineTable::new();
        match self {
            Direct::Path(path) => {
                table.insert("path", path.as_str().into());
            }
            Direct::Index(url) => {
                table.insert("index", url.as_str().into());
            }
            Direct::Url(url) => {
                table.insert("url", url.as_str().into());
            }
            Direct::Git(git) => {
                table.insert("git", git.url.as_str().into());
                if let Some(rev) = &git.rev {
                    table.insert("rev", rev.as_str().into());
                }
                if let Some(path) = &git.path {
                    table.insert("path", path.as_str().into());
                }
            }
        }
        table
    }

    /// The `source` of the lock entry, without a git source's commit.
    fn source_stem(&self) -> String {
        match self {
            Direct::Path(path) => format!("{PATH_SOURCE_PREFIX}{}", normalize(path)),
            Direct::Index(url) => format!("{INDEX_SOURCE_PREFIX}{url}"),
            Direct::Url(url) => format!("{URL_SOURCE_PREFIX}{url}"),
            Direct::Git(git) => {
                let mut query = Vec::new();
                if let Some(rev) = &git.rev {
                    query.push(format!("rev={}", escape(rev)));
                }
                if let Some(path) = &git.path {
                    query.push(format!("path={}", escape(path)));
                }
                let separator = if query.is_empty() { "" } else { "?" };
                format!(
                    "{GIT_SOURCE_PREFIX}{}{separator}{}",
                    git.url,
                    query.join("&")
                )
            }
        }
    }

    /// The `source` of the lock entry of this skill; `commit` is what a git
    /// source was resolved to.
    pub fn lock_source(&self, commit: Option<&str>) -> String {
        match commit {
            Some(commit) => format!("{}#{commit}", self.source_stem()),
            None => self.source_stem(),
        }
    }

    /// Returns true if and only if `entry` was locked from this very entry
    /// (for a git source: the same URL, `rev` and `path`, at any commit).
    pub fn locked_by(&self, entry: &LockedSkill) -> bool {
        match self {
            Direct::Path(_) | Direct::Index(_) | Direct::Url(_) => {
                entry.source == self.source_stem()
            }
            Direct::Git(_) => entry
                .source
                .rsplit_once('#')
                .is_some_and(|(stem, _)| stem == self.source_stem()),
        }
    }

    /// Says where the skill comes from, for messages: `./skills/pdf`,
    /// `https://host/repo.git (v1.2.0)`.
    pub fn describe(&self) -> String {
        match self {
            Direct::Path(path) => format!("folder {path}"),
            Direct::Index(url) => format!("discovery index {url}"),
            Direct::Url(url) => format!("tarball {url}"),
            Direct::Git(git) => {
                let mut text = format!("git repository {}", git.url);
                if let Some(path) = &git.path {
                    text.push_str(&format!(", folder {path}"));
                }
                if let Some(rev) = &git.rev {
                    text.push_str(&format!(", at {rev}"));
                }
                text
            }
        }
    }
}

/// Escapes what would make a value of a `source`'s query ambiguous (`%`,
/// `&`, `=`, `#`, `?`, whitespace), keeping `/` readable.
fn escape(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for character in value.chars() {
        match character {
            '%' | '&' | '=' | '#' | '?' | '+' => {
                escaped.push_str(&format!("%{:02X}", u32::from(character)));
            }
            character if character.is_whitespace() || character.is_control() => {
                let mut bytes = [0; 4];
                for byte in character.encode_utf8(&mut bytes).bytes() {
                    escaped.push_str(&format!("%{byte:02X}"));
                }
            }
            character => escaped.push(character),
        }
    }
    escaped
}

impl GitSource {
    /// Where the repository is for a project at `root`: the URL as it is,
    /// or a local path resolved against the project's root (never against
    /// the folder a command runs in), so that one entry means one
    /// repository wherever it is read from, and is cached as that one.
    pub fn location(&self, root: &Path) -> String {
        if !is_local_path(&self.url) {
            return self.url.clone();
        }
        let path = root.join(&self.url);
        std::fs::canonicalize(&path)
            .unwrap_or(path)
            .to_string_lossy()
            .into_owned()
    }
}

/// Returns true if and only if a git `url` is a local path: no scheme, and
/// not scp-like (`user@host:path`, where a `:` comes before any `/`).
pub fn is_local_path(url: &str) -> bool {
    if url.contains("://") {
        return false;
    }
    match (url.find(':'), url.find('/')) {
        (Some(colon), Some(slash)) => colon > slash,
        (Some(_), None) => false,
        _ => true,
    }
}

/// Returns the commit a git `source` of skills.lock pins.
pub fn locked_commit(source: &str) -> Option<&str> {
    source
        .strip_prefix(GIT_SOURCE_PREFIX)?
        .rsplit_once('#')
        .map(|(_, commit)| commit)
}

/// `skills/pdf/`, `./skills\pdf` -> `skills/pdf`.
fn normalize(path: &str) -> String {
    let slashed = path.replace('\\', "/");
    let parts: Vec<&str> = slashed
        .split('/')
        .enumerate()
        .filter(|(index, part)| !(part.is_empty() && *index > 0) && *part != ".")
        .map(|(_, part)| part)
        .collect();
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

/// A folder path in skills.toml: not empty and free of NUL. It may lead out
/// of the project (a skill shared by two projects beside each other): the
/// folder is only read, and what it holds must still be a valid skill.
fn check_relative_path(path: &str) -> Result<(), String> {
    if path.contains('\0') {
        return Err("which holds a NUL character".into());
    }
    Ok(())
}

/// A repository URL from skills.toml, which may come from a cloned
/// repository: an `https`, `http`, `ssh`, `git` or `file` URL, an scp-like
/// `user@host:path` or a local path, with nothing that a transport could
/// read as an option (a part starting with `-`, as in `ssh://-oProxyCommand=...`)
/// or a command (`ext::`).
pub fn check_git_url(url: &str) -> Result<(), String> {
    if url
        .chars()
        .any(|character| character.is_whitespace() || character.is_control())
    {
        return Err("which holds whitespace or control characters".into());
    }
    if let Some((scheme, _)) = url.split_once("://") {
        if !matches!(scheme, "https" | "http" | "ssh" | "git" | "file") {
            return Err(format!(
                "whose scheme `{scheme}` is not https, http, ssh, git or file"
            ));
        }
    } else if url.contains("::") {
        return Err("which names a transport helper (`::`), which skillpkg does not run".into());
    }
    // Percent-decoded too: `%2D` is a `-` to a transport that decodes.
    let decoded = url.replace("%2D", "-").replace("%2d", "-");
    if decoded
        .split(['/', '@', ':', '[', ']'])
        .any(|part| part.starts_with('-'))
    {
        return Err(
            "in which a part starts with `-`, which a transport could read as an option".into(),
        );
    }
    if url::Url::parse(url).is_ok_and(|parsed| parsed.password().is_some()) {
        return Err(
            "which holds a password, which would be written to skills.toml and skills.lock".into(),
        );
    }
    Ok(())
}

/// A lock `source`, said for messages: `path:skills/pdf` as `folder
/// skills/pdf`; others as they are.
pub fn describe_source(source: &str) -> String {
    match source.strip_prefix(PATH_SOURCE_PREFIX) {
        Some(path) => format!("folder {path}"),
        None => source.to_owned(),
    }
}

/// Reads a git source as `add` is given it: `git+URL[#REV]`,
/// `github:OWNER/REPO[/PATH][@REV]`, `OWNER/REPO[/PATH][@REV]` (GitHub),
/// a `https://github.com/OWNER/REPO[/tree/REV/PATH]` page, or any URL whose
/// path ends in `.git` (`#REV` for the revision). `None` when `text` is not
/// one of these.
pub fn git_argument(text: &str) -> Option<GitSource> {
    if let Some(rest) = text.strip_prefix("git+") {
        let (url, rev) = split_rev(rest, '#');
        return Some(GitSource {
            url: url.to_owned(),
            rev,
            path: None,
        });
    }
    if let Some(rest) = text.strip_prefix("github:") {
        return github(rest);
    }
    let lower = text.to_ascii_lowercase();
    let is_web = lower.starts_with("https://") || lower.starts_with("http://");
    // A tarball is a tarball wherever it is, GitHub's release and archive
    // downloads included.
    if is_web && url::Url::parse(text).is_ok_and(|url| super::web::is_tarball(&url)) {
        return None;
    }
    if let Some(rest) = ["https://github.com/", "http://github.com/"]
        .iter()
        .find(|prefix| lower.starts_with(*prefix))
        .map(|prefix| &text[prefix.len()..])
    {
        let rest = rest.trim_end_matches('/');
        let parts: Vec<&str> = rest.split('/').collect();
        if parts.len() >= 4 && matches!(parts[2], "tree" | "blob") {
            // A page: /OWNER/REPO/tree/REV/PATH, or a file's page
            // /OWNER/REPO/blob/REV/PATH/SKILL.md (a REV with `/` is read as
            // its first part; write `github:OWNER/REPO/PATH@REV` for it).
            let mut path: Vec<&str> = parts[4..].to_vec();
            if path.last().is_some_and(|last| *last == skill::SKILL_MD) {
                path.pop();
            }
            let path = path.join("/");
            return Some(GitSource {
                url: github_url(parts[0], parts[1]),
                rev: Some(parts[3].to_owned()),
                path: (!path.is_empty()).then_some(path),
            });
        }
        let (rest, rev) = split_rev(rest, '#');
        return github(rest).map(|source| GitSource {
            rev: rev.or(source.rev),
            ..source
        });
    }
    if let Some((scheme, _)) = text.split_once("://") {
        let (url, rev) = split_rev(text, '#');
        let is_git = matches!(scheme.to_ascii_lowercase().as_str(), "git" | "ssh" | "file")
            || url.trim_end_matches('/').ends_with(".git");
        return is_git.then(|| GitSource {
            url: url.to_owned(),
            rev,
            path: None,
        });
    }
    // scp-like: `git@github.com:acme/skills.git[#REV]`.
    if let Some((user_host, _)) = text.split_once(':')
        && user_host.contains('@')
        && !user_host.contains('/')
    {
        let (url, rev) = split_rev(text, '#');
        return Some(GitSource {
            url: url.to_owned(),
            rev,
            path: None,
        });
    }
    if text.contains('/') && !text.starts_with(['.', '/', '~']) && !text.contains(':') {
        return github(text);
    }
    None
}

/// `OWNER/REPO[/PATH][@REV]`.
fn github(text: &str) -> Option<GitSource> {
    let (text, rev) = split_rev(text, '@');
    let mut parts = text.trim_matches('/').splitn(3, '/');
    let owner = parts.next().filter(|part| is_github_name(part))?;
    let repo = parts.next().filter(|part| is_github_name(part))?;
    let path = parts.next().map(normalize).filter(|path| path != ".");
    Some(GitSource {
        url: github_url(owner, repo),
        rev,
        path,
    })
}

fn github_url(owner: &str, repo: &str) -> String {
    let repo = repo.strip_suffix(".git").unwrap_or(repo);
    format!("https://github.com/{owner}/{repo}.git")
}

fn is_github_name(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.'))
        && text != "."
        && text != ".."
}

/// `text` split at the last `separator` into what is before it and a
/// non-empty revision after it.
fn split_rev(text: &str, separator: char) -> (&str, Option<String>) {
    match text.rsplit_once(separator) {
        Some((before, rev)) if !rev.is_empty() => (before, Some(rev.to_owned())),
        Some((before, _)) => (before, None),
        None => (text, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::needless_pass_by_value)] // the shape `from_table` takes
    fn invalid(problem: String) -> anyhow::Error {
        anyhow::anyhow!("the entry {problem}")
    }

    fn table(text: &str) -> toml::Table {
        text.parse().unwrap()
    }

    #[test]
    fn entries_read_and_lock_sources_round_trip() {
        let path = Direct::from_table(&table("path = \"./skills/pdf/\""), &invalid).unwrap();
        assert_eq!(path, Direct::Path("./skills/pdf/".into()));
        assert_eq!(path.lock_source(None), "path:skills/pdf");

        let git = Direct::from_table(
            &table("git = \"https://example.com/a.git\"\nrev = \"v1&2\"\npath = \"review/\""),
            &invalid,
        )
        .unwrap();
        let source = git.lock_source(Some("0123abcd"));
        assert_eq!(
            source,
            "git+https://example.com/a.git?rev=v1%262&path=review#0123abcd"
        );
        assert_eq!(locked_commit(&source), Some("0123abcd"));
        let entry = LockedSkill {
            name: "review".parse().unwrap(),
            version: semver::Version::new(0, 0, 0).into(),
            source,
            checksum: None,
            tree: "h1:x".into(),
            signer: None,
            provenance: None,
            dependencies: Vec::new(),
            audit: None,
        };
        assert!(git.locked_by(&entry));
        let Direct::Git(mut other) = git else {
            unreachable!()
        };
        other.rev = Some("v2".into());
        assert!(!Direct::Git(other).locked_by(&entry));
        assert!(!path.locked_by(&entry));
    }

    #[test]
    fn bad_entries_are_named() {
        let error = |text: &str| {
            Direct::from_table(&table(text), &invalid)
                .unwrap_err()
                .to_string()
        };
        assert!(error("path = \"x\"\nversion = \"1\"").contains("`version`"));
        assert!(error("path = \"x\"\nrev = \"main\"").contains("`rev` without `git`"));
        assert!(error("path = \"\"").contains("not a non-empty string"));
        assert!(error("git = 3").contains("`git`"));
        assert!(error("git = \"ssh://-oProxyCommand=touch%20x/r\"").contains("starts with `-`"));
        assert!(error("git = \"ext::sh -c touch% /tmp/x\"").contains("whitespace"));
        assert!(error("git = \"ext::sh\"").contains("transport helper"));
        assert!(error("git = \"gopher://x/r\"").contains("scheme `gopher`"));
        assert!(check_git_url("git@github.com:acme/skills.git").is_ok());
        assert!(check_git_url("ssh://%2DoProxyCommand=id@host/r").is_err());
        assert!(check_git_url("[-oProxyCommand=id]:x.git").is_err());
        assert!(check_git_url("https://alice:secret@host/r.git").is_err());
        assert!(check_git_url("../sibling/repo").is_ok());
    }

    #[test]
    fn git_arguments_of_every_form_are_read_and_others_are_left_alone() {
        let read = |text: &str| git_argument(text).map(|git| (git.url, git.rev, git.path));
        let some = |url: &str, rev: Option<&str>, path: Option<&str>| {
            Some((
                url.to_owned(),
                rev.map(str::to_owned),
                path.map(str::to_owned),
            ))
        };
        let acme = "https://github.com/acme/skills.git";
        assert_eq!(read("acme/skills"), some(acme, None, None));
        assert_eq!(
            read("acme/skills/review@v1.2.0"),
            some(acme, Some("v1.2.0"), Some("review"))
        );
        assert_eq!(
            read("github:acme/skills/a/b/@main"),
            some(acme, Some("main"), Some("a/b"))
        );
        assert_eq!(
            read("https://github.com/acme/skills"),
            some(acme, None, None)
        );
        assert_eq!(
            read("https://github.com/acme/skills.git#v2"),
            some(acme, Some("v2"), None)
        );
        assert_eq!(
            read("https://github.com/acme/skills/tree/main/skills/pdf"),
            some(acme, Some("main"), Some("skills/pdf"))
        );
        assert_eq!(
            read("git+https://git.example.com/x/skills#abc123"),
            some("https://git.example.com/x/skills", Some("abc123"), None)
        );
        assert_eq!(
            read("git://127.0.0.1:9418/skills.git"),
            some("git://127.0.0.1:9418/skills.git", None, None)
        );
        assert_eq!(
            read("file:///srv/skills"),
            some("file:///srv/skills", None, None)
        );
        for other in [
            "pdf",
            "pdf@^1",
            "./skills/x",
            "/abs/x",
            "path:x",
            "https://skills.example.com/",
            "https://example.com/x.tgz",
            "../a/b",
            "a/..",
            "c:/x",
        ] {
            assert_eq!(read(other), None, "{other}");
        }
    }

    #[test]
    fn paths_are_written_normalised() {
        assert_eq!(normalize("./a//b/./c/"), "a/b/c");
        assert_eq!(normalize("/abs/x"), "/abs/x");
    }
}
