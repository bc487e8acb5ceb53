-- Signed metadata that scales (docs/registry.md, "At scale"): the
-- snapshot is a tree of nodes and bins, and a signing re-hashes only the
-- files written since the last one. Each written file's revision as last
-- signed: a file whose rendered revision is newer is hashed at the next
-- signing.
ALTER TABLE index_files ADD COLUMN signed BIGINT NOT NULL DEFAULT 0;
ALTER TABLE keys_files ADD COLUMN signed BIGINT NOT NULL DEFAULT 0;
ALTER TABLE search_bins ADD COLUMN signed BIGINT NOT NULL DEFAULT 0;
CREATE INDEX index_files_unsigned ON index_files (skill) WHERE signed < rendered;
CREATE INDEX keys_files_unsigned ON keys_files (skill) WHERE signed < rendered;
-- The shard count the signed snapshot was made at: when `search.json`
-- names another, every shard of both counts is hashed.
INSERT INTO counters (name, value) VALUES ('search_shards_signed', 0);

-- One signer at a time across servers: the holder of this lease (a random
-- id a server) signs every change committed before it started, and looks
-- again when it is done (changes committed meanwhile are signed then).
CREATE TABLE signing_lease (
    id INTEGER PRIMARY KEY,
    holder TEXT,
    expires_at BIGINT NOT NULL
);
INSERT INTO signing_lease (id, holder, expires_at) VALUES (1, NULL, 0);
