//! The durable bounds of a space, one per bucket of sections (`pg_idgen_core::keyed::bucket_of`):
//! the rows of `pg_idgen_keyed_bounds`, read by index scan and raised *in place*.
//!
//! Why in place. A bound must not be lowered by the ROLLBACK of the transaction that raised it
//! (values above the old bound may already be in other transactions' rows), as `nextval` is not.
//! An UPDATE would be undone; so a raise overwrites the `bound` of the row's existing version
//! under the buffer's exclusive lock and WAL-logs the page change as a generic WAL record
//! (`GenericXLog`, part of PostgreSQL, replayed by crash recovery and by every standby). The
//! caller then flushes the WAL and waits for synchronous standbys before handing out any value
//! above the old bound: the bound survives a crash, an immediate stop, promotion of a synchronous
//! standby; the row is dumped by pg_dump with its current value (an in-place value is what every
//! snapshot reads) and restored by the extension's configuration-table dump.
//!
//! The row's layout: `bound bigint NOT NULL` is the first column of a table with no nullable
//! column, so its 8 bytes are the first of the tuple's data (`t_hoff`, aligned for a bigint);
//! this is checked against the relation's descriptor before every write. A row version that is
//! being updated or deleted (an xmax that is not a lock and did not abort) is not written: a bound
//! written into a version another transaction is replacing could be lost. Only superusers can
//! write the table; the docs say not to update it by hand while the space is in use.

use pg_idgen_core::keyed::BUCKETS;
use pgrx::pg_sys;

use crate::errors::{raise, Code};
use crate::tables;

fn table() -> pg_sys::Oid {
    tables::extension_table(c"pg_idgen_keyed_bounds")
}

/// Calls `f(bucket, bound, tid)` for the rows of `space` (of one bucket if `bucket` is Some),
/// read through the primary key with a fresh snapshot (the statement's in a parallel operation),
/// `rel` open.
unsafe fn scan(
    rel: pg_sys::Relation,
    space: &str,
    bucket: Option<i32>,
    mut f: impl FnMut(i64, i64, pg_sys::ItemPointerData),
) {
    // SAFETY: `rel` is open and locked by the caller; the scan keys and the snapshot live for
    // the scan; rows are only read inside the loop. An ERROR is cleaned up by abort.
    unsafe {
        pg_sys::RelationGetIndexList(rel);
        let index = (*rel).rd_pkindex;
        if index == pg_sys::InvalidOid {
            layout_broken("it has no primary key");
        }
        let mut keys = [std::mem::MaybeUninit::<pg_sys::ScanKeyData>::zeroed().assume_init(); 2];
        let text = pg_sys::cstring_to_text_with_len(space.as_ptr().cast(), space.len() as i32);
        // heap attribute numbers (systable_beginscan maps them to the index's columns)
        pg_sys::ScanKeyInit(
            &mut keys[0],
            2,
            pg_sys::BTEqualStrategyNumber as u16,
            pg_sys::Oid::from(pg_sys::F_TEXTEQ),
            pg_sys::Datum::from(text),
        );
        let nkeys = if let Some(b) = bucket {
            pg_sys::ScanKeyInit(
                &mut keys[1],
                3,
                pg_sys::BTEqualStrategyNumber as u16,
                pg_sys::Oid::from(pg_sys::F_INT4EQ),
                pg_sys::Datum::from(b),
            );
            2
        } else {
            1
        };
        let snap = if pg_sys::IsInParallelMode() {
            pg_sys::GetActiveSnapshot()
        } else {
            pg_sys::GetLatestSnapshot()
        };
        let snapshot = pg_sys::RegisterSnapshot(snap);
        let sc = pg_sys::systable_beginscan(rel, index, true, snapshot, nkeys, keys.as_mut_ptr());
        let desc = (*rel).rd_att;
        loop {
            let tuple = pg_sys::systable_getnext(sc);
            if tuple.is_null() {
                break;
            }
            let mut null = [false; 3];
            let bound = pg_sys::heap_getattr(tuple, 1, desc, &mut null[0]);
            let bk = pg_sys::heap_getattr(tuple, 3, desc, &mut null[2]);
            if !null[0] && !null[2] {
                f(bk.value() as i32 as i64, bound.value() as i64, (*tuple).t_self);
            }
        }
        pg_sys::systable_endscan(sc);
        pg_sys::UnregisterSnapshot(snapshot);
    }
}

fn layout_broken(why: &str) -> ! {
    raise(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("the table pg_idgen_keyed_bounds was altered: {why}"),
        Some("Reinstall the extension's table: dump the database, DROP EXTENSION pg_idgen, CREATE EXTENSION pg_idgen, restore."),
    )
}

/// Checks that the relation's first column is `bound bigint` and no column can be NULL.
unsafe fn check_layout(rel: pg_sys::Relation) {
    // SAFETY: the descriptor of an open relation; pgrx's accessor hides each major's layout.
    unsafe {
        let desc = pgrx::PgTupleDesc::from_pg_unchecked((*rel).rd_att);
        let ok = desc.get(0).is_some_and(|a| {
            !a.attisdropped && a.name() == "bound" && a.atttypid == pg_sys::INT8OID && a.attnotnull
        }) && (0..desc.len()).all(|i| desc.get(i).is_some_and(|a| a.attisdropped || a.attnotnull));
        if !ok {
            layout_broken("its first column must be bound bigint NOT NULL, and no column nullable");
        }
    }
}

/// The durable bounds of `space` by bucket, if all its rows exist (None: none or some missing).
pub(super) fn read_all(space: &str) -> Option<Vec<i64>> {
    let mut out = vec![i64::MIN; BUCKETS];
    let mut n = 0usize;
    // SAFETY: the relation is opened and closed here (an ERROR: closed by abort).
    unsafe {
        let rel = pg_sys::table_open(table(), pg_sys::AccessShareLock as i32);
        scan(rel, space, None, |b, bound, _| {
            if (0..BUCKETS as i64).contains(&b) && out[b as usize] == i64::MIN {
                out[b as usize] = bound;
                n += 1;
            }
        });
        pg_sys::table_close(rel, pg_sys::AccessShareLock as i32);
    }
    (n == BUCKETS).then_some(out)
}

/// The durable bound of one bucket of `space`.
pub(super) fn read_one(space: &str, bucket: usize) -> Option<i64> {
    let mut out = None;
    // SAFETY: as in `read_all`.
    unsafe {
        let rel = pg_sys::table_open(table(), pg_sys::AccessShareLock as i32);
        scan(rel, space, Some(bucket as i32), |_, bound, _| out = Some(bound));
        pg_sys::table_close(rel, pg_sys::AccessShareLock as i32);
    }
    out
}

/// Raises the durable bound of `bucket` of `space` from its current value `old` to `new_of(old)`
/// (`pg_idgen_core::keyed::raised_bound` for values to hand out, `moved_bound` for a move) in
/// place, WAL-logged but not flushed: the caller flushes. Never lowers it. Returns the bound now
/// durable once flushed (already enough if another backend raised it). None if the space has no
/// row for the bucket.
pub(super) fn raise_in_place(space: &str, bucket: usize, new_of: impl FnOnce(i64) -> i64) -> Option<i64> {
    // SAFETY: the relation is opened with RowExclusiveLock (no VACUUM FULL or DDL meanwhile);
    // the buffer is pinned and exclusively locked while its page is read and changed, and the
    // change goes through GenericXLog (which copies the page, WAL-logs the difference and applies
    // it in a critical section); nothing can ERROR between GenericXLogStart and Finish. Offsets
    // are checked against the page before they are followed.
    unsafe {
        let rel = pg_sys::table_open(table(), pg_sys::RowExclusiveLock as i32);
        check_layout(rel);
        let mut tid = None;
        scan(rel, space, Some(bucket as i32), |_, _, t| tid = Some(t));
        let Some(tid) = tid else {
            pg_sys::table_close(rel, pg_sys::RowExclusiveLock as i32);
            return None;
        };
        let blk = ((tid.ip_blkid.bi_hi as u32) << 16) | tid.ip_blkid.bi_lo as u32;
        let off = tid.ip_posid as usize;
        let buf = pg_sys::ReadBuffer(rel, blk);
        crate::majors::lock_buffer_exclusive(buf);
        let tuple_of = |page: pg_sys::Page| -> Option<*mut pg_sys::HeapTupleHeaderData> {
            let hdr = page.cast::<pg_sys::PageHeaderData>();
            let linp_start = std::mem::offset_of!(pg_sys::PageHeaderData, pd_linp);
            let nitems = ((*hdr).pd_lower as usize).saturating_sub(linp_start)
                / std::mem::size_of::<pg_sys::ItemIdData>();
            if off == 0 || off > nitems {
                return None;
            }
            let item = &*(*hdr).pd_linp.as_ptr().add(off - 1);
            if item.lp_flags() != pg_sys::LP_NORMAL {
                return None;
            }
            let lp_off = item.lp_off() as usize;
            if lp_off + item.lp_len() as usize > pg_sys::BLCKSZ as usize {
                return None;
            }
            Some(page.cast::<u8>().add(lp_off).cast::<pg_sys::HeapTupleHeaderData>())
        };
        let page = buffer_page(buf);
        let Some(htup) = tuple_of(page) else {
            pg_sys::UnlockReleaseBuffer(buf);
            pg_sys::table_close(rel, pg_sys::RowExclusiveLock as i32);
            return None;
        };
        let mask = (*htup).t_infomask as u32;
        let xmax = (*htup).t_choice.t_heap.t_xmax;
        let replaced = xmax != pg_sys::InvalidTransactionId
            && mask & pg_sys::HEAP_XMAX_INVALID == 0
            && mask & pg_sys::HEAP_XMAX_LOCK_ONLY == 0
            && (mask & pg_sys::HEAP_XMAX_IS_MULTI != 0 || !pg_sys::TransactionIdDidAbort(xmax));
        let same = (*htup).t_ctid.ip_blkid.bi_hi == tid.ip_blkid.bi_hi
            && (*htup).t_ctid.ip_blkid.bi_lo == tid.ip_blkid.bi_lo
            && (*htup).t_ctid.ip_posid == tid.ip_posid;
        if replaced || !same || mask & pg_sys::HEAP_HASNULL != 0 {
            pg_sys::UnlockReleaseBuffer(buf);
            pg_sys::table_close(rel, pg_sys::RowExclusiveLock as i32);
            raise(
                Code::ERRCODE_OBJECT_IN_USE,
                format!("the bound of keyed space \"{space}\" (bucket {bucket}) is being changed by another transaction"),
                Some("pg_idgen_keyed_bounds must not be updated or deleted by hand while the space is in use; retry when that transaction has ended."),
            );
        }
        let hoff = (*htup).t_hoff as usize;
        let data_off = htup.cast::<u8>().offset_from(page.cast::<u8>()) as usize + hoff;
        let old = std::ptr::read_unaligned(page.cast::<u8>().add(data_off).cast::<i64>());
        let new = new_of(old).max(old);
        if new > old {
            let state = pg_sys::GenericXLogStart(rel);
            let copy = pg_sys::GenericXLogRegisterBuffer(state, buf, 0);
            std::ptr::write_unaligned(copy.cast::<u8>().add(data_off).cast::<i64>(), new);
            pg_sys::GenericXLogFinish(state);
        }
        pg_sys::UnlockReleaseBuffer(buf);
        pg_sys::table_close(rel, pg_sys::RowExclusiveLock as i32);
        Some(new)
    }
}

/// The page of a pinned shared buffer.
unsafe fn buffer_page(buf: pg_sys::Buffer) -> pg_sys::Page {
    // SAFETY: `buf` is a valid pinned buffer of a permanent relation (a shared buffer).
    unsafe { pg_sys::BufferGetBlock(buf) as pg_sys::Page }
}
