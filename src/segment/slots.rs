//! Stride slots of a tag created with `segment_create(tag, slots => S, owned => ...)`.
//!
//! A slotted tag's value space is cut into `S` arithmetic progressions (`core::slots`): chunk `c`
//! of slot `s` is `start + (c*S + s)*unit`. Each slot this node owns has a row in
//! `pg_idgen_segment_slots` (tag, slot, seq, owned) and its own backing sequence
//! (`INCREMENT BY S*unit START start + s*unit`, `pg_idgen_seg_<n>`, owned by the table's `seq`
//! column like a tag's sequence): the sequence's value is the slot's durable high-water mark on
//! this node, WAL-logged and dumped with the database, as for a plain tag. A plain tag
//! (`nodes => N, node_index => k`) is the same layout with `S = N` and the one slot `k`, served
//! from the tag's own sequence.
//!
//! A reservation picks the owned slot whose next chunk is the lowest (least used first), takes
//! its chunks with `nextval` (a RowExclusiveLock on that sequence until the caller's transaction
//! ends), then checks with a fresh snapshot that the slot is still owned: a release
//! (`segment_slot_release`) locks the sequence in ShareRowExclusive mode before it reads the mark
//! and marks the slot released, so a reservation either lands below the mark it returns or sees
//! the slot released and drops its chunks (a gap).

use pg_idgen_core::segment::Segment;
use pg_idgen_core::slots::pick_least_used;
use pgrx::pg_sys;
use pgrx::prelude::*;

use super::config::TagConfig;
use super::reserve::reserve;
use crate::errors::{raise, Code};
use crate::tables;

/// One row of `pg_idgen_segment_slots`.
#[derive(Clone, Copy, Debug)]
pub(super) struct SlotRow {
    pub(super) slot: i64,
    pub(super) seqoid: pg_sys::Oid,
    pub(super) owned: bool,
}

/// The slot rows of `tag` on this node (a fresh snapshot, no SQL).
pub(super) fn slot_rows(tag: &str) -> Vec<SlotRow> {
    let mut rows = Vec::new();
    tables::scan_extension_table(c"pg_idgen_segment_slots", |row| {
        if row.text("tag").as_deref() == Some(tag) {
            if let (Some(slot), Some(seqoid)) = (row.i64("slot"), row.oid("seq")) {
                rows.push(SlotRow { slot, seqoid, owned: row.bool("owned").unwrap_or(false) });
            }
        }
    });
    rows.sort_by_key(|r| r.slot);
    rows
}

/// The first value of slot `slot` of a tag.
pub(super) fn slot_origin(cfg: &TagConfig, slot: i64) -> i64 {
    cfg.start.saturating_add(slot.saturating_mul(cfg.unit))
}

/// The chunk start the next `nextval` of a slot's sequence returns, or None if it is gone.
pub(super) fn next_chunk(seqoid: pg_sys::Oid, stride: i64) -> Option<i64> {
    let (last, called) = tables::sequence_state(seqoid)?;
    Some(if called { last.saturating_add(stride) } else { last })
}

/// The slot's durable high-water mark on this node: the largest value that may have been
/// handed out from it (None: nothing yet).
pub(super) fn slot_mark(cfg: &TagConfig, slot: i64, seqoid: pg_sys::Oid) -> Option<i64> {
    let origin = slot_origin(cfg, slot);
    let (last, called) = tables::sequence_state(seqoid)?;
    if called {
        Some(last.saturating_add(cfg.unit - 1))
    } else if last > origin {
        Some(last - 1)
    } else {
        None
    }
}

pub(super) fn no_slot(tag: &str) -> ! {
    raise(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("this node owns no slot of segment tag \"{tag}\""),
        Some("Adopt a slot with segment_slot_adopt(tag, slot, mark), or move slots to this node."),
    )
}

/// Reserves `mult` chunks from the least-used slot this node owns: the one whose largest value
/// installed on this server (`slot_high`, from the shared entry; `i64::MIN` for a slot not used
/// since the entry was claimed) is the lowest, or without `slot_high` the one whose sequence's
/// next chunk is the lowest. Returns the slot, the segment (None on bigint overflow) and whether
/// the slot was released meanwhile (the chunks are then not served: a gap).
pub(super) fn reserve_slotted(
    tag: &str,
    cfg: &TagConfig,
    mult: i64,
    slot_high: Option<&[i64; super::table::MAX_SLOTS]>,
) -> (i64, Option<Segment>, bool) {
    if cfg.registry {
        return super::leased::reserve_leased(tag, cfg, mult, slot_high);
    }
    let stride = cfg.stride;
    let owned: Vec<SlotRow> = slot_rows(tag).into_iter().filter(|r| r.owned).collect();
    // In memory when the entry knows (no read of every slot's sequence per reservation).
    let cands: Vec<(i64, i64)> = match slot_high {
        Some(h) => owned
            .iter()
            .filter(|r| (0..h.len() as i64).contains(&r.slot))
            .map(|r| (r.slot, h[r.slot as usize]))
            .collect(),
        None => owned.iter().filter_map(|r| next_chunk(r.seqoid, stride).map(|n| (r.slot, n))).collect(),
    };
    let Some((slot, _)) = pick_least_used(&cands, None) else { no_slot(tag) };
    let seqoid = owned.iter().find(|r| r.slot == slot).map(|r| r.seqoid).unwrap_or_else(|| no_slot(tag));
    let seg = reserve(seqoid, cfg.unit, stride, mult);
    // Released (or handed over) while this reserved: the chunks are not served.
    let still = slot_rows(tag).iter().any(|r| r.slot == slot && r.owned && r.seqoid == seqoid);
    (slot, seg, !still)
}

/// Creates slot `slot`'s sequence (going up by `stride` from `origin`, next chunk `next`) and
/// records it as owned by this node. Runs as the superuser, inside the caller's transaction.
pub(super) fn add_slot(schema: &str, tag: &str, slot: i32, stride: i64, origin: i64, next: i64, owned: bool) {
    let mut count = 0i64;
    tables::scan_extension_table(c"pg_idgen_segment_slots", |_| count += 1);
    let seqname = super::admin::create_backing_sequence(schema, 100_000 + count, stride, origin);
    if next != origin {
        Spi::run_with_args(
            "SELECT pg_catalog.setval($1::pg_catalog.regclass, $2, false)",
            &[seqname.as_str().into(), next.into()],
        )
        .unwrap_or_else(|e| crate::catalog::spi_failed("move a slot's sequence", e));
    }
    Spi::run_with_args(
        &format!(
            "INSERT INTO {schema}.pg_idgen_segment_slots (tag, slot, seq, owned) VALUES ($1, $2, $3::pg_catalog.regclass, $4)"
        ),
        &[tag.into(), slot.into(), seqname.as_str().into(), owned.into()],
    )
    .unwrap_or_else(|e| crate::catalog::spi_failed("record a slot", e));
}

/// Per slot of this database's slotted and plain tags: the slots this node has (a plain tag's
/// one slot is `node_index` of `nodes`), whether it serves them, their durable marks, and what
/// this server reserved from each since it started.
#[pg_extern(volatile, parallel_restricted)]
#[allow(clippy::type_complexity)]
pub(super) fn segment_slot_status() -> TableIterator<
    'static,
    (
        name!(tag, String),
        name!(slot, i32),
        name!(slots, i32),
        name!(owned, bool),
        name!(persisted_mark, Option<i64>),
        name!(next_chunk, Option<i64>),
        name!(chunks_reserved, Option<i64>),
        name!(refills, i64),
        name!(last_installed, Option<i64>),
    ),
> {
    let shm = super::status::slot_stats();
    let mut rows = Vec::new();
    for (tag, cfg) in super::config::read_all() {
        let list: Vec<SlotRow> = if cfg.slotted {
            slot_rows(&tag)
        } else {
            let k = (cfg.origin - cfg.start) / cfg.unit;
            vec![SlotRow { slot: k, seqoid: cfg.seqoid, owned: true }]
        };
        let serving = cfg.registry && super::owners::serving();
        for r in list {
            let owned =
                if cfg.registry { serving && super::owners::status(&tag, r.slot).is_some() } else { r.owned };
            let mark = slot_mark(&cfg, r.slot, r.seqoid);
            let next = next_chunk(r.seqoid, cfg.stride);
            let origin = slot_origin(&cfg, r.slot);
            let chunks = next.map(|n| (n - origin) / cfg.stride);
            let (refills, last) = if cfg.slotted {
                shm.get(&(tag.clone(), r.slot)).copied().unwrap_or((0, None))
            } else {
                (0, None)
            };
            rows.push((
                tag.clone(),
                r.slot as i32,
                cfg.slots as i32,
                owned,
                mark,
                next,
                chunks,
                refills,
                last,
            ));
        }
    }
    TableIterator::new(rows)
}

/// Per slot of this database's registry-owned tags that this node holds: the chunks the
/// registry lets it hand out, as values (the first of chunk `floor`, the last below the
/// ceiling), and whether it serves them now (its lease is valid).
#[pg_extern(volatile, parallel_restricted)]
#[allow(clippy::type_complexity)]
pub(super) fn segment_slot_leases() -> TableIterator<
    'static,
    (
        name!(tag, String),
        name!(slot, i32),
        name!(first_value, i64),
        name!(last_value, i64),
        name!(serving, bool),
    ),
> {
    let serving = super::owners::serving();
    let mut rows = Vec::new();
    for (tag, cfg) in super::config::read_all() {
        if !cfg.registry {
            continue;
        }
        for s in 0..cfg.slots {
            if let Some((floor, ceiling)) = super::owners::status(&tag, s) {
                let origin = slot_origin(&cfg, s);
                let first = origin.saturating_add(floor.saturating_mul(cfg.stride));
                let last = origin
                    .saturating_add(ceiling.saturating_sub(1).saturating_mul(cfg.stride))
                    .saturating_add(cfg.unit - 1);
                rows.push((tag.clone(), s as i32, first, last, serving));
            }
        }
    }
    TableIterator::new(rows)
}

fn slotted_config(tag: &str) -> TagConfig {
    let Some(cfg) = super::config::read_config(tag) else { super::errors::unknown_tag(tag) };
    if !cfg.slotted {
        raise(
            Code::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("segment tag \"{tag}\" has no stride slots"),
            Some("Slots move only between nodes of a tag created with segment_create(tag, slots => S, owned => ...)."),
        );
    }
    cfg
}

/// The explicit hand-over does not apply to a tag whose slots the registry owns: 0A000.
fn explicit_config(tag: &str) -> TagConfig {
    let cfg = slotted_config(tag);
    if cfg.registry {
        raise(
            Code::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("the slots of segment tag \"{tag}\" are owned through the lease registry"),
            Some("Move them with segment_registry_move(tag, slot, worker_id) or segment_registry_rebalance(tag, worker_id, k) on the registry database (scripts/fleet.sh registry-move-slots)."),
        );
    }
    cfg
}

fn check_slot(cfg: &TagConfig, slot: i32) {
    if !(0..cfg.slots).contains(&(slot as i64)) {
        super::admin::bad(format!("slot must be between 0 and {}, got {slot}", cfg.slots - 1), None);
    }
}

/// Drops the tag's shared entry (its cached values: a gap) now and again at commit, so that no
/// backend serves a segment of a released slot after this transaction.
fn forget_cached(tag: &str) {
    let db = super::table::my_db();
    super::claim::release(db, tag);
    let t = tag.to_string();
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, move || super::claim::release(db, &t));
}

/// Stops serving `slot` of `tag` on this node, durably at commit, and returns its mark: the
/// largest value this node may have handed out from it (the value just below the slot's first
/// chunk if none). The node that adopts the slot continues above the mark. Waits for the
/// reservations of the slot in flight (their transactions) to end first.
#[pg_extern(volatile, parallel_unsafe, strict)]
pub(super) fn segment_slot_release(tag: &str, slot: i32) -> i64 {
    super::admin::require_superuser("release a segment slot");
    super::admin::check_writable("release a segment slot");
    let _su = crate::catalog::RunAs::superuser();
    let cfg = explicit_config(tag);
    check_slot(&cfg, slot);
    let Some(row) = slot_rows(tag).into_iter().find(|r| r.slot == slot as i64 && r.owned) else {
        raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("this node does not own slot {slot} of segment tag \"{tag}\""),
            Some("SELECT * FROM segment_slot_status shows the slots this node owns."),
        )
    };
    // nextval takes RowExclusiveLock: this waits for the reservations in flight (until their
    // transactions end) and blocks new ones until this transaction ends; those see the slot
    // released and drop what they got.
    // SAFETY: locks a relation by OID; released at transaction end.
    unsafe { pg_sys::LockRelationOid(row.seqoid, pg_sys::ShareRowExclusiveLock as i32) };
    let mark = slot_mark(&cfg, slot as i64, row.seqoid).unwrap_or(slot_origin(&cfg, slot as i64) - 1);
    let schema = crate::catalog::extension_schema();
    Spi::run_with_args(
        &format!(
            "UPDATE {schema}.pg_idgen_segment_slots SET owned = false \
             WHERE tag OPERATOR(pg_catalog.=) $1 AND slot OPERATOR(pg_catalog.=) $2"
        ),
        &[tag.into(), slot.into()],
    )
    .unwrap_or_else(|e| crate::catalog::spi_failed("release the slot", e));
    forget_cached(tag);
    mark
}

/// Starts serving `slot` of `tag` on this node above `mark` (what the releasing node's
/// segment_slot_release returned) and returns the first value it will hand out from it.
/// Refuses a mark lower than this node's own durable mark of the slot (a stale hand-over).
#[pg_extern(volatile, parallel_unsafe, strict)]
pub(super) fn segment_slot_adopt(tag: &str, slot: i32, mark: i64) -> i64 {
    super::admin::require_superuser("adopt a segment slot");
    super::admin::check_writable("adopt a segment slot");
    let _su = crate::catalog::RunAs::superuser();
    let cfg = explicit_config(tag);
    check_slot(&cfg, slot);
    let s = slot as i64;
    let row = slot_rows(tag).into_iter().find(|r| r.slot == s);
    if row.is_some_and(|r| r.owned) {
        raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("this node already owns slot {slot} of segment tag \"{tag}\""),
            None,
        );
    }
    if let Some(r) = row {
        // SAFETY: locks a relation by OID; released at transaction end.
        unsafe { pg_sys::LockRelationOid(r.seqoid, pg_sys::ShareRowExclusiveLock as i32) };
    }
    let seen = row.and_then(|r| slot_mark(&cfg, s, r.seqoid));
    if !pg_idgen_core::slots::mark_acceptable(cfg.start, cfg.unit, cfg.slots, s, mark, seen) {
        let why = match seen {
            Some(seen) if mark < seen => {
                format!("values up to {seen} of slot {slot} may have been handed out by this node")
            }
            _ => format!("{mark} is not a value of slot {slot}"),
        };
        crate::errors::raise_full(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("cannot adopt slot {slot} of segment tag \"{tag}\" above {mark}: {why}"),
            Some(format!(
                "Mark given: {mark}; this node's durable mark of the slot: {}.",
                seen.map_or("none".into(), |v| v.to_string())
            )),
            Some("Pass the mark that segment_slot_release returned on the node that released the slot."),
        );
    }
    let origin = slot_origin(&cfg, s);
    let Some(next) = pg_idgen_core::segment::chunk_at_or_above(origin, cfg.stride, mark.saturating_add(1))
        .filter(|c| c.checked_add(cfg.unit).is_some())
    else {
        raise(
            Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            format!("{mark} is too close to the largest bigint"),
            None,
        )
    };
    let schema = crate::catalog::extension_schema();
    match row {
        Some(r) => {
            let cur = next_chunk(r.seqoid, cfg.stride).unwrap_or(origin);
            if next > cur {
                Spi::run_with_args(
                    "SELECT pg_catalog.setval($1::pg_catalog.oid::pg_catalog.regclass, $2, false)",
                    &[r.seqoid.into(), next.into()],
                )
                .unwrap_or_else(|e| crate::catalog::spi_failed("move the slot's sequence", e));
            }
            Spi::run_with_args(
                &format!(
                    "UPDATE {schema}.pg_idgen_segment_slots SET owned = true \
                     WHERE tag OPERATOR(pg_catalog.=) $1 AND slot OPERATOR(pg_catalog.=) $2"
                ),
                &[tag.into(), slot.into()],
            )
            .unwrap_or_else(|e| crate::catalog::spi_failed("adopt the slot", e));
            super::reserve::flush_wal_and_wait_for_sync_standbys();
            next.max(cur)
        }
        None => {
            add_slot(&schema, tag, slot, cfg.stride, origin, next, true);
            super::reserve::flush_wal_and_wait_for_sync_standbys();
            next
        }
    }
}
