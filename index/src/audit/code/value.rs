//! What the analysis knows of a value: the text it folds to, when its
//! pieces are constants, and where its bytes come from.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

/// Where a value's bytes may come from, as a set of bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Taint(u8);

impl Taint {
    pub(crate) const NONE: Taint = Taint(0);
    /// Read from the network (a response body, a download's output).
    pub(crate) const NETWORK: Taint = Taint(1);
    /// Decoded or decompressed (base64, hex, rot13, zlib, marshal,
    /// character codes).
    pub(crate) const DECODED: Taint = Taint(2);
    /// The whole environment (`os.environ`, `process.env`, `env`).
    pub(crate) const ENVIRONMENT: Taint = Taint(4);
    /// A credential store's content (`~/.ssh/id_rsa`, `~/.aws/credentials`).
    pub(crate) const CREDENTIAL: Taint = Taint(8);
    /// A value the analysis cannot fold: a parameter, a computed value.
    pub(crate) const UNKNOWN: Taint = Taint(16);
    /// The path of a credential store or of a folder of them (`~/.ssh`,
    /// `.aws`), not its content: what reads or packs the file it names
    /// gets a credential. It follows a path into lists and loops, where
    /// its text is lost.
    pub(crate) const STORE_PATH: Taint = Taint(32);

    pub(crate) fn has(self, other: Taint) -> bool {
        self.0 & other.0 != 0
    }
}

impl std::ops::BitOr for Taint {
    type Output = Taint;
    fn bitor(self, other: Taint) -> Taint {
        Taint(self.0 | other.0)
    }
}

impl std::ops::BitAnd for Taint {
    type Output = Taint;
    fn bitand(self, other: Taint) -> Taint {
        Taint(self.0 & other.0)
    }
}

impl std::ops::BitOrAssign for Taint {
    fn bitor_assign(&mut self, other: Taint) {
        self.0 |= other.0;
    }
}

/// The longest text a folded value keeps: enough for any command, short
/// enough that a folded loop or a decoded blob cannot grow without end.
pub(crate) const MAX_TEXT: usize = 64 * 1024;

/// A value: its text when every piece of it is known, and its taint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Val {
    /// The folded text; `None` when a piece is not known.
    pub(crate) text: Option<String>,
    pub(crate) taint: Taint,
    /// What the value is called when its text is not known (`$tmp`,
    /// `$dir/run.sh`): two uses of one name are one file.
    pub(crate) name: Option<String>,
}

impl Val {
    /// A constant.
    pub(crate) fn text(text: impl Into<String>) -> Val {
        let mut text = text.into();
        truncate(&mut text);
        Val {
            text: Some(text),
            taint: Taint::NONE,
            name: None,
        }
    }

    /// A value of unknown text.
    pub(crate) fn unknown() -> Val {
        Val {
            text: None,
            taint: Taint::UNKNOWN,
            name: None,
        }
    }

    /// A value of unknown text from `taint`.
    pub(crate) fn from(taint: Taint) -> Val {
        Val {
            text: None,
            taint,
            name: None,
        }
    }

    /// The same value, called `name` while its text is not known and it
    /// has no name yet: a value keeps the name it was first given, so
    /// that `f="$dir/x"; . "$f"` runs the file saved as `$dir/x`.
    pub(crate) fn named(mut self, name: impl Into<String>) -> Val {
        if self.text.is_none() && self.name.is_none() {
            self.name = Some(name.into());
        }
        self
    }

    /// The text, or else the name: what identifies a file.
    pub(crate) fn identity(&self) -> Option<&str> {
        self.text.as_deref().or(self.name.as_deref())
    }

    /// The same text, also from `taint`.
    pub(crate) fn tainted(mut self, taint: Taint) -> Val {
        self.taint |= taint;
        self
    }

    /// Joins values as adjacent pieces of one string.
    pub(crate) fn concat(pieces: impl IntoIterator<Item = Val>) -> Val {
        let mut text = Some(String::new());
        let mut name = Some(String::new());
        let mut taint = Taint::NONE;
        for piece in pieces {
            taint |= piece.taint;
            match (&mut name, piece.identity()) {
                (Some(all), Some(piece)) if all.len() < MAX_TEXT => all.push_str(piece),
                _ => name = None,
            }
            match (&mut text, piece.text) {
                (Some(all), Some(piece)) => {
                    all.push_str(&piece);
                    if all.len() > MAX_TEXT {
                        truncate(all);
                    }
                }
                _ => text = None,
            }
        }
        let name = if text.is_none() { name } else { None };
        Val { text, taint, name }
    }

    /// The text, or `placeholder` where it is not known: what a folded
    /// command shows of this value.
    pub(crate) fn shown<'a>(&'a self, placeholder: &'a str) -> &'a str {
        self.text.as_deref().unwrap_or(placeholder)
    }

    /// True when the text is known and the value comes from nowhere
    /// suspicious.
    pub(crate) fn is_constant(&self) -> bool {
        self.text.is_some() && self.taint.0 & !Taint::STORE_PATH.0 == 0
    }

    /// What reading the file this value names gives: a credential when
    /// it names a store.
    pub(crate) fn read_taint(&self) -> Taint {
        if self.taint.has(Taint::STORE_PATH) {
            Taint::CREDENTIAL
        } else {
            Taint::NONE
        }
    }
}

fn truncate(text: &mut String) {
    if text.len() > MAX_TEXT {
        let mut end = MAX_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
}

/// The variables of one file: every value assigned to a name anywhere,
/// merged (the analysis does not follow the order of statements, so a
/// value assigned late still reaches a use early, as in a function body
/// called later).
#[derive(Debug, Default)]
pub(crate) struct Env {
    values: HashMap<String, Val>,
    /// The names read in this pass, held or not.
    read: RefCell<HashSet<String>>,
    /// Set when an assignment changed what a name holds after this pass
    /// read it: the pass saw a value that was not the last, and the file
    /// is read again until none does.
    pub(crate) changed: bool,
    /// The functions of the file found so far, with their parameters:
    /// kept from pass to pass, so that a call read before the function's
    /// definition passes its arguments in the next pass.
    pub(crate) functions: HashMap<String, Vec<String>>,
}

impl Env {
    /// Returns what `name` holds: a constant assigned once keeps its text;
    /// names assigned different texts, or never, are unknown.
    pub(crate) fn get(&self, name: &str) -> Option<&Val> {
        let mut read = self.read.borrow_mut();
        if !read.contains(name) {
            read.insert(name.to_owned());
        }
        self.values.get(name)
    }

    /// Starts a pass over the file: nothing read yet, nothing changed.
    pub(crate) fn start_pass(&mut self) {
        self.read.get_mut().clear();
        self.changed = false;
    }

    /// Notes that what `name` holds changed.
    fn note_change(&mut self, name: &str) {
        if self.read.get_mut().contains(name) {
            self.changed = true;
        }
    }

    /// Records that `name` is assigned `value`.
    pub(crate) fn assign(&mut self, name: &str, value: Val) {
        match self.values.get_mut(name) {
            None => {
                self.values.insert(name.to_owned(), value);
                self.note_change(name);
            }
            Some(old) => {
                let text = match (&old.text, &value.text) {
                    (Some(a), Some(b)) if a == b => Some(a.clone()),
                    // A name assigned twice, as in `x = x + "more"`, keeps
                    // the longer text when one extends the other.
                    (Some(a), Some(b)) if b.starts_with(a.as_str()) => Some(b.clone()),
                    (Some(a), Some(b)) if a.starts_with(b.as_str()) => Some(a.clone()),
                    _ => None,
                };
                let taint = old.taint | value.taint;
                let taint = if text.is_none() && old.text.is_some() != value.text.is_some() {
                    taint | Taint::UNKNOWN
                } else {
                    taint
                };
                if old.text != text || old.taint != taint {
                    old.text = text;
                    old.taint = taint;
                    self.note_change(name);
                }
            }
        }
    }

    /// Makes `name` hold `value` (or nothing) for a while, as a loop's
    /// variable does for each of its words, and returns what it held:
    /// not an assignment, so no pass is read again for it.
    pub(crate) fn hold(&mut self, name: &str, value: Option<Val>) -> Option<Val> {
        match value {
            Some(value) => self.values.insert(name.to_owned(), value),
            None => self.values.remove(name),
        }
    }

    /// Adds `taint` to what `name` holds (`body += chunk`).
    pub(crate) fn taint(&mut self, name: &str, taint: Taint) {
        let value = self
            .values
            .entry(name.to_owned())
            .or_insert_with(Val::unknown);
        if (value.taint | taint) != value.taint {
            value.taint |= taint;
            self.note_change(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_fold_to_one_text_and_an_unknown_piece_unfolds_it() {
        let folded = Val::concat([Val::text("cu"), Val::text("rl")]);
        assert_eq!(folded.text.as_deref(), Some("curl"));
        assert!(folded.is_constant());
        let mixed = Val::concat([Val::text("cu"), Val::from(Taint::NETWORK)]);
        assert_eq!(mixed.text, None);
        assert!(mixed.taint.has(Taint::NETWORK));
    }

    #[test]
    fn a_name_assigned_two_texts_is_unknown_and_taints_merge() {
        let mut env = Env::default();
        env.assign("a", Val::text("x"));
        env.assign("a", Val::text("x"));
        assert_eq!(env.get("a").unwrap().text.as_deref(), Some("x"));
        env.assign("a", Val::text("y"));
        assert_eq!(env.get("a").unwrap().text, None);
        env.taint("a", Taint::DECODED);
        assert!(env.get("a").unwrap().taint.has(Taint::DECODED));
        let mut grown = Env::default();
        grown.assign("b", Val::text("cu"));
        grown.assign("b", Val::text("curl"));
        assert_eq!(grown.get("b").unwrap().text.as_deref(), Some("curl"));
    }

    #[test]
    fn folded_text_is_bounded() {
        let long = "a".repeat(MAX_TEXT);
        let folded = Val::concat([Val::text(long.clone()), Val::text(long)]);
        assert_eq!(folded.text.unwrap().len(), MAX_TEXT);
    }
}
