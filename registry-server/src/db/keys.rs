//! Publisher keys in the database: each skill's `keys/<name>.json` as a
//! row, changed in a transaction that reads and writes it, then written to
//! the tree and re-checked against the newest revision, as index files are.
//!
//! Key ids are unique across the registry (`key_ids`): a change that adds
//! a key registers its id with its public key in the change's
//! transaction, and is refused when the id is registered with another key
//! (for any skill). The primary key decides between two servers adding
//! one id at once: on PostgreSQL the second insert waits for the first
//! transaction and then finds its row, on SQLite the write lock orders
//! them.

use sqlx::Row as _;

use super::versions::take_once;
use super::{Db, DbError};

/// A key id to register: the id (16 hex digits), its public key (the
/// base64 line), the skill it is added to and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyIdRow {
    pub id: String,
    pub key: String,
    pub skill: String,
    pub added: String,
}

/// A key id that is registered with another public key than the one a
/// change adds: the key and the skill it was first registered for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TakenId {
    pub id: String,
    /// The public key the id is registered with.
    pub key: String,
    /// The skill it was first registered for.
    pub skill: String,
}

/// What a change of a skill's keys file does.
#[derive(Clone, Debug)]
pub struct KeysChange<T> {
    /// The new file; `None`: unchanged.
    pub file: Option<String>,
    /// The keys it adds, whose ids it registers.
    pub added: Vec<KeyIdRow>,
    pub value: T,
}

/// A skill's keys file as the database has it, at a revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeysRow {
    /// The file's JSON; `None` for a skill that never had keys.
    pub file: Option<String>,
    pub revision: i64,
}

impl Db {
    /// Changes `skill`'s keys file: `change` gets the file (`None` when
    /// the skill has none) and returns the new one (`None`: unchanged),
    /// the keys it adds and a value, or an error that changes nothing.
    /// The ids of the keys added are registered with them; an id already
    /// registered with another key refuses the change with `taken`'s
    /// error. Two changes of one skill's keys, on any number of servers,
    /// never interleave. Returns the value and the file's revision.
    pub async fn change_keys_file<T, E>(
        &self,
        skill: &str,
        change: impl FnOnce(Option<&str>) -> Result<KeysChange<T>, E>,
        taken: impl FnOnce(TakenId) -> E,
    ) -> Result<Result<(T, i64), E>, DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            // The write first, for the row's lock.
            let revision: i64 = sqlx::query(
                "INSERT INTO keys_files (skill, file, revision, rendered) VALUES ($1, '', 0, 0) \
                 ON CONFLICT (skill) DO UPDATE SET revision = keys_files.revision \
                 RETURNING revision",
            )
            .bind(skill)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
            let file: String = sqlx::query("SELECT file FROM keys_files WHERE skill = $1")
                .bind(skill)
                .fetch_one(&mut *tx)
                .await?
                .try_get(0)?;
            let current = (!file.is_empty()).then_some(file.as_str());
            let KeysChange {
                file: changed,
                added,
                value,
            } = match change(current) {
                Ok(outcome) => outcome,
                Err(error) => {
                    tx.rollback().await?;
                    return Ok(Err(error));
                }
            };
            for row in &added {
                if let Some(holder) = register_key_id(&mut tx, row).await? {
                    tx.rollback().await?;
                    return Ok(Err(taken(holder)));
                }
            }
            let Some(changed) = changed else {
                tx.rollback().await?;
                return Ok(Ok((value, revision)));
            };
            let revision = revision + 1;
            sqlx::query("UPDATE keys_files SET file = $2, revision = $3 WHERE skill = $1")
                .bind(skill)
                .bind(&changed)
                .bind(revision)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(Ok((value, revision)))
        })
        .await
    }

    /// The key id `id` as registered: `(public key, first skill)`, or
    /// `None` when no skill has it.
    pub async fn key_id(&self, id: &str) -> Result<Option<(String, String)>, DbError> {
        self.run(async {
            let row = sqlx::query("SELECT key, skill FROM key_ids WHERE id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
            row.map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
                .transpose()
        })
        .await
    }

    /// Registers the ids of the keys registered before ids were unique
    /// (every skill's keys file, which `rows` reads into the ids to
    /// register, oldest first), once: of two keys with one id, the first
    /// registered keeps it. Returns the ids that were already registered
    /// with another key (a forged id registered before this check), or
    /// `None` when they were registered before.
    pub async fn fill_key_ids(
        &self,
        rows: impl FnOnce(&[(String, String)]) -> Vec<KeyIdRow>,
    ) -> Result<Option<Vec<(KeyIdRow, TakenId)>>, DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            if !take_once(&mut tx, "key_ids").await? {
                tx.rollback().await?;
                return Ok(None);
            }
            let files: Vec<(String, String)> =
                sqlx::query("SELECT skill, file FROM keys_files WHERE file <> '' ORDER BY skill")
                    .fetch_all(&mut *tx)
                    .await?
                    .iter()
                    .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
                    .collect::<Result<_, sqlx::Error>>()?;
            let mut clashes = Vec::new();
            for row in rows(&files) {
                if let Some(holder) = register_key_id(&mut tx, &row).await? {
                    clashes.push((row, holder));
                }
            }
            tx.commit().await?;
            Ok(Some(clashes))
        })
        .await
    }

    /// `skill`'s keys file and its revision.
    pub async fn keys_file(&self, skill: &str) -> Result<KeysRow, DbError> {
        self.run(async {
            let row = sqlx::query("SELECT file, revision FROM keys_files WHERE skill = $1")
                .bind(skill)
                .fetch_optional(&self.pool)
                .await?;
            Ok(match row {
                Some(row) => {
                    let file: String = row.try_get(0)?;
                    KeysRow {
                        file: (!file.is_empty()).then_some(file),
                        revision: row.try_get(1)?,
                    }
                }
                None => KeysRow {
                    file: None,
                    revision: 0,
                },
            })
        })
        .await
    }

    /// Notes that `skill`'s keys file was written at `revision`.
    pub async fn mark_keys_rendered(&self, skill: &str, revision: i64) -> Result<(), DbError> {
        self.run(async {
            sqlx::query("UPDATE keys_files SET rendered = $2 WHERE skill = $1 AND rendered < $2")
                .bind(skill)
                .bind(revision)
                .execute(&self.pool)
                .await?;
            Ok(())
        })
        .await
    }

    /// The skills whose keys file in the tree lags its revision.
    pub async fn unrendered_keys(&self) -> Result<Vec<String>, DbError> {
        self.run(async {
            sqlx::query("SELECT skill FROM keys_files WHERE rendered < revision ORDER BY skill")
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|row| row.try_get(0))
                .collect()
        })
        .await
    }

    /// Records the keys files of a tree that predates this table, once:
    /// `(skill, file)`. Returns false, recording nothing, when they were
    /// recorded before.
    pub async fn import_keys_files(&self, files: &[(String, String)]) -> Result<bool, DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            if !take_once(&mut tx, "keys_imported").await? {
                tx.rollback().await?;
                return Ok(false);
            }
            for (skill, file) in files {
                sqlx::query(
                    "INSERT INTO keys_files (skill, file, revision, rendered) VALUES ($1, $2, 1, 1) \
                     ON CONFLICT (skill) DO NOTHING",
                )
                .bind(skill)
                .bind(file)
                .execute(&mut *tx)
                .await?;
            }
            // Their ids are registered next ([`Db::fill_key_ids`]).
            sqlx::query("UPDATE counters SET value = 0 WHERE name = 'key_ids'")
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok(true)
        })
        .await
    }
}

/// Registers `row`'s key id with its key in `tx`, unless it is registered
/// already; returns the registration when it is of another key.
async fn register_key_id(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    row: &KeyIdRow,
) -> Result<Option<TakenId>, sqlx::Error> {
    sqlx::query(
        "INSERT INTO key_ids (id, key, skill, added) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (id) DO NOTHING",
    )
    .bind(&row.id)
    .bind(&row.key)
    .bind(&row.skill)
    .bind(&row.added)
    .execute(&mut **tx)
    .await?;
    // A statement of its own: on PostgreSQL it sees the row of a
    // transaction that committed while the insert waited for it.
    let registered = sqlx::query("SELECT key, skill FROM key_ids WHERE id = $1")
        .bind(&row.id)
        .fetch_one(&mut **tx)
        .await?;
    let key: String = registered.try_get(0)?;
    let skill: String = registered.try_get(1)?;
    Ok((key != row.key).then(|| TakenId {
        id: row.id.clone(),
        key,
        skill,
    }))
}
