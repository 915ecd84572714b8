//! The shared table of segment entries, one per (database, tag) in use, and its locks.
//!
//! Locking protocol (read this before touching anything in `segment`):
//!
//! * One named LWLock tranche "pg_idgen segments" with `max_segments + 1` locks: lock 0 (the
//!   *table lock*) guards claiming and releasing entries; lock `i + 1` (the *entry lock*) guards
//!   everything mutable in entry `i`: the double buffer, the current step, `refilling` and the
//!   statistics are read and written only with the entry lock held. The identity of an entry
//!   (`in_use`, `generation`, `dbid`, the tag, the configuration) is written only with *both*
//!   the table lock (exclusive) and the entry lock held, so it may be read holding either (a
//!   backend's first use of a tag scans the table under the table lock in shared mode). The
//!   table lock is always taken *before* an entry lock, never the other way round.
//! * Nothing but arithmetic happens under an entry lock: no SPI, no catalog access, no I/O, no
//!   palloc, no ERROR. Reservations (nextval, WAL flush) run with no LWLock held; the result is
//!   then installed under the entry lock (`Buffers::install` only accepts a segment entirely above
//!   everything installed before, so concurrent reservations can never make values go back).
//! * A backend caches (tag -> entry index, generation). `generation` changes whenever an entry is
//!   released or claimed, so a stale index (drop + create, set) is detected under the entry lock.
//! * When no entry is free, a claim frees the entries of dropped databases and of this database's
//!   dropped tags, then evicts one in use (`claim::claim_evicting`): a clock sweep under the table
//!   lock, taking each entry lock in turn, that passes over an entry whose `issued` moved since
//!   the hand last passed it (`swept_issued`); a database holding a quarter of the entries or
//!   more evicts one of its own. An eviction is a release (as `segment_drop` or `segment_set`
//!   make): the entry's cached values are skipped (a gap), the tag's next use claims it again.
//! * `refilling` (under the entry lock) elects one backend for the asynchronous refill; it is only
//!   a hint: a backend that finds both buffers empty reserves synchronously regardless, so a
//!   refiller that died cannot stall the tag.

use std::ffi::CStr;

use pg_idgen_core::segment::Buffers;
use pgrx::pg_sys;

use crate::lock::LockGuard;

pub(super) const SHMEM_NAME: &CStr = c"pg_idgen segment table";
pub(super) const TRANCHE_NAME: &CStr = c"pg_idgen segments";
/// Longest tag, in bytes (an identifier's length, NAMEDATALEN - 1).
pub const MAX_TAG_BYTES: usize = 63;
/// Largest step (values per segment).
pub const MAX_STEP: i32 = 100_000_000;
/// Largest `nodes`.
pub const MAX_NODES: i32 = 1024;
/// Largest number of stride slots of a tag created with `slots =>`.
pub const MAX_SLOTS: usize = 256;
/// Largest `max_step / min_step`: a reservation calls nextval once per unit.
pub const MAX_MULTIPLE: i64 = 1024;

#[repr(C, align(64))]
pub(super) struct Entry {
    pub(super) in_use: bool,
    pub(super) generation: u64,
    pub(super) dbid: pg_sys::Oid,
    pub(super) tag_len: usize,
    pub(super) tag: [u8; MAX_TAG_BYTES],
    pub(super) seqoid: pg_sys::Oid,
    pub(super) unit: i64,
    pub(super) stride: i64,
    /// Current step = mult * unit; mult within [min_m, max_m]; target_ms 0 = fixed step.
    pub(super) mult: i64,
    pub(super) min_m: i64,
    pub(super) max_m: i64,
    pub(super) target_ms: i64,
    pub(super) bufs: Buffers,
    /// A slotted tag (`slots =>`): its first value and number of slots; per slot, the largest
    /// value installed since the entry was claimed (`i64::MIN`: none) and the reservations.
    pub(super) slotted: bool,
    pub(super) start: i64,
    pub(super) slots: i64,
    pub(super) slot_high: [i64; MAX_SLOTS],
    pub(super) slot_refills: [i64; MAX_SLOTS],
    /// Slots owned through the lease registry: every value handed out checks the node's
    /// validity (`owners::serving`).
    pub(super) registry: bool,
    /// Created with `registry_marks => true`: whether a reservation of this entry read the
    /// registry's marks and moved the slots' sequences above them (`marks::lift`; false from
    /// the claim on: the first reservation after a start, a promotion or an eviction reads them).
    pub(super) marks_read: bool,
    /// A backend is reserving the next segment ahead of need (elected under the entry lock).
    pub(super) refilling: bool,
    /// The last reservation made ahead of need failed: serve what is left and reserve again
    /// only when both buffers are empty (that reservation reports the error).
    pub(super) ahead_failed: bool,
    pub(super) issued: i64,
    pub(super) refills: i64,
    pub(super) sync_refills: i64,
    pub(super) discarded: i64,
    pub(super) last_refill_ms: i64,
    /// `issued` when the eviction sweep last passed this entry (-1: claimed since).
    pub(super) swept_issued: i64,
}

#[repr(C)]
pub(super) struct Header {
    pub(super) locks: *mut pg_sys::LWLockPadded,
    pub(super) capacity: usize,
    /// Last generation handed out (under the table lock).
    pub(super) next_gen: u64,
    /// The eviction sweep's clock hand; entries in use evicted since start, and when that was
    /// last logged (timestamptz microseconds) and at which count. Under the table lock.
    pub(super) hand: usize,
    pub(super) evictions: u64,
    pub(super) evictions_logged: u64,
    pub(super) last_eviction_log: i64,
}

pub(super) static mut HEADER: *mut Header = std::ptr::null_mut();
pub(super) static mut ENTRIES: *mut Entry = std::ptr::null_mut();
/// One condition variable per entry, outside `Entry` because an entry is rewritten whole when it
/// is claimed while a backend may still sleep on its variable: backends whose caller found both
/// buffers empty sleep on it until the refill in flight ends.
pub(super) static mut CVS: *mut pg_sys::ConditionVariable = std::ptr::null_mut();

pub(super) fn capacity_setting() -> usize {
    crate::gucs::MAX_SEGMENTS.get().max(1) as usize
}

pub(super) fn entries_offset() -> usize {
    std::mem::size_of::<Header>().next_multiple_of(64)
}

pub(super) fn cvs_offset() -> usize {
    (entries_offset() + capacity_setting() * std::mem::size_of::<Entry>()).next_multiple_of(64)
}

pub(super) fn shmem_size() -> usize {
    cvs_offset() + capacity_setting() * std::mem::size_of::<pg_sys::ConditionVariable>() + 64
}

/// From the shared-memory request hook: space for the table and its lock tranche.
pub unsafe fn request_shmem() {
    // SAFETY: called from the shmem request hook in the postmaster, as PostgreSQL requires.
    unsafe {
        pg_sys::RequestAddinShmemSpace(shmem_size());
        pg_sys::RequestNamedLWLockTranche(TRANCHE_NAME.as_ptr(), (capacity_setting() + 1) as i32);
    }
}

/// From the shared-memory startup hook, with AddinShmemInitLock held: create or attach the table.
pub unsafe fn attach_shmem() {
    // SAFETY: called from the shmem startup hook with AddinShmemInitLock held; the table is
    // created once (zeroed = all entries free) and its locks and condition variables set up.
    unsafe {
        let mut found = false;
        let base = pg_sys::ShmemInitStruct(SHMEM_NAME.as_ptr(), shmem_size(), &mut found).cast::<u8>();
        let header = base.cast::<Header>();
        if !found {
            // Zeroed memory is a valid table of free entries.
            std::ptr::write_bytes(base, 0, shmem_size());
            (*header).locks = pg_sys::GetNamedLWLockTranche(TRANCHE_NAME.as_ptr());
            (*header).capacity = capacity_setting();
            let cvs = base.add(cvs_offset()).cast::<pg_sys::ConditionVariable>();
            for i in 0..capacity_setting() {
                pg_sys::ConditionVariableInit(cvs.add(i));
            }
        }
        HEADER = header;
        ENTRIES = base.add(entries_offset()).cast::<Entry>();
        CVS = base.add(cvs_offset()).cast::<pg_sys::ConditionVariable>();
    }
}

pub(super) fn header() -> *mut Header {
    // SAFETY: HEADER is set once at startup and never changes; null means not preloaded.
    let h = unsafe { HEADER };
    if h.is_null() {
        crate::errors::not_preloaded();
    }
    h
}

pub(super) fn entry_ptr(idx: usize) -> *mut Entry {
    // SAFETY: `idx` < capacity at every call site; ENTRIES is set before any backend runs.
    unsafe { ENTRIES.add(idx) }
}

pub(super) fn cv_ptr(idx: usize) -> *mut pg_sys::ConditionVariable {
    // SAFETY: as for `entry_ptr`.
    unsafe { CVS.add(idx) }
}

/// The segment table's locks: lock 0 guards the table, lock `i + 1` entry `i`.
pub(super) struct Held;

impl Held {
    pub(super) fn table() -> LockGuard {
        Held::lock_mode(0, pg_sys::LWLockMode::LW_EXCLUSIVE)
    }
    pub(super) fn entry(idx: usize) -> LockGuard {
        Held::lock_mode(idx + 1, pg_sys::LWLockMode::LW_EXCLUSIVE)
    }
    pub(super) fn table_shared() -> LockGuard {
        Held::lock_mode(0, pg_sys::LWLockMode::LW_SHARED)
    }
    pub(super) fn lock_mode(i: usize, mode: pg_sys::LWLockMode::Type) -> LockGuard {
        // SAFETY: `i` <= capacity; the tranche has capacity + 1 locks (see request_shmem).
        LockGuard::acquire(unsafe { &raw mut (*(*header()).locks.add(i)).lock }, mode)
    }
}

pub(super) fn my_db() -> pg_sys::Oid {
    unsafe { pg_sys::MyDatabaseId }
}
