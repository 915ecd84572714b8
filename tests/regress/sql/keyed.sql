-- keyed sequences: keyed_create / keyed_next / keyed_last / keyed_drop, their errors, and a
-- hostile role calling them with a schema of shadowing functions first in its search_path.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_idgen;
SELECT keyed_create('conv', step => 100, section_size => 10);
SELECT space, step, section_size FROM pg_idgen_keyed_spaces;
-- values increase per key, independently of other keys
SELECT keyed_next('conv', 1) AS a1, keyed_next('conv', 1) AS a2, keyed_next('conv', 2) AS b1,
       keyed_next('conv', 1) AS a3;
-- keyed_last reads without consuming; a key never used reads its floor (0 after creation)
SELECT keyed_last('conv', 1) AS last1, keyed_last('conv', 1) AS again, keyed_last('conv', 999) AS unused;
-- n values at once: returns the last, the caller owns last-n+1 .. last
SELECT keyed_next('conv', 1, 5) AS last_of_5, keyed_next('conv', 1) AS after;
-- a ROLLBACK gives nothing back
BEGIN;
SELECT keyed_next('conv', 7) AS in_rolled_back;
ROLLBACK;
SELECT keyed_next('conv', 7) AS after_rollback;
-- crossing the bound (step 100) raises it durably and goes on
SELECT count(*) AS calls, max(v) AS last, bool_and(v > prev) AS increasing
FROM (SELECT v, lag(v, 1, 0::bigint) OVER (ORDER BY g) AS prev
      FROM (SELECT g, keyed_next('conv', 3) AS v FROM generate_series(1, 250) g) s) t;
SELECT space, bound >= 300 AS bound_raised, raises >= 3 AS raised FROM keyed_status;
-- keys at the ends of bigint, negative keys
SELECT keyed_next('conv', 9223372036854775807) > 0 AS max_key,
       keyed_next('conv', -9223372036854775808) > 0 AS min_key,
       keyed_next('conv', -1) > 0 AS negative;
-- in one statement, many keys: per key strictly increasing in call order
SELECT count(*) AS pairs, bool_and(v > prev) AS increasing
FROM (SELECT v, lag(v) OVER (PARTITION BY k ORDER BY g) AS prev
      FROM (SELECT g, g % 37 AS k, keyed_next('conv', g % 37) AS v FROM generate_series(1, 2000) g) s) t
WHERE prev IS NOT NULL;
-- errors: NULLs (22004), unknown space (42704), bad counts (22023), bad names
\set VERBOSITY sqlstate
SELECT keyed_next(NULL, 1);
SELECT keyed_next('conv', NULL);
SELECT keyed_next('conv', 1, NULL);
SELECT keyed_last(NULL, 1);
SELECT keyed_last('conv', NULL);
SELECT keyed_next('nope', 1);
SELECT keyed_last('nope', 1);
SELECT keyed_next('conv', 1, 0);
SELECT keyed_next('conv', 1, -1);
SELECT keyed_next('conv', 1, 101);
SELECT keyed_next('', 1);
SELECT keyed_next(repeat('x', 64), 1);
SELECT keyed_create(NULL);
SELECT keyed_create('bad', step => 0);
SELECT keyed_create('bad', section_size => 0);
SELECT keyed_create('bad', step => NULL);
SELECT keyed_create('conv');
SELECT keyed_drop(NULL);
SELECT keyed_drop('nope');
\set VERBOSITY default
SELECT keyed_next('conv', 1, 101);
SELECT keyed_next('nope', 1);
-- a read-only transaction cannot hand out values (they may need a durable raise), like nextval
BEGIN READ ONLY;
\set VERBOSITY sqlstate
SELECT keyed_next('conv', 1);
\set VERBOSITY default
ROLLBACK;
-- the end of bigint: the bound reaches 9223372036854775807, then the key is exhausted (22003);
-- the space's durable bounds (one per bucket of sections) moved by hand before its first use
SELECT keyed_create('edge', step => 1000, section_size => 1);
WITH u AS (UPDATE pg_idgen_keyed_bounds SET bound = 9223372036854774807 WHERE space = 'edge' RETURNING 1) SELECT count(*) = 1024 AS moved FROM u;
SELECT keyed_next('edge', 1, 1000) AS last_bigint;
\set VERBOSITY sqlstate
SELECT keyed_next('edge', 1);
\set VERBOSITY default
SELECT keyed_next('edge', 1);
SELECT keyed_next('edge', 2) AS other_key_goes_on;
SELECT keyed_drop('edge');
-- fleet mode: a node's last value is the largest bigint of its class (c * 16 + 3 for node 3 of
-- 16), then the key is exhausted (22003)
SELECT keyed_create('edge16', step => 1000, section_size => 1, nodes => 16, node_index => 3);
WITH u AS (UPDATE pg_idgen_keyed_bounds SET bound = (9223372036854775807 - 3) / 16 - 2000 WHERE space = 'edge16' RETURNING 1) SELECT count(*) = 1024 AS moved FROM u;
SELECT keyed_next('edge16', 1) AS first, keyed_next('edge16', 1, 1000) AS then,
       keyed_next('edge16', 1, 999) = ((9223372036854775807 - 3) / 16) * 16 + 3 AS class_max_reached;
\set VERBOSITY sqlstate
SELECT keyed_next('edge16', 1);
\set VERBOSITY default
SELECT keyed_drop('edge16');
-- fleet mode near the top with the steps people use: node 3 of 16 with steps 100 and 1,000, node
-- 1023 of 1024 with step 1,000, each moved by keyed_set_node (its own index) to 40 values below
-- the top of its class t = ((2^63 - 1 - k) / N) * N + k: every one of the 40 values is handed out,
-- the last t, then 22003; a 40-value reservation of another key gets the same 40 at once; the
-- raises stop at the top of the class (no whole step past it: the bounds end at its counter)
CREATE TABLE top_cases (space text, step int, nodes int, node_index int);
INSERT INTO top_cases VALUES ('top16s100', 100, 16, 3), ('top16s1000', 1000, 16, 3), ('top1024s1000', 1000, 1024, 1023);
SELECT space, keyed_create(space, step => step, section_size => 1, nodes => nodes, node_index => node_index) FROM top_cases ORDER BY space;
SELECT space, keyed_set_node(space, node_index, ((9223372036854775807 - node_index) / nodes) * nodes + node_index - 40 * nodes)
FROM top_cases ORDER BY space;
SELECT c.space, count(*) AS served, count(DISTINCT s.v) AS distinct_values, min(s.v) = t.top - 39 * c.nodes AS first_above_the_move,
       max(s.v) = t.top AS class_top_reached, bool_and(s.v % c.nodes = c.node_index) AS in_class,
       bool_and(s.v > s.prev) AS increasing
FROM top_cases c
CROSS JOIN LATERAL (SELECT ((9223372036854775807 - c.node_index) / c.nodes) * c.nodes + c.node_index AS top) t
CROSS JOIN LATERAL (SELECT v, lag(v, 1, -1::bigint) OVER (ORDER BY g) AS prev
                    FROM (SELECT g, keyed_next(c.space, 1) AS v FROM generate_series(1, 40) g) x) s
GROUP BY c.space, c.nodes, t.top ORDER BY c.space;
SELECT space, keyed_next(space, 2, 40) = ((9223372036854775807 - node_index) / nodes) * nodes + node_index AS forty_at_once_to_the_top
FROM top_cases ORDER BY space;
\set VERBOSITY sqlstate
SELECT keyed_next('top16s100', 1);
SELECT keyed_next('top16s1000', 1);
SELECT keyed_next('top1024s1000', 1);
SELECT keyed_next('top1024s1000', 2);
\set VERBOSITY default
SELECT keyed_next('top16s100', 1);
SELECT c.space, max(b.bound) = (9223372036854775807 - c.node_index) / c.nodes AS bounds_end_at_the_class_top,
       min(b.bound) = (9223372036854775807 - c.node_index) / c.nodes - 40 AS others_at_the_move
FROM top_cases c JOIN pg_idgen_keyed_bounds b USING (space) GROUP BY c.space, c.nodes, c.node_index ORDER BY c.space;
SELECT s.space, s.max_value = ((9223372036854775807 - c.node_index) / c.nodes) * c.nodes + c.node_index AS max_value_is_the_class_top
FROM keyed_status s JOIN top_cases c USING (space) ORDER BY s.space;
SELECT space, keyed_drop(space) FROM top_cases ORDER BY space;
DROP TABLE top_cases;
-- parallel plans: keyed_next is PARALLEL UNSAFE, keyed_last PARALLEL RESTRICTED (it reads the
-- catalog with a fresh snapshot, which a parallel worker cannot take): both run in the leader
SELECT proname, proparallel, provolatile, proisstrict FROM pg_proc
WHERE proname IN ('keyed_next', 'keyed_last', 'keyed_create', 'keyed_drop') ORDER BY proname, pronargs;
CREATE TABLE keyed_keys AS SELECT g AS k FROM generate_series(1, 20) g;
-- debug_parallel_query (force_parallel_mode on 15)
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000 THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END, 'on', false) AS parallel_forced;
SELECT count(*) AS n, bool_and(v > 0) AS positive FROM (SELECT keyed_next('conv', k) AS v FROM keyed_keys) s;
SELECT count(*) AS n, bool_and(v >= 0) AS read FROM (SELECT keyed_last('conv', k) AS v FROM keyed_keys) s;
SELECT set_config(CASE WHEN current_setting('server_version_num')::int >= 160000 THEN 'debug_parallel_query' ELSE 'force_parallel_mode' END, 'off', false) AS parallel_forced;
-- privileges: a space is usable by superusers and by the roles granted USAGE on it (none by
-- default); keyed_grant/keyed_revoke by superusers and holders of the grant option
CREATE ROLE regress_keyed_mallory LOGIN NOSUPERUSER;
CREATE ROLE regress_keyed_eve LOGIN NOSUPERUSER;
CREATE ROLE regress_keyed_app NOLOGIN;
SELECT space, owner = current_user AS owned_by_extension_owner, privileges FROM keyed_status WHERE space = 'conv';
\set VERBOSITY sqlstate
SET ROLE regress_keyed_mallory;
SELECT keyed_next('conv', 1);
SELECT keyed_next('conv', 1, 2);
SELECT keyed_last('conv', 1);
SELECT keyed_grant('conv', 'regress_keyed_mallory');
SELECT keyed_revoke('conv', 'regress_keyed_mallory');
RESET ROLE;
\set VERBOSITY default
SET ROLE regress_keyed_mallory;
SELECT keyed_next('conv', 1);
RESET ROLE;
-- granted: mallory may use it (the same backend had it refused: the cache sees the GRANT)
SELECT keyed_grant('conv', 'regress_keyed_mallory');
SET ROLE regress_keyed_mallory;
SELECT keyed_next('conv', 8001) AS granted, keyed_last('conv', 8001) AS granted_last;
-- without the grant option mallory cannot pass it on
\set VERBOSITY sqlstate
SELECT keyed_grant('conv', 'regress_keyed_eve');
RESET ROLE;
-- revoked: refused again in the same backend
SELECT keyed_revoke('conv', 'regress_keyed_mallory');
SET ROLE regress_keyed_mallory;
SELECT keyed_next('conv', 8001);
RESET ROLE;
\set VERBOSITY default
-- through a group role: granted to regress_keyed_app, mallory a member; the membership revoked,
-- refused again
SELECT keyed_grant('conv', 'regress_keyed_app');
GRANT regress_keyed_app TO regress_keyed_mallory;
SET ROLE regress_keyed_mallory;
SELECT keyed_next('conv', 8001) AS through_membership;
RESET ROLE;
REVOKE regress_keyed_app FROM regress_keyed_mallory;
\set VERBOSITY sqlstate
SET ROLE regress_keyed_mallory;
SELECT keyed_next('conv', 8001);
RESET ROLE;
\set VERBOSITY default
-- with the grant option mallory grants eve; revoking mallory's revokes eve's too (CASCADE)
SELECT keyed_grant('conv', 'regress_keyed_mallory', with_grant_option => true);
SET ROLE regress_keyed_mallory;
SELECT keyed_grant('conv', 'regress_keyed_eve');
RESET ROLE;
SET ROLE regress_keyed_eve;
SELECT keyed_next('conv', 8001) AS granted_by_mallory;
RESET ROLE;
SELECT keyed_revoke('conv', 'regress_keyed_mallory');
\set VERBOSITY sqlstate
SET ROLE regress_keyed_eve;
SELECT keyed_next('conv', 8001);
RESET ROLE;
\set VERBOSITY default
-- PUBLIC
SELECT keyed_grant('conv', 'public');
SET ROLE regress_keyed_eve;
SELECT keyed_next('conv', 8001) AS as_public;
RESET ROLE;
SELECT keyed_revoke('conv', 'public');
SELECT keyed_revoke('conv', 'regress_keyed_app');
SELECT privileges FROM keyed_status WHERE space = 'conv';
-- errors: unknown space, unknown role, NULLs, grant option to PUBLIC
\set VERBOSITY sqlstate
SELECT keyed_grant('nope', 'regress_keyed_eve');
SELECT keyed_grant('conv', 'regress_keyed_nobody');
SELECT keyed_grant(NULL, 'regress_keyed_eve');
SELECT keyed_grant('conv', NULL);
SELECT keyed_grant('conv', 'regress_keyed_eve', NULL);
SELECT keyed_revoke('conv', NULL);
-- only the exact 'public' means PUBLIC: another spelling is a role name, taken as stored
SELECT keyed_grant('conv', 'Public');
SELECT keyed_revoke('conv', 'PUBLIC');
SELECT keyed_grant('conv', 'public', with_grant_option => true);
\set VERBOSITY default
SELECT keyed_grant('conv', 'regress_keyed_nobody');
-- a role granted the space, with a hostile search_path: calls nothing of its own
SELECT keyed_grant('conv', 'regress_keyed_mallory');
CREATE SCHEMA keyed_mallory AUTHORIZATION regress_keyed_mallory;
CREATE TABLE public.keyed_shadow_calls (fn text);
GRANT INSERT, SELECT ON public.keyed_shadow_calls TO PUBLIC;
\c - regress_keyed_mallory
SET client_min_messages = warning;
CREATE FUNCTION keyed_mallory.nextval(regclass) RETURNS bigint LANGUAGE plpgsql AS
  $$ BEGIN INSERT INTO public.keyed_shadow_calls VALUES ('nextval'); RETURN pg_catalog.nextval($1); END $$;
CREATE FUNCTION keyed_mallory.to_regclass(text) RETURNS regclass LANGUAGE plpgsql AS
  $$ BEGIN INSERT INTO public.keyed_shadow_calls VALUES ('to_regclass'); RETURN pg_catalog.to_regclass($1); END $$;
CREATE FUNCTION keyed_mallory.eq_text(text, text) RETURNS bool LANGUAGE plpgsql AS
  $$ BEGIN INSERT INTO public.keyed_shadow_calls VALUES ('=(text,text)'); RETURN pg_catalog.texteq($1, $2); END $$;
CREATE OPERATOR keyed_mallory.= (LEFTARG = text, RIGHTARG = text, FUNCTION = keyed_mallory.eq_text);
SET search_path = keyed_mallory, public, pg_catalog;
SELECT count(DISTINCT keyed_next('conv', 5000 + g)) AS values_from_hostile_role FROM generate_series(1, 300) g;
SELECT keyed_last('conv', 5001) > 0 AS read_by_hostile_role;
\set VERBOSITY sqlstate
SELECT keyed_create('mine');
SELECT keyed_drop('conv');
\set VERBOSITY default
\c - postgres
SET client_min_messages = warning;
SET search_path = keyed_mallory, public, pg_catalog;
SELECT keyed_create('admin_space', 10, 10);
SELECT keyed_next('admin_space', 1) AS by_superuser_with_hostile_path;
SELECT keyed_drop('admin_space');
RESET search_path;
SELECT count(*) AS shadow_calls FROM public.keyed_shadow_calls;
-- drop: the space is gone; created again, it starts over (its old values may come back)
SELECT keyed_drop('conv');
\set VERBOSITY sqlstate
SELECT keyed_next('conv', 1);
\set VERBOSITY default
SELECT count(*) AS backing_sequences FROM pg_class WHERE relname LIKE 'pg_idgen_keyed_%' AND relkind = 'S';
SELECT keyed_create('conv');
SELECT keyed_next('conv', 1) AS fresh;
SELECT keyed_drop('conv');
DROP TABLE keyed_keys, public.keyed_shadow_calls;
DROP SCHEMA keyed_mallory CASCADE;
DROP ROLE regress_keyed_mallory, regress_keyed_eve, regress_keyed_app;
-- registry => true needs the lease registry (pg_idgen.lease_mode is off here): 55000, nothing
-- created; keyed_status shows each space's mode
\set VERBOSITY sqlstate
SELECT keyed_create('reg_space', registry => true);
SELECT keyed_create('reg_space', registry => NULL);
\set VERBOSITY default
SELECT count(*) AS reg_spaces FROM pg_idgen_keyed_spaces WHERE space = 'reg_space';
SELECT keyed_create('local_space');
SELECT space, registry FROM keyed_status WHERE space = 'local_space';
SELECT keyed_drop('local_space');
