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
SET search_path = pg_catalog, pg_temp;
WITH fns AS (
    SELECT p.oid, p.proname, p.prokind, p.oid::pg_catalog.regprocedure::pg_catalog.text AS ident,
           pg_catalog.quote_ident(n.nspname) OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(p.proname) AS qname,
           p.proargtypes::pg_catalog.oid[] AS argtypes, p.proargnames AS argnames
    FROM pg_catalog.pg_proc p
    JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
    JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
         AND d.objid OPERATOR(pg_catalog.=) p.oid AND d.deptype OPERATOR(pg_catalog.=) 'e'
    JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid AND e.extname OPERATOR(pg_catalog.=) 'pg_idgen'
    WHERE p.prorettype OPERATOR(pg_catalog.<>) ALL (ARRAY['pg_catalog.trigger', 'pg_catalog.event_trigger', 'pg_catalog.internal']::pg_catalog.regtype[])
      AND p.prokind OPERATOR(pg_catalog.=) ANY (ARRAY['f', 'p']::"char"[])
      AND pg_catalog.has_function_privilege(:'role', p.oid, 'EXECUTE')
), args AS (
    SELECT f.oid, a.pos, f.argnames[a.pos::pg_catalog.int4] AS argname,
           CASE WHEN ty.typelem OPERATOR(pg_catalog.<>) 0 AND ty.typlen OPERATOR(pg_catalog.=) -1
                THEN pg_catalog.format('%I.%I[]', en.nspname, et.typname)
                ELSE pg_catalog.format('%I.%I', tn.nspname, ty.typname) END AS tname,
           CASE WHEN ty.typelem OPERATOR(pg_catalog.<>) 0 AND ty.typlen OPERATOR(pg_catalog.=) -1 THEN et.typname END AS elem,
           ty.typname AS base
    FROM fns f, pg_catalog.unnest(f.argtypes) WITH ORDINALITY a(t, pos)
    JOIN pg_catalog.pg_type ty ON ty.oid OPERATOR(pg_catalog.=) a.t
    JOIN pg_catalog.pg_namespace tn ON tn.oid OPERATOR(pg_catalog.=) ty.typnamespace
    LEFT JOIN pg_catalog.pg_type et ON et.oid OPERATOR(pg_catalog.=) ty.typelem
    LEFT JOIN pg_catalog.pg_namespace en ON en.oid OPERATOR(pg_catalog.=) et.typnamespace
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
                WHEN a.argname OPERATOR(pg_catalog.=) 'radix' THEN '''10'''
                WHEN a.argname OPERATOR(pg_catalog.=) 'numerals' THEN '''{1,2,3,4,5,6}'''
                WHEN a.argname OPERATOR(pg_catalog.=) 'format' THEN '''crockford'''
                WHEN a.argname OPERATOR(pg_catalog.=) 'key' AND a.base OPERATOR(pg_catalog.=) 'bytea' THEN 'pg_catalog.decode(pg_catalog.repeat(''2b'', 32), ''hex'')'
                WHEN a.argname OPERATOR(pg_catalog.=) 'tbl' THEN '''public.hostile_tbl'''
                WHEN a.argname OPERATOR(pg_catalog.=) 'col' THEN '''id'''
                WHEN a.argname OPERATOR(pg_catalog.=) 'generator' THEN '''snowflake'''
                WHEN a.argname OPERATOR(pg_catalog.=) 'dry_run' THEN '''false'''
                WHEN a.argname OPERATOR(pg_catalog.=) 'stmt' THEN '''SELECT 1'''
                WHEN a.argname OPERATOR(pg_catalog.=) 'code' THEN '''16JD'''
                WHEN a.argname OPERATOR(pg_catalog.=) 'epoch' THEN '''2020-01-01 00:00:00+00'''
                WHEN a.base OPERATOR(pg_catalog.=) 'timestamptz' THEN 'pg_catalog.now()'
                WHEN a.argname OPERATOR(pg_catalog.=) ANY (ARRAY['time_bits', 'worker_bits', 'sequence_bits']::pg_catalog.text[]) THEN '''20'''
                WHEN a.elem IS NOT NULL THEN
                     CASE WHEN a.elem OPERATOR(pg_catalog.~) '^(int|float|numeric|oid)' THEN '''{1}''' ELSE '''{hostile}''' END
                WHEN a.base OPERATOR(pg_catalog.=) ANY (ARRAY['text', 'varchar', 'name', 'bpchar']::pg_catalog.name[]) THEN '''hostile'''
                WHEN a.base OPERATOR(pg_catalog.~) '^(int|float|numeric|oid)' THEN '''1'''
                WHEN a.base OPERATOR(pg_catalog.=) 'bool' THEN '''true'''
                WHEN a.base OPERATOR(pg_catalog.=) 'bytea' THEN '''\x00'''
                WHEN a.base OPERATOR(pg_catalog.~) '^(timestamp|date)' THEN '''2024-01-01 00:00:00+00'''
                WHEN a.base OPERATOR(pg_catalog.=) 'interval' THEN '''1 s'''
                WHEN a.base OPERATOR(pg_catalog.=) 'regclass' THEN '''pg_catalog.pg_class'''
                WHEN a.base OPERATOR(pg_catalog.=) ANY (ARRAY['jsonb', 'json']::pg_catalog.name[]) THEN '''{}'''
                WHEN a.base OPERATOR(pg_catalog.=) 'uuid' THEN '''00000000-0000-0000-0000-000000000001'''
                ELSE 'NULL' END OPERATOR(pg_catalog.||) '::' OPERATOR(pg_catalog.||) a.tname AS v
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
