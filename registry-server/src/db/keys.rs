//! Publisher keys in the database: each skill's `keys/<name>.json` as a
//! row, changed in a transaction that reads and writes it, then written to
//! the tree and re-checked against the newest revision, as index files are.

use sqlx::Row as _;

use super::versions::take_once;
use super::{Db, DbError};

/// A skill's keys file as the database has it, at a revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeysRow {
    /// The file's JSON; `None` for a skill that never had keys.
    pub file: Option<String>,
    pub revision: i64,
}

impl Db {
    /// Changes `skill`'s keys file: `change` gets the file (`None` when
    /// the skill has none) and returns the new one (`None`: unchanged) and
    /// a value, or an error that changes nothing. Two changes of one
    /// skill's keys, on any number of servers, never interleave. Returns
    /// the value and the file's revision.
    pub async fn change_keys_file<T, E>(
        &self,
        skill: &str,
        change: impl FnOnce(Option<&str>) -> Result<(Option<String>, T), E>,
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
            let (changed, value) = match change(current) {
                Ok(outcome) => outcome,
                Err(error) => {
                    tx.rollback().await?;
                    return Ok(Err(error));
                }
            };
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
            tx.commit().await?;
            Ok(true)
        })
        .await
    }
}
