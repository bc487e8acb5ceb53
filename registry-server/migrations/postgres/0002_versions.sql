-- Every version of every skill: the authority on what is published
-- (docs/registry.md, "At scale"). A publish claims its row first (the
-- primary key makes one winner, whatever the number of servers), writes
-- its objects, then marks it published.
CREATE TABLE versions (
    skill TEXT NOT NULL,
    -- The version without build metadata: `1.0.0+b` and `1.0.0` are one
    -- version, so they share a row.
    precedence TEXT NOT NULL,
    version TEXT NOT NULL,
    cksum TEXT NOT NULL,
    -- 'claimed' while its objects are written, then 'published'.
    state TEXT NOT NULL,
    -- The claim's holder (a random id a publish) and when it claimed,
    -- in milliseconds since 1970: a claim nobody finished expires.
    claim TEXT NOT NULL,
    claimed_at BIGINT NOT NULL,
    -- The version's index line (JSON), once published.
    record TEXT,
    -- The index file's revision that published it: the lines' order.
    seq BIGINT,
    PRIMARY KEY (skill, precedence)
);

-- Each index file's revision, bumped by every change of its lines, and
-- the newest revision written to the tree: an index file whose rendered
-- revision lags is written again (at start, and by the periodic check).
CREATE TABLE index_files (
    skill TEXT PRIMARY KEY,
    revision BIGINT NOT NULL,
    rendered BIGINT NOT NULL
);

-- The revision of the whole index, bumped by every change: the aggregate
-- files (`search.json`, the discovery index) are rewritten until what was
-- written is of the newest.
INSERT INTO counters (name, value) VALUES ('index', 0);
