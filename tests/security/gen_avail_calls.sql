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
-- Then what each privilege the role holds on a relation of pg_idgen allows (the backing sequences
-- of keyed spaces, whose USAGE keyed_grant gives, and of segment tags; every table and view of
-- the extension's schema), one line per statement the privilege lets it run, each taking the
-- strongest lock that privilege allows, as
--   <relation> (<privilege>)|<the statement>
-- sequences: nextval (USAGE or UPDATE), setval (UPDATE), a read (SELECT); tables and views: a read
-- and LOCK … ACCESS SHARE (SELECT), SELECT … FOR UPDATE (UPDATE), LOCK … ROW EXCLUSIVE (INSERT,
-- UPDATE or DELETE), LOCK … ACCESS EXCLUSIVE (UPDATE, DELETE or TRUNCATE).
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
WITH rels AS (     -- the extension's schema and its member relations (backing sequences included)
    SELECT c.oid, c.relkind, c.relname,
           pg_catalog.format('%I.%I', n.nspname, c.relname) AS q
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
    WHERE c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['r', 'p', 'v', 'm', 'S']::"char"[])
      AND (n.oid OPERATOR(pg_catalog.=) (SELECT e.extnamespace FROM pg_catalog.pg_extension e WHERE e.extname OPERATOR(pg_catalog.=) 'pg_idgen')
           OR EXISTS (SELECT FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid
                       WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
                         AND d.objid OPERATOR(pg_catalog.=) c.oid AND d.deptype OPERATOR(pg_catalog.=) 'e'
                         AND e.extname OPERATOR(pg_catalog.=) 'pg_idgen'))
), stmts (kinds, privs, k, stmt) AS (VALUES
    ('S', 'USAGE,UPDATE', 1, 'SELECT pg_catalog.nextval(%L::pg_catalog.regclass) IS NOT NULL'),
    ('S', 'UPDATE', 2, 'SELECT pg_catalog.setval(%1$L::pg_catalog.regclass, pg_catalog.nextval(%1$L::pg_catalog.regclass)) IS NOT NULL'),
    ('S', 'SELECT', 3, 'SELECT count(*) FROM %s'),
    ('rpvm', 'SELECT', 4, 'SELECT count(*) FROM %s'),
    ('rpv', 'SELECT', 5, 'LOCK TABLE %s IN ACCESS SHARE MODE'),
    ('rp', 'UPDATE', 6, 'SELECT count(*) FROM (SELECT FROM %s FOR UPDATE) x'),
    ('rpv', 'INSERT,UPDATE,DELETE', 7, 'LOCK TABLE %s IN ROW EXCLUSIVE MODE'),
    ('rpv', 'UPDATE,DELETE,TRUNCATE', 8, 'LOCK TABLE %s IN ACCESS EXCLUSIVE MODE')
)
SELECT pg_catalog.format('%s (%s)|%s', r.q, s.privs, pg_catalog.format(s.stmt, r.q))
FROM rels r JOIN stmts s ON pg_catalog.strpos(s.kinds, r.relkind::pg_catalog.text) OPERATOR(pg_catalog.>) 0
WHERE EXISTS (SELECT FROM pg_catalog.unnest(pg_catalog.string_to_array(s.privs, ',')) p(priv)
               WHERE CASE WHEN r.relkind OPERATOR(pg_catalog.=) 'S' THEN pg_catalog.has_sequence_privilege(:'role', r.oid, p.priv)
                          ELSE pg_catalog.has_table_privilege(:'role', r.oid, p.priv) END)
ORDER BY r.relname, s.k;
