-- How many times the registry's servers have sent an archive of each
-- skill: each server adds what it counted since its last flush.
CREATE TABLE downloads (
    skill TEXT PRIMARY KEY,
    count BIGINT NOT NULL
);
