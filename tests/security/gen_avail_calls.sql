-- tests/security/gen_avail_calls.sql — the attacks of the availability guard
-- (tests/security/availability.bash): one line per call a role short of superuser may make,
-- enumerated from pg_proc: every function of pg_idgen that role :'role' may execute (granted to
-- PUBLIC, to a registry node role, or to the holder of a keyed space's USAGE), as
--   <function's identity>|<the call>
-- The arguments are those of the attacker's own objects (its worker id and token 11, its
-- system identifier, its keyed space 'ak' and segment tag 'at', its key 1; worker id 11), chosen by the
-- argument's name, else an ordinary value of the type (as tests/security/gen_calls.sql does).
-- A function taking a range of worker ids (lo, hi) is also called in auto mode (worker_id NULL)
-- over its own id (1-1) and over the longest range (0-2147483647).
-- Calls are schema-qualified and casts name pg_catalog's types.
\ir arg_samples.sql
SET search_path = pg_catalog, pg_temp;
WITH fns AS (
    SELECT c.* FROM pg_temp.pg_idgen_callables c
    WHERE pg_catalog.has_function_privilege(:'role', c.oid, 'EXECUTE')
), args AS (
    SELECT s.* FROM pg_temp.pg_idgen_arg_samples s JOIN fns f ON f.oid OPERATOR(pg_catalog.=) s.oid
), sample AS (
    SELECT a.oid, a.pos, a.argname,
           CASE WHEN a.argname OPERATOR(pg_catalog.=) ANY (ARRAY['worker_id', 'lo', 'hi', 'take_worker_id', 'owner', 'to_worker', 'from_worker']::pg_catalog.text[]) THEN '''11'''
                WHEN a.argname OPERATOR(pg_catalog.=) ANY (ARRAY['token', 'seen_owner_token']::pg_catalog.text[]) THEN '''11'''
                WHEN a.argname OPERATOR(pg_catalog.=) 'system_identifier' THEN '''7300000000000000009'''
                WHEN a.argname OPERATOR(pg_catalog.=) 'database' THEN pg_catalog.format('''%s''', (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database()))
                WHEN a.argname OPERATOR(pg_catalog.=) 'space' THEN '''ak'''
                WHEN a.argname OPERATOR(pg_catalog.=) 'tag' THEN '''at'''
                WHEN a.argname OPERATOR(pg_catalog.=) 'node_name' THEN '''nx'''
                WHEN a.argname OPERATOR(pg_catalog.=) ANY (ARRAY['ttl_s', 'retire_s']::pg_catalog.text[]) THEN '''6'''
                WHEN a.argname OPERATOR(pg_catalog.=) 'fixed' THEN '''false'''
                WHEN a.argname OPERATOR(pg_catalog.=) ANY (ARRAY['take_fp', 'take_renewed_us']::pg_catalog.text[]) THEN 'NULL'
                ELSE a.sample END OPERATOR(pg_catalog.||) '::' OPERATOR(pg_catalog.||) a.tname AS v
    FROM args a
), variants AS (
    SELECT f.oid, 0 AS k, (SELECT pg_catalog.string_agg(s.v, ', ' ORDER BY s.pos) FROM sample s WHERE s.oid OPERATOR(pg_catalog.=) f.oid) AS arglist
    FROM fns f
    UNION ALL        -- auto mode: worker_id NULL over lo..hi, its own id, then the longest range
    SELECT f.oid, r.k, (SELECT pg_catalog.string_agg(CASE s.argname WHEN 'worker_id' THEN 'NULL::pg_catalog.int4'
                                                              WHEN 'lo' THEN r.lo WHEN 'hi' THEN r.hi ELSE s.v END, ', ' ORDER BY s.pos)
                        FROM sample s WHERE s.oid OPERATOR(pg_catalog.=) f.oid)
    FROM fns f, (VALUES (1, '''11''::pg_catalog.int4', '''11''::pg_catalog.int4'),
                        (2, '''0''::pg_catalog.int4', '''2147483647''::pg_catalog.int4')) r(k, lo, hi)
    WHERE 'lo' OPERATOR(pg_catalog.=) ANY (f.argnames) AND 'hi' OPERATOR(pg_catalog.=) ANY (f.argnames)
)
SELECT pg_catalog.format('%s|%s %s(%s)', f.ident, CASE f.prokind WHEN 'p' THEN 'CALL' ELSE 'SELECT' END, f.qname, COALESCE(v.arglist, ''))
FROM variants v JOIN fns f ON f.oid OPERATOR(pg_catalog.=) v.oid
ORDER BY f.proname, v.k;
