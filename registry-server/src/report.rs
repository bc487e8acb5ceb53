//! How an error is told in one line: the error and each of its causes,
//! joined. Error messages of the API, the build and the server's log all
//! read this way, so it sits below every module that reports errors and
//! imports none of them.

/// Joins an error and its causes: `a: b: c`. A cause whose text the one
/// before it already says (some libraries repeat their cause in their own
/// message) is left out.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut told: Vec<String> = Vec::new();
    for text in std::iter::successors(Some(error), |error| error.source()).map(ToString::to_string)
    {
        if told.last().is_some_and(|last| last.contains(&text)) {
            continue;
        }
        told.push(text);
    }
    told.join(": ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot write the index")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn every_cause_is_told_in_order() {
        let error = Outer(std::io::Error::other("disk on fire"));
        assert_eq!(error_chain(&error), "cannot write the index: disk on fire");
    }

    #[derive(Debug, thiserror::Error)]
    #[error("request failed: {0}")]
    struct Repeating(#[source] std::io::Error);

    #[test]
    fn a_cause_its_error_already_told_is_told_once() {
        let error = Outer(std::io::Error::other(Repeating(std::io::Error::other(
            "connection refused",
        ))));
        assert_eq!(
            error_chain(&error),
            "cannot write the index: request failed: connection refused"
        );
    }
}
