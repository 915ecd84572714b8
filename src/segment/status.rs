//! A top-layer file: what the `segment_status`, `segment_slot_status` and `segment_slot_leases`
//! views show — the shared entries of this database, each tag's persisted high-water mark, each
//! slot's durable mark and what this server reserved from it, and the registry-held slots. Reads
//! only (shared memory under each entry's lock, tables and sequences by OID without SQL).

use pgrx::prelude::*;

use super::config::read_all;
use super::durable::{next_chunk, persisted_hwm};
use super::owners;
use super::slot_rows::{slot_mark, slot_origin, slot_rows, SlotRow};
use super::table::{entry_ptr, my_db, Held, HEADER};
use crate::clock::ms_to_timestamptz;
use crate::tables;

/// Shared-memory state of this database's tags (used by the segment_status view).
#[pg_extern(volatile, parallel_restricted)]
#[allow(clippy::type_complexity)]
pub(super) fn segment_status_shmem() -> TableIterator<
    'static,
    (
        name!(tag, String),
        name!(current_step, i64),
        name!(cursor, Option<i64>),
        name!(segment_end, Option<i64>),
        name!(next_start, Option<i64>),
        name!(next_end, Option<i64>),
        name!(values_issued, i64),
        name!(refills, i64),
        name!(sync_refills, i64),
        name!(discarded, i64),
        name!(last_refill, Option<TimestampWithTimeZone>),
    ),
> {
    let mut rows = Vec::new();
    // SAFETY: HEADER is set once at startup; each entry is copied under its own lock.
    if unsafe { !HEADER.is_null() } {
        let db = my_db();
        for i in 0..unsafe { (*HEADER).capacity } {
            let snap = {
                let _g = Held::entry(i);
                let e = entry_ptr(i);
                unsafe {
                    if !(*e).in_use || (*e).dbid != db {
                        continue;
                    }
                    std::ptr::read(e)
                }
            };
            let b = snap.bufs;
            let cur_end = (!b.cur.is_empty()).then(|| b.cur.last());
            let tag = String::from_utf8_lossy(&snap.tag[..snap.tag_len]).into_owned();
            rows.push((
                tag,
                snap.mult * snap.unit,
                b.cursor(),
                cur_end,
                (!b.next.is_empty()).then_some(b.next.first),
                (!b.next.is_empty()).then(|| b.next.last()),
                snap.issued,
                snap.refills,
                snap.sync_refills,
                snap.discarded,
                (snap.last_refill_ms > 0).then(|| ms_to_timestamptz(snap.last_refill_ms)),
            ));
        }
    }
    TableIterator::new(rows)
}

/// The persisted high-water mark of every tag of this database: the largest value that may
/// have been handed out (NULL before the first reservation). Readable by every role (through the
/// segment_status view): the table and the sequences are read by OID, without SQL (`tables`).
#[pg_extern(volatile, parallel_restricted)]
pub(super) fn segment_persisted(
) -> TableIterator<'static, (name!(tag, String), name!(persisted_hwm, Option<i64>))> {
    let rows: Vec<_> = read_all()
        .into_iter()
        .map(|(tag, cfg)| {
            // A tag whose sequence was dropped by hand shows NULL rather than failing the view.
            let hwm = if cfg.slotted {
                // the largest mark of the slots this node has
                slot_rows(&tag).iter().filter_map(|r| slot_mark(&cfg, r.slot, r.seqoid)).max()
            } else {
                tables::sequence_state(cfg.seqoid)
                    .and_then(|_| persisted_hwm(cfg.seqoid, cfg.unit, cfg.origin))
            };
            (tag, hwm)
        })
        .collect();
    TableIterator::new(rows)
}

/// Per (tag, slot) of this database's slotted tags in shared memory: reservations installed
/// since the entry was claimed and the largest value installed.
fn slot_stats() -> std::collections::HashMap<(String, i64), (i64, Option<i64>)> {
    let mut out = std::collections::HashMap::new();
    // SAFETY: HEADER is set once at startup; each entry is copied under its own lock.
    if unsafe { HEADER.is_null() } {
        return out;
    }
    let db = my_db();
    for i in 0..unsafe { (*HEADER).capacity } {
        let snap = {
            let _g = Held::entry(i);
            let e = entry_ptr(i);
            // SAFETY: the entry lock is held.
            unsafe {
                if !(*e).in_use || (*e).dbid != db || !(*e).slotted {
                    continue;
                }
                std::ptr::read(e)
            }
        };
        let tag = String::from_utf8_lossy(&snap.tag[..snap.tag_len]).into_owned();
        for s in 0..(snap.slots.max(0) as usize).min(snap.slot_high.len()) {
            let high = (snap.slot_high[s] != i64::MIN).then_some(snap.slot_high[s]);
            if snap.slot_refills[s] > 0 || high.is_some() {
                out.insert((tag.clone(), s as i64), (snap.slot_refills[s], high));
            }
        }
    }
    out
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
    let shm = slot_stats();
    let mut rows = Vec::new();
    for (tag, cfg) in read_all() {
        let list: Vec<SlotRow> = if cfg.slotted {
            slot_rows(&tag)
        } else {
            let k = (cfg.origin - cfg.start) / cfg.unit;
            vec![SlotRow { slot: k, seqoid: cfg.seqoid, owned: true }]
        };
        let serving = cfg.registry && owners::serving();
        for r in list {
            let owned =
                if cfg.registry { serving && owners::status(&tag, r.slot).is_some() } else { r.owned };
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
    let serving = owners::serving();
    let mut rows = Vec::new();
    for (tag, cfg) in read_all() {
        if !cfg.registry {
            continue;
        }
        for s in 0..cfg.slots {
            if let Some((floor, ceiling)) = owners::status(&tag, s) {
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
