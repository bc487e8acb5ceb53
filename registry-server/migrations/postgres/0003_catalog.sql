-- Each skill's newest version that is not yanked, as `search.json` and the
-- discovery index list it: written in the transaction that changes the
-- skill's lines, so the aggregate files are made from one small row a
-- skill instead of every index line. A skill whose versions are all
-- yanked has no row.
CREATE TABLE catalog (
    skill TEXT PRIMARY KEY,
    version TEXT NOT NULL,
    description TEXT NOT NULL,
    cksum TEXT NOT NULL,
    -- How many versions the skill has, yanked ones included.
    versions BIGINT NOT NULL
);

-- Whether `catalog` was filled from the versions recorded before it.
INSERT INTO counters (name, value) VALUES ('catalog', 0);
