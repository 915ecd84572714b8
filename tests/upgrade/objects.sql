-- tests/upgrade/objects.sql — every SQL object of extension pg_idgen in this database, one line
-- per object or property, free of OIDs and sorted: two databases have the same extension
-- exactly when their outputs are equal (the upgrade test compares a database updated from
-- 0.1.0 with a fresh install). Run with psql -XAt. A NULL ACL is shown as what it means
-- (acldefault): pg_upgrade turns an ACL equal to the old major's default into NULL, and the
-- default differs between majors (17 added MAINTAIN).
SET search_path = pg_catalog, pg_temp;
WITH ext AS (
    SELECT e.oid, e.extnamespace, e.extversion, e.extrelocatable, e.extconfig, e.extcondition
      FROM pg_extension e WHERE e.extname = 'pg_idgen'
), member AS (
    SELECT d.classid, d.objid FROM pg_depend d, ext
     WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'
), rel AS (
    SELECT c.* FROM pg_class c JOIN member m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
), fn AS (
    SELECT p.* FROM pg_proc p JOIN member m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
), lines(line) AS (
    SELECT 'extension version=' || extversion || ' relocatable=' || extrelocatable
           || ' schema=' || extnamespace::regnamespace::text FROM ext
    UNION ALL
    SELECT 'config ' || c.relname || ' condition=' || coalesce(x.cond, '<null>')
      FROM ext, unnest(ext.extconfig, ext.extcondition) AS x(cfg, cond) JOIN pg_class c ON c.oid = x.cfg
    UNION ALL
    SELECT 'member ' || pg_describe_object(m.classid, m.objid, 0) FROM member m
    UNION ALL
    SELECT format('function %s(%s) -> %s | args %s | %s vol=%s strict=%s parallel=%s secdef=%s leakproof=%s cost=%s rows=%s retset=%s config=%s symbol=%s bin=%s acl=%s | %s',
                  p.proname, pg_get_function_identity_arguments(p.oid), pg_get_function_result(p.oid),
                  pg_get_function_arguments(p.oid), l.lanname, p.provolatile, p.proisstrict,
                  p.proparallel, p.prosecdef, p.proleakproof, p.procost, p.prorows, p.proretset,
                  coalesce(p.proconfig::text, '-'),
                  CASE WHEN l.lanname = 'c' THEN p.prosrc ELSE md5(p.prosrc) END,
                  coalesce(p.probin, '-'), coalesce(p.proacl, acldefault('f', p.proowner))::text,
                  coalesce(obj_description(p.oid, 'pg_proc'), '-'))
      FROM fn p JOIN pg_language l ON l.oid = p.prolang
    UNION ALL
    SELECT format('relation %s kind=%s persistence=%s options=%s acl=%s | %s', c.relname, c.relkind,
                  c.relpersistence, coalesce(c.reloptions::text, '-'),
                  coalesce(c.relacl, acldefault(CASE WHEN c.relkind = 'S' THEN 's' ELSE 'r' END::"char", c.relowner))::text,
                  coalesce(obj_description(c.oid, 'pg_class'), '-'))
      FROM rel c
    UNION ALL
    SELECT format('column %s.%s %s notnull=%s default=%s identity=%s generated=%s collation=%s acl=%s',
                  c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
                  coalesce(pg_get_expr(d.adbin, d.adrelid), '-'), a.attidentity, a.attgenerated,
                  coalesce(a.attcollation::regcollation::text, '-'), coalesce(a.attacl::text, '-'))
      FROM rel c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
      LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
    UNION ALL
    -- constraint names are compared too (the upgrade must not leave differently named ones)
    SELECT format('constraint %s.%s %s', c.relname, k.conname, pg_get_constraintdef(k.oid))
      FROM rel c JOIN pg_constraint k ON k.conrelid = c.oid
    UNION ALL
    SELECT format('index %s', regexp_replace(pg_get_indexdef(i.indexrelid), ' ON \S+\.', ' ON '))
      FROM rel c JOIN pg_index i ON i.indrelid = c.oid
    UNION ALL
    SELECT format('trigger %s.%s %s enabled=%s', c.relname, t.tgname,
                  regexp_replace(pg_get_triggerdef(t.oid), ' ON \S+\.', ' ON '), t.tgenabled)
      FROM rel c JOIN pg_trigger t ON t.tgrelid = c.oid AND NOT t.tgisinternal
    UNION ALL
    SELECT format('view %s %s', c.relname, pg_get_viewdef(c.oid)) FROM rel c WHERE c.relkind = 'v'
    UNION ALL
    SELECT format('type %s type=%s', t.typname, t.typtype)
      FROM pg_type t JOIN member m ON m.classid = 'pg_type'::regclass AND m.objid = t.oid
    UNION ALL
    SELECT format('event trigger %s on %s tags %s enabled=%s function %s', e.evtname, e.evtevent,
                  coalesce(e.evttags::text, '-'), e.evtenabled, e.evtfoid::regproc)
      FROM pg_event_trigger e JOIN member m ON m.classid = 'pg_event_trigger'::regclass AND m.objid = e.oid
)
SELECT line FROM lines ORDER BY line COLLATE "C";
