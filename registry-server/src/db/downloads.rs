//! Download counts in the database: every server adds the downloads it
//! counted since its last flush; the totals are read with the search shard
//! that lists a skill, and for the names a new name resembles.

use std::collections::BTreeMap;

use sqlx::Row as _;

use super::{Db, DbError};

impl Db {
    /// Adds `counts` (downloads by skill since the last flush) to the
    /// totals, in one transaction.
    pub async fn add_downloads(&self, counts: &BTreeMap<String, u64>) -> Result<(), DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            for (skill, count) in counts {
                let count = i64::try_from(*count).unwrap_or(i64::MAX);
                sqlx::query(
                    "INSERT INTO downloads (skill, count) VALUES ($1, $2) \
                     ON CONFLICT (skill) DO UPDATE SET count = downloads.count + $2",
                )
                .bind(skill)
                .bind(count)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// `skill`'s total downloads.
    pub async fn download_count(&self, skill: &str) -> Result<u64, DbError> {
        self.run(async {
            let count: Option<i64> = sqlx::query("SELECT count FROM downloads WHERE skill = $1")
                .bind(skill)
                .fetch_optional(&self.pool)
                .await?
                .map(|row| row.try_get(0))
                .transpose()?;
            Ok(count
                .and_then(|count| u64::try_from(count).ok())
                .unwrap_or(0))
        })
        .await
    }

    /// Every skill's total downloads.
    pub async fn downloads(&self) -> Result<BTreeMap<String, u64>, DbError> {
        self.run(async {
            sqlx::query("SELECT skill, count FROM downloads")
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|row| {
                    let count: i64 = row.try_get(1)?;
                    Ok((row.try_get(0)?, u64::try_from(count).unwrap_or(0)))
                })
                .collect()
        })
        .await
    }

    /// Adds the counts a registry kept in `state/downloads.json` before
    /// the database, once; returns false, adding nothing, when they were
    /// imported before.
    pub async fn import_downloads(&self, counts: &BTreeMap<String, u64>) -> Result<bool, DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            let first = sqlx::query(
                "INSERT INTO settings (key, value) VALUES ('downloads-imported', '1') ON CONFLICT (key) DO NOTHING",
            )
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            if !first {
                tx.rollback().await?;
                return Ok(false);
            }
            for (skill, count) in counts {
                sqlx::query(
                    "INSERT INTO downloads (skill, count) VALUES ($1, $2) \
                     ON CONFLICT (skill) DO UPDATE SET count = downloads.count + $2",
                )
                .bind(skill)
                .bind(i64::try_from(*count).unwrap_or(i64::MAX))
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(true)
        })
        .await
    }
}
