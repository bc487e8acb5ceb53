-- Each skill's publisher keys, as the `keys/<name>.json` file holds them
-- (its JSON), with the file's revision and the revision last written to
-- the tree: a change reads and writes the row in one transaction, so two
-- servers registering a first key for one name cannot both win.
CREATE TABLE keys_files (
    skill TEXT PRIMARY KEY,
    file TEXT NOT NULL,
    revision BIGINT NOT NULL,
    rendered BIGINT NOT NULL
);

-- Whether the tree's keys files were recorded in `keys_files`.
INSERT INTO counters (name, value) VALUES ('keys_imported', 0);
