//! The bottom layer: a backing sequence and durability, nothing else of a tag. One `nextval` per
//! chunk on a backing sequence, then the WAL flush and the wait for synchronous standbys, before
//! any value of the chunks is handed out ([`reserve_starts`]); what a sequence has reserved, read
//! by OID without SQL ([`next_chunk`], [`persisted_hwm`]); and the backing sequences' DDL
//! ([`create_backing_sequence`]). Knows no tag kind, no slot, no shared entry: every file above
//! that makes values durable comes here (and `keyed` too, for its spaces' bounds).

use pg_idgen_core::segment::Segment;
use pgrx::prelude::*;

use super::errors::{missing_sequence, past_bigint, sequence_gone, Refusal};
use crate::catalog::{free_relation_name, spi_failed, RunAs};
use crate::errors::{raise, Code};
use crate::tables;

unsafe extern "C-unwind" {
    /// The C function itself, only ever called by `DirectFunctionCall1Coll` (which pgrx guards).
    #[link_name = "nextval_oid"]
    fn raw_nextval_oid(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
}

/// The current WAL insert position as a flush target. When nothing has been inserted on the
/// current page yet, `GetXLogInsertRecPtr` points just past the page header, a position no
/// record ends at, and `XLogFlush` to it would fail ("xlog flush request … is not satisfied"):
/// use the page boundary instead, which is where the last record ended.
pub(super) fn flushable(ptr: pg_sys::XLogRecPtr) -> pg_sys::XLogRecPtr {
    let maxalign = |n: usize| n.next_multiple_of(pg_sys::MAXIMUM_ALIGNOF as usize) as u64;
    let short_phd = maxalign(std::mem::size_of::<pg_sys::XLogPageHeaderData>()); // SizeOfXLogShortPHD
    let long_phd = maxalign(std::mem::size_of::<pg_sys::XLogLongPageHeaderData>()); // SizeOfXLogLongPHD
    let page_off = ptr % pg_sys::XLOG_BLCKSZ as u64;
    // SAFETY: wal_segment_size is set at startup and never changes afterwards.
    let seg_off = ptr % unsafe { pg_sys::wal_segment_size } as u64;
    if page_off == short_phd && seg_off != short_phd || seg_off == long_phd {
        ptr - page_off
    } else {
        ptr
    }
}

/// Makes everything inserted into WAL so far durable, and waits for synchronous standbys if any
/// are configured, as a commit does (`syncrep::wait`).
pub(crate) fn flush_wal_and_wait_for_sync_standbys() {
    flush_wal_and_wait_for_sync_standbys_for("a segment reservation")
}

/// As [`flush_wal_and_wait_for_sync_standbys`]; `what` names what is being confirmed in the
/// message of a cancelled wait.
pub(crate) fn flush_wal_and_wait_for_sync_standbys_for(what: &str) {
    let upto;
    // SAFETY: XLogFlush raises an ERROR on failure.
    unsafe {
        upto = flushable(pg_sys::GetXLogInsertRecPtr());
        pg_sys::XLogFlush(upto);
    }
    crate::syncrep::wait(upto, what, "The values reserved are skipped (a gap); they were not handed out.");
}

/// Reserves `mult` chunks from the tag's sequence and makes the reservation durable. Runs with
/// no LWLock held. Returns the segment, or None if the chunks would overflow bigint; refused as
/// [`reserve_starts`] is.
pub(super) fn reserve(
    seqoid: pg_sys::Oid,
    unit: i64,
    stride: i64,
    mult: i64,
) -> Result<Option<Segment>, Refusal> {
    let starts = reserve_starts(seqoid, stride, mult)?;
    Ok(Segment::from_chunks(&starts, unit, stride))
}

/// Reserves up to `mult` chunks, `stride` apart, from the sequence and makes the reservation
/// durable: the chunks' first values, in the order `nextval` returned them.
///
/// Refused, before any `nextval`, when the sequence is gone (dropped with its tag by a
/// transaction that committed while this waited for the sequence's lock) or when not one more
/// chunk starts at or below the largest bigint: both would otherwise be ERRORs of `nextval`
/// itself ("could not open relation", XX000; "reached maximum value", 2200H), which a backend
/// that reserves ahead, holding its value already, cannot survive without a subtransaction.
/// Only the chunks that start at or below the largest bigint are asked for.
pub(super) fn reserve_starts(seqoid: pg_sys::Oid, stride: i64, mult: i64) -> Result<Vec<i64>, Refusal> {
    // SAFETY: a flag of the current transaction.
    if unsafe { pg_sys::XactReadOnly } {
        raise(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            "cannot reserve a new segment in a read-only transaction",
            Some("segment_next() reserves values durably when its segment runs out, like nextval(); call it in a read-write transaction."),
        );
    }
    // The lock nextval takes, taken first (held to the end of the transaction, as nextval's):
    // once it is granted, a DROP that committed meanwhile is visible (LockRelationOid accepts
    // the invalidations), and none can commit before the nextvals below.
    // SAFETY: a heavyweight lock by OID (a dropped OID can be locked too); released by the
    // transaction's end, or below if the sequence is gone.
    unsafe { pg_sys::LockRelationOid(seqoid, pg_sys::RowExclusiveLock as i32) };
    let Some((last, called)) = tables::sequence_state(seqoid) else {
        // SAFETY: the lock taken above.
        unsafe { pg_sys::UnlockRelationOid(seqoid, pg_sys::RowExclusiveLock as i32) };
        return Err(sequence_gone(seqoid));
    };
    let next = if called { last.checked_add(stride) } else { Some(last) };
    let fit = next.map_or(0, |n| {
        (0..mult).take_while(|&k| k.checked_mul(stride).and_then(|d| n.checked_add(d)).is_some()).count()
    });
    if fit == 0 {
        return Err(past_bigint(seqoid));
    }
    let mut starts = Vec::with_capacity(fit);
    {
        let _su = RunAs::superuser();
        for _ in 0..fit {
            // SAFETY: nextval_oid is a V1 function taking a regclass; DirectFunctionCall1Coll
            // builds its call frame and is itself guarded by pgrx.
            let d = unsafe {
                pg_sys::DirectFunctionCall1Coll(
                    Some(raw_nextval_oid),
                    pg_sys::Oid::INVALID,
                    pg_sys::Datum::from(seqoid),
                )
            };
            starts.push(d.value() as i64);
        }
    }
    // Everything inserted so far: our nextval's record, or the earlier record (possibly another
    // backend's, still unflushed) that covers the values we got.
    flush_wal_and_wait_for_sync_standbys();
    Ok(starts)
}

/// The chunk start the next `nextval` of a slot's sequence returns, or None if it is gone.
pub(super) fn next_chunk(seqoid: pg_sys::Oid, stride: i64) -> Option<i64> {
    let (last, called) = tables::sequence_state(seqoid)?;
    Some(if called { last.saturating_add(stride) } else { last })
}

/// What a tag's backing sequence has reserved, read under the sequence's own lock as nextval
/// sees it: the largest value that may have been handed out, or None if nothing ever was.
/// `last_value` with `is_called` is the whole truth: after `setval(.., false)` (what
/// segment_set leaves) `pg_sequence_last_value()` is NULL although values below were issued.
pub(super) fn persisted_hwm(seqoid: pg_sys::Oid, unit: i64, origin: i64) -> Option<i64> {
    let Some((last, called)) = tables::sequence_state(seqoid) else { missing_sequence(seqoid) };
    if called {
        Some(last.saturating_add(unit - 1))
    } else if last > origin {
        Some(last - 1) // moved by segment_set: anything below may have been handed out
    } else {
        None // never used
    }
}

/// Creates a backing sequence `pg_idgen_seg_<n>` (the first free `n` from `from` on; the name is
/// generated, never derived from the tag) going up by `stride` from `start`, at `next`.
pub(super) fn create_backing_sequence(schema: &str, from: i64, stride: i64, start: i64) -> String {
    let Some(seqname) = free_relation_name(schema, "pg_idgen_seg_", from, 10_000) else {
        raise(
            Code::ERRCODE_DUPLICATE_OBJECT,
            "no free name for the backing sequence of a segment tag",
            Some("Relations named pg_idgen_seg_<n> in the extension's schema that are not backing sequences of tags should be renamed."),
        )
    };
    let ddl = format!(
        "CREATE SEQUENCE {seqname} AS bigint INCREMENT BY {stride} MINVALUE {start} START WITH {start} CACHE 1 NO CYCLE"
    );
    Spi::run(&ddl).unwrap_or_else(|e| {
        raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not create the backing sequence: {e}"), None)
    });
    // The sequence is the durable high-water mark of its tag or slot: a role that may setval it
    // makes values be handed out again after a restart. No privilege for anyone but its owner,
    // whatever default privileges the creating role has (ALTER DEFAULT PRIVILEGES ... ON
    // SEQUENCES, to PUBLIC or to a role).
    let grantees: Option<String> = Spi::get_one_with_args(
        "SELECT pg_catalog.string_agg(DISTINCT CASE WHEN a.grantee OPERATOR(pg_catalog.=) 0::pg_catalog.oid THEN 'PUBLIC' \
                ELSE pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantee)) END, ', ') \
           FROM pg_catalog.pg_class c CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) a \
          WHERE c.oid OPERATOR(pg_catalog.=) $1::pg_catalog.regclass AND a.grantee OPERATOR(pg_catalog.<>) c.relowner",
        &[seqname.as_str().into()],
    )
    .unwrap_or_else(|e| spi_failed("read the backing sequence's privileges", e));
    if let Some(grantees) = grantees {
        Spi::run(&format!("REVOKE ALL ON SEQUENCE {seqname} FROM {grantees} CASCADE"))
            .unwrap_or_else(|e| spi_failed("revoke the backing sequence's default privileges", e));
    }
    seqname
}
