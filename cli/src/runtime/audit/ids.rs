//! `trace_id` and `run_id`, in W3C trace context's shapes: 16 random bytes
//! (32 hex digits) for the trace, 8 (16 hex digits) for the run, never all
//! zero (W3C's invalid value), so a client's `traceparent` can be joined
//! and the lines of one trace found across tools.

use std::fmt;

use skillpkg_index::archive::tree_hash::hex;

/// A `trace_id`: one per session, or the client's own when it sends a
/// `traceparent`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceId([u8; 16]);

/// A `run_id`: one per tool call.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RunId([u8; 8]);

/// Fills `bytes` from the system's random source, again in the one case in
/// 2^64 or more that it comes out all zero.
fn random_nonzero<const N: usize>() -> std::io::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    while bytes == [0u8; N] {
        getrandom::fill(&mut bytes).map_err(|error| std::io::Error::other(error.to_string()))?;
    }
    Ok(bytes)
}

/// Decodes exactly `N` bytes of lowercase hex (W3C allows no uppercase).
fn decode_hex<const N: usize>(text: &str) -> Option<[u8; N]> {
    if text.len() != 2 * N {
        return None;
    }
    let digit = |byte: u8| match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        _ => None,
    };
    let mut bytes = [0u8; N];
    for (slot, pair) in bytes.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
        *slot = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(bytes)
}

impl TraceId {
    /// Returns a new random trace id.
    pub fn random() -> std::io::Result<Self> {
        random_nonzero().map(Self)
    }

    /// Returns the trace id of a W3C `traceparent` value
    /// (`00-<32 hex>-<16 hex>-<2 hex>`), or `None` when it is not a valid
    /// version-00 one.
    pub fn from_traceparent(traceparent: &str) -> Option<Self> {
        let parts: Vec<&str> = traceparent.trim().split('-').collect();
        let [version, trace, parent, flags] = parts[..] else {
            return None;
        };
        let trace = decode_hex::<16>(trace)?;
        let parent = decode_hex::<8>(parent)?;
        decode_hex::<1>(flags)?;
        let valid = version == "00" && trace != [0; 16] && parent != [0; 8];
        valid.then_some(Self(trace))
    }
}

impl RunId {
    /// Returns a new random run id.
    pub fn random() -> std::io::Result<Self> {
        random_nonzero().map(Self)
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex(&self.0))
    }
}

impl fmt::Debug for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceId({self})")
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&hex(&self.0))
    }
}

impl fmt::Debug for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RunId({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_lower_hex(text: &str) -> bool {
        text.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    }

    #[test]
    fn ids_are_32_and_16_lowercase_hex_digits_and_differ() {
        let (trace, run) = (TraceId::random().unwrap(), RunId::random().unwrap());
        let (trace, run) = (trace.to_string(), run.to_string());
        assert_eq!((trace.len(), run.len()), (32, 16));
        assert!(is_lower_hex(&trace) && is_lower_hex(&run), "{trace} {run}");
        assert_ne!(TraceId::random().unwrap(), TraceId::random().unwrap());
        assert_ne!(RunId::random().unwrap(), RunId::random().unwrap());
    }

    #[test]
    fn a_valid_traceparent_gives_its_trace_id() {
        // The example of the W3C Trace Context recommendation.
        let id =
            TraceId::from_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
        assert_eq!(id.unwrap().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
    }

    #[test]
    fn invalid_traceparents_are_ignored() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e47é6-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-zz",
        ] {
            assert_eq!(TraceId::from_traceparent(bad), None, "{bad}");
        }
    }
}
