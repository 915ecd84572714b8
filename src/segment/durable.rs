//! Durable reservations: `nextval` on the tag's backing sequence, the WAL flush and the wait for
//! synchronous standbys, and installing the result in the entry's double buffer (refill).

use pg_idgen_core::segment::{next_multiple, Buffers, Segment, Take};

use super::claim::release_claim;
use super::config::{read_config, TagConfig};
use super::errors::{missing_sequence, unknown_tag};
use crate::tables;
use pgrx::pg_sys;

use super::table::{cv_ptr, entry_ptr, Entry, Held};
use crate::catalog::RunAs;
use crate::clock::now_unix_ms;
use crate::errors::{raise, Code};

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
/// no LWLock held. Returns the segment, or None if the chunks would overflow bigint.
pub(super) fn reserve(seqoid: pg_sys::Oid, unit: i64, stride: i64, mult: i64) -> Option<Segment> {
    let starts = reserve_starts(seqoid, mult);
    Segment::from_chunks(&starts, unit, stride)
}

/// Reserves `mult` chunks from the sequence and makes the reservation durable: the chunks'
/// first values, in the order `nextval` returned them.
pub(super) fn reserve_starts(seqoid: pg_sys::Oid, mult: i64) -> Vec<i64> {
    // SAFETY: a flag of the current transaction.
    if unsafe { pg_sys::XactReadOnly } {
        raise(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            "cannot reserve a new segment in a read-only transaction",
            Some("segment_next() reserves values durably when its segment runs out, like nextval(); call it in a read-write transaction."),
        );
    }
    let mut starts = Vec::with_capacity(mult as usize);
    {
        let _su = RunAs::superuser();
        for _ in 0..mult {
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
    starts
}

/// Runs `f` in an internal subtransaction, as a PL/pgSQL exception block does: an ERROR in `f`
/// rolls the subtransaction back (releasing the sequence's buffer lock, its relation and
/// whatever else it held) and is returned, so the caller decides whether to rethrow it.
pub(super) fn in_subtransaction<T>(
    f: impl FnOnce() -> T + std::panic::UnwindSafe,
) -> Result<T, Box<pgrx::pg_sys::panic::CaughtError>> {
    // SAFETY: the standard internal-subtransaction protocol (see plpgsql's exec_stmt_block): save
    // the memory context and resource owner, begin, run, then release or roll back and restore.
    unsafe {
        let cxt = pg_sys::CurrentMemoryContext;
        let owner = pg_sys::CurrentResourceOwner;
        pg_sys::BeginInternalSubTransaction(std::ptr::null());
        pg_sys::MemoryContextSwitchTo(cxt);
        let result = pgrx::PgTryBuilder::new(move || Ok(f())).catch_others(|e| Err(Box::new(e))).execute();
        match result {
            Ok(_) => pg_sys::ReleaseCurrentSubTransaction(),
            Err(_) => {
                pg_sys::MemoryContextSwitchTo(cxt);
                pg_sys::RollbackAndReleaseCurrentSubTransaction();
            }
        }
        pg_sys::MemoryContextSwitchTo(cxt);
        pg_sys::CurrentResourceOwner = owner;
        result
    }
}

/// Refills entry `idx` (generation `gen`). `sync`: both buffers were empty and the caller has no
/// value; otherwise the caller already holds a value and a failed reservation must not cost it
/// that value (it is returned; the entry stops refilling ahead until a synchronous refill).
pub(super) fn refill(idx: usize, gen: u64, sync: bool) {
    let (seqoid, unit, stride, mult, tag, slotted, slot_high) = {
        let _g = Held::entry(idx);
        let e = entry_ptr(idx);
        // SAFETY: mutable entry fields are read under the entry lock.
        unsafe {
            if !(*e).in_use || (*e).generation != gen {
                return;
            }
            let tag = String::from_utf8_lossy(&(&(*e).tag)[..(*e).tag_len]).into_owned();
            let slot_high = if (*e).slotted { Some((*e).slot_high) } else { None };
            ((*e).seqoid, (*e).unit, (*e).stride, (*e).mult, tag, (*e).slotted, slot_high)
        }
    };
    // SAFETY: a flag of the current transaction.
    if !sync && unsafe { pg_sys::XactReadOnly } {
        finish_refill(idx, gen, |e| e.refilling = false);
        return; // in a read-only transaction only a caller left with no value reserves (and fails)
    }
    let reserved = in_subtransaction(move || {
        // Every reservation checks the entry against the catalog first: a tag dropped with the
        // extension, or whose sequence was dropped by hand, is not served any further.
        let cfg = read_config(&tag).filter(|cfg| cfg.seqoid == seqoid && cfg.slotted == slotted);
        let Some(cfg) = cfg else {
            release_claim(idx, gen);
            unknown_tag(&tag);
        };
        if tables::sequence_state(seqoid).is_none() {
            missing_sequence(seqoid);
        }
        if slotted {
            let (slot, seg, released) = super::slots::reserve_slotted(&tag, &cfg, mult, slot_high.as_ref());
            (Some(slot), seg, released)
        } else {
            (None, reserve(seqoid, unit, stride, mult), false)
        }
    });
    let (slot, seg) = match reserved {
        Ok((_, _, true)) => {
            // the slot was released while this reserved: a gap; the caller tries again
            finish_refill(idx, gen, |e| e.refilling = false);
            return;
        }
        Ok((slot, seg, false)) => (slot, seg),
        Err(error) => {
            finish_refill(idx, gen, |e| {
                e.refilling = false;
                if !sync {
                    e.ahead_failed = true;
                }
            });
            // a cancel from PostgreSQL (CHECK_FOR_INTERRUPTS) or from us (a cancelled wait for
            // synchronous standbys, flush_wal_and_wait_for_sync_standbys) ends the statement
            use pgrx::pg_sys::panic::CaughtError;
            let cancelled = matches!(&*error, CaughtError::PostgresError(r) | CaughtError::ErrorReport(r)
                if matches!(r.sql_error_code(), Code::ERRCODE_QUERY_CANCELED | Code::ERRCODE_ADMIN_SHUTDOWN));
            if sync || cancelled {
                error.rethrow();
            }
            return; // the caller's value stands; the next synchronous refill retries and reports
        }
    };
    let now = now_unix_ms();
    let mut overflow = false;
    finish_refill(idx, gen, |e| {
        e.refilling = false;
        let Some(seg) = seg else {
            overflow = true;
            e.ahead_failed = true;
            return;
        };
        let installed = match slot {
            Some(s) if (0..e.slot_high.len() as i64).contains(&s) => {
                let how = e.bufs.install_in_slot(seg, &mut e.slot_high[s as usize]);
                if how != pg_idgen_core::segment::Installed::Discarded {
                    e.slot_refills[s as usize] += 1;
                }
                how
            }
            Some(_) => pg_idgen_core::segment::Installed::Discarded,
            None => e.bufs.install(seg),
        };
        match installed {
            pg_idgen_core::segment::Installed::Discarded => e.discarded += 1,
            _ => {
                e.ahead_failed = false;
                e.refills += 1;
                if sync {
                    e.sync_refills += 1;
                }
                if e.last_refill_ms > 0 {
                    let lasted = now - e.last_refill_ms;
                    e.mult = next_multiple(e.mult, lasted, e.target_ms, e.min_m, e.max_m);
                }
                e.last_refill_ms = now;
            }
        }
    });
    if overflow && sync {
        overflow_oid(seqoid);
    }
}

/// Applies `f` to entry `idx` under its lock if it still has generation `gen` (a drop or set
/// meanwhile makes the reservation a gap), then wakes the backends waiting for this refill.
pub(super) fn finish_refill(idx: usize, gen: u64, f: impl FnOnce(&mut Entry)) {
    {
        let _g = Held::entry(idx);
        let e = entry_ptr(idx);
        // SAFETY: the entry lock is held; `f` does arithmetic only (see the protocol).
        unsafe {
            if (*e).generation == gen {
                f(&mut *e);
            }
        }
    }
    // SAFETY: the condition variable of entry `idx` lives in shared memory for the server's life.
    unsafe { pg_sys::ConditionVariableBroadcast(cv_ptr(idx)) };
}

pub(super) fn overflow_oid(seqoid: pg_sys::Oid) -> ! {
    raise(
        Code::ERRCODE_SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
        format!("segment sequence {} has reached the largest bigint value", u32::from(seqoid)),
        None,
    )
}

thread_local! {
    /// Values of tags created by the current transaction, reserved by this backend alone (no
    /// other backend can see the tag before commit), by tag and backing sequence (a tag dropped
    /// and created again in the same transaction has a new sequence, and must not be served what
    /// the first one reserved). Emptied at the end of the transaction: what is left becomes a
    /// gap, as a restart's cached remainder does.
    static PRIVATE: std::cell::RefCell<std::collections::HashMap<(String, u32), Buffers>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// The next value of a tag created by this transaction (see `claim::Found::Uncommitted`):
/// reserved durably from its sequence like any segment, held in this backend's memory.
pub(super) fn private_next(tag: &str, cfg: &TagConfig) -> i64 {
    loop {
        let key = (tag.to_string(), u32::from(cfg.seqoid));
        let taken = PRIVATE.with(|p| p.borrow_mut().get_mut(&key).map(Buffers::take));
        match taken {
            Some(Take::Value { value, .. }) if !cfg.registry => return value,
            Some(Take::Value { value, .. }) => {
                // A registry-owned slot: only while this node serves it and the value lies within
                // its chunks now (a move meanwhile: what is left here is a gap).
                if !super::owners::serving() {
                    super::leased::not_serving(tag);
                }
                let within = pg_idgen_core::slots::locate(cfg.start, cfg.unit, cfg.slots, value).is_some_and(
                    |(slot, chunk)| {
                        super::owners::get(tag, slot).is_some_and(|h| h.floor <= chunk && chunk < h.ceiling)
                    },
                );
                if within {
                    return value;
                }
                PRIVATE.with(|p| p.borrow_mut().insert(key.clone(), Buffers::default()));
            }
            Some(Take::Empty) => {}
            None => {
                let first = PRIVATE.with(|p| {
                    let mut p = p.borrow_mut();
                    let first = p.is_empty();
                    p.insert(key.clone(), Buffers::default());
                    first
                });
                if first {
                    for event in [pgrx::PgXactCallbackEvent::Commit, pgrx::PgXactCallbackEvent::Abort] {
                        pgrx::register_xact_callback(event, || {
                            let _ = PRIVATE.try_with(|p| p.borrow_mut().clear());
                        });
                    }
                }
            }
        }
        let seg = if cfg.slotted {
            match super::slots::reserve_slotted(tag, cfg, cfg.mult, None) {
                (_, _, true) => continue,
                (_, seg, false) => seg,
            }
        } else {
            reserve(cfg.seqoid, cfg.unit, cfg.stride, cfg.mult)
        }
        .unwrap_or_else(|| overflow_oid(cfg.seqoid));
        PRIVATE.with(|p| p.borrow_mut().get_mut(&key).map(|b| b.install(seg)));
    }
}
