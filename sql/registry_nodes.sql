-- pg_idgen: what a node's registry role may do in the lease registry (the database
-- pg_idgen.registry names; docs/worker-ids.md "Registry roles"). A node's lease worker writes
-- pg_idgen_leases and pg_idgen_segment_owners only through the functions below, never with
-- table rights: each is SECURITY DEFINER (owned by the extension's owner, search_path pinned,
-- every name schema-qualified), checks that the caller's role may act for the worker id
-- (pg_idgen_registry_nodes) and, for everything but a claim, that the caller's lease of it is
-- valid under the token it passes (the token is random per postmaster start and no node role
-- can read another's). EXECUTE goes to the role a DBA grants (PUBLIC has none); the protocol
-- (fencing, handover, hwm_ms) is the one the statements of 0.4.0 ran.

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

-- Internal: the parts of lo..hi the session's login role may act for (all of it for a superuser),
-- one row per mapping row of pg_idgen_registry_nodes that overlaps it; they may overlap.
CREATE FUNCTION pg_idgen_registry_ranges(lo int, hi int) RETURNS TABLE (first_worker int, last_worker int)
    LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $fn$
SELECT GREATEST(n.first_worker, $1), LEAST(n.last_worker, $2)
  FROM @extschema@.pg_idgen_registry_nodes n
  JOIN pg_catalog.pg_roles r ON r.rolname OPERATOR(pg_catalog.=) n.role_name
 WHERE pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER')
   AND n.first_worker OPERATOR(pg_catalog.<=) $2 AND n.last_worker OPERATOR(pg_catalog.>=) $1
UNION ALL
SELECT $1, $2 WHERE $1 OPERATOR(pg_catalog.<=) $2
   AND EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) session_user AND r.rolsuper)
$fn$;

-- Internal: the free ids of lo..hi the caller may act for that start a gap: the first id of each
-- of its ranges, and the id after each leased one, when no live or unretired lease (retire_s
-- after its end) holds it. Reads the rows of lo..hi only (the smallest free id is one of them).
CREATE FUNCTION pg_idgen_lease_candidates(lo int, hi int, retire_s float8) RETURNS TABLE (c int8)
    LANGUAGE sql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $fn$
WITH allowed AS (SELECT a.first_worker AS a, a.last_worker AS b FROM @extschema@.pg_idgen_registry_ranges($1, $2) a),
     busy AS (SELECT l.worker_id FROM @extschema@.pg_idgen_leases l
               WHERE l.worker_id OPERATOR(pg_catalog.>=) $1 AND l.worker_id OPERATOR(pg_catalog.<=) $2
                 AND COALESCE(l.released_at, l.lease_until) OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => $3)
                     OPERATOR(pg_catalog.>=) pg_catalog.now())
SELECT DISTINCT x.c FROM (SELECT allowed.a::pg_catalog.int8 AS c FROM allowed
                          UNION ALL
                          SELECT busy.worker_id::pg_catalog.int8 OPERATOR(pg_catalog.+) 1 FROM busy) x
 WHERE EXISTS (SELECT FROM allowed WHERE x.c OPERATOR(pg_catalog.>=) allowed.a AND x.c OPERATOR(pg_catalog.<=) allowed.b)
   AND NOT EXISTS (SELECT FROM busy WHERE busy.worker_id::pg_catalog.int8 OPERATOR(pg_catalog.=) x.c)
$fn$;

-- Internal, for pg_idgen_lease_claim: one claim of worker id w by the rules written there (the
-- caller checked the role's right to it); whether it was granted. A refused claim holds no lock:
-- the rules are decided first on the row as the statement's snapshot sees it (a read that locks
-- nothing); only a claim they grant takes the row's lock, in the upsert, whose WHERE decides by
-- the same rules again on the row's newest version under that lock (a holder's renewal or
-- another node's claim may have committed since the read). When that refuses, the upsert's
-- subtransaction is rolled back, which ends its row lock: a node's open transaction after a
-- refused claim never delays the holder's renewal.
CREATE FUNCTION pg_idgen_lease_try(
    w int, system_identifier text, node_name text, host text, port int, token bigint, ttl_s float8,
    fixed bool, retire_s float8, limit_ms bigint, take_worker_id int, take_fp bigint, take_renewed_us bigint)
    RETURNS bool
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    grants bool;
    refused bool := false;
BEGIN
    SELECT l.token OPERATOR(pg_catalog.=) $6
        OR ((l.released_at IS NOT NULL
             OR (l.lease_until OPERATOR(pg_catalog.<) pg_catalog.now() AND $1 OPERATOR(pg_catalog.=) $11
                 AND @extschema@.pg_idgen_registry_token_fp(l.token) OPERATOR(pg_catalog.=) $12
                 AND (pg_catalog.date_part('epoch', l.renewed_at) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8 OPERATOR(pg_catalog.=) $13))
            AND ($8
                 OR (l.system_identifier OPERATOR(pg_catalog.=) $2::pg_catalog.numeric AND l.node_name OPERATOR(pg_catalog.=) $3)
                 OR COALESCE(l.released_at, l.lease_until) OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => $9) OPERATOR(pg_catalog.<) pg_catalog.now()))
      INTO grants
      FROM @extschema@.pg_idgen_leases l WHERE l.worker_id OPERATOR(pg_catalog.=) $1;
    IF FOUND AND grants IS NOT TRUE THEN
        RETURN false;
    END IF;
    BEGIN
        INSERT INTO @extschema@.pg_idgen_leases AS l
            (worker_id, system_identifier, node_name, host, port, token, since, renewed_at, lease_until, released_at, hwm_ms)
        VALUES ($1, $2::pg_catalog.numeric, $3, $4, $5, $6, pg_catalog.now(), pg_catalog.now(),
                pg_catalog.now() OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => $7), NULL, $10)
        ON CONFLICT (worker_id) DO UPDATE SET
            system_identifier = excluded.system_identifier, node_name = excluded.node_name,
            host = excluded.host, port = excluded.port, token = excluded.token,
            since = CASE WHEN l.token OPERATOR(pg_catalog.=) excluded.token AND l.released_at IS NULL THEN l.since ELSE excluded.since END,
            renewed_at = excluded.renewed_at, lease_until = excluded.lease_until, released_at = NULL,
            hwm_ms = GREATEST(l.hwm_ms, excluded.hwm_ms),
            floor_ms = CASE WHEN l.token OPERATOR(pg_catalog.=) excluded.token THEN l.floor_ms ELSE l.hwm_ms END
        WHERE l.token OPERATOR(pg_catalog.=) excluded.token
           OR ((l.released_at IS NOT NULL
                OR (l.lease_until OPERATOR(pg_catalog.<) pg_catalog.now() AND $1 OPERATOR(pg_catalog.=) $11
                    AND @extschema@.pg_idgen_registry_token_fp(l.token) OPERATOR(pg_catalog.=) $12
                    AND (pg_catalog.date_part('epoch', l.renewed_at) OPERATOR(pg_catalog.*) 1000000)::pg_catalog.int8 OPERATOR(pg_catalog.=) $13))
               AND ($8
                    OR (l.system_identifier OPERATOR(pg_catalog.=) excluded.system_identifier AND l.node_name OPERATOR(pg_catalog.=) excluded.node_name)
                    OR COALESCE(l.released_at, l.lease_until) OPERATOR(pg_catalog.+) pg_catalog.make_interval(secs => $9) OPERATOR(pg_catalog.<) pg_catalog.now()));
        IF NOT FOUND THEN
            refused := true;
            RAISE EXCEPTION 'pg_idgen_lease_try: refused under the row lock' USING ERRCODE = 'P0001';
        END IF;
    EXCEPTION WHEN raise_exception THEN
        IF NOT refused THEN
            RAISE;
        END IF;
        RETURN false;   -- the subtransaction, and with it the row lock, is gone
    END;
    RETURN true;
END
$fn$;

-- Claims or renews a worker id lease (worker_id), or, with worker_id NULL, chooses one of
-- lo..hi and claims it (auto mode). The id is taken when it is the caller's (same token: a
-- renewal), or when the holder's lease ended (released, or, with take_worker_id = the id, expired
-- with the fingerprint and renewed_at the caller saw unchanged for a ttl) and either fixed is
-- true, or the holder was the same node (system identifier and node name), or the id has been
-- retired for retire_s. hwm_ms only grows; a taker records the row's hwm_ms as floor_ms. One row:
-- granted (since_ms, floor_ms, and has_slots: whether a registry slot names the id), or not (the
-- holder, for messages, and its token's fingerprint, renewed_at and ttl); no row when no id of
-- lo..hi is free.
-- No call waits for another's transaction beyond what the registry sets here, whatever the
-- caller's settings: no table lock, and a refused claim locks nothing (pg_idgen_lease_try): a
-- node's open transaction after a claim holds only the row lock of the id it was granted, so
-- renewals and claims of other ids, and the holder's renewals after a refused claim of its id
-- (by a member role of a shared range), never wait for it; a wait for a row lock (a claim the
-- rules grant, waiting for the holder's renewal in flight) ends after lock_timeout (1 s, 55P03). The choice reads the
-- rows of lo..hi, never every id of the range (a range of millions costs what its leased rows
-- cost): the caller's own id if the registry has one there (sticky), else the free ids that start
-- a gap between leased ones, at most 16, each claimed in turn with a lock_timeout of 100 ms; one
-- another node claims meanwhile (its claim in flight, or committed first) is passed over.
CREATE FUNCTION pg_idgen_lease_claim(
    worker_id int, lo int, hi int, system_identifier text, node_name text, host text, port int,
    token bigint, ttl_s float8, fixed bool, retire_s float8, limit_ms bigint,
    take_worker_id int, take_fp bigint, take_renewed_us bigint)
    RETURNS TABLE (lease_worker_id int, granted bool, since_ms bigint, floor_ms bigint, has_slots bool,
                   holder text, holder_fp bigint, holder_renewed_us bigint, holder_ttl_ms bigint)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER
    SET search_path = pg_catalog, pg_temp SET lock_timeout = '1s' AS $fn$
#variable_conflict use_column
DECLARE
    w int := $1;
    r record;
    c int8;
    sticky bool := false;
    got bool;
    in_flight bool := false;
BEGIN
    IF $4 IS NULL OR $5 IS NULL OR $6 IS NULL OR $7 IS NULL OR $8 IS NULL OR $9 IS NULL
       OR $10 IS NULL OR $11 IS NULL OR $12 IS NULL OR (w IS NULL AND ($2 IS NULL OR $3 IS NULL)) THEN
        RAISE EXCEPTION 'pg_idgen_lease_claim: only worker_id (with lo and hi), lo, hi and the take_ arguments may be NULL'
            USING ERRCODE = '22004';
    END IF;
    IF w IS NOT NULL THEN
        PERFORM @extschema@.pg_idgen_registry_check(w);
        got := @extschema@.pg_idgen_lease_try(w, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15);
    ELSE
        IF NOT EXISTS (SELECT FROM @extschema@.pg_idgen_registry_ranges($2, $3)) THEN
            RAISE EXCEPTION 'role "%" may not act for any worker id of %-% in this registry', session_user, $2, $3
                USING ERRCODE = '42501',
                      HINT = 'A superuser of the registry maps a node''s role to its worker ids: INSERT INTO pg_idgen_registry_nodes (role_name, first_worker, last_worker) VALUES (...).';
        END IF;
        w := (SELECT l.worker_id FROM @extschema@.pg_idgen_leases l
               WHERE l.system_identifier OPERATOR(pg_catalog.=) $4::pg_catalog.numeric
                 AND l.node_name OPERATOR(pg_catalog.=) $5
                 AND l.worker_id OPERATOR(pg_catalog.>=) $2 AND l.worker_id OPERATOR(pg_catalog.<=) $3
                 AND @extschema@.pg_idgen_registry_may(l.worker_id)
               ORDER BY (l.token OPERATOR(pg_catalog.=) $8) DESC, l.since DESC LIMIT 1);
        sticky := w IS NOT NULL;
        got := false;
        PERFORM pg_catalog.set_config('lock_timeout', '100ms', true);
        FOR c IN
            SELECT w WHERE sticky
            UNION ALL
            (SELECT x.c FROM @extschema@.pg_idgen_lease_candidates($2, $3, $11) x WHERE NOT sticky ORDER BY x.c LIMIT 16)
        LOOP
            BEGIN
                got := @extschema@.pg_idgen_lease_try(c::pg_catalog.int4, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15);
            EXCEPTION WHEN lock_not_available THEN
                got := false;
                in_flight := true;
            END;
            w := c::pg_catalog.int4;
            EXIT WHEN got OR sticky;
        END LOOP;
        IF NOT got AND NOT sticky THEN
            RETURN;   -- no id of lo..hi free (or each free one claimed by another node meanwhile)
        END IF;
    END IF;
    lease_worker_id := w;
    IF got THEN
        granted := true;
        SELECT (pg_catalog.date_part('epoch', l.since) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8 AS s, l.floor_ms AS f
          INTO r FROM @extschema@.pg_idgen_leases l WHERE l.worker_id OPERATOR(pg_catalog.=) w;
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
    IF FOUND AND NOT in_flight THEN
        holder := r.t;
        holder_fp := r.fp;
        holder_renewed_us := r.ru;
        holder_ttl_ms := GREATEST(r.ttl, 0);
    ELSE
        holder := CASE WHEN in_flight THEN 'another node''s claim in flight' ELSE 'another node' END;
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
REVOKE ALL ON FUNCTION pg_idgen_registry_ranges(int, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_lease_candidates(int, int, float8) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_lease_try(int, text, text, text, int, bigint, float8, bool, float8, bigint, int, bigint, bigint) FROM PUBLIC;
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
COMMENT ON FUNCTION pg_idgen_registry_ranges(int, int) IS 'internal: the parts of a range of worker ids the session''s login role may act for';
COMMENT ON FUNCTION pg_idgen_lease_candidates(int, int, float8) IS 'internal: the free worker ids of a range that start a gap between leased ones, for the choice of pg_idgen_lease_claim';
COMMENT ON FUNCTION pg_idgen_lease_try(int, text, text, text, int, bigint, float8, bool, float8, bigint, int, bigint, bigint) IS 'internal: one claim of a worker id by the rules of pg_idgen_lease_claim';
COMMENT ON FUNCTION pg_idgen_lease_claim(int, int, int, text, text, text, int, bigint, float8, bool, float8, bigint, int, bigint, bigint) IS 'registry, for the lease workers: claims or renews a worker id lease (or chooses one of lo..hi), for the worker ids the caller''s role may lease';
COMMENT ON FUNCTION pg_idgen_lease_release(int, bigint, bigint) IS 'registry, for the lease workers: releases the caller''s lease of a worker id, under its token';
COMMENT ON FUNCTION pg_idgen_slot_rows(int, bigint) IS 'registry, for the lease workers: the segment slots that name a worker id the caller holds under its token';
COMMENT ON FUNCTION pg_idgen_slot_take(text, int, int, bigint) IS 'registry, for the lease workers: takes a slot for the caller''s worker id above its ceiling';
COMMENT ON FUNCTION pg_idgen_slot_raise(text, int, int, bigint, bigint) IS 'registry, for the lease workers: raises the ceiling of a slot the caller holds';
COMMENT ON FUNCTION pg_idgen_slot_release(text, int, int, bigint, bigint) IS 'registry, for the lease workers: marks released a slot moving away from the caller''s worker id';

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
COMMENT ON TABLE pg_idgen_keyed_mark_owners IS 'registry: the role whose members may read and raise the marks (keyed and segment) of a node (system identifier), the first to write them (pg_idgen)';
REVOKE ALL ON pg_idgen_keyed_mark_owners FROM PUBLIC;

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
        -- One first write at a time per login role: the rows of pg_idgen_registry_nodes that
        -- name the session's login role itself, locked by a no-op UPDATE, and the rows of
        -- pg_idgen_keyed_mark_owners it owns, locked FOR UPDATE: only this login role's calls
        -- lock them (no other role writes the tables, and no function locks another login
        -- role's rows), so no other node can stall it, nor wait for it. A row of a group role
        -- that several nodes share is not locked: one node's open transaction would stall the
        -- others' first writes. Without the locks, concurrent sessions of the role, each in an
        -- open transaction, would each count the others' new identifiers out and together take
        -- the bound several times over; a stale snapshot (REPEATABLE READ) gets 40001 instead of
        -- counting short. (A login role mapped only through a group, with no identifier yet,
        -- has no row to lock: its concurrent sessions can each take one identifier, once.)
        UPDATE @extschema@.pg_idgen_registry_nodes AS n SET role_name = n.role_name
         WHERE n.role_name OPERATOR(pg_catalog.=) session_user;
        PERFORM FROM @extschema@.pg_idgen_keyed_mark_owners o
          WHERE o.role_name OPERATOR(pg_catalog.=) session_user FOR UPDATE;
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
-- first registry node role to write them takes them), or be a superuser: 42501 otherwise. What a
-- node role can put in the tables is bounded (53400 beyond): it owns the marks of at most twice
-- as many system identifiers as it has worker ids in pg_idgen_registry_nodes (a node holds one
-- worker id; twice, for nodes replaced), and writes marks of at most 1024 (database, space)
-- pairs per system identifier. A superuser deletes the rows of a retired node.
CREATE FUNCTION pg_idgen_keyed_marks(system_identifier text, database oid, space text, buckets int[], bounds bigint[])
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
REVOKE ALL ON FUNCTION pg_idgen_keyed_marks(text, oid, text, int[], bigint[]) FROM PUBLIC;
COMMENT ON FUNCTION pg_idgen_keyed_marks(text, oid, text, int[], bigint[]) IS 'registry, for the lease workers: raises and reads the keyed marks of the caller''s node (registry => true spaces)';

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

-- Forgets the marks (keyed and segment) of the databases `gone` of the caller's node (system
-- identifier): the node sends the databases it no longer has (it checks its own catalog, the
-- only place that knows), so that a database dropped for good gives its (database, name) pairs
-- back without a superuser (a role with CREATEDB that clones and drops databases cannot use up
-- the node's 1024 pairs). Returns every database that still has marks of the system identifier
-- (each kind names at most 1024 pairs, so at most 2048 rows); with an empty array, a read. The
-- caller's login role must own the system identifier's marks (42501 otherwise; no row when
-- nobody owns them yet); it deletes only rows of that system identifier, so no other node's call
-- waits for it.
CREATE FUNCTION pg_idgen_marks_forget(system_identifier text, gone oid[])
    RETURNS TABLE (database oid)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    sysid numeric(20, 0);
BEGIN
    IF $1 IS NULL OR $2 IS NULL THEN
        RAISE EXCEPTION 'pg_idgen_marks_forget: no argument may be NULL' USING ERRCODE = '22004';
    END IF;
    IF $1 OPERATOR(pg_catalog.!~) '^[0-9]{1,20}$'
       OR $1::pg_catalog.numeric OPERATOR(pg_catalog.=) 0
       OR $1::pg_catalog.numeric OPERATOR(pg_catalog.>) 18446744073709551615 THEN
        RAISE EXCEPTION 'pg_idgen_marks_forget: % is not a system identifier (an integer from 1 to 18446744073709551615)',
                        pg_catalog.quote_literal($1) USING ERRCODE = '22023';
    END IF;
    sysid := $1::pg_catalog.numeric;
    IF NOT EXISTS (SELECT FROM @extschema@.pg_idgen_keyed_mark_owners o
                    WHERE o.system_identifier OPERATOR(pg_catalog.=) sysid) THEN
        RETURN;
    END IF;
    PERFORM @extschema@.pg_idgen_marks_owner_check(sysid, 'marks');
    DELETE FROM @extschema@.pg_idgen_keyed_marks m
     WHERE m.system_identifier OPERATOR(pg_catalog.=) sysid AND m.database OPERATOR(pg_catalog.=) ANY ($2);
    DELETE FROM @extschema@.pg_idgen_segment_marks m
     WHERE m.system_identifier OPERATOR(pg_catalog.=) sysid AND m.database OPERATOR(pg_catalog.=) ANY ($2);
    RETURN QUERY
    SELECT k.database FROM @extschema@.pg_idgen_keyed_marks k WHERE k.system_identifier OPERATOR(pg_catalog.=) sysid
    UNION
    SELECT g.database FROM @extschema@.pg_idgen_segment_marks g WHERE g.system_identifier OPERATOR(pg_catalog.=) sysid;
END
$fn$;
REVOKE ALL ON FUNCTION pg_idgen_marks_forget(text, oid[]) FROM PUBLIC;
COMMENT ON FUNCTION pg_idgen_marks_forget(text, oid[]) IS 'registry, for the lease workers: forgets the marks of databases the caller''s node no longer has, and lists the databases that have marks of it';
