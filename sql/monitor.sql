-- pg_idgen: monitoring. pg_idgen_metrics: one row per metric (name, labels, value, Prometheus
-- type, help), for exporters (prometheus/queries.yaml for postgres_exporter). It is built from
-- the functions and views every role may already call (snowflake_stats(), snowflake_lease(),
-- snowflake_layout(), segment_status, pg_idgen_worker_slots()), which run as the querying role:
-- superusers and members of pg_read_all_stats (so pg_monitor) see every worker id of the
-- instance, other roles only what snowflake_stats() shows them. No SECURITY DEFINER anywhere.
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
           s.lead_ms::float8 OPERATOR(pg_catalog./) 1000::float8, 'gauge',
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
    SELECT 'pg_idgen_lease_valid_seconds', '{}'::jsonb, k.valid_for_ms::float8 OPERATOR(pg_catalog./) 1000::float8, 'gauge',
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
REVOKE ALL ON @extschema@.pg_idgen_metrics FROM PUBLIC;  -- SELECT only, whatever the default privileges
GRANT SELECT ON @extschema@.pg_idgen_metrics TO PUBLIC;
COMMENT ON FUNCTION @extschema@.pg_idgen_worker_slots() IS 'worker-id slots of the instance: used (as snowflake_stats() shows them to the caller) and capacity';
