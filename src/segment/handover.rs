//! The explicit hand-over of a stride slot between nodes (tags created with `slots => S,
//! owned => ...`, superuser only): `segment_slot_release` stops serving a slot here and returns
//! its mark, `segment_slot_adopt` continues a slot above a mark. A top-layer file: it records
//! ownership in `pg_idgen_segment_slots` (`slot_rows`) and makes it durable (`durable`); the
//! reservations it fences are `slotted`'s. Tags whose slots the lease registry owns move in the
//! registry instead (`owners`, `lease::slots`).

use pgrx::pg_sys;
use pgrx::prelude::*;

use super::claim::release;
use super::config::{read_config, TagConfig};
use super::durable::{flush_wal_and_wait_for_sync_standbys, next_chunk};
use super::errors::{bad, check_writable, require_superuser, unknown_tag};
use super::slot_rows::{add_slot, slot_mark, slot_origin, slot_rows};
use super::table::my_db;
use crate::catalog::{extension_schema, spi_failed, RunAs};
use crate::errors::{raise, raise_full, Code};

fn slotted_config(tag: &str) -> TagConfig {
    let Some(cfg) = read_config(tag) else { unknown_tag(tag) };
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
        bad(format!("slot must be between 0 and {}, got {slot}", cfg.slots - 1), None);
    }
}

/// Drops the tag's shared entry (its cached values: a gap) now and again at commit, so that no
/// backend serves a segment of a released slot after this transaction.
fn forget_cached(tag: &str) {
    let db = my_db();
    release(db, tag);
    let t = tag.to_string();
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, move || release(db, &t));
}

/// Stops serving `slot` of `tag` on this node, durably at commit, and returns its mark: the
/// largest value this node may have handed out from it (the value just below the slot's first
/// chunk if none). The node that adopts the slot continues above the mark. Waits for the
/// reservations of the slot in flight (their transactions) to end first.
#[pg_extern(volatile, parallel_unsafe, strict)]
pub(super) fn segment_slot_release(tag: &str, slot: i32) -> i64 {
    require_superuser("release a segment slot");
    check_writable("release a segment slot");
    let _su = RunAs::superuser();
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
    let schema = extension_schema();
    Spi::run_with_args(
        &format!(
            "UPDATE {schema}.pg_idgen_segment_slots SET owned = false \
             WHERE tag OPERATOR(pg_catalog.=) $1 AND slot OPERATOR(pg_catalog.=) $2"
        ),
        &[tag.into(), slot.into()],
    )
    .unwrap_or_else(|e| spi_failed("release the slot", e));
    forget_cached(tag);
    mark
}

/// Starts serving `slot` of `tag` on this node above `mark` (what the releasing node's
/// segment_slot_release returned) and returns the first value it will hand out from it.
/// Refuses a mark lower than this node's own durable mark of the slot (a stale hand-over).
#[pg_extern(volatile, parallel_unsafe, strict)]
pub(super) fn segment_slot_adopt(tag: &str, slot: i32, mark: i64) -> i64 {
    require_superuser("adopt a segment slot");
    check_writable("adopt a segment slot");
    let _su = RunAs::superuser();
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
        raise_full(
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
    let schema = extension_schema();
    match row {
        Some(r) => {
            let cur = next_chunk(r.seqoid, cfg.stride).unwrap_or(origin);
            if next > cur {
                Spi::run_with_args(
                    "SELECT pg_catalog.setval($1::pg_catalog.oid::pg_catalog.regclass, $2, false)",
                    &[r.seqoid.into(), next.into()],
                )
                .unwrap_or_else(|e| spi_failed("move the slot's sequence", e));
            }
            Spi::run_with_args(
                &format!(
                    "UPDATE {schema}.pg_idgen_segment_slots SET owned = true \
                     WHERE tag OPERATOR(pg_catalog.=) $1 AND slot OPERATOR(pg_catalog.=) $2"
                ),
                &[tag.into(), slot.into()],
            )
            .unwrap_or_else(|e| spi_failed("adopt the slot", e));
            flush_wal_and_wait_for_sync_standbys();
            next.max(cur)
        }
        None => {
            add_slot(&schema, tag, slot, cfg.stride, origin, next, true);
            flush_wal_and_wait_for_sync_standbys();
            next
        }
    }
}
