-- migrate_owner: uid_migrate_key run by a superuser never runs another role's code as the
-- superuser. Every statement on a table runs as that table's owner, as a security-restricted
-- operation with search_path pinned (as VACUUM, REINDEX and REFRESH MATERIALIZED VIEW do):
-- a CHECK constraint calling the owner's function runs with the owner's rights, so its
-- ALTER ROLE ... SUPERUSER fails, and the role stays what it was.
SET client_min_messages = warning;
\set SHOW_CONTEXT never
CREATE ROLE regress_eve LOGIN NOSUPERUSER;
CREATE SCHEMA eve AUTHORIZATION regress_eve;
CREATE TABLE public.eve_calls (by_user name, sec_restricted_set_role text, outcome text);
GRANT INSERT, SELECT ON public.eve_calls TO regress_eve;

-- the DBA's table, with an integer key that references from other roles' tables hold
CREATE TABLE public.dba_orders (id serial PRIMARY KEY, v text);
INSERT INTO public.dba_orders (v) SELECT 'o' || g FROM generate_series(1, 3) g;
GRANT REFERENCES ON public.dba_orders TO regress_eve;

\c - regress_eve
SET client_min_messages = warning;
-- the role's function: records who runs it, tries to become superuser (and to leave the
-- restricted context), and raises its failure when eve.mode says so
CREATE TABLE eve.mode (strict boolean);
INSERT INTO eve.mode VALUES (false);
GRANT SELECT ON eve.mode TO PUBLIC;
CREATE FUNCTION eve.grab(v bigint) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  r text := 'not tried';
  o text;
  must_raise boolean := (SELECT m.strict FROM eve.mode m);
BEGIN
  BEGIN
    EXECUTE 'SET ROLE NONE';
    r := 'allowed';
  EXCEPTION WHEN others THEN r := SQLSTATE;
  END;
  BEGIN
    EXECUTE 'ALTER ROLE regress_eve SUPERUSER';
    o := 'became superuser';
  EXCEPTION WHEN others THEN
    o := SQLSTATE || ': ' || SQLERRM;
    INSERT INTO public.eve_calls VALUES (current_user, r, o);
    IF must_raise THEN RAISE; END IF;
    RETURN true;
  END;
  INSERT INTO public.eve_calls VALUES (current_user, r, o);
  RETURN true;
END $$;
-- 1. a table referencing the DBA's table, with a CHECK calling the function
CREATE TABLE eve.refs (id int PRIMARY KEY, order_id int REFERENCES public.dba_orders (id),
                       CONSTRAINT refs_grab CHECK (eve.grab(order_id)));
INSERT INTO eve.refs VALUES (1, 1);
-- 2. a table the role asks the DBA to convert, with a CHECK calling it
CREATE TABLE eve.ask (id serial PRIMARY KEY, v text, CONSTRAINT ask_grab CHECK (eve.grab(id)));
INSERT INTO eve.ask (v) VALUES ('a'), ('b');
-- an index expression calling it too (re-evaluated by the rewrite)
CREATE FUNCTION eve.grab_immutable(v bigint) RETURNS boolean IMMUTABLE LANGUAGE sql AS 'SELECT eve.grab(v)';
CREATE INDEX ON eve.ask ((eve.grab_immutable(id)));
UPDATE eve.mode SET strict = true;
\c - postgres
SET client_min_messages = warning;
\set SHOW_CONTEXT never
TRUNCATE public.eve_calls;

-- 1. the DBA converts its own table; the referencing column of eve.refs is converted as
--    regress_eve: its CHECK runs as regress_eve and fails on ALTER ROLE, so nothing is converted
-- (15 words the refusal of ALTER ROLE ... SUPERUSER "must be superuser to alter superuser roles
-- or change superuser attribute", 16 and later "permission denied to alter role")
SELECT regress_sqlstate_of($$SELECT * FROM uid_migrate_key('public.dba_orders', 'id', to_bigint => true)$$)
       ~ '^42501: (permission denied to alter role|must be superuser to alter superuser roles)' AS fk_owner_check_alter_role_refused;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_eve';
SELECT DISTINCT by_user, sec_restricted_set_role, left(outcome, 5) AS outcome FROM public.eve_calls;
SELECT format_type(atttypid, NULL) AS still_integer FROM pg_attribute WHERE attrelid = 'public.dba_orders'::regclass AND attname = 'id';
TRUNCATE public.eve_calls;
-- once the role's constraint stops raising, the conversion goes through, its code still as itself
UPDATE eve.mode SET strict = false;
TRUNCATE public.eve_calls;
SELECT count(*) AS statements FROM uid_migrate_key('public.dba_orders', 'id', to_bigint => true);
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_eve';
SELECT DISTINCT by_user, sec_restricted_set_role, left(outcome, 5) AS outcome FROM public.eve_calls;
SELECT format_type(atttypid, NULL) AS converted FROM pg_attribute
 WHERE (attrelid, attname) IN (('public.dba_orders'::regclass, 'id'), ('eve.refs'::regclass, 'order_id')) ORDER BY attrelid;
TRUNCATE public.eve_calls;

-- 2. the DBA converts the role's table on request: its CHECK and index expression run as the role
SELECT count(*) AS statements FROM uid_migrate_key('eve.ask', 'id', to_bigint => true);
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_eve';
SELECT DISTINCT by_user, sec_restricted_set_role, left(outcome, 5) AS outcome FROM public.eve_calls;
SELECT format_type(a.atttypid, NULL) AS converted, pg_get_expr(d.adbin, d.adrelid) AS new_default
  FROM pg_attribute a JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE a.attrelid = 'eve.ask'::regclass AND a.attname = 'id';
TRUNCATE public.eve_calls;

-- a child with another owner: refused before anything runs (the conversion recurses into it,
-- and its code would run as the parent's owner)
CREATE TABLE eve.par (id serial PRIMARY KEY);
ALTER TABLE eve.par OWNER TO regress_eve;
CREATE TABLE public.kid () INHERITS (eve.par);
SELECT regress_sqlstate_of($$SELECT * FROM uid_migrate_key('eve.par', 'id', to_bigint => true)$$) AS child_of_other_owner;
SELECT format_type(atttypid, NULL) AS still_integer FROM pg_attribute WHERE attrelid = 'eve.par'::regclass AND attname = 'id';
DROP TABLE public.kid, eve.par;

-- the helper that runs a statement as a table's owner refuses a caller without the owner's
-- privileges (regress_eve on the DBA's table), and runs nothing elevated for a member
\c - regress_eve
SET client_min_messages = warning;
\set SHOW_CONTEXT never
SELECT regress_sqlstate_of($$SELECT pg_idgen_migrate_as_owner('public.dba_orders', 'ALTER TABLE public.dba_orders ADD COLUMN x int')$$) AS not_owner;
SELECT regress_sqlstate_of($$SELECT pg_idgen_migrate_as_owner('eve.ask', 'ALTER ROLE regress_eve SUPERUSER')$$)
       ~ '^42501: (permission denied to alter role|must be superuser to alter superuser roles)' AS own_table_own_rights_alter_role_refused;
-- any role may call the helper (uid_migrate_key, SECURITY INVOKER, calls it as the caller), so
-- every statement it cannot run has a real SQLSTATE: a query whose first column is no integer
-- (42804), no column (42804), transaction control and COPY to the client (0A000), as
-- PL/pgSQL's EXECUTE refuses them; an integer or NULL is returned, DDL gives NULL
SELECT regress_sqlstate_of($$SELECT pg_idgen_migrate_as_owner('eve.ask', 'SELECT ''x''::text')$$) AS text_result;
SELECT regress_sqlstate_of($$SELECT pg_idgen_migrate_as_owner('eve.ask', 'SELECT 1.5::numeric')$$) AS numeric_result;
SELECT regress_sqlstate_of($$SELECT pg_idgen_migrate_as_owner('eve.ask', 'SELECT')$$) AS no_column;
SELECT regress_sqlstate_of($$SELECT pg_idgen_migrate_as_owner('eve.ask', 'COMMIT')$$) AS commit_stmt;
SELECT regress_sqlstate_of($$SELECT pg_idgen_migrate_as_owner('eve.ask', 'ROLLBACK')$$) AS rollback_stmt;
SELECT regress_sqlstate_of($$SELECT pg_idgen_migrate_as_owner('eve.ask', 'SAVEPOINT s')$$) AS savepoint_stmt;
SELECT regress_sqlstate_of($$SELECT pg_idgen_migrate_as_owner('eve.ask', 'COPY eve.ask TO STDOUT')$$) AS copy_to_client;
SELECT pg_idgen_migrate_as_owner('eve.ask', 'SELECT max(id)::bigint FROM eve.ask') AS max_id,
       pg_idgen_migrate_as_owner('eve.ask', 'SELECT 7::int, ''x''::text') AS int_first_column,
       pg_idgen_migrate_as_owner('eve.ask', 'SELECT NULL::bigint') AS null_result,
       pg_idgen_migrate_as_owner('eve.ask', 'SELECT 1::bigint WHERE false') AS no_row,
       pg_idgen_migrate_as_owner('eve.ask', 'COMMENT ON TABLE eve.ask IS NULL') AS ddl;
\c - postgres
SET client_min_messages = warning;
SELECT rolsuper FROM pg_roles WHERE rolname = 'regress_eve';
SELECT count(*) AS calls_left FROM public.eve_calls;
-- the helper is executable by whoever may run uid_migrate_key (it calls it as the caller): the
-- same grants
SELECT has_function_privilege('public', 'pg_idgen_migrate_as_owner(regclass, text)', 'EXECUTE')
       = has_function_privilege('public', 'uid_migrate_key(regclass, name, text, text, boolean, boolean, boolean)', 'EXECUTE')
       AS helper_granted_as_uid_migrate_key;

DROP TABLE eve.refs, eve.ask, public.dba_orders;
DROP SCHEMA eve CASCADE;
DROP TABLE public.eve_calls;
DROP ROLE regress_eve;
