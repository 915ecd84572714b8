//! Refill: the layer between `segment_next` and the kinds of tag. It installs what the tag's kind
//! reserved ([`reserve_chunks`] asks it: `plain`, `slotted` or `leased`) in the entry's shared
//! double buffer — one refill in flight per entry, waking the backends that wait for it, adapting
//! the step — or, for a tag created by the current transaction, in this backend's private buffer
//! ([`private_next`]).
//!
//! No refill opens a subtransaction in the caller's transaction (see [`Refusal`]): what the tag's
//! state refuses comes back as a value, and a PostgreSQL ERROR is caught only to mark the refill
//! ended and wake its waiters, then raised again.

use pg_idgen_core::segment::{next_multiple, Buffers, Take};
use pgrx::pg_sys;

use super::chunk::{Kind, Reserved};
use super::claim::release_claim;
use super::config::{read_config, TagConfig};
use super::errors::{no_such_tag, overflow_oid, sequence_gone, Refusal};
use super::leased::{not_serving, reserve_leased};
use super::marks;
use super::owners;
use super::plain::reserve_plain;
use super::slotted::reserve_slotted;
use super::table::{cv_ptr, entry_ptr, Entry, Held, MAX_SLOTS};
use crate::clock::now_unix_ms;
use crate::tables;

/// Asks the tag's kind for `mult` chunks. `seqoid`, `unit` and `stride` are a plain tag's (the
/// shared entry's, or the configuration's for a private buffer); `slot_high` is the shared
/// entry's per-slot high-water mark (None: the kind reads each slot's sequence instead).
///
/// A tag created with `registry_marks => true` (`marks` has the rule): with `read_marks` (the
/// first reservation of an entry, or a private buffer's), the slots' sequences move above the
/// registry's marks first; the chunks reserved are handed out only once the registry raised the
/// slot's mark to their last value. Refused (55000) otherwise: the chunks are a gap.
fn reserve_chunks(
    tag: &str,
    cfg: &TagConfig,
    (seqoid, unit, stride): (pg_sys::Oid, i64, i64),
    mult: i64,
    slot_high: Option<&[i64; MAX_SLOTS]>,
    read_marks: bool,
) -> Result<Reserved, Refusal> {
    // SAFETY: a flag of the current transaction (on a standby every transaction is read-only:
    // marks read there could be older than the primary's last raises; the reservation below
    // refuses anyway).
    if cfg.registry_marks && read_marks && !unsafe { pg_sys::XactReadOnly } {
        marks::lift(tag, cfg)?;
    }
    let r = match Kind::of(cfg) {
        Kind::Plain => reserve_plain(seqoid, unit, stride, mult)?,
        Kind::Slotted => reserve_slotted(tag, cfg, mult, slot_high)?,
        Kind::Registry => reserve_leased(tag, cfg, mult, slot_high)?,
    };
    if cfg.registry_marks && !r.gap {
        if let Some(seg) = &r.seg {
            marks::raise(tag, cfg, r.slot, seg)?;
        }
    }
    Ok(r)
}

/// Runs `f`; if it raises a PostgreSQL ERROR, runs `cleanup` and raises the same ERROR again.
/// The PG_TRY / PG_CATCH / PG_RE_THROW pattern: no subtransaction, nothing survived — the
/// caller's transaction aborts as it would without the catch; `cleanup` only touches shared
/// memory under this file's locks (an ended refill must not leave its entry "refilling" for the
/// other backends).
///
/// Every LWLock this backend still holds is released before `cleanup`: a guard unwound by an
/// ERROR leaves its lock to the abort (`lock::LockGuard`), and `cleanup` taking an entry lock the
/// failed step still held would wait for itself, uninterruptibly, with every waiter of the entry.
fn on_error_rethrow<T>(
    f: impl FnOnce() -> T + std::panic::UnwindSafe,
    cleanup: impl Fn() + std::panic::UnwindSafe + std::panic::RefUnwindSafe,
) -> T {
    pgrx::PgTryBuilder::new(f)
        .catch_others(move |e| {
            // SAFETY: what transaction abort does first (AbortTransaction); the ERROR is raised
            // again right after, so nothing runs on under a lock it no longer holds, and
            // LWLockReleaseAll balances its own interrupt holdoffs.
            unsafe { pg_sys::LWLockReleaseAll() };
            cleanup();
            e.rethrow()
        })
        .execute()
}

/// Refills entry `idx` (generation `gen`). `sync`: both buffers were empty and the caller has no
/// value; otherwise the caller already holds a value and a failed reservation must not cost it
/// that value (it is returned; the entry stops refilling ahead until a synchronous refill).
pub(super) fn refill(idx: usize, gen: u64, sync: bool) {
    let (seqoid, unit, stride, mult, tag, slotted, slot_high, marks_read) = {
        let _g = Held::entry(idx);
        let e = entry_ptr(idx);
        // SAFETY: mutable entry fields are read under the entry lock.
        unsafe {
            if !(*e).in_use || (*e).generation != gen {
                return;
            }
            let tag = String::from_utf8_lossy(&(&(*e).tag)[..(*e).tag_len]).into_owned();
            let slot_high = if (*e).slotted { Some((*e).slot_high) } else { None };
            ((*e).seqoid, (*e).unit, (*e).stride, (*e).mult, tag, (*e).slotted, slot_high, (*e).marks_read)
        }
    };
    // SAFETY: a flag of the current transaction.
    if !sync && unsafe { pg_sys::XactReadOnly } {
        finish_refill(idx, gen, |e| e.refilling = false);
        return; // in a read-only transaction only a caller left with no value reserves (and fails)
    }
    let reserved = on_error_rethrow(
        move || -> Result<_, Refusal> {
            // Every reservation checks the entry against the catalog first: a tag dropped with
            // the extension, or whose sequence was dropped by hand, is not served any further.
            let cfg = read_config(&tag).filter(|cfg| cfg.seqoid == seqoid && cfg.slotted == slotted);
            let Some(cfg) = cfg else {
                release_claim(idx, gen);
                return Err(no_such_tag(&tag));
            };
            if tables::sequence_state(seqoid).is_none() {
                return Err(sequence_gone(seqoid));
            }
            let r =
                reserve_chunks(&tag, &cfg, (seqoid, unit, stride), mult, slot_high.as_ref(), !marks_read)?;
            // SAFETY: a flag of the current transaction.
            let lifted = cfg.registry_marks && !marks_read && !unsafe { pg_sys::XactReadOnly };
            Ok((r.slot, r.seg, r.gap, lifted))
        },
        // an ERROR of PostgreSQL's (a cancel, among others a cancelled wait for synchronous
        // standbys): the statement ends; the entry must not stay "refilling"
        || refill_failed(idx, gen, sync),
    );
    let (slot, seg) = match reserved {
        Ok((_, _, true, lifted)) => {
            // the slot was released while this reserved: a gap; the caller tries again
            finish_refill(idx, gen, |e| {
                e.refilling = false;
                e.marks_read |= lifted;
            });
            return;
        }
        Ok((slot, seg, false, lifted)) => {
            if lifted {
                finish_refill(idx, gen, |e| e.marks_read = true);
            }
            (slot, seg)
        }
        Err(refusal) => {
            refill_failed(idx, gen, sync);
            if sync {
                refusal.raise();
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

/// Ends a refill that reserved nothing: a refill ahead that failed stops the entry refilling
/// ahead until a synchronous refill (which retries and reports).
fn refill_failed(idx: usize, gen: u64, sync: bool) {
    finish_refill(idx, gen, |e| {
        e.refilling = false;
        if !sync {
            e.ahead_failed = true;
        }
    });
}

/// Ends a refill entry `idx` (generation `gen`) was marked for that will not run (its caller
/// fails before it): the entry must not stay "refilling", or no backend would refill it ahead
/// and the next one to find it empty would wait for a reservation nobody makes.
pub(super) fn refill_not_made(idx: usize, gen: u64) {
    finish_refill(idx, gen, |e| e.refilling = false);
}

/// Applies `f` to entry `idx` under its lock if it still has generation `gen` (a drop or set
/// meanwhile makes the reservation a gap), then wakes the backends waiting for this refill.
fn finish_refill(idx: usize, gen: u64, f: impl FnOnce(&mut Entry)) {
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
                if !owners::serving() {
                    not_serving(tag);
                }
                let within = pg_idgen_core::slots::locate(cfg.start, cfg.unit, cfg.slots, value).is_some_and(
                    |(slot, chunk)| {
                        owners::get(tag, slot).is_some_and(|h| h.floor <= chunk && chunk < h.ceiling)
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
        let r = reserve_chunks(tag, cfg, (cfg.seqoid, cfg.unit, cfg.stride), cfg.mult, None, true)
            .unwrap_or_else(|refusal| refusal.raise());
        if r.gap {
            continue;
        }
        let seg = r.seg.unwrap_or_else(|| overflow_oid(cfg.seqoid));
        PRIVATE.with(|p| p.borrow_mut().get_mut(&key).map(|b| b.install(seg)));
    }
}
