//! The chunks of a tag whose slots the lease registry owns (`registry => true`): a backend
//! reserves chunks of a slot only while this node holds it through the lease registry
//! (`owners`), starting at the slot's floor, and hands them out only if they lie below the
//! ceiling the registry recorded (`pg_idgen_core::slot_registry` has the safety argument).
//! One of the three kinds of [`super::chunk`]; also owns the error of a node that may not serve
//! them now ([`not_serving`]), which `hot` and `refill` raise too.

use pg_idgen_core::segment::{chunk_at_or_above, Segment};
use pg_idgen_core::slot_registry::{admit, all_within, chunk_index, Admit};
use pg_idgen_core::slots::pick_least_used;
use pgrx::pg_sys;
use pgrx::prelude::*;

use super::chunk::Reserved;
use super::config::TagConfig;
use super::durable::{next_chunk, reserve_starts};
use super::errors::{past_bigint, Refusal};
use super::owners::{self, HeldSlot, NotHeld};
use super::slot_rows::{slot_origin, slot_rows};
use super::table::MAX_SLOTS;
use crate::catalog::RunAs;
use crate::clock::monotonic_ms;
use crate::errors::Code;

/// Longest a reservation waits for the lease worker to raise a slot's ceiling.
const CEILING_WAIT_MS: i64 = 10_000;

/// This node may not serve registry-owned slots now (no valid lease): 55000.
fn not_serving_now(tag: &str) -> Refusal {
    Refusal::new(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("this node does not hold the slots of segment tag \"{tag}\" now: its lease of the registry is not valid"),
        Some("See SELECT * FROM snowflake_lease() and the server log; serving resumes when the lease is renewed."),
    )
    .with_detail("The slots of a tag created with registry => true are served only while this node's worker id lease is valid and its lease worker has read them from the registry.")
}

/// [`not_serving_now`], raised.
#[cold]
pub(super) fn not_serving(tag: &str) -> ! {
    not_serving_now(tag).raise()
}

fn no_slot(tag: &str) -> Refusal {
    Refusal::new(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("this node holds no slot of segment tag \"{tag}\" in the registry"),
        Some("Move slots to this node's worker id with segment_registry_move() or segment_registry_rebalance() on the registry database."),
    )
}

fn held_here(tag: &str, cfg: &TagConfig) -> Result<Vec<HeldSlot>, Refusal> {
    let held = match owners::held(tag) {
        Ok(h) => h,
        Err(NotHeld::OtherDatabase(db)) => return Err(Refusal::new(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("the registry slots of segment tag \"{tag}\" are served by another database of this node (OID {})", u32::from(db)),
            Some("A registry-owned tag is served by one database per node: name it in pg_idgen.registry_database and reload."),
        )),
        Err(NotHeld::NotTheRegistryDatabase(name)) => return Err(Refusal::new(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("the registry slots of segment tag \"{tag}\" are served by database \"{name}\" on this node (pg_idgen.registry_database)"),
            Some("Call segment_next() for registry-owned tags in that database, or change pg_idgen.registry_database and reload."),
        )),
    };
    if let Some(other) = held.iter().find(|s| s.slots != cfg.slots) {
        return Err(Refusal::new(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "segment tag \"{tag}\" has {} slots on this node but {} in the registry",
                cfg.slots, other.slots
            ),
            Some("Every node must create the tag with the same slots, step and start as the registry's assignment."),
        ));
    }
    Ok(held)
}

/// Reserves `mult` chunks from the least-used slot this node holds in the registry. Returns
/// the slot, the segment (None on bigint overflow), and whether the chunks must not be handed
/// out (the slot moved or its ceiling was not covered meanwhile: a gap; the caller tries again).
pub(super) fn reserve_leased(
    tag: &str,
    cfg: &TagConfig,
    mult: i64,
    slot_high: Option<&[i64; MAX_SLOTS]>,
) -> Result<Reserved, Refusal> {
    if !owners::serving() {
        return Err(not_serving_now(tag));
    }
    let held = held_here(tag, cfg)?;
    let rows = slot_rows(tag);
    let stride = cfg.stride;
    let cands: Vec<(i64, i64, HeldSlot, pg_sys::Oid)> = held
        .iter()
        .filter_map(|h| rows.iter().find(|r| r.slot == h.slot).map(|r| (h, r.seqoid)))
        .filter_map(|(h, seq)| {
            let first = slot_origin(cfg, h.slot).checked_add(h.floor.checked_mul(stride)?)?;
            let key = match slot_high {
                Some(hi) if (0..hi.len() as i64).contains(&h.slot) => hi[h.slot as usize].max(first - 1),
                _ => next_chunk(seq, stride)?.max(first),
            };
            Some((h.slot, key, *h, seq))
        })
        .collect();
    let pick: Vec<(i64, i64)> = cands.iter().map(|c| (c.0, c.1)).collect();
    let Some((slot, _)) = pick_least_used(&pick, None) else { return Err(no_slot(tag)) };
    let Some(&(_, _, h, seqoid)) = cands.iter().find(|c| c.0 == slot) else { return Err(no_slot(tag)) };
    let origin = slot_origin(cfg, slot);
    let Some(first) =
        origin.checked_add(h.floor.saturating_mul(stride)).filter(|f| f.checked_add(cfg.unit).is_some())
    else {
        return Err(past_bigint(seqoid));
    };
    let next = next_chunk(seqoid, stride).unwrap_or(origin);
    if next < first {
        // Continue strictly above everything the slot's earlier owners could hand out: setval
        // is not transactional, the sequence never goes back.
        let to = chunk_at_or_above(origin, stride, first).unwrap_or(first);
        let _su = RunAs::superuser();
        Spi::run_with_args(
            "SELECT pg_catalog.setval($1::pg_catalog.oid::pg_catalog.regclass, $2, false)",
            &[seqoid.into(), to.into()],
        )
        .unwrap_or_else(|e| crate::catalog::spi_failed("move the slot's sequence to its floor", e));
    }
    let idx = chunk_index(origin, stride, next.max(first)).unwrap_or(h.floor);
    let end = idx.saturating_add(mult);
    match admit(idx, end, h.floor, h.ceiling) {
        Admit::Go => {}
        Admit::GoAndAsk => owners::ask(tag, slot, end),
        Admit::BelowFloor => return Ok(Reserved { slot: Some(slot), seg: None, gap: true }),
        Admit::Wait => {
            if !wait_for_ceiling(tag, slot, h.epoch, end)? {
                return Ok(Reserved { slot: Some(slot), seg: None, gap: true });
            }
        }
    }
    let starts = reserve_starts(seqoid, stride, mult)?;
    let chunks: Vec<i64> = starts.iter().map(|&s| chunk_index(origin, stride, s).unwrap_or(-1)).collect();
    // Handed out only if the slot is still ours under the same epoch, and every chunk lies in
    // [floor, ceiling) as the registry recorded it.
    let ok = owners::serving()
        && owners::get(tag, slot)
            .is_some_and(|now| now.epoch == h.epoch && all_within(&chunks, now.floor, now.ceiling));
    if !ok {
        if let Some(&last) = chunks.iter().max() {
            owners::ask(tag, slot, last + 1);
        }
    }
    Ok(Reserved { slot: Some(slot), seg: Segment::from_chunks(&starts, cfg.unit, stride), gap: !ok })
}

/// Waits until the worker published a ceiling of at least `end` for (tag, slot) under `epoch`:
/// true; false when the slot moved meanwhile. Refused (55000) when the node's validity ends or
/// after CEILING_WAIT_MS; interruptible.
fn wait_for_ceiling(tag: &str, slot: i64, epoch: u64, end: i64) -> Result<bool, Refusal> {
    let deadline = monotonic_ms() + CEILING_WAIT_MS;
    loop {
        owners::ask(tag, slot, end);
        let Some(cv) = owners::cv() else { return Ok(false) };
        // SAFETY: the condition variable lives in shared memory for the server's life; the
        // sleep is cancelled below (and by abort after an ERROR).
        unsafe { pg_sys::ConditionVariablePrepareToSleep(cv) };
        let now = owners::get(tag, slot);
        match now {
            None => {
                // SAFETY: as above.
                unsafe { pg_sys::ConditionVariableCancelSleep() };
                return Ok(false);
            }
            Some(s) if s.epoch != epoch => {
                // SAFETY: as above.
                unsafe { pg_sys::ConditionVariableCancelSleep() };
                return Ok(false);
            }
            Some(s) if end <= s.ceiling => {
                // SAFETY: as above.
                unsafe { pg_sys::ConditionVariableCancelSleep() };
                return Ok(true);
            }
            Some(_) => {}
        }
        if !owners::serving() {
            // SAFETY: as above.
            unsafe { pg_sys::ConditionVariableCancelSleep() };
            return Err(not_serving_now(tag));
        }
        let left = deadline - monotonic_ms();
        if left <= 0 {
            // SAFETY: as above.
            unsafe { pg_sys::ConditionVariableCancelSleep() };
            return Err(Refusal::new(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("the registry did not raise the ceiling of slot {slot} of segment tag \"{tag}\" within {CEILING_WAIT_MS} ms"),
                Some("The lease worker raises ceilings in the registry; see SELECT * FROM snowflake_lease() and the server log."),
            )
            .with_detail(format!("Chunks up to {end} of the slot were asked for.")));
        }
        // SAFETY: as above; the sleep is bounded and interruptible.
        unsafe {
            pg_sys::ConditionVariableTimedSleep(cv, left.min(100), pg_sys::PG_WAIT_EXTENSION);
            pg_sys::ConditionVariableCancelSleep();
        }
        pgrx::check_for_interrupts!();
    }
}
