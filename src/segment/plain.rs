//! The chunks of a plain or strided tag (`segment_create(tag)` or `nodes => N, node_index =>
//! k`): node `k` of `N` serves the one slot `k` from the tag's own backing sequence
//! (`INCREMENT BY N*unit START start + k*unit`). No ownership to check: the sequence is this
//! node's alone. One of the three kinds of [`super::chunk`].

use pgrx::pg_sys;

use super::chunk::Reserved;
use super::durable::reserve;
use super::errors::Refusal;

/// Reserves `mult` chunks of `unit` values, `stride` apart, from the sequence `seqoid`. Refused
/// only as `durable::reserve_starts` is (the sequence gone, bigint used up).
pub(super) fn reserve_plain(
    seqoid: pg_sys::Oid,
    unit: i64,
    stride: i64,
    mult: i64,
) -> Result<Reserved, Refusal> {
    Ok(Reserved { slot: None, seg: reserve(seqoid, unit, stride, mult)?, gap: false })
}
