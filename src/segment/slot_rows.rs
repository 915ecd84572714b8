//! The stride slots a node has of a slotted tag, as recorded on it: the rows of
//! `pg_idgen_segment_slots` (tag, slot, seq, owned), read with a fresh snapshot and no SQL;
//! adding one (its backing sequence and its row); a slot's first value and its durable mark.
//!
//! A slotted tag's value space is cut into `S` arithmetic progressions (`core::slots`): chunk `c`
//! of slot `s` is `start + (c*S + s)*unit`. Each slot a node has gets its own backing sequence
//! (`INCREMENT BY S*unit START start + s*unit`, `pg_idgen_seg_<n>`, owned by the table's `seq`
//! column like a tag's sequence): the sequence's value is the slot's durable high-water mark on
//! this node, WAL-logged and dumped with the database, as for a plain tag. Used by both slotted
//! kinds (`slotted`, `leased`), the hand-over, administration and status.

use pgrx::pg_sys;
use pgrx::prelude::*;

use super::config::TagConfig;
use super::durable::create_backing_sequence;
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

/// Creates slot `slot`'s sequence (going up by `stride` from `origin`, next chunk `next`) and
/// records it as owned by this node. Runs as the superuser, inside the caller's transaction.
pub(super) fn add_slot(schema: &str, tag: &str, slot: i32, stride: i64, origin: i64, next: i64, owned: bool) {
    let mut count = 0i64;
    tables::scan_extension_table(c"pg_idgen_segment_slots", |_| count += 1);
    let seqname = create_backing_sequence(schema, 100_000 + count, stride, origin);
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
