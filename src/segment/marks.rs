//! Registry marks of the tags created with `registry_marks => true`: a high-water mark per
//! (system identifier, database, tag, stride slot) in the lease registry
//! (`pg_idgen_segment_marks`, written only through the registry's `pg_idgen_segment_marks()`,
//! sql/registry_nodes.sql), so that a lagging asynchronous standby promoted at once continues
//! above every value the old primary handed out: the system identifier is kept by physical
//! replication. The requests go through the lease worker like the keyed spaces' marks
//! (`keyed::marks`, kind `Segment`; `lease::marks` sends them).
//!
//! The rule (`refill::reserve_chunks`):
//!
//! * a reservation of chunks is the local `nextval`s and WAL flush *and* the registry's mark of
//!   the slot raised to the last value of the chunks ([`raise`]) before any of them is handed
//!   out: one registry round trip per reservation, i.e. per `step` values;
//! * the first reservation of a tag's entry (its first use after a start, a promotion or an
//!   eviction of the shared entry), and every reservation of a tag created by the current
//!   transaction, reads the marks first and moves each slot's sequence above its mark
//!   ([`lift`]; setval, never down).
//!
//! Without an answer from the registry neither happens (refused, 55000): the chunks already
//! reserved go on being handed out; a reservation whose mark failed is a gap, never a value twice.
//!
//! Plain and strided tags use the slot `node_index` (the one they serve), slotted tags the slot
//! of the chunks. Marks are positive (a mark of 0 is "none"): the option needs `start >= 1`.
//! One of the files of the `chunk` row: it uses `slot_rows`, `durable` and `config` below it.

use pg_idgen_core::segment::{chunk_at_or_above, Segment};
use pgrx::prelude::*;

use super::config::TagConfig;
use super::durable::next_chunk;
use super::errors::{past_bigint, Refusal};
use super::slot_rows::{slot_origin, slot_rows};
use crate::catalog::RunAs;
use crate::errors::Code;
use crate::keyed::marks::{call_kind, MarkKind};

/// The slot a plain or strided tag serves (its `node_index`).
fn own_slot(cfg: &TagConfig) -> i64 {
    (cfg.origin - cfg.start) / cfg.unit
}

/// The registry did not answer for a tag created with `registry_marks => true`: 55000.
fn failed(tag: &str, why: &str, raising: bool) -> Refusal {
    let message = if raising {
        format!("segment tag \"{tag}\" cannot reserve a segment: the registry did not confirm its mark")
    } else {
        format!("segment tag \"{tag}\" cannot reserve a segment yet: the registry's marks of its slots could not be read")
    };
    Refusal::new(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        message,
        Some(if raising {
            "The tag was created with registry_marks => true: a segment is handed out only once the lease registry (pg_idgen.registry) has its mark; the values already reserved go on. Retry when the registry answers; see SELECT * FROM snowflake_lease() and the server log."
        } else {
            "The tag was created with registry_marks => true: its first reservation after a start, a promotion or an eviction reads its marks from the lease registry (pg_idgen.registry). Retry when the registry answers; see SELECT * FROM snowflake_lease() and the server log."
        }),
    )
    .with_detail(why)
}

/// Moves `seqoid` (a slot's sequence, first value `origin`, `stride` apart) above `mark` if its
/// next chunk is not: setval, not transactional, never down.
fn move_above(seqoid: pg_sys::Oid, origin: i64, stride: i64, mark: i64) -> Result<(), Refusal> {
    let Some(next) = next_chunk(seqoid, stride) else { return Ok(()) };
    if next > mark {
        return Ok(());
    }
    let Some(to) = mark.checked_add(1).and_then(|v| chunk_at_or_above(origin, stride, v)) else {
        return Err(past_bigint(seqoid));
    };
    let _su = RunAs::superuser();
    Spi::run_with_args(
        "SELECT pg_catalog.setval($1::pg_catalog.oid::pg_catalog.regclass, $2, false)",
        &[seqoid.into(), to.into()],
    )
    .unwrap_or_else(|e| crate::catalog::spi_failed("move a slot's sequence above its registry mark", e));
    Ok(())
}

/// Reads the tag's marks from the registry and moves each of this node's slot sequences above
/// its mark (refused, 55000, without an answer).
pub(super) fn lift(tag: &str, cfg: &TagConfig) -> Result<(), Refusal> {
    let marks = call_kind(MarkKind::Segment, tag, &[]).map_err(|e| failed(tag, &e, false))?;
    let mark = |slot: i64| usize::try_from(slot).ok().and_then(|s| marks.get(s)).copied().unwrap_or(0);
    if cfg.slotted {
        for r in slot_rows(tag) {
            let m = mark(r.slot);
            if m > 0 {
                move_above(r.seqoid, slot_origin(cfg, r.slot), cfg.stride, m)?;
            }
        }
    } else {
        let m = mark(own_slot(cfg));
        if m > 0 {
            move_above(cfg.seqoid, cfg.origin, cfg.stride, m)?;
        }
    }
    Ok(())
}

/// Raises the registry mark of the slot of a reservation (`slot`: None for a plain or strided
/// tag) to the last value of `seg`, and waits for the registry's confirmation (refused, 55000,
/// without).
pub(super) fn raise(tag: &str, cfg: &TagConfig, slot: Option<i64>, seg: &Segment) -> Result<(), Refusal> {
    let slot = slot.unwrap_or_else(|| own_slot(cfg));
    let last = seg.last();
    let Ok(bucket) = usize::try_from(slot) else { return Ok(()) };
    let marks = call_kind(MarkKind::Segment, tag, &[(bucket, last)]).map_err(|e| failed(tag, &e, true))?;
    let now = marks.get(bucket).copied().unwrap_or(0);
    if now < last {
        return Err(failed(
            tag,
            &format!("the registry's mark of slot {slot} is {now} after a raise to {last}"),
            true,
        ));
    }
    Ok(())
}
