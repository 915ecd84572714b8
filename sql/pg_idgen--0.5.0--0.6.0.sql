-- pg_idgen 0.5.0 -> 0.6.0. Written by hand and reviewed (docs/contributing.md "Releasing": the rules
-- for upgrade scripts). Run by ALTER EXTENSION pg_idgen UPDATE TO '0.6.0', as a superuser, with
-- search_path = the extension's schema, pg_temp. The update test from 0.5.0
-- (tests/upgrade/extension_update_050.sh) checks that a database updated by it has exactly the
-- objects of a fresh 0.6.0 install (tests/upgrade/objects.sql) and that nothing of the extension
-- binds a function, operator or type outside pg_catalog and the extension (tests/security/audit.sql).
\echo Use "ALTER EXTENSION pg_idgen UPDATE TO '0.6.0'" to load this file. \quit

-- Each change of 0.6.0 adds its section below, in the form the install script creates it.

-- ---- A node's registry role holds no lock another node's claim or renewal waits for ----
-- pg_idgen_lease_claim chooses a free id without LOCK TABLE pg_idgen_leases (which a node's open
-- transaction kept, stalling every other node's renewal), reads the leased rows of the range
-- instead of every id of it, and waits for a row lock at most its own lock_timeout.
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
-- caller checked the role's right to it); whether it was granted.
CREATE FUNCTION pg_idgen_lease_try(
    w int, system_identifier text, node_name text, host text, port int, token bigint, ttl_s float8,
    fixed bool, retire_s float8, limit_ms bigint, take_worker_id int, take_fp bigint, take_renewed_us bigint)
    RETURNS bool
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
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
    RETURN FOUND;
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
-- caller's settings: no table lock (a node's open transaction after a claim holds only the row
-- locks of the id it claimed, one its role may act for, so renewals and claims of other ids never
-- wait for it); a wait for a row lock ends after lock_timeout (1 s, 55P03). The choice reads the
-- rows of lo..hi, never every id of the range (a range of millions costs what its leased rows
-- cost): the caller's own id if the registry has one there (sticky), else the free ids that start
-- a gap between leased ones, at most 16, each claimed in turn with a lock_timeout of 100 ms; one
-- another node claims meanwhile (its claim in flight, or committed first) is passed over.
CREATE OR REPLACE FUNCTION pg_idgen_lease_claim(
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

REVOKE ALL ON FUNCTION pg_idgen_registry_ranges(int, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_lease_candidates(int, int, float8) FROM PUBLIC;
REVOKE ALL ON FUNCTION pg_idgen_lease_try(int, text, text, text, int, bigint, float8, bool, float8, bigint, int, bigint, bigint) FROM PUBLIC;
COMMENT ON FUNCTION pg_idgen_registry_ranges(int, int) IS 'internal: the parts of a range of worker ids the session''s login role may act for';
COMMENT ON FUNCTION pg_idgen_lease_candidates(int, int, float8) IS 'internal: the free worker ids of a range that start a gap between leased ones, for the choice of pg_idgen_lease_claim';
COMMENT ON FUNCTION pg_idgen_lease_try(int, text, text, text, int, bigint, float8, bool, float8, bigint, int, bigint, bigint) IS 'internal: one claim of a worker id by the rules of pg_idgen_lease_claim';
COMMENT ON FUNCTION pg_idgen_lease_claim(int, int, int, text, text, text, int, bigint, float8, bool, float8, bigint, int, bigint, bigint) IS 'registry, for the lease workers: claims or renews a worker id lease (or chooses one of lo..hi), for the worker ids the caller''s role may lease';

-- ---- The registry marks of dropped databases are given back by their node ----
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
-- The roles that may write marks (EXECUTE on pg_idgen_keyed_marks or pg_idgen_segment_marks,
-- as docs/worker-ids.md "Registry roles" grants it) may forget those of their dropped databases.
DO $do$
DECLARE
    g record;
BEGIN
    FOR g IN SELECT DISTINCT a.grantee::pg_catalog.regrole AS role
               FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
              WHERE p.oid OPERATOR(pg_catalog.=) ANY (ARRAY[
                        'pg_idgen_keyed_marks(text, oid, text, int[], bigint[])'::pg_catalog.regprocedure,
                        'pg_idgen_segment_marks(text, oid, text, int[], bigint[])'::pg_catalog.regprocedure]::pg_catalog.oid[])
                AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
                AND a.grantee OPERATOR(pg_catalog.<>) 0
                AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
    LOOP
        EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION pg_idgen_marks_forget(text, oid[]) TO %s', g.role);
    END LOOP;
END
$do$;

-- ---- A node's first write of marks waits for no other node ----
-- pg_idgen_marks_owner_check serialised first writes on the pg_idgen_registry_nodes rows of every
-- role the login role is a member of: with one row for a group role the nodes share, a node's
-- open transaction stalled the others' first writes. It now locks only the login role's own rows.
-- Internal, for the SECURITY DEFINER marks functions below: refuses (42501) unless the session's
-- login role owns the marks of system identifier $1 (pg_idgen_keyed_mark_owners; the first
-- registry node role to write marks of it, keyed or segment, takes them) or is a superuser. $2
-- names the marks in the message.
CREATE OR REPLACE FUNCTION pg_idgen_marks_owner_check(sysid numeric, what text) RETURNS boolean
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
