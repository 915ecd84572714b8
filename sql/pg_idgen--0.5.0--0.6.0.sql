-- pg_idgen 0.5.0 -> 0.6.0. Written by hand and reviewed (docs/contributing.md "Releasing": the rules
-- for upgrade scripts). Run by ALTER EXTENSION pg_idgen UPDATE TO '0.6.0', as a superuser, with
-- search_path = the extension's schema, pg_temp. The update test from 0.5.0
-- (tests/upgrade/extension_update_050.sh) checks that a database updated by it has exactly the
-- objects of a fresh 0.6.0 install (tests/upgrade/objects.sql) and that nothing of the extension
-- binds a function, operator or type outside pg_catalog and the extension (tests/security/audit.sql).
\echo Use "ALTER EXTENSION pg_idgen UPDATE TO '0.6.0'" to load this file. \quit

-- Each change of 0.6.0 adds its section below, in the form the install script creates it.

-- Citus: pg_idgen_citus_check(), the check of every node's worker id, segment tags and keyed
-- spaces run on the coordinator (sql/citus.sql).
-- pg_idgen on Citus: the check run on the coordinator (docs/fleet.md, "Citus"). On every node of
-- the Citus cluster (run_command_on_all_nodes, Citus 11.1+: the coordinator and the active primary
-- workers, each in this database as the caller) it reads the worker id that node generates with
-- (snowflake_worker()), its segment tags and its keyed spaces, and returns one row per node and
-- worker id, per node and tag, per node and space, with a problem where values can repeat or a
-- node cannot evaluate: a worker id on two nodes or none; a strided tag or a fleet-mode space with
-- nodes => fewer than the nodes that can evaluate, a node_index on two nodes, strides that differ;
-- stride slots served by two nodes; a plain keyed space where several nodes evaluate; a tag or a
-- space missing on a node. With fail => true (the default) any problem is an ERROR (55000) naming
-- them all, so a script stops on it; fail => false only returns the rows.
-- Resolved when it runs (plpgsql), so the extension installs where Citus is not.
CREATE FUNCTION @extschema@.pg_idgen_citus_check(fail pg_catalog.bool DEFAULT true,
    OUT node pg_catalog.text, OUT nodeid pg_catalog.int4, OUT kind pg_catalog.text, OUT name pg_catalog.text,
    OUT value pg_catalog.int4, OUT nodes pg_catalog.int4, OUT problem pg_catalog.text)
RETURNS SETOF record
LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SECURITY INVOKER
SET search_path = pg_catalog, pg_temp AS $fn$
DECLARE
    evaluating pg_catalog.int4;
    res pg_catalog.json;
    r record;
    problems pg_catalog.text[] := '{}';
    cmd CONSTANT pg_catalog.text := $cmd$
SELECT pg_catalog.json_build_object(
    'worker_id', w.worker_id,
    'tags', (SELECT pg_catalog.json_agg(pg_catalog.json_build_object(
                 'tag', s.tag, 'nodes', s.nodes, 'node_index', s.node_index, 'step', s.step,
                 'unit', s.unit, 'start', s.start, 'slotted', s.slotted, 'registry', s.registry,
                 'slots', (SELECT pg_catalog.json_agg(l.slot ORDER BY l.slot)
                             FROM @extschema@.pg_idgen_segment_slots l
                            WHERE l.tag OPERATOR(pg_catalog.=) s.tag AND l.owned)))
               FROM @extschema@.pg_idgen_segments s),
    'spaces', (SELECT pg_catalog.json_agg(pg_catalog.json_build_object(
                   'space', k.space, 'nodes', k.nodes, 'node_index', k.node_index))
                 FROM @extschema@.pg_idgen_keyed_spaces k))::pg_catalog.text
  FROM @extschema@.snowflake_worker() w
$cmd$;
BEGIN
    IF fail IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed', MESSAGE = 'argument "fail" must not be NULL';
    END IF;
    IF pg_catalog.to_regprocedure('pg_catalog.run_command_on_all_nodes(pg_catalog.text, pg_catalog.bool, pg_catalog.bool)') IS NULL THEN
        RAISE EXCEPTION USING
            ERRCODE = 'object_not_in_prerequisite_state',
            MESSAGE = 'pg_idgen_citus_check() needs the citus extension (11.1 or later) in this database',
            HINT = 'Run it on the coordinator, in the database of the Citus cluster.';
    END IF;
    -- every active primary node evaluates DEFAULTs: clients connected to it, and INSERT ... SELECT
    -- pushed down to the nodes holding the source's shards
    SELECT pg_catalog.count(*)::pg_catalog.int4 INTO evaluating
      FROM pg_catalog.pg_dist_node d
     WHERE d.isactive AND d.noderole OPERATOR(pg_catalog.=) 'primary'::pg_catalog.noderole;
    SELECT pg_catalog.json_agg(pg_catalog.json_build_object('nodeid', c.nodeid, 'success', c.success, 'result', c.result))
      INTO res
      FROM pg_catalog.run_command_on_all_nodes(cmd) c;
    FOR r IN
        WITH res AS (
            SELECT (e OPERATOR(pg_catalog.->>) 'nodeid')::pg_catalog.int4 AS nodeid,
                   (e OPERATOR(pg_catalog.->>) 'success')::pg_catalog.bool AS ok,
                   e OPERATOR(pg_catalog.->>) 'result' AS result
              FROM pg_catalog.json_array_elements(COALESCE(res, '[]'::pg_catalog.json)) e),
        nd AS (
            SELECT x.nodeid, COALESCE(pg_catalog.format('%s:%s', d.nodename, d.nodeport), x.nodeid::pg_catalog.text) AS node,
                   x.ok, x.result, CASE WHEN x.ok THEN x.result::pg_catalog.json END AS j
              FROM res x LEFT JOIN pg_catalog.pg_dist_node d ON d.nodeid OPERATOR(pg_catalog.=) x.nodeid),
        wk AS (
            SELECT nd.node, nd.nodeid, (nd.j OPERATOR(pg_catalog.->>) 'worker_id')::pg_catalog.int4 AS w
              FROM nd WHERE nd.ok),
        tg AS (
            SELECT nd.node, nd.nodeid, t OPERATOR(pg_catalog.->>) 'tag' AS tag,
                   (t OPERATOR(pg_catalog.->>) 'nodes')::pg_catalog.int4 AS nodes,
                   (t OPERATOR(pg_catalog.->>) 'node_index')::pg_catalog.int4 AS idx,
                   pg_catalog.format('nodes %s, step %s, unit %s, start %s', t OPERATOR(pg_catalog.->>) 'nodes',
                                     t OPERATOR(pg_catalog.->>) 'step', t OPERATOR(pg_catalog.->>) 'unit',
                                     t OPERATOR(pg_catalog.->>) 'start') AS shape,
                   (t OPERATOR(pg_catalog.->>) 'slotted')::pg_catalog.bool AS slotted,
                   (t OPERATOR(pg_catalog.->>) 'registry')::pg_catalog.bool AS registry,
                   ARRAY(SELECT s::pg_catalog.int4
                           FROM pg_catalog.json_array_elements_text(CASE WHEN pg_catalog.json_typeof(t OPERATOR(pg_catalog.->) 'slots') OPERATOR(pg_catalog.=) 'array' THEN t OPERATOR(pg_catalog.->) 'slots' ELSE '[]'::pg_catalog.json END) s) AS slots
              FROM nd, pg_catalog.json_array_elements(CASE WHEN pg_catalog.json_typeof(nd.j OPERATOR(pg_catalog.->) 'tags') OPERATOR(pg_catalog.=) 'array' THEN nd.j OPERATOR(pg_catalog.->) 'tags' ELSE '[]'::pg_catalog.json END) t
             WHERE nd.ok),
        ks AS (
            SELECT nd.node, nd.nodeid, k OPERATOR(pg_catalog.->>) 'space' AS space,
                   (k OPERATOR(pg_catalog.->>) 'nodes')::pg_catalog.int4 AS nodes,
                   (k OPERATOR(pg_catalog.->>) 'node_index')::pg_catalog.int4 AS idx
              FROM nd, pg_catalog.json_array_elements(CASE WHEN pg_catalog.json_typeof(nd.j OPERATOR(pg_catalog.->) 'spaces') OPERATOR(pg_catalog.=) 'array' THEN nd.j OPERATOR(pg_catalog.->) 'spaces' ELSE '[]'::pg_catalog.json END) k
             WHERE nd.ok)
        SELECT nd.node, nd.nodeid, 'node' AS kind, NULL::pg_catalog.text AS name, NULL::pg_catalog.int4 AS value,
               NULL::pg_catalog.int4 AS nodes, pg_catalog.format('the check could not run on this node: %s', nd.result) AS problem
          FROM nd WHERE NOT nd.ok
        UNION ALL
        SELECT wk.node, wk.nodeid, 'worker_id', NULL, wk.w, NULL,
               CASE WHEN wk.w IS NULL THEN 'no worker id: snowflake_next() fails on this node'
                    ELSE (SELECT pg_catalog.format('worker id %s is also the worker id of %s', wk.w,
                                                   pg_catalog.string_agg(o.node, ', ' ORDER BY o.nodeid))
                            FROM wk o WHERE o.w OPERATOR(pg_catalog.=) wk.w AND o.nodeid OPERATOR(pg_catalog.<>) wk.nodeid
                          HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0) END
          FROM wk
        UNION ALL
        SELECT tg.node, tg.nodeid, 'segment', tg.tag, CASE WHEN NOT tg.slotted THEN tg.idx END, tg.nodes,
               CASE WHEN tg.registry THEN NULL
                    WHEN tg.slotted THEN
                        (SELECT pg_catalog.format('stride slots %s are also served by %s',
                                                  pg_catalog.string_agg(DISTINCT s::pg_catalog.text, ','),
                                                  pg_catalog.string_agg(DISTINCT o.node, ', '))
                           FROM tg o, pg_catalog.unnest(o.slots) s
                          WHERE o.tag OPERATOR(pg_catalog.=) tg.tag AND o.nodeid OPERATOR(pg_catalog.<>) tg.nodeid
                            AND s OPERATOR(pg_catalog.=) ANY (tg.slots)
                         HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0)
                    WHEN tg.nodes OPERATOR(pg_catalog.<) evaluating THEN
                        pg_catalog.format('nodes => %s, but %s nodes can evaluate segment_next(%L): create the tag on every node with the same nodes => (at least %s) and a node_index of its own',
                                          tg.nodes, evaluating, tg.tag, evaluating)
                    ELSE COALESCE(
                        (SELECT pg_catalog.format('node_index %s is also the node_index of %s', tg.idx,
                                                  pg_catalog.string_agg(o.node, ', ' ORDER BY o.nodeid))
                           FROM tg o
                          WHERE o.tag OPERATOR(pg_catalog.=) tg.tag AND o.nodeid OPERATOR(pg_catalog.<>) tg.nodeid
                            AND o.idx OPERATOR(pg_catalog.=) tg.idx AND NOT o.slotted AND NOT o.registry
                         HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0),
                        (SELECT pg_catalog.format('%s here, but %s', tg.shape,
                                                  pg_catalog.string_agg(pg_catalog.format('%s on %s', o.shape, o.node), ', ' ORDER BY o.nodeid))
                           FROM tg o
                          WHERE o.tag OPERATOR(pg_catalog.=) tg.tag AND o.nodeid OPERATOR(pg_catalog.<>) tg.nodeid
                            AND o.shape OPERATOR(pg_catalog.<>) tg.shape
                         HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0)) END
          FROM tg
        UNION ALL
        SELECT nd.node, nd.nodeid, 'segment', t.tag, NULL, NULL,
               pg_catalog.format('segment tag %L is missing on this node: segment_next(%L) evaluated here fails', t.tag, t.tag)
          FROM nd, (SELECT DISTINCT tg.tag FROM tg) t
         WHERE nd.ok AND NOT EXISTS (SELECT FROM tg WHERE tg.tag OPERATOR(pg_catalog.=) t.tag AND tg.nodeid OPERATOR(pg_catalog.=) nd.nodeid)
        UNION ALL
        SELECT ks.node, ks.nodeid, 'keyed', ks.space, ks.idx, ks.nodes,
               CASE WHEN ks.nodes IS NULL AND evaluating OPERATOR(pg_catalog.>) 1 THEN
                        pg_catalog.format('plain keyed space %L: every node that evaluates keyed_next(%L, key) hands out the same values; create it on every node with nodes => %s (or more) and a node_index of its own',
                                          ks.space, ks.space, evaluating)
                    WHEN ks.nodes OPERATOR(pg_catalog.<) evaluating THEN
                        pg_catalog.format('nodes => %s, but %s nodes can evaluate keyed_next(%L, key): create the space on every node with the same nodes => (at least %s) and a node_index of its own',
                                          ks.nodes, evaluating, ks.space, evaluating)
                    ELSE COALESCE(
                        (SELECT pg_catalog.format('node_index %s is also the node_index of %s', ks.idx,
                                                  pg_catalog.string_agg(o.node, ', ' ORDER BY o.nodeid))
                           FROM ks o
                          WHERE o.space OPERATOR(pg_catalog.=) ks.space AND o.nodeid OPERATOR(pg_catalog.<>) ks.nodeid
                            AND o.idx OPERATOR(pg_catalog.=) ks.idx
                         HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0),
                        (SELECT pg_catalog.format('nodes => %s here, but %s', ks.nodes,
                                                  pg_catalog.string_agg(pg_catalog.format('%s on %s', o.nodes, o.node), ', ' ORDER BY o.nodeid))
                           FROM ks o
                          WHERE o.space OPERATOR(pg_catalog.=) ks.space AND o.nodeid OPERATOR(pg_catalog.<>) ks.nodeid
                            AND o.nodes OPERATOR(pg_catalog.<>) ks.nodes
                         HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 0)) END
          FROM ks
        UNION ALL
        SELECT nd.node, nd.nodeid, 'keyed', k.space, NULL, NULL,
               pg_catalog.format('keyed space %L is missing on this node: keyed_next(%L, key) evaluated here fails', k.space, k.space)
          FROM nd, (SELECT DISTINCT ks.space FROM ks) k
         WHERE nd.ok AND NOT EXISTS (SELECT FROM ks WHERE ks.space OPERATOR(pg_catalog.=) k.space AND ks.nodeid OPERATOR(pg_catalog.=) nd.nodeid)
        ORDER BY 3, 4 NULLS FIRST, 2
    LOOP
        node := r.node; nodeid := r.nodeid; kind := r.kind; name := r.name;
        value := r.value; nodes := r.nodes; problem := r.problem;
        RETURN NEXT;
        IF r.problem IS NOT NULL THEN
            problems := pg_catalog.array_append(problems,
                pg_catalog.format('%s%s on %s: %s', r.kind, CASE WHEN r.name IS NOT NULL THEN pg_catalog.format(' %L', r.name) ELSE '' END, r.node, r.problem));
        END IF;
    END LOOP;
    IF fail AND pg_catalog.cardinality(problems) OPERATOR(pg_catalog.>) 0 THEN
        RAISE EXCEPTION USING
            ERRCODE = 'object_not_in_prerequisite_state',
            MESSAGE = pg_catalog.format('pg_idgen on this Citus cluster can hand out a value twice or fail on a node: %s problem(s)',
                                        pg_catalog.cardinality(problems)),
            DETAIL = pg_catalog.array_to_string(problems, E'\n'),
            HINT = 'SELECT * FROM pg_idgen_citus_check(fail => false) lists every node''s worker id, tags and spaces; docs/fleet.md, "Citus", says how to set each up.';
    END IF;
END
$fn$;
COMMENT ON FUNCTION @extschema@.pg_idgen_citus_check(pg_catalog.bool) IS 'pg_idgen on Citus (run on the coordinator): every node''s worker id, segment tags and keyed spaces; a problem where a value can repeat across nodes or a node cannot evaluate; ERROR on any unless fail => false';
REVOKE ALL ON FUNCTION @extschema@.pg_idgen_citus_check(pg_catalog.bool) FROM PUBLIC;
