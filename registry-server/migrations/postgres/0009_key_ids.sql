-- Publisher key ids, unique across the registry: a minisign key id is
-- 8 bytes its maker chooses, so a key made to carry another publisher's
-- id must not be registered for any skill. Each id is registered with
-- its public key (base64 line) by the first key change that adds it, in
-- that change's transaction; the primary key makes one winner of two
-- servers registering one id at once. Rows are never removed: an id
-- stays its key's after the key leaves every skill.
CREATE TABLE key_ids (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL,
    -- The skill it was first registered for, and when.
    skill TEXT NOT NULL,
    added TEXT NOT NULL
);

-- Whether the keys registered before this table were recorded in it.
INSERT INTO counters (name, value) VALUES ('key_ids', 0);
