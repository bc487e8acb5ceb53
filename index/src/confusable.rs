//! Skill names a person could take for one another, the raw material of
//! typosquatting: a registry refuses a new name that looks like an existing
//! one, or that is one typo from a popular one, and `skillpkg add` warns
//! when the name asked for is one typo from a more popular one.
//!
//! Two relations, both on names that are already valid (`[a-z0-9-]`):
//!
//! - **Looks alike**: the same skeleton. The skeleton is Unicode's (UTS #39,
//!   section 4, through the `unicode-security` crate, whose tables are
//!   Unicode's `confusables.txt`), so `rn` and `m`, `1` and `l` meet; then
//!   folded to lower case, because the skeleton of `0` is `O` while `o`
//!   stays `o`; then without hyphens, which a reader skips over
//!   (`pdf-processing`, `pdfprocessing`, `pdf-process-ing`).
//! - **One edit**: the optimal string alignment distance is 1: one
//!   character inserted, removed or replaced, or two neighbouring ones
//!   swapped (`pdf-procesing`, `pdf-prcoessing`). Swaps count as one edit
//!   because they are the commonest typing slip.
//!
//! Looking alike is refused whatever the other name's popularity; one edit
//! only next to a popular name, since short names are all a few edits apart.

/// How two different names resemble each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Likeness {
    /// They have the same [`skeleton`]: a reader cannot tell them apart.
    LooksAlike,
    /// One typing slip turns one into the other.
    OneEdit,
}

impl Likeness {
    /// Describes the relation in a few words, for messages: "looks like",
    /// "is one edit from".
    pub fn phrase(self) -> &'static str {
        match self {
            Self::LooksAlike => "looks like",
            Self::OneEdit => "is one edit from",
        }
    }
}

/// Returns the form two names that look alike share: the UTS #39 skeleton,
/// folded to lower case and without hyphens.
pub fn skeleton(name: &str) -> String {
    let folded: String = unicode_security::skeleton(name)
        .flat_map(char::to_lowercase)
        .filter(|character| *character != '-')
        .collect();
    // Folding can make a character that has a skeleton of its own: take it
    // again, so the result is a fixed point.
    unicode_security::skeleton(&folded).collect()
}

/// Returns true if and only if one insertion, removal, replacement or swap
/// of neighbours turns `a` into `b`.
pub fn one_edit(a: &str, b: &str) -> bool {
    // Lengths more than one apart need more than one edit: skip the table.
    a.len().abs_diff(b.len()) <= 1 && strsim::osa_distance(a, b) == 1
}

/// Returns how `candidate` resembles `existing`, or `None` when it does
/// not (or when they are the same name, which is not a resemblance).
pub fn likeness(candidate: &str, existing: &str) -> Option<Likeness> {
    if candidate == existing {
        None
    } else if skeleton(candidate) == skeleton(existing) {
        Some(Likeness::LooksAlike)
    } else if one_edit(candidate, existing) {
        Some(Likeness::OneEdit)
    } else {
        None
    }
}

/// Returns the keys under which a registry files `name` so that the names
/// it [resembles](likeness) are found without comparing it with every
/// name: every two names that resemble each other share a key. The
/// [`skeleton`] (`s:`), and the name and each string one character
/// removal from it (`d:`): two names one insertion, removal, replacement
/// or swap of neighbours apart have a removal (or the name itself) in
/// common, the way SymSpell finds its candidates. Names that share a key
/// may be two edits apart: check each with [`likeness`].
pub fn lookup_keys(name: &str) -> Vec<String> {
    let characters: Vec<char> = name.chars().collect();
    let mut keys = vec![format!("s:{}", skeleton(name)), format!("d:{name}")];
    for index in 0..characters.len() {
        let removed: String = characters
            .iter()
            .enumerate()
            .filter(|(other, _)| *other != index)
            .map(|(_, character)| character)
            .collect();
        keys.push(format!("d:{removed}"));
    }
    keys.sort();
    keys.dedup();
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_resemble_each_other_share_a_lookup_key() {
        let names = [
            "pdf-processing",
            "pdf-procesing",
            "pdf-prcoessing",
            "pdfprocessing",
            "pdf-processingg",
            "pdf-processinh",
            "rnodern-css",
            "modern-css",
            "modern-ccs",
            "ski11-lint",
            "skill-lint",
            "g00gle-docs",
            "google-docs",
            "logs",
            "1ogs",
            "log",
            "lgos",
            "a",
            "b",
            "ab",
            "ba",
            "csv-tools",
            "xlsx-tools",
        ];
        for a in names {
            for b in names {
                let shared = lookup_keys(a)
                    .iter()
                    .any(|key| lookup_keys(b).contains(key));
                if likeness(a, b).is_some() {
                    assert!(
                        shared,
                        "`{a}` and `{b}` resemble each other but share no key"
                    );
                }
            }
        }
        // And the keys are few: at most a name's length and two (the
        // removals of either `s` of `ss` are one key).
        assert_eq!(lookup_keys("pdf-processing").len(), 15);
        assert!(
            !lookup_keys("csv-tools")
                .iter()
                .any(|key| lookup_keys("xlsx-tools").contains(key)),
            "unrelated names share no key"
        );
    }

    #[test]
    fn letters_that_look_alike_meet_in_the_skeleton() {
        // The pairs a `[a-z0-9-]` name can play on.
        assert_eq!(
            likeness("rnodern-css", "modern-css"),
            Some(Likeness::LooksAlike)
        );
        assert_eq!(
            likeness("ski11-lint", "skill-lint"),
            Some(Likeness::LooksAlike)
        );
        assert_eq!(
            likeness("g00gle-docs", "google-docs"),
            Some(Likeness::LooksAlike)
        );
        assert_eq!(likeness("1ogs", "logs"), Some(Likeness::LooksAlike));
        assert_eq!(skeleton("m"), skeleton("rn"));
        assert_eq!(skeleton("0"), skeleton("o"));
    }

    #[test]
    fn hyphens_are_ignored_wherever_they_are() {
        for other in ["pdfprocessing", "pdf-process-ing", "p-d-f-processing"] {
            assert_eq!(
                likeness(other, "pdf-processing"),
                Some(Likeness::LooksAlike),
                "{other}"
            );
        }
    }

    #[test]
    fn one_typing_slip_is_one_edit_and_two_are_not() {
        assert_eq!(
            likeness("pdf-procesing", "pdf-processing"),
            Some(Likeness::OneEdit)
        );
        assert_eq!(
            likeness("pdf-prcoessing", "pdf-processing"),
            Some(Likeness::OneEdit)
        );
        assert_eq!(
            likeness("pdf-processings", "pdf-processing"),
            Some(Likeness::OneEdit)
        );
        assert_eq!(
            likeness("pdf-processimg", "pdf-processing"),
            Some(Likeness::OneEdit)
        );
        assert_eq!(likeness("pdf-prcesing", "pdf-processing"), None);
        assert!(!one_edit("pdf", "pdf-x"));
    }

    #[test]
    fn different_names_and_the_same_name_are_not_alike() {
        assert_eq!(likeness("csv-insights", "pdf-processing"), None);
        assert_eq!(likeness("pdf-processing", "pdf-processing"), None);
        // `vv` and `w` are not confusable in Unicode's tables: the rule is
        // the standard's, not a guess.
        assert_eq!(likeness("vvriter", "writer"), None);
    }
}
