//! Version control metadata, which no skill archive may carry.
//!
//! A skill is installed into someone else's project, and people, shell
//! prompts and editors run version control tools there. Those tools read
//! their metadata from the folder they run in or any folder above it, and
//! some of it runs programs: a `.git/config` with `core.fsmonitor` runs its
//! command on the next `git status`, a `.hg/hgrc` has `[hooks]`, darcs has
//! `prefs/defaults` posthooks. A `.git` *file* (a gitfile) sends git to
//! another repository, and a folder holding `HEAD` with `objects` and `refs`
//! is a bare repository whatever its name. `.gitmodules` and `.hgsub` make
//! their tools clone URLs into the tree.
//!
//! So every path component is compared with the names below after the same
//! full case fold that decides collisions ([`super::collision_key`]), with
//! the trailing dots and spaces Windows drops removed, and anything that
//! looks like a repository is refused. `.gitignore` and `.gitattributes` are
//! kept: they configure no program (an attribute can name a filter or diff
//! driver, but only a config file, which archives cannot carry, says what
//! runs for it).
//!
//! Packing leaves the exactly spelled names out, as it always left out
//! `.git`; any other spelling (`.GIT`, `.git.`) is an error there too.

use std::collections::HashMap;
use std::sync::LazyLock;

use super::collision_key;

/// Each name, as its tool writes it, and the system it belongs to.
pub(crate) const METADATA_NAMES: &[(&str, &str)] = &[
    (".git", "Git"),
    (".gitmodules", "Git"),
    (".hg", "Mercurial"),
    (".hgsub", "Mercurial"),
    (".svn", "Subversion"),
    (".bzr", "Bazaar"),
    ("_darcs", "Darcs"),
    ("CVS", "CVS"),
    (".fslckout", "Fossil"),
    ("_FOSSIL_", "Fossil"),
    (".jj", "Jujutsu"),
    (".sl", "Sapling"),
    (".pijul", "Pijul"),
];

/// Returns the version control system whose metadata `component` names,
/// on any file system: `.git`, `.GIT`, `.git.`, `.git::$INDEX_ALLOCATION`.
pub(crate) fn metadata_system(component: &str) -> Option<&'static str> {
    // NTFS reads `name:stream` as `name`, and drops trailing dots and spaces.
    let name = component.split(':').next().unwrap_or(component);
    let name = name.trim_end_matches(['.', ' ']);
    let key = collision_key(name);
    METADATA_KEYS
        .iter()
        .find(|(known, _)| *known == key)
        .map(|(_, system)| *system)
}

/// [`METADATA_NAMES`] under [`collision_key`], folded once: every path
/// component of every walk is compared with them.
static METADATA_KEYS: LazyLock<Vec<(String, &'static str)>> = LazyLock::new(|| {
    METADATA_NAMES
        .iter()
        .map(|(name, system)| (collision_key(name), *system))
        .collect()
});

/// Returns the first folder (`""` for the root) that git would take for a
/// repository: one that holds `HEAD` beside `objects`, `refs` or
/// `commondir`, compared under the full case fold.
///
/// git's test (`is_git_directory`) wants a valid `HEAD` and `objects` and
/// `refs` in the common folder, which `commondir` may point elsewhere; this
/// refuses a little more than that, so that no variant slips through.
pub fn find_git_repository<'a>(paths: impl IntoIterator<Item = &'a str>) -> Option<String> {
    const HEAD: u8 = 1;
    const STORE: u8 = 2;
    let head = collision_key("HEAD");
    let stores = ["objects", "refs", "commondir"].map(collision_key);
    let mut folders: HashMap<String, (String, u8)> = HashMap::new();
    // Every path and every folder above it: `a/refs/heads/main` puts `refs` in `a`.
    let named = paths.into_iter().flat_map(|path| {
        path.match_indices('/')
            .map(|(end, _)| &path[..end])
            .chain(std::iter::once(path))
    });
    for path in named {
        let (folder, name) = path.rsplit_once('/').unwrap_or(("", path));
        let key = collision_key(name);
        let mark = if key == head {
            HEAD
        } else if stores.contains(&key) {
            STORE
        } else {
            continue;
        };
        let seen = folders
            .entry(collision_key(folder))
            .or_insert_with(|| (folder.to_owned(), 0));
        seen.1 |= mark;
    }
    let mut found: Vec<String> = folders
        .into_values()
        .filter(|(_, marks)| *marks == HEAD | STORE)
        .map(|(folder, _)| folder)
        .collect();
    found.sort();
    found.into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_each_system_in_any_spelling() {
        assert_eq!(metadata_system(".git"), Some("Git"));
        assert_eq!(metadata_system(".GiT"), Some("Git"));
        assert_eq!(metadata_system(".git. ."), Some("Git"));
        assert_eq!(metadata_system(".git::$INDEX_ALLOCATION"), Some("Git"));
        assert_eq!(metadata_system("cvs"), Some("CVS"));
        assert_eq!(metadata_system(".gitignore"), None);
        assert_eq!(metadata_system(".gitattributes"), None);
        assert_eq!(metadata_system("git"), None);
        assert_eq!(metadata_system(".github"), None);
    }

    #[test]
    fn finds_a_folder_shaped_as_a_repository() {
        assert_eq!(
            find_git_repository(["SKILL.md", "a/HEAD", "a/refs/heads/main"]),
            Some("a".to_owned())
        );
        assert_eq!(
            find_git_repository(["HEAD", "Objects"]),
            Some(String::new())
        );
        assert_eq!(find_git_repository(["a/HEAD", "b/refs"]), None);
        assert_eq!(find_git_repository(["HEAD.md", "refs.md"]), None);
    }
}
