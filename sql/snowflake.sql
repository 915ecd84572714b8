-- pg_idgen: the snowflake generator functions, their privileges and comments. snowflake_next and
-- snowflake_next_text are plain C functions (the hot path, src/snowflake.rs).
CREATE FUNCTION @extschema@.snowflake_next() RETURNS pg_catalog.int8
    STRICT VOLATILE PARALLEL UNSAFE LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_snowflake_next';
CREATE FUNCTION @extschema@.snowflake_next_text() RETURNS pg_catalog.text
    STRICT VOLATILE PARALLEL UNSAFE LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_snowflake_next_text';
REVOKE ALL ON FUNCTION snowflake_accept_layout() FROM PUBLIC;
COMMENT ON FUNCTION snowflake_next() IS 'next time-ordered 64-bit id of this session''s worker id (pg_idgen.worker_id)';
COMMENT ON FUNCTION snowflake_stats() IS 'per worker id: ids issued, logical clock and lead, reservation, steps back, exhaustions, waits';
COMMENT ON FUNCTION snowflake_next_text() IS 'snowflake_next() as decimal text, for JSON payloads (JavaScript numbers lose integers above 2^53 - 1)';
