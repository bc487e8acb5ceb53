//! What signed metadata needs of the database (docs/registry.md, "At
//! scale"): which files were written since the last signing, and a lease
//! that makes one server at a time the signer.

use sqlx::Row as _;

use super::{Db, DbError};

/// The files written since the last signing, each with the revision it
/// was written at (read before the files are, so a newer write is signed
/// at the next signing).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unsigned {
    /// Skills whose index file was written.
    pub index_files: Vec<(String, i64)>,
    /// Skills whose keys file was written.
    pub keys_files: Vec<(String, i64)>,
    /// Bins of the search index whose shard was written.
    pub bins: Vec<(i32, i64)>,
    /// The shard count `search.json` names (0: none yet).
    pub shards_written: u32,
    /// The shard count `search.json` names, and the one last signed (0:
    /// none), when they differ.
    pub shards: Option<(u32, u32)>,
}

impl Unsigned {
    /// Whether nothing was written since the last signing.
    pub fn is_empty(&self) -> bool {
        self.index_files.is_empty()
            && self.keys_files.is_empty()
            && self.bins.is_empty()
            && self.shards.is_none()
    }
}

impl Db {
    /// The files written since the last signing.
    pub async fn unsigned(&self) -> Result<Unsigned, DbError> {
        self.run(async {
            let pairs = |sql: &'static str| async move {
                sqlx::query(sql)
                    .fetch_all(&self.pool)
                    .await?
                    .iter()
                    .map(|row| Ok((row.try_get::<String, _>(0)?, row.try_get::<i64, _>(1)?)))
                    .collect::<Result<Vec<_>, sqlx::Error>>()
            };
            let index_files =
                pairs("SELECT skill, rendered FROM index_files WHERE signed < rendered").await?;
            let keys_files =
                pairs("SELECT skill, rendered FROM keys_files WHERE signed < rendered").await?;
            let bins = sqlx::query("SELECT bin, rendered FROM search_bins WHERE signed < rendered")
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|row| Ok((row.try_get::<i32, _>(0)?, row.try_get::<i64, _>(1)?)))
                .collect::<Result<Vec<_>, sqlx::Error>>()?;
            let written = self.shard_counter("search_shards_written").await?;
            let signed = self.shard_counter("search_shards_signed").await?;
            Ok(Unsigned {
                index_files,
                keys_files,
                bins,
                shards_written: written,
                shards: (written != signed).then_some((written, signed)),
            })
        })
        .await
    }

    /// Notes that the files of `unsigned` were signed at the revisions it
    /// holds.
    pub async fn mark_signed(&self, unsigned: &Unsigned) -> Result<(), DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            for (skill, revision) in &unsigned.index_files {
                sqlx::query("UPDATE index_files SET signed = $2 WHERE skill = $1 AND signed < $2")
                    .bind(skill)
                    .bind(revision)
                    .execute(&mut *tx)
                    .await?;
            }
            for (skill, revision) in &unsigned.keys_files {
                sqlx::query("UPDATE keys_files SET signed = $2 WHERE skill = $1 AND signed < $2")
                    .bind(skill)
                    .bind(revision)
                    .execute(&mut *tx)
                    .await?;
            }
            for (bin, revision) in &unsigned.bins {
                sqlx::query("UPDATE search_bins SET signed = $2 WHERE bin = $1 AND signed < $2")
                    .bind(bin)
                    .bind(revision)
                    .execute(&mut *tx)
                    .await?;
            }
            if let Some((written, _)) = unsigned.shards {
                sqlx::query("UPDATE counters SET value = $1 WHERE name = 'search_shards_signed'")
                    .bind(i64::from(written))
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// Notes that every file was signed as it is now: after a signing
    /// that hashed the whole tree.
    pub async fn mark_all_signed(&self) -> Result<(), DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            for sql in [
                "UPDATE index_files SET signed = rendered WHERE signed < rendered",
                "UPDATE keys_files SET signed = rendered WHERE signed < rendered",
                "UPDATE search_bins SET signed = rendered WHERE signed < rendered",
                "UPDATE counters SET value = (SELECT value FROM counters WHERE name = 'search_shards_written') \
                 WHERE name = 'search_shards_signed'",
            ] {
                sqlx::query(sql).execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// Takes the signing lease for `holder` until `expires_at`
    /// (milliseconds since 1970) when nobody holds it or its holder's
    /// expired; returns whether it did.
    pub async fn take_signing_lease(
        &self,
        holder: &str,
        now: i64,
        expires_at: i64,
    ) -> Result<bool, DbError> {
        self.run(async {
            Ok(sqlx::query(
                "UPDATE signing_lease SET holder = $1, expires_at = $2 \
                 WHERE id = 1 AND (holder IS NULL OR expires_at < $3)",
            )
            .bind(holder)
            .bind(expires_at)
            .bind(now)
            .execute(&self.pool)
            .await?
            .rows_affected()
                == 1)
        })
        .await
    }

    /// Gives the signing lease up, when `holder` holds it.
    pub async fn release_signing_lease(&self, holder: &str) -> Result<(), DbError> {
        self.run(async {
            sqlx::query("UPDATE signing_lease SET holder = NULL, expires_at = 0 WHERE id = 1 AND holder = $1")
                .bind(holder)
                .execute(&self.pool)
                .await?;
            Ok(())
        })
        .await
    }
}
