//! Versions in the database: the authority on what is published, so that
//! any number of servers sharing one database publish each name@version
//! exactly once and lose no index line (docs/registry.md, "At scale").
//!
//! A publish [claims](Db::claim_version) its row, writes its objects, then
//! [commits](Db::commit_version): the row becomes published and the index
//! file's revision goes up, with the audit event, in one transaction. The
//! index file is then rendered from the rows ([`Db::index_lines`]) and
//! written; its writer checks afterwards that no newer revision was
//! committed meanwhile, and writes again when one was, so the last write of
//! every index file is of its newest revision.

use sqlx::Row as _;

use super::{Db, DbError, NewEvent, insert_event};

/// What claiming a version gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Claim {
    /// The row is this publish's: write the objects, then commit.
    Claimed,
    /// The version is published (as `version`, which may differ in build
    /// metadata).
    Published { version: String },
    /// Another publish of it is under way (and has not expired).
    Busy,
}

/// An index file's lines as the database has them, at a revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexLines {
    pub revision: i64,
    /// The index lines (JSON), in publish order.
    pub lines: Vec<String>,
}

/// What the search index and the discovery index list of a skill: its
/// newest version that is not yanked, and how many versions it has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogRow {
    pub skill: String,
    pub version: String,
    pub description: String,
    pub cksum: String,
    pub versions: i64,
}

/// The revisions of some bins of the search index, as read together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BinRevisions {
    /// Each bin that has a revision, and it, by bin.
    pub bins: Vec<(i32, i64)>,
    /// Those of them last written at an older revision.
    pub lagging: Vec<(i32, i64)>,
}

impl BinRevisions {
    /// Whether `other` holds the same revisions (whether or not either
    /// lags).
    pub fn same(&self, other: &Self) -> bool {
        self.bins == other.bins
    }
}

/// Makes a skill's [`CatalogRow`] from its index lines (`None`: every
/// version is yanked); an error for a line it cannot read.
pub type Summarise = fn(skill: &str, lines: &[String]) -> Result<Option<CatalogRow>, String>;

/// The lookup keys of a name (`confusable::lookup_keys`).
pub type LookupKeys = fn(skill: &str) -> Vec<String>;

/// What the database keeps beside a skill's index lines, and how it is
/// made from them: the registry's formats, which the database does not
/// know.
#[derive(Clone, Copy, Debug)]
pub struct Derived {
    pub summarise: Summarise,
    pub lookup_keys: LookupKeys,
}

/// Milliseconds since 1970.
pub fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

impl Db {
    /// Claims `skill@version` (`precedence`: the version without build
    /// metadata) for the publish `claim` of the archive `cksum`. A claim
    /// older than `expired_before` (milliseconds since 1970) is taken over:
    /// its publish died.
    pub async fn claim_version(
        &self,
        skill: &str,
        precedence: &str,
        version: &str,
        cksum: &str,
        claim: &str,
        expired_before: i64,
    ) -> Result<Claim, DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            let inserted = sqlx::query(
                "INSERT INTO versions (skill, precedence, version, cksum, state, claim, claimed_at) \
                 VALUES ($1, $2, $3, $4, 'claimed', $5, $6) \
                 ON CONFLICT (skill, precedence) DO NOTHING",
            )
            .bind(skill)
            .bind(precedence)
            .bind(version)
            .bind(cksum)
            .bind(claim)
            .bind(now_ms())
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            if inserted {
                tx.commit().await?;
                return Ok(Claim::Claimed);
            }
            // Taken over only if expired, in one statement: of two
            // takers, one.
            let taken = sqlx::query(
                "UPDATE versions SET version = $3, cksum = $4, claim = $5, claimed_at = $6 \
                 WHERE skill = $1 AND precedence = $2 AND state = 'claimed' AND claimed_at < $7",
            )
            .bind(skill)
            .bind(precedence)
            .bind(version)
            .bind(cksum)
            .bind(claim)
            .bind(now_ms())
            .bind(expired_before)
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            if taken {
                tx.commit().await?;
                return Ok(Claim::Claimed);
            }
            let row = sqlx::query(
                "SELECT state, version FROM versions WHERE skill = $1 AND precedence = $2",
            )
            .bind(skill)
            .bind(precedence)
            .fetch_optional(&mut *tx)
            .await?;
            tx.commit().await?;
            Ok(match row {
                Some(row) if row.try_get::<String, _>(0)? == "published" => Claim::Published {
                    version: row.try_get(1)?,
                },
                // Claimed by another, or released between the statements:
                // either way, not this publish's.
                _ => Claim::Busy,
            })
        })
        .await
    }

    /// Gives up the claim `claim` of `skill@precedence` (its publish
    /// failed before it committed).
    pub async fn release_claim(
        &self,
        skill: &str,
        precedence: &str,
        claim: &str,
    ) -> Result<(), DbError> {
        self.run(async {
            sqlx::query(
                "DELETE FROM versions WHERE skill = $1 AND precedence = $2 AND claim = $3 AND state = 'claimed'",
            )
            .bind(skill)
            .bind(precedence)
            .bind(claim)
            .execute(&self.pool)
            .await?;
            Ok(())
        })
        .await
    }

    /// Publishes the claimed `skill@precedence` with its index line
    /// `record`, and records `event`, in one transaction. Returns the index
    /// file's new revision, or `None` (changing nothing) when the claim is
    /// no longer `claim`'s: it expired and was taken over.
    pub async fn commit_version(
        &self,
        skill: &str,
        precedence: &str,
        claim: &str,
        record: &str,
        event: &NewEvent<'_>,
        derived: Derived,
    ) -> Result<Option<i64>, DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            let revision = bump(&mut tx, skill).await?;
            let published = sqlx::query(
                "UPDATE versions SET state = 'published', record = $4, seq = $5 \
                 WHERE skill = $1 AND precedence = $2 AND claim = $3 AND state = 'claimed'",
            )
            .bind(skill)
            .bind(precedence)
            .bind(claim)
            .bind(record)
            .bind(revision)
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            if !published {
                tx.rollback().await?;
                return Ok(None);
            }
            refresh_catalog(&mut tx, skill, derived.summarise).await?;
            if revision == 1 {
                insert_lookup_keys(&mut tx, skill, derived.lookup_keys).await?;
            }
            insert_event(&mut tx, event).await?;
            tx.commit().await?;
            Ok(Some(revision))
        })
        .await
    }

    /// Replaces the index line of the published `skill@version` with what
    /// `change` makes of it, and records `event`, in one transaction.
    /// Returns the new line and the index file's new revision, or `None`
    /// (changing nothing) when that version is not published.
    pub async fn change_line(
        &self,
        skill: &str,
        version: &str,
        change: impl FnOnce(&str) -> Result<String, serde_json::Error>,
        event: &NewEvent<'_>,
        summarise: Summarise,
    ) -> Result<Option<(String, i64)>, DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            // The write first: the lock, so two changes of one line do
            // not interleave.
            let revision = bump(&mut tx, skill).await?;
            let row = sqlx::query(
                "SELECT record, precedence FROM versions \
                 WHERE skill = $1 AND version = $2 AND state = 'published'",
            )
            .bind(skill)
            .bind(version)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(row) = row else {
                tx.rollback().await?;
                return Ok(None);
            };
            let line: String = row.try_get(0)?;
            let precedence: String = row.try_get(1)?;
            let changed = change(&line).map_err(|error| {
                sqlx::Error::Decode(format!("the index line of {skill}@{version}: {error}").into())
            })?;
            sqlx::query("UPDATE versions SET record = $3 WHERE skill = $1 AND precedence = $2")
                .bind(skill)
                .bind(precedence)
                .bind(&changed)
                .execute(&mut *tx)
                .await?;
            refresh_catalog(&mut tx, skill, summarise).await?;
            insert_event(&mut tx, event).await?;
            tx.commit().await?;
            Ok(Some((changed, revision)))
        })
        .await
    }

    /// The published lines of `skill`'s index file, at its revision: the
    /// revision is read first, so the lines are of it or newer.
    pub async fn index_lines(&self, skill: &str) -> Result<IndexLines, DbError> {
        self.run(async {
            let revision = self.revision_of(skill).await?;
            let lines = sqlx::query(
                "SELECT record FROM versions WHERE skill = $1 AND state = 'published' ORDER BY seq",
            )
            .bind(skill)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| row.try_get(0))
            .collect::<Result<_, _>>()?;
            Ok(IndexLines { revision, lines })
        })
        .await
    }

    /// The revision of `skill`'s index file (0 for none).
    pub async fn index_revision(&self, skill: &str) -> Result<i64, DbError> {
        self.run(self.revision_of(skill)).await
    }

    async fn revision_of(&self, skill: &str) -> Result<i64, sqlx::Error> {
        Ok(
            sqlx::query("SELECT revision FROM index_files WHERE skill = $1")
                .bind(skill)
                .fetch_optional(&self.pool)
                .await?
                .map(|row| row.try_get(0))
                .transpose()?
                .unwrap_or(0),
        )
    }

    /// Notes that `skill`'s index file was written at `revision`.
    pub async fn mark_rendered(&self, skill: &str, revision: i64) -> Result<(), DbError> {
        self.run(async {
            sqlx::query("UPDATE index_files SET rendered = $2 WHERE skill = $1 AND rendered < $2")
                .bind(skill)
                .bind(revision)
                .execute(&self.pool)
                .await?;
            Ok(())
        })
        .await
    }

    /// The skills whose index file in the tree lags its revision: a
    /// server stopped between a commit and the write.
    pub async fn unrendered(&self) -> Result<Vec<String>, DbError> {
        self.run(async {
            sqlx::query("SELECT skill FROM index_files WHERE rendered < revision ORDER BY skill")
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|row| row.try_get(0))
                .collect()
        })
        .await
    }

    /// The revision of the whole index: bumped by every change of a line.
    pub async fn index_counter(&self) -> Result<i64, DbError> {
        self.run(self.counter("index")).await
    }

    /// The value of the counter `name`.
    pub(super) async fn counter(&self, name: &str) -> Result<i64, sqlx::Error> {
        sqlx::query("SELECT value FROM counters WHERE name = $1")
            .bind(name)
            .fetch_one(&self.pool)
            .await?
            .try_get(0)
    }

    /// The value of the counter `name`, a shard count.
    pub(super) async fn shard_counter(&self, name: &str) -> Result<u32, sqlx::Error> {
        Ok(u32::try_from(self.counter(name).await?).unwrap_or(0))
    }

    /// Every published line, by skill and in publish order: what the
    /// aggregate files are made of.
    pub async fn all_lines(&self) -> Result<Vec<(String, String)>, DbError> {
        self.run(async {
            sqlx::query(
                "SELECT skill, record FROM versions WHERE state = 'published' ORDER BY skill, seq",
            )
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
            .collect()
        })
        .await
    }

    /// The catalog rows of the bins `bins`, by name, each with its
    /// download count, and the bins' revisions, read first: the rows are
    /// of these revisions or newer.
    pub async fn search_shard(
        &self,
        bins: std::ops::RangeInclusive<u8>,
    ) -> Result<(BinRevisions, Vec<(CatalogRow, u64)>), DbError> {
        self.run(async {
            let revisions = self.bin_revisions(bins.clone()).await?;
            let rows = sqlx::query(
                "SELECT c.skill, c.version, c.description, c.cksum, c.versions, d.count \
                 FROM catalog c LEFT JOIN downloads d ON d.skill = c.skill \
                 WHERE c.bin BETWEEN $1 AND $2 ORDER BY c.skill",
            )
            .bind(i32::from(*bins.start()))
            .bind(i32::from(*bins.end()))
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| {
                let downloads: Option<i64> = row.try_get(5)?;
                Ok((
                    CatalogRow {
                        skill: row.try_get(0)?,
                        version: row.try_get(1)?,
                        description: row.try_get(2)?,
                        cksum: row.try_get(3)?,
                        versions: row.try_get(4)?,
                    },
                    downloads
                        .and_then(|count| u64::try_from(count).ok())
                        .unwrap_or(0),
                ))
            })
            .collect::<Result<_, sqlx::Error>>()?;
            Ok((revisions, rows))
        })
        .await
    }

    /// The revisions of the bins `bins` that have one.
    pub async fn search_bins(
        &self,
        bins: std::ops::RangeInclusive<u8>,
    ) -> Result<BinRevisions, DbError> {
        self.run(self.bin_revisions(bins)).await
    }

    async fn bin_revisions(
        &self,
        bins: std::ops::RangeInclusive<u8>,
    ) -> Result<BinRevisions, sqlx::Error> {
        let rows = sqlx::query(
            "SELECT bin, revision, rendered FROM search_bins WHERE bin BETWEEN $1 AND $2 ORDER BY bin",
        )
        .bind(i32::from(*bins.start()))
        .bind(i32::from(*bins.end()))
        .fetch_all(&self.pool)
        .await?;
        let mut revisions = BinRevisions::default();
        for row in rows {
            let bin: i32 = row.try_get(0)?;
            let revision: i64 = row.try_get(1)?;
            let rendered: i64 = row.try_get(2)?;
            revisions.bins.push((bin, revision));
            if rendered < revision {
                revisions.lagging.push((bin, revision));
            }
        }
        Ok(revisions)
    }

    /// Notes that the shard of the bins `written` was written at their
    /// revisions: those that lagged, in one transaction (a shard of a small
    /// registry holds all 256 bins, of which a publish changed one).
    pub async fn mark_bins_rendered(&self, written: &BinRevisions) -> Result<(), DbError> {
        if written.lagging.is_empty() {
            return Ok(());
        }
        self.run(async {
            let mut tx = self.pool.begin().await?;
            for (bin, revision) in &written.lagging {
                sqlx::query(
                    "UPDATE search_bins SET rendered = $2 WHERE bin = $1 AND rendered < $2",
                )
                .bind(bin)
                .bind(revision)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// The bins whose shard in the tree lags their revision: a server
    /// stopped between a commit and the write.
    pub async fn unrendered_bins(&self) -> Result<Vec<u8>, DbError> {
        self.run(async {
            sqlx::query("SELECT bin FROM search_bins WHERE rendered < revision ORDER BY bin")
                .fetch_all(&self.pool)
                .await?
                .iter()
                .map(|row| {
                    let bin: i32 = row.try_get(0)?;
                    Ok(u8::try_from(bin).unwrap_or(u8::MAX))
                })
                .collect()
        })
        .await
    }

    /// How many shards the search index has (0: not decided yet), and how
    /// many `search.json` says it has.
    pub async fn search_shards(&self) -> Result<(u32, u32), DbError> {
        self.run(async {
            Ok((
                self.shard_counter("search_shards").await?,
                self.shard_counter("search_shards_written").await?,
            ))
        })
        .await
    }

    /// Decides that the search index has `shards` shards, when it has
    /// `from`; returns whether it did (another server may have first).
    pub async fn decide_search_shards(&self, from: u32, shards: u32) -> Result<bool, DbError> {
        self.run(async {
            Ok(sqlx::query(
                "UPDATE counters SET value = $2 WHERE name = 'search_shards' AND value = $1",
            )
            .bind(i64::from(from))
            .bind(i64::from(shards))
            .execute(&self.pool)
            .await?
            .rows_affected()
                == 1)
        })
        .await
    }

    /// Notes that `search.json` says there are `shards` shards, unless
    /// another count was decided meanwhile.
    pub async fn mark_search_shards_written(&self, shards: u32) -> Result<(), DbError> {
        self.run(async {
            sqlx::query(
                "UPDATE counters SET value = $1 WHERE name = 'search_shards_written' \
                 AND (SELECT value FROM counters WHERE name = 'search_shards') = $1",
            )
            .bind(i64::from(shards))
            .execute(&self.pool)
            .await?;
            Ok(())
        })
        .await
    }

    /// How many skills the catalog lists.
    pub async fn catalog_size(&self) -> Result<usize, DbError> {
        self.run(async {
            let count: i64 = sqlx::query("SELECT COUNT(*) FROM catalog")
                .fetch_one(&self.pool)
                .await?
                .try_get(0)?;
            Ok(usize::try_from(count).unwrap_or(0))
        })
        .await
    }

    /// Every skill's catalog row, by name.
    pub async fn catalog(&self) -> Result<Vec<CatalogRow>, DbError> {
        self.run(async {
            sqlx::query(
                "SELECT skill, version, description, cksum, versions FROM catalog ORDER BY skill",
            )
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| {
                Ok(CatalogRow {
                    skill: row.try_get(0)?,
                    version: row.try_get(1)?,
                    description: row.try_get(2)?,
                    cksum: row.try_get(3)?,
                    versions: row.try_get(4)?,
                })
            })
            .collect()
        })
        .await
    }

    /// Fills what is derived from the published lines (the catalog, the
    /// names' lookup keys) for the versions recorded before it existed,
    /// once each; returns whether it filled anything.
    pub async fn fill_derived(&self, derived: Derived) -> Result<bool, DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            // The writes first: of two servers starting at once, one fills.
            let catalog = take_once(&mut tx, "catalog").await?;
            let lookup_keys = take_once(&mut tx, "name_keys").await?;
            if !catalog && !lookup_keys {
                tx.rollback().await?;
                return Ok(false);
            }
            let skills: Vec<String> = sqlx::query(
                "SELECT DISTINCT skill FROM versions WHERE state = 'published' ORDER BY skill",
            )
            .fetch_all(&mut *tx)
            .await?
            .iter()
            .map(|row| row.try_get(0))
            .collect::<Result<_, _>>()?;
            for skill in &skills {
                if catalog {
                    refresh_catalog(&mut tx, skill, derived.summarise).await?;
                }
                if lookup_keys {
                    insert_lookup_keys(&mut tx, skill, derived.lookup_keys).await?;
                }
            }
            tx.commit().await?;
            Ok(true)
        })
        .await
    }

    /// The published names filed under any of `keys`: those a name with
    /// these lookup keys may resemble.
    pub async fn names_under(&self, keys: &[String]) -> Result<Vec<String>, DbError> {
        self.run(async {
            let mut names = std::collections::BTreeSet::new();
            // One statement for a name's keys (a few dozen), not one a key.
            for chunk in keys.chunks(KEYS_A_STATEMENT) {
                let sql = format!(
                    "SELECT skill FROM name_keys WHERE key IN ({})",
                    placeholders(chunk.len(), 1)
                );
                let mut query = sqlx::query(&sql);
                for key in chunk {
                    query = query.bind(key);
                }
                for row in query.fetch_all(&self.pool).await? {
                    names.insert(row.try_get::<String, _>(0)?);
                }
            }
            Ok(names.into_iter().collect())
        })
        .await
    }

    /// Whether any version was ever recorded here.
    pub async fn has_versions(&self) -> Result<bool, DbError> {
        self.run(async {
            Ok(sqlx::query("SELECT 1 FROM versions LIMIT 1")
                .fetch_optional(&self.pool)
                .await?
                .is_some())
        })
        .await
    }

    /// The versions claimed before `before` (milliseconds since 1970) and
    /// never published: `(skill, version, claim)`.
    pub async fn stale_claims(
        &self,
        before: i64,
    ) -> Result<Vec<(String, String, String)>, DbError> {
        self.run(async {
            sqlx::query(
                "SELECT skill, version, claim FROM versions WHERE state = 'claimed' AND claimed_at < $1",
            )
            .bind(before)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(|row| Ok((row.try_get(0)?, row.try_get(1)?, row.try_get(2)?)))
            .collect()
        })
        .await
    }

    /// Records the versions of a tree that predates this table, as
    /// published, in one transaction, once: `(skill, precedence, version,
    /// cksum, line)` in each skill's publish order. Returns false,
    /// importing nothing, when any version is recorded already.
    pub async fn import_versions(
        &self,
        versions: &[(String, String, String, String, String)],
        from: &str,
    ) -> Result<bool, DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            // The write first, for the lock: two servers starting at once
            // import once.
            sqlx::query("UPDATE counters SET value = value + 1 WHERE name = 'index'")
                .execute(&mut *tx)
                .await?;
            if sqlx::query("SELECT 1 FROM versions LIMIT 1")
                .fetch_optional(&mut *tx)
                .await?
                .is_some()
            {
                tx.rollback().await?;
                return Ok(false);
            }
            let mut skills = std::collections::BTreeMap::<&str, i64>::new();
            for (skill, precedence, version, cksum, line) in versions {
                let seq = skills.entry(skill).or_default();
                *seq += 1;
                sqlx::query(
                    "INSERT INTO versions (skill, precedence, version, cksum, state, claim, claimed_at, record, seq) \
                     VALUES ($1, $2, $3, $4, 'published', 'import', $5, $6, $7)",
                )
                .bind(skill)
                .bind(precedence)
                .bind(version)
                .bind(cksum)
                .bind(now_ms())
                .bind(line)
                .bind(*seq)
                .execute(&mut *tx)
                .await?;
            }
            // The catalog and the lookup keys are filled from them next.
            sqlx::query("UPDATE counters SET value = 0 WHERE name IN ('catalog', 'name_keys')")
                .execute(&mut *tx)
                .await?;
            for (skill, seq) in &skills {
                sqlx::query(
                    "INSERT INTO index_files (skill, revision, rendered) VALUES ($1, $2, $2)",
                )
                .bind(skill)
                .bind(seq)
                .execute(&mut *tx)
                .await?;
            }
            insert_event(
                &mut tx,
                &NewEvent {
                    actor: super::ADMIN,
                    action: "import",
                    detail: Some(format!(
                        "{} versions of {} skills from the index files of {from}",
                        versions.len(),
                        skills.len()
                    )),
                    ..NewEvent::default()
                },
            )
            .await?;
            tx.commit().await?;
            Ok(true)
        })
        .await
    }
}

/// Bumps the revision of `skill`'s index file and of the whole index, in
/// `tx`; returns the index file's new revision. Being a write, it takes
/// the locks that order the transaction's reads.
async fn bump(tx: &mut sqlx::Transaction<'_, sqlx::Any>, skill: &str) -> Result<i64, sqlx::Error> {
    let revision = sqlx::query(
        "INSERT INTO index_files (skill, revision, rendered) VALUES ($1, 1, 0) \
         ON CONFLICT (skill) DO UPDATE SET revision = index_files.revision + 1 \
         RETURNING revision",
    )
    .bind(skill)
    .fetch_one(&mut **tx)
    .await?
    .try_get(0)?;
    sqlx::query("UPDATE counters SET value = value + 1 WHERE name = 'index'")
        .execute(&mut **tx)
        .await?;
    Ok(revision)
}

/// Writes `skill`'s catalog row from its published lines, in `tx`.
async fn refresh_catalog(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    skill: &str,
    summarise: Summarise,
) -> Result<(), sqlx::Error> {
    let lines: Vec<String> = sqlx::query(
        "SELECT record FROM versions WHERE skill = $1 AND state = 'published' ORDER BY seq",
    )
    .bind(skill)
    .fetch_all(&mut **tx)
    .await?
    .iter()
    .map(|row| row.try_get(0))
    .collect::<Result<_, _>>()?;
    let row = summarise(skill, &lines).map_err(|error| sqlx::Error::Decode(error.into()))?;
    // Its bin's revision goes up: the search shard that lists it is
    // written again.
    let bin = i32::from(skillpkg_index::registry::search_bin(skill));
    sqlx::query(
        "INSERT INTO search_bins (bin, revision, rendered) VALUES ($1, 1, 0) \
         ON CONFLICT (bin) DO UPDATE SET revision = search_bins.revision + 1",
    )
    .bind(bin)
    .execute(&mut **tx)
    .await?;
    match row {
        Some(row) => {
            sqlx::query(
                "INSERT INTO catalog (skill, version, description, cksum, versions, bin) \
                 VALUES ($1, $2, $3, $4, $5, $6) \
                 ON CONFLICT (skill) DO UPDATE SET version = $2, description = $3, cksum = $4, versions = $5, bin = $6",
            )
            .bind(skill)
            .bind(&row.version)
            .bind(&row.description)
            .bind(&row.cksum)
            .bind(row.versions)
            .bind(bin)
            .execute(&mut **tx)
            .await?;
        }
        None => {
            sqlx::query("DELETE FROM catalog WHERE skill = $1")
                .bind(skill)
                .execute(&mut **tx)
                .await?;
        }
    }
    Ok(())
}

/// Files `skill` under its lookup keys, in `tx`: one statement for a
/// name's keys.
async fn insert_lookup_keys(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    skill: &str,
    lookup_keys: LookupKeys,
) -> Result<(), sqlx::Error> {
    let keys = lookup_keys(skill);
    for chunk in keys.chunks(KEYS_A_STATEMENT) {
        let rows: Vec<String> = (0..chunk.len())
            .map(|index| format!("(${}, $1)", index + 2))
            .collect();
        let sql = format!(
            "INSERT INTO name_keys (key, skill) VALUES {} ON CONFLICT DO NOTHING",
            rows.join(", ")
        );
        let mut query = sqlx::query(&sql).bind(skill);
        for key in chunk {
            query = query.bind(key);
        }
        query.execute(&mut **tx).await?;
    }
    Ok(())
}

/// The most lookup keys bound in one statement.
const KEYS_A_STATEMENT: usize = 200;

/// `$first, $first+1, ...`: `count` numbered placeholders.
fn placeholders(count: usize, first: usize) -> String {
    (first..first + count)
        .map(|index| format!("${index}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Sets the counter `name` from 0 to 1 in `tx`; returns whether it was 0:
/// whether this transaction does what the counter says was not done yet.
pub(super) async fn take_once(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    name: &str,
) -> Result<bool, sqlx::Error> {
    Ok(
        sqlx::query("UPDATE counters SET value = 1 WHERE name = $1 AND value = 0")
            .bind(name)
            .execute(&mut **tx)
            .await?
            .rows_affected()
            == 1,
    )
}
