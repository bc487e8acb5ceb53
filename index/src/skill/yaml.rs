//! Loading the frontmatter's YAML within bounds.
//!
//! A frontmatter is an attacker's input wherever a registry validates an
//! upload, so loading it must stay small and shallow whatever it says:
//!
//! - **Nesting.** Each level of `- - - x` or of indented mappings is one
//!   level of the loaded tree, and trees are built, converted, compared and
//!   dropped by recursion: a few kilobytes of `- ` overflowed the stack and
//!   aborted the process. Past [`MAX_DEPTH`] levels the load stops.
//!   (saphyr-parser already stops flow collections, `[[[...]]]`, at 256.)
//! - **Aliases.** Each `*alias` is a full copy of its anchor's node, so a
//!   100 KB string aliased 2,000 times is 200 MB (and nested anchors grow
//!   exponentially, the "billion laughs"). saphyr bounds the *number* of
//!   copied nodes, not their size; this counts the bytes every alias copies,
//!   nested aliases included, and stops past [`MAX_ALIAS_BYTES`].
//!
//! The parser's events go to saphyr's own `YamlLoader` until a bound is
//! passed, and no further, so the tree it holds never exceeds the bounds
//! either.

use std::collections::HashMap;

use saphyr::{MarkedYaml, YamlLoader};
use saphyr_parser::{
    Event, Marker, Parser, ScalarStyle, ScanError, Span, SpannedEventReceiver, Tag,
};

use super::readings;

/// The deepest a frontmatter's collections may nest; the deepest known
/// schema (a tool's JSON Schema) needs a dozen.
pub const MAX_DEPTH: usize = 64;

/// The most bytes all aliases together may copy. Honest frontmatters use an
/// anchor or two for a shared value, far below this.
pub const MAX_ALIAS_BYTES: u64 = 1024 * 1024;

/// What a node costs besides its text: enough that aliasing empty strings
/// is not free.
const NODE_BYTES: u64 = 64;

/// Why a frontmatter was not loaded.
#[derive(Debug)]
pub(crate) enum LoadError {
    /// The YAML is malformed.
    Syntax(ScanError),
    /// Collections nest deeper than [`MAX_DEPTH`], at the marker.
    TooDeep(Marker),
    /// Aliases copy more than [`MAX_ALIAS_BYTES`], at the marker.
    AliasesTooLarge(Marker),
}

/// What [`load`] read.
pub(crate) struct Loaded<'input> {
    pub(crate) documents: Vec<MarkedYaml<'input>>,
    /// Every tag outside YAML's core schema, as written (`!custom`,
    /// `!!python/object`), where its node starts. The loader keeps some of
    /// them and drops others (`!!python/...` on a list, or on a scalar as
    /// null), so they are noted here, from the parser's events.
    pub(crate) foreign_tags: Vec<(String, Marker)>,
    /// Every untagged plain scalar that YAML 1.1 parsers read differently
    /// ([`readings::two_readings`]), in document order.
    pub(crate) two_way_scalars: Vec<TwoWayScalar>,
}

/// A plain scalar that YAML 1.1 and 1.2 read differently, as the parser
/// saw it.
pub(crate) struct TwoWayScalar {
    pub(crate) text: String,
    pub(crate) span: Span,
    /// Whether it is a mapping's key.
    pub(crate) key: bool,
}

/// The tags of YAML's core schema (`!!str` and the like), which every parser
/// reads alike.
const CORE_TAGS: &[&str] = &["str", "int", "float", "bool", "null", "seq", "map"];

/// Loads every YAML document in `yaml`, within the bounds above.
pub(crate) fn load(yaml: &str) -> Result<Loaded<'_>, LoadError> {
    let mut receiver = Bounded {
        loader: YamlLoader::default(),
        open: Vec::new(),
        anchors: HashMap::new(),
        alias_bytes: 0,
        exceeded: None,
        foreign_tags: Vec::new(),
        containers: Vec::new(),
        two_way_scalars: Vec::new(),
    };
    // The parser's own `load` walks nested collections by recursion, which
    // overflows the stack on deep nesting before any bound could be checked;
    // its event iterator is a loop over an explicit stack of states.
    for event in Parser::new_from_str(yaml) {
        let (event, span) = event.map_err(LoadError::Syntax)?;
        receiver.on_event(event, span);
        if let Some(exceeded) = receiver.exceeded.take() {
            return Err(exceeded);
        }
    }
    if let Some(error) = receiver.loader.error() {
        return Err(LoadError::Syntax(error.clone()));
    }
    Ok(Loaded {
        foreign_tags: receiver.foreign_tags,
        two_way_scalars: receiver.two_way_scalars,
        documents: receiver.loader.into_documents(),
    })
}

/// Passes events to the loader while the bounds hold.
struct Bounded<'input> {
    loader: YamlLoader<'input, MarkedYaml<'input>>,
    /// The open collections: each one's anchor id (0 for none) and the bytes
    /// of what it holds so far.
    open: Vec<(usize, u64)>,
    /// The bytes of each anchored node, aliases within it expanded.
    anchors: HashMap<usize, u64>,
    /// The bytes all aliases have copied so far.
    alias_bytes: u64,
    exceeded: Option<LoadError>,
    foreign_tags: Vec<(String, Marker)>,
    /// The open collections: whether each is a mapping, and how many nodes
    /// it holds so far (in a mapping, keys and values alternate).
    containers: Vec<(bool, usize)>,
    two_way_scalars: Vec<TwoWayScalar>,
}

impl Bounded<'_> {
    /// Notes `tag` when it is outside the core schema.
    fn note_tag(&mut self, tag: Option<&Tag>, at: Marker) {
        let Some(tag) = tag else {
            return;
        };
        let core = tag.handle == "tag:yaml.org,2002:" && CORE_TAGS.contains(&tag.suffix.as_str());
        if !core {
            let text = if tag.handle == "tag:yaml.org,2002:" {
                format!("!!{}", tag.suffix)
            } else {
                format!("{}{}", tag.handle, tag.suffix)
            };
            self.foreign_tags.push((text, at));
        }
    }

    /// Counts a node starting in the open collection; returns true if and
    /// only if it is a mapping's key.
    fn node_starts(&mut self) -> bool {
        match self.containers.last_mut() {
            Some((mapping, held)) => {
                *held += 1;
                *mapping && *held % 2 == 1
            }
            None => false,
        }
    }

    /// Adds a finished node of `bytes` to the collection that holds it.
    fn finished(&mut self, anchor: usize, bytes: u64) {
        if anchor > 0 {
            self.anchors.insert(anchor, bytes);
        }
        if let Some((_, held)) = self.open.last_mut() {
            *held = held.saturating_add(bytes);
        }
    }
}

impl<'input> SpannedEventReceiver<'input> for Bounded<'input> {
    fn on_event(&mut self, event: Event<'input>, span: Span) {
        if self.exceeded.is_some() {
            return;
        }
        match &event {
            Event::SequenceStart(_, tag)
            | Event::MappingStart(_, tag)
            | Event::Scalar(_, _, _, tag) => {
                self.note_tag(tag.as_deref(), span.start);
            }
            _ => {}
        }
        match &event {
            Event::SequenceStart(..) | Event::MappingStart(..) => {
                self.node_starts();
                let mapping = matches!(event, Event::MappingStart(..));
                self.containers.push((mapping, 0));
            }
            Event::SequenceEnd | Event::MappingEnd => {
                self.containers.pop();
            }
            Event::Scalar(text, style, _, tag) => {
                let key = self.node_starts();
                // A quoted, block or tagged scalar means what it says to
                // every parser.
                if *style == ScalarStyle::Plain
                    && tag.is_none()
                    && readings::two_readings(text).is_some()
                {
                    self.two_way_scalars.push(TwoWayScalar {
                        text: text.to_string(),
                        span,
                        key,
                    });
                }
            }
            Event::Alias(_) => {
                self.node_starts();
            }
            _ => {}
        }
        match &event {
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if self.open.len() >= MAX_DEPTH {
                    self.exceeded = Some(LoadError::TooDeep(span.start));
                    return;
                }
                self.open.push((*anchor, NODE_BYTES));
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((anchor, bytes)) = self.open.pop() {
                    self.finished(anchor, bytes);
                }
            }
            Event::Scalar(text, _, anchor, _) => {
                self.finished(*anchor, NODE_BYTES + text.len() as u64);
            }
            Event::Alias(anchor) => {
                let bytes = self.anchors.get(anchor).copied().unwrap_or(NODE_BYTES);
                self.alias_bytes = self.alias_bytes.saturating_add(bytes);
                if self.alias_bytes > MAX_ALIAS_BYTES {
                    self.exceeded = Some(LoadError::AliasesTooLarge(span.start));
                    return;
                }
                self.finished(0, bytes);
            }
            Event::Nothing
            | Event::StreamStart
            | Event::StreamEnd
            | Event::DocumentStart(_)
            | Event::DocumentEnd => {}
        }
        self.loader.on_event(event, span);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_every_tag_outside_the_core_schema() {
        let loaded =
            load("a: !!str x\nb: !!python/tuple [1]\nc: !!binary aGk=\nd: !x {k: v}\n").unwrap();
        let tags: Vec<&str> = loaded
            .foreign_tags
            .iter()
            .map(|(tag, _)| tag.as_str())
            .collect();
        assert_eq!(tags, ["!!python/tuple", "!!binary", "!x"]);
    }

    #[test]
    fn loads_anchors_and_aliases_within_the_bounds() {
        let loaded = load("a: &a [x, y]\nb: *a\nc: *a\n").unwrap();
        assert_eq!(loaded.documents.len(), 1);
        assert!(loaded.foreign_tags.is_empty());
    }

    #[test]
    fn stops_past_the_nesting_bound() {
        let deep = format!("x:\n{}a\n", "- ".repeat(MAX_DEPTH));
        assert!(matches!(load(&deep), Err(LoadError::TooDeep(_))));
        let shallow = format!("x:\n{}a\n", "- ".repeat(MAX_DEPTH - 2));
        assert!(load(&shallow).is_ok());
    }

    #[test]
    fn counts_the_bytes_nested_aliases_copy() {
        // Each level multiplies by ten: 10^4 copies of a 200-byte string.
        let text = format!(
            "a: &a \"{}\"\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
            "x".repeat(200)
        );
        assert!(matches!(load(&text), Err(LoadError::AliasesTooLarge(_))));
    }
}
