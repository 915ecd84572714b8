-- segment_registry: slot ownership through the lease registry, argument errors with their
-- SQLSTATEs (this server has no lease registry: pg_idgen.lease_mode is off), and the registry
-- side's functions on a registry table whose leases are written here by hand.
SET client_min_messages = warning;
\set VERBOSITY sqlstate
-- segment_create(..., registry => ...)
SELECT segment_create('reg_a', 10, slots => 4, registry => true);   -- 55000: no lease registry
SELECT segment_create('reg_a', 10, registry => true);               -- 22023: needs slots
SELECT segment_create('reg_a', 10, slots => 4, owned => '{1}', registry => true);  -- 22023
SELECT segment_create('reg_a', 10, slots => 4, registry => NULL);   -- 22004
SELECT segment_create('reg_a', 10, slots => 300, registry => false); -- 22023: slots range
SELECT count(*) FROM pg_idgen_segments WHERE tag = 'reg_a';
-- segment_create(..., registry_marks => ...)
SELECT segment_create('marks_a', 10, registry_marks => true);        -- 55000: no lease registry
SELECT segment_create('marks_a', 10, slots => 4, registry_marks => true); -- 55000: likewise
SELECT segment_create('marks_a', 10, registry_marks => NULL);        -- 22004
SELECT segment_create('marks_a', 10, slots => 4, registry => true, registry_marks => true); -- 22023
SELECT segment_create('marks_a', 10, start => 0, registry_marks => true);  -- 22023: start >= 1
SELECT segment_create('marks_a', 10, registry_marks => false);
SELECT tag, registry_marks FROM segment_status WHERE tag = 'marks_a';
SELECT segment_next('marks_a');
SELECT segment_drop('marks_a');
-- the table refuses what segment_create refuses
INSERT INTO pg_idgen_segments (tag, seq, step, unit, start, registry_marks)
VALUES ('marks_b', 'pg_class', 10, 10, 0, true);                     -- 23514
-- the registry's side: pg_idgen_segment_marks raises and reads a node's marks per slot
SELECT * FROM pg_idgen_segment_marks(NULL, 1, 't', '{}', '{}');      -- 22004
SELECT * FROM pg_idgen_segment_marks('42', 1, 't', '{0}', '{}');     -- 22023
SELECT * FROM pg_idgen_segment_marks('42', 1, 't', '{0,3}', '{50,70}') ORDER BY slot;
SELECT * FROM pg_idgen_segment_marks('42', 1, 't', '{0}', '{20}') ORDER BY slot;  -- never lowered
SELECT * FROM pg_idgen_segment_marks('42', 1, 't', '{}', '{}') ORDER BY slot;     -- a read
SELECT * FROM pg_idgen_segment_marks('42', 2, 't', '{}', '{}');      -- another database: none
-- the argument checks are pg_idgen_marks_admit's, shared by both marks functions: the messages
-- name the function called, in its own words (slot and tag, bucket and space)
CREATE FUNCTION pg_temp.err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    hint text;
BEGIN
    EXECUTE q;
    RETURN 'no error';
EXCEPTION WHEN others THEN
    GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
    RETURN SQLSTATE || ': ' || SQLERRM || CASE WHEN hint <> '' THEN E'\nHINT: ' || hint ELSE '' END;
END $$;
SELECT pg_temp.err($$SELECT * FROM pg_idgen_segment_marks('42', 1, NULL, '{}', '{}')$$);
SELECT pg_temp.err($$SELECT * FROM pg_idgen_segment_marks('42', 1, 't', '{0,1}', '{5}')$$);
SELECT pg_temp.err($$SELECT * FROM pg_idgen_segment_marks('42', 1, 't', '{1024}', '{5}')$$);
SELECT pg_temp.err($$SELECT * FROM pg_idgen_segment_marks('42', 1, 't', '{-1,0}', '{5,5}')$$);
SELECT pg_temp.err($$SELECT * FROM pg_idgen_keyed_marks('42', 1, 's', NULL, '{}')$$);
SELECT pg_temp.err($$SELECT * FROM pg_idgen_keyed_marks('42', 1, 's', '{0,1}', '{5}')$$);
SELECT pg_temp.err($$SELECT * FROM pg_idgen_keyed_marks('42', 1, 's', '{1024}', '{5}')$$);
SELECT pg_temp.err($$SELECT * FROM pg_idgen_segment_marks('4x', 1, 't', '{}', '{}')$$);
-- the helper refuses a kind it does not know, NULL too; a superuser's read returns the number
SELECT pg_temp.err($$SELECT pg_idgen_marks_admit('sequence', '42', 1, 't', '{}', '{}')$$);
SELECT pg_temp.err($$SELECT pg_idgen_marks_admit(NULL, '42', 1, 't', '{}', '{}')$$);
SELECT pg_idgen_marks_admit('segment', '42', 1, 't', '{}', '{}');
CREATE ROLE regress_marks_node LOGIN;
CREATE ROLE regress_marks_other LOGIN;
INSERT INTO pg_idgen_registry_nodes VALUES ('regress_marks_node', 1, 1), ('regress_marks_other', 2, 2);
GRANT EXECUTE ON FUNCTION pg_idgen_segment_marks(text, oid, text, int[], bigint[]) TO regress_marks_node, regress_marks_other;
GRANT EXECUTE ON FUNCTION pg_idgen_keyed_marks(text, oid, text, int[], bigint[]) TO regress_marks_other;
SET SESSION AUTHORIZATION regress_marks_node;
SELECT * FROM pg_idgen_segment_marks('43', 1, 't', '{1}', '{9}');    -- takes system identifier 43
SELECT * FROM pg_idgen_marks_owner_check(43, 'x');                   -- 42501: internal
SELECT pg_idgen_marks_admit('segment', '43', 1, 't', '{1}', '{9}');  -- 42501: internal
UPDATE pg_idgen_segment_marks SET bound = 0;                         -- 42501
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION regress_marks_other;
SELECT * FROM pg_idgen_segment_marks('43', 1, 't', '{1}', '{9223372036854775807}'); -- 42501: not its node
SELECT * FROM pg_idgen_segment_marks('43', 1, 't', '{}', '{}');      -- 42501: nor a read
SELECT * FROM pg_idgen_keyed_marks('43', 1, 't', '{0}', '{5}');      -- 42501: keyed marks too
RESET SESSION AUTHORIZATION;
SELECT system_identifier, role_name FROM pg_idgen_keyed_mark_owners ORDER BY 1;
SELECT system_identifier, database, tag, slot, bound FROM pg_idgen_segment_marks ORDER BY 1, 2, 3, 4;
SELECT p.proname, p.prosecdef, p.proconfig, has_function_privilege('public', p.oid, 'EXECUTE') AS public_execute,
       has_function_privilege('regress_marks_node', p.oid, 'EXECUTE') AS node_execute
  FROM pg_proc p WHERE p.proname IN ('pg_idgen_segment_marks', 'pg_idgen_keyed_marks', 'pg_idgen_marks_owner_check', 'pg_idgen_marks_admit')
 ORDER BY p.proname;
-- a node role writes segment marks of at most 1024 (database, tag) pairs per system identifier
-- (53400 beyond); reading a new pair, or raising one already there, is still allowed; a superuser
-- is not bounded. Filling up to the bounds takes 2,047 calls; in the suite's parallel pass every
-- query inside them would start a parallel worker (about 8 ms each, 20 s in all), so the fills run
-- with the parallel mode off, and it is restored after them.
SELECT count(*) AS parallel_mode_off FROM pg_settings s, LATERAL set_config(s.name, 'off', false)
 WHERE s.name IN ('debug_parallel_query', 'force_parallel_mode');
SET SESSION AUTHORIZATION regress_marks_node;
SELECT count(*) FROM generate_series(2, 1024) g, pg_idgen_segment_marks('43', 1, 't' || g, '{0}', '{1}');
SELECT pg_temp.err($$SELECT * FROM pg_idgen_segment_marks('43', 2, 't', '{0}', '{1}')$$);
SELECT count(*) FROM pg_idgen_segment_marks('43', 2, 't', '{}', '{}');
SELECT * FROM pg_idgen_segment_marks('43', 1, 't', '{1}', '{10}');
RESET SESSION AUTHORIZATION;
SELECT * FROM pg_idgen_segment_marks('43', 3, 't', '{0}', '{1}');
SELECT count(DISTINCT (database, tag)) AS pairs FROM pg_idgen_segment_marks WHERE system_identifier = 43;
-- and keyed marks of at most 1024 (database, space) pairs, counted apart from the segment marks
SET SESSION AUTHORIZATION regress_marks_other;
SELECT count(*) FROM generate_series(1, 1024) g, pg_idgen_keyed_marks('44', 1, 's' || g, '{0}', '{1}');
SELECT pg_temp.err($$SELECT * FROM pg_idgen_keyed_marks('44', 2, 's1', '{0}', '{1}')$$);
SELECT * FROM pg_idgen_keyed_marks('44', 1, 's1', '{7}', '{10}') ORDER BY bucket;
RESET SESSION AUTHORIZATION;
SELECT count(DISTINCT (database, space)) AS pairs FROM pg_idgen_keyed_marks WHERE system_identifier = 44;
SELECT count(*) AS parallel_mode_restored FROM pg_settings s, LATERAL set_config(s.name, s.reset_val, false)
 WHERE s.name IN ('debug_parallel_query', 'force_parallel_mode');
DELETE FROM pg_idgen_segment_marks;
DELETE FROM pg_idgen_keyed_marks;
DELETE FROM pg_idgen_keyed_mark_owners;
DELETE FROM pg_idgen_registry_nodes WHERE role_name LIKE 'regress_marks_%';
REVOKE ALL ON FUNCTION pg_idgen_segment_marks(text, oid, text, int[], bigint[]) FROM regress_marks_node, regress_marks_other;
REVOKE ALL ON FUNCTION pg_idgen_keyed_marks(text, oid, text, int[], bigint[]) FROM regress_marks_other;
DROP ROLE regress_marks_node;
DROP ROLE regress_marks_other;
-- the registry's functions: NULLs, unknown tags, bad arguments
SELECT segment_registry_assign(NULL, 12, '{1,2,3}');                -- 22004
SELECT segment_registry_assign('reg_t', NULL, '{1,2,3}');           -- 22004
SELECT segment_registry_assign('reg_t', 12, NULL);                  -- 22004
SELECT segment_registry_assign('reg_t', 0, '{1}');                  -- 22023
SELECT segment_registry_assign('reg_t', 12, '{}');                  -- 22023
SELECT segment_registry_assign('reg_t', 12, '{1,NULL}');            -- 22023
SELECT segment_registry_assign('reg_t', 12, '{1,1}');               -- 22023
SELECT segment_registry_assign('reg_t', 12, '{-1}');                -- 22023
SELECT segment_registry_assign('', 12, '{1}');                      -- 22023
SELECT segment_registry_move('nope', 0, 1);                         -- 42704
SELECT segment_registry_move(NULL, 0, 1);                           -- 22004
SELECT segment_registry_move('nope', NULL, 1);                      -- 22004
SELECT segment_registry_move('nope', 0, NULL);                      -- 22004
SELECT * FROM segment_registry_rebalance('nope', 1, 1);             -- 42704
SELECT * FROM segment_registry_rebalance('nope', 1, -1);            -- 22023
SELECT * FROM segment_registry_rebalance(NULL, 1, 1);               -- 22004
SELECT * FROM segment_registry_drain('nope', 1);                    -- 42704
SELECT * FROM segment_registry_drain('nope', NULL);                 -- 22004
-- assignment: 12 slots round robin over worker ids 1, 2, 3
SELECT segment_registry_assign('reg_t', 12, '{1,2,3}');
SELECT segment_registry_assign('reg_t', 12, '{1,2,3}');             -- 42710
SELECT owner, array_agg(slot ORDER BY slot), min(state), max(ceiling), max(floor)
  FROM pg_idgen_segment_owners WHERE tag = 'reg_t' GROUP BY owner ORDER BY owner;
-- worker id 4 holds no lease yet: a move to it is refused
SELECT segment_registry_move('reg_t', 0, 4);                        -- 55000
SELECT * FROM segment_registry_rebalance('reg_t', 4, 3);            -- 55000
INSERT INTO pg_idgen_leases (worker_id, system_identifier, node_name, host, port, token, since, renewed_at, lease_until)
SELECT w, 1, 'node' || w, 'h', 5432, w, now(), now(), now() + interval '1 hour' FROM generate_series(1, 4) w;
SELECT segment_registry_move('reg_t', 0, 1);                        -- held: already there
SELECT segment_registry_move('reg_t', 12, 4);                       -- 42704: no such slot
-- rebalance: one slot from each of 1, 2, 3 (the most; ties: the lowest id), its highest
SELECT * FROM segment_registry_rebalance('reg_t', 4, 3);
SELECT segment_registry_move('reg_t', 9, 4);                        -- moving already, to 4
SELECT segment_registry_move('reg_t', 9, 2);                        -- 55000: moving to 4
SELECT segment_registry_move('reg_t', 10, 2);                       -- back to its owner: cancelled
SELECT slot, owner, state, move_to FROM pg_idgen_segment_owners WHERE tag = 'reg_t' AND state <> 'held' ORDER BY slot;
-- a drain counts pending moves for their target: worker id 1's three held slots go each to the
-- worker id with the fewest (then the lowest id)
SELECT * FROM segment_registry_drain('reg_t', 1);
SELECT coalesce(move_to, owner) AS w, count(*) FROM pg_idgen_segment_owners WHERE tag = 'reg_t' GROUP BY 1 ORDER BY 1;
-- a move whose target lost its lease goes elsewhere
UPDATE pg_idgen_leases SET lease_until = now() - interval '1 second' WHERE worker_id = 4;
SELECT segment_registry_move('reg_t', 9, 3);
SELECT slot, owner, state, move_to FROM pg_idgen_segment_owners WHERE tag = 'reg_t' AND slot = 9;
-- the table's checks: a row cannot be held and moving at once, nor have its floor above its ceiling
UPDATE pg_idgen_segment_owners SET move_to = 2 WHERE tag = 'reg_t' AND slot = 1;
UPDATE pg_idgen_segment_owners SET floor = 5 WHERE tag = 'reg_t' AND slot = 1;
-- only superusers (EXECUTE revoked from PUBLIC)
CREATE ROLE regress_registry_nobody;
SET ROLE regress_registry_nobody;
SELECT segment_registry_move('reg_t', 1, 2);                        -- 42501
SELECT * FROM pg_idgen_segment_owners;                              -- 42501
RESET ROLE;
DROP ROLE regress_registry_nobody;
DELETE FROM pg_idgen_segment_owners;
DELETE FROM pg_idgen_leases;
