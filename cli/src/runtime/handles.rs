//! Sessions as explicit handles, for clients whose connection is not a
//! session (docs/runtime.md, "Sessions without a connection").
//!
//! Protocol 2026-07-28 removed `Mcp-Session-Id` (SEP-2567): over streamable
//! HTTP every request stands alone, and state that spans calls travels in
//! a handle the server mints and the model passes back as a tool argument.
//! `skills_load` without a `session` makes one here and returns its handle;
//! the runtime's tools, the skills' own tools and the `active_skills`
//! prompt take it back.
//!
//! A handle is 128 random bits: knowing one is what lets a caller use its
//! session, so it is never derived from anything guessable. The table is
//! bounded: past [`MAX_SESSIONS`], sessions idle for longer than
//! [`IDLE_LIMIT`] go first, then the least recently used, so a client that
//! loads in a loop costs memory only up to the bound.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::session::Session;
pub use super::wire::SESSION_ARGUMENT;

/// The most sessions kept at once.
pub const MAX_SESSIONS: usize = 1024;

/// How long an unused session is kept while the table is full.
pub const IDLE_LIMIT: Duration = Duration::from_secs(60 * 60);

/// What a handle starts with, so that a model or a log reader can tell one
/// from a skill name or a path.
const PREFIX: &str = "sess_";

/// One session, shared by every request that names its handle.
pub type SharedSession = Arc<Mutex<Session>>;

#[derive(Debug)]
struct Entry {
    session: SharedSession,
    used: Instant,
}

/// The sessions a server keeps for handle-carrying clients.
#[derive(Debug, Default)]
pub struct SessionTable {
    entries: Mutex<HashMap<String, Entry>>,
}

impl SessionTable {
    /// Keeps `session` and returns its new handle. Fails only when the
    /// system's random source does.
    pub fn insert(&self, session: SharedSession) -> std::io::Result<String> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|error| std::io::Error::other(error.to_string()))?;
        let handle = format!(
            "{PREFIX}{}",
            skillpkg_index::archive::tree_hash::hex(&bytes)
        );
        let now = Instant::now();
        let mut entries = self.lock();
        if entries.len() >= MAX_SESSIONS {
            entries.retain(|_, entry| now.duration_since(entry.used) < IDLE_LIMIT);
        }
        if entries.len() >= MAX_SESSIONS
            && let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, entry)| entry.used)
                .map(|(handle, _)| handle.clone())
        {
            entries.remove(&oldest);
        }
        entries.insert(handle.clone(), Entry { session, used: now });
        Ok(handle)
    }

    /// The session `handle` names, if it is kept; using it keeps it longer.
    pub fn get(&self, handle: &str) -> Option<SharedSession> {
        let mut entries = self.lock();
        let entry = entries.get_mut(handle)?;
        entry.used = Instant::now();
        Some(entry.session.clone())
    }

    /// How many sessions are kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Returns true if and only if no session is kept.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `handle` cut to what tells it apart in a log (`sess_` and 8 hex
/// digits, then `…`), too little to use.
pub fn shortened(handle: &str) -> String {
    let keep = handle
        .char_indices()
        .nth(PREFIX.len() + 8)
        .map_or(handle.len(), |(index, _)| index);
    if keep == handle.len() {
        return handle.to_owned();
    }
    format!("{}…", &handle[..keep])
}

/// Takes the `session` argument out of a call's arguments, so that what is
/// left is what the tool's own schema describes. `Ok(None)` when there is
/// none; `Err` with the reason when it is there but not a string.
pub fn take_handle(
    arguments: &mut Option<rmcp::model::JsonObject>,
) -> Result<Option<String>, String> {
    let Some(value) = arguments
        .as_mut()
        .and_then(|arguments| arguments.remove(SESSION_ARGUMENT))
    else {
        return Ok(None);
    };
    match value {
        serde_json::Value::String(handle) => Ok(Some(handle)),
        serde_json::Value::Null => Ok(None),
        other => Err(format!(
            "`{SESSION_ARGUMENT}` must be the string skills_load returned, not {other}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::json;

    use super::*;

    fn session() -> SharedSession {
        Arc::new(Mutex::new(Session::new(8)))
    }

    #[test]
    fn handles_are_random_and_lead_back_to_their_session() {
        let table = SessionTable::default();
        assert!(table.is_empty());
        let first = session();
        let a = table.insert(first.clone()).unwrap();
        let b = table.insert(session()).unwrap();
        assert_ne!(a, b);
        assert!(a.starts_with("sess_") && a.len() == 5 + 32, "{a}");
        assert!(Arc::ptr_eq(&table.get(&a).unwrap(), &first));
        assert!(table.get("sess_00000000000000000000000000000000").is_none());
        assert!(table.get(&a[..a.len() - 1]).is_none());
    }

    #[test]
    fn the_table_is_bounded_and_the_least_recently_used_goes_first() {
        let table = SessionTable::default();
        let first = table.insert(session()).unwrap();
        let second = table.insert(session()).unwrap();
        for _ in 2..MAX_SESSIONS {
            table.insert(session()).unwrap();
        }
        assert_eq!(table.len(), MAX_SESSIONS);
        // Using the first keeps it; the second is now the oldest.
        assert!(table.get(&first).is_some());
        table.insert(session()).unwrap();
        assert_eq!(table.len(), MAX_SESSIONS);
        assert!(table.get(&first).is_some());
        assert!(table.get(&second).is_none());
    }

    #[test]
    fn a_logged_handle_is_too_short_to_use() {
        let handle = format!("sess_{}", "ab".repeat(16));
        assert_eq!(shortened(&handle), "sess_abababab…");
        assert_eq!(shortened("sess_ab"), "sess_ab");
        assert_eq!(shortened("ééééééééééééééé"), "ééééééééééééé…");
    }

    #[test]
    fn the_handle_is_taken_out_of_the_arguments() {
        let mut arguments = Some(
            json!({"names": ["pdf"], "session": "sess_x"})
                .as_object()
                .unwrap()
                .clone(),
        );
        assert_eq!(take_handle(&mut arguments), Ok(Some("sess_x".to_owned())));
        assert_eq!(
            serde_json::Value::Object(arguments.clone().unwrap()),
            json!({"names": ["pdf"]})
        );
        assert_eq!(take_handle(&mut arguments), Ok(None));
        assert_eq!(take_handle(&mut None), Ok(None));
        let mut wrong = Some(json!({"session": 7}).as_object().unwrap().clone());
        assert!(take_handle(&mut wrong).unwrap_err().contains("not 7"));
    }
}
