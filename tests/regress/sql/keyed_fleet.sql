-- keyed spaces in fleet mode: keyed_create(..., nodes, node_index) hands out counter * nodes +
-- node_index per key, keyed_last and keyed_next(space, key, n) in the same units, keyed_status's
-- nodes, node_index and max_value, keyed_set_node's rules, every argument's NULL and range
-- errors, and the superuser-only administration.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_idgen;
SELECT keyed_create('fleet3', step => 100, section_size => 10, nodes => 3, node_index => 2);
SELECT keyed_create('fleet1', nodes => 1, node_index => 0);
SELECT keyed_create('plainf');
SELECT space, step, section_size, nodes, node_index FROM pg_idgen_keyed_spaces
WHERE space IN ('fleet3', 'fleet1', 'plainf') ORDER BY space;
-- node 2 of 3: 1 * 3 + 2, 2 * 3 + 2, ...; per key; another key starts over at 5
SELECT keyed_next('fleet3', 1) AS a1, keyed_next('fleet3', 1) AS a2, keyed_next('fleet3', 2) AS b1,
       keyed_next('fleet3', 1) AS a3;
SELECT keyed_next('fleet1', 1) AS one_node, keyed_next('plainf', 1) AS plain;
-- keyed_last: the last value handed out (or, never used, the value of counter 0: the index)
SELECT keyed_last('fleet3', 1) AS last1, keyed_last('fleet3', 999) AS unused;
-- n values: returns the last; the caller owns result - (n - 1) * nodes .. result, step nodes
SELECT keyed_next('fleet3', 1, 4) AS last_of_4, keyed_last('fleet3', 1) AS last_after,
       keyed_next('fleet3', 1) AS next_after;
-- many values over many bound raises: all in the class, strictly increasing per key
SELECT count(*) AS calls, bool_and(v % 3 = 2) AS class_2, bool_and(v > prev) AS increasing,
       count(DISTINCT (k, v)) = count(*) AS distinct_per_key
FROM (SELECT k, v, lag(v, 1, -1::bigint) OVER (PARTITION BY k ORDER BY g) AS prev
      FROM (SELECT g, g % 7 AS k, keyed_next('fleet3', g % 7) AS v FROM generate_series(1, 1500) g) s) t;
SELECT space, nodes, node_index, max_value % 3 AS max_class, max_value >= 214 * 3 + 2 AS max_covers
FROM keyed_status WHERE space = 'fleet3';
SELECT space, nodes, node_index, max_value FROM keyed_status WHERE space IN ('fleet1', 'plainf') ORDER BY space;
-- the largest counters: node 1023 of 1024 ends at the largest bigint, then 22003 (the key is
-- exhausted); keyed_last and max_value stay at the node's last value
SELECT keyed_create('top', step => 2, nodes => 1024, node_index => 1023);
SELECT keyed_set_node('top', 1023, 9223372036854775807 - 1024 * 2 - 1);
SELECT keyed_next('top', 5) AS third_to_last, keyed_next('top', 5) AS second_to_last,
       keyed_next('top', 5) AS last_value, keyed_next('top', 6, 2) AS last_two_of_6;
\set VERBOSITY sqlstate
SELECT keyed_next('top', 5);
SELECT keyed_next('top', 6, 2);
\set VERBOSITY default
SELECT keyed_next('top', 5);
SELECT keyed_last('top', 5) AS last_stays, keyed_last('top', 7) AS unused_at_top;
SELECT max_value FROM keyed_status WHERE space = 'top';
-- keyed_set_node: moves the node, every later value above `above`, in the new class
SELECT keyed_set_node('fleet3', 0, 10000);
SELECT nodes, node_index FROM keyed_status WHERE space = 'fleet3';
SELECT keyed_next('fleet3', 1) AS moved, keyed_next('fleet3', 424242) AS other_key,
       keyed_last('fleet3', 31337) AS unused;
-- a value of the class itself: continues above it; the same index with a lower `above`: no change
SELECT keyed_set_node('fleet3', 0, 30000);
SELECT keyed_next('fleet3', 1) AS above_30000;
SELECT keyed_set_node('fleet3', 0, 5);
SELECT keyed_next('fleet3', 1) AS never_back;
-- in a transaction that rolls back, nothing changes but the bounds raised in place (a gap, never
-- a repeat): the index stays 0, the keys continue from the raised bounds in class 0
BEGIN;
SELECT keyed_set_node('fleet3', 1, 90000);
ROLLBACK;
SELECT node_index FROM keyed_status WHERE space = 'fleet3';
SELECT keyed_next('fleet3', 1) AS still_class_0_after_the_gap;
-- errors
\set VERBOSITY sqlstate
-- keyed_create: a NULL in each argument (22004, or 22023: one of nodes and node_index alone)
SELECT keyed_create(NULL, 1000, 1000, 2, 0);
SELECT keyed_create('bad', NULL, 1000, 2, 0);
SELECT keyed_create('bad', 1000, NULL, 2, 0);
SELECT keyed_create('bad', 1000, 1000, NULL, 0);
SELECT keyed_create('bad', 1000, 1000, 2, NULL);
SELECT keyed_create('bad', nodes => 2);
SELECT keyed_create('bad', node_index => 0);
-- out of range (22023)
SELECT keyed_create('bad', nodes => 0, node_index => 0);
SELECT keyed_create('bad', nodes => 1025, node_index => 0);
SELECT keyed_create('bad', nodes => -1, node_index => 0);
SELECT keyed_create('bad', nodes => 2, node_index => 2);
SELECT keyed_create('bad', nodes => 2, node_index => -1);
SELECT count(*) AS none_created FROM pg_idgen_keyed_spaces WHERE space = 'bad';
-- keyed_set_node: NULLs (22004), unknown space (42704), out of range (22023), plain (55000)
SELECT keyed_set_node(NULL, 0, 0);
SELECT keyed_set_node('fleet3', NULL, 0);
SELECT keyed_set_node('fleet3', 0, NULL);
SELECT keyed_set_node('nope', 0, 0);
SELECT keyed_set_node('fleet3', 3, 0);
SELECT keyed_set_node('fleet3', -1, 0);
SELECT keyed_set_node('plainf', 0, 0);
-- the table refuses a row out of range, or with one of the two columns alone (23514)
UPDATE pg_idgen_keyed_spaces SET node_index = 3 WHERE space = 'fleet3';
UPDATE pg_idgen_keyed_spaces SET node_index = NULL WHERE space = 'fleet3';
UPDATE pg_idgen_keyed_spaces SET nodes = 2000, node_index = 0 WHERE space = 'fleet3';
\set VERBOSITY default
SELECT keyed_create('bad', nodes => 2, node_index => 5);
SELECT keyed_create('bad', nodes => 2);
SELECT keyed_set_node('plainf', 0, 0);
-- privileges: keyed_create and keyed_set_node are for superusers (42501), EXECUTE not granted
CREATE ROLE regress_kfleet_user LOGIN NOSUPERUSER;
GRANT USAGE ON SCHEMA public TO regress_kfleet_user;
SELECT keyed_grant('fleet3', 'regress_kfleet_user');
SET ROLE regress_kfleet_user;
\set VERBOSITY sqlstate
SELECT keyed_set_node('fleet3', 1, 0);
SELECT keyed_create('mine', nodes => 2, node_index => 0);
\set VERBOSITY default
SELECT keyed_next('fleet3', 77) % 3 AS user_class_0;
SELECT space, nodes, node_index, max_value % 3 AS max_class FROM keyed_status WHERE space = 'fleet3';
RESET ROLE;
SELECT has_function_privilege('regress_kfleet_user', 'keyed_set_node(text, int, bigint)', 'EXECUTE') AS can_set,
       has_function_privilege('regress_kfleet_user', 'keyed_create(text, int, int, int, int, boolean)', 'EXECUTE') AS can_create;
SELECT node_index FROM keyed_status WHERE space = 'fleet3';
SELECT keyed_drop('fleet3'), keyed_drop('fleet1'), keyed_drop('plainf'), keyed_drop('top');
REVOKE USAGE ON SCHEMA public FROM regress_kfleet_user;
DROP ROLE regress_kfleet_user;
