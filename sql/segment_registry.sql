-- pg_idgen: segment slot ownership through the lease registry (tags created with
-- segment_create(..., slots => S, registry => true); docs/segment-slots.md). Used in the
-- database pg_idgen.registry names, next to pg_idgen_leases; empty elsewhere. One row per
-- (tag, slot): its owner (a leased worker id, and the token of the server that took it), its
-- state (held; moving to worker id move_to; released by the owner, for move_to to take), and,
-- counted in chunks of the slot, ceiling (no owner ever handed out a chunk at or above it) and
-- floor (the ceiling when the current owner took it: it serves chunks floor .. ceiling - 1).
-- The lease workers of the nodes read and update it (src/lease/slots.rs) only through the
-- SECURITY DEFINER functions of sql/registry_nodes.sql: their role needs EXECUTE on those, no
-- right on the table. Not dumped: ownership belongs to the running fleet.
CREATE TABLE pg_idgen_segment_owners (
    tag         text NOT NULL CHECK (octet_length(tag) BETWEEN 1 AND 63),
    slot        int NOT NULL,
    slots       int NOT NULL CHECK (slots BETWEEN 1 AND 256),
    owner       int NOT NULL CHECK (owner >= 0),
    owner_token bigint,
    state       text NOT NULL DEFAULT 'held' CHECK (state IN ('held', 'moving', 'released')),
    move_to     int CHECK (move_to >= 0),
    ceiling     bigint NOT NULL DEFAULT 0,
    floor       bigint NOT NULL DEFAULT 0,
    changed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tag, slot),
    CHECK (slot >= 0 AND slot < slots),
    CHECK (floor >= 0 AND floor <= ceiling),
    CHECK ((state = 'held') = (move_to IS NULL))
);
COMMENT ON TABLE pg_idgen_segment_owners IS 'segment stride slots owned through this lease registry: owner worker id, state, and the chunks the owners may hand out (pg_idgen)';
COMMENT ON COLUMN pg_idgen_segment_owners.ceiling IS 'chunks of the slot: no owner handed out chunk ceiling or above; raised by the owner while its lease is valid';
COMMENT ON COLUMN pg_idgen_segment_owners.floor IS 'the ceiling when the current owner took the slot: it continues at this chunk';
REVOKE ALL ON pg_idgen_segment_owners FROM PUBLIC;

CREATE FUNCTION segment_registry_assign(tag text, slots int, worker_ids int[]) RETURNS int
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    n int;
BEGIN
    IF $1 IS NULL OR $2 IS NULL OR $3 IS NULL THEN
        RAISE EXCEPTION 'segment_registry_assign: tag, slots and worker_ids must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF octet_length($1) NOT BETWEEN 1 AND 63 THEN
        RAISE EXCEPTION 'segment tag must have 1 to 63 bytes' USING ERRCODE = '22023';
    END IF;
    IF $2 NOT BETWEEN 1 AND 256 THEN
        RAISE EXCEPTION 'slots must be between 1 and 256, got %', $2 USING ERRCODE = '22023';
    END IF;
    n := coalesce(array_length($3, 1), 0);
    IF n = 0 OR array_position($3, NULL) IS NOT NULL OR EXISTS (SELECT FROM unnest($3) w WHERE w < 0)
       OR (SELECT count(DISTINCT w) FROM unnest($3) w) <> n THEN
        RAISE EXCEPTION 'worker_ids must be distinct worker ids (0 or more), at least one'
            USING ERRCODE = '22023', HINT = 'The worker ids the nodes lease: SELECT worker_id FROM snowflake_lease() on each node.';
    END IF;
    LOCK TABLE @extschema@.pg_idgen_segment_owners IN SHARE ROW EXCLUSIVE MODE;
    IF EXISTS (SELECT FROM @extschema@.pg_idgen_segment_owners o WHERE o.tag = $1) THEN
        RAISE EXCEPTION 'segment tag "%" already has slots in the registry', $1
            USING ERRCODE = '42710', HINT = 'Move slots with segment_registry_move or segment_registry_rebalance.';
    END IF;
    INSERT INTO @extschema@.pg_idgen_segment_owners (tag, slot, slots, owner)
    SELECT $1, s, $2, $3[1 + s % n] FROM generate_series(0, $2 - 1) s;
    RETURN $2;
END
$fn$;

CREATE FUNCTION segment_registry_move(tag text, slot int, to_worker int) RETURNS text
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    r record;
BEGIN
    IF $1 IS NULL OR $2 IS NULL OR $3 IS NULL THEN
        RAISE EXCEPTION 'segment_registry_move: tag, slot and to_worker must not be NULL' USING ERRCODE = '22004';
    END IF;
    SELECT o.owner, o.state, o.move_to INTO r FROM @extschema@.pg_idgen_segment_owners o
     WHERE o.tag = $1 AND o.slot = $2 FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'segment tag "%" has no slot % in the registry', $1, $2
            USING ERRCODE = '42704', HINT = 'Assign the tag''s slots first: segment_registry_assign(tag, slots, worker_ids).';
    END IF;
    IF r.state = 'held' AND r.owner = $3 THEN
        RETURN 'held';
    END IF;
    IF r.state = 'moving' AND r.owner = $3 THEN
        -- back to its owner before it let go: the move is cancelled
        UPDATE @extschema@.pg_idgen_segment_owners o SET state = 'held', move_to = NULL, changed_at = now()
         WHERE o.tag = $1 AND o.slot = $2;
        RETURN 'held';
    END IF;
    IF r.state <> 'held' THEN
        IF r.move_to = $3 THEN
            RETURN r.state;
        END IF;
        IF EXISTS (SELECT FROM @extschema@.pg_idgen_leases l WHERE l.worker_id = r.move_to
                    AND l.released_at IS NULL AND l.lease_until > now()) THEN
            RAISE EXCEPTION 'slot % of segment tag "%" is already moving to worker id %', $2, $1, r.move_to
                USING ERRCODE = '55000', HINT = 'Wait until that worker id took it (state held), then move it again.';
        END IF;
        -- its target holds no lease any more: the move goes elsewhere
    END IF;
    IF NOT EXISTS (SELECT FROM @extschema@.pg_idgen_leases l WHERE l.worker_id = $3
                    AND l.released_at IS NULL AND l.lease_until > now()) THEN
        RAISE EXCEPTION 'worker id % holds no lease in this registry', $3
            USING ERRCODE = '55000', HINT = 'Slots move to a running node: SELECT worker_id FROM snowflake_lease() on it.';
    END IF;
    UPDATE @extschema@.pg_idgen_segment_owners o
       SET state = CASE WHEN o.state = 'held' THEN 'moving' ELSE o.state END, move_to = $3, changed_at = now()
     WHERE o.tag = $1 AND o.slot = $2
    RETURNING o.state INTO r;
    RETURN r.state;
END
$fn$;

CREATE FUNCTION segment_registry_rebalance(tag text, to_worker int, k int)
    RETURNS TABLE (slot int, from_worker int)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    v_from int;
    v_slot int;
BEGIN
    IF $1 IS NULL OR $2 IS NULL OR $3 IS NULL THEN
        RAISE EXCEPTION 'segment_registry_rebalance: tag, to_worker and k must not be NULL' USING ERRCODE = '22004';
    END IF;
    IF $3 < 0 THEN
        RAISE EXCEPTION 'k must not be negative, got %', $3 USING ERRCODE = '22023';
    END IF;
    LOCK TABLE @extschema@.pg_idgen_segment_owners IN SHARE ROW EXCLUSIVE MODE;
    IF NOT EXISTS (SELECT FROM @extschema@.pg_idgen_segment_owners o WHERE o.tag = $1) THEN
        RAISE EXCEPTION 'segment tag "%" has no slots in the registry', $1 USING ERRCODE = '42704';
    END IF;
    FOR i IN 1 .. $3 LOOP
        -- the worker id with the most slots (pending moves count for their target), its
        -- highest held slot; ties: the lowest worker id
        SELECT o.owner, max(o.slot) INTO v_from, v_slot
          FROM @extschema@.pg_idgen_segment_owners o
         WHERE o.tag = $1 AND o.state = 'held' AND o.owner <> $2
         GROUP BY o.owner
         ORDER BY (SELECT count(*) FROM @extschema@.pg_idgen_segment_owners x
                    WHERE x.tag = $1 AND coalesce(x.move_to, x.owner) = o.owner) DESC, o.owner
         LIMIT 1;
        EXIT WHEN NOT FOUND;
        PERFORM @extschema@.segment_registry_move($1, v_slot, $2);
        slot := v_slot;
        from_worker := v_from;
        RETURN NEXT;
    END LOOP;
END
$fn$;

CREATE FUNCTION segment_registry_drain(tag text, from_worker int)
    RETURNS TABLE (slot int, to_worker int)
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE SET search_path = pg_catalog, pg_temp AS $fn$
#variable_conflict use_column
DECLARE
    v_slot int;
    v_to int;
BEGIN
    IF $1 IS NULL OR $2 IS NULL THEN
        RAISE EXCEPTION 'segment_registry_drain: tag and from_worker must not be NULL' USING ERRCODE = '22004';
    END IF;
    LOCK TABLE @extschema@.pg_idgen_segment_owners IN SHARE ROW EXCLUSIVE MODE;
    IF NOT EXISTS (SELECT FROM @extschema@.pg_idgen_segment_owners o WHERE o.tag = $1) THEN
        RAISE EXCEPTION 'segment tag "%" has no slots in the registry', $1 USING ERRCODE = '42704';
    END IF;
    FOR v_slot IN SELECT o.slot FROM @extschema@.pg_idgen_segment_owners o
                   WHERE o.tag = $1 AND o.owner = $2 AND o.state = 'held' ORDER BY o.slot LOOP
        -- to the other worker id with a live lease that has the fewest slots (pending moves
        -- count for their target); ties: the lowest worker id
        SELECT w INTO v_to FROM (
            SELECT coalesce(x.move_to, x.owner) AS w, count(*) AS c
              FROM @extschema@.pg_idgen_segment_owners x WHERE x.tag = $1
             GROUP BY 1) t
         WHERE w <> $2 AND EXISTS (SELECT FROM @extschema@.pg_idgen_leases l WHERE l.worker_id = t.w
                                     AND l.released_at IS NULL AND l.lease_until > now())
         ORDER BY c, w LIMIT 1;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'no other worker id with a live lease holds slots of segment tag "%"', $1
                USING ERRCODE = '55000', HINT = 'Move slots to a running node with segment_registry_move(tag, slot, worker_id).';
        END IF;
        PERFORM @extschema@.segment_registry_move($1, v_slot, v_to);
        slot := v_slot;
        to_worker := v_to;
        RETURN NEXT;
    END LOOP;
END
$fn$;

REVOKE ALL ON FUNCTION segment_registry_assign(text, int, int[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION segment_registry_move(text, int, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION segment_registry_rebalance(text, int, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION segment_registry_drain(text, int) FROM PUBLIC;
COMMENT ON FUNCTION segment_registry_assign(text, int, int[]) IS 'registry: gives the slots of a registry-owned segment tag to worker ids, round robin';
COMMENT ON FUNCTION segment_registry_move(text, int, int) IS 'registry: moves a slot to a worker id; the owner stops serving it, then the target takes it above its ceiling';
COMMENT ON FUNCTION segment_registry_rebalance(text, int, int) IS 'registry: moves k slots to a worker id from the worker ids that have the most';
COMMENT ON FUNCTION segment_registry_drain(text, int) IS 'registry: moves every slot of a worker id to the others, each to the one that has the fewest';
