-- pg_idgen 0.3.0 -> 0.4.0. Written by hand and reviewed (README "Releasing": the rules for
-- upgrade scripts). Run by ALTER EXTENSION pg_idgen UPDATE TO '0.4.0', as a superuser, with
-- search_path = the extension's schema, pg_temp. The update test from 0.3.0 checks that a database
-- updated by it has exactly the objects of a fresh 0.4.0 install (tests/upgrade/objects.sql).
\echo Use "ALTER EXTENSION pg_idgen UPDATE TO '0.4.0'" to load this file. \quit

-- Each change of 0.4.0 adds its section below, in the form the install script creates it.

-- ---- Segment stride slots: segment_create(..., slots, owned), pg_idgen_segment_slots,
-- segment_slot_release/adopt/status, segment_status.owned_slots. Existing tags keep their rows
-- and values: slotted = false is the nodes/node_index layout (one slot per node).
ALTER TABLE pg_idgen_segments ADD COLUMN slotted bool NOT NULL DEFAULT false;

CREATE TABLE pg_idgen_segment_slots (
    tag   text NOT NULL CHECK (octet_length(tag) BETWEEN 1 AND 63),
    slot  int NOT NULL CHECK (slot BETWEEN 0 AND 255),
    seq   regclass NOT NULL,
    owned bool NOT NULL DEFAULT true,
    PRIMARY KEY (tag, slot)
);
COMMENT ON TABLE pg_idgen_segment_slots IS 'pg_idgen stride slots of segment tags on this node: one row per slot, each backed by its own sequence (seq), owned = served here';
SELECT pg_catalog.pg_extension_config_dump('pg_idgen_segment_slots', '');
REVOKE ALL ON pg_idgen_segment_slots FROM PUBLIC;
CREATE TRIGGER pg_idgen_segment_slots_link
    AFTER INSERT OR UPDATE OF seq ON pg_idgen_segment_slots
    FOR EACH ROW EXECUTE FUNCTION pg_idgen_segment_link();

DROP FUNCTION segment_create(text, int, bigint, int, int, int, int, interval);
CREATE  FUNCTION "segment_create"(
	"tag" TEXT,
	"step" INT DEFAULT 1000,
	"start" bigint DEFAULT 1,
	"nodes" INT DEFAULT 1,
	"node_index" INT DEFAULT 0,
	"min_step" INT DEFAULT NULL,
	"max_step" INT DEFAULT NULL,
	"target_interval" interval DEFAULT NULL,
	"slots" INT DEFAULT NULL,
	"owned" INT[] DEFAULT NULL
) RETURNS void
VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'segment_create_slotted_wrapper';
REVOKE ALL ON FUNCTION segment_create(text, int, bigint, int, int, int, int, interval, int, int[]) FROM PUBLIC;

CREATE  FUNCTION "segment_slot_adopt"(
	"tag" TEXT,
	"slot" INT,
	"mark" bigint
) RETURNS bigint
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'segment_slot_adopt_wrapper';
REVOKE ALL ON FUNCTION segment_slot_adopt(text, int, bigint) FROM PUBLIC;

CREATE  FUNCTION "segment_slot_release"(
	"tag" TEXT,
	"slot" INT
) RETURNS bigint
STRICT VOLATILE PARALLEL UNSAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'segment_slot_release_wrapper';
REVOKE ALL ON FUNCTION segment_slot_release(text, int) FROM PUBLIC;

CREATE  FUNCTION "segment_slot_status"() RETURNS TABLE (
	"tag" TEXT,
	"slot" INT,
	"slots" INT,
	"owned" bool,
	"persisted_mark" bigint,
	"next_chunk" bigint,
	"chunks_reserved" bigint,
	"refills" bigint,
	"last_installed" bigint
)
STRICT VOLATILE PARALLEL SAFE
LANGUAGE c
AS 'MODULE_PATHNAME', 'segment_slot_status_wrapper';

CREATE VIEW segment_slot_status AS
SELECT * FROM segment_slot_status();
COMMENT ON VIEW segment_slot_status IS 'one row per stride slot this node has (a plain tag: its one slot node_index of nodes): owned, durable mark, next chunk, chunks reserved ever, reservations and largest value installed since server start';
GRANT SELECT ON segment_slot_status TO PUBLIC;

CREATE OR REPLACE VIEW segment_status AS
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
       o.owned_slots
FROM pg_idgen_segments s
LEFT JOIN segment_persisted() p USING (tag)
LEFT JOIN segment_status_shmem() m USING (tag)
LEFT JOIN (SELECT x.tag, pg_catalog.array_agg(x.slot ORDER BY x.slot) AS owned_slots
           FROM segment_slot_status() x WHERE x.owned GROUP BY x.tag) o USING (tag);
