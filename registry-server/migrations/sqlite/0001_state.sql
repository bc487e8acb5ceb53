-- The registry's private state (docs/registry.md, "State").
CREATE TABLE counters (
    name TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO counters (name, value) VALUES ('token', 0);

-- Tokens are stored as the SHA-256 of the token, never the token.
CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    user_name TEXT NOT NULL,
    hash TEXT NOT NULL UNIQUE,
    created TEXT NOT NULL
);

-- One row a skill name, from its first publish: what a first publish
-- claims, so that of two first publishes exactly one owns the name.
CREATE TABLE skills (
    name TEXT PRIMARY KEY,
    created TEXT NOT NULL
);

-- Owners in the order they were added (seq).
CREATE TABLE owners (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL REFERENCES skills (name),
    user_name TEXT NOT NULL,
    added TEXT NOT NULL,
    UNIQUE (name, user_name)
);

-- The audit trail: who changed what, and when; rows are never changed.
CREATE TABLE events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    skill TEXT,
    version TEXT,
    detail TEXT
);
CREATE INDEX events_by_skill ON events (skill, seq);

CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
