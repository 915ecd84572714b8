-- pg_idgen: privileges and comments of the snowflake generator functions.
REVOKE ALL ON FUNCTION snowflake_accept_layout() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_next() IS 'next time-ordered 64-bit id of this session''s worker id (pg_idgen.worker_id)';
COMMENT ON FUNCTION snowflake_stats() IS 'per worker id: ids issued, logical clock and lead, reservation, steps back, exhaustions, waits';
COMMENT ON FUNCTION snowflake_next_text() IS 'snowflake_next() as decimal text, for JSON payloads (JavaScript numbers lose integers above 2^53 - 1)';
