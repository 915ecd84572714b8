-- tests/security/refs.sql — the temporary views pg_idgen_audit_members: every member of pg_idgen
-- (classid, objid), and pg_idgen_audit_refs: every object that a member, or a part of a member,
-- references (pg_depend), with the schema of the referenced object. A member is what pg_depend ties to the extension (deptype 'e'); the parts walked are a
-- view's rewrite rule (its query), a table's column defaults, constraints, triggers, policies and
-- index expressions, a domain's checks, and the body of an SQL function written as BEGIN ATOMIC.
-- Included by audit.sql and bound_names.sql.
SET search_path = pg_catalog, pg_temp;   -- CASE ... WHEN compares with an unqualified =
CREATE TEMPORARY VIEW pg_idgen_audit_members AS
SELECT d.classid, d.objid
FROM pg_catalog.pg_depend d JOIN pg_catalog.pg_extension e ON d.refobjid OPERATOR(pg_catalog.=) e.oid
WHERE e.extname OPERATOR(pg_catalog.=) 'pg_idgen'
  AND d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_extension'::pg_catalog.regclass
  AND d.deptype OPERATOR(pg_catalog.=) 'e';
CREATE TEMPORARY VIEW pg_idgen_audit_refs AS
WITH members AS (
    SELECT classid, objid FROM pg_temp.pg_idgen_audit_members
), member_rels AS (
    SELECT objid AS relid FROM members WHERE classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
), member_types AS (
    SELECT objid AS typid FROM members WHERE classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_type'::pg_catalog.regclass
), parts AS (          -- the members and the parts of member relations and types
    SELECT classid, objid FROM members
    UNION ALL SELECT 'pg_catalog.pg_rewrite'::pg_catalog.regclass, r.oid FROM pg_catalog.pg_rewrite r JOIN member_rels m ON r.ev_class OPERATOR(pg_catalog.=) m.relid
    UNION ALL SELECT 'pg_catalog.pg_attrdef'::pg_catalog.regclass, a.oid FROM pg_catalog.pg_attrdef a JOIN member_rels m ON a.adrelid OPERATOR(pg_catalog.=) m.relid
    UNION ALL SELECT 'pg_catalog.pg_constraint'::pg_catalog.regclass, c.oid FROM pg_catalog.pg_constraint c
              WHERE c.conrelid OPERATOR(pg_catalog.=) ANY (SELECT relid FROM member_rels)
                 OR c.contypid OPERATOR(pg_catalog.=) ANY (SELECT typid FROM member_types)
    UNION ALL SELECT 'pg_catalog.pg_trigger'::pg_catalog.regclass, t.oid FROM pg_catalog.pg_trigger t JOIN member_rels m ON t.tgrelid OPERATOR(pg_catalog.=) m.relid
    UNION ALL SELECT 'pg_catalog.pg_policy'::pg_catalog.regclass, p.oid FROM pg_catalog.pg_policy p JOIN member_rels m ON p.polrelid OPERATOR(pg_catalog.=) m.relid
    UNION ALL SELECT 'pg_catalog.pg_class'::pg_catalog.regclass, i.indexrelid FROM pg_catalog.pg_index i JOIN member_rels m ON i.indrelid OPERATOR(pg_catalog.=) m.relid
), refs AS (
    SELECT p.classid, p.objid, d.refclassid, d.refobjid
    FROM parts p JOIN pg_catalog.pg_depend d
      ON d.classid OPERATOR(pg_catalog.=) p.classid AND d.objid OPERATOR(pg_catalog.=) p.objid
    WHERE d.refclassid OPERATOR(pg_catalog.<>) 'pg_catalog.pg_extension'::pg_catalog.regclass
      AND d.refclassid OPERATOR(pg_catalog.<>) 'pg_catalog.pg_namespace'::pg_catalog.regclass
      AND d.refclassid OPERATOR(pg_catalog.<>) 'pg_catalog.pg_authid'::pg_catalog.regclass
), located AS (       -- the schema of each referenced object (NULL: an object without one)
    SELECT r.*,
           CASE r.refclassid
             WHEN 'pg_catalog.pg_proc'::pg_catalog.regclass THEN (SELECT pronamespace FROM pg_catalog.pg_proc WHERE oid OPERATOR(pg_catalog.=) r.refobjid)
             WHEN 'pg_catalog.pg_operator'::pg_catalog.regclass THEN (SELECT oprnamespace FROM pg_catalog.pg_operator WHERE oid OPERATOR(pg_catalog.=) r.refobjid)
             WHEN 'pg_catalog.pg_type'::pg_catalog.regclass THEN (SELECT typnamespace FROM pg_catalog.pg_type WHERE oid OPERATOR(pg_catalog.=) r.refobjid)
             WHEN 'pg_catalog.pg_class'::pg_catalog.regclass THEN (SELECT relnamespace FROM pg_catalog.pg_class WHERE oid OPERATOR(pg_catalog.=) r.refobjid)
             WHEN 'pg_catalog.pg_collation'::pg_catalog.regclass THEN (SELECT collnamespace FROM pg_catalog.pg_collation WHERE oid OPERATOR(pg_catalog.=) r.refobjid)
             WHEN 'pg_catalog.pg_opclass'::pg_catalog.regclass THEN (SELECT opcnamespace FROM pg_catalog.pg_opclass WHERE oid OPERATOR(pg_catalog.=) r.refobjid)
             WHEN 'pg_catalog.pg_opfamily'::pg_catalog.regclass THEN (SELECT opfnamespace FROM pg_catalog.pg_opfamily WHERE oid OPERATOR(pg_catalog.=) r.refobjid)
             WHEN 'pg_catalog.pg_ts_config'::pg_catalog.regclass THEN (SELECT cfgnamespace FROM pg_catalog.pg_ts_config WHERE oid OPERATOR(pg_catalog.=) r.refobjid)
             WHEN 'pg_catalog.pg_ts_dict'::pg_catalog.regclass THEN (SELECT dictnamespace FROM pg_catalog.pg_ts_dict WHERE oid OPERATOR(pg_catalog.=) r.refobjid)
             WHEN 'pg_catalog.pg_conversion'::pg_catalog.regclass THEN (SELECT connamespace FROM pg_catalog.pg_conversion WHERE oid OPERATOR(pg_catalog.=) r.refobjid)
           END AS refnsp
    FROM refs r
)
SELECT l.*, EXISTS (SELECT FROM parts m WHERE m.classid OPERATOR(pg_catalog.=) l.refclassid
                                          AND m.objid OPERATOR(pg_catalog.=) l.refobjid) AS ref_is_member,
       l.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass
           AND l.refobjid OPERATOR(pg_catalog.=) ANY (SELECT relid FROM member_rels) AS ref_is_own_relation
FROM located l;
