//! Skill names a person could take for one another, the raw material of
//! typosquatting: a registry refuses a new name that looks like an existing
//! one, or that is one typo from a popular one, and `skillpkg add` warns
//! when the name asked for is one typo from a more popular one.
//!
//! Three relations, all on names that are already valid (`[a-z0-9-]`):
//!
//! - **Looks alike**: the same skeleton. The skeleton is Unicode's (UTS #39,
//!   section 4, through the `unicode-security` crate, whose tables are
//!   Unicode's `confusables.txt`), so `rn` and `m`, `1` and `l` meet; then
//!   folded to lower case, because the skeleton of `0` is `O` while `o`
//!   stays `o`; then without hyphens, which a reader skips over
//!   (`pdf-processing`, `pdfprocessing`, `pdf-process-ing`).
//! - **Looks similar**: the same [`visual_skeleton`], or visual skeletons
//!   one edit apart where a glyph swap (not only a typo) makes part of the
//!   difference. Unicode's tables are for telling scripts apart, and miss
//!   what a reader mistakes within `[a-z0-9]`: `i` for `l`
//!   (`pdf-processlng`), `q` for `g` (`pdf-processinq`), `vv` for `w`
//!   (`docx-vvild`). The visual skeleton reads those as one, the way UTS
//!   #39 builds its skeleton from a table of prototypes, but with a table
//!   of glyphs that look alike in the fonts names are shown in
//!   ([`GLYPH_SEQUENCES`], [`glyph`]).
//! - **One edit**: the optimal string alignment distance is 1: one
//!   character inserted, removed or replaced, or two neighbouring ones
//!   swapped (`pdf-procesing`, `pdf-prcoessing`). Swaps count as one edit
//!   because they are the commonest typing slip.
//!
//! Looking alike or similar is refused whatever the other name's
//! popularity; one edit only next to a popular name, since short names are
//! all a few edits apart. A typo alone is never "looks similar", so that
//! the one-edit rule keeps deciding typos by popularity.
//!
//! False positives, and the bounds that keep them few: short names share
//! skeletons by chance (`api` and `apl`, `i18n` and `l10n`, `cli` and
//! `dl`), so "looks similar" needs a visual skeleton of at least
//! [`MIN_ALIKE_LEN`] characters when the skeletons are the same, and
//! [`MIN_NEAR_LEN`] when they are one edit apart. Words that differ only by
//! a look-alike glyph are refused beside each other all the same
//! (`mail-tools` and `mall-tools`): a reader skimming a list cannot tell
//! them apart either, and the owner of one may still publish the other.
//!
//! A registry finds the names a new name may resemble by [`lookup_keys`],
//! without comparing it with every name: about 30 keys a name, every two
//! names that resemble each other share one.

/// How two different names resemble each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Likeness {
    /// They have the same [`skeleton`]: a reader cannot tell them apart.
    LooksAlike,
    /// Their [`visual_skeleton`]s are the same, or one edit apart with a
    /// look-alike glyph in the difference: a reader skimming can take one
    /// for the other.
    LooksSimilar,
    /// One typing slip turns one into the other.
    OneEdit,
}

impl Likeness {
    /// Describes the relation in a few words, for messages: "looks like",
    /// "is one edit from".
    pub fn phrase(self) -> &'static str {
        match self {
            Self::LooksAlike | Self::LooksSimilar => "looks like",
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

/// Letter pairs that read as one letter, and the letter: `rn` and `m`,
/// `vv` and `w`, `cl` and `d`. Read before [`glyph`], on the name as
/// written: `c-l` (a hyphen between) does not read as `d`.
pub const GLYPH_SEQUENCES: [([char; 2], char); 3] =
    [(['r', 'n'], 'm'), (['v', 'v'], 'w'), (['c', 'l'], 'd')];

/// Returns the glyph a reader may take `character` for, the first of its
/// group: `1`, `i` and `l` read as `l`; `0` as `o`; `q` and `9` as `g`;
/// `6` as `b`. Others read as themselves. Digits that look like a letter
/// only in upper case (`5` and `S`, `2` and `Z`, `8` and `B`) are left
/// out: names are lower case, and `h5-tools` beside `hs-tools` or `py2`
/// beside `pyz` are names of their own.
pub fn glyph(character: char) -> char {
    match character {
        '1' | 'i' | 'l' => 'l',
        '0' => 'o',
        'q' | '9' => 'g',
        '6' => 'b',
        other => other,
    }
}

/// Returns the form of `name` as a reader skimming it sees it: the pairs
/// of [`GLYPH_SEQUENCES`] read as their letter (left to right, a letter
/// in one pair only), every other character as its [`glyph`], hyphens
/// left out. `pdf-processlng`, `pdf-processinq` and `pdf-processing` are
/// all `pdfprocesslng`; `docx-vvild` and `docx-wild` are `docxwlld`.
pub fn visual_skeleton(name: &str) -> String {
    let characters: Vec<char> = name.chars().collect();
    let mut seen = String::with_capacity(name.len());
    let mut index = 0;
    while index < characters.len() {
        let pair = characters.get(index..index + 2);
        if let Some(&(_, letter)) = GLYPH_SEQUENCES
            .iter()
            .find(|(sequence, _)| pair == Some(sequence.as_slice()))
        {
            seen.push(letter);
            index += 2;
            continue;
        }
        if characters[index] != '-' {
            seen.push(glyph(characters[index]));
        }
        index += 1;
    }
    seen
}

/// The shortest visual skeleton two different names may share and be
/// refused as looking similar: `api` and `apl`, `io` and `lo`, `cli` and
/// `dl` share one by chance.
pub const MIN_ALIKE_LEN: usize = 4;

/// The shortest visual skeleton two names one edit apart (once glyphs are
/// read alike) may have and be refused as looking similar: at four
/// characters one edit is a quarter of a name (`i18n` and `l10n`).
pub const MIN_NEAR_LEN: usize = 6;

/// Returns true if and only if `a` and `b` look similar: their visual
/// skeletons, of [`MIN_ALIKE_LEN`] characters or more, are the same; or,
/// of [`MIN_NEAR_LEN`] or more, are one edit apart while the names
/// without their hyphens are not (so a look-alike glyph is part of the
/// difference: a typo alone is for the one-edit rule).
pub fn looks_similar(a: &str, b: &str) -> bool {
    if a == b {
        return false;
    }
    let (seen_a, seen_b) = (visual_skeleton(a), visual_skeleton(b));
    let shorter = seen_a.chars().count().min(seen_b.chars().count());
    if seen_a == seen_b {
        return shorter >= MIN_ALIKE_LEN;
    }
    if shorter < MIN_NEAR_LEN || !one_edit(&seen_a, &seen_b) {
        return false;
    }
    let unhyphenated = |name: &str| name.replace('-', "");
    let (plain_a, plain_b) = (unhyphenated(a), unhyphenated(b));
    plain_a != plain_b && !one_edit(&plain_a, &plain_b)
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
    } else if looks_similar(candidate, existing) {
        Some(Likeness::LooksSimilar)
    } else if one_edit(candidate, existing) {
        Some(Likeness::OneEdit)
    } else {
        None
    }
}

/// Returns the keys under which a registry files `name` so that the names
/// it [resembles](likeness) are found without comparing it with every
/// name: every two names that resemble each other share a key. The
/// [`skeleton`] (`s:`); the name and each string one character removal
/// from it (`d:`); and the same of its [`visual_skeleton`] (`v:`). Two
/// strings one insertion, removal, replacement or swap of neighbours apart
/// have a removal (or the string itself) in common, the way SymSpell finds
/// its candidates. Names that share a key may be two edits apart: check
/// each with [`likeness`].
pub fn lookup_keys(name: &str) -> Vec<String> {
    let mut keys = vec![format!("s:{}", skeleton(name))];
    for (prefix, text) in [("d", name.to_owned()), ("v", visual_skeleton(name))] {
        let characters: Vec<char> = text.chars().collect();
        keys.push(format!("{prefix}:{text}"));
        for index in 0..characters.len() {
            let removed: String = characters
                .iter()
                .enumerate()
                .filter(|(other, _)| *other != index)
                .map(|(_, character)| character)
                .collect();
            keys.push(format!("{prefix}:{removed}"));
        }
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
            "pdf-processlng",
            "pdf-processinq",
            "pdf-proceslng",
            "pdf-process1ng",
            "rnodern-css",
            "modern-css",
            "modern-ccs",
            "ski11-lint",
            "skill-lint",
            "g00gle-docs",
            "google-docs",
            "docx-wild",
            "docx-vvild",
            "docx-vvlld",
            "docx-mild",
            "mail-tools",
            "mall-tool",
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
        // And the keys are few: the skeleton, and twice a name's length
        // and one at most (the removals of either `s` of `ss` are one key).
        assert_eq!(lookup_keys("pdf-processing").len(), 28);
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
    fn glyphs_unicode_does_not_pair_look_similar() {
        for (candidate, existing) in [
            ("pdf-processlng", "pdf-processing"),
            ("pdf-processinq", "pdf-processing"),
            ("pdf-process1ng", "pdf-processing"),
            ("pdf-processin9", "pdf-processing"),
            ("docx-vvild", "docx-wild"),
            ("docx-vvlld", "docx-wild"),
            ("vvriter", "writer"),
            ("clocker", "docker"),
            ("j6-builder", "jb-builder"),
            // A look-alike glyph and a typo together.
            ("pdf-proceslng", "pdf-processing"),
            ("pdf-processlngs", "pdf-processing"),
            ("docx-vvilds", "docx-wild"),
        ] {
            assert_eq!(
                likeness(candidate, existing),
                Some(Likeness::LooksSimilar),
                "{candidate} beside {existing}"
            );
            assert_eq!(
                likeness(existing, candidate),
                Some(Likeness::LooksSimilar),
                "{existing} beside {candidate}: the relation is symmetric"
            );
        }
        assert_eq!(visual_skeleton("pdf-processinq"), "pdfprocesslng");
        assert_eq!(visual_skeleton("docx-vvild"), visual_skeleton("docx-wild"));
        // A hyphen between two letters keeps them apart.
        assert_eq!(visual_skeleton("c-l"), "cl");
        assert_eq!(visual_skeleton("rnn"), "mn");
    }

    #[test]
    fn distinct_names_and_plain_typos_do_not_look_similar() {
        // Typos alone stay one edit, for the popularity rule to weigh.
        for (candidate, existing) in [
            ("pd", "pdf"),
            ("csv-tool", "csv-tools"),
            ("pdf-procesing", "pdf-processing"),
            ("docx-mild", "docx-wild"),
            ("go-list", "go-lint"),
            ("pdf-header", "pdf-reader"),
            ("hs-tools", "h5-tools"),
            ("pyz", "py2"),
            // Short names one look-alike glyph apart: too short to be
            // refused for it, one edit all the same.
            ("apl", "api"),
            ("lo", "io"),
        ] {
            assert_eq!(
                likeness(candidate, existing),
                Some(Likeness::OneEdit),
                "{candidate} beside {existing}"
            );
        }
        // Short names share a visual skeleton by chance; and names of
        // their own.
        for (candidate, existing) in [
            ("l10n", "i18n"),
            ("dl", "cli"),
            ("webapps", "web-app"),
            ("pdf-tools-2", "pdf-tools"),
            ("json-tools", "yaml-tools"),
            ("csv-insights", "pdf-processing"),
            ("pdf-merge", "pdf-split"),
            ("docx-wild", "docs-wiki"),
            ("image-resize", "image-resizer-pro"),
        ] {
            assert_eq!(
                likeness(candidate, existing),
                None,
                "{candidate} beside {existing}"
            );
        }
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
    }

    /// `count` distinct names as a registry has them: two or three words
    /// of a small vocabulary, some with a digit.
    fn registry_names(count: usize) -> Vec<String> {
        const WORDS: [&str; 48] = [
            "pdf",
            "docx",
            "csv",
            "json",
            "yaml",
            "image",
            "audio",
            "video",
            "git",
            "code",
            "test",
            "lint",
            "format",
            "deploy",
            "cloud",
            "data",
            "sql",
            "query",
            "chart",
            "report",
            "mail",
            "slack",
            "search",
            "web",
            "scrape",
            "api",
            "client",
            "server",
            "tools",
            "helper",
            "writer",
            "reader",
            "review",
            "plan",
            "notes",
            "docs",
            "wiki",
            "sheet",
            "slide",
            "table",
            "merge",
            "split",
            "convert",
            "translate",
            "summary",
            "agent",
            "prompt",
            "style",
        ];
        let mut names = std::collections::BTreeSet::new();
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |bound: usize| {
            // xorshift: deterministic, no dependency.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            usize::try_from(state % bound as u64).unwrap()
        };
        while names.len() < count {
            let mut name = format!("{}-{}", WORDS[next(48)], WORDS[next(48)]);
            if next(2) == 0 {
                name = format!("{name}-{}", WORDS[next(48)]);
            }
            if next(4) == 0 {
                name = format!("{name}{}", next(10));
            }
            names.insert(name);
        }
        names.into_iter().collect()
    }

    /// Files `names` under their lookup keys, as a registry's database
    /// does, and returns the names that share a key with `name`.
    fn candidates<'a>(
        filed: &std::collections::HashMap<String, Vec<&'a str>>,
        name: &str,
    ) -> Vec<&'a str> {
        let mut found: Vec<&str> = lookup_keys(name)
            .iter()
            .filter_map(|key| filed.get(key))
            .flatten()
            .copied()
            .collect();
        found.sort_unstable();
        found.dedup();
        found
    }

    fn file(names: &[String]) -> std::collections::HashMap<String, Vec<&str>> {
        let mut filed: std::collections::HashMap<String, Vec<&str>> = Default::default();
        for name in names {
            for key in lookup_keys(name) {
                filed.entry(key).or_default().push(name);
            }
        }
        filed
    }

    #[test]
    fn the_lookup_keys_find_what_a_scan_of_every_name_finds() {
        let names = registry_names(3000);
        let filed = file(&names);
        for new in [
            "pdf-processlng",
            "docx-vvriter",
            "sql-qvery",
            "mall-helper",
            "code-reviev",
            "json-too1s",
            "image-resize",
        ] {
            let scanned: Vec<&str> = names
                .iter()
                .map(String::as_str)
                .filter(|name| likeness(new, name).is_some())
                .collect();
            let found: Vec<&str> = candidates(&filed, new)
                .into_iter()
                .filter(|name| likeness(new, name).is_some())
                .collect();
            assert_eq!(found, scanned, "{new}");
        }
    }

    /// The cost of the check at 100,000 names: a scan of every name
    /// against the few the lookup keys find. Measured with
    /// `cargo test --release -p skillpkg-index -- --ignored --nocapture
    /// confusable`: docs/registry.md has the figures.
    #[test]
    #[ignore = "a measurement: run it in release, with --nocapture"]
    // A measurement's figures are its output: it prints them for whoever
    // runs it, which no other test of this library does.
    #[allow(clippy::print_stderr)]
    fn measure_the_check_at_a_hundred_thousand_names() {
        let names = registry_names(100_000);
        let started = std::time::Instant::now();
        let filed = file(&names);
        let filing = started.elapsed();
        let keys: usize = filed.values().map(Vec::len).sum();
        let new_names = [
            "pdf-processlng",
            "docx-vvriter",
            "sql-qvery",
            "mall-helper",
            "code-reviev",
            "json-too1s",
            "image-resize",
            "agent-prompt-style",
        ];
        let started = std::time::Instant::now();
        let mut scanned = 0;
        for new in new_names {
            scanned += names
                .iter()
                .filter(|name| likeness(new, name).is_some())
                .count();
        }
        let scan = started.elapsed() / u32::try_from(new_names.len()).unwrap();
        let started = std::time::Instant::now();
        let (mut found, mut looked_at) = (0, 0);
        for new in new_names {
            let candidates = candidates(&filed, new);
            looked_at += candidates.len();
            found += candidates
                .iter()
                .filter(|name| likeness(new, name).is_some())
                .count();
        }
        let lookup = started.elapsed() / u32::try_from(new_names.len()).unwrap();
        assert_eq!(found, scanned);
        eprintln!(
            "{} names, {keys} keys filed in {filing:?}; a new name: a scan of every name {scan:?}, the lookup keys {lookup:?} ({} candidates a name)",
            names.len(),
            looked_at / new_names.len()
        );
    }
}
