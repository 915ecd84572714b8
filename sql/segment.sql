-- pg_idgen: segment sequences. segment_next is a plain C function (the hot path); the tag
-- metadata is dumped with the database. Each tag's backing sequence (pg_idgen_seg_<n>, created
-- by segment_create) is not an extension member, so pg_dump dumps it with its value; it is
-- OWNED BY pg_idgen_segments.seq, so DROP EXTENSION drops it (src/segment/backing.rs).
CREATE FUNCTION segment_next(tag text) RETURNS bigint
    STRICT VOLATILE PARALLEL UNSAFE LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_segment_next';

CREATE TABLE pg_idgen_segments (
    tag             text PRIMARY KEY CHECK (octet_length(tag) BETWEEN 1 AND 63),
    seq             pg_idgen_regclass NOT NULL,
    step            int NOT NULL CHECK (step > 0),
    unit            int NOT NULL CHECK (unit > 0),
    start           bigint NOT NULL,
    nodes           int NOT NULL DEFAULT 1 CHECK (nodes BETWEEN 1 AND 1024),
    node_index      int NOT NULL DEFAULT 0,
    min_step        int,
    max_step        int,
    target_interval interval,
    created         timestamptz NOT NULL DEFAULT now(),
    slotted         bool NOT NULL DEFAULT false,
    registry        bool NOT NULL DEFAULT false,
    registry_marks  bool NOT NULL DEFAULT false,
    CHECK (node_index >= 0 AND node_index < nodes),
    CONSTRAINT pg_idgen_segments_registry_marks_check CHECK (NOT (registry_marks AND (registry OR start < 1))),
    CHECK (step <= 100000000 AND step % unit = 0),
    CHECK ((min_step IS NULL AND max_step IS NULL AND target_interval IS NULL AND unit = step)
        OR (min_step = unit AND max_step >= step AND max_step % unit = 0
            AND max_step / unit <= 1024 AND target_interval > interval '0'))
);
COMMENT ON TABLE pg_idgen_segments IS 'pg_idgen segment tags: one row per tag, each backed by its own sequence (seq)';
SELECT pg_catalog.pg_extension_config_dump('pg_idgen_segments', '');
REVOKE ALL ON pg_idgen_segments FROM PUBLIC;
-- pg_dump writes no OWNED BY for a sequence of an extension member table: the link is made
-- again when the rows are restored (and by segment_create's insert).
CREATE FUNCTION pg_idgen_segment_link() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_segment_link';
REVOKE ALL ON FUNCTION pg_idgen_segment_link() FROM PUBLIC;
CREATE TRIGGER pg_idgen_segments_link
    AFTER INSERT OR UPDATE OF seq ON pg_idgen_segments
    FOR EACH ROW EXECUTE FUNCTION pg_idgen_segment_link();

-- Stride slots of the tags created with slots => S: one row per slot this node has (owned: it
-- serves it now; false: released, its sequence keeps the mark). Each slot's sequence
-- (pg_idgen_seg_<n>) is linked to the seq column like a tag's (pg_idgen_segment_link).
CREATE TABLE pg_idgen_segment_slots (
    tag   text NOT NULL CHECK (octet_length(tag) BETWEEN 1 AND 63),
    slot  int NOT NULL CHECK (slot BETWEEN 0 AND 255),
    seq   pg_idgen_regclass NOT NULL,
    owned bool NOT NULL DEFAULT true,
    PRIMARY KEY (tag, slot)
);
COMMENT ON TABLE pg_idgen_segment_slots IS 'pg_idgen stride slots of segment tags on this node: one row per slot, each backed by its own sequence (seq), owned = served here';
SELECT pg_catalog.pg_extension_config_dump('pg_idgen_segment_slots', '');
REVOKE ALL ON pg_idgen_segment_slots FROM PUBLIC;
CREATE TRIGGER pg_idgen_segment_slots_link
    AFTER INSERT OR UPDATE OF seq ON pg_idgen_segment_slots
    FOR EACH ROW EXECUTE FUNCTION pg_idgen_segment_link();

CREATE VIEW segment_slot_status AS
SELECT * FROM segment_slot_status();
COMMENT ON VIEW segment_slot_status IS 'one row per stride slot this node has (a plain tag: its one slot node_index of nodes): owned, durable mark, next chunk, chunks reserved ever, reservations and largest value installed since server start';
REVOKE ALL ON segment_slot_status FROM PUBLIC;  -- SELECT only, whatever the default privileges
GRANT SELECT ON segment_slot_status TO PUBLIC;

CREATE VIEW segment_status AS
SELECT s.tag,
       coalesce(m.current_step, s.step::bigint) AS step,
       s.nodes, s.node_index,
       p.persisted_hwm,
       m.cursor, m.segment_end, m.next_start, m.next_end,
       coalesce(m.values_issued, 0) AS values_issued,
       coalesce(m.refills, 0) AS refills,
       coalesce(m.sync_refills, 0) AS sync_refills,
       coalesce(m.discarded, 0) AS discarded,
       m.last_refill,
       o.owned_slots,
       s.registry_marks
FROM pg_idgen_segments s
LEFT JOIN segment_persisted() p USING (tag)
LEFT JOIN segment_status_shmem() m USING (tag)
LEFT JOIN (SELECT x.tag, pg_catalog.array_agg(x.slot ORDER BY x.slot) AS owned_slots
           FROM segment_slot_status() x WHERE x.owned GROUP BY x.tag) o USING (tag);
COMMENT ON VIEW segment_status IS 'one row per segment tag of this database: step, persisted high-water mark, cached cursor/end, next buffer, statistics since server start, and whether reservations raise marks in the lease registry (registry_marks)';
REVOKE ALL ON segment_status FROM PUBLIC;  -- SELECT only, whatever the default privileges
GRANT SELECT ON segment_status TO PUBLIC;

REVOKE ALL ON FUNCTION segment_create(text, int, bigint, int, int, int, int, interval, int, int[], bool, bool) FROM PUBLIC;
REVOKE ALL ON FUNCTION segment_slot_release(text, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION segment_slot_adopt(text, int, bigint) FROM PUBLIC;
REVOKE ALL ON FUNCTION segment_drop(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION segment_set(text, bigint) FROM PUBLIC;
COMMENT ON FUNCTION segment_next(text) IS 'next value of a segment tag: unique and increasing instance-wide, never reissued';
