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
