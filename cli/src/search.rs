//! Matching and ranking `search.json` entries against a query, on the
//! client, so that search works on a purely static host.
//!
//! A query is split into words on whitespace; an entry matches when every
//! word occurs, ignoring case, in its name or its description. Matches are
//! ranked: the skill whose name is the query, then skills whose name holds
//! more of the words, then the rest; ties keep `search.json`'s order (by
//! name).

use skillpkg_index::registry::SearchEntry;

/// Returns the entries that match `query`, best first. An empty query
/// matches every entry.
pub fn search<'entries>(
    entries: &'entries [SearchEntry],
    query: &str,
) -> Vec<&'entries SearchEntry> {
    let query = query.to_lowercase();
    let words: Vec<&str> = query.split_whitespace().collect();
    let mut ranked: Vec<(Rank, &SearchEntry)> = entries
        .iter()
        .filter_map(|entry| rank(entry, &query, &words).map(|rank| (rank, entry)))
        .collect();
    // A stable sort: equal ranks stay in the index's order.
    ranked.sort_by_key(|(rank, _)| *rank);
    ranked.into_iter().map(|(_, entry)| entry).collect()
}

/// Lower is better; compared field by field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Rank {
    /// False for the skill named exactly like the query (`false < true`).
    not_exact: bool,
    /// How many words occur only in the description.
    words_not_in_name: usize,
}

fn rank(entry: &SearchEntry, query: &str, words: &[&str]) -> Option<Rank> {
    let name = entry.name.as_str();
    let description = entry.description.to_lowercase();
    let mut words_not_in_name = 0;
    for word in words {
        if !name.contains(word) {
            if !description.contains(word) {
                return None;
            }
            words_not_in_name += 1;
        }
    }
    Some(Rank {
        not_exact: name != query.trim(),
        words_not_in_name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, description: &str) -> SearchEntry {
        SearchEntry {
            name: name.parse().unwrap(),
            version: "1.0.0".parse().unwrap(),
            description: description.into(),
            versions: 1,
            downloads: 0,
        }
    }

    fn names(found: &[&SearchEntry]) -> Vec<String> {
        found.iter().map(|entry| entry.name.to_string()).collect()
    }

    fn index() -> Vec<SearchEntry> {
        vec![
            entry(
                "commit-messages",
                "Write commit messages. Mentions PDF once.",
            ),
            entry("docx", "Edit Word documents."),
            entry("pdf", "Read PDF files."),
            entry("pdf-processing", "Extract text and tables from PDF files."),
            entry("spreadsheets", "Make tables in Excel."),
        ]
    }

    #[test]
    fn the_exact_name_comes_first_then_name_matches_then_descriptions() {
        let index = index();
        assert_eq!(
            names(&search(&index, "PDF")),
            ["pdf", "pdf-processing", "commit-messages"]
        );
    }

    #[test]
    fn every_word_must_match_the_name_or_the_description() {
        let index = index();
        assert_eq!(names(&search(&index, "pdf tables")), ["pdf-processing"]);
        assert_eq!(
            names(&search(&index, "tables")),
            ["pdf-processing", "spreadsheets"]
        );
        assert!(search(&index, "pdf excel").is_empty());
    }

    #[test]
    fn more_words_in_the_name_rank_higher() {
        let index = vec![
            entry("alpha", "Processing of pdf files."),
            entry("pdf-tools", "Processing helpers."),
            entry("pdf-processing", "Helpers."),
        ];
        assert_eq!(
            names(&search(&index, "pdf processing")),
            ["pdf-processing", "pdf-tools", "alpha"]
        );
    }

    #[test]
    fn an_empty_query_lists_everything_in_order() {
        let index = index();
        assert_eq!(search(&index, "  ").len(), index.len());
        assert_eq!(names(&search(&index, ""))[0], "commit-messages");
    }
}
