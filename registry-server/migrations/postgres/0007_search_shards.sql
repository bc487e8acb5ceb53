-- The search index in shards (docs/registry.md, "At scale"): a skill is
-- listed in the shard of its bin, the first byte of the sha256 of its
-- name, so a publish rewrites one shard instead of a file listing every
-- skill. The catalog is made again with each row's bin (filled from the
-- versions at the next start).
DROP TABLE catalog;
CREATE TABLE catalog (
    skill TEXT PRIMARY KEY,
    version TEXT NOT NULL,
    description TEXT NOT NULL,
    cksum TEXT NOT NULL,
    -- How many versions the skill has, yanked ones included.
    versions BIGINT NOT NULL,
    -- The first byte of the sha256 of its name, 0 to 255.
    bin INTEGER NOT NULL
);
CREATE INDEX catalog_by_bin ON catalog (bin, skill);
UPDATE counters SET value = 0 WHERE name = 'catalog';

-- Each bin's revision, bumped by every change of a catalog row in it, and
-- the newest revision written to its shard: a shard is written again until
-- what was written is of its bins' newest revisions, and one whose bins
-- lag is written again (at start, and by the periodic check).
CREATE TABLE search_bins (
    bin INTEGER PRIMARY KEY,
    revision BIGINT NOT NULL,
    rendered BIGINT NOT NULL
);

-- How many shards the search index has (1, 16 or 256; 0 before it is
-- decided), and how many `search.json` says it has: when they differ, the
-- shards of the decided count are being written, and are written again
-- by whichever server sees it.
INSERT INTO counters (name, value) VALUES ('search_shards', 0);
INSERT INTO counters (name, value) VALUES ('search_shards_written', 0);
