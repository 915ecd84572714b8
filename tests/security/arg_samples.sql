-- tests/security/arg_samples.sql — included (\ir) by gen_calls.sql and gen_avail_calls.sql, the
-- two generators of calls to every function of pg_idgen: two temporary views.
-- pg_temp.pg_idgen_callables: each function and procedure of the extension that SQL can call (not
-- those returning trigger, event_trigger or internal): oid, proname, prokind, pronargs,
-- pronargdefaults, ident (its regprocedure), qname (schema-qualified name), argnames.
-- pg_temp.pg_idgen_arg_samples: one row per argument of each of them, with
--   oid, pos       the function and the argument's position (1-based)
--   argname        its name, if any
--   tname          its type, schema-qualified, as a cast names it ("pg_catalog.int4[]" for arrays)
--   elem, base     the element type of an array (else NULL) and the type's own name
--   sample         an ordinary value as a literal (without the cast): by the argument's name where
--                  the type alone gives a value every call refuses (a radix, a text format, a table
--                  of the caller's for uid_migrate_key), else by its type; NULL where none is known
-- A generator puts its own values first (the attacker's objects, a worker id) and the cast after.
\set pg_idgen_was_quiet :QUIET
\set QUIET on
SET search_path = pg_catalog, pg_temp;
CREATE TEMPORARY VIEW pg_idgen_callables AS
SELECT p.oid, p.proname, p.prokind, p.pronargs, p.pronargdefaults,
       p.oid::pg_catalog.regprocedure::pg_catalog.text AS ident,
       pg_catalog.quote_ident(n.nspname) OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(p.proname) AS qname,
       p.proargnames AS argnames
FROM pg_catalog.pg_proc p
JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace
JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass
     AND d.objid OPERATOR(pg_catalog.=) p.oid AND d.deptype OPERATOR(pg_catalog.=) 'e'
JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid AND e.extname OPERATOR(pg_catalog.=) 'pg_idgen'
WHERE p.prorettype OPERATOR(pg_catalog.<>) ALL (ARRAY['pg_catalog.trigger', 'pg_catalog.event_trigger', 'pg_catalog.internal']::pg_catalog.regtype[])
  AND p.prokind OPERATOR(pg_catalog.=) ANY (ARRAY['f', 'p']::"char"[]);
CREATE TEMPORARY VIEW pg_idgen_arg_samples AS
WITH args AS (
    SELECT p.oid, a.pos, p.proargnames[a.pos::pg_catalog.int4] AS argname,
           CASE WHEN ty.typelem OPERATOR(pg_catalog.<>) 0 AND ty.typlen OPERATOR(pg_catalog.=) -1
                THEN pg_catalog.format('%I.%I[]', en.nspname, et.typname)
                ELSE pg_catalog.format('%I.%I', tn.nspname, ty.typname) END AS tname,
           CASE WHEN ty.typelem OPERATOR(pg_catalog.<>) 0 AND ty.typlen OPERATOR(pg_catalog.=) -1 THEN et.typname END AS elem,
           ty.typname AS base
    FROM pg_catalog.pg_proc p
    JOIN pg_temp.pg_idgen_callables c ON c.oid OPERATOR(pg_catalog.=) p.oid
    CROSS JOIN LATERAL pg_catalog.unnest(p.proargtypes::pg_catalog.oid[]) WITH ORDINALITY a(t, pos)
    JOIN pg_catalog.pg_type ty ON ty.oid OPERATOR(pg_catalog.=) a.t
    JOIN pg_catalog.pg_namespace tn ON tn.oid OPERATOR(pg_catalog.=) ty.typnamespace
    LEFT JOIN pg_catalog.pg_type et ON et.oid OPERATOR(pg_catalog.=) ty.typelem
    LEFT JOIN pg_catalog.pg_namespace en ON en.oid OPERATOR(pg_catalog.=) et.typnamespace
)
SELECT a.oid, a.pos, a.argname, a.tname, a.elem, a.base,
       CASE WHEN a.argname OPERATOR(pg_catalog.=) 'radix' THEN '''10'''
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
            ELSE 'NULL' END AS sample
FROM args a;
\set QUIET :pg_idgen_was_quiet
\unset pg_idgen_was_quiet
