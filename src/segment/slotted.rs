//! The chunks of a tag of stride slots whose ownership is recorded on this node
//! (`segment_create(tag, slots => S, owned => ...)`, moved by explicit hand-over: `handover`).
//! One of the three kinds of [`super::chunk`].
//!
//! A reservation picks the owned slot whose next chunk is the lowest (least used first), takes
//! its chunks with `nextval` (a RowExclusiveLock on that sequence until the caller's transaction
//! ends), then checks with a fresh snapshot that the slot is still owned: a release
//! (`segment_slot_release`) locks the sequence in ShareRowExclusive mode before it reads the mark
//! and marks the slot released, so a reservation either lands below the mark it returns or sees
//! the slot released and drops its chunks (a gap).

use pg_idgen_core::slots::pick_least_used;

use super::chunk::Reserved;
use super::config::TagConfig;
use super::durable::{next_chunk, reserve};
use super::errors::Refusal;
use super::slot_rows::{slot_rows, SlotRow};
use super::table::MAX_SLOTS;
use crate::errors::Code;

fn no_slot(tag: &str) -> Refusal {
    Refusal::new(
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
    slot_high: Option<&[i64; MAX_SLOTS]>,
) -> Result<Reserved, Refusal> {
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
    let Some((slot, _)) = pick_least_used(&cands, None) else { return Err(no_slot(tag)) };
    let Some(seqoid) = owned.iter().find(|r| r.slot == slot).map(|r| r.seqoid) else {
        return Err(no_slot(tag));
    };
    let seg = reserve(seqoid, cfg.unit, stride, mult)?;
    // Released (or handed over) while this reserved: the chunks are not served.
    let still = slot_rows(tag).iter().any(|r| r.slot == slot && r.owned && r.seqoid == seqoid);
    Ok(Reserved { slot: Some(slot), seg, gap: !still })
}
