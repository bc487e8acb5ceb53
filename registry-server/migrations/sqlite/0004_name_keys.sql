-- The lookup keys of every published name (`confusable::lookup_keys`: its
-- skeleton, and the strings one removal from it), so that the names a new
-- name resembles are found by a few indexed lookups, not by comparing it
-- with every name.
CREATE TABLE name_keys (
    key TEXT NOT NULL,
    skill TEXT NOT NULL,
    PRIMARY KEY (key, skill)
);

-- Whether `name_keys` was filled from the names published before it.
INSERT INTO counters (name, value) VALUES ('name_keys', 0);
