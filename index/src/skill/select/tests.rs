//! Selection: the spec 003 algorithm and the whole-word rule's edge cases.

use std::path::Path;

use super::*;

fn when(
    mentions: &[&str],
    file_types: &[&str],
    intents: &[&str],
    priority: Option<u64>,
) -> WhenToUse {
    WhenToUse {
        mentions: mentions.iter().map(|s| (*s).to_owned()).collect(),
        file_types: file_types.iter().map(|s| (*s).to_owned()).collect(),
        intents: intents.iter().map(|s| (*s).to_owned()).collect(),
        priority,
    }
}

fn candidate<'a>(name: &'a str, when_to_use: Option<&'a WhenToUse>) -> Candidate<'a> {
    Candidate {
        name,
        tools: Vec::new(),
        when_to_use,
    }
}

fn request<'a>(text: &'a str, files: &'a [&'a Path], intents: &'a [&'a str]) -> Request<'a> {
    Request {
        text,
        files,
        intents,
        threshold: DEFAULT_THRESHOLD,
    }
}

fn order(selection: &Selection) -> Vec<(&str, u32, bool)> {
    selection
        .candidates
        .iter()
        .map(|c| (c.name.as_str(), c.score, c.selected))
        .collect()
}

#[test]
fn mentions_match_whole_words_only() {
    assert!(mentions("Run OCR, please", "ocr"));
    assert!(mentions("scan.ocr", "ocr"));
    assert!(mentions("ocr", "ocr"));
    assert!(mentions("(ocr)", "ocr"));
    assert!(!mentions("use ocrmypdf", "ocr"));
    assert!(!mentions("the ocr_result", "ocr"));
    assert!(!mentions("an ocr-tool", "ocr"));
    assert!(!mentions("all my pdfs", "pdf"));
    assert!(!mentions("preocr", "ocr"));
}

#[test]
fn mentions_ignore_case_and_spacing() {
    assert!(mentions(
        "Document\n   EXTRACTION now",
        "document extraction"
    ));
    assert!(mentions("Über alles", "über"));
    assert!(!mentions("documents extraction", "document extraction"));
}

#[test]
fn a_mention_ending_in_punctuation_needs_no_boundary_on_that_side() {
    assert!(mentions("write c++ code", "c++"));
    assert!(mentions("c++11", "c++"));
    assert!(!mentions("objc++", "c++"));
}

#[test]
fn a_later_occurrence_matches_when_an_earlier_one_is_inside_a_word() {
    assert!(mentions("ocrmypdf then ocr", "ocr"));
    assert!(mentions("aab ab", "ab"));
}

#[test]
fn blank_mentions_never_match() {
    assert!(!mentions("anything at all", ""));
    assert!(!mentions("anything at all", "   "));
}

#[test]
fn file_types_match_by_suffix_with_or_without_the_dot() {
    assert!(file_type_matches(".pdf", "report.PDF"));
    assert!(file_type_matches("pdf", "report.pdf"));
    assert!(file_type_matches(".gz", "a.tar.gz"));
    assert!(file_type_matches(".tar.gz", "a.tar.gz"));
    assert!(file_type_matches("Dockerfile", "dockerfile"));
    assert!(!file_type_matches(".pdf", "reportpdf"));
    assert!(!file_type_matches(".pdf", "report.pdf.txt"));
    assert!(!file_type_matches(".", "report.pdf"));
    assert!(!file_type_matches("", "report"));
}

#[test]
fn file_looking_words_are_found_through_punctuation_and_paths() {
    assert_eq!(
        file_words("Summarise \"report.pdf\", then docs/scan.PNG and https://x.example/a/b.csv."),
        vec!["report.pdf", "scan.PNG", "b.csv"]
    );
    assert!(file_words("version 2. Then stop... no files here").is_empty());
    assert!(file_words("archive.toolongextension").is_empty());
}

#[test]
fn scores_add_up_as_spec_003_says_and_say_where_they_come_from() {
    let pdf = when(
        &["pdf", "ocr", "scan"],
        &[".pdf"],
        &["document_extraction"],
        None,
    );
    let files = [Path::new("in/report.pdf")];
    let selection = select(
        &request("OCR this scan please", &files, &["document_extraction"]),
        &[candidate("pdf-processing", Some(&pdf))],
    );
    let scored = &selection.candidates[0];
    assert_eq!(scored.score, 3 + 2 + 2 + 1);
    let reasons: Vec<String> = scored.matches.iter().map(ToString::to_string).collect();
    assert_eq!(
        reasons,
        vec![
            "+3 file_type .pdf (report.pdf)",
            "+2 mention \"ocr\"",
            "+2 mention \"scan\"",
            "+1 intent \"document_extraction\"",
        ]
    );
    assert!(scored.selected);
}

#[test]
fn a_file_named_in_the_request_counts_and_says_so() {
    let pdf = when(&[], &[".pdf"], &[], None);
    let selection = select(
        &request("summarise report.pdf", &[], &[]),
        &[candidate("pdf-processing", Some(&pdf))],
    );
    assert_eq!(
        selection.candidates[0].matches[0].to_string(),
        "+3 file_type .pdf (report.pdf, in the request)"
    );
}

#[test]
fn each_entry_counts_once_however_often_it_matches() {
    let pdf = when(&["pdf", "PDF"], &[".pdf", "pdf"], &[], None);
    let files = [Path::new("a.pdf"), Path::new("b.pdf")];
    let selection = select(
        &request("pdf pdf pdf", &files, &[]),
        &[candidate("pdf-processing", Some(&pdf))],
    );
    assert_eq!(selection.candidates[0].score, 3 + 2);
}

#[test]
fn the_threshold_separates_selected_from_the_rest() {
    let two = when(&["table"], &[], &[], None);
    let three = when(&[], &[".csv"], &[], None);
    let files = [Path::new("data.csv")];
    let mut req = request("make a table", &files, &[]);
    let candidates = [
        candidate("tables", Some(&two)),
        candidate("csv", Some(&three)),
        candidate("plain", None),
    ];
    assert_eq!(
        order(&select(&req, &candidates)),
        vec![("csv", 3, true), ("tables", 2, false), ("plain", 0, false)]
    );
    req.threshold = 2;
    assert_eq!(
        order(&select(&req, &candidates)),
        vec![("csv", 3, true), ("tables", 2, true), ("plain", 0, false)]
    );
}

#[test]
fn ties_break_by_priority_then_name() {
    let low = when(&["report"], &[], &[], Some(1));
    let high = when(&["report"], &[], &[], Some(5));
    let none = when(&["report"], &[], &[], None);
    let zero = when(&["report"], &[], &[], Some(0));
    let mut req = request("a report", &[], &[]);
    req.threshold = 2;
    let selection = select(
        &req,
        &[
            candidate("b-low", Some(&low)),
            candidate("z-none", Some(&none)),
            candidate("a-none", Some(&none)),
            candidate("c-high", Some(&high)),
            candidate("d-zero", Some(&zero)),
        ],
    );
    let names: Vec<&str> = selection
        .candidates
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(names, vec!["c-high", "b-low", "d-zero", "a-none", "z-none"]);
}

#[test]
fn naming_a_skill_overrides_the_scores() {
    let pdf = when(&[], &[".pdf"], &[], None);
    let files = [Path::new("x.pdf")];
    let selection = select(
        &request("use $notes for this", &files, &[]),
        &[
            candidate("pdf-processing", Some(&pdf)),
            candidate("notes", None),
        ],
    );
    assert!(selection.explicit);
    assert_eq!(
        order(&selection),
        vec![("notes", 0, true), ("pdf-processing", 3, false)]
    );
    assert_eq!(
        selection.candidates[0].explicit.as_ref().unwrap().word,
        "notes"
    );
}

#[test]
fn naming_a_tool_selects_its_skill() {
    let selection = select(
        &request("call /extract-text on it", &[], &[]),
        &[Candidate {
            name: "pdf-processing",
            tools: vec!["extract-text"],
            when_to_use: None,
        }],
    );
    let explicit = selection.candidates[0].explicit.as_ref().unwrap();
    assert!(
        explicit.tool && explicit.word == "extract-text",
        "{explicit:?}"
    );
    assert!(selection.candidates[0].selected);
}

#[test]
fn a_name_inside_a_longer_name_is_not_named() {
    let selection = select(
        &request("use pdf-processing-v2 and mypdf", &[], &[]),
        &[candidate("pdf-processing", None), candidate("pdf", None)],
    );
    assert!(!selection.explicit, "{selection:?}");
}

#[test]
fn explicitly_named_skills_come_in_the_order_the_request_names_them() {
    let selection = select(
        &request("first $zeta then $alpha", &[], &[]),
        &[
            candidate("alpha", None),
            candidate("zeta", None),
            candidate("other", None),
        ],
    );
    assert_eq!(
        order(&selection),
        vec![("zeta", 0, true), ("alpha", 0, true), ("other", 0, false)]
    );
}

#[test]
fn intents_match_exactly_ignoring_case() {
    let w = when(&[], &[], &["document_extraction", "ocr"], None);
    let selection = select(
        &request("", &[], &["Document_Extraction", "document"]),
        &[candidate("pdf", Some(&w))],
    );
    assert_eq!(selection.candidates[0].score, 1);
}
