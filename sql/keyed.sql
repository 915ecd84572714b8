-- pg_idgen: keyed sequences, an increasing counter per (space, bigint key). keyed_next and
-- keyed_last are plain C functions (the hot path; a NULL argument is an error, 22004) that
-- require USAGE on the space: the privilege is its backing sequence's (keyed_grant,
-- keyed_revoke; none for PUBLIC on a new space); the spaces are dumped with the database, and
-- each space's backing sequence (pg_idgen_keyed_<n>, created by keyed_create) holds its durable
-- bound: not an extension member, so pg_dump dumps it with its value; OWNED BY
-- pg_idgen_keyed_spaces.seq, so DROP EXTENSION drops it (src/keyed/admin.rs).
CREATE FUNCTION keyed_next(space text, key bigint) RETURNS bigint
    CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_keyed_next';
CREATE FUNCTION keyed_next(space text, key bigint, n int) RETURNS bigint
    CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_keyed_next_n';
CREATE FUNCTION keyed_last(space text, key bigint) RETURNS bigint
    CALLED ON NULL INPUT VOLATILE PARALLEL RESTRICTED LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_keyed_last';

CREATE TABLE pg_idgen_keyed_spaces (
    space        text PRIMARY KEY CHECK (octet_length(space) BETWEEN 1 AND 63),
    seq          pg_idgen_regclass NOT NULL,
    step         int NOT NULL CHECK (step BETWEEN 1 AND 1000000000),
    section_size int NOT NULL CHECK (section_size BETWEEN 1 AND 1000000000),
    created      timestamptz NOT NULL DEFAULT now(),
    nodes        int CHECK (nodes BETWEEN 1 AND 1024),
    node_index   int,
    registry     boolean NOT NULL DEFAULT false,
    CONSTRAINT pg_idgen_keyed_spaces_fleet_check
        CHECK ((nodes IS NULL) = (node_index IS NULL) AND node_index >= 0 AND node_index < nodes)
);
COMMENT ON TABLE pg_idgen_keyed_spaces IS 'pg_idgen keyed sequence spaces: one row per space, its durable bound in its own sequence (seq)';
COMMENT ON COLUMN pg_idgen_keyed_spaces.nodes IS 'fleet mode: the number of writable nodes (fixed for the life of the space); NULL: plain mode';
COMMENT ON COLUMN pg_idgen_keyed_spaces.node_index IS 'fleet mode: this node''s index, 0 .. nodes - 1: its values are counter * nodes + node_index (changed only by keyed_set_node)';
SELECT pg_catalog.pg_extension_config_dump('pg_idgen_keyed_spaces', '');
REVOKE ALL ON pg_idgen_keyed_spaces FROM PUBLIC;
-- The durable bounds per bucket of sections (section s uses bucket s mod 1024): every value
-- handed out for a key of such a section is at most its row's bound. keyed_create inserts the
-- 1,024 rows of a space; keyed_next raises a bound in place (not undone by ROLLBACK, WAL-logged,
-- flushed and confirmed by synchronous standbys before a value above the old bound is handed
-- out: src/keyed/bounds.rs). bound is the first column: the in-place write finds it at the start
-- of the row's data. Dumped with the database; never to be updated by hand while in use.
CREATE TABLE pg_idgen_keyed_bounds (
    bound  bigint NOT NULL,
    space  text NOT NULL,
    bucket int NOT NULL CHECK (bucket BETWEEN 0 AND 1023),
    PRIMARY KEY (space, bucket)
);
COMMENT ON TABLE pg_idgen_keyed_bounds IS 'pg_idgen keyed sequence spaces: the durable bound of each bucket of sections (section mod 1024), raised in place a step at a time';
SELECT pg_catalog.pg_extension_config_dump('pg_idgen_keyed_bounds', '');
REVOKE ALL ON pg_idgen_keyed_bounds FROM PUBLIC;
-- pg_dump writes no OWNED BY for a sequence of an extension member table: the link is made
-- again when the rows are restored (and by keyed_create's insert).
CREATE FUNCTION pg_idgen_keyed_link() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_keyed_link';
REVOKE ALL ON FUNCTION pg_idgen_keyed_link() FROM PUBLIC;
CREATE TRIGGER pg_idgen_keyed_spaces_link
    AFTER INSERT OR UPDATE OF seq ON pg_idgen_keyed_spaces
    FOR EACH ROW EXECUTE FUNCTION pg_idgen_keyed_link();

CREATE VIEW keyed_status AS
SELECT s.space, s.step, s.section_size, m.bound, m.floor, coalesce(m.raises, 0) AS raises,
       pg_catalog.pg_get_userbyid(c.relowner) AS owner, c.relacl AS privileges,
       s.nodes, s.node_index,
       (SELECT LEAST(pg_catalog.max(b.bound),
                     (9223372036854775807 OPERATOR(pg_catalog.-) coalesce(s.node_index, 0))
                     OPERATOR(pg_catalog./) coalesce(s.nodes, 1))
               OPERATOR(pg_catalog.*) coalesce(s.nodes, 1) OPERATOR(pg_catalog.+) coalesce(s.node_index, 0)
          FROM pg_idgen_keyed_bounds b WHERE b.space OPERATOR(pg_catalog.=) s.space) AS max_value,
       s.registry
FROM pg_idgen_keyed_spaces s
LEFT JOIN keyed_status_shmem() m USING (space)
LEFT JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) s.seq::pg_catalog.oid;
COMMENT ON VIEW keyed_status IS 'one row per keyed space of this database: configuration, highest durable bound and floor in memory, bound raises since server start, owner and privileges (USAGE: keyed_next, keyed_last), fleet mode''s nodes and node_index, and max_value: no value this node handed out for any key of the space is above it (its durable bounds), and whether bounds are raised through the lease registry';
REVOKE ALL ON keyed_status FROM PUBLIC;  -- SELECT only, whatever the default privileges
GRANT SELECT ON keyed_status TO PUBLIC;

REVOKE ALL ON FUNCTION keyed_create(text, int, int, int, int, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION keyed_set_node(text, int, bigint) FROM PUBLIC;
COMMENT ON FUNCTION keyed_create(text, int, int, int, int, boolean) IS 'creates a keyed space (superuser); with nodes => N, node_index => k (fleet mode) this node hands out counter * N + k: values of a key distinct across the N writable nodes; with registry => true its bounds are raised through the lease registry too';
COMMENT ON FUNCTION keyed_set_node(text, int, bigint) IS 'moves this node of a fleet-mode keyed space to another index (superuser): every value it hands out afterwards is above the given value';
REVOKE ALL ON FUNCTION keyed_drop(text) FROM PUBLIC;
COMMENT ON FUNCTION keyed_grant(text, text, boolean) IS 'grants USAGE on a keyed space (keyed_next, keyed_last) to a role or public; superusers and holders of the grant option';
COMMENT ON FUNCTION keyed_revoke(text, text) IS 'revokes USAGE on a keyed space from a role or public, with what it granted onward';
COMMENT ON FUNCTION keyed_next(text, bigint) IS 'next value of a key in a keyed space: increasing per key instance-wide, never reissued';
COMMENT ON FUNCTION keyed_next(text, bigint, int) IS 'reserves the next n values of a key (n <= step) and returns the last; the caller owns result-n+1 .. result';
COMMENT ON FUNCTION keyed_last(text, bigint) IS 'a key''s current value without consuming one: no value handed out for it is above it, its next is';
