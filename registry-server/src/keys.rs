//! Publisher keys: the minisign public keys whose signatures the registry
//! accepts for a skill, in the public tree's `keys/<name>.json`
//! (docs/index-format.md), served so clients can check signatures too.
//!
//! ```text
//! keys/pdf.json    {"v":1,"keys":[{"id":"E53D620918B4F81F","key":"RWQf…","added":"2026-11-22T10:00:00Z"}]}
//! ```
//!
//! The first signed publish of a name registers its key (trust on first
//! use). After that, owners add and remove keys through the API and the
//! registry's admin with `skillpkg-registry key`. A skill that has keys keeps
//! at least one: with none left, the next publish could register any key.
//! Rotation is two steps, or one request: add the new key, remove the old.
//!
//! The database holds each skill's keys file ([`Db::change_keys_file`]):
//! every change reads and writes it in one transaction, so publishes, API
//! requests and the admin command, on any number of servers, can change
//! keys at the same time; the file in the tree is then written from the
//! database and re-checked against its newest revision.
//!
//! A key id is unique across the registry: minisign's key id is 8 bytes
//! its maker chooses, so anyone can make a key that carries another
//! publisher's id, and a client that goes by the id (a lock's pinned
//! signer, `allowed-signers`) could take one for the other. Every change
//! that adds a key registers its id with the key, in the change's
//! transaction ([`Db::change_keys_file`]), and is refused
//! ([`KeyChangeError::IdTaken`]) when the id is registered with another
//! key, for whichever skill. The same key may serve several skills.

use jiff::Timestamp;
use skillpkg_index::registry::tree::{StaticTree, TreeError};
use skillpkg_index::registry::{KeyRecord, KeysFile, KeysFileError, keys_path, render_json};
use skillpkg_index::signing::{KeyError, KeyId, PublicKey};
use skillpkg_index::skill::SkillName;

use crate::db::{Db, KeyIdRow, KeysChange, TakenId};
use crate::state::StateError;

/// Why keys could not be changed.
#[derive(Debug, thiserror::Error)]
pub enum KeyChangeError {
    #[error("`{text}` is not a minisign public key")]
    BadKey {
        text: String,
        #[source]
        source: KeyError,
    },
    #[error("`{text}` is not a key id: a key id is 16 hex digits, as the key list shows it")]
    BadId { text: String },
    /// The id of a key to add is registered with another key, for this
    /// skill or another.
    #[error(
        "the key id {id} is already registered with a different public key (for `{holder}`): key ids are unique across the registry, so that no key can pass for another; generate a new key (`skillpkg key generate`) and register that one"
    )]
    IdTaken { id: String, holder: String },
    #[error("no key with the id {id} is registered for `{name}`")]
    UnknownId { id: KeyId, name: SkillName },
    #[error(
        "`{name}` must keep at least one key, or its next publish could register any key: add the new key first, then remove the old one"
    )]
    LastKey { name: SkillName },
    #[error("the keys of `{name}` in the database are not a valid keys file")]
    Stored {
        name: SkillName,
        #[source]
        source: KeysFileError,
    },
    #[error(transparent)]
    Tree(#[from] TreeError),
    #[error(transparent)]
    State(#[from] StateError),
}

/// Reads a keys file as the database keeps it (`None`: no keys).
pub fn parse_stored(name: &SkillName, file: Option<&str>) -> Result<KeysFile, KeyChangeError> {
    match file {
        Some(file) => KeysFile::parse(file.as_bytes()).map_err(|source| KeyChangeError::Stored {
            name: name.clone(),
            source,
        }),
        None => Ok(KeysFile::empty()),
    }
}

/// A keys file as the tree and the database keep it.
pub fn render(file: &KeysFile) -> String {
    String::from_utf8(render_json(file)).expect("JSON is UTF-8")
}

/// Returns the keys of `name`, from the database.
pub async fn keys_of(db: &Db, name: &SkillName) -> Result<KeysFile, KeyChangeError> {
    let row = db
        .keys_file(name.as_str())
        .await
        .map_err(StateError::from)?;
    parse_stored(name, row.file.as_deref())
}

/// Changes the keys of `name` in the database with `change` (which gets
/// the current keys and returns whether it changed them, and a value),
/// then writes `keys/<name>.json` to `tree`.
pub async fn change_with<T, E: From<KeyChangeError>>(
    db: &Db,
    tree: &StaticTree,
    name: &SkillName,
    change: impl FnOnce(&mut KeysFile) -> Result<T, E>,
) -> Result<(KeysFile, T), E> {
    let outcome = db
        .change_keys_file(
            name.as_str(),
            |file| {
                let mut keys = parse_stored(name, file)?;
                let before = keys.clone();
                let value = change(&mut keys)?;
                let added = keys
                    .keys
                    .iter()
                    .filter(|record| !before.contains(&record.key))
                    .map(|record| id_row(name.as_str(), record))
                    .collect();
                Ok::<_, E>(KeysChange {
                    file: (keys != before).then(|| render(&keys)),
                    added,
                    value: (keys, value),
                })
            },
            |taken| E::from(KeyChangeError::from(taken)),
        )
        .await
        .map_err(|error| KeyChangeError::from(StateError::from(error)))?;
    let ((keys, value), _) = outcome?;
    write_keys_file(db, tree, name).await?;
    Ok((keys, value))
}

impl From<TakenId> for KeyChangeError {
    fn from(taken: TakenId) -> Self {
        Self::IdTaken {
            id: taken.id,
            holder: taken.skill,
        }
    }
}

/// The registration of `record`'s key id, for `skill`.
fn id_row(skill: &str, record: &KeyRecord) -> KeyIdRow {
    KeyIdRow {
        id: record.key.id().to_string(),
        key: record.key.to_base64(),
        skill: skill.to_owned(),
        added: record.added.clone(),
    }
}

/// Refuses `key` when its id is registered with another key: the check a
/// first signed publish makes before it claims anything. The change that
/// registers the key checks again, in its transaction.
pub async fn check_id_free(db: &Db, key: &PublicKey) -> Result<(), KeyChangeError> {
    let id = key.id().to_string();
    match db.key_id(&id).await.map_err(StateError::from)? {
        Some((registered, holder)) if registered != key.to_base64() => {
            Err(KeyChangeError::IdTaken { id, holder })
        }
        _ => Ok(()),
    }
}

/// Registers the ids of the keys registered before ids were unique, once,
/// the oldest key first (it keeps an id two keys share); a clash, a key
/// registered with a forged id before the check, is logged.
pub async fn register_key_ids(db: &Db) -> Result<(), KeyChangeError> {
    let clashes = db
        .fill_key_ids(|files| {
            let mut rows: Vec<KeyIdRow> = files
                .iter()
                .filter_map(|(skill, file)| {
                    let name: SkillName = skill.parse().ok()?;
                    let keys = parse_stored(&name, Some(file)).ok()?;
                    Some(
                        keys.keys
                            .iter()
                            .map(|record| id_row(skill, record))
                            .collect::<Vec<_>>(),
                    )
                })
                .flatten()
                .collect();
            rows.sort_by(|a, b| a.added.cmp(&b.added).then(a.skill.cmp(&b.skill)));
            rows
        })
        .await
        .map_err(StateError::from)?;
    for (row, holder) in clashes.unwrap_or_default() {
        tracing::warn!(
            id = row.id,
            skill = row.skill,
            holder = holder.skill,
            "the key id {} of `{}` is registered with another key, for `{}`: one of the two keys carries a forged id; remove it from its skill",
            row.id,
            row.skill,
            holder.skill
        );
    }
    Ok(())
}

/// Writes `keys/<name>.json` from the database, again until what it wrote
/// is of the newest revision.
pub async fn write_keys_file(
    db: &Db,
    tree: &StaticTree,
    name: &SkillName,
) -> Result<(), KeyChangeError> {
    loop {
        let row = db
            .keys_file(name.as_str())
            .await
            .map_err(StateError::from)?;
        let Some(file) = row.file else {
            return Ok(());
        };
        tokio::task::block_in_place(|| tree.write_file(&keys_path(name), file.as_bytes()))?;
        let now = db
            .keys_file(name.as_str())
            .await
            .map_err(StateError::from)?;
        if now.revision == row.revision {
            db.mark_keys_rendered(name.as_str(), row.revision)
                .await
                .map_err(StateError::from)?;
            return Ok(());
        }
    }
}

/// Records the keys files of `tree` in the database, once: a registry of
/// an earlier version kept them only there.
pub async fn import_keys_files(db: &Db, tree: &StaticTree) -> Result<(), KeyChangeError> {
    let files = tokio::task::block_in_place(|| tree.read_all_keys())?;
    let rows: Vec<(String, String)> = files
        .iter()
        .map(|(name, file)| (name.to_string(), render(file)))
        .collect();
    db.import_keys_files(&rows)
        .await
        .map_err(StateError::from)?;
    Ok(())
}

/// Parses public keys, each minisign's base64 line or a public key file.
pub fn parse_keys(texts: &[String]) -> Result<Vec<PublicKey>, KeyChangeError> {
    texts
        .iter()
        .map(|text| {
            text.parse().map_err(|source| KeyChangeError::BadKey {
                text: shorten(text),
                source,
            })
        })
        .collect()
}

/// Parses key ids, as minisign shows them.
pub fn parse_ids(texts: &[String]) -> Result<Vec<KeyId>, KeyChangeError> {
    texts
        .iter()
        .map(|text| {
            text.trim().parse().map_err(|_| KeyChangeError::BadId {
                text: shorten(text),
            })
        })
        .collect()
}

/// Returns `text` cut for an error message: it was sent by a client.
fn shorten(text: &str) -> String {
    text.chars().take(120).collect()
}

/// Returns the record of `key`, registered at `added`.
pub fn record(key: &PublicKey, added: Timestamp) -> KeyRecord {
    KeyRecord {
        id: key.id().to_string(),
        key: key.clone(),
        added: added.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
    }
}

/// Adds `add` (a key already listed keeps its `added` time), then removes
/// `remove`, refusing to remove the last key.
pub fn apply(
    file: &mut KeysFile,
    name: &SkillName,
    add: &[PublicKey],
    remove: &[KeyId],
    now: Timestamp,
) -> Result<(), KeyChangeError> {
    for key in add {
        match file.keys.iter().find(|record| record.key.id() == key.id()) {
            Some(record) if &record.key == key => {}
            Some(_) => {
                return Err(KeyChangeError::IdTaken {
                    id: key.id().to_string(),
                    holder: name.to_string(),
                });
            }
            None => file.keys.push(record(key, now)),
        }
    }
    for id in remove {
        let before = file.keys.len();
        file.keys.retain(|record| record.key.id() != *id);
        if file.keys.len() == before {
            return Err(KeyChangeError::UnknownId {
                id: *id,
                name: name.clone(),
            });
        }
    }
    if file.keys.is_empty() && !remove.is_empty() {
        return Err(KeyChangeError::LastKey { name: name.clone() });
    }
    Ok(())
}

/// Says what a key change does, for the audit trail: `added E53D...;
/// removed 0A1B...`.
pub fn describe_change(add: &[PublicKey], remove: &[KeyId]) -> String {
    let mut parts = Vec::new();
    if !add.is_empty() {
        let ids: Vec<String> = add.iter().map(|key| key.id().to_string()).collect();
        parts.push(format!("added {}", ids.join(", ")));
    }
    if !remove.is_empty() {
        let ids: Vec<String> = remove.iter().map(ToString::to_string).collect();
        parts.push(format!("removed {}", ids.join(", ")));
    }
    parts.join("; ")
}

/// Changes the keys of `name` in the database and writes its keys file
/// to `tree`; returns the keys it has now.
pub async fn change_keys(
    db: &Db,
    tree: &StaticTree,
    name: &SkillName,
    add: &[PublicKey],
    remove: &[KeyId],
    now: Timestamp,
) -> Result<KeysFile, KeyChangeError> {
    let (keys, ()) =
        change_with(db, tree, name, |file| apply(file, name, add, remove, now)).await?;
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use skillpkg_index::signing::SecretKey;

    use super::*;

    #[test]
    fn keys_are_added_once_and_the_last_one_stays() {
        let name: SkillName = "pdf".parse().unwrap();
        let first = SecretKey::generate().unwrap().public();
        let second = SecretKey::generate().unwrap().public();
        let mut file = KeysFile::empty();
        let then: Timestamp = "2026-11-22T10:00:00.5Z".parse().unwrap();
        apply(&mut file, &name, std::slice::from_ref(&first), &[], then).unwrap();
        assert_eq!(file.keys[0].added, "2026-11-22T10:00:00Z");
        let later: Timestamp = "2026-11-23T10:00:00Z".parse().unwrap();
        apply(
            &mut file,
            &name,
            &[first.clone(), second.clone()],
            &[],
            later,
        )
        .unwrap();
        assert_eq!(file.keys.len(), 2);
        assert_eq!(file.keys[0].added, "2026-11-22T10:00:00Z", "kept");

        apply(&mut file, &name, &[], &[first.id()], later).unwrap();
        assert_eq!(file.public_keys(), std::slice::from_ref(&second));
        assert!(matches!(
            apply(&mut file.clone(), &name, &[], &[second.id()], later),
            Err(KeyChangeError::LastKey { .. })
        ));
        assert!(matches!(
            apply(&mut file.clone(), &name, &[], &[first.id()], later),
            Err(KeyChangeError::UnknownId { .. })
        ));
        assert!(matches!(
            parse_ids(&["E53D62".into()]),
            Err(KeyChangeError::BadId { .. })
        ));
        assert!(matches!(
            parse_keys(&["RWQ".into()]),
            Err(KeyChangeError::BadKey { .. })
        ));
    }
}
