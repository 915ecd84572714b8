//! `segment_next(tag)`: the hot path, at the top. A plain V1 function, a per-backend cache of
//! entry indexes, one entry-lock acquire/release per value; waits for a refill in flight on the
//! entry's condition variable. Calls down only: `claim` on a backend's first use of a tag,
//! `refill` when a buffer runs low, `owners`/`leased` for a registry-owned tag's validity.

use pg_idgen_core::segment::Take;
use pgrx::pg_sys;
use pgrx::prelude::*;

use super::claim::{find_or_claim, Found};
use super::config::validate_tag;
use super::leased::not_serving;
use super::owners;
use super::refill::{private_next, refill, refill_not_made};
use super::table::{cv_ptr, entry_ptr, Held, HEADER, MAX_TAG_BYTES};
use crate::clock::monotonic_ms;
use crate::errors::{raise, Code};

pub(super) fn check_not_standby() {
    if unsafe { pg_sys::RecoveryInProgress() } {
        raise(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            "cannot hand out segment values on a standby server",
            Some("segment_next() reserves values durably, which needs a writable primary; call it on the primary, or after promotion."),
        );
    }
}

/// Longest a backend that found both buffers empty waits for another backend's reservation in
/// flight before reserving by itself (that reservation may have died with its backend).
pub(super) const WAIT_FOR_REFILL_MS: i64 = 100;

/// Unguarded C entry points for the hot path. pgrx routes every `pg_sys` call through a
/// `sigsetjmp` boundary (~15 ns each); these three cannot raise an ERROR in the way they are used
/// here (an uncontended or contended acquire of a lock we do not hold, its release, a flag read),
/// so they are called directly. Everything else, including every error, goes through pgrx.
mod raw {
    use pgrx::pg_sys;
    unsafe extern "C" {
        #[link_name = "LWLockAcquire"]
        pub fn lwlock_acquire(lock: *mut pg_sys::LWLock, mode: pg_sys::LWLockMode::Type) -> bool;
        #[link_name = "LWLockRelease"]
        pub fn lwlock_release(lock: *mut pg_sys::LWLock);
        #[link_name = "RecoveryInProgress"]
        pub fn recovery_in_progress() -> bool;
    }
}

/// The tags this backend used last (a few, so that a table with several segment DEFAULTs does not
/// miss on every call): tag bytes, entry index, the entry's generation then. Backends are
/// single-threaded and only `segment_next` touches it.
pub(super) const CACHE_SLOTS: usize = 8;

#[derive(Clone, Copy)]
pub(super) struct Cached {
    len: usize,
    tag: [u8; MAX_TAG_BYTES],
    idx: usize,
    gen: u64,
}

pub(super) static mut CACHE: [Cached; CACHE_SLOTS] =
    [Cached { len: usize::MAX, tag: [0; MAX_TAG_BYTES], idx: usize::MAX, gen: 0 }; CACHE_SLOTS];
pub(super) static mut CACHE_NEXT: usize = 0;

#[inline]
#[allow(clippy::deref_addrof)] // `&raw` keeps clear of references to a `static mut`
pub(super) fn cache_get(tag: &[u8]) -> Option<(usize, u64)> {
    // SAFETY: the backend is single-threaded and only segment_next uses the cache; no reference
    // to it outlives this function.
    let cache = unsafe { &*(&raw const CACHE) };
    cache.iter().find(|c| c.len == tag.len() && c.tag[..c.len] == *tag).map(|c| (c.idx, c.gen))
}

#[allow(clippy::deref_addrof)]
pub(super) fn cache_put(tag: &[u8], idx: usize, gen: u64) {
    // SAFETY: as in `cache_get`.
    let cache = unsafe { &mut *(&raw mut CACHE) };
    let slot = match cache.iter().position(|c| c.len == tag.len() && c.tag[..c.len] == *tag) {
        Some(i) => i,
        None => unsafe {
            let i = CACHE_NEXT % CACHE_SLOTS;
            CACHE_NEXT = CACHE_NEXT.wrapping_add(1);
            i
        },
    };
    let c = &mut cache[slot];
    c.tag[..tag.len()].copy_from_slice(tag);
    c.len = tag.len();
    c.idx = idx;
    c.gen = gen;
}

/// Forgets every cached (tag, entry) pair: called on every relcache invalidation (the catalog
/// callback), which DROP EXTENSION and a restore of the tags send, so that the next call finds
/// its entry again through `claim::find_or_claim`, which checks it against the catalog.
#[allow(clippy::deref_addrof)]
pub fn invalidate() {
    // SAFETY: as in `cache_get`; the callback runs in this backend, between statements or inside
    // a catalog access, never while `segment_next` holds a reference into the cache.
    let cache = unsafe { &mut *(&raw mut CACHE) };
    for c in cache.iter_mut() {
        c.len = usize::MAX;
    }
}

/// The bytes of a text argument without copying; detoasts only when it must (a TOAST pointer
/// or compressed inline data: `VARATT_IS_EXTENDED` less the short-header case).
pub(crate) unsafe fn text_bytes<'a>(d: pg_sys::Datum) -> &'a [u8] {
    use pgrx::varlena::{varatt_is_1b_e, varatt_is_4b_c, varlena_to_byte_slice};
    // SAFETY: `d` is a non-NULL text datum (the function is STRICT); the detoasted copy, if
    // any, lives in the call's memory context, which outlives the returned slice's use.
    unsafe {
        let mut p = d.cast_mut_ptr::<pg_sys::varlena>();
        if varatt_is_1b_e(p) || varatt_is_4b_c(p) {
            p = pg_sys::pg_detoast_datum_packed(p);
        }
        varlena_to_byte_slice(p)
    }
}

crate::fmgr::pg_function_info_v1!(pg_finfo_pg_idgen_segment_next);

/// `segment_next(tag text) RETURNS bigint STRICT`: the next value of `tag`, unique and
/// increasing across all backends of the instance. A plain V1 function (declared in the
/// extension SQL below) so that the steady state is two atomic LWLock operations and a few
/// compares: no pgrx argument conversion, no UTF-8 validation, no catalog access.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn pg_idgen_segment_next(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // SAFETY: `fcinfo` is PostgreSQL's call frame for a STRICT one-argument function: its
    // first argument is a non-NULL text datum.
    unsafe {
        let arg = (*fcinfo).args.as_slice(1)[0].value;
        pg_sys::Datum::from(next_value(text_bytes(arg)))
    }
}

/// Whether entry `idx` (generation `gen`) still has both buffers empty and a refill in flight.
pub(super) fn refill_in_flight(idx: usize, gen: u64) -> bool {
    let _g = Held::entry(idx);
    let e = entry_ptr(idx);
    // SAFETY: mutable entry fields are read under the entry lock.
    unsafe {
        (*e).in_use
            && (*e).generation == gen
            && (*e).refilling
            && (*e).bufs.remaining() == 0
            && (*e).bufs.next.is_empty()
    }
}

pub(super) fn tag_str(tag: &[u8]) -> &str {
    std::str::from_utf8(tag).unwrap_or_else(|_| {
        raise(Code::ERRCODE_CHARACTER_NOT_IN_REPERTOIRE, "segment tag is not valid UTF-8", None)
    })
}

#[inline]
pub(super) fn next_value(tag: &[u8]) -> i64 {
    if unsafe { raw::recovery_in_progress() } {
        check_not_standby();
    }
    // SAFETY: HEADER is set once at startup.
    let h = unsafe { HEADER };
    if h.is_null() {
        crate::errors::not_preloaded();
    }
    let (mut idx, mut gen) = cache_get(tag).unwrap_or((usize::MAX, 0));
    let mut wait_until_ms: Option<i64> = None;
    loop {
        if idx == usize::MAX {
            let t = tag_str(tag);
            validate_tag(t);
            match find_or_claim(t) {
                Found::Shared(i, g) => (idx, gen) = (i, g),
                Found::Uncommitted(cfg) => return private_next(t, &cfg),
            }
            cache_put(tag, idx, gen);
        }
        let mut registry = false;
        // (value, refill now, another backend's refill is in flight)
        // SAFETY: `idx` < capacity; the entry lock is taken before and released after every access to
        // the entry's mutable fields, and nothing between can raise an ERROR (plain arithmetic).
        let taken = unsafe {
            let lock = &raw mut (*(*h).locks.add(idx + 1)).lock;
            raw::lwlock_acquire(lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
            let e = entry_ptr(idx);
            let r = if !(*e).in_use || (*e).generation != gen {
                None
            } else {
                match (*e).bufs.take() {
                    Take::Value { value, .. } => {
                        (*e).issued += 1;
                        let due = !(*e).refilling && !(*e).ahead_failed && (*e).bufs.refill_overdue();
                        if due {
                            (*e).refilling = true;
                        }
                        registry = (*e).registry;
                        Some((Some(value), due))
                    }
                    Take::Empty if (*e).refilling && wait_until_ms.is_none_or(|t| monotonic_ms() < t) => {
                        Some((None, false))
                    }
                    Take::Empty => {
                        (*e).refilling = true;
                        Some((None, true))
                    }
                }
            };
            raw::lwlock_release(lock);
            r
        };
        match taken {
            None => idx = usize::MAX, // stale cache (dropped, re-created, set): look up again
            Some((Some(value), due)) => {
                if registry && !owners::serving() {
                    // a node that lost its lease stops serving its registry-owned slots, cached
                    // values included (the value taken is a gap); the reservation ahead this call
                    // was marked for is not made, and the entry must not say it is in flight
                    if due {
                        refill_not_made(idx, gen);
                    }
                    not_serving(tag_str(tag));
                }
                if due {
                    refill(idx, gen, false);
                }
                return value;
            }
            Some((None, true)) => refill(idx, gen, true),
            Some((None, false)) => {
                // Both buffers empty, a reservation in flight: sleep until it ends (its backend
                // broadcasts the entry's condition variable), for at most WAIT_FOR_REFILL_MS in
                // all; interruptible, and visible in pg_stat_activity as an Extension wait.
                let until = *wait_until_ms.get_or_insert_with(|| monotonic_ms() + WAIT_FOR_REFILL_MS);
                let left = (until - monotonic_ms()).clamp(0, WAIT_FOR_REFILL_MS);
                // SAFETY: the entry's condition variable lives in shared memory for the server's
                // life; the sleep is cancelled right after (also by abort after an ERROR).
                unsafe {
                    pg_sys::ConditionVariablePrepareToSleep(cv_ptr(idx));
                    // Re-checked after preparing, so a broadcast that came meanwhile is not missed.
                    if refill_in_flight(idx, gen) {
                        pg_sys::ConditionVariableTimedSleep(
                            cv_ptr(idx),
                            left.max(1),
                            pg_sys::PG_WAIT_EXTENSION,
                        );
                    }
                    pg_sys::ConditionVariableCancelSleep();
                }
            }
        }
    }
}
