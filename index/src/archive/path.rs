//! Portable archive paths: a path that means the same file on Linux, macOS
//! and Windows, cannot climb out of the folder it is unpacked into, and
//! names nothing a version control tool would act on.

use crate::name::is_reserved_on_windows;
use unicode_normalization::UnicodeNormalization;

use super::{Limits, vcs};

/// Why a path is not portable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PathProblem {
    #[error("the path is empty")]
    Empty,
    #[error("the path is absolute")]
    Absolute,
    #[error("the path starts with a Windows drive (`{0}:`)")]
    Drive(char),
    #[error("the path contains a backslash")]
    Backslash,
    #[error("the path contains an empty, `.` or `..` component")]
    Traversal,
    #[error("the path contains a NUL or control character")]
    ControlCharacter,
    #[error(
        "the path contains U+{:04X}, an invisible character that hides or reorders what a name shows, and that macOS's HFS+ ignores in names",
        u32::from(*.0)
    )]
    InvisibleCharacter(char),
    #[error(
        "`{component}` is {system} metadata, which {system} reads and may act on (running hooks or commands) in the folder a skill is installed in"
    )]
    VersionControl {
        component: String,
        system: &'static str,
    },
    #[error(
        "`{0}` has the form of a Windows short (8.3) name, which on Windows can be another name of a different file (`GIT~1` is `.git`)"
    )]
    ShortName(String),
    #[error("the path contains {0:?}, which Windows does not allow in file names")]
    ForbiddenCharacter(char),
    #[error("`{0}` is a reserved device name on Windows")]
    ReservedName(String),
    #[error("`{0}` ends with a dot or a space, which Windows drops")]
    TrailingDotOrSpace(String),
    #[error("the path is {0} bytes long; the limit is {1}")]
    TooLong(usize, usize),
    #[error("the path is {0} levels deep; the limit is {1}")]
    TooDeep(usize, usize),
}

/// Checks that `path` (`/`-separated, relative) is portable, names no
/// version control metadata (see [`super::vcs`]) and is within `limits`.
pub fn check_portable_path(path: &str, limits: &Limits) -> Result<(), PathProblem> {
    if path.is_empty() {
        return Err(PathProblem::Empty);
    }
    if path.starts_with('/') {
        return Err(PathProblem::Absolute);
    }
    if has_drive_prefix(path) {
        return Err(PathProblem::Drive(path.chars().next().unwrap_or_default()));
    }
    if path.contains('\\') {
        return Err(PathProblem::Backslash);
    }
    if path.chars().any(char::is_control) {
        return Err(PathProblem::ControlCharacter);
    }
    if let Some(character) = path.chars().find(|c| is_invisible(*c)) {
        return Err(PathProblem::InvisibleCharacter(character));
    }
    if path.len() > limits.max_path_bytes {
        return Err(PathProblem::TooLong(path.len(), limits.max_path_bytes));
    }
    let depth = path.split('/').count();
    if depth > limits.max_depth {
        return Err(PathProblem::TooDeep(depth, limits.max_depth));
    }
    for component in path.split('/') {
        if component.is_empty() || component == "." || component == ".." {
            return Err(PathProblem::Traversal);
        }
        // Before the character rules, so that `.git.` and `.git::$DATA` are
        // named for what they are.
        if let Some(system) = vcs::metadata_system(component) {
            return Err(PathProblem::VersionControl {
                component: component.to_owned(),
                system,
            });
        }
        if let Some(character) = component
            .chars()
            .find(|c| matches!(c, '<' | '>' | ':' | '"' | '|' | '?' | '*'))
        {
            return Err(PathProblem::ForbiddenCharacter(character));
        }
        if component.ends_with(['.', ' ']) {
            return Err(PathProblem::TrailingDotOrSpace(component.to_owned()));
        }
        if is_reserved_on_windows(component) {
            return Err(PathProblem::ReservedName(component.to_owned()));
        }
        if is_short_name(component) {
            return Err(PathProblem::ShortName(component.to_owned()));
        }
    }
    Ok(())
}

/// Returns true if and only if `character` is one of the invisible
/// formatting characters refused in paths: the zero-width characters and
/// direction marks, the bidirectional embeddings, overrides and isolates,
/// and the byte order mark. HFS+ ignores most of them when it compares
/// names (git's `next_hfs_char` lists them), so `.g\u{200c}it` is `.git`
/// there; all of them make two names look alike or one look like another.
fn is_invisible(character: char) -> bool {
    matches!(
        character,
        '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{206f}' | '\u{feff}'
    )
}

/// Returns true if and only if `component` has the shape of a Windows 8.3
/// short name, `BASE~N` or `BASE~N.EXT` with at most 8 characters before the
/// dot and 3 after: NTFS may give that name to another entry of the same
/// folder (`references` is also `REFERE~1`), so it could alias a different
/// path, or `.git` itself (`GIT~1`).
fn is_short_name(component: &str) -> bool {
    let (base, extension) = component.split_once('.').unwrap_or((component, ""));
    if base.chars().count() > 8 || extension.chars().count() > 3 || extension.contains('.') {
        return false;
    }
    let Some((head, number)) = base.rsplit_once('~') else {
        return false;
    };
    !head.is_empty() && !number.is_empty() && number.bytes().all(|byte| byte.is_ascii_digit())
}

fn has_drive_prefix(path: &str) -> bool {
    let bytes = path.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

/// The key under which two paths collide on a case-insensitive or
/// normalising file system (macOS, Windows): NFC, then a full case fold
/// (upper, then lower case, so `ς` and `σ`, `µ` and `μ` meet).
pub fn collision_key(path: &str) -> String {
    // ASCII is its own NFC, and its full case fold is its lower case: most
    // paths are ASCII, and take no trip through the Unicode tables.
    if path.is_ascii() {
        return path.to_ascii_lowercase();
    }
    let folded = path.nfc().collect::<String>().to_uppercase().to_lowercase();
    folded.nfc().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_ordinary_paths() {
        for path in [
            "SKILL.md",
            "scripts/extract.py",
            "assets/logo v2.png",
            "références/été.md",
            ".hidden",
        ] {
            assert_eq!(
                check_portable_path(path, &Limits::default()),
                Ok(()),
                "{path}"
            );
        }
    }

    #[test]
    fn refuses_each_unportable_form() {
        let limits = Limits::default();
        let cases: &[(&str, PathProblem)] = &[
            ("", PathProblem::Empty),
            ("/etc/x", PathProblem::Absolute),
            ("C:\\x", PathProblem::Drive('C')),
            ("c:x", PathProblem::Drive('c')),
            ("a\\b", PathProblem::Backslash),
            ("../x", PathProblem::Traversal),
            ("a/../../x", PathProblem::Traversal),
            ("a//b", PathProblem::Traversal),
            ("./a", PathProblem::Traversal),
            ("a\0b", PathProblem::ControlCharacter),
            ("a\x1bb", PathProblem::ControlCharacter),
            ("ab:c", PathProblem::ForbiddenCharacter(':')),
            ("CON", PathProblem::ReservedName("CON".into())),
            ("docs/aux.txt", PathProblem::ReservedName("aux.txt".into())),
            ("lpt9", PathProblem::ReservedName("lpt9".into())),
            (
                "COM\u{b9}.txt",
                PathProblem::ReservedName("COM\u{b9}.txt".into()),
            ),
            ("file.", PathProblem::TrailingDotOrSpace("file.".into())),
            ("dir /x", PathProblem::TrailingDotOrSpace("dir ".into())),
            ("a\u{202e}b", PathProblem::InvisibleCharacter('\u{202e}')),
            (
                "x/.Git/config",
                PathProblem::VersionControl {
                    component: ".Git".into(),
                    system: "Git",
                },
            ),
            (
                ".git::$INDEX_ALLOCATION",
                PathProblem::VersionControl {
                    component: ".git::$INDEX_ALLOCATION".into(),
                    system: "Git",
                },
            ),
            ("GIT~1", PathProblem::ShortName("GIT~1".into())),
            (
                "docs/refer~12.md",
                PathProblem::ShortName("refer~12.md".into()),
            ),
        ];
        for (path, problem) in cases {
            assert_eq!(
                check_portable_path(path, &limits).as_ref(),
                Err(problem),
                "{path:?}"
            );
        }
        assert!(matches!(
            check_portable_path(&"a".repeat(256), &limits),
            Err(PathProblem::TooLong(256, 255))
        ));
        assert!(matches!(
            check_portable_path(&vec!["d"; 17].join("/"), &limits),
            Err(PathProblem::TooDeep(17, 16))
        ));
        assert_eq!(check_portable_path("console.md", &limits), Ok(()));
        assert_eq!(check_portable_path("com10", &limits), Ok(()));
        for path in [
            "backup~",
            "~1",
            "a~b",
            "long-name~1",
            "file~1.text",
            ".github/x",
        ] {
            assert_eq!(check_portable_path(path, &limits), Ok(()), "{path}");
        }
    }

    #[test]
    fn collision_keys_fold_case_and_unicode_normalisation() {
        assert_eq!(collision_key("SKILL.md"), collision_key("skill.md"));
        assert_eq!(collision_key("caf\u{e9}"), collision_key("cafe\u{301}"));
        assert_eq!(
            collision_key("\u{3c3}"),
            collision_key("\u{3c2}"),
            "sigma and final sigma"
        );
        assert_eq!(
            collision_key("\u{b5}"),
            collision_key("\u{3bc}"),
            "micro sign and mu"
        );
        assert_ne!(collision_key("a"), collision_key("b"));
        assert_eq!(collision_key("Scripts/RUN.py"), "scripts/run.py");
        assert_eq!(
            collision_key("K\u{212a}"),
            "kk",
            "the Kelvin sign folds to k"
        );
    }
}
