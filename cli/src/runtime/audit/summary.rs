//! The arguments of a call as the audit log keeps them: enough to tell
//! what was done (which file, which mode), never the bulk of a value nor a
//! secret.
//!
//! Secrets are redacted first, then the value is cut down:
//!
//! ```text
//! null, booleans, numbers      as they are
//! strings                      the first 256 characters, then "…(+N chars)"
//! arrays, objects              their items, up to 64 values in all; then
//!                              "…(+N more items)" as a last item, or a
//!                              "…" key with "+N more keys"
//! arrays and objects three    "…(array of N items)", "…(object of N keys)"
//!   levels down
//! ```
//!
//! So an audit line stays a few kilobytes whatever the call, and the full
//! size is kept beside it (`arguments_bytes`).

use serde_json::{Map, Value};
use skillpkg_index::skill::model::JsonObject;

use crate::runtime::tool_call::Redactor;
use crate::runtime::tool_call::cap_chars;

/// The most values kept, all levels together.
const MAX_VALUES: usize = 64;
/// The longest string kept, in characters.
const MAX_STRING_CHARS: usize = 256;
/// The longest object key kept, in characters.
const MAX_KEY_CHARS: usize = 64;
/// The depth (the arguments' own values are at 1) at which arrays and
/// objects are described instead of shown.
const MAX_DEPTH: usize = 3;

/// Returns the audit summary of `arguments`.
pub(super) fn summarize(arguments: &JsonObject, redactor: &Redactor) -> Value {
    let mut budget = MAX_VALUES;
    summarize_object(arguments, 0, &mut budget, redactor)
}

/// Returns the size of `arguments` as compact JSON, in bytes.
pub(super) fn json_size(arguments: &JsonObject) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len() as u64;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, arguments).expect("counting cannot fail");
    count.0
}

fn summarize_value(value: &Value, depth: usize, budget: &mut usize, redactor: &Redactor) -> Value {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => value.clone(),
        Value::String(text) => {
            Value::String(cap_chars(&redactor.redact(text), MAX_STRING_CHARS).into_owned())
        }
        Value::Array(items) if depth >= MAX_DEPTH => {
            Value::String(format!("…(array of {} items)", items.len()))
        }
        Value::Object(map) if depth >= MAX_DEPTH => {
            Value::String(format!("…(object of {} keys)", map.len()))
        }
        Value::Array(items) => {
            let mut kept = Vec::new();
            for item in items {
                if *budget == 0 {
                    break;
                }
                *budget -= 1;
                kept.push(summarize_value(item, depth + 1, budget, redactor));
            }
            let more = items.len() - kept.len();
            if more > 0 {
                kept.push(Value::String(format!("…(+{more} more items)")));
            }
            Value::Array(kept)
        }
        Value::Object(map) => summarize_object(map, depth, budget, redactor),
    }
}

fn summarize_object(
    map: &Map<String, Value>,
    depth: usize,
    budget: &mut usize,
    redactor: &Redactor,
) -> Value {
    let mut kept = Map::new();
    let mut taken = 0;
    for (key, item) in map {
        if *budget == 0 {
            break;
        }
        *budget -= 1;
        taken += 1;
        let key = cap_chars(&redactor.redact(key), MAX_KEY_CHARS).into_owned();
        kept.insert(key, summarize_value(item, depth + 1, budget, redactor));
    }
    let more = map.len() - taken;
    if more > 0 {
        kept.insert("…".to_owned(), Value::String(format!("+{more} more keys")));
    }
    Value::Object(kept)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn small_arguments_are_kept_as_they_are() {
        let arguments =
            object(json!({ "path": "output/a.pdf", "dry_run": false, "pages": [1, 2], "n": null }));
        assert_eq!(
            summarize(&arguments, &Redactor::default()),
            Value::Object(arguments.clone())
        );
        assert_eq!(
            json_size(&arguments),
            serde_json::to_vec(&arguments).unwrap().len() as u64
        );
    }

    #[test]
    fn long_strings_are_cut_after_redaction() {
        // The secret straddles the cut: redacting after cutting would leave
        // its first half in the log.
        let secret = "sk-0123456789abcdef";
        let text = format!("{}{secret}{}", "a".repeat(250), "b".repeat(1000));
        let redactor = Redactor::new([("KEY", secret)]);
        let summary = summarize(&object(json!({ "text": text })), &redactor);
        let kept = summary["text"].as_str().unwrap();
        assert!(kept.starts_with(&"a".repeat(250)), "{kept}");
        assert!(!kept.contains("sk-012345"), "{kept}");
        assert!(
            kept.contains("[REDAC") && kept.ends_with("chars)"),
            "{kept}"
        );
    }

    #[test]
    fn many_values_are_counted_not_kept() {
        let arguments = object(json!({ "items": (0..1000).collect::<Vec<_>>() }));
        let summary = summarize(&arguments, &Redactor::default());
        let items = summary["items"].as_array().unwrap();
        // One value is the `items` key itself.
        assert_eq!(items.len(), MAX_VALUES - 1 + 1);
        assert_eq!(
            items.last().unwrap(),
            &json!(format!("…(+{} more items)", 1000 - (MAX_VALUES - 1)))
        );

        let wide: JsonObject = (0..100).map(|i| (format!("k{i:03}"), json!(i))).collect();
        let summary = summarize(&wide, &Redactor::default());
        assert_eq!(summary["…"], json!("+36 more keys"));
        assert_eq!(summary.as_object().unwrap().len(), MAX_VALUES + 1);
    }

    #[test]
    fn deep_values_are_described_not_kept() {
        let arguments = object(json!({ "a": { "b": { "c": { "d": 1 }, "list": [[1, 2, 3]] } } }));
        let summary = summarize(&arguments, &Redactor::default());
        assert_eq!(
            summary,
            json!({ "a": { "b": { "c": "…(object of 1 keys)", "list": "…(array of 1 items)" } } })
        );
    }

    #[test]
    fn secrets_in_keys_and_nested_values_are_redacted() {
        let redactor = Redactor::new([("TOKEN", "tok-123456")]);
        let arguments =
            object(json!({ "tok-123456": ["x tok-123456"], "n": { "t": "tok-123456" } }));
        let summary = summarize(&arguments, &redactor).to_string();
        assert!(!summary.contains("tok-123456"), "{summary}");
        assert_eq!(summary.matches("[REDACTED:TOKEN]").count(), 3, "{summary}");
    }
}
