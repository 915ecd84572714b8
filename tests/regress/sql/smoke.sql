-- smoke: the extension loads (it is preloaded) and hands out a positive id
SET client_min_messages = warning;
CREATE EXTENSION pg_idgen;
SELECT snowflake_next() > 0 AS positive;
