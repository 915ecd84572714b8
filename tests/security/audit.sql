-- tests/security/audit.sql — what the extension's SQL binds to, from the catalog alone.
--
-- Run in a database that has pg_idgen. Prints one row per violation and nothing when the
-- extension is sound, so a test compares the output with the empty string:
--   * every function, operator, type, cast, collation, operator class or family and relation that
--     a member of the extension references lives in pg_catalog or is itself a member. Members
--     and their parts (a view's query, a table's defaults, constraints and triggers, a BEGIN
--     ATOMIC body, ...) are walked by refs.sql. What the owner of the extension's schema (often
--     an ordinary role) planted there is never a member, so an unqualified name or operator that
--     resolved to such a plant at CREATE EXTENSION or ALTER EXTENSION UPDATE time shows up here;
--   * a function whose body is a string (LANGUAGE sql or plpgsql) is resolved when it runs, so it
--     must pin search_path = pg_catalog, pg_temp (names of the extension itself are then written
--     with the extension's schema);
--   * a SECURITY DEFINER function must pin its search_path the same way;
--   * an internal function (named pg_idgen_*) or a SECURITY DEFINER function is not executable
--     by PUBLIC: the extension revokes it and grants it to whom it is for. The exceptions are
--     listed below with the reason each is safe for every role; a new one is reported until it
--     is revoked or listed here;
--   * PUBLIC may read some of the extension's tables and views, never write them (the roles that
--     write one get a grant of their own or go through a function that checks them).
\ir refs.sql
SELECT pg_catalog.format('%s binds %s (%s) outside pg_catalog and the extension',
                         pg_catalog.pg_describe_object(l.classid, l.objid, 0),
                         pg_catalog.pg_describe_object(l.refclassid, l.refobjid, 0),
                         COALESCE(l.refnsp::pg_catalog.regnamespace::pg_catalog.text, 'no schema')) AS violation
FROM pg_temp.pg_idgen_audit_refs l
WHERE NOT l.ref_is_member
  AND NOT (l.refnsp IS NOT NULL AND l.refnsp OPERATOR(pg_catalog.=) 'pg_catalog'::pg_catalog.regnamespace)
  -- an object with no schema (a cast, a large object, ...) counts as built in only when PostgreSQL
  -- made it: its OID below FirstNormalObjectId
  AND NOT (l.refnsp IS NULL AND l.refclassid OPERATOR(pg_catalog.<>) ALL (ARRAY['pg_catalog.pg_proc', 'pg_catalog.pg_operator', 'pg_catalog.pg_type', 'pg_catalog.pg_class']::pg_catalog.regclass[])
           AND l.refobjid OPERATOR(pg_catalog.<) 16384::pg_catalog.oid)
  -- a part referring to its own relation (a rule to its view, a default to its table, ...)
  AND NOT l.ref_is_own_relation
UNION ALL
SELECT pg_catalog.format('%s: its body is resolved when it runs, and it does not pin search_path = pg_catalog, pg_temp (proconfig %s)',
                         pg_catalog.pg_describe_object('pg_catalog.pg_proc'::pg_catalog.regclass, p.oid, 0),
                         COALESCE(p.proconfig::pg_catalog.text, 'none'))
FROM pg_catalog.pg_proc p JOIN pg_temp.pg_idgen_audit_members m
  ON m.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass AND m.objid OPERATOR(pg_catalog.=) p.oid
JOIN pg_catalog.pg_language lang ON lang.oid OPERATOR(pg_catalog.=) p.prolang
WHERE (lang.lanname OPERATOR(pg_catalog.<>) ALL (ARRAY['c', 'internal']::pg_catalog.name[]) AND p.prosqlbody IS NULL
       OR p.prosecdef)
  AND NOT COALESCE('search_path=pg_catalog, pg_temp' OPERATOR(pg_catalog.=) ANY (p.proconfig), false)
UNION ALL
SELECT pg_catalog.format('%s: internal or SECURITY DEFINER (%s), and PUBLIC may execute it',
                         pg_catalog.pg_describe_object('pg_catalog.pg_proc'::pg_catalog.regclass, p.oid, 0),
                         CASE WHEN p.prosecdef THEN 'SECURITY DEFINER' ELSE 'internal' END)
FROM pg_catalog.pg_proc p JOIN pg_temp.pg_idgen_audit_members m
  ON m.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass AND m.objid OPERATOR(pg_catalog.=) p.oid
WHERE (p.prosecdef OR p.proname OPERATOR(pg_catalog.~~) 'pg\_idgen\_%')
  -- no ACL is the default ACL of a function: EXECUTE for PUBLIC
  AND (p.proacl IS NULL
       OR EXISTS (SELECT FROM pg_catalog.aclexplode(p.proacl) a
                   WHERE a.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid
                     AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'))
  AND p.proname OPERATOR(pg_catalog.<>) ALL (ARRAY[
      -- called by uid_migrate_key (SECURITY INVOKER) as its caller; runs a statement as the
      -- table's owner only for a caller that has the owner's privileges and may SET ROLE to it
      'pg_idgen_migrate_as_owner',
      -- read by the pg_idgen_metrics view as the querying role: two counts of the instance
      'pg_idgen_worker_slots'
  ]::pg_catalog.name[])
UNION ALL
SELECT pg_catalog.format('%s: PUBLIC has %s on it', pg_catalog.pg_describe_object('pg_catalog.pg_class'::pg_catalog.regclass, c.oid, 0),
                         a.privilege_type)
FROM pg_catalog.pg_class c JOIN pg_temp.pg_idgen_audit_members m
  ON m.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass AND m.objid OPERATOR(pg_catalog.=) c.oid
CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) a
WHERE a.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid AND a.privilege_type OPERATOR(pg_catalog.<>) 'SELECT'
ORDER BY 1;
