//! The registry's database: tokens, owners, the audit trail, and the
//! versions ([`versions`]).
//!
//! SQLite (a file in the state folder) by default, PostgreSQL at scale
//! (`--database postgres://...`), through `sqlx`'s `any` driver: one set of
//! queries, written in the SQL both engines speak (`$1` parameters,
//! `ON CONFLICT`, `RETURNING`), and a folder of migrations per engine
//! (`registry-server/migrations/`), applied at open. Every change that reads
//! before it writes starts with a write, so that on SQLite it holds the
//! database's write lock from its first statement and on PostgreSQL the row
//! lock of what it changes: two servers, or a server and an admin command,
//! never interleave one.

mod downloads;
mod keys;
mod signing;
mod versions;

use std::path::Path;
use std::time::Duration;

use skillpkg_index::checksum::Checksum;
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{AnyPool, Row as _};

pub use keys::{KeyIdRow, KeysChange, KeysRow, TakenId};
pub use signing::Unsigned;
pub use versions::{
    BinRevisions, CatalogRow, Claim, Derived, IndexLines, LookupKeys, Summarise, now_ms,
};

/// Which engine a database runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    Sqlite,
    Postgres,
}

/// A stored token: who it is for, never the token itself.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TokenRecord {
    pub id: String,
    pub user: String,
    pub hash: Checksum,
    pub created: String,
}

/// One line of the audit trail.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Event {
    /// Its place in the trail, from 1.
    pub seq: i64,
    /// When, RFC 3339 in UTC with whole seconds.
    pub at: String,
    /// The user whose token made the change, or `(admin)` for the
    /// `skillpkg-registry` commands.
    pub actor: String,
    /// What was done: `publish`, `yank`, `unyank`, `owners`, `keys`,
    /// `token-create`, `token-revoke`, `import`.
    pub action: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skill: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// An event to record: [`Event`] before it has a place and a time.
#[derive(Clone, Debug, Default)]
pub struct NewEvent<'a> {
    pub actor: &'a str,
    pub action: &'a str,
    pub skill: Option<&'a str>,
    pub version: Option<&'a str>,
    pub detail: Option<String>,
}

/// What a change of a skill's owners came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnersChange {
    /// Made: the owners after it, in the order they were added.
    Changed(Vec<String>),
    /// Not made: it would leave the skill without an owner.
    LastOwner,
    /// Not made: this owner to add is not a user of the registry.
    UnknownUser(String),
}

/// The actor of the admin commands in the audit trail.
pub const ADMIN: &str = "(admin)";

/// Why the database could not be opened or used.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("`{url}` is not a database URL: use sqlite://PATH or postgres://USER@HOST/DB")]
    BadUrl { url: String },
    #[error("cannot open the database {url}")]
    Connect {
        url: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("cannot bring the database {url} up to date")]
    Migrate {
        url: String,
        #[source]
        source: sqlx::migrate::MigrateError,
    },
    #[error("database error on {db}")]
    Query {
        db: String,
        #[source]
        source: sqlx::Error,
    },
}

/// The registry's database.
#[derive(Clone, Debug)]
pub struct Db {
    pool: AnyPool,
    engine: Engine,
    /// What errors call it: the URL without its password.
    label: String,
}

/// The SQLite URL of the database file `path`, created if missing.
pub fn sqlite_url(path: &Path, read_only: bool) -> String {
    /// What a path in a URL may hold as it is.
    const KEPT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'/')
        .remove(b'.')
        .remove(b'-')
        .remove(b'_')
        .remove(b'~');
    let encoded = percent_encoding::utf8_percent_encode(&path.to_string_lossy(), KEPT).to_string();
    let mode = if read_only { "ro" } else { "rwc" };
    format!("sqlite://{encoded}?mode={mode}")
}

/// `url` without its password, for messages and logs.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        _ => url.to_owned(),
    }
}

impl Db {
    /// Opens the database at `url` (`sqlite://PATH?mode=rwc`, or
    /// `postgres://...`) and applies the migrations it lacks; a read-only
    /// SQLite database (`mode=ro`) is used as it is.
    pub async fn open(url: &str) -> Result<Self, DbError> {
        install_default_drivers();
        let engine = if url.starts_with("sqlite:") {
            Engine::Sqlite
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Engine::Postgres
        } else {
            return Err(DbError::BadUrl { url: redact(url) });
        };
        let read_only = engine == Engine::Sqlite && url.contains("mode=ro");
        let connect = |source| DbError::Connect {
            url: redact(url),
            source,
        };
        // An in-memory database lives as long as a connection to it: one,
        // kept for good.
        let in_memory = url.contains(":memory:");
        let pool = AnyPoolOptions::new()
            .max_connections(match engine {
                _ if in_memory => 1,
                // One writer at a time anyway; a few readers beside it.
                Engine::Sqlite => 4,
                Engine::Postgres => 16,
            })
            .min_connections(u32::from(in_memory))
            .idle_timeout((!in_memory).then_some(Duration::from_secs(600)))
            .max_lifetime((!in_memory).then_some(Duration::from_secs(1800)))
            .acquire_timeout(Duration::from_secs(10))
            .connect(url)
            .await
            .map_err(connect)?;
        let label = match engine {
            Engine::Sqlite => url
                .strip_prefix("sqlite://")
                .map(|path| path.split('?').next().unwrap_or(path))
                .and_then(|path| {
                    percent_encoding::percent_decode_str(path)
                        .decode_utf8()
                        .ok()
                })
                .map_or_else(|| url.to_owned(), |path| path.into_owned()),
            Engine::Postgres => redact(url),
        };
        let db = Self {
            pool,
            engine,
            label,
        };
        if !read_only {
            let migrator = match engine {
                Engine::Sqlite => sqlx::migrate!("./migrations/sqlite"),
                Engine::Postgres => sqlx::migrate!("./migrations/postgres"),
            };
            migrator
                .run(&db.pool)
                .await
                .map_err(|source| DbError::Migrate {
                    url: redact(url),
                    source,
                })?;
        }
        Ok(db)
    }

    /// An empty database in memory, for a server that has no state of its
    /// own (a mirror that nobody made tokens for).
    pub async fn in_memory() -> Result<Self, DbError> {
        Self::open("sqlite::memory:").await
    }

    /// Which engine the database runs on.
    pub fn engine(&self) -> Engine {
        self.engine
    }

    /// Closes every connection, waiting for those in use.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Runs the queries of `work`, naming this database in their error.
    async fn run<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T, DbError> {
        work.await.map_err(|source| DbError::Query {
            db: self.label.clone(),
            source,
        })
    }

    /// Creates a token record for `user` with the token's `hash`.
    pub async fn create_token(&self, user: &str, hash: &Checksum) -> Result<TokenRecord, DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            let next: i64 = sqlx::query(
                "UPDATE counters SET value = value + 1 WHERE name = 'token' RETURNING value",
            )
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
            let record = TokenRecord {
                id: format!("t{next}"),
                user: user.to_owned(),
                hash: *hash,
                created: now(),
            };
            sqlx::query(
                "INSERT INTO tokens (id, user_name, hash, created) VALUES ($1, $2, $3, $4)",
            )
            .bind(&record.id)
            .bind(&record.user)
            .bind(record.hash.to_string())
            .bind(&record.created)
            .execute(&mut *tx)
            .await?;
            insert_user(&mut tx, &record.user, &record.created).await?;
            insert_event(
                &mut tx,
                &NewEvent {
                    actor: ADMIN,
                    action: "token-create",
                    detail: Some(format!("{} for {}", record.id, record.user)),
                    ..NewEvent::default()
                },
            )
            .await?;
            tx.commit().await?;
            Ok(record)
        })
        .await
    }

    /// Lists the tokens, oldest first.
    pub async fn list_tokens(&self) -> Result<Vec<TokenRecord>, DbError> {
        self.run(async {
            let rows = sqlx::query("SELECT id, user_name, hash, created FROM tokens")
                .fetch_all(&self.pool)
                .await?;
            let mut tokens = rows
                .iter()
                .map(token_record)
                .collect::<Result<Vec<_>, _>>()?;
            tokens.sort_by_key(|token| token_number(&token.id));
            Ok(tokens)
        })
        .await
    }

    /// Deletes the token `id`; returns its record, or `None` if there is
    /// none with that id.
    pub async fn revoke_token(&self, id: &str) -> Result<Option<TokenRecord>, DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            let row = sqlx::query(
                "DELETE FROM tokens WHERE id = $1 RETURNING id, user_name, hash, created",
            )
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
            let Some(record) = row.as_ref().map(token_record).transpose()? else {
                return Ok(None);
            };
            insert_event(
                &mut tx,
                &NewEvent {
                    actor: ADMIN,
                    action: "token-revoke",
                    detail: Some(format!("{} of {}", record.id, record.user)),
                    ..NewEvent::default()
                },
            )
            .await?;
            tx.commit().await?;
            Ok(Some(record))
        })
        .await
    }

    /// Returns the user of the token whose SHA-256 is `hash`: one indexed
    /// lookup.
    pub async fn user_of_token(&self, hash: &Checksum) -> Result<Option<String>, DbError> {
        self.run(async {
            let row = sqlx::query("SELECT user_name FROM tokens WHERE hash = $1")
                .bind(hash.to_string())
                .fetch_optional(&self.pool)
                .await?;
            row.map(|row| row.try_get(0)).transpose()
        })
        .await
    }

    /// Returns the owners of `name`, in the order they were added (none for
    /// a name never published).
    pub async fn owners(&self, name: &str) -> Result<Vec<String>, DbError> {
        self.run(async {
            let rows = sqlx::query("SELECT user_name FROM owners WHERE name = $1 ORDER BY seq")
                .bind(name)
                .fetch_all(&self.pool)
                .await?;
            rows.iter()
                .map(|row| row.try_get(0))
                .collect::<Result<_, _>>()
        })
        .await
    }

    /// Makes `user` the owner of `name` if it has none yet, and returns
    /// whether `user` owns it now. Of two first claims of a name, exactly
    /// one wins, whatever the number of servers.
    pub async fn claim(&self, name: &str, user: &str) -> Result<bool, DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            let created = sqlx::query(
                "INSERT INTO skills (name, created) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
            )
            .bind(name)
            .bind(now())
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            if created {
                sqlx::query("INSERT INTO owners (name, user_name, added) VALUES ($1, $2, $3)")
                    .bind(name)
                    .bind(user)
                    .bind(now())
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
                return Ok(true);
            }
            let owns = sqlx::query("SELECT 1 FROM owners WHERE name = $1 AND user_name = $2")
                .bind(name)
                .bind(user)
                .fetch_optional(&mut *tx)
                .await?
                .is_some();
            tx.commit().await?;
            Ok(owns)
        })
        .await
    }

    /// Adds and removes owners of `name` for `actor`; returns the owners
    /// after, or (changing nothing) that none would be left or that an
    /// owner to add is not a user.
    pub async fn change_owners(
        &self,
        actor: &str,
        name: &str,
        add: &[String],
        remove: &[String],
    ) -> Result<OwnersChange, DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            // A write first: the name's row lock (PostgreSQL), the write lock
            // (SQLite), so that two changes of one name do not interleave.
            sqlx::query("UPDATE skills SET name = name WHERE name = $1")
                .bind(name)
                .execute(&mut *tx)
                .await?;
            for user in add {
                // Users are never removed: read in the transaction, the
                // answer holds until it commits.
                let known = sqlx::query("SELECT 1 FROM users WHERE name = $1")
                    .bind(user)
                    .fetch_optional(&mut *tx)
                    .await?
                    .is_some();
                if !known {
                    tx.rollback().await?;
                    return Ok(OwnersChange::UnknownUser(user.clone()));
                }
                sqlx::query(
                    "INSERT INTO owners (name, user_name, added) VALUES ($1, $2, $3) ON CONFLICT (name, user_name) DO NOTHING",
                )
                .bind(name)
                .bind(user)
                .bind(now())
                .execute(&mut *tx)
                .await?;
            }
            for user in remove {
                sqlx::query("DELETE FROM owners WHERE name = $1 AND user_name = $2")
                    .bind(name)
                    .bind(user)
                    .execute(&mut *tx)
                    .await?;
            }
            let owners: Vec<String> =
                sqlx::query("SELECT user_name FROM owners WHERE name = $1 ORDER BY seq")
                    .bind(name)
                    .fetch_all(&mut *tx)
                    .await?
                    .iter()
                    .map(|row| row.try_get(0))
                    .collect::<Result<_, _>>()?;
            if owners.is_empty() {
                tx.rollback().await?;
                return Ok(OwnersChange::LastOwner);
            }
            let mut detail = Vec::new();
            if !add.is_empty() {
                detail.push(format!("added {}", add.join(", ")));
            }
            if !remove.is_empty() {
                detail.push(format!("removed {}", remove.join(", ")));
            }
            insert_event(
                &mut tx,
                &NewEvent {
                    actor,
                    action: "owners",
                    skill: Some(name),
                    detail: Some(detail.join("; ")),
                    ..NewEvent::default()
                },
            )
            .await?;
            tx.commit().await?;
            Ok(OwnersChange::Changed(owners))
        })
        .await
    }

    /// Appends `event` to the audit trail.
    pub async fn record(&self, event: &NewEvent<'_>) -> Result<(), DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            insert_event(&mut tx, event).await?;
            tx.commit().await?;
            Ok(())
        })
        .await
    }

    /// Returns the audit trail, oldest first: every event, or those of one
    /// skill; at most the `limit` newest.
    pub async fn events(&self, skill: Option<&str>, limit: i64) -> Result<Vec<Event>, DbError> {
        self.run(async {
            let query = match skill {
                Some(_) => {
                    "SELECT seq, at, actor, action, skill, version, detail FROM events WHERE skill = $1 ORDER BY seq DESC LIMIT $2"
                }
                None => {
                    "SELECT seq, at, actor, action, skill, version, detail FROM events WHERE $1 = $1 ORDER BY seq DESC LIMIT $2"
                }
            };
            let rows = sqlx::query(query)
                .bind(skill.unwrap_or(""))
                .bind(limit)
                .fetch_all(&self.pool)
                .await?;
            let mut events = rows
                .iter()
                .map(|row| {
                    Ok(Event {
                        seq: row.try_get(0)?,
                        at: row.try_get(1)?,
                        actor: row.try_get(2)?,
                        action: row.try_get(3)?,
                        skill: row.try_get(4)?,
                        version: row.try_get(5)?,
                        detail: row.try_get(6)?,
                    })
                })
                .collect::<Result<Vec<_>, sqlx::Error>>()?;
            events.reverse();
            Ok(events)
        })
        .await
    }

    /// Imports the state of a registry that kept it in JSON files: tokens
    /// (with their ids and hashes) and owners, in one transaction, once.
    /// Returns false, importing nothing, when this database has imported
    /// before.
    pub async fn import(
        &self,
        tokens: &[TokenRecord],
        owners: &[(String, Vec<String>)],
        from: &str,
    ) -> Result<bool, DbError> {
        self.run(async {
            let mut tx = self.pool.begin().await?;
            let first = sqlx::query(
                "INSERT INTO settings (key, value) VALUES ('json-imported', $1) ON CONFLICT (key) DO NOTHING",
            )
            .bind(now())
            .execute(&mut *tx)
            .await?
            .rows_affected()
                == 1;
            if !first {
                tx.rollback().await?;
                return Ok(false);
            }
            let mut highest = 0;
            for token in tokens {
                highest = highest.max(token_number(&token.id));
                sqlx::query(
                    "INSERT INTO tokens (id, user_name, hash, created) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
                )
                .bind(&token.id)
                .bind(&token.user)
                .bind(token.hash.to_string())
                .bind(&token.created)
                .execute(&mut *tx)
                .await?;
                insert_user(&mut tx, &token.user, &token.created).await?;
            }
            sqlx::query("UPDATE counters SET value = $1 WHERE name = 'token' AND value < $1")
                .bind(i64::try_from(highest).unwrap_or(i64::MAX))
                .execute(&mut *tx)
                .await?;
            let at = now();
            for (name, users) in owners {
                sqlx::query(
                    "INSERT INTO skills (name, created) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                )
                .bind(name)
                .bind(&at)
                .execute(&mut *tx)
                .await?;
                // In the file's order, which is the order they were added in.
                for user in users {
                    sqlx::query(
                        "INSERT INTO owners (name, user_name, added) VALUES ($1, $2, $3) ON CONFLICT (name, user_name) DO NOTHING",
                    )
                    .bind(name)
                    .bind(user)
                    .bind(&at)
                    .execute(&mut *tx)
                    .await?;
                    insert_user(&mut tx, user, &at).await?;
                }
            }
            insert_event(
                &mut tx,
                &NewEvent {
                    actor: ADMIN,
                    action: "import",
                    detail: Some(format!(
                        "{} tokens and the owners of {} skills from {from}",
                        tokens.len(),
                        owners.len()
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

/// Now, RFC 3339 in UTC with whole seconds.
fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The number of a token id (`t12` → 12), for ordering; 0 for another form.
fn token_number(id: &str) -> u64 {
    id.strip_prefix('t')
        .and_then(|number| number.parse().ok())
        .unwrap_or(0)
}

fn token_record(row: &sqlx::any::AnyRow) -> Result<TokenRecord, sqlx::Error> {
    let hash: String = row.try_get(2)?;
    Ok(TokenRecord {
        id: row.try_get(0)?,
        user: row.try_get(1)?,
        hash: hash
            .parse()
            .map_err(|error: skillpkg_index::checksum::ChecksumError| {
                sqlx::Error::Decode(format!("token hash `{hash}`: {error}").into())
            })?,
        created: row.try_get(3)?,
    })
}

/// Makes `user` a user of the registry, from `created`, unless it is one.
async fn insert_user(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    user: &str,
    created: &str,
) -> Result<(), sqlx::Error> {
    sqlx::query("INSERT INTO users (name, created) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING")
        .bind(user)
        .bind(created)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

async fn insert_event(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    event: &NewEvent<'_>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO events (at, actor, action, skill, version, detail) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(now())
    .bind(event.actor)
    .bind(event.action)
    .bind(event.skill)
    .bind(event.version)
    .bind(event.detail.as_deref())
    .execute(&mut **tx)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn fresh() -> (tempfile::TempDir, Db) {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(&sqlite_url(&dir.path().join("registry.db"), false))
            .await
            .unwrap();
        (dir, db)
    }

    #[tokio::test]
    async fn tokens_are_found_by_hash_and_revoked() {
        let (_dir, db) = fresh().await;
        let hash = Checksum::of(b"skp_secret");
        let first = db.create_token("alice", &hash).await.unwrap();
        let second = db
            .create_token("bob", &Checksum::of(b"skp_other"))
            .await
            .unwrap();
        assert_eq!((first.id.as_str(), second.id.as_str()), ("t1", "t2"));
        assert_eq!(
            db.user_of_token(&hash).await.unwrap().as_deref(),
            Some("alice")
        );
        assert_eq!(db.list_tokens().await.unwrap(), [first.clone(), second]);
        assert_eq!(db.revoke_token("t1").await.unwrap(), Some(first));
        assert_eq!(db.user_of_token(&hash).await.unwrap(), None);
        assert_eq!(db.revoke_token("t1").await.unwrap(), None);
        let third = db
            .create_token("carol", &Checksum::of(b"skp_third"))
            .await
            .unwrap();
        assert_eq!(third.id, "t3", "an id is never given twice");
        let actions: Vec<String> = db
            .events(None, 10)
            .await
            .unwrap()
            .into_iter()
            .map(|event| event.action)
            .collect();
        assert_eq!(
            actions,
            [
                "token-create",
                "token-create",
                "token-revoke",
                "token-create"
            ]
        );
    }

    #[tokio::test]
    async fn the_first_claim_owns_a_name_and_one_owner_stays() {
        let (_dir, db) = fresh().await;
        assert!(db.claim("pdf", "alice").await.unwrap());
        assert!(!db.claim("pdf", "bob").await.unwrap());
        assert!(db.claim("pdf", "alice").await.unwrap());
        assert_eq!(
            db.change_owners("alice", "pdf", &["bob".into()], &[])
                .await
                .unwrap(),
            OwnersChange::UnknownUser("bob".into()),
            "bob has no token: he is no user"
        );
        let token = db
            .create_token("bob", &Checksum::of(b"skp_bob"))
            .await
            .unwrap();
        db.revoke_token(&token.id).await.unwrap();
        let owners = db
            .change_owners("alice", "pdf", &["bob".into()], &[])
            .await
            .unwrap();
        assert_eq!(
            owners,
            OwnersChange::Changed(vec!["alice".into(), "bob".into()]),
            "a user stays one when his tokens are revoked"
        );
        assert_eq!(
            db.change_owners("bob", "pdf", &[], &["alice".into(), "bob".into()])
                .await
                .unwrap(),
            OwnersChange::LastOwner
        );
        assert_eq!(
            db.owners("pdf").await.unwrap(),
            ["alice", "bob"],
            "unchanged"
        );
        let events = db.events(Some("pdf"), 10).await.unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].detail.as_deref(), Some("added bob"));
    }

    #[tokio::test]
    async fn concurrent_first_claims_have_one_winner() {
        let (_dir, db) = fresh().await;
        let claims = (0..8).map(|i| {
            let db = db.clone();
            tokio::spawn(async move { db.claim("race", &format!("user{i}")).await.unwrap() })
        });
        let mut winners = 0;
        for claim in claims {
            winners += usize::from(claim.await.unwrap());
        }
        assert_eq!(winners, 1);
        assert_eq!(db.owners("race").await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn an_import_happens_once_and_keeps_ids_and_order() {
        let (_dir, db) = fresh().await;
        let token = TokenRecord {
            id: "t7".into(),
            user: "alice".into(),
            hash: Checksum::of(b"skp_old"),
            created: "2026-01-01T00:00:00Z".into(),
        };
        let owners = vec![("pdf".to_owned(), vec!["zoe".to_owned(), "adam".to_owned()])];
        assert!(
            db.import(std::slice::from_ref(&token), &owners, "state/")
                .await
                .unwrap()
        );
        assert!(!db.import(&[], &[], "state/").await.unwrap());
        assert_eq!(db.list_tokens().await.unwrap(), [token]);
        assert_eq!(db.owners("pdf").await.unwrap(), ["zoe", "adam"]);
        let next = db
            .create_token("bob", &Checksum::of(b"skp_new"))
            .await
            .unwrap();
        assert_eq!(next.id, "t8");
    }

    #[test]
    fn urls_are_encoded_and_passwords_redacted() {
        assert_eq!(
            sqlite_url(Path::new("/srv/my skills/registry.db"), false),
            "sqlite:///srv/my%20skills/registry.db?mode=rwc"
        );
        assert_eq!(
            redact("postgres://reg:hunter2@db.example/skills"),
            "postgres://reg:***@db.example/skills"
        );
    }
}
