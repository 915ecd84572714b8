//! The shared memory of keyed sequences: the spaces in use and the cache of keys' current values
//! and sections' floors, with its locks.
//!
//! Locking protocol (read this before touching anything in `keyed`):
//!
//! * One named LWLock tranche "pg_idgen keyed" with `1 + PARTITIONS` locks. Lock 0 (the *spaces
//!   lock*) guards claiming and releasing space entries: a space's identity (`in_use`, `dbid`,
//!   the name, `seqoid`, `step`, `section_size`, `stride`, `registry`) is written only under it, exclusively; `gen` is
//!   an atomic written only under it too, so the hot path reads it without the lock to detect a
//!   released or re-claimed space. Lock `1 + p` (a *partition lock*) guards every cache slot of
//!   partition `p` and the partition's tick.
//! * The spaces table is a cache too: when no entry is free, a claim first frees the entries of
//!   dropped databases and of this database's dropped spaces (checked with no LWLock held), then
//!   evicts one (a clock sweep over `referenced`, a relaxed atomic every use sets; a database
//!   holding `FAIR_SHARE` entries or more evicts one of its own). Releasing an entry is always
//!   safe: whoever claims the space again reads its floor from the backing sequence, which is at
//!   least every bound of every earlier generation (seqsvr's restart rule, for that space alone).
//!   A backend of the old generation may still be raising its bound: the raise stores the new
//!   bound under the spaces lock, only if the generation is unchanged, so it never lands on an
//!   entry claimed since by another space.
//! * A key and its section live in the same partition (the partition is chosen from the
//!   section), so one partition lock covers loading a key from its section's floor and raising
//!   that floor when the key is evicted.
//! * A space's durable `bounds` and its `floors`, one of each per bucket of sections
//!   (`pg_idgen_core::keyed::bucket_of`), are atomics that only ever go up (`fetch_max`) while
//!   the entry's generation lasts: a bucket's bound is raised only after its raise is durable
//!   (written in place, WAL flushed, synchronous standbys confirmed: `bounds`), under the spaces
//!   lock with the generation checked; a bucket's floor is raised under a partition lock when a
//!   section of that bucket, or a key of it whose section is not cached, is evicted. A claim
//!   writes both arrays (the durable bounds read from the table) under the spaces lock, after
//!   publishing the new generation.
//! * Nothing but arithmetic and atomics happens under any of these locks: no SPI, no catalog
//!   access, no I/O, no palloc, no ERROR. Reading the catalog and the backing sequence, and
//!   raising a bound (the in-place write, WAL flush, the wait for standbys), run with no LWLock
//!   held; raises of one bucket are serialised by the exclusive lock of the row's buffer, and
//!   raises exclude claims of the space by a heavyweight lock of the space that no SQL command
//!   can take (`space::lock_space`: `space::raise_bound`, `space::resolve_slow`), never by an
//!   LWLock.
//! * Locks are never nested: the spaces lock and a partition lock are not held together, nor two
//!   partition locks.

use std::ffi::CStr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

use pgrx::pg_sys;

use crate::lock::LockGuard;
pub(super) use pg_idgen_core::keyed::BUCKETS;

pub(super) const SHMEM_NAME: &CStr = c"pg_idgen keyed cache";
pub(super) const TRANCHE_NAME: &CStr = c"pg_idgen keyed";
/// Longest space name, in bytes.
pub const MAX_NAME_BYTES: usize = 63;
/// Entries of the spaces table: spaces in memory at once in the instance (all databases); more
/// spaces in use than this evict each other (see the protocol).
pub const MAX_SPACES: usize = 128;
/// On a full table, a database holding this many entries or more evicts one of its own spaces,
/// not another database's.
pub const FAIR_SHARE: usize = MAX_SPACES / 4;
/// Lock partitions of the cache.
pub const PARTITIONS: usize = 128;
/// Ways per cache set: a new entry evicts the least recently used of its set's ways.
pub const WAYS: usize = 8;

pub(super) const KIND_FREE: u8 = 0;
pub(super) const KIND_KEY: u8 = 1;
pub(super) const KIND_SECTION: u8 = 2;

#[repr(C)]
pub(super) struct Space {
    pub(super) in_use: bool,
    pub(super) dbid: pg_sys::Oid,
    pub(super) name_len: usize,
    pub(super) name: [u8; MAX_NAME_BYTES],
    pub(super) seqoid: pg_sys::Oid,
    pub(super) step: i64,
    pub(super) section_size: i64,
    /// Plain mode, or fleet mode's nodes and this node's index (see `pg_idgen_core::keyed::Stride`).
    pub(super) stride: pg_idgen_core::keyed::Stride,
    /// Created with `registry => true`: bounds raised through the registry's marks (`marks`).
    pub(super) registry: bool,
    /// Changes whenever the entry is claimed or released (0: never claimed).
    pub(super) gen: AtomicU64,
    /// Per bucket of sections: every value handed out for a key of the bucket is at most its
    /// bound, which is durable.
    pub(super) bounds: [AtomicI64; BUCKETS],
    /// Per bucket: a key of the bucket whose section is not cached continues from here.
    pub(super) floors: [AtomicI64; BUCKETS],
    /// Statistics: bound raises (in-place writes) since the entry was claimed.
    pub(super) raises: AtomicI64,
    /// Used since the clock hand last passed (set by every use, cleared by the sweep).
    pub(super) referenced: AtomicBool,
}

/// One cache slot: a key's current value or a section's floor.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct Slot {
    pub(super) kind: u8,
    pub(super) space: u32,
    pub(super) gen: u64,
    /// The key, or the section.
    pub(super) id: i64,
    /// A key's section (a section slot: its own number).
    pub(super) sec: i64,
    /// A key's current value (the last handed out), or a section's floor.
    pub(super) val: i64,
    pub(super) tick: u64,
}

#[repr(C)]
pub(super) struct Header {
    pub(super) locks: *mut pg_sys::LWLockPadded,
    pub(super) sets: usize,
    /// Last generation handed out (under the spaces lock).
    pub(super) next_gen: u64,
    /// The clock hand of the eviction sweep (under the spaces lock).
    pub(super) hand: usize,
    /// Entries of live spaces evicted since start, and when that was last logged (timestamptz
    /// microseconds); under the spaces lock.
    pub(super) evictions: u64,
    pub(super) evictions_logged: u64,
    pub(super) last_eviction_log: i64,
}

pub(super) static mut HEADER: *mut Header = std::ptr::null_mut();
pub(super) static mut SPACES: *mut Space = std::ptr::null_mut();
pub(super) static mut SLOTS: *mut Slot = std::ptr::null_mut();
/// Per partition, a use counter (under the partition lock), 64 bytes apart.
pub(super) static mut TICKS: *mut [u64; 8] = std::ptr::null_mut();

/// Sets per partition for the configured cache size (at least one set of WAYS slots).
pub(super) fn sets_setting() -> usize {
    let size = crate::gucs::KEYED_CACHE_SIZE.get().max(1) as usize;
    (size / (PARTITIONS * WAYS)).max(1)
}

fn spaces_offset() -> usize {
    std::mem::size_of::<Header>().next_multiple_of(64)
}
fn ticks_offset() -> usize {
    (spaces_offset() + MAX_SPACES * std::mem::size_of::<Space>()).next_multiple_of(64)
}
fn slots_offset() -> usize {
    ticks_offset() + PARTITIONS * 64
}
fn shmem_size() -> usize {
    slots_offset() + PARTITIONS * sets_setting() * WAYS * std::mem::size_of::<Slot>() + 64
}

/// From the shared-memory request hook: space for the cache and its lock tranche.
pub unsafe fn request_shmem() {
    // SAFETY: called from the shmem request hook in the postmaster, as PostgreSQL requires.
    unsafe {
        pg_sys::RequestAddinShmemSpace(shmem_size());
        pg_sys::RequestNamedLWLockTranche(TRANCHE_NAME.as_ptr(), (1 + PARTITIONS) as i32);
    }
}

/// From the shared-memory startup hook, with AddinShmemInitLock held: create or attach.
pub unsafe fn attach_shmem() {
    // SAFETY: called from the shmem startup hook with AddinShmemInitLock held; created once,
    // zeroed (all spaces and slots free: KIND_FREE is 0, atomics of zero bytes are 0).
    unsafe {
        let mut found = false;
        let base = pg_sys::ShmemInitStruct(SHMEM_NAME.as_ptr(), shmem_size(), &mut found).cast::<u8>();
        let header = base.cast::<Header>();
        if !found {
            std::ptr::write_bytes(base, 0, shmem_size());
            (*header).locks = pg_sys::GetNamedLWLockTranche(TRANCHE_NAME.as_ptr());
            (*header).sets = sets_setting();
        }
        HEADER = header;
        SPACES = base.add(spaces_offset()).cast::<Space>();
        TICKS = base.add(ticks_offset()).cast::<[u64; 8]>();
        SLOTS = base.add(slots_offset()).cast::<Slot>();
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

pub(super) fn space(idx: usize) -> &'static Space {
    // SAFETY: idx < MAX_SPACES at every call site; SPACES is set before any backend runs. The
    // non-atomic fields are only read under the spaces lock or, for an entry whose generation
    // the caller checked, as a copy taken under it (see `space::Resolved`).
    unsafe { &*SPACES.add(idx) }
}

pub(super) fn space_mut(idx: usize) -> *mut Space {
    // SAFETY: as in `space`; written only under the spaces lock.
    unsafe { SPACES.add(idx) }
}

/// The slots of set `set` of partition `part` (to be used under that partition's lock).
pub(super) fn set_slots(part: usize, set: usize) -> &'static mut [Slot] {
    // SAFETY: part < PARTITIONS, set < sets (callers take them modulo); the caller holds the
    // partition lock, so no other backend touches these slots while the slice is used, and the
    // slice is dropped before the lock is released.
    unsafe {
        let sets = (*HEADER).sets;
        std::slice::from_raw_parts_mut(SLOTS.add((part * sets + set) * WAYS), WAYS)
    }
}

pub(super) fn sets() -> usize {
    // SAFETY: set once at startup.
    unsafe { (*header()).sets }
}

/// The next tick of partition `part` (under its lock).
pub(super) fn tick(part: usize) -> u64 {
    // SAFETY: part < PARTITIONS; the caller holds the partition lock.
    unsafe {
        let t = &mut (*TICKS.add(part))[0];
        *t += 1;
        *t
    }
}

/// Whether a slot's space is still the one it was filled for.
pub(super) fn slot_live(s: &Slot) -> bool {
    s.kind != KIND_FREE
        && (s.space as usize) < MAX_SPACES
        && space(s.space as usize).gen.load(Ordering::Acquire) == s.gen
}

pub(super) struct Held;

impl Held {
    pub(super) fn spaces() -> LockGuard {
        // SAFETY: lock 0 of the tranche (1 + PARTITIONS locks).
        LockGuard::acquire(unsafe { &raw mut (*(*header()).locks).lock }, pg_sys::LWLockMode::LW_EXCLUSIVE)
    }
    pub(super) fn partition(part: usize) -> LockGuard {
        // SAFETY: part < PARTITIONS: lock 1 + part of the tranche.
        LockGuard::acquire(
            unsafe { &raw mut (*(*header()).locks.add(1 + part % PARTITIONS)).lock },
            pg_sys::LWLockMode::LW_EXCLUSIVE,
        )
    }
}

pub(super) fn my_db() -> pg_sys::Oid {
    // SAFETY: set at backend start.
    unsafe { pg_sys::MyDatabaseId }
}

/// HEADER, or null when the library was not preloaded (no shared memory).
pub(super) fn header_or_null() -> *mut Header {
    // SAFETY: set once at startup.
    unsafe { HEADER }
}
