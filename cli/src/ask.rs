//! Questions asked on a terminal, for commands that can go on without them
//! (a flag answers them elsewhere).

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use crate::error::UserError;

/// Says `question`, lists `items` numbered on stderr and asks `prompt`;
/// the answer is
/// numbers, item names (`names[i]` for `items[i]`) or `all`, separated by
/// spaces or commas. Returns the indexes chosen, in the order given (none
/// for an empty answer), or `None` when stdin or stderr is not a terminal
/// to ask on. A word that is none of these is an error: nothing is done.
pub fn choose(
    question: &str,
    items: &[String],
    names: &[&str],
    prompt: &str,
) -> anyhow::Result<Option<Vec<usize>>> {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return Ok(None);
    }
    let mut stderr = std::io::stderr().lock();
    writeln!(stderr, "{question}")?;
    for (number, item) in items.iter().enumerate() {
        writeln!(stderr, "  {}) {item}", number + 1)?;
    }
    write!(stderr, "{prompt}")?;
    stderr.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    let mut chosen = Vec::new();
    for word in line
        .split([' ', ','])
        .map(str::trim)
        .filter(|word| !word.is_empty())
    {
        if word == "all" {
            return Ok(Some((0..items.len()).collect()));
        }
        let index = word
            .parse::<usize>()
            .ok()
            .and_then(|number| number.checked_sub(1))
            .filter(|index| *index < items.len())
            .or_else(|| names.iter().position(|name| *name == word))
            .ok_or_else(|| {
                UserError::new(format!("`{word}` is not one of those listed"))
                    .with_hint("nothing was changed; run the command again")
            })?;
        chosen.push(index);
    }
    Ok(Some(chosen))
}
