-- The segment sequence SQL contract: create/next/drop/set, the segment_status
-- view, stride, adaptive step, privileges and every error message.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pg_idgen;

-- a tag with the defaults (step 1000, start 1), used in a DEFAULT
SELECT segment_create('invoice');
CREATE TABLE invoices (no bigint PRIMARY KEY DEFAULT segment_next('invoice'), note text);
INSERT INTO invoices (note) SELECT 'i' || g FROM generate_series(1, 5) g;
SELECT no, note FROM invoices ORDER BY no;
SELECT tag, step, nodes, node_index, persisted_hwm, cursor, segment_end, next_start, next_end,
       values_issued, refills, sync_refills, discarded, last_refill IS NOT NULL AS refilled
  FROM segment_status ORDER BY tag;

-- crossing 10 % of a segment reserves the next one (double buffer); values stay dense
SELECT segment_create('small', 10, start => 100);
SELECT array_agg(v) FROM (SELECT segment_next('small') v FROM generate_series(1, 25)) s;
SELECT tag, step, persisted_hwm, cursor, segment_end, next_start, next_end, values_issued, refills
  FROM segment_status WHERE tag = 'small';

-- a value handed out in a rolled-back transaction is not handed out again
BEGIN;
SELECT segment_next('small') AS rolled_back;
ROLLBACK;
SELECT segment_next('small') AS after_rollback;

-- multi-node stride: node 1 of 2 with unit 5 gets chunks 6..10, 16..20, ...
SELECT segment_create('striped', 5, nodes => 2, node_index => 1);
SELECT array_agg(v) FROM (SELECT segment_next('striped') v FROM generate_series(1, 12)) s;

-- adaptive step: fast consumption doubles the step up to max_step
SELECT segment_create('adaptive', 10, min_step => 10, max_step => 80, target_interval => '1 hour');
SELECT count(DISTINCT v), min(v), max(v)
  FROM (SELECT segment_next('adaptive') v FROM generate_series(1, 1000)) s;
SELECT step FROM segment_status WHERE tag = 'adaptive';

-- forward-only segment_set: returns the first value the tag hands out next
SELECT segment_set('small', 1000);
SELECT segment_next('small');
SELECT segment_set('striped', 101);   -- rounded up to node 1's next chunk (106)
SELECT segment_next('striped');

-- drop, and re-create under the same name: starts afresh, no stale cache
SELECT segment_drop('small');
SELECT regress_sqlstate_of($$SELECT segment_next('small')$$);
SELECT segment_create('small', 10, start => 7);
SELECT segment_next('small');
-- the backing sequences are ordinary sequences (dumped by pg_dump); their names are generated
SELECT count(*) AS sequences FROM pg_idgen_segments s JOIN pg_class c ON c.oid = s.seq WHERE c.relkind = 'S';

-- errors
SELECT regress_sqlstate_of($$SELECT segment_next('unknown')$$);
SELECT regress_sqlstate_of($$SELECT segment_next('')$$);
SELECT regress_sqlstate_of($$SELECT segment_create('invoice')$$);
SELECT regress_sqlstate_of($$SELECT segment_create('bad', 0)$$);
SELECT regress_sqlstate_of($$SELECT segment_create('bad', -5)$$);
SELECT regress_sqlstate_of($$SELECT segment_create('bad', 100000001)$$);
SELECT regress_sqlstate_of($$SELECT segment_create(repeat('x', 64))$$);
SELECT regress_sqlstate_of($$SELECT segment_create('')$$);
SELECT regress_sqlstate_of($$SELECT segment_create('bad', nodes => 0)$$);
SELECT regress_sqlstate_of($$SELECT segment_create('bad', nodes => 2, node_index => 2)$$);
SELECT regress_sqlstate_of($$SELECT segment_create('bad', 10, min_step => 5, max_step => 40)$$);
SELECT regress_sqlstate_of($$SELECT segment_create('bad', 10, min_step => 20, max_step => 40, target_interval => '1 min')$$);
SELECT regress_sqlstate_of($$SELECT segment_create('bad', 10, min_step => 3, max_step => 30, target_interval => '1 min')$$);
SELECT regress_sqlstate_of($$SELECT segment_create('bad', 10, min_step => 10, max_step => 20000, target_interval => '1 min')$$);
SELECT regress_sqlstate_of($$SELECT segment_create('bad', 10, min_step => 10, max_step => 20, target_interval => '-1 min')$$);
SELECT regress_sqlstate_of($$SELECT segment_create('bad', start => 9223372036854775000)$$);
SELECT regress_sqlstate_of($$SELECT segment_set('invoice', 3)$$);
SELECT regress_sqlstate_of($$SELECT segment_set('invoice', 1000)$$);
SELECT regress_sqlstate_of($$SELECT segment_set('unknown', 1000)$$);
SELECT regress_sqlstate_of($$SELECT segment_drop('unknown')$$);
SELECT regress_sqlstate_of($$SELECT segment_set('invoice', 9223372036854775807)$$);
SELECT segment_next(NULL) IS NULL AS null_in_null_out;
-- nothing of the above was created
SELECT tag FROM pg_idgen_segments ORDER BY tag;

-- privileges: configuration is for superusers, segment_next and segment_status for everyone
CREATE ROLE seg_regress_user;
GRANT INSERT, SELECT ON invoices TO seg_regress_user;
SET ROLE seg_regress_user;
INSERT INTO invoices (note) VALUES ('by a plain user') RETURNING no;
SELECT count(*) > 0 AS sees_status FROM segment_status;
SELECT regress_sqlstate_of($$SELECT segment_create('mine')$$);
SELECT regress_sqlstate_of($$SELECT segment_drop('invoice')$$);
SELECT regress_sqlstate_of($$SELECT segment_set('invoice', 100000)$$);
SELECT regress_sqlstate_of($$SELECT * FROM pg_idgen_segments$$);
RESET ROLE;
SELECT routine_name, string_agg(grantee, ',' ORDER BY grantee) AS executable_by
  FROM information_schema.routine_privileges
 WHERE routine_name LIKE 'segment%' AND privilege_type = 'EXECUTE'
 GROUP BY routine_name ORDER BY routine_name;
DROP TABLE invoices;
DROP OWNED BY seg_regress_user;
DROP ROLE seg_regress_user;
-- segment_set only moves forward, including right after a set (setval(.., false) leaves
-- pg_sequence_last_value() NULL): repeated sets up, down and equal never reissue a value
SELECT segment_create('fw', 10, start => 0);  -- chunks start at multiples of 10
CREATE TEMP TABLE fw_seen AS SELECT segment_next('fw') AS v FROM generate_series(1, 25);
SELECT segment_set('fw', 1000);
SELECT persisted_hwm FROM segment_status WHERE tag = 'fw';
SELECT regress_sqlstate_of($$SELECT segment_set('fw', 2)$$);
SELECT regress_sqlstate_of($$SELECT segment_set('fw', 999)$$);
SELECT segment_set('fw', 1000);
INSERT INTO fw_seen SELECT segment_next('fw');
SELECT regress_sqlstate_of($$SELECT segment_set('fw', 1000)$$);
SELECT regress_sqlstate_of($$SELECT segment_set('fw', 1019)$$);
SELECT segment_set('fw', 1020);
INSERT INTO fw_seen SELECT segment_next('fw') FROM generate_series(1, 12);
SELECT persisted_hwm FROM segment_status WHERE tag = 'fw';
SELECT count(*) AS handed_out, count(DISTINCT v) AS distinct_values, max(v) FROM fw_seen;
SELECT segment_drop(tag) FROM pg_idgen_segments ORDER BY tag;
SELECT count(*) AS tags_left FROM segment_status;

-- the statements run with the extension's privileges ignore the caller's search_path: an
-- operator = (text, text) that is always true does not make an unknown tag match
CREATE SCHEMA seg_evil;
CREATE FUNCTION seg_evil.always(text, text) RETURNS boolean LANGUAGE sql AS 'SELECT true';
CREATE OPERATOR seg_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = seg_evil.always);
SELECT segment_create('real');
SET search_path = seg_evil, pg_catalog, public;
SELECT 'x'::text = 'y'::text AS hijacked_here;
SELECT regress_sqlstate_of($$SELECT segment_next('not-a-tag')$$);
SELECT segment_next('real');
RESET search_path;
DROP SCHEMA seg_evil CASCADE;

-- a tag created in a rolled-back transaction leaves nothing behind, even if it was used
BEGIN;
SELECT segment_create('ephemeral', 10);
SELECT segment_next('ephemeral');
ROLLBACK;
SELECT regress_sqlstate_of($$SELECT segment_next('ephemeral')$$);
SELECT segment_create('ephemeral', 10, start => 500);
SELECT segment_next('ephemeral');
-- read-only transactions: values come from memory; a reservation is refused with a clear error
SELECT segment_create('ro', 10);
BEGIN READ ONLY;
SELECT regress_sqlstate_of($$SELECT segment_next('ro')$$);
ROLLBACK;
SELECT array_agg(v) FROM (SELECT segment_next('ro') v FROM generate_series(1, 5)) s;
-- the next segment (11..20) was reserved at 10 % of the first: 15 more values from memory
BEGIN READ ONLY;
SELECT array_agg(v) FROM (SELECT segment_next('ro') v FROM generate_series(1, 15)) s;
SELECT regress_sqlstate_of($$SELECT segment_next('ro')$$);
ROLLBACK;
SELECT segment_next('ro');
-- a tag created in a savepoint that rolls back leaves nothing in shared memory (its values were
-- served by this backend alone until commit): afterwards it does not exist, and re-created it
-- starts afresh without a ghost entry having served anything
BEGIN;
SAVEPOINT a;
SELECT segment_create('ghost', 10);
SELECT segment_next('ghost'), segment_next('ghost');
ROLLBACK TO SAVEPOINT a;
COMMIT;
SELECT regress_sqlstate_of($$SELECT segment_next('ghost')$$);
SELECT segment_create('ghost', 10, start => 100);
SELECT segment_next('ghost');
SELECT segment_drop(tag) FROM pg_idgen_segments ORDER BY tag;
