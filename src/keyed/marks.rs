//! Registry marks of the spaces created with `registry => true`: a high-water mark per (system
//! identifier, database, space, bucket) in the lease registry (`pg_idgen_keyed_marks`, written
//! only through the registry's `pg_idgen_keyed_marks()`, sql/registry_nodes.sql), so that a
//! lagging asynchronous standby promoted at once continues above every value the old primary
//! handed out: the system identifier is kept by physical replication.
//!
//! The same request queue carries the marks of segment tags created with `registry_marks =>
//! true` (`segment::marks`): a request has a [`MarkKind`], the name is then a tag and a bucket
//! is a stride slot (`pg_idgen_segment_marks` in the registry).
//!
//! The rule (`space::raise_bound`, `space::resolve_slow`): a raise of a bucket of such a space is
//! the local in-place raise and WAL flush *and* the registry's mark raised to the new bound before
//! the bucket's shared bound moves; a claim of the space's entry (first use after a start, a
//! promotion or an eviction) reads the marks and starts each bucket at max(local bound, mark).
//! Without an answer from the registry, neither happens (55000): values below the bounds already
//! raised go on being handed out.
//!
//! Backends do not talk to the registry: the lease worker owns the connection. A backend puts a
//! request in a slot here, sets the worker's latch and waits on `cv` (bounded by `WAIT_MS`); the
//! worker takes every pending request (`take_pending`), sends one registry call per (database,
//! space) — several backends' raises of one space, of any buckets, in one call — and completes
//! the requests (`complete`), then broadcasts `cv`.
//!
//! Locking protocol (read this before touching anything below):
//!
//! * One LWLock (tranche `pg_idgen keyed marks`) guards every request slot and `next_id`. It is
//!   held only to copy a request in or out and to change a slot's state: no SPI, no I/O, no
//!   palloc, no ERROR, no other LWLock.
//! * A slot is FREE, PENDING (filled by a backend), WORKING (taken by the worker), DONE or FAILED
//!   (answered). Each request has a unique `id`: a backend reads back only its own answer. A
//!   backend that stops waiting — its answer read, its wait timed out, an ERROR (cancel,
//!   statement_timeout) or a FATAL (pg_terminate_backend) — gives its slot back at once
//!   (`abandon`, from a drop guard and from a `before_shmem_exit` callback): FREE, or, if the
//!   worker holds it (WORKING), `abandoned` so that the worker's `complete` frees it. Otherwise a
//!   role allowed to use one registry space could keep every slot of the instance taken by
//!   cancelling its own calls. An answered or PENDING slot older than `ABANDON_MS` is reusable too
//!   (a backend that died without running its exit callbacks). The worker marks every WORKING
//!   slot FAILED (FREE if abandoned) when it starts (its predecessor died mid-call).
//! * `latch` (the worker's, set by the worker at start) and `cv` are read without the lock.

use std::sync::atomic::{AtomicPtr, Ordering};

use pgrx::pg_sys;

use super::table::{BUCKETS, MAX_NAME_BYTES};
use crate::clock::boottime_ms;
use crate::lock::LockGuard;

const SHMEM_NAME: &std::ffi::CStr = c"pg_idgen keyed marks";
const TRANCHE_NAME: &std::ffi::CStr = c"pg_idgen keyed marks";
/// Requests in flight at once (backends wait for a free slot, within `WAIT_MS`).
const SLOTS: usize = 64;
/// How long a backend waits for the registry's answer (and for a free slot).
pub(crate) const WAIT_MS: i64 = 15_000;
/// An answered (or never taken) slot this old has no waiter any more.
const ABANDON_MS: i64 = WAIT_MS + 5_000;
const ERR_LEN: usize = 512;

const FREE: u32 = 0;
const PENDING: u32 = 1;
const WORKING: u32 = 2;
const DONE: u32 = 3;
const FAILED: u32 = 4;

/// Whose marks a request reads and raises: a keyed space's (bucket of sections) or a segment
/// tag's (stride slot). The worker sends each kind to its own registry function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum MarkKind {
    Keyed = 0,
    Segment = 1,
    /// The node's databases that have marks (either kind) in the registry, and those of them to
    /// forget (databases this node no longer has): `pg_idgen_marks_forget`. In and out, the
    /// database oids two per bucket ([`pack_oids`]); the name is empty.
    Forget = 2,
}

/// The refusal of the registry's marks functions when the node's marks of a kind already name
/// 1024 (database, name) pairs: the reason to forget those of dropped databases.
const PAIRS_FULL: &str = "already name 1024 (database, ";

/// Database oids two per bucket (high 32 bits, low 32 bits; 0: none), as a [`MarkKind::Forget`]
/// request and its answer carry them: 2 × BUCKETS oids at most.
pub fn pack_oids(oids: &[u32]) -> Vec<i64> {
    oids.chunks(2)
        .take(BUCKETS)
        .map(|p| ((u64::from(p[0]) << 32) | u64::from(p.get(1).copied().unwrap_or(0))) as i64)
        .collect()
}

/// The oids of [`pack_oids`] (zeros skipped).
pub fn unpack_oids(packed: &[i64]) -> Vec<u32> {
    packed.iter().flat_map(|&v| [((v as u64) >> 32) as u32, (v as u64) as u32]).filter(|&o| o != 0).collect()
}

#[repr(C)]
struct Req {
    state: u32,
    kind: MarkKind,
    id: u64,
    /// CLOCK_BOOTTIME ms of the last change of state (to reclaim abandoned slots).
    at_ms: i64,
    dbid: pg_sys::Oid,
    name_len: usize,
    name: [u8; MAX_NAME_BYTES],
    /// In: per bucket, the bound to raise its mark to (0: none; a read has none). Out: the marks
    /// of the space after the call (0 where none).
    bounds: [i64; BUCKETS],
    /// Its backend stopped waiting while the worker held it: `complete` frees it.
    abandoned: bool,
    err_len: usize,
    err: [u8; ERR_LEN],
}

#[repr(C)]
struct Header {
    lock: *mut pg_sys::LWLock,
    latch: AtomicPtr<pg_sys::Latch>,
    cv: pg_sys::ConditionVariable,
    next_id: u64,
    reqs: [Req; SLOTS],
}

static mut SHARED: *mut Header = std::ptr::null_mut();

/// From the shared-memory request hook (by `keyed::request_shmem`).
pub(super) unsafe fn request_shmem() {
    // SAFETY: called from the request hook in the postmaster.
    unsafe { crate::shmem_struct::request::<Header>(TRANCHE_NAME) }
}

/// From the startup hook, with AddinShmemInitLock held (by `keyed::attach_shmem`).
pub(super) unsafe fn attach_shmem() {
    // SAFETY: zeroed memory is a valid `Header` (every slot FREE, of kind Keyed (0), no latch) except for the lock
    // and the condition variable set here; created once, under AddinShmemInitLock.
    unsafe {
        let (p, _) = crate::shmem_struct::attach::<Header>(SHMEM_NAME, TRANCHE_NAME, |p, lock| {
            (*p).lock = lock;
            pg_sys::ConditionVariableInit(&raw mut (*p).cv);
        });
        SHARED = p;
    }
}

fn header() -> Option<*mut Header> {
    // SAFETY: set once at startup; null when not preloaded.
    let p = unsafe { SHARED };
    (!p.is_null()).then_some(p)
}

fn locked(h: *mut Header) -> LockGuard {
    // SAFETY: the lock lives in shared memory for the server's life.
    LockGuard::acquire(unsafe { (*h).lock }, pg_sys::LWLockMode::LW_EXCLUSIVE)
}

/// Under the lock: whether slot `r` may be (re)used now.
fn reusable(r: &Req, now: i64) -> bool {
    match r.state {
        FREE => true,
        PENDING | DONE | FAILED => now - r.at_ms > ABANDON_MS,
        _ => false,
    }
}

/// Asks the lease worker to raise the marks of `space` (this database) to `raise` (bucket,
/// bound) pairs — none: only read them — and waits for the answer: the space's marks by bucket
/// (0 where none) after the call, or why there are none.
pub(super) fn call(space: &str, raise: &[(usize, i64)]) -> Result<Vec<i64>, String> {
    call_kind(MarkKind::Keyed, space, raise)
}

/// As [`call`], for the marks of `kind`: a keyed space's or a segment tag's (`name`). When the
/// registry refuses a first mark of a (database, name) pair because this node's marks of the kind
/// already name 1024 pairs, the pairs of the databases this node no longer has are forgotten
/// ([`forget_dropped_databases`]) and, if there were any, the call is made once more.
pub(crate) fn call_kind(kind: MarkKind, space: &str, raise: &[(usize, i64)]) -> Result<Vec<i64>, String> {
    match call_raw(kind, space, raise) {
        Err(e) if e.contains(PAIRS_FULL) => match forget_dropped_databases() {
            Ok(true) => call_raw(kind, space, raise),
            Ok(false) => Err(e),
            Err(why) => {
                Err(format!("{e} (and the marks of dropped databases could not be forgotten: {why})"))
            }
        },
        r => r,
    }
}

/// Asks the registry which of this node's databases have marks, checks each in this server's
/// catalog (with a fresh catalog snapshot) and has the registry forget those that no longer
/// exist. Only on a primary: a standby's catalog can be behind the primary's (a database created
/// there, whose marks a standby would forget). Whether any were forgotten.
fn forget_dropped_databases() -> Result<bool, String> {
    // SAFETY: reads the shared recovery state.
    if unsafe { pg_sys::RecoveryInProgress() } {
        return Ok(false);
    }
    let listed = unpack_oids(&call_raw(MarkKind::Forget, "", &[])?);
    // SAFETY: processes pending invalidations (no LWLock held), so that the probes below see
    // databases created or dropped by other backends.
    unsafe { pg_sys::AcceptInvalidationMessages() };
    let gone: Vec<u32> = listed
        .into_iter()
        .filter(|&db| {
            // SAFETY: a syscache probe on the shared catalog pg_database, by oid, in this
            // backend's transaction, with no LWLock held.
            !unsafe {
                crate::majors::syscache_exists(pg_sys::SysCacheIdentifier::DATABASEOID, pg_sys::Oid::from(db))
            }
        })
        .collect();
    if gone.is_empty() {
        return Ok(false);
    }
    let packed: Vec<(usize, i64)> = pack_oids(&gone).into_iter().enumerate().collect();
    call_raw(MarkKind::Forget, "", &packed)?;
    Ok(true)
}

/// One request to the lease worker and its answer (see [`call`]).
fn call_raw(kind: MarkKind, space: &str, raise: &[(usize, i64)]) -> Result<Vec<i64>, String> {
    let Some(h) = header() else { return Err("pg_idgen is not preloaded".into()) };
    // SAFETY: an atomic in shared memory.
    let latch = unsafe { (*h).latch.load(Ordering::Acquire) };
    if latch.is_null() {
        return Err(
            "the lease worker is not running (pg_idgen.lease_mode is off, or it has not started yet)".into(),
        );
    }
    // SAFETY: reads this backend's database id.
    let db = unsafe { pg_sys::MyDatabaseId };
    // SAFETY: the condition variable lives in shared memory for the server's life.
    let cv = unsafe { &raw mut (*h).cv };
    let deadline = boottime_ms() + WAIT_MS;
    let mut mine: Option<(usize, u64)> = None;
    let mut out = Vec::new();
    let mut failure: Option<String> = None;
    // Gives the slot back however this call ends (dropped after the loop, or while an ERROR
    // unwinds); a FATAL exit runs `abandon_at_exit` instead.
    let mut given_back: Option<GiveBack> = None;
    ensure_exit_callback();
    // SAFETY: prepares this backend to sleep on `cv` (cancelled below on every normal path; an
    // ERROR cancels it in abort processing).
    unsafe { pg_sys::ConditionVariablePrepareToSleep(cv) };
    loop {
        pg_sys::check_for_interrupts!();
        let now = boottime_ms();
        {
            let _g = locked(h);
            // SAFETY: slots are read and written under the lock, held exclusively.
            let hp = unsafe { &mut *h };
            match mine {
                None => {
                    if let Some(i) = (0..SLOTS).find(|&i| reusable(&hp.reqs[i], now)) {
                        hp.next_id += 1;
                        let r = &mut hp.reqs[i];
                        r.state = PENDING;
                        r.kind = kind;
                        r.id = hp.next_id;
                        r.at_ms = now;
                        r.dbid = db;
                        r.name_len = space.len().min(MAX_NAME_BYTES);
                        r.name = [0; MAX_NAME_BYTES];
                        r.name[..r.name_len].copy_from_slice(&space.as_bytes()[..r.name_len]);
                        r.bounds = [0; BUCKETS];
                        for &(b, v) in raise {
                            if b < BUCKETS {
                                // a Forget request's buckets are packed oids, set as they are
                                r.bounds[b] = if kind == MarkKind::Forget { v } else { r.bounds[b].max(v) };
                            }
                        }
                        r.err_len = 0;
                        r.abandoned = false;
                        mine = Some((i, r.id));
                        given_back = Some(GiveBack::new(i, r.id));
                    }
                }
                Some((i, id)) => {
                    let r = &mut hp.reqs[i];
                    if r.id != id {
                        failure = Some("the request was dropped".into());
                    } else if r.state == DONE {
                        out = r.bounds.to_vec();
                        r.state = FREE;
                    } else if r.state == FAILED {
                        failure =
                            Some(String::from_utf8_lossy(&r.err[..r.err_len.min(ERR_LEN)]).into_owned());
                        r.state = FREE;
                    }
                }
            }
        }
        if failure.is_some() || !out.is_empty() {
            break;
        }
        if mine.is_some() && out.is_empty() {
            // SAFETY: the worker's latch (a PGPROC's, in shared memory for the server's life).
            unsafe { pg_sys::SetLatch(latch) };
        }
        let left = deadline - boottime_ms();
        if left <= 0 {
            failure = Some(match mine {
                None => format!("no free request slot within {WAIT_MS} ms"),
                Some(_) => format!("no answer from the lease worker within {WAIT_MS} ms"),
            });
            break;
        }
        // SAFETY: sleeps on `cv`, prepared above, at most `left` ms (a timeout is not an error).
        unsafe { pg_sys::ConditionVariableTimedSleep(cv, left.min(1000), pg_sys::PG_WAIT_EXTENSION) };
    }
    // SAFETY: ends the sleep prepared above.
    unsafe { pg_sys::ConditionVariableCancelSleep() };
    drop(given_back);
    match failure {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// This backend's request in flight (slot, id), for the exit callback.
static mut IN_FLIGHT: Option<(usize, u64)> = None;
static mut EXIT_CALLBACK: bool = false;

/// The slot of this backend's request, given back when dropped (`abandon`).
struct GiveBack(usize, u64);

/// Registers `abandon_at_exit` once per process (before a slot is taken: not under the lock).
fn ensure_exit_callback() {
    // SAFETY: backend-local static (one thread); before_shmem_exit keeps the callback until exit.
    unsafe {
        if !EXIT_CALLBACK {
            pg_sys::before_shmem_exit(Some(abandon_at_exit), pg_sys::Datum::from(0));
            EXIT_CALLBACK = true;
        }
    }
}

impl GiveBack {
    fn new(slot: usize, id: u64) -> GiveBack {
        // SAFETY: backend-local static (one thread).
        unsafe { IN_FLIGHT = Some((slot, id)) };
        GiveBack(slot, id)
    }
}

impl Drop for GiveBack {
    fn drop(&mut self) {
        // SAFETY: backend-local static.
        unsafe { IN_FLIGHT = None };
        abandon(self.0, self.1);
    }
}

/// A FATAL (pg_terminate_backend) while waiting: the process exits without unwinding.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn abandon_at_exit(_code: std::ffi::c_int, _arg: pg_sys::Datum) {
    // SAFETY: backend-local static, read and cleared by value.
    let mine = unsafe {
        let m = IN_FLIGHT;
        IN_FLIGHT = None;
        m
    };
    if let Some((slot, id)) = mine {
        abandon(slot, id);
    }
}

/// Gives back slot `slot` if it still holds request `id`: FREE, or `abandoned` while the worker
/// holds it. Also runs while an ERROR unwinds: raw LWLock calls, nothing that can fail.
fn abandon(slot: usize, id: u64) {
    let Some(h) = header() else { return };
    // SAFETY: the lock lives in shared memory for the server's life; it is never held while this
    // backend can ERROR (see the protocol), so it is not held here, but check rather than
    // self-deadlock. The slot is written under it.
    unsafe {
        let lock = (*h).lock;
        let held = pg_sys::LWLockHeldByMe(lock);
        if !held {
            pg_sys::LWLockAcquire(lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        }
        let r = &mut (*h).reqs[slot];
        if r.id == id {
            match r.state {
                FREE => {}
                WORKING => r.abandoned = true,
                _ => r.state = FREE,
            }
        }
        if !held {
            pg_sys::LWLockRelease(lock);
        }
    }
}

// ---- the lease worker's side ----

/// A request the worker took: (slot, id, kind, database, space or tag, raises by bucket (0:
/// none)).
pub struct Taken {
    pub slot: usize,
    pub id: u64,
    pub kind: MarkKind,
    pub dbid: u32,
    pub space: String,
    pub bounds: Vec<i64>,
}

/// The worker's latch, for backends to wake it; at its start, fails what its predecessor left
/// WORKING (no answer will come for it).
pub fn set_worker_latch(latch: *mut pg_sys::Latch) {
    let Some(h) = header() else { return };
    if !latch.is_null() {
        let now = boottime_ms();
        let _g = locked(h);
        // SAFETY: slots are written under the lock, held exclusively.
        let hp = unsafe { &mut *h };
        for r in hp.reqs.iter_mut().filter(|r| r.state == WORKING) {
            set_err(r, "the lease worker restarted while it sent the request");
            r.state = if r.abandoned { FREE } else { FAILED };
            r.at_ms = now;
        }
    }
    // SAFETY: an atomic in shared memory.
    unsafe { (*h).latch.store(latch, Ordering::Release) };
}

fn set_err(r: &mut Req, e: &str) {
    let mut n = e.len().min(ERR_LEN);
    while !e.is_char_boundary(n) {
        n -= 1;
    }
    r.err[..n].copy_from_slice(&e.as_bytes()[..n]);
    r.err_len = n;
}

/// Takes every pending request (PENDING → WORKING).
pub fn take_pending() -> Vec<Taken> {
    let Some(h) = header() else { return Vec::new() };
    // How many there are (the worker runs this every round: mostly none), then the copies,
    // allocated before the lock is taken again; requests that came meanwhile wait for the next
    // round (their backends set the latch again).
    let pending = {
        let _g = locked(h);
        // SAFETY: slots are read under the lock.
        unsafe { (*h).reqs.iter().filter(|r| r.state == PENDING).count() }
    };
    if pending == 0 {
        return Vec::new();
    }
    let mut bufs: Vec<Vec<i64>> = (0..pending).map(|_| Vec::with_capacity(BUCKETS)).collect();
    let mut taken: Vec<(usize, u64, MarkKind, u32, [u8; MAX_NAME_BYTES], usize)> =
        Vec::with_capacity(pending);
    let now = boottime_ms();
    {
        let _g = locked(h);
        // SAFETY: slots are read and written under the lock, held exclusively.
        let hp = unsafe { &mut *h };
        for (i, r) in hp.reqs.iter_mut().enumerate() {
            if r.state == PENDING && taken.len() < pending {
                r.state = WORKING;
                r.at_ms = now;
                bufs[taken.len()].extend_from_slice(&r.bounds);
                taken.push((i, r.id, r.kind, r.dbid.to_u32(), r.name, r.name_len));
            }
        }
    }
    taken
        .into_iter()
        .zip(bufs)
        .map(|((i, id, kind, db, name, len), bounds)| Taken {
            slot: i,
            id,
            kind,
            dbid: db,
            space: String::from_utf8_lossy(&name[..len.min(MAX_NAME_BYTES)]).into_owned(),
            bounds,
        })
        .collect()
}

/// Answers a request taken by `take_pending`: the space's marks by bucket, or the error.
pub fn complete(slot: usize, id: u64, result: Result<&[i64], &str>) {
    let Some(h) = header() else { return };
    let now = boottime_ms();
    let _g = locked(h);
    // SAFETY: slots are written under the lock, held exclusively.
    let r = unsafe { &mut (*h).reqs[slot] };
    if r.id != id || r.state != WORKING {
        return;
    }
    if r.abandoned {
        // nobody waits for this answer any more
        r.state = FREE;
        r.at_ms = now;
        return;
    }
    match result {
        Ok(marks) => {
            r.bounds = [0; BUCKETS];
            for (b, v) in marks.iter().enumerate().take(BUCKETS) {
                r.bounds[b] = *v;
            }
            r.state = DONE;
        }
        Err(e) => {
            set_err(r, e);
            r.state = FAILED;
        }
    }
    r.at_ms = now;
}

/// Wakes the backends waiting for answers (after `complete`).
pub fn wake_waiters() {
    if let Some(h) = header() {
        // SAFETY: the condition variable lives in shared memory for the server's life.
        unsafe { pg_sys::ConditionVariableBroadcast(&raw mut (*h).cv) };
    }
}

/// Fails every pending request (the worker is stopping: no answer will come).
pub fn fail_pending(why: &str) {
    for t in take_pending() {
        complete(t.slot, t.id, Err(why));
    }
    wake_waiters();
}
