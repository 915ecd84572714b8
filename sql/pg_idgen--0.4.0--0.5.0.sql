-- pg_idgen 0.4.0 -> 0.5.0. Written by hand and reviewed (docs/contributing.md "Releasing": the rules
-- for upgrade scripts). Run by ALTER EXTENSION pg_idgen UPDATE TO '0.5.0', as a superuser, with
-- search_path = the extension's schema, pg_temp. The update test from 0.4.0 checks that a database
-- updated by it has exactly the objects of a fresh 0.5.0 install (tests/upgrade/objects.sql) and
-- that nothing of the extension binds a function, operator or type outside pg_catalog and the
-- extension (tests/security/audit.sql).
\echo Use "ALTER EXTENSION pg_idgen UPDATE TO '0.5.0'" to load this file. \quit

-- Each change of 0.5.0 adds its section below, in the form the install script creates it.

-- ---- pg_idgen_metrics: every operator schema-qualified. 0.4.0's view divided with a bare `/` on
-- (float8, integer), an operator pg_catalog does not have, so CREATE EXTENSION and the update bound
-- whichever `/` the owner of the extension's schema had planted; a superuser or the exporter's
-- role reading the view then ran it. Recreated here with OPERATOR(pg_catalog./) on (float8, float8).
CREATE OR REPLACE VIEW @extschema@.pg_idgen_metrics AS
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

-- ---- Registry roles: a node's registry credentials act for that node only. Up to 0.4.0 the
-- nodes' role needed INSERT and UPDATE on pg_idgen_leases and UPDATE on pg_idgen_segment_owners,
-- so one node's credentials could rewrite another's rows (one UPDATE gave a slot, with its ceiling
-- at 0, to another worker id, which handed out again what the first had). 0.5.0 nodes write both
-- tables only through the SECURITY DEFINER functions below, which check the caller's role against
-- pg_idgen_registry_nodes and its lease token. Grants the DBA gave on the tables are kept: 0.4.0
-- nodes go on writing the tables directly during a rolling upgrade; once every node runs 0.5.0,
-- the DBA revokes them (docs/worker-ids.md, "Registry roles").
-- Which worker ids a registry role may act for: a row per role and range of worker ids (a
-- role may have several). A session whose login role (session_user) is the role, or a member
-- of it, may claim, renew and release these worker ids and take, raise and release the slots of
-- pg_idgen_segment_owners they hold. Superusers may act for every worker id. Filled by the DBA;
-- dumped (it is configuration, unlike the leases).
CREATE TABLE pg_idgen_registry_nodes (
    role_name    name NOT NULL,
    first_worker int NOT NULL CHECK (first_worker OPERATOR(pg_catalog.>=) 0),
    last_worker  int NOT NULL,
    PRIMARY KEY (role_name, first_worker),
    CHECK (last_worker OPERATOR(pg_catalog.>=) first_worker)
);
COMMENT ON TABLE pg_idgen_registry_nodes IS 'registry roles and the worker ids first_worker..last_worker each may lease and hold slots for (pg_idgen)';
REVOKE ALL ON pg_idgen_registry_nodes FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('pg_idgen_registry_nodes', '');

-- Internal: whether the session's login role may act for worker id $1.
CREATE FUNCTION pg_idgen_registry_may(worker_id int) RETURNS bool
    LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $fn$
SELECT EXISTS (SELECT FROM pg_catalog.pg_roles r
                WHERE r.rolname OPERATOR(pg_catalog.=) session_user AND r.rolsuper)
    OR EXISTS (SELECT FROM @extschema@.pg_idgen_registry_nodes n
                 JOIN pg_catalog.pg_roles r ON r.rolname OPERATOR(pg_catalog.=) n.role_name
                WHERE $1 OPERATOR(pg_catalog.>=) n.first_worker AND $1 OPERATOR(pg_catalog.<=) n.last_worker
                  AND pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER'))
$fn$;

-- Internal: refuses (42501) a worker id the session's login role may not act for.
CREATE FUNCTION pg_idgen_registry_check(worker_id int) RETURNS void
    LANGUAGE plpgsql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $fn$
BEGIN
    IF $1 IS NULL THEN
        RAISE EXCEPTION 'the worker id must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF NOT @extschema@.pg_idgen_registry_may($1) THEN
        RAISE EXCEPTION 'role "%" may not act for worker id % in this registry', session_user, $1
            USING ERRCODE = '42501',
                  HINT = 'A superuser of the registry maps a node''s role to its worker ids: INSERT INTO pg_idgen_registry_nodes (role_name, first_worker, last_worker) VALUES (...).';
    END IF;
END
$fn$;

-- Internal: what a node sees of another holder's token: 64 bits of its SHA-256. Enough to tell
-- one holder from the next, useless to act as it.
CREATE FUNCTION pg_idgen_registry_token_fp(token bigint) RETURNS bigint
    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $fn$
SELECT ('x' OPERATOR(pg_catalog.||) pg_catalog.encode(pg_catalog.substr(pg_catalog.sha256(pg_catalog.int8send($1)), 1, 8), 'hex'))::pg_catalog.bit(64)::pg_catalog.int8
$fn$;

-- Claims or renews a worker id lease (worker_id), or, with worker_id NULL, chooses one of
-- lo..hi and claims it under the lease table's lock (auto mode). The id is taken when it is the
-- caller's (same token: a renewal), or when the holder's lease ended (released, or, with
-- take_worker_id = the id, expired with the fingerprint and renewed_at the caller saw unchanged
-- for a ttl) and either fixed is true, or the holder was the same node (system identifier and
-- node name), or the id has been retired for retire_s. hwm_ms only grows; a taker records the
-- row's hwm_ms as floor_ms. One row: granted (since_ms, floor_ms, and has_slots: whether a
-- registry slot names the id), or not (the holder, for messages, and its token's fingerprint,
-- renewed_at and ttl); no row when no id of lo..hi is free.
CREATE FUNCTION pg_idgen_lease_claim(
    worker_id int, lo int, hi int, system_identifier text, node_name text, host text, port int,
    token bigint, ttl_s float8, fixed bool, retire_s float8, limit_ms bigint,
    take_worker_id int, take_fp bigint, take_renewed_us bigint)
    RETURNS TABLE (lease_worker_id int, granted bool, since_ms bigint, floor_ms bigint, has_slots bool,
                   holder text, holder_fp bigint, holder_renewed_us bigint, holder_ttl_ms bigint)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    w int := $1;
    r record;
BEGIN
    IF $4 IS NULL OR $5 IS NULL OR $6 IS NULL OR $7 IS NULL OR $8 IS NULL OR $9 IS NULL
       OR $10 IS NULL OR $11 IS NULL OR $12 IS NULL OR (w IS NULL AND ($2 IS NULL OR $3 IS NULL)) THEN
        RAISE EXCEPTION 'pg_idgen_lease_claim: only worker_id (with lo and hi), lo, hi and the take_ arguments may be NULL'
            USING ERRCODE = '22004';
    END IF;
    IF w IS NULL THEN
        IF NOT EXISTS (SELECT FROM pg_catalog.generate_series($2, $3) g WHERE @extschema@.pg_idgen_registry_may(g)) THEN
            RAISE EXCEPTION 'role "%" may not act for any worker id of %-% in this registry', session_user, $2, $3
                USING ERRCODE = '42501',
                      HINT = 'A superuser of the registry maps a node''s role to its worker ids: INSERT INTO pg_idgen_registry_nodes (role_name, first_worker, last_worker) VALUES (...).';
        END IF;
        -- The choices and claims of the nodes one after the other: two never choose the same
        -- free id, then race for it.
        LOCK TABLE @extschema@.pg_idgen_leases IN SHARE ROW EXCLUSIVE MODE;
        w := COALESCE(
            (SELECT l.worker_id FROM @extschema@.pg_idgen_leases l
              WHERE l.system_identifier OPERATOR(pg_catalog.=) $4::pg_catalog.numeric
                AND l.node_name OPERATOR(pg_catalog.=) $5
                AND l.worker_id OPERATOR(pg_catalog.>=) $2 AND l.worker_id OPERATOR(pg_catalog.<=) $3
                AND @extschema@.pg_idgen_registry_may(l.worker_id)
              ORDER BY (l.token OPERATOR(pg_catalog.=) $8) DESC, l.since DESC LIMIT 1),
            (SELECT g FROM pg_catalog.generate_series($2, $3) g
              WHERE @extschema@.pg_idgen_registry_may(g)
                AND NOT EXISTS (SELECT FROM @extschema@.pg_idgen_leases l WHERE l.worker_id OPERATOR(pg_catalog.=) g
                  AND COALESCE(l.released_at, l.lease_until) OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => $11)
                      OPERATOR(pg_catalog.>=) pg_catalog.now())
              ORDER BY g LIMIT 1));
        IF w IS NULL THEN
            RETURN;
        END IF;
    ELSE
        PERFORM @extschema@.pg_idgen_registry_check(w);
    END IF;
    INSERT INTO @extschema@.pg_idgen_leases AS l
        (worker_id, system_identifier, node_name, host, port, token, since, renewed_at, lease_until, released_at, hwm_ms)
    VALUES (w, $4::pg_catalog.numeric, $5, $6, $7, $8, pg_catalog.now(), pg_catalog.now(),
            pg_catalog.now() OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => $9), NULL, $12)
    ON CONFLICT (worker_id) DO UPDATE SET
        system_identifier = excluded.system_identifier, node_name = excluded.node_name,
        host = excluded.host, port = excluded.port, token = excluded.token,
        since = CASE WHEN l.token OPERATOR(pg_catalog.=) excluded.token AND l.released_at IS NULL THEN l.since ELSE excluded.since END,
        renewed_at = excluded.renewed_at, lease_until = excluded.lease_until, released_at = NULL,
        hwm_ms = GREATEST(l.hwm_ms, excluded.hwm_ms),
        floor_ms = CASE WHEN l.token OPERATOR(pg_catalog.=) excluded.token THEN l.floor_ms ELSE l.hwm_ms END
    WHERE l.token OPERATOR(pg_catalog.=) excluded.token
       OR ((l.released_at IS NOT NULL
            OR (l.lease_until OPERATOR(pg_catalog.<) pg_catalog.now() AND w OPERATOR(pg_catalog.=) $13
                AND @extschema@.pg_idgen_registry_token_fp(l.token) OPERATOR(pg_catalog.=) $14
                AND (pg_catalog.date_part('epoch', l.renewed_at) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8 OPERATOR(pg_catalog.=) $15))
           AND ($10
                OR (l.system_identifier OPERATOR(pg_catalog.=) excluded.system_identifier AND l.node_name OPERATOR(pg_catalog.=) excluded.node_name)
                OR COALESCE(l.released_at, l.lease_until) OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => $11) OPERATOR(pg_catalog.<) pg_catalog.now()))
    RETURNING (pg_catalog.date_part('epoch', l.since) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8 AS s, l.floor_ms AS f INTO r;
    lease_worker_id := w;
    IF FOUND THEN
        granted := true;
        since_ms := r.s;
        floor_ms := r.f;
        has_slots := EXISTS (SELECT FROM @extschema@.pg_idgen_segment_owners o
                              WHERE o.owner OPERATOR(pg_catalog.=) w OR o.move_to OPERATOR(pg_catalog.=) w);
        RETURN NEXT;
        RETURN;
    END IF;
    granted := false;
    SELECT pg_catalog.format('node "%s" (host %s, port %s, system identifier %s) since %s, lease until %s%s',
               l.node_name, l.host, l.port, l.system_identifier, l.since, l.lease_until,
               CASE WHEN l.released_at IS NOT NULL THEN ', released at ' OPERATOR(pg_catalog.||) l.released_at::pg_catalog.text
                    WHEN l.lease_until OPERATOR(pg_catalog.<) pg_catalog.now() THEN ', expired' ELSE '' END) AS t,
           CASE WHEN l.released_at IS NULL THEN @extschema@.pg_idgen_registry_token_fp(l.token) END AS fp,
           (pg_catalog.date_part('epoch', l.renewed_at) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8 AS ru,
           pg_catalog.ceil(pg_catalog.date_part('epoch', l.lease_until OPERATOR(pg_catalog.-) l.renewed_at) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8 AS ttl
      INTO r FROM @extschema@.pg_idgen_leases l WHERE l.worker_id OPERATOR(pg_catalog.=) w;
    IF FOUND THEN
        holder := r.t;
        holder_fp := r.fp;
        holder_renewed_us := r.ru;
        holder_ttl_ms := GREATEST(r.ttl, 0);
    ELSE
        holder := 'another node';
        holder_ttl_ms := 0;
    END IF;
    RETURN NEXT;
END
$fn$;

-- Releases the caller's lease of worker_id (clean shutdown): it ends now, by the registry's
-- clock; hwm_ms becomes bound_ms if lower. Only under the token that holds it.
CREATE FUNCTION pg_idgen_lease_release(worker_id int, token bigint, bound_ms bigint) RETURNS bool
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM @extschema@.pg_idgen_registry_check($1);
    IF $2 IS NULL OR $3 IS NULL THEN
        RAISE EXCEPTION 'pg_idgen_lease_release: token and bound_ms must not be NULL' USING ERRCODE = '22004';
    END IF;
    UPDATE @extschema@.pg_idgen_leases l SET released_at = pg_catalog.now(),
           lease_until = LEAST(l.lease_until, pg_catalog.now()), hwm_ms = LEAST(l.hwm_ms, $3)
     WHERE l.worker_id OPERATOR(pg_catalog.=) $1 AND l.token OPERATOR(pg_catalog.=) $2 AND l.released_at IS NULL;
    RETURN FOUND;
END
$fn$;

-- Internal: the caller's lease of worker id $1 is valid under token $2, by the registry's clock.
CREATE FUNCTION pg_idgen_registry_holds(worker_id int, token bigint) RETURNS bool
    LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $fn$
SELECT EXISTS (SELECT FROM @extschema@.pg_idgen_leases l
                WHERE l.worker_id OPERATOR(pg_catalog.=) $1 AND l.token OPERATOR(pg_catalog.=) $2
                  AND l.released_at IS NULL AND l.lease_until OPERATOR(pg_catalog.>) pg_catalog.now())
$fn$;

-- The registry slots that name worker_id (as owner or as the target of a move), while the
-- caller's lease of it is valid under token (none otherwise). owner_token is the caller's token
-- where it is the owner's, else its fingerprint; owner_lease_ended: the owner's lease under the
-- row's token has ended.
CREATE FUNCTION pg_idgen_slot_rows(worker_id int, token bigint)
    RETURNS TABLE (tag text, slot int, slots int, owner int, owner_token bigint, state text, move_to int,
                   ceiling bigint, floor bigint, owner_lease_ended bool)
    LANGUAGE plpgsql STABLE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM @extschema@.pg_idgen_registry_check($1);
    IF $2 IS NULL OR NOT @extschema@.pg_idgen_registry_holds($1, $2) THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT o.tag, o.slot, o.slots, o.owner,
           CASE WHEN o.owner_token OPERATOR(pg_catalog.=) $2 THEN o.owner_token
                ELSE @extschema@.pg_idgen_registry_token_fp(o.owner_token) END,
           o.state, o.move_to, o.ceiling, o.floor,
           NOT EXISTS (SELECT FROM @extschema@.pg_idgen_leases l
                        WHERE l.worker_id OPERATOR(pg_catalog.=) o.owner AND l.token OPERATOR(pg_catalog.=) o.owner_token
                          AND l.released_at IS NULL AND l.lease_until OPERATOR(pg_catalog.>=) pg_catalog.now())
      FROM @extschema@.pg_idgen_segment_owners o
     WHERE o.owner OPERATOR(pg_catalog.=) $1 OR o.move_to OPERATOR(pg_catalog.=) $1
     ORDER BY o.tag, o.slot;
END
$fn$;

-- Takes a slot for worker_id under token (floor = ceiling): its own row held under another
-- token (an earlier start of the server), or a row moving to it once its owner released it or
-- the owner's lease ended. (floor, ceiling) after; no row when refused.
CREATE FUNCTION pg_idgen_slot_take(tag text, slot int, worker_id int, token bigint)
    RETURNS TABLE (floor bigint, ceiling bigint)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM @extschema@.pg_idgen_registry_check($3);
    IF $1 IS NULL OR $2 IS NULL OR $4 IS NULL THEN
        RAISE EXCEPTION 'pg_idgen_slot_take: tag, slot and token must not be NULL' USING ERRCODE = '22004';
    END IF;
    RETURN QUERY
    UPDATE @extschema@.pg_idgen_segment_owners o SET owner = $3, owner_token = $4, state = 'held', move_to = NULL,
           floor = o.ceiling, changed_at = pg_catalog.now()
     WHERE o.tag OPERATOR(pg_catalog.=) $1 AND o.slot OPERATOR(pg_catalog.=) $2
       AND @extschema@.pg_idgen_registry_holds($3, $4)
       AND ((o.owner OPERATOR(pg_catalog.=) $3 AND o.owner_token IS DISTINCT FROM $4 AND o.state OPERATOR(pg_catalog.=) 'held')
         OR (o.move_to OPERATOR(pg_catalog.=) $3 AND (o.state OPERATOR(pg_catalog.=) 'released'
             OR (o.owner OPERATOR(pg_catalog.=) $3 AND o.owner_token IS DISTINCT FROM $4)
             OR NOT EXISTS (SELECT FROM @extschema@.pg_idgen_leases l
                             WHERE l.worker_id OPERATOR(pg_catalog.=) o.owner AND l.token OPERATOR(pg_catalog.=) o.owner_token
                               AND l.released_at IS NULL AND l.lease_until OPERATOR(pg_catalog.>=) pg_catalog.now()))))
    RETURNING o.floor, o.ceiling;
END
$fn$;

-- Raises the ceiling of a slot worker_id holds under token to at least want_ceiling (never lowers
-- it). (floor, ceiling) after; no row when refused (not held so, or the lease ended).
CREATE FUNCTION pg_idgen_slot_raise(tag text, slot int, worker_id int, token bigint, want_ceiling bigint)
    RETURNS TABLE (floor bigint, ceiling bigint)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM @extschema@.pg_idgen_registry_check($3);
    IF $1 IS NULL OR $2 IS NULL OR $4 IS NULL OR $5 IS NULL THEN
        RAISE EXCEPTION 'pg_idgen_slot_raise: tag, slot, token and ceiling must not be NULL' USING ERRCODE = '22004';
    END IF;
    RETURN QUERY
    UPDATE @extschema@.pg_idgen_segment_owners o SET ceiling = GREATEST(o.ceiling, $5), changed_at = pg_catalog.now()
     WHERE o.tag OPERATOR(pg_catalog.=) $1 AND o.slot OPERATOR(pg_catalog.=) $2 AND o.owner OPERATOR(pg_catalog.=) $3
       AND o.owner_token OPERATOR(pg_catalog.=) $4 AND o.state OPERATOR(pg_catalog.=) 'held'
       AND @extschema@.pg_idgen_registry_holds($3, $4)
    RETURNING o.floor, o.ceiling;
END
$fn$;

-- Marks released a slot of worker_id that is moving away, once the caller (holding worker_id's
-- lease under token) stopped serving it. seen_owner_token is the row's owner_token as
-- pg_idgen_slot_rows showed it (the caller's token, or the fingerprint of an earlier start's).
CREATE FUNCTION pg_idgen_slot_release(tag text, slot int, worker_id int, token bigint, seen_owner_token bigint)
    RETURNS bool
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
BEGIN
    PERFORM @extschema@.pg_idgen_registry_check($3);
    IF $1 IS NULL OR $2 IS NULL OR $4 IS NULL THEN
        RAISE EXCEPTION 'pg_idgen_slot_release: tag, slot and token must not be NULL' USING ERRCODE = '22004';
    END IF;
    UPDATE @extschema@.pg_idgen_segment_owners o SET state = 'released', changed_at = pg_catalog.now()
     WHERE o.tag OPERATOR(pg_catalog.=) $1 AND o.slot OPERATOR(pg_catalog.=) $2 AND o.owner OPERATOR(pg_catalog.=) $3
       AND o.state OPERATOR(pg_catalog.=) 'moving' AND @extschema@.pg_idgen_registry_holds($3, $4)
       AND (CASE WHEN o.owner_token OPERATOR(pg_catalog.=) $4 THEN o.owner_token
                 ELSE @extschema@.pg_idgen_registry_token_fp(o.owner_token) END) IS NOT DISTINCT FROM $5;
    RETURN FOUND;
END
$fn$;

REVOKE ALL ON FUNCTION pg_idgen_registry_may(int) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_registry_check(int) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_registry_token_fp(bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_registry_holds(int, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_lease_claim(int, int, int, text, text, text, int, bigint, float8, bool, float8, bigint, int, bigint, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_lease_release(int, bigint, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_slot_rows(int, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_slot_take(text, int, int, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_slot_raise(text, int, int, bigint, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_slot_release(text, int, int, bigint, bigint) FROM PUBLIC;
COMMENT ON FUNCTION pg_idgen_registry_may(int) IS 'internal: whether the session''s login role may act for a worker id in this registry';
COMMENT ON FUNCTION pg_idgen_registry_check(int) IS 'internal: refuses (42501) a worker id the session''s login role may not act for';
COMMENT ON FUNCTION pg_idgen_registry_token_fp(bigint) IS 'internal: the fingerprint of a lease token that nodes see instead of another holder''s token';
COMMENT ON FUNCTION pg_idgen_registry_holds(int, bigint) IS 'internal: a worker id''s lease is valid under a token, by the registry''s clock';
COMMENT ON FUNCTION pg_idgen_lease_claim(int, int, int, text, text, text, int, bigint, float8, bool, float8, bigint, int, bigint, bigint) IS 'registry, for the lease workers: claims or renews a worker id lease (or chooses one of lo..hi), for the worker ids the caller''s role may lease';
COMMENT ON FUNCTION pg_idgen_lease_release(int, bigint, bigint) IS 'registry, for the lease workers: releases the caller''s lease of a worker id, under its token';
COMMENT ON FUNCTION pg_idgen_slot_rows(int, bigint) IS 'registry, for the lease workers: the segment slots that name a worker id the caller holds under its token';
COMMENT ON FUNCTION pg_idgen_slot_take(text, int, int, bigint) IS 'registry, for the lease workers: takes a slot for the caller''s worker id above its ceiling';
COMMENT ON FUNCTION pg_idgen_slot_raise(text, int, int, bigint, bigint) IS 'registry, for the lease workers: raises the ceiling of a slot the caller holds';
COMMENT ON FUNCTION pg_idgen_slot_release(text, int, int, bigint, bigint) IS 'registry, for the lease workers: marks released a slot moving away from the caller''s worker id';

-- ---------------------------------------------------------------------------------------------
-- Keyed sequences: durable bounds per bucket of sections (section mod 1024) instead of one per
-- space. Each existing space gets its 1,024 rows at its 0.4.0 bound (the value its backing
-- sequence returned last; nothing handed out if never called), so every key continues above
-- every value handed out before the update.
CREATE TABLE pg_idgen_keyed_bounds (
    bound  bigint NOT NULL,
    space  text NOT NULL,
    bucket int NOT NULL CHECK (bucket BETWEEN 0 AND 1023),
    PRIMARY KEY (space, bucket)
);
COMMENT ON TABLE pg_idgen_keyed_bounds IS 'pg_idgen keyed sequence spaces: the durable bound of each bucket of sections (section mod 1024), raised in place a step at a time';
SELECT pg_catalog.pg_extension_config_dump('pg_idgen_keyed_bounds', '');
REVOKE ALL ON pg_idgen_keyed_bounds FROM PUBLIC;
INSERT INTO @extschema@.pg_idgen_keyed_bounds (bound, space, bucket)
SELECT COALESCE(pg_catalog.pg_sequence_last_value(s.seq), 0), s.space, g
FROM @extschema@.pg_idgen_keyed_spaces s, pg_catalog.generate_series(0, 1023) g;

-- ---------------------------------------------------------------------------------------------
-- Keyed sequences: spaces with an owner and a privilege. USAGE on a space's backing sequence is
-- the right to call keyed_next and keyed_last on it (keyed_grant, keyed_revoke); keyed_create
-- revokes it from PUBLIC. Spaces created before the update stay usable by every role, as they
-- were in 0.4.0: their sequences get USAGE for PUBLIC (keyed_revoke(space, 'public') to close).
CREATE FUNCTION keyed_grant(
    space TEXT,
    role TEXT,
    with_grant_option bool DEFAULT false
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'keyed_grant_wrapper';
CREATE FUNCTION keyed_revoke(space TEXT, role TEXT) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'keyed_revoke_wrapper';
COMMENT ON FUNCTION keyed_grant(text, text, boolean) IS 'grants USAGE on a keyed space (keyed_next, keyed_last) to a role or public; superusers and holders of the grant option';
COMMENT ON FUNCTION keyed_revoke(text, text) IS 'revokes USAGE on a keyed space from a role or public, with what it granted onward';
CREATE OR REPLACE VIEW keyed_status AS
SELECT s.space, s.step, s.section_size, m.bound, m.floor, coalesce(m.raises, 0) AS raises,
       pg_catalog.pg_get_userbyid(c.relowner) AS owner, c.relacl AS privileges
FROM pg_idgen_keyed_spaces s
LEFT JOIN keyed_status_shmem() m USING (space)
LEFT JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) s.seq;
COMMENT ON VIEW keyed_status IS 'one row per keyed space of this database: configuration, highest durable bound and floor in memory, bound raises since server start, owner and privileges (USAGE: keyed_next, keyed_last)';
DO $keyed_usage$
DECLARE s pg_catalog.regclass;
BEGIN
    FOR s IN SELECT k.seq FROM @extschema@.pg_idgen_keyed_spaces k LOOP
        IF pg_catalog.to_regclass(s::pg_catalog.text) IS NOT NULL THEN
            EXECUTE pg_catalog.format('GRANT USAGE ON SEQUENCE %s TO PUBLIC', s);
        END IF;
    END LOOP;
END
$keyed_usage$;

-- ---------------------------------------------------------------------------------------------
-- Keyed sequences: fleet mode. A space created with nodes => N, node_index => k hands out
-- counter * N + k on this node, so the N writable nodes of a fleet never hand out the same value
-- of a key; keyed_set_node moves a node to another index above a given value. Spaces created
-- before the update are in plain mode (both columns NULL) and hand out what they did.
ALTER TABLE pg_idgen_keyed_spaces
    ADD COLUMN nodes int CHECK (nodes BETWEEN 1 AND 1024),
    ADD COLUMN node_index int,
    ADD CONSTRAINT pg_idgen_keyed_spaces_fleet_check
        CHECK ((nodes IS NULL) = (node_index IS NULL) AND node_index >= 0 AND node_index < nodes);
COMMENT ON COLUMN pg_idgen_keyed_spaces.nodes IS 'fleet mode: the number of writable nodes (fixed for the life of the space); NULL: plain mode';
COMMENT ON COLUMN pg_idgen_keyed_spaces.node_index IS 'fleet mode: this node''s index, 0 .. nodes - 1: its values are counter * nodes + node_index (changed only by keyed_set_node)';

-- Keyed sequences: bounds that survive an asynchronous promotion. keyed_create(...,
-- registry => true) keeps a high-water mark per bucket in the lease registry
-- (pg_idgen_keyed_marks, written through pg_idgen_keyed_marks()); the spaces table records the
-- mode and keyed_status shows it. Existing spaces keep registry = false.
ALTER TABLE pg_idgen_keyed_spaces ADD COLUMN registry boolean NOT NULL DEFAULT false;
DROP FUNCTION keyed_create(text, int, int);
CREATE FUNCTION keyed_create(
    space TEXT,
    step INT DEFAULT 1000,
    section_size INT DEFAULT 1000,
    nodes INT DEFAULT NULL,
    node_index INT DEFAULT NULL,
    registry bool DEFAULT false
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'keyed_create_fleet_wrapper';
CREATE FUNCTION keyed_set_node(space TEXT, node_index INT, above bigint) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'keyed_set_node_wrapper';
REVOKE ALL ON FUNCTION keyed_create(text, int, int, int, int, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION keyed_set_node(text, int, bigint) FROM PUBLIC;
COMMENT ON FUNCTION keyed_create(text, int, int, int, int, boolean) IS 'creates a keyed space (superuser); with nodes => N, node_index => k (fleet mode) this node hands out counter * N + k: values of a key distinct across the N writable nodes; with registry => true its bounds are raised through the lease registry too';
COMMENT ON FUNCTION keyed_set_node(text, int, bigint) IS 'moves this node of a fleet-mode keyed space to another index (superuser): every value it hands out afterwards is above the given value';
CREATE OR REPLACE VIEW keyed_status AS
SELECT s.space, s.step, s.section_size, m.bound, m.floor, coalesce(m.raises, 0) AS raises,
       pg_catalog.pg_get_userbyid(c.relowner) AS owner, c.relacl AS privileges,
       s.nodes, s.node_index,
       (SELECT LEAST(pg_catalog.max(b.bound),
                     (9223372036854775807 OPERATOR(pg_catalog.-) coalesce(s.node_index, 0))
                     OPERATOR(pg_catalog./) coalesce(s.nodes, 1))
               OPERATOR(pg_catalog.*) coalesce(s.nodes, 1) OPERATOR(pg_catalog.+) coalesce(s.node_index, 0)
          FROM pg_idgen_keyed_bounds b WHERE b.space OPERATOR(pg_catalog.=) s.space) AS max_value,
       s.registry
FROM pg_idgen_keyed_spaces s
LEFT JOIN keyed_status_shmem() m USING (space)
LEFT JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) s.seq;
COMMENT ON VIEW keyed_status IS 'one row per keyed space of this database: configuration, highest durable bound and floor in memory, bound raises since server start, owner and privileges (USAGE: keyed_next, keyed_last), fleet mode''s nodes and node_index, and max_value: no value this node handed out for any key of the space is above it (its durable bounds), and whether bounds are raised through the lease registry';

-- Keyed spaces created with registry => true (docs/keyed-sequences.md, "Asynchronous standbys"):
-- a high-water mark per (system identifier, database, space, bucket of sections), raised by the
-- node's lease worker before any value above a bucket's old bound is handed out, and read when a
-- space is first used after a start or a promotion (each bucket starts above its mark). The
-- system identifier is kept by physical replication, so a promoted standby finds the marks of
-- the primary it replaced. Not dumped: like the leases, they belong to the running fleet.
CREATE TABLE pg_idgen_keyed_marks (
    system_identifier numeric(20, 0) NOT NULL,
    database          oid NOT NULL,
    space             text NOT NULL CHECK (pg_catalog.octet_length(space) OPERATOR(pg_catalog.<=) 63),
    bucket            int NOT NULL CHECK (bucket OPERATOR(pg_catalog.>=) 0 AND bucket OPERATOR(pg_catalog.<=) 1023),
    bound             bigint NOT NULL,
    PRIMARY KEY (system_identifier, database, space, bucket)
);
COMMENT ON TABLE pg_idgen_keyed_marks IS 'registry: per node (system identifier), database, keyed space and bucket, a bound no value handed out there exceeds (pg_idgen, keyed_create(..., registry => true))';
REVOKE ALL ON pg_idgen_keyed_marks FROM PUBLIC;
-- Whose marks a registry role may write: the role that first wrote marks of a system identifier
-- (a role of pg_idgen_registry_nodes) owns them; afterwards only that role, its members and
-- superusers may read or raise them. A superuser may delete a row to hand a node's marks to
-- another role (a standby that connects with another role than its primary did).
CREATE TABLE pg_idgen_keyed_mark_owners (
    system_identifier numeric(20, 0) PRIMARY KEY,
    role_name         name NOT NULL,
    since             timestamptz NOT NULL DEFAULT pg_catalog.now()
);
COMMENT ON TABLE pg_idgen_keyed_mark_owners IS 'registry: the role whose members may read and raise the keyed marks of a node (system identifier), the first to write them (pg_idgen)';
REVOKE ALL ON pg_idgen_keyed_mark_owners FROM PUBLIC;

-- Raises the marks of (system_identifier, database, space) to at least bounds[i] for bucket
-- buckets[i] (never lowers one; empty arrays: a read), and returns every mark of the space. The
-- caller's login role must own the system identifier's marks (pg_idgen_keyed_mark_owners; the
-- first registry node role to write them takes them), or be a superuser: 42501 otherwise.
CREATE FUNCTION pg_idgen_keyed_marks(system_identifier text, database oid, space text, buckets int[], bounds bigint[])
    RETURNS TABLE (bucket int, bound bigint)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    sysid numeric(20, 0);
    owner name;
BEGIN
    IF $1 IS NULL OR $2 IS NULL OR $3 IS NULL OR $4 IS NULL OR $5 IS NULL THEN
        RAISE EXCEPTION 'pg_idgen_keyed_marks: no argument may be NULL' USING ERRCODE = '22004';
    END IF;
    IF pg_catalog.cardinality($4) OPERATOR(pg_catalog.<>) pg_catalog.cardinality($5) THEN
        RAISE EXCEPTION 'pg_idgen_keyed_marks: buckets and bounds must have the same length' USING ERRCODE = '22023';
    END IF;
    sysid := $1::pg_catalog.numeric;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles r
                    WHERE r.rolname OPERATOR(pg_catalog.=) session_user AND r.rolsuper) THEN
        SELECT o.role_name INTO owner FROM @extschema@.pg_idgen_keyed_mark_owners o
         WHERE o.system_identifier OPERATOR(pg_catalog.=) sysid;
        IF NOT FOUND THEN
            IF NOT EXISTS (SELECT FROM @extschema@.pg_idgen_registry_nodes n
                             JOIN pg_catalog.pg_roles r ON r.rolname OPERATOR(pg_catalog.=) n.role_name
                            WHERE pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER')) THEN
                RAISE EXCEPTION 'role "%" is not a node role of this registry', session_user
                    USING ERRCODE = '42501',
                          HINT = 'A superuser of the registry maps a node''s role to its worker ids: INSERT INTO pg_idgen_registry_nodes (role_name, first_worker, last_worker) VALUES (...).';
            END IF;
            INSERT INTO @extschema@.pg_idgen_keyed_mark_owners AS o (system_identifier, role_name)
            VALUES (sysid, session_user) ON CONFLICT (system_identifier) DO NOTHING;
            SELECT o.role_name INTO owner FROM @extschema@.pg_idgen_keyed_mark_owners o
             WHERE o.system_identifier OPERATOR(pg_catalog.=) sysid;
        END IF;
        IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) owner
                          AND pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER')) THEN
            RAISE EXCEPTION 'role "%" may not write the keyed marks of system identifier %', session_user, sysid
                USING ERRCODE = '42501',
                      DETAIL = pg_catalog.format('They belong to role "%s", the first to write them.', owner),
                      HINT = 'A node writes the marks of its own system identifier only; a superuser of the registry hands them to another role by deleting their row of pg_idgen_keyed_mark_owners.';
        END IF;
    END IF;
    INSERT INTO @extschema@.pg_idgen_keyed_marks AS m (system_identifier, database, space, bucket, bound)
    SELECT sysid, $2, $3, b.k, pg_catalog.max(b.v)
      FROM ROWS FROM (pg_catalog.unnest($4), pg_catalog.unnest($5)) AS b(k, v)
     WHERE b.k IS NOT NULL AND b.v IS NOT NULL
     GROUP BY b.k
    ON CONFLICT (system_identifier, database, space, bucket)
    DO UPDATE SET bound = GREATEST(m.bound, excluded.bound);
    RETURN QUERY
    SELECT m.bucket, m.bound FROM @extschema@.pg_idgen_keyed_marks m
     WHERE m.system_identifier OPERATOR(pg_catalog.=) sysid AND m.database OPERATOR(pg_catalog.=) $2
       AND m.space OPERATOR(pg_catalog.=) $3;
END
$fn$;
REVOKE ALL ON FUNCTION pg_idgen_keyed_marks(text, oid, text, int[], bigint[]) FROM PUBLIC;
COMMENT ON FUNCTION pg_idgen_keyed_marks(text, oid, text, int[], bigint[]) IS 'registry, for the lease workers: raises and reads the keyed marks of the caller''s node (registry => true spaces)';

-- ---------------------------------------------------------------------------------------------
-- Segment tags: bounds that survive an asynchronous promotion. segment_create(...,
-- registry_marks => true) keeps a high-water mark per stride slot in the lease registry
-- (pg_idgen_segment_marks, written through pg_idgen_segment_marks()), raised before the values
-- of a reservation are handed out; pg_idgen_segments records the mode and segment_status shows
-- it. Existing tags keep registry_marks = false. The ownership check of the keyed marks moves to
-- pg_idgen_marks_owner_check, shared by both marks functions (one owner role per system
-- identifier, pg_idgen_keyed_mark_owners); their argument checks and the bound of 1024
-- (database, name) pairs per system identifier to pg_idgen_marks_admit, which both call.
ALTER TABLE pg_idgen_segments ADD COLUMN registry_marks bool NOT NULL DEFAULT false,
    ADD CONSTRAINT pg_idgen_segments_registry_marks_check CHECK (NOT (registry_marks AND (registry OR start < 1)));
DROP FUNCTION segment_create(text, int, bigint, int, int, int, int, interval, int, int[], bool);
CREATE  FUNCTION "segment_create"(
	"tag" TEXT,
	"step" INT DEFAULT 1000,
	"start" bigint DEFAULT 1,
	"nodes" INT DEFAULT 1,
	"node_index" INT DEFAULT 0,
	"min_step" INT DEFAULT NULL,
	"max_step" INT DEFAULT NULL,
	"target_interval" interval DEFAULT NULL,
	"slots" INT DEFAULT NULL,
	"owned" INT[] DEFAULT NULL,
	"registry" bool DEFAULT false,
	"registry_marks" bool DEFAULT false
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'segment_create_slotted_wrapper';
REVOKE ALL ON FUNCTION segment_create(text, int, bigint, int, int, int, int, interval, int, int[], bool, bool) FROM PUBLIC;
CREATE OR REPLACE VIEW segment_status AS
SELECT s.tag,
       coalesce(m.current_step, s.step::bigint) AS step,
       s.nodes, s.node_index,
       p.persisted_hwm,
       m.cursor, m.segment_end, m.next_start, m.next_end,
       coalesce(m.values_issued, 0) AS values_issued,
       coalesce(m.refills, 0) AS refills,
       coalesce(m.sync_refills, 0) AS sync_refills,
       coalesce(m.discarded, 0) AS discarded,
       m.last_refill,
       o.owned_slots,
       s.registry_marks
FROM pg_idgen_segments s
LEFT JOIN segment_persisted() p USING (tag)
LEFT JOIN segment_status_shmem() m USING (tag)
LEFT JOIN (SELECT x.tag, pg_catalog.array_agg(x.slot ORDER BY x.slot) AS owned_slots
           FROM segment_slot_status() x WHERE x.owned GROUP BY x.tag) o USING (tag);
COMMENT ON VIEW segment_status IS 'one row per segment tag of this database: step, persisted high-water mark, cached cursor/end, next buffer, statistics since server start, and whether reservations raise marks in the lease registry (registry_marks)';

COMMENT ON TABLE pg_idgen_keyed_mark_owners IS 'registry: the role whose members may read and raise the marks (keyed and segment) of a node (system identifier), the first to write them (pg_idgen)';

-- Internal, for the SECURITY DEFINER marks functions below: refuses (42501) unless the session's
-- login role owns the marks of system identifier $1 (pg_idgen_keyed_mark_owners; the first
-- registry node role to write marks of it, keyed or segment, takes them) or is a superuser. $2
-- names the marks in the message.
CREATE FUNCTION pg_idgen_marks_owner_check(sysid numeric, what text) RETURNS boolean
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    owner name;
    worker_ids numeric;
BEGIN
    IF $1 IS NULL OR $2 IS NULL THEN
        RAISE EXCEPTION 'pg_idgen_marks_owner_check: no argument may be NULL' USING ERRCODE = '22004';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.pg_roles r
                WHERE r.rolname OPERATOR(pg_catalog.=) session_user AND r.rolsuper) THEN
        RETURN true;
    END IF;
    SELECT o.role_name INTO owner FROM @extschema@.pg_idgen_keyed_mark_owners o
     WHERE o.system_identifier OPERATOR(pg_catalog.=) $1;
    IF NOT FOUND THEN
        SELECT pg_catalog.sum((n.last_worker::pg_catalog.int8 OPERATOR(pg_catalog.-) n.first_worker)
                              OPERATOR(pg_catalog.+) 1) INTO worker_ids
          FROM @extschema@.pg_idgen_registry_nodes n
          JOIN pg_catalog.pg_roles r ON r.rolname OPERATOR(pg_catalog.=) n.role_name
         WHERE pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER');
        IF worker_ids IS NULL THEN
            RAISE EXCEPTION 'role "%" is not a node role of this registry', session_user
                USING ERRCODE = '42501',
                      HINT = 'A superuser of the registry maps a node''s role to its worker ids: INSERT INTO pg_idgen_registry_nodes (role_name, first_worker, last_worker) VALUES (...).';
        END IF;
        -- One first write at a time per role: its own rows of pg_idgen_registry_nodes, locked
        -- by a no-op UPDATE that only this role's calls make (no other role writes the table,
        -- and no function locks another role's rows), so no other role can stall it. Without
        -- it, concurrent sessions of the role, each in an open transaction, would each count
        -- the others' new identifiers out and together take the bound several times over; a
        -- stale snapshot (REPEATABLE READ) gets 40001 instead of counting short.
        UPDATE @extschema@.pg_idgen_registry_nodes AS n SET role_name = n.role_name
         WHERE EXISTS (SELECT FROM pg_catalog.pg_roles r
                        WHERE r.rolname OPERATOR(pg_catalog.=) n.role_name
                          AND pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER'));
        IF (SELECT pg_catalog.count(*) FROM @extschema@.pg_idgen_keyed_mark_owners o
             WHERE o.role_name OPERATOR(pg_catalog.=) session_user)::pg_catalog.numeric
           OPERATOR(pg_catalog.>=) (worker_ids OPERATOR(pg_catalog.*) 2) THEN
            RAISE EXCEPTION 'role "%" may not take the % of another system identifier', session_user, $2
                USING ERRCODE = '53400',
                      DETAIL = pg_catalog.format('It owns the marks of %s system identifiers, twice its %s worker ids.',
                                                 worker_ids OPERATOR(pg_catalog.*) 2, worker_ids),
                      HINT = 'A superuser of the registry deletes the rows of a retired node: DELETE FROM pg_idgen_keyed_marks WHERE system_identifier = ...; DELETE FROM pg_idgen_segment_marks WHERE system_identifier = ...; DELETE FROM pg_idgen_keyed_mark_owners WHERE system_identifier = ...;';
        END IF;
        INSERT INTO @extschema@.pg_idgen_keyed_mark_owners AS o (system_identifier, role_name)
        VALUES ($1, session_user) ON CONFLICT (system_identifier) DO NOTHING;
        SELECT o.role_name INTO owner FROM @extschema@.pg_idgen_keyed_mark_owners o
         WHERE o.system_identifier OPERATOR(pg_catalog.=) $1;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) owner
                      AND pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER')) THEN
        RAISE EXCEPTION 'role "%" may not write the % of system identifier %', session_user, $2, $1
            USING ERRCODE = '42501',
                  DETAIL = pg_catalog.format('They belong to role "%s", the first to write them.', owner),
                  HINT = 'A node writes the marks of its own system identifier only; a superuser of the registry hands them to another role by deleting their row of pg_idgen_keyed_mark_owners.';
    END IF;
    RETURN false;
END
$fn$;
REVOKE ALL ON FUNCTION pg_idgen_marks_owner_check(numeric, text) FROM PUBLIC;
COMMENT ON FUNCTION pg_idgen_marks_owner_check(numeric, text) IS 'internal: refuses (42501) a role that does not own the registry marks of a system identifier, and a node role that would own those of more than twice as many system identifiers as its worker ids (53400); true for a superuser';

-- Internal, for the SECURITY DEFINER marks functions below (kind 'keyed': pg_idgen_keyed_marks,
-- its spaces and buckets; 'segment': pg_idgen_segment_marks, its tags and slots): admits a call
-- of one of them and returns its system identifier ($2, as a number). It refuses a NULL argument
-- (22004), keys and bounds of different lengths or a key outside 0..1023 (22023), a caller that
-- does not own the system identifier's marks (pg_idgen_marks_owner_check: 42501, 53400), and a
-- node role's first write of marks of a (database, name) pair when the system identifier's marks
-- of that kind already name 1024 pairs (53400; a superuser is not bounded). Its messages name
-- the calling function. Any other kind, NULL too: 22023.
CREATE FUNCTION pg_idgen_marks_admit(kind text, system_identifier text, database oid, name text, keys int[], bounds bigint[])
    RETURNS numeric
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    fn text;        -- the calling function, and the table of its marks
    key_word text;  -- what a key is: a bucket, a slot
    name_word text; -- what a name is: a space, a tag
    sysid numeric(20, 0);
    fresh bool;
    pairs bigint;
BEGIN
    IF $1 OPERATOR(pg_catalog.=) 'keyed' THEN
        fn := 'pg_idgen_keyed_marks'; key_word := 'bucket'; name_word := 'space';
    ELSIF $1 OPERATOR(pg_catalog.=) 'segment' THEN
        fn := 'pg_idgen_segment_marks'; key_word := 'slot'; name_word := 'tag';
    ELSE
        RAISE EXCEPTION 'pg_idgen_marks_admit: kind must be ''keyed'' or ''segment'', not %',
                        pg_catalog.quote_nullable($1) USING ERRCODE = '22023';
    END IF;
    IF $2 IS NULL OR $3 IS NULL OR $4 IS NULL OR $5 IS NULL OR $6 IS NULL THEN
        RAISE EXCEPTION '%: no argument may be NULL', fn USING ERRCODE = '22004';
    END IF;
    IF pg_catalog.cardinality($5) OPERATOR(pg_catalog.<>) pg_catalog.cardinality($6) THEN
        RAISE EXCEPTION '%: %s and bounds must have the same length', fn, key_word USING ERRCODE = '22023';
    END IF;
    IF EXISTS (SELECT FROM pg_catalog.unnest($5) AS b(k)
                WHERE b.k OPERATOR(pg_catalog.<) 0 OR b.k OPERATOR(pg_catalog.>) 1023) THEN
        RAISE EXCEPTION '%: a % is between 0 and 1023', fn, key_word USING ERRCODE = '22023';
    END IF;
    -- a system identifier: a non-zero unsigned 64-bit integer, in decimal
    IF $2 OPERATOR(pg_catalog.!~) '^[0-9]{1,20}$'
       OR $2::pg_catalog.numeric OPERATOR(pg_catalog.=) 0
       OR $2::pg_catalog.numeric OPERATOR(pg_catalog.>) 18446744073709551615 THEN
        RAISE EXCEPTION '%: % is not a system identifier (an integer from 1 to 18446744073709551615)',
                        fn, pg_catalog.quote_literal($2) USING ERRCODE = '22023';
    END IF;
    sysid := $2::pg_catalog.numeric;
    IF @extschema@.pg_idgen_marks_owner_check(sysid, $1 OPERATOR(pg_catalog.||) ' marks')
       OR pg_catalog.cardinality($5) OPERATOR(pg_catalog.=) 0 THEN
        RETURN sysid;
    END IF;
    IF $1 OPERATOR(pg_catalog.=) 'keyed' THEN
        fresh := NOT EXISTS (SELECT FROM @extschema@.pg_idgen_keyed_marks m
                              WHERE m.system_identifier OPERATOR(pg_catalog.=) sysid
                                AND m.database OPERATOR(pg_catalog.=) $3 AND m.space OPERATOR(pg_catalog.=) $4);
    ELSE
        fresh := NOT EXISTS (SELECT FROM @extschema@.pg_idgen_segment_marks m
                              WHERE m.system_identifier OPERATOR(pg_catalog.=) sysid
                                AND m.database OPERATOR(pg_catalog.=) $3 AND m.tag OPERATOR(pg_catalog.=) $4);
    END IF;
    IF fresh THEN
        -- A new (database, name) of this node: one at a time (the owner row's lock). An UPDATE,
        -- not a SELECT ... FOR UPDATE: the pairs are counted below under this lock, and a caller
        -- whose snapshot is older than the last such count's commit (REPEATABLE READ, SERIALIZABLE)
        -- would not see the pair it added; the row that count's transaction wrote makes this one
        -- fail (40001) instead of going past the bound.
        UPDATE @extschema@.pg_idgen_keyed_mark_owners AS o SET role_name = o.role_name
         WHERE o.system_identifier OPERATOR(pg_catalog.=) sysid;
        IF $1 OPERATOR(pg_catalog.=) 'keyed' THEN
            SELECT pg_catalog.count(*) INTO pairs
              FROM (SELECT DISTINCT m.database, m.space FROM @extschema@.pg_idgen_keyed_marks m
                     WHERE m.system_identifier OPERATOR(pg_catalog.=) sysid) x;
        ELSE
            SELECT pg_catalog.count(*) INTO pairs
              FROM (SELECT DISTINCT m.database, m.tag FROM @extschema@.pg_idgen_segment_marks m
                     WHERE m.system_identifier OPERATOR(pg_catalog.=) sysid) x;
        END IF;
        IF pairs OPERATOR(pg_catalog.>=) 1024 THEN
            RAISE EXCEPTION 'the % marks of system identifier % already name 1024 (database, %) pairs', $1, sysid, name_word
                USING ERRCODE = '53400',
                      HINT = pg_catalog.format('A superuser of the registry deletes the marks of %ss dropped for good: DELETE FROM %s WHERE system_identifier = ... AND database = ... AND %s = ...;',
                                               name_word, fn, name_word);
        END IF;
    END IF;
    RETURN sysid;
END
$fn$;
REVOKE ALL ON FUNCTION pg_idgen_marks_admit(text, text, oid, text, int[], bigint[]) FROM PUBLIC;
COMMENT ON FUNCTION pg_idgen_marks_admit(text, text, oid, text, int[], bigint[]) IS 'internal: checks the arguments of pg_idgen_keyed_marks or pg_idgen_segment_marks (kind keyed or segment), the caller''s ownership of the system identifier''s marks and the bound of 1024 (database, name) pairs per system identifier; returns the system identifier';

-- Raises the marks of (system_identifier, database, space) to at least bounds[i] for bucket
-- buckets[i] (never lowers one; empty arrays: a read), and returns every mark of the space. The
-- caller's login role must own the system identifier's marks (pg_idgen_keyed_mark_owners; the
-- first registry node role to write them takes them), or be a superuser: 42501 otherwise.
CREATE OR REPLACE FUNCTION pg_idgen_keyed_marks(system_identifier text, database oid, space text, buckets int[], bounds bigint[])
    RETURNS TABLE (bucket int, bound bigint)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    sysid numeric(20, 0);
BEGIN
    sysid := @extschema@.pg_idgen_marks_admit('keyed', $1, $2, $3, $4, $5);
    INSERT INTO @extschema@.pg_idgen_keyed_marks AS m (system_identifier, database, space, bucket, bound)
    SELECT sysid, $2, $3, b.k, pg_catalog.max(b.v)
      FROM ROWS FROM (pg_catalog.unnest($4), pg_catalog.unnest($5)) AS b(k, v)
     WHERE b.k IS NOT NULL AND b.v IS NOT NULL
     GROUP BY b.k
    ON CONFLICT (system_identifier, database, space, bucket)
    DO UPDATE SET bound = GREATEST(m.bound, excluded.bound);
    RETURN QUERY
    SELECT m.bucket, m.bound FROM @extschema@.pg_idgen_keyed_marks m
     WHERE m.system_identifier OPERATOR(pg_catalog.=) sysid AND m.database OPERATOR(pg_catalog.=) $2
       AND m.space OPERATOR(pg_catalog.=) $3;
END
$fn$;

-- Segment tags created with registry_marks => true (docs/segment-sequences.md, "Asynchronous
-- standbys"): a high-water mark per (system identifier, database, tag, stride slot), raised by
-- the node's lease worker before any value of a newly reserved chunk is handed out, and read when
-- the tag is first used after a start or a promotion (each slot's sequence moves above its
-- mark). Owned like the keyed marks (pg_idgen_keyed_mark_owners: one owner role per system
-- identifier for both). Not dumped: like the leases, they belong to the running fleet.
CREATE TABLE pg_idgen_segment_marks (
    system_identifier numeric(20, 0) NOT NULL,
    database          oid NOT NULL,
    tag               text NOT NULL CHECK (pg_catalog.octet_length(tag) OPERATOR(pg_catalog.<=) 63),
    slot              int NOT NULL CHECK (slot OPERATOR(pg_catalog.>=) 0 AND slot OPERATOR(pg_catalog.<=) 1023),
    bound             bigint NOT NULL,
    PRIMARY KEY (system_identifier, database, tag, slot)
);
COMMENT ON TABLE pg_idgen_segment_marks IS 'registry: per node (system identifier), database, segment tag and stride slot, a bound no value handed out there exceeds (pg_idgen, segment_create(..., registry_marks => true))';
REVOKE ALL ON pg_idgen_segment_marks FROM PUBLIC;

-- Raises the marks of (system_identifier, database, tag) to at least bounds[i] for stride slot
-- slots[i] (never lowers one; empty arrays: a read), and returns every mark of the tag. The
-- caller's login role must own the system identifier's marks, or be a superuser: 42501 otherwise
-- (pg_idgen_marks_owner_check). Bounded like the keyed marks (53400 beyond): at most 1024
-- (database, tag) pairs per system identifier (pg_idgen_marks_admit checks the arguments and
-- both bounds for both functions).
CREATE FUNCTION pg_idgen_segment_marks(system_identifier text, database oid, tag text, slots int[], bounds bigint[])
    RETURNS TABLE (slot int, bound bigint)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    sysid numeric(20, 0);
BEGIN
    sysid := @extschema@.pg_idgen_marks_admit('segment', $1, $2, $3, $4, $5);
    INSERT INTO @extschema@.pg_idgen_segment_marks AS m (system_identifier, database, tag, slot, bound)
    SELECT sysid, $2, $3, b.k, pg_catalog.max(b.v)
      FROM ROWS FROM (pg_catalog.unnest($4), pg_catalog.unnest($5)) AS b(k, v)
     WHERE b.k IS NOT NULL AND b.v IS NOT NULL
     GROUP BY b.k
    ON CONFLICT (system_identifier, database, tag, slot)
    DO UPDATE SET bound = GREATEST(m.bound, excluded.bound);
    RETURN QUERY
    SELECT m.slot, m.bound FROM @extschema@.pg_idgen_segment_marks m
     WHERE m.system_identifier OPERATOR(pg_catalog.=) sysid AND m.database OPERATOR(pg_catalog.=) $2
       AND m.tag OPERATOR(pg_catalog.=) $3;
END
$fn$;
REVOKE ALL ON FUNCTION pg_idgen_segment_marks(text, oid, text, int[], bigint[]) FROM PUBLIC;
COMMENT ON FUNCTION pg_idgen_segment_marks(text, oid, text, int[], bigint[]) IS 'registry, for the lease workers: raises and reads the segment marks of the caller''s node (registry_marks => true tags)';

-- What must not replicate (the same objects as sql/replication.sql, which the install script runs
-- last): ENABLE REPLICA guard triggers on every table of the extension, the event trigger on
-- CREATE/ALTER PUBLICATION and SUBSCRIPTION, and a WARNING for publications that already carry
-- pg_idgen's tables. Keep this section after every section that creates a table.
--
-- Subscriber side, the guarantee: pg_idgen_replica_guard on every table as ENABLE REPLICA
-- triggers (they fire only under session_replication_role = replica: apply and table
-- synchronization workers). A row change applied from another node is skipped with one WARNING per
-- table and transaction; an applied TRUNCATE is refused (0A000): a trigger cannot skip it.
CREATE FUNCTION pg_idgen_replica_guard() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_replica_guard';
REVOKE ALL ON FUNCTION pg_idgen_replica_guard() FROM PUBLIC;
-- The publisher's side of the TRUNCATE: since no subscriber can skip one, a TRUNCATE of a table of
-- pg_idgen that a publication carries with publish = truncate is refused (55000) where it is made,
-- before it stops every subscriber (an ordinary trigger: sessions, not apply workers).
CREATE FUNCTION pg_idgen_publish_truncate_guard() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    pubs text;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.format('"%s"', p.pubname), ', ' ORDER BY p.pubname) INTO pubs
      FROM pg_catalog.pg_publication p
     WHERE p.pubtruncate
       AND EXISTS (SELECT FROM pg_catalog.pg_publication_tables t
                    WHERE t.pubname OPERATOR(pg_catalog.=) p.pubname
                      AND t.schemaname OPERATOR(pg_catalog.=) TG_TABLE_SCHEMA
                      AND t.tablename OPERATOR(pg_catalog.=) TG_TABLE_NAME);
    IF pubs IS NOT NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'object_not_in_prerequisite_state',
            MESSAGE = pg_catalog.format('cannot truncate pg_idgen''s table "%s": %s %s %s its TRUNCATE', TG_TABLE_NAME,
                                        CASE WHEN pg_catalog.strpos(pubs, ',') OPERATOR(pg_catalog.>) 0
                                             THEN 'publications' ELSE 'publication' END,
                                        pubs,
                                        CASE WHEN pg_catalog.strpos(pubs, ',') OPERATOR(pg_catalog.>) 0
                                             THEN 'publish' ELSE 'publishes' END),
            DETAIL = 'A subscriber cannot skip a TRUNCATE of pg_idgen''s tables: applying it is refused, which stops the subscription.',
            HINT = 'DELETE the rows instead (subscribers skip row changes of pg_idgen''s tables), or ALTER PUBLICATION ... SET (publish = ''insert, update, delete'').';
    END IF;
    RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION pg_idgen_publish_truncate_guard() FROM PUBLIC;
DO $replica_guard$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT n.nspname, c.relname
          FROM pg_catalog.pg_depend d
          JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) d.objid
          JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
          JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
         WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
           AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
           AND d.deptype OPERATOR(pg_catalog.=) 'e'
           AND e.extname OPERATOR(pg_catalog.=) 'pg_idgen'
           AND c.relkind OPERATOR(pg_catalog.=) 'r'
         ORDER BY c.relname
    LOOP
        EXECUTE pg_catalog.format(
            'CREATE TRIGGER pg_idgen_replica_guard BEFORE INSERT OR UPDATE OR DELETE ON %I.%I '
            'FOR EACH ROW EXECUTE FUNCTION @extschema@.pg_idgen_replica_guard()', t.nspname, t.relname);
        EXECUTE pg_catalog.format(
            'CREATE TRIGGER pg_idgen_replica_guard_truncate BEFORE TRUNCATE ON %I.%I '
            'FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.pg_idgen_replica_guard()', t.nspname, t.relname);
        EXECUTE pg_catalog.format(
            'CREATE TRIGGER pg_idgen_publish_truncate_guard BEFORE TRUNCATE ON %I.%I '
            'FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.pg_idgen_publish_truncate_guard()', t.nspname, t.relname);
        EXECUTE pg_catalog.format('ALTER TABLE %I.%I ENABLE REPLICA TRIGGER pg_idgen_replica_guard',
                                  t.nspname, t.relname);
        EXECUTE pg_catalog.format('ALTER TABLE %I.%I ENABLE REPLICA TRIGGER pg_idgen_replica_guard_truncate',
                                  t.nspname, t.relname);
    END LOOP;
END
$replica_guard$;

-- Publisher side and the shape of the group: an event trigger on CREATE/ALTER PUBLICATION and
-- CREATE/ALTER SUBSCRIPTION. A publication that names one of pg_idgen's tables is refused
-- (22023, as PostgreSQL refuses a system or temporary table in a publication); one that covers them
-- through FOR ALL TABLES or TABLES IN SCHEMA (which cannot leave a table out) gets a WARNING.
-- Subscriptions: on PostgreSQL 15 (no origin = none) a node that publishes and subscribes gets a
-- WARNING (a one-way fan-in to an aggregator is fine); on 16 and later a subscription with
-- origin = any on a node that publishes, and an active-active database (a subscription with
-- origin = none) that has generators handing out the same values on every node, get a WARNING.
-- Only the four tags fire it; it refuses nothing but a named pg_idgen table. SECURITY DEFINER:
-- a role that may create a subscription without being superuser (pg_create_subscription) must not
-- need a privilege on pg_idgen's tables for its DDL to pass; it only reads catalogs and those
-- tables, and is never callable directly (event trigger functions are not).
CREATE FUNCTION pg_idgen_replication_check() RETURNS event_trigger
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    pub record;
    sub record;
    named text;
    covered text;
    via text;
    publishes text;
    origin text;
    unsafe text;
    db oid := (SELECT d.oid FROM pg_catalog.pg_database d
                WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database());
    since16 bool := pg_catalog.current_setting('server_version_num')::int OPERATOR(pg_catalog.>=) 160000;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.format('"%s"', p.pubname), ', ' ORDER BY p.pubname)
      INTO publishes FROM pg_catalog.pg_publication p;

    IF TG_TAG OPERATOR(pg_catalog.=) 'CREATE PUBLICATION' OR TG_TAG OPERATOR(pg_catalog.=) 'ALTER PUBLICATION' THEN
        FOR pub IN
            SELECT DISTINCT p.oid, p.pubname, p.puballtables
              FROM pg_catalog.pg_event_trigger_ddl_commands() c
              JOIN pg_catalog.pg_publication p ON p.oid OPERATOR(pg_catalog.=) CASE
                   WHEN c.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_publication'::pg_catalog.regclass THEN c.objid
                   WHEN c.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_publication_rel'::pg_catalog.regclass THEN
                        (SELECT r.prpubid FROM pg_catalog.pg_publication_rel r WHERE r.oid OPERATOR(pg_catalog.=) c.objid)
                   WHEN c.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_publication_namespace'::pg_catalog.regclass THEN
                        (SELECT s.pnpubid FROM pg_catalog.pg_publication_namespace s WHERE s.oid OPERATOR(pg_catalog.=) c.objid)
                   END
             ORDER BY p.pubname
        LOOP
            -- pg_idgen's tables the publication names itself: refused.
            SELECT pg_catalog.string_agg(pg_catalog.format('"%s"', k.relname), ', ' ORDER BY k.relname) INTO named
              FROM pg_catalog.pg_publication_rel r
              JOIN pg_catalog.pg_class k ON k.oid OPERATOR(pg_catalog.=) r.prrelid
              JOIN pg_catalog.pg_depend d ON d.objid OPERATOR(pg_catalog.=) k.oid
               AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
               AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
               AND d.deptype OPERATOR(pg_catalog.=) 'e'
              JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
               AND e.extname OPERATOR(pg_catalog.=) 'pg_idgen'
             WHERE r.prpubid OPERATOR(pg_catalog.=) pub.oid;
            IF named IS NOT NULL THEN
                RAISE EXCEPTION USING
                    ERRCODE = 'invalid_parameter_value',
                    MESSAGE = pg_catalog.format('cannot add pg_idgen''s %s %s to publication "%s"',
                                               CASE WHEN pg_catalog.strpos(named, ',') OPERATOR(pg_catalog.>) 0 THEN 'tables' ELSE 'table' END,
                                               named, pub.pubname),
                    DETAIL = 'pg_idgen''s tables hold each node''s own state (worker id, segment tags and slots, keyed spaces and bounds, leases, mask keys, layouts): a subscriber must not take another node''s.',
                    HINT = 'Publish the application''s tables only; set up pg_idgen on each node with its functions (docs/fleet.md, "What must not replicate").';
            END IF;
            -- pg_idgen's tables the publication carries through FOR ALL TABLES or TABLES IN SCHEMA.
            SELECT pg_catalog.string_agg(pg_catalog.format('"%s"', t.tablename), ', ' ORDER BY t.tablename) INTO covered
              FROM pg_catalog.pg_publication_tables t
              JOIN pg_catalog.pg_namespace n ON n.nspname OPERATOR(pg_catalog.=) t.schemaname
              JOIN pg_catalog.pg_class k ON k.relname OPERATOR(pg_catalog.=) t.tablename
               AND k.relnamespace OPERATOR(pg_catalog.=) n.oid
              JOIN pg_catalog.pg_depend d ON d.objid OPERATOR(pg_catalog.=) k.oid
               AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
               AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
               AND d.deptype OPERATOR(pg_catalog.=) 'e'
              JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
               AND e.extname OPERATOR(pg_catalog.=) 'pg_idgen'
             WHERE t.pubname OPERATOR(pg_catalog.=) pub.pubname;
            IF covered IS NOT NULL THEN
                via := CASE WHEN pub.puballtables THEN 'FOR ALL TABLES'
                            ELSE 'TABLES IN SCHEMA ' OPERATOR(pg_catalog.||) (
                                 SELECT pg_catalog.string_agg(pg_catalog.quote_ident(n.nspname), ', ' ORDER BY n.nspname)
                                   FROM pg_catalog.pg_publication_namespace s
                                   JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) s.pnnspid
                                  WHERE s.pnpubid OPERATOR(pg_catalog.=) pub.oid) END;
                RAISE WARNING USING
                    MESSAGE = pg_catalog.format('publication "%s" carries pg_idgen''s tables (%s): %s', pub.pubname, via, covered),
                    DETAIL = 'They hold this node''s own state. A subscriber with pg_idgen 0.5.0 or later skips their row changes, and a TRUNCATE of them, which it could not skip, is refused here; a database without pg_idgen''s guards would take this node''s worker id, segment slots and keyed bounds as its own. PostgreSQL cannot leave a table out of FOR ALL TABLES.',
                    HINT = 'Publish the application''s tables by name (FOR TABLE ...) or by a schema that does not hold pg_idgen''s tables.';
            END IF;
        END LOOP;
        IF NOT since16 AND EXISTS (SELECT FROM pg_catalog.pg_subscription s WHERE s.subdbid OPERATOR(pg_catalog.=) db) THEN
            RAISE WARNING USING
                MESSAGE = 'this PostgreSQL 15 database publishes and subscribes: changes loop if the nodes subscribe to each other',
                DETAIL = 'A subscription on PostgreSQL 15 applies every change whatever node it came from (no origin = none); two nodes that subscribe to each other send every change back and forth. A one-way fan-in or cascade is fine.',
                HINT = 'Active-active (several writable nodes) needs PostgreSQL 16 or later with origin = none.';
        END IF;
        RETURN;
    END IF;

    -- CREATE or ALTER SUBSCRIPTION
    FOR sub IN
        SELECT DISTINCT s.oid, s.subname
          FROM pg_catalog.pg_event_trigger_ddl_commands() c
          JOIN pg_catalog.pg_subscription s ON s.oid OPERATOR(pg_catalog.=) c.objid
         WHERE c.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_subscription'::pg_catalog.regclass
         ORDER BY s.subname
    LOOP
        IF NOT since16 THEN
            IF publishes IS NOT NULL THEN
                RAISE WARNING USING
                    MESSAGE = pg_catalog.format('subscription "%s": this PostgreSQL 15 database also publishes (%s): changes loop if the nodes subscribe to each other', sub.subname, publishes),
                    DETAIL = 'A subscription on PostgreSQL 15 applies every change whatever node it came from (no origin = none); two nodes that subscribe to each other send every change back and forth. A one-way fan-in or cascade is fine.',
                    HINT = 'Active-active (several writable nodes) needs PostgreSQL 16 or later with origin = none.';
            END IF;
            CONTINUE;
        END IF;
        EXECUTE 'SELECT s.suborigin FROM pg_catalog.pg_subscription s WHERE s.oid OPERATOR(pg_catalog.=) $1'
           INTO origin USING sub.oid;
        IF origin OPERATOR(pg_catalog.=) 'any' AND publishes IS NOT NULL THEN
            RAISE WARNING USING
                MESSAGE = pg_catalog.format('subscription "%s" has origin = any and this database also publishes (%s): changes loop if its publisher subscribes to this node', sub.subname, publishes),
                DETAIL = 'With origin = any a subscriber applies the changes its publisher received from other nodes too; between nodes that subscribe to each other every change comes back. A one-way cascade is fine.',
                HINT = 'For active-active, create the subscriptions WITH (origin = none).';
        END IF;
    END LOOP;
    IF since16 THEN
        EXECUTE 'SELECT pg_catalog.string_agg(pg_catalog.format(''"%s"'', s.subname), '', '' ORDER BY s.subname) '
                'FROM pg_catalog.pg_subscription s WHERE s.subdbid OPERATOR(pg_catalog.=) $1 '
                'AND s.suborigin OPERATOR(pg_catalog.=) ''none'''
           INTO origin USING db;
        IF origin IS NOT NULL THEN
            -- Generators that hand out the same values on every node: a segment tag that is
            -- neither slotted, nor strided (nodes => N), nor registry-owned; a keyed space not in
            -- fleet mode (no nodes => N).
            SELECT pg_catalog.string_agg(x.what, ', ' ORDER BY x.what) INTO unsafe FROM (
                SELECT pg_catalog.format('segment tag "%s"', g.tag) AS what
                  FROM @extschema@.pg_idgen_segments g
                 WHERE NOT g.slotted AND NOT g.registry AND g.nodes OPERATOR(pg_catalog.=) 1
                UNION ALL
                SELECT pg_catalog.format('keyed space "%s"', k.space)
                  FROM @extschema@.pg_idgen_keyed_spaces k
                 WHERE k.nodes IS NULL OR k.nodes OPERATOR(pg_catalog.<=) 1
            ) x;
            IF unsafe IS NOT NULL THEN
                RAISE WARNING USING
                    MESSAGE = pg_catalog.format('this database replicates active-active (subscriptions with origin = none: %s) and has generators that hand out the same values on every node: %s', origin, unsafe),
                    DETAIL = 'A value such a generator hands out on one writable node is handed out on the others too: rows keyed by it collide, and a duplicate key (23505) in an apply worker stops its subscription.',
                    HINT = 'Use slotted or strided segment tags (segment_create with slots => S, or nodes => N and node_index => k) and keyed spaces with nodes => N and node_index => k, or call these generators on one node only.';
            END IF;
        END IF;
    END IF;
END
$fn$;
REVOKE ALL ON FUNCTION pg_idgen_replication_check() FROM PUBLIC;
CREATE EVENT TRIGGER pg_idgen_replication_guard ON ddl_command_end
    WHEN TAG IN ('CREATE PUBLICATION', 'ALTER PUBLICATION', 'CREATE SUBSCRIPTION', 'ALTER SUBSCRIPTION')
    EXECUTE FUNCTION @extschema@.pg_idgen_replication_check();
COMMENT ON FUNCTION pg_idgen_replica_guard() IS 'ENABLE REPLICA trigger of pg_idgen''s tables: a change applied from another node by logical replication is skipped (a TRUNCATE refused)';
COMMENT ON FUNCTION pg_idgen_publish_truncate_guard() IS 'trigger of pg_idgen''s tables: refuses a TRUNCATE that a publication would send to subscribers, which cannot skip it';
COMMENT ON FUNCTION pg_idgen_replication_check() IS 'event trigger: refuses a publication naming pg_idgen''s tables, warns when one covers them and about group shapes that loop or collide';
-- Publications that already carry pg_idgen's tables when the extension is installed or updated.
DO $replication_warn$
DECLARE
    pubs text;
BEGIN
    SELECT pg_catalog.string_agg(pg_catalog.quote_ident(x.pubname), ', ' ORDER BY x.pubname) INTO pubs
      FROM (SELECT DISTINCT t.pubname
              FROM pg_catalog.pg_publication_tables t
              JOIN pg_catalog.pg_namespace n ON n.nspname OPERATOR(pg_catalog.=) t.schemaname
              JOIN pg_catalog.pg_class k ON k.relname OPERATOR(pg_catalog.=) t.tablename
               AND k.relnamespace OPERATOR(pg_catalog.=) n.oid
              JOIN pg_catalog.pg_depend d ON d.objid OPERATOR(pg_catalog.=) k.oid
               AND d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
               AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
               AND d.deptype OPERATOR(pg_catalog.=) 'e'
              JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
               AND e.extname OPERATOR(pg_catalog.=) 'pg_idgen') x;
    IF pubs IS NOT NULL THEN
        RAISE WARNING USING
            MESSAGE = pg_catalog.format('publications carry pg_idgen''s tables: %s', pubs),
            DETAIL = 'They hold this node''s own state; subscribers with pg_idgen skip their row changes, and a TRUNCATE of them is refused here while a publication sends it.',
            HINT = 'Publish the application''s tables by name (FOR TABLE ...) or by a schema that does not hold pg_idgen''s tables.';
    END IF;
END
$replication_warn$;

-- ---------------------------------------------------------------------------------------------
-- The tables and views PUBLIC reads: PUBLIC has SELECT on them and nothing else, whatever default
-- privileges (ALTER DEFAULT PRIVILEGES ... ON TABLES) the role that created them had. With a
-- default privilege giving PUBLIC ALL on new tables, any role could change the database's worker
-- id (pg_idgen_worker), register layouts, or put a trigger of its own on those tables (run by
-- the superuser who next writes them). The install script revokes before it grants.
REVOKE ALL ON pg_idgen_worker, pg_idgen_layouts, keyed_status, uid_mask_keys, @extschema@.pg_idgen_metrics,
    segment_slot_status, segment_status FROM PUBLIC;
GRANT SELECT ON pg_idgen_worker, pg_idgen_layouts, keyed_status, uid_mask_keys, @extschema@.pg_idgen_metrics,
    segment_slot_status, segment_status TO PUBLIC;
