-- The lookup keys of a name now include its visual skeleton's
-- (`confusable::lookup_keys`, `v:`): every published name is filed again
-- at the next start (the keys it had stay; they are still its keys).
UPDATE counters SET value = 0 WHERE name = 'name_keys';
