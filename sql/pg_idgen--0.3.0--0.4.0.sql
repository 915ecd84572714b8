-- pg_idgen 0.3.0 -> 0.4.0. Written by hand and reviewed (README "Releasing": the rules for
-- upgrade scripts). Run by ALTER EXTENSION pg_idgen UPDATE TO '0.4.0', as a superuser, with
-- search_path = the extension's schema, pg_temp. The update test from 0.3.0 checks that a database
-- updated by it has exactly the objects of a fresh 0.4.0 install (tests/upgrade/objects.sql).
\echo Use "ALTER EXTENSION pg_idgen UPDATE TO '0.4.0'" to load this file. \quit

-- Each change of 0.4.0 adds its section below, in the form the install script creates it.

-- Keyed sequences (sql/keyed.sql; src/keyed/): keyed_create, keyed_drop, keyed_next,
-- keyed_last, the pg_idgen_keyed_spaces table with its link trigger, the keyed_status view.
CREATE FUNCTION keyed_create(
    space TEXT,
    step INT DEFAULT 1000,
    section_size INT DEFAULT 1000
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'keyed_create_wrapper';
CREATE FUNCTION keyed_drop(space TEXT) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'keyed_drop_wrapper';
CREATE FUNCTION keyed_status_shmem() RETURNS TABLE (
    space TEXT,
    bound bigint,
    floor bigint,
    raises bigint
)
STRICT VOLATILE PARALLEL RESTRICTED
LANGUAGE c
AS 'MODULE_PATHNAME', 'keyed_status_shmem_wrapper';
CREATE FUNCTION keyed_next(space text, key bigint) RETURNS bigint
    CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_keyed_next';
CREATE FUNCTION keyed_next(space text, key bigint, n int) RETURNS bigint
    CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_keyed_next_n';
CREATE FUNCTION keyed_last(space text, key bigint) RETURNS bigint
    CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_keyed_last';

CREATE TABLE pg_idgen_keyed_spaces (
    space        text PRIMARY KEY CHECK (octet_length(space) BETWEEN 1 AND 63),
    seq          regclass NOT NULL,
    step         int NOT NULL CHECK (step BETWEEN 1 AND 1000000000),
    section_size int NOT NULL CHECK (section_size BETWEEN 1 AND 1000000000),
    created      timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE pg_idgen_keyed_spaces IS 'pg_idgen keyed sequence spaces: one row per space, its durable bound in its own sequence (seq)';
SELECT pg_catalog.pg_extension_config_dump('pg_idgen_keyed_spaces', '');
REVOKE ALL ON pg_idgen_keyed_spaces FROM PUBLIC;
-- pg_dump writes no OWNED BY for a sequence of an extension member table: the link is made
-- again when the rows are restored (and by keyed_create's insert).
CREATE FUNCTION pg_idgen_keyed_link() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_keyed_link';
REVOKE ALL ON FUNCTION pg_idgen_keyed_link() FROM PUBLIC;
CREATE TRIGGER pg_idgen_keyed_spaces_link
    AFTER INSERT OR UPDATE OF seq ON pg_idgen_keyed_spaces
    FOR EACH ROW EXECUTE FUNCTION pg_idgen_keyed_link();

CREATE VIEW keyed_status AS
SELECT s.space, s.step, s.section_size, m.bound, m.floor, coalesce(m.raises, 0) AS raises
FROM pg_idgen_keyed_spaces s
LEFT JOIN keyed_status_shmem() m USING (space);
COMMENT ON VIEW keyed_status IS 'one row per keyed space of this database: configuration, durable bound and floor in memory, bound raises since server start';
GRANT SELECT ON keyed_status TO PUBLIC;

REVOKE ALL ON FUNCTION keyed_create(text, int, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION keyed_drop(text) FROM PUBLIC;
COMMENT ON FUNCTION keyed_next(text, bigint) IS 'next value of a key in a keyed space: increasing per key instance-wide, never reissued';
COMMENT ON FUNCTION keyed_next(text, bigint, int) IS 'reserves the next n values of a key (n <= step) and returns the last; the caller owns result-n+1 .. result';
COMMENT ON FUNCTION keyed_last(text, bigint) IS 'a key''s current value without consuming one: no value handed out for it is above it, its next is';

-- ---- Monitoring (docs/monitoring.md): pg_idgen_worker_slots() and the view pg_idgen_metrics,
-- as src/monitor.rs and sql/monitor.sql create them. The monitor worker and its settings
-- (pg_idgen.warn_horizon, pg_idgen.monitor_database, pg_idgen.monitor_interval) come with the
-- 0.4.0 library at the next server start; nothing in the database.
CREATE FUNCTION pg_idgen_worker_slots() RETURNS TABLE (
    used bigint,
    capacity INT
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'pg_idgen_worker_slots_wrapper';

CREATE VIEW @extschema@.pg_idgen_metrics AS
SELECT m.metric, m.labels, m.value, m.type, m.help
FROM (
    SELECT 'pg_idgen_ids_issued_total'::text AS metric,
           pg_catalog.jsonb_build_object('worker_id', s.worker_id::text) AS labels,
           s.ids_issued::float8 AS value, 'counter'::text AS type,
           'Snowflake ids issued since the server started, per worker id'::text AS help
    FROM @extschema@.snowflake_stats() s
    UNION ALL
    SELECT 'pg_idgen_logical_clock_lead_seconds', pg_catalog.jsonb_build_object('worker_id', s.worker_id::text),
           s.lead_ms::float8 / 1000, 'gauge',
           'How far the generator''s logical clock runs ahead of the system clock (negative: behind, idle)'
    FROM @extschema@.snowflake_stats() s
    UNION ALL
    SELECT 'pg_idgen_clock_steps_back_total', pg_catalog.jsonb_build_object('worker_id', s.worker_id::text),
           s.steps_back::float8, 'counter', 'Steps back of the system clock seen while generating'
    FROM @extschema@.snowflake_stats() s
    UNION ALL
    SELECT 'pg_idgen_sequence_exhaustions_total', pg_catalog.jsonb_build_object('worker_id', s.worker_id::text),
           s.exhaustions::float8, 'counter', 'Times the sequence field of one tick was used up (the clock ran ahead)'
    FROM @extschema@.snowflake_stats() s
    UNION ALL
    SELECT 'pg_idgen_clock_waits_total', pg_catalog.jsonb_build_object('worker_id', s.worker_id::text),
           s.waits::float8, 'counter', 'Calls that waited for the system clock (pg_idgen.max_drift_ms reached)'
    FROM @extschema@.snowflake_stats() s
    UNION ALL
    SELECT 'pg_idgen_time_field_left_seconds', pg_catalog.jsonb_build_object('layout', l.name),
           pg_catalog.date_part('epoch', l.time_field_ends OPERATOR(pg_catalog.-) pg_catalog.now()), 'gauge',
           'Seconds until the time field of the server''s layout ends (snowflake_next() fails from then on)'
    FROM @extschema@.snowflake_layout() l
    UNION ALL
    SELECT 'pg_idgen_worker_slots_used', '{}'::jsonb, w.used::float8, 'gauge',
           'Worker-id slots of the instance in use (a restart frees those whose reservation passed)'
    FROM @extschema@.pg_idgen_worker_slots() w
    UNION ALL
    SELECT 'pg_idgen_worker_slots_capacity', '{}'::jsonb, w.capacity::float8, 'gauge',
           'Worker-id slots of the instance'
    FROM @extschema@.pg_idgen_worker_slots() w
    UNION ALL
    SELECT 'pg_idgen_lease_held', pg_catalog.jsonb_build_object('worker_id', COALESCE(k.worker_id::text, '')),
           CASE WHEN k.state OPERATOR(pg_catalog.=) 'held' THEN 1 ELSE 0 END::float8, 'gauge',
           '1 while this node holds its worker id lease, else 0 (leases on only)'
    FROM @extschema@.snowflake_lease() k WHERE k.mode OPERATOR(pg_catalog.<>) 'off'
    UNION ALL
    SELECT 'pg_idgen_lease_state_info', pg_catalog.jsonb_build_object('state', k.state), 1::float8, 'gauge',
           'The lease worker''s state, as a label (value 1)'
    FROM @extschema@.snowflake_lease() k WHERE k.mode OPERATOR(pg_catalog.<>) 'off'
    UNION ALL
    SELECT 'pg_idgen_lease_valid_seconds', '{}'::jsonb, k.valid_for_ms::float8 / 1000, 'gauge',
           'Seconds this node may still generate on its lease without a renewal'
    FROM @extschema@.snowflake_lease() k WHERE k.mode OPERATOR(pg_catalog.<>) 'off'
    UNION ALL
    SELECT 'pg_idgen_lease_renewals_total', '{}'::jsonb, k.renewals::float8, 'counter', 'Successful lease claims and renewals'
    FROM @extschema@.snowflake_lease() k WHERE k.mode OPERATOR(pg_catalog.<>) 'off'
    UNION ALL
    SELECT 'pg_idgen_lease_failures_total', '{}'::jsonb, k.failures::float8, 'counter', 'Lease rounds that failed (registry unreachable or misconfigured)'
    FROM @extschema@.snowflake_lease() k WHERE k.mode OPERATOR(pg_catalog.<>) 'off'
    UNION ALL
    SELECT 'pg_idgen_lease_conflicts_total', '{}'::jsonb, k.conflicts::float8, 'counter', 'Lease rounds that found the worker id held by another node'
    FROM @extschema@.snowflake_lease() k WHERE k.mode OPERATOR(pg_catalog.<>) 'off'
    UNION ALL
    SELECT 'pg_idgen_lease_refusals_total', '{}'::jsonb, k.refusals::float8, 'counter', 'snowflake_next() calls refused for want of a valid lease'
    FROM @extschema@.snowflake_lease() k WHERE k.mode OPERATOR(pg_catalog.<>) 'off'
    UNION ALL
    SELECT 'pg_idgen_segment_values_issued_total', pg_catalog.jsonb_build_object('tag', g.tag),
           g.values_issued::float8, 'counter', 'Values of the segment tag handed out by this instance since the server started'
    FROM @extschema@.segment_status g
    UNION ALL
    SELECT 'pg_idgen_segment_refills_total', pg_catalog.jsonb_build_object('tag', g.tag),
           g.refills::float8, 'counter', 'Segments of the tag reserved since the server started'
    FROM @extschema@.segment_status g
    UNION ALL
    SELECT 'pg_idgen_segment_sync_refills_total', pg_catalog.jsonb_build_object('tag', g.tag),
           g.sync_refills::float8, 'counter', 'Refills a caller had to wait for (both buffers empty)'
    FROM @extschema@.segment_status g
    UNION ALL
    SELECT 'pg_idgen_segment_headroom', pg_catalog.jsonb_build_object('tag', g.tag),
           (9223372036854775807::numeric OPERATOR(pg_catalog.-) COALESCE(g.persisted_hwm, 0))::float8, 'gauge',
           'Values left between the tag''s persisted high-water mark and the largest bigint'
    FROM @extschema@.segment_status g
) m
WHERE m.value IS NOT NULL;
COMMENT ON VIEW @extschema@.pg_idgen_metrics IS 'one row per metric for Prometheus exporters: metric, labels (jsonb), value, type, help; docs/monitoring.md';
GRANT SELECT ON @extschema@.pg_idgen_metrics TO PUBLIC;
COMMENT ON FUNCTION @extschema@.pg_idgen_worker_slots() IS 'worker-id slots of the instance: used (as snowflake_stats() shows them to the caller) and capacity';
