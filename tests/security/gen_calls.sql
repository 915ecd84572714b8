-- tests/security/gen_calls.sql — one SQL statement per line calling the functions of pg_idgen,
-- enumerated from pg_proc (a function the next release adds is called without anyone remembering
-- to add it). psql variable mode:
--   sample  each function once with ordinary arguments (text 'hostile', numbers 1, ...), and once
--           with its required arguments only; every view read once;
--   fuzz    each function with NULL in every argument, NULL in each argument alone, the extremes
--           of each argument's type in turn (ends of the integer types, NaN and infinities, empty
--           and 1 MB strings, 1 MB byte strings, infinite times, 100,000-element arrays) and a
--           wrong type in each position (an unparsable literal, a timestamptz).
-- Ordinary values are chosen by the argument's name where one is known (a radix, a text format, a
-- table of the caller's for uid_migrate_key), else by its type.
-- Calls are schema-qualified and casts name pg_catalog's types, so the caller's search_path
-- (which may put a hostile schema first) decides nothing but what the extension decides itself.
-- Functions whose names say they drop or release come last.
\ir arg_samples.sql
SET search_path = pg_catalog, pg_temp;
WITH fns AS (
    SELECT c.* FROM pg_temp.pg_idgen_callables c
), args AS (          -- one row per argument: position, qualified type name, its element type
    SELECT s.* FROM pg_temp.pg_idgen_arg_samples s JOIN fns f ON f.oid OPERATOR(pg_catalog.=) s.oid
), sample AS (        -- an ordinary value of each argument, as an expression
    SELECT a.oid, a.pos, a.tname,
           CASE WHEN a.argname OPERATOR(pg_catalog.=) 'worker_id' THEN '''3''' ELSE a.sample END
           OPERATOR(pg_catalog.||) '::' OPERATOR(pg_catalog.||) a.tname AS v
    FROM args a
), extreme AS (       -- the extremes of each argument's type, and wrong types
    SELECT a.oid, a.pos, x.v
    FROM args a, LATERAL pg_catalog.unnest(
        CASE WHEN a.elem IS NOT NULL THEN
                  ARRAY['''{}''::' OPERATOR(pg_catalog.||) a.tname, '''{NULL}''::' OPERATOR(pg_catalog.||) a.tname,
                        CASE WHEN a.elem OPERATOR(pg_catalog.~) '^(int|float|numeric|oid)'
                             THEN 'ARRAY(SELECT pg_catalog.generate_series(1, 100000))::' OPERATOR(pg_catalog.||) a.tname
                             ELSE 'ARRAY(SELECT pg_catalog.repeat(''x'', 64) FROM pg_catalog.generate_series(1, 100000))::' OPERATOR(pg_catalog.||) a.tname END]
             WHEN a.base OPERATOR(pg_catalog.=) 'int2' THEN ARRAY['''-32768''', '''32767''', '''0''', '''-1''']
             WHEN a.base OPERATOR(pg_catalog.=) 'int4' THEN ARRAY['''-2147483648''', '''2147483647''', '''0''', '''-1''']
             WHEN a.base OPERATOR(pg_catalog.=) 'int8' THEN ARRAY['''-9223372036854775808''', '''9223372036854775807''', '''0''', '''-1''', '''4611686018427387904''']
             WHEN a.base OPERATOR(pg_catalog.~) '^float' THEN ARRAY['''NaN''', '''Infinity''', '''-Infinity''', '''1e308''', '''-0''']
             WHEN a.base OPERATOR(pg_catalog.=) 'numeric' THEN ARRAY['''NaN''', '''1e1000''', '''-1e1000''', '''0.5''']
             WHEN a.base OPERATOR(pg_catalog.=) ANY (ARRAY['text', 'varchar', 'name', 'bpchar']::pg_catalog.name[]) THEN
                  ARRAY['''''', 'pg_catalog.repeat(''x'', 1000000)', 'pg_catalog.chr(1)', '''é''', '''%s%n%%''', '''a"b''''c''', ''' ''', 'pg_catalog.repeat(''x'', 64)', '''-1''']
             WHEN a.base OPERATOR(pg_catalog.=) 'bytea' THEN ARRAY['''\x''', 'pg_catalog.decode(pg_catalog.repeat(''ff'', 1000000), ''hex'')']
             WHEN a.base OPERATOR(pg_catalog.=) 'bool' THEN ARRAY['''false''']
             WHEN a.base OPERATOR(pg_catalog.~) '^(timestamp|date)' THEN ARRAY['''infinity''', '''-infinity''', '''4713-01-01 00:00:00+00 BC''', '''294276-12-31 23:59:59+00''']
             WHEN a.base OPERATOR(pg_catalog.=) 'interval' THEN ARRAY['''178000000 years''', '''-178000000 years''', '''0''', '''-1 us''']
             WHEN a.base OPERATOR(pg_catalog.=) 'regclass' THEN ARRAY['''0''', '''pg_catalog.pg_proc''']
             WHEN a.base OPERATOR(pg_catalog.=) ANY (ARRAY['jsonb', 'json']::pg_catalog.name[]) THEN ARRAY['''null''', '''[]''', '''{"a": [1, {"b": null}]}''']
             ELSE ARRAY[]::pg_catalog.text[] END) AS e(v0)
         CROSS JOIN LATERAL (SELECT CASE WHEN e.v0 OPERATOR(pg_catalog.~) '::' THEN e.v0 ELSE e.v0 OPERATOR(pg_catalog.||) '::' OPERATOR(pg_catalog.||) a.tname END) x(v)
    UNION ALL SELECT a.oid, a.pos, '''garbage''' FROM args a         -- an unparsable literal
    UNION ALL SELECT a.oid, a.pos, 'pg_catalog.now()' FROM args a    -- a timestamptz
), calls AS (
    -- ordinary arguments
    SELECT f.oid, 0 AS k, (SELECT pg_catalog.string_agg(s.v, ', ' ORDER BY s.pos) FROM sample s WHERE s.oid OPERATOR(pg_catalog.=) f.oid) AS arglist
    FROM fns f WHERE :'mode' OPERATOR(pg_catalog.=) 'sample'
    UNION ALL         -- the required arguments alone
    SELECT f.oid, 1, (SELECT pg_catalog.string_agg(s.v, ', ' ORDER BY s.pos) FROM sample s
                      WHERE s.oid OPERATOR(pg_catalog.=) f.oid AND s.pos OPERATOR(pg_catalog.<=) (f.pronargs OPERATOR(pg_catalog.-) f.pronargdefaults))
    FROM fns f WHERE :'mode' OPERATOR(pg_catalog.=) 'sample' AND f.pronargdefaults OPERATOR(pg_catalog.>) 0
    UNION ALL         -- NULL everywhere
    SELECT f.oid, 2, (SELECT pg_catalog.string_agg('NULL::' OPERATOR(pg_catalog.||) a.tname, ', ' ORDER BY a.pos) FROM args a WHERE a.oid OPERATOR(pg_catalog.=) f.oid)
    FROM fns f WHERE :'mode' OPERATOR(pg_catalog.=) 'fuzz' AND f.pronargs OPERATOR(pg_catalog.>) 0
    UNION ALL         -- NULL in one argument, or an extreme or wrong value, the others ordinary
    SELECT x.oid, 3, (SELECT pg_catalog.string_agg(CASE WHEN s.pos OPERATOR(pg_catalog.=) x.pos THEN x.v ELSE s.v END, ', ' ORDER BY s.pos)
                      FROM sample s WHERE s.oid OPERATOR(pg_catalog.=) x.oid)
    FROM (SELECT a.oid, a.pos, 'NULL::' OPERATOR(pg_catalog.||) a.tname AS v FROM args a
          UNION ALL SELECT oid, pos, v FROM extreme) x
    WHERE :'mode' OPERATOR(pg_catalog.=) 'fuzz'
)
SELECT pg_catalog.format('%s %s(%s);', CASE f.prokind WHEN 'p' THEN 'CALL' ELSE 'SELECT' END, f.qname, COALESCE(c.arglist, ''))
FROM calls c JOIN fns f ON f.oid OPERATOR(pg_catalog.=) c.oid
ORDER BY f.proname OPERATOR(pg_catalog.~) '(drop|clear|release|retire)', f.proname, c.k, c.arglist;
-- every view of the extension, read whole
SELECT pg_catalog.format('SELECT * FROM %I.%I;', n.nspname, c.relname)
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
     AND d.objid OPERATOR(pg_catalog.=) c.oid AND d.deptype OPERATOR(pg_catalog.=) 'e'
JOIN pg_catalog.pg_extension e ON e.oid OPERATOR(pg_catalog.=) d.refobjid AND e.extname OPERATOR(pg_catalog.=) 'pg_idgen'
WHERE c.relkind OPERATOR(pg_catalog.=) ANY (ARRAY['v', 'm']::"char"[])
ORDER BY c.relname;
