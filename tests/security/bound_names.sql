-- tests/security/bound_names.sql — the names of the functions and operators that the members of
-- pg_idgen bind (refs.sql), as two lines: function names, then operator names. The hostile
-- install test plants a shadow of each (with tests/security/shadow_names.py's names from the
-- source) before a superuser installs or updates the extension.
\ir refs.sql
SELECT COALESCE(pg_catalog.string_agg(DISTINCT p.proname::pg_catalog.text, ' '), '')
FROM pg_temp.pg_idgen_audit_refs r JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) r.refobjid
WHERE r.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass;
SELECT COALESCE(pg_catalog.string_agg(DISTINCT o.oprname::pg_catalog.text, ' '), '')
FROM pg_temp.pg_idgen_audit_refs r JOIN pg_catalog.pg_operator o ON o.oid OPERATOR(pg_catalog.=) r.refobjid
WHERE r.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_operator'::pg_catalog.regclass;
