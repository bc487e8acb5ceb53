//! Classes of characters that do not print as themselves: they reorder a
//! line, print as nothing, or tag text invisibly. The Unicode rules
//! ([`super::unicode`]) judge them; messages spell them out
//! ([`super::text`]).

/// Bidi overrides, embeddings and isolates: they reorder what follows.
pub(crate) fn is_bidi_reordering(character: char) -> bool {
    matches!(character, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Bidi marks: invisible, but they only nudge neutral characters; common
/// in right-to-left text.
pub(crate) fn is_bidi_mark(character: char) -> bool {
    matches!(character, '\u{200e}' | '\u{200f}' | '\u{061c}')
}

/// Returns true for every bidirectional formatting character.
pub(crate) fn is_bidi(character: char) -> bool {
    is_bidi_reordering(character) || is_bidi_mark(character)
}

/// Characters that print as nothing. Joiners (U+200C, U+200D) are among
/// them but judged by their neighbours; see `is_needed_joiner` in [`super::unicode`].
pub(crate) fn is_invisible(character: char) -> bool {
    matches!(
        character,
        '\u{200b}'..='\u{200d}'
            | '\u{2060}'..='\u{2064}'
            | '\u{feff}'
            | '\u{180e}'
            | '\u{00ad}'
            | '\u{034f}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{3164}'
            | '\u{ffa0}'
            | '\u{17b4}'
            | '\u{17b5}'
    )
}

pub(crate) fn is_tag(character: char) -> bool {
    ('\u{e0000}'..='\u{e007f}').contains(&character)
}

pub(crate) fn is_variation_selector(character: char) -> bool {
    matches!(character, '\u{fe00}'..='\u{fe0f}' | '\u{e0100}'..='\u{e01ef}')
}
