-- The registry's users: a name is a user from the first token created
-- for it, and stays one when its tokens are revoked. Only users can be
-- made owners of a skill. The users known before this table are those
-- of the tokens and the owners recorded.
CREATE TABLE users (
    name TEXT PRIMARY KEY,
    created TEXT NOT NULL
);
INSERT INTO users (name, created)
SELECT user_name, MIN(at) FROM (
    SELECT user_name, created AS at FROM tokens
    UNION ALL
    SELECT user_name, added AS at FROM owners
) AS known
GROUP BY user_name;
