//! The slots this node holds through the lease registry (tags created with `registry => true`),
//! in shared memory: per (tag, slot) the chunks it may hand out, `[floor, ceiling)` in chunks of
//! the slot, as the lease worker last read them back from the registry after commit
//! (`pg_idgen_core::slot_registry` has the safety argument; `lease::slots` is the worker's side,
//! `segment::leased` the backends').
//!
//! Locking protocol (read this before touching anything below):
//!
//! * One LWLock (tranche `pg_idgen slot owners`) guards every entry's fields but `want`, and
//!   `next_epoch`. The lease worker takes it exclusively to publish (add, raise, drop entries);
//!   a backend takes it shared to read its tag's entries, and exclusively only to bind an
//!   entry to its database (`dbid`, first use) — nothing else is done while it is held: no
//!   SPI, no I/O, no ERROR, no other LWLock. The segment table's locks (`table`) are taken only
//!   after it was released (the worker drops a tag's cached values after unpublishing).
//! * `want` (per entry) is an atomic a backend raises (`fetch_max`, under the shared lock) to
//!   the chunk it needs; the worker reads it. `demand` and `worker_latch` are atomics: a backend
//!   sets `demand` and the worker's latch; the worker swaps `demand` back.
//! * `valid_until` (CLOCK_BOOTTIME ms) is the node's validity for serving any registry-owned
//!   slot: the worker stores the lease validity of the round whose registry reads it published,
//!   and 0 when it loses the lease. Every value of a registry-owned tag (`hot`) and every
//!   reservation (`leased`) checks it: an atomic load, no lock.
//! * An entry's `epoch` changes whenever it is (re)taken: a reservation made under one epoch is
//!   handed out only if the epoch is unchanged afterwards.
//! * `cv` is broadcast by the worker after each publication; backends waiting for a ceiling
//!   sleep on it (bounded).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicPtr, AtomicU64, Ordering};

use pgrx::pg_sys;

use super::table::MAX_TAG_BYTES;
use crate::clock::boottime_ms;
use crate::lock::LockGuard;

const SHMEM_NAME: &std::ffi::CStr = c"pg_idgen slot owners";
const TRANCHE_NAME: &std::ffi::CStr = c"pg_idgen slot owners";
/// Most (tag, slot) pairs a node can hold through the registry.
pub const MAX_HELD: usize = 1024;

#[repr(C)]
struct Owned {
    in_use: bool,
    tag_len: usize,
    tag: [u8; MAX_TAG_BYTES],
    slot: i32,
    slots: i32,
    /// The chunk this node continues at: the registry's floor, or higher after a rebind.
    floor: i64,
    /// The registry's floor as last published (a change is a new take: a new epoch).
    reg_floor: i64,
    ceiling: i64,
    epoch: u64,
    /// The database whose backends serve it (InvalidOid: none yet).
    dbid: pg_sys::Oid,
    want: AtomicI64,
}

#[repr(C)]
struct Header {
    lock: *mut pg_sys::LWLock,
    valid_until: AtomicU64,
    worker_latch: AtomicPtr<pg_sys::Latch>,
    demand: AtomicBool,
    next_epoch: u64,
    cv: pg_sys::ConditionVariable,
    entries: [Owned; MAX_HELD],
}

static mut SHARED: *mut Header = std::ptr::null_mut();

/// From the shared-memory request hook.
pub unsafe fn request_shmem() {
    // SAFETY: called from the request hook in the postmaster.
    unsafe { crate::shmem_struct::request::<Header>(TRANCHE_NAME) }
}

/// From the startup hook, with AddinShmemInitLock held.
pub unsafe fn attach_shmem() {
    // SAFETY: zeroed memory is a valid `Header` (no entry, not valid, no latch) except for the
    // lock and the condition variable set here; called under AddinShmemInitLock (the caller's
    // contract).
    unsafe {
        let (p, _) = crate::shmem_struct::attach::<Header>(SHMEM_NAME, TRANCHE_NAME, |p, lock| {
            (*p).lock = lock;
            pg_sys::ConditionVariableInit(&raw mut (*p).cv);
        });
        SHARED = p;
    }
}

fn header() -> Option<*mut Header> {
    // SAFETY: SHARED is set once at startup and never changes; null means not preloaded.
    let p = unsafe { SHARED };
    (!p.is_null()).then_some(p)
}

fn lock(h: *mut Header, mode: pg_sys::LWLockMode::Type) -> LockGuard {
    // SAFETY: the lock lives in shared memory for the server's life.
    LockGuard::acquire(unsafe { (*h).lock }, mode)
}

fn tag_of(e: &Owned) -> &[u8] {
    &e.tag[..e.tag_len.min(MAX_TAG_BYTES)]
}

/// Whether this node may serve registry-owned slots now (hot path: an atomic load).
#[inline]
pub(crate) fn serving() -> bool {
    let Some(h) = header() else { return false };
    // SAFETY: an atomic in shared memory.
    let until = unsafe { (*h).valid_until.load(Ordering::Acquire) };
    (boottime_ms() as u64) < until
}

/// A slot as a backend sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HeldSlot {
    pub slot: i64,
    pub slots: i64,
    pub floor: i64,
    pub ceiling: i64,
    pub epoch: u64,
}

/// Why a backend cannot serve a slot of a tag.
pub(crate) enum NotHeld {
    /// Another database of this node serves this tag's slot.
    OtherDatabase(pg_sys::Oid),
    /// `pg_idgen.registry_database` names another database.
    NotTheRegistryDatabase(String),
}

/// Whether this backend's database is the one `pg_idgen.registry_database` names: Some(Ok) if it
/// is, Some(Err(the name)) if another, None when the setting is empty (then the first database
/// to use a slot after a start binds it).
/// A catalog lookup: never called with the slots' lock held.
fn registry_database_is_this() -> Option<Result<(), String>> {
    let want = crate::gucs::REGISTRY_DATABASE.get()?;
    let want = want.to_string_lossy().into_owned();
    if want.is_empty() {
        return None;
    }
    // SAFETY: MyDatabaseId is this backend's database; get_database_name returns a palloc'd copy
    // of its name (or NULL if it no longer exists), read here at once.
    let here = unsafe {
        let p = pg_sys::get_database_name(pg_sys::MyDatabaseId);
        (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned())
    };
    Some(if here.as_deref() == Some(want.as_str()) { Ok(()) } else { Err(want) })
}

/// The slots of `tag` this node holds, bound to this database (binds the unbound ones). A slot
/// bound to a database that no longer exists (dropped, then restored under another OID) is
/// bound again, and continues at its ceiling (its floor is raised to it): whatever the old
/// database handed out lies below.
///
/// With `pg_idgen.registry_database` set, only that database serves the node's slots: any other
/// gets NotTheRegistryDatabase, and that database takes a slot bound to another one as if that
/// one were gone (so a superuser's setting wins at the next reload, whoever used the slots first).
pub(crate) fn held(tag: &str) -> Result<Vec<HeldSlot>, NotHeld> {
    let Some(h) = header() else { return Ok(Vec::new()) };
    let configured = match registry_database_is_this() {
        Some(Err(name)) => return Err(NotHeld::NotTheRegistryDatabase(name)),
        Some(Ok(())) => true,
        None => false,
    };
    // SAFETY: MyDatabaseId is this backend's database.
    let db = unsafe { pg_sys::MyDatabaseId };
    let mut rebind = Vec::new();
    {
        let _g = lock(h, pg_sys::LWLockMode::LW_SHARED);
        // SAFETY: entries are read under the lock (shared).
        let entries = unsafe { &(*h).entries };
        for e in entries.iter().filter(|e| e.in_use && tag_of(e) == tag.as_bytes()) {
            if e.dbid != db {
                rebind.push(e.dbid);
            }
        }
    }
    for other in rebind.iter().copied().filter(|&o| o != pg_sys::InvalidOid) {
        if !configured && database_exists(other) {
            return Err(NotHeld::OtherDatabase(other));
        }
    }
    let exclusive = !rebind.is_empty();
    let _g =
        lock(h, if exclusive { pg_sys::LWLockMode::LW_EXCLUSIVE } else { pg_sys::LWLockMode::LW_SHARED });
    let mut out = Vec::new();
    // SAFETY: entries are read under the lock; written only with it held exclusively (binding).
    unsafe {
        let hp = &mut *h;
        for e in hp.entries.iter_mut().filter(|e| e.in_use && tag_of(e) == tag.as_bytes()) {
            if e.dbid != db {
                if !exclusive {
                    continue; // published since the first look: bound at the next call
                }
                if e.dbid != pg_sys::InvalidOid {
                    if rebind.contains(&e.dbid) {
                        // checked above: that database is gone, or not the configured one
                        e.floor = e.ceiling;
                        hp.next_epoch += 1;
                        e.epoch = hp.next_epoch;
                    } else {
                        continue; // bound meanwhile to another database: not ours
                    }
                }
                e.dbid = db;
            }
            out.push(HeldSlot {
                slot: e.slot as i64,
                slots: e.slots as i64,
                floor: e.floor,
                ceiling: e.ceiling,
                epoch: e.epoch,
            });
        }
    }
    out.sort_by_key(|s| s.slot);
    Ok(out)
}

fn database_exists(db: pg_sys::Oid) -> bool {
    // SAFETY: a syscache lookup on the shared catalog pg_database, by OID.
    unsafe { crate::majors::syscache_exists(pg_sys::SysCacheIdentifier::DATABASEOID, db) }
}

/// A tag created (again) on this node continues every slot it holds at its ceiling: whatever
/// an earlier tag of that name handed out lies below. (Called by `segment_create`.)
pub(crate) fn restart_at_ceilings(tag: &str) {
    let Some(h) = header() else { return };
    let _g = lock(h, pg_sys::LWLockMode::LW_EXCLUSIVE);
    // SAFETY: written under the lock held exclusively.
    let hp = unsafe { &mut *h };
    for e in hp.entries.iter_mut().filter(|e| e.in_use && tag_of(e) == tag.as_bytes()) {
        e.floor = e.ceiling;
        hp.next_epoch += 1;
        e.epoch = hp.next_epoch;
    }
}

/// One slot of `tag` as this database holds it now, or None.
pub(crate) fn get(tag: &str, slot: i64) -> Option<HeldSlot> {
    let h = header()?;
    // SAFETY: MyDatabaseId is this backend's database.
    let db = unsafe { pg_sys::MyDatabaseId };
    let _g = lock(h, pg_sys::LWLockMode::LW_SHARED);
    // SAFETY: entries are read under the lock.
    let entries = unsafe { &(*h).entries };
    entries
        .iter()
        .find(|e| e.in_use && e.slot as i64 == slot && tag_of(e) == tag.as_bytes() && e.dbid == db)
        .map(|e| HeldSlot { slot, slots: e.slots as i64, floor: e.floor, ceiling: e.ceiling, epoch: e.epoch })
}

/// Asks the worker for a ceiling of at least `want` (chunks) for a slot, and wakes it.
pub(crate) fn ask(tag: &str, slot: i64, want: i64) {
    let Some(h) = header() else { return };
    {
        let _g = lock(h, pg_sys::LWLockMode::LW_SHARED);
        // SAFETY: entries are read under the lock; `want` is an atomic.
        let entries = unsafe { &(*h).entries };
        if let Some(e) =
            entries.iter().find(|e| e.in_use && e.slot as i64 == slot && tag_of(e) == tag.as_bytes())
        {
            e.want.fetch_max(want, Ordering::AcqRel);
        }
    }
    // SAFETY: atomics in shared memory; the latch pointer is the worker's PGPROC latch (shared
    // memory, valid for the server's life; setting it after the worker exited wakes whoever
    // has that PGPROC now, harmlessly).
    unsafe {
        (*h).demand.store(true, Ordering::Release);
        let latch = (*h).worker_latch.load(Ordering::Acquire);
        if !latch.is_null() {
            pg_sys::SetLatch(latch);
        }
    }
}

/// The condition variable the worker broadcasts after each publication.
pub(crate) fn cv() -> Option<*mut pg_sys::ConditionVariable> {
    // SAFETY: a field's address in shared memory.
    header().map(|h| unsafe { &raw mut (*h).cv })
}

// ---- the lease worker's side ----

/// A row this node holds, as the worker read it back from the registry.
pub(crate) struct Publish {
    pub tag: String,
    pub slot: i32,
    pub slots: i32,
    pub floor: i64,
    pub ceiling: i64,
}

/// The worker's latch, for backends to wake it (None when it exits).
pub(crate) fn set_worker_latch(latch: *mut pg_sys::Latch) {
    if let Some(h) = header() {
        // SAFETY: an atomic in shared memory.
        unsafe { (*h).worker_latch.store(latch, Ordering::Release) };
    }
}

/// Whether a backend asked for a ceiling since the last call (and clears it).
pub(crate) fn take_demand() -> bool {
    // SAFETY: an atomic in shared memory.
    header().is_some_and(|h| unsafe { (*h).demand.swap(false, Ordering::AcqRel) })
}

/// Ends the node's validity for registry-owned slots at once.
pub(crate) fn invalidate() {
    if let Some(h) = header() {
        // SAFETY: an atomic in shared memory.
        unsafe { (*h).valid_until.store(0, Ordering::Release) };
        std::sync::atomic::fence(Ordering::SeqCst);
    }
}

/// Sets the node's validity (the lease validity of the round that read the registry).
pub(crate) fn set_valid_until(until_ms: u64) {
    if let Some(h) = header() {
        // SAFETY: an atomic in shared memory.
        unsafe { (*h).valid_until.store(until_ms, Ordering::Release) };
    }
}

/// What backends want per held (tag, slot): (tag, slot, want).
pub(crate) fn wants() -> Vec<(String, i32, i64)> {
    let Some(h) = header() else { return Vec::new() };
    let _g = lock(h, pg_sys::LWLockMode::LW_SHARED);
    // SAFETY: entries are read under the lock.
    let entries = unsafe { &(*h).entries };
    entries
        .iter()
        .filter(|e| e.in_use)
        .map(|e| (String::from_utf8_lossy(tag_of(e)).into_owned(), e.slot, e.want.load(Ordering::Acquire)))
        .collect()
}

/// Stops serving one (tag, slot) now: removes it, then drops the tag's values cached in the
/// segment table (a gap), so that no backend hands out a value of it after this returns.
pub(crate) fn drop_slot(tag: &str, slot: i32) {
    let Some(h) = header() else { return };
    let mut db = None;
    {
        let _g = lock(h, pg_sys::LWLockMode::LW_EXCLUSIVE);
        // SAFETY: written under the lock held exclusively.
        let entries = unsafe { &mut (*h).entries };
        for e in entries.iter_mut().filter(|e| e.in_use && e.slot == slot && tag_of(e) == tag.as_bytes()) {
            e.in_use = false;
            db = Some(e.dbid);
        }
    }
    if let Some(db) = db.filter(|&d| d != pg_sys::InvalidOid) {
        super::claim::release(db, tag);
    }
}

/// Replaces the set of held slots by `rows` (floors and ceilings only grow; a slot new or taken
/// again gets a new epoch), drops the cached values of tags that lost a slot, and wakes the
/// backends waiting for a ceiling. Returns how many entries did not fit.
pub(crate) fn publish(rows: &[Publish]) -> usize {
    let Some(h) = header() else { return 0 };
    let mut lost: Vec<(pg_sys::Oid, String)> = Vec::new();
    let mut overflow = 0;
    {
        let _g = lock(h, pg_sys::LWLockMode::LW_EXCLUSIVE);
        // SAFETY: written under the lock held exclusively.
        let hp = unsafe { &mut *h };
        for e in hp.entries.iter_mut().filter(|e| e.in_use) {
            let keep = rows.iter().any(|r| r.slot == e.slot && r.tag.as_bytes() == tag_of(e));
            if !keep {
                e.in_use = false;
                lost.push((e.dbid, String::from_utf8_lossy(tag_of(e)).into_owned()));
            }
        }
        for r in rows {
            let found =
                hp.entries.iter().position(|e| e.in_use && e.slot == r.slot && tag_of(e) == r.tag.as_bytes());
            match found {
                Some(i) => {
                    let e = &mut hp.entries[i];
                    if e.reg_floor != r.floor || e.slots != r.slots {
                        hp.next_epoch += 1;
                        e.epoch = hp.next_epoch;
                        e.reg_floor = r.floor;
                        e.slots = r.slots;
                    }
                    // Floors only grow: a floor raised locally (a rebind) is kept.
                    e.floor = e.floor.max(r.floor);
                    e.ceiling = e.ceiling.max(r.ceiling);
                }
                None => {
                    let Some(i) = hp.entries.iter().position(|e| !e.in_use) else {
                        overflow += 1;
                        continue;
                    };
                    hp.next_epoch += 1;
                    let e = &mut hp.entries[i];
                    let n = r.tag.len().min(MAX_TAG_BYTES);
                    e.tag = [0; MAX_TAG_BYTES];
                    e.tag[..n].copy_from_slice(&r.tag.as_bytes()[..n]);
                    e.tag_len = n;
                    e.slot = r.slot;
                    e.slots = r.slots;
                    e.floor = r.floor;
                    e.reg_floor = r.floor;
                    e.ceiling = r.ceiling;
                    e.epoch = hp.next_epoch;
                    e.dbid = pg_sys::InvalidOid;
                    e.want.store(0, Ordering::Release);
                    e.in_use = true;
                }
            }
        }
    }
    for (db, tag) in lost {
        if db != pg_sys::InvalidOid {
            super::claim::release(db, &tag);
        }
    }
    if let Some(cv) = cv() {
        // SAFETY: the condition variable lives in shared memory for the server's life.
        unsafe { pg_sys::ConditionVariableBroadcast(cv) };
    }
    overflow
}

/// For `segment_slot_status`: the published `[floor, ceiling)` of (tag, slot) if this node
/// holds it for this database (or for none yet, or for a database that no longer exists: the
/// next reservation binds it here).
pub(crate) fn status(tag: &str, slot: i64) -> Option<(i64, i64)> {
    let h = header()?;
    // SAFETY: MyDatabaseId is this backend's database.
    let db = unsafe { pg_sys::MyDatabaseId };
    let found = {
        let _g = lock(h, pg_sys::LWLockMode::LW_SHARED);
        // SAFETY: entries are read under the lock.
        let entries = unsafe { &(*h).entries };
        entries
            .iter()
            .find(|e| e.in_use && e.slot as i64 == slot && tag_of(e) == tag.as_bytes())
            .map(|e| (e.dbid, e.floor, e.ceiling))
    };
    // (the catalog is read with no LWLock held)
    let (bound, floor, ceiling) = found?;
    (bound == db || bound == pg_sys::InvalidOid || !database_exists(bound)).then_some((floor, ceiling))
}
