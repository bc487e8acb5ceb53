//! How an error is told in one line: the error and each of its causes,
//! joined. Error messages of the API, the build and the server's log all
//! read this way, so it sits below every module that reports errors and
//! imports none of them.

/// Joins an error and its causes: `a: b: c`.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    std::iter::successors(Some(error), |error| error.source())
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(": ")
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
}
