//! Tool names on the wire (docs/runtime.md, "Names on the wire").
//!
//! Claude Desktop, Claude Code, Codex and the Copilot CLI accept only tool
//! names matching `^[a-zA-Z0-9_-]{1,64}$`, so a skill's tool is served as
//! `<skill>__<tool>`. Skill and tool names are `[a-z0-9-]` with no `_`, so
//! the `__` can only be the separator and two different pairs never give
//! the same name, as long as it fits. When it does not (two names of up to
//! 64 characters each make up to 130), the name is cut to 55 characters and
//! ends in `_` and the first 8 hex digits of the sha256 of the full name:
//!
//! ```text
//! pdf-processing__extract-text                          fits: as is
//! <55 characters of skill__tool>_1a2b3c4d               64 exactly
//! ```
//!
//! A cut name can still collide, in theory with another cut name (a 2^-32
//! chance) and in practice with a crafted one: a skill of 54 characters
//! whose long tool is cut to `<skill>__<hash>` and which also declares a
//! tool literally named `<hash>`. [`WireNames`] is the per-session map back
//! from a wire name to its skill and tool, and refuses any name already
//! taken instead of letting one tool shadow another.

use std::collections::HashMap;

use sha2::{Digest, Sha256};
use skillpkg_index::archive::tree_hash::hex;

/// The longest tool name MCP clients accept.
pub const MAX_WIRE_NAME_LEN: usize = 64;

/// Between the skill's name and the tool's.
const SEPARATOR: &str = "__";

/// How many hex digits of the sha256 end a cut name.
const HASH_DIGITS: usize = 8;

/// Returns true if and only if `byte` may appear in a wire name.
fn is_wire_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'-'
}

/// Returns true if and only if `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_wire_name(name: &str) -> bool {
    (1..=MAX_WIRE_NAME_LEN).contains(&name.len()) && name.bytes().all(is_wire_byte)
}

/// Returns the name the tool `tool` of the skill `skill` is served under:
/// `<skill>__<tool>` when that fits in 64 characters, else its first 55
/// characters, `_` and 8 hex digits of the sha256 of the whole name.
///
/// Valid skill and tool names are ASCII; should a name that is not reach
/// here, every character the wire does not allow becomes `-` and the name
/// takes the cut form, whose hash (of the original name) keeps it unique.
/// The result always matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn wire_name(skill: &str, tool: &str) -> String {
    let full = format!("{skill}{SEPARATOR}{tool}");
    if is_wire_name(&full) {
        return full;
    }
    let digest = Sha256::digest(full.as_bytes());
    let hash = hex(&digest[..HASH_DIGITS / 2]);
    let keep = MAX_WIRE_NAME_LEN - 1 - HASH_DIGITS;
    let mut name: String = full
        .chars()
        .map(|c| {
            if c.is_ascii() && is_wire_byte(c as u8) {
                c
            } else {
                '-'
            }
        })
        .take(keep)
        .collect();
    name.push('_');
    name.push_str(&hash);
    name
}

/// A skill's tool, as a wire name leads back to it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ToolRef {
    pub skill: String,
    pub tool: String,
}

/// What a wire name is taken by.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Route {
    /// One of the runtime's own tools (`skills_load`, ...).
    Reserved,
    Tool(ToolRef),
}

/// Two tools, or a tool and one of the runtime's own, would share a wire
/// name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the tool `{tool}` of the skill `{skill}` would be served as `{wire}`, which {}; rename the tool",
    match taken_by {
        Some(other) => format!("is already the tool `{}` of the skill `{}`", other.tool, other.skill),
        None => "is the name of one of the runtime's own tools".to_owned(),
    }
)]
pub struct NameCollision {
    pub wire: String,
    pub skill: String,
    pub tool: String,
    /// The tool that has the name, `None` for one of the runtime's own.
    pub taken_by: Option<ToolRef>,
}

/// One session's map from wire names to the tools they call: the tools of
/// the skills loaded in it, and the names of the runtime's own tools, which
/// no skill's tool may take.
#[derive(Clone, Debug, Default)]
pub struct WireNames {
    routes: HashMap<String, Route>,
}

impl WireNames {
    /// Returns an empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps `name` for one of the runtime's own tools.
    pub fn reserve(&mut self, name: &str) {
        self.routes.insert(name.to_owned(), Route::Reserved);
    }

    /// Adds the tools of `skill` and returns their wire names, in the order
    /// given. Either every tool is added or, on a collision, none is.
    /// Adding a tool that is already there under its name changes nothing.
    pub fn add_skill<'a>(
        &mut self,
        skill: &str,
        tools: impl IntoIterator<Item = &'a str>,
    ) -> Result<Vec<String>, NameCollision> {
        let mut added: HashMap<String, ToolRef> = HashMap::new();
        let mut names = Vec::new();
        for tool in tools {
            let wire = wire_name(skill, tool);
            let tool_ref = ToolRef {
                skill: skill.to_owned(),
                tool: tool.to_owned(),
            };
            let taken = match self.routes.get(&wire) {
                Some(Route::Reserved) => Some(None),
                Some(Route::Tool(other)) if *other != tool_ref => Some(Some(other.clone())),
                _ => added
                    .get(&wire)
                    .filter(|other| **other != tool_ref)
                    .map(|other| Some(other.clone())),
            };
            if let Some(taken_by) = taken {
                return Err(NameCollision {
                    wire,
                    skill: tool_ref.skill,
                    tool: tool_ref.tool,
                    taken_by,
                });
            }
            names.push(wire.clone());
            added.insert(wire, tool_ref);
        }
        self.routes.extend(
            added
                .into_iter()
                .map(|(wire, tool)| (wire, Route::Tool(tool))),
        );
        Ok(names)
    }

    /// Removes every tool of `skill`; returns their wire names, sorted.
    pub fn remove_skill(&mut self, skill: &str) -> Vec<String> {
        let mut removed: Vec<String> = self
            .routes
            .iter()
            .filter(|(_, route)| matches!(route, Route::Tool(tool) if tool.skill == skill))
            .map(|(wire, _)| wire.clone())
            .collect();
        for wire in &removed {
            self.routes.remove(wire);
        }
        removed.sort();
        removed
    }

    /// Returns the skill's tool that `wire` calls, `None` when no loaded
    /// skill has a tool of that name (or it is one of the runtime's own).
    pub fn resolve(&self, wire: &str) -> Option<&ToolRef> {
        match self.routes.get(wire)? {
            Route::Tool(tool) => Some(tool),
            Route::Reserved => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sha256 of `text` in hex, computed here the plain way.
    fn sha256_hex(text: &str) -> String {
        Sha256::digest(text.as_bytes())
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }

    #[test]
    fn a_name_that_fits_is_skill_two_underscores_tool() {
        assert_eq!(
            wire_name("pdf-processing", "extract-text"),
            "pdf-processing__extract-text"
        );
    }

    #[test]
    fn exactly_64_characters_is_kept_and_65_is_cut_and_hashed() {
        let skill = "s".repeat(40);
        let tool = "t".repeat(22); // 40 + 2 + 22 = 64
        let name = wire_name(&skill, &tool);
        assert_eq!(name, format!("{skill}__{tool}"));
        assert_eq!(name.len(), 64);

        let tool = "t".repeat(23); // 65
        let full = format!("{skill}__{tool}");
        let name = wire_name(&skill, &tool);
        assert_eq!(name.len(), 64);
        assert_eq!(&name[..55], &full[..55]);
        assert_eq!(&name[55..56], "_");
        assert_eq!(&name[56..], &sha256_hex(&full)[..8]);
        assert!(is_wire_name(&name));
    }

    #[test]
    fn the_example_of_docs_runtime_tools_is_cut_as_shown() {
        // Computed with Python's hashlib, not with this code.
        assert_eq!(
            wire_name(
                "invoice-and-receipt-extraction-for-accounts-payable",
                "normalize-line-items"
            ),
            "invoice-and-receipt-extraction-for-accounts-payable__no_cdaf8cf0"
        );
    }

    #[test]
    fn the_longest_names_are_cut_to_64_and_stay_distinct() {
        let skill = "a".repeat(64);
        let one = wire_name(&skill, &"b".repeat(64));
        let two = wire_name(&skill, &format!("{}c", "b".repeat(63)));
        assert_eq!(one.len(), 64);
        assert_eq!(two.len(), 64);
        // Same first 55 characters (all skill), different hashes.
        assert_eq!(one[..55], two[..55]);
        assert_ne!(one, two);
    }

    #[test]
    fn names_outside_the_wire_alphabet_are_replaced_and_hashed() {
        let name = wire_name("café", "tool");
        assert!(is_wire_name(&name), "{name}");
        assert!(name.starts_with("caf-__tool_"), "{name}");
        assert_eq!(&name[name.len() - 8..], &sha256_hex("café__tool")[..8]);
        // Not confused with the skill that really is `caf-`... which is
        // not a valid name anyway, nor with `cafe`.
        assert_ne!(name, wire_name("cafe", "tool"));
    }

    #[test]
    fn every_wire_name_matches_the_client_pattern() {
        for (skill, tool) in [
            ("a", "b"),
            (&*"x".repeat(64), &*"y".repeat(64)),
            ("", ""),
            ("white space", "new\nline"),
        ] {
            let name = wire_name(skill, tool);
            assert!(is_wire_name(&name), "{name:?}");
        }
        assert!(!is_wire_name(""));
        assert!(!is_wire_name(&"a".repeat(65)));
        assert!(!is_wire_name("skills.load"));
    }

    #[test]
    fn a_wire_name_resolves_to_its_skill_and_tool() {
        let mut names = WireNames::new();
        let added = names
            .add_skill("pdf-processing", ["extract-text", "merge"])
            .unwrap();
        assert_eq!(
            added,
            ["pdf-processing__extract-text", "pdf-processing__merge"]
        );
        assert_eq!(
            names.resolve("pdf-processing__merge"),
            Some(&ToolRef {
                skill: "pdf-processing".into(),
                tool: "merge".into()
            })
        );
        assert_eq!(names.resolve("pdf-processing__split"), None);
        // Adding the same tools again is not a collision.
        names.add_skill("pdf-processing", ["merge"]).unwrap();
        assert_eq!(
            names.remove_skill("pdf-processing"),
            ["pdf-processing__extract-text", "pdf-processing__merge"]
        );
        assert_eq!(names.resolve("pdf-processing__merge"), None);
    }

    #[test]
    fn similar_names_around_the_separator_do_not_collide() {
        // Without `_` in names, `a` + `b-c` and `a-b` + `c` differ.
        let mut names = WireNames::new();
        names.add_skill("a", ["b-c"]).unwrap();
        names.add_skill("a-b", ["c"]).unwrap();
        assert_eq!(names.resolve("a__b-c").unwrap().skill, "a");
        assert_eq!(names.resolve("a-b__c").unwrap().skill, "a-b");
    }

    #[test]
    fn a_crafted_tool_named_after_a_cut_hash_is_refused() {
        // A 54-character skill: its long tool is cut right after `__`, to
        // `<skill>__<hash>`, which is also the plain name of a tool called
        // `<hash>` (8 hex digits are a valid tool name).
        let skill = "k".repeat(54);
        let long_tool = "long-tool-name";
        let full = format!("{skill}__{long_tool}");
        let hash = &sha256_hex(&full)[..8];
        assert_eq!(wire_name(&skill, long_tool), format!("{skill}__{hash}"));
        assert_eq!(wire_name(&skill, hash), format!("{skill}__{hash}"));

        let mut names = WireNames::new();
        let error = names.add_skill(&skill, [long_tool, hash]).unwrap_err();
        assert_eq!(error.wire, format!("{skill}__{hash}"));
        assert_eq!(error.tool, hash);
        assert_eq!(error.taken_by.as_ref().unwrap().tool, long_tool);
        assert!(
            error
                .to_string()
                .contains("is already the tool `long-tool-name`"),
            "{error}"
        );
        // All or nothing: the first tool was not added either.
        assert_eq!(names.resolve(&wire_name(&skill, long_tool)), None);

        // The same across two loads.
        names.add_skill(&skill, [long_tool]).unwrap();
        assert!(names.add_skill(&skill, [hash]).is_err());
    }

    #[test]
    fn the_runtimes_own_names_cannot_be_taken() {
        let mut names = WireNames::new();
        names.reserve("skills__load");
        let error = names.add_skill("skills", ["load"]).unwrap_err();
        assert_eq!(error.taken_by, None);
        assert!(error.to_string().contains("runtime's own tools"), "{error}");
        assert_eq!(names.resolve("skills__load"), None);
    }
}
