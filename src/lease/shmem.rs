//! The lease's shared state: what the hot path checks, what the lease worker publishes.
//!
//! Locking protocol (read this before touching anything below):
//!
//! * `word` is the whole hot-path state, in one `AtomicU64` (`pg_idgen_core::lease`): the leased
//!   worker id + 1 in the high 24 bits (0: no id), and in the low 40 bits the end of the lease's
//!   local validity as `CLOCK_BOOTTIME` milliseconds (0: not valid). `snowflake_next()` reads it with one Acquire
//!   load and compares it with `CLOCK_BOOTTIME`; it takes no lock. Only the lease worker
//!   writes it (Release stores), so the id and its validity always change together.
//! * The worker lowers the validity (stores a word with 0 ms) *before* it releases a lease or
//!   gives an id up, and raises it only after the registry confirmed the lease: a backend can
//!   never see a validity the registry did not grant.
//! * `lock` (LWLock, tranche `pg_idgen lease`) guards `info`, the text the worker writes for
//!   messages (who holds the id, the last registry error) and `since_ms`/`state`'s meaning in
//!   it. Taken exclusively by the worker to write, shared by a backend composing an error or
//!   `snowflake_lease()`; nothing else is done while it is held (no I/O, no elog).
//! * `limit_ms` bounds the time of the ids issued under the lease (Unix ms by this node's clock;
//!   the registry keeps it as the row's `hwm_ms`). The worker stores it before the word of the
//!   grant it belongs to (Release); the fence of `snowflake_next()` loads the word, then it.
//! * `state` (a `State` as u32) and the counters are relaxed atomics: for display and
//!   statistics, never a decision of the hot path.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};

use pgrx::pg_sys;

use crate::lock::LockGuard;

const SHMEM_NAME: &std::ffi::CStr = c"pg_idgen lease";
const TRANCHE_NAME: &std::ffi::CStr = c"pg_idgen lease";
const INFO_LEN: usize = 1024;

/// What the lease worker is doing, for `snowflake_worker()`, `snowflake_lease()` and messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum State {
    /// The worker has not finished its first round yet.
    Starting = 0,
    /// The lease is held and renewed.
    Held = 1,
    /// The registry refused: another node holds the id (`info` names it).
    Taken = 2,
    /// The registry could not be reached or failed (`info` has the error).
    Unreachable = 3,
    /// In recovery: a standby holds no lease; it claims one at promotion.
    Standby = 4,
    /// The settings do not allow a lease (`info` says why).
    Misconfigured = 5,
    /// No free worker id in `pg_idgen.lease_range` (auto mode).
    Exhausted = 6,
    /// Released at shutdown.
    Released = 7,
    /// The registry answered, but a claim or renewal waited for a lock another of its sessions
    /// held until its lock_timeout (55P03) ended it (`info` has the error).
    LockWait = 8,
}

impl State {
    pub fn from_u32(v: u32) -> State {
        match v {
            1 => State::Held,
            2 => State::Taken,
            3 => State::Unreachable,
            4 => State::Standby,
            5 => State::Misconfigured,
            6 => State::Exhausted,
            7 => State::Released,
            8 => State::LockWait,
            _ => State::Starting,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Held => "held",
            State::Taken => "held by another node",
            State::Unreachable => "registry unreachable",
            State::Standby => "standby",
            State::Misconfigured => "misconfigured",
            State::Exhausted => "no free worker id",
            State::Released => "released",
            State::LockWait => "registry lock wait",
        }
    }
}

#[repr(C)]
pub struct LeaseShared {
    lock: *mut pg_sys::LWLock,
    /// (worker id + 1) << 40 | valid-until CLOCK_BOOTTIME ms; see the protocol above.
    pub word: AtomicU64,
    /// Unix ms (this node's clock): no id may be issued at or after it under the current lease
    /// (the bound sent to the registry as `hwm_ms` with the claim that granted it). Stored by
    /// the worker before the word that publishes the grant (Release), read by the fence after
    /// the word (Acquire): a backend never pairs a grant with a bound the registry has not got.
    pub limit_ms: AtomicI64,
    /// The highest floor (Unix ms) this node inherited from another holder of the id of its last
    /// grant (reset by the lease worker when it is granted another id).
    pub inherited_ms: AtomicI64,
    /// The identity of the registry that granted this server's first lease since start (its
    /// system identifier and database oid; 0: none yet). Another one is refused until a restart.
    pub registry_sysid: AtomicU64,
    pub registry_db: AtomicU64,
    pub state: AtomicU32,
    /// Unix ms the current lease was first granted (by the registry's clock), 0 if none.
    pub since_ms: AtomicI64,
    /// Successful claims or renewals, registry failures, calls refused for want of a lease,
    /// claims refused because another node holds the id.
    pub renewals: AtomicU64,
    pub failures: AtomicU64,
    pub refusals: AtomicU64,
    pub conflicts: AtomicU64,
    /// The worker's text for messages (NUL-padded UTF-8); under `lock`.
    info: UnsafeCell<[u8; INFO_LEN]>,
}

static mut SHARED: *mut LeaseShared = std::ptr::null_mut();

pub use pg_idgen_core::lease::{pack, unpack};

/// From the shared-memory request hook.
pub unsafe fn request_shmem() {
    // SAFETY: called from the request hook in the postmaster.
    unsafe { crate::shmem_struct::request::<LeaseShared>(TRANCHE_NAME) }
}

/// From the startup hook, with AddinShmemInitLock held: creates or attaches the lease state.
pub unsafe fn attach_shmem() {
    // SAFETY: zeroed memory is a valid `LeaseShared` (no id, not valid, `Starting`) except for
    // the lock set here; called under AddinShmemInitLock (the caller's contract).
    unsafe {
        let (p, _) = crate::shmem_struct::attach::<LeaseShared>(SHMEM_NAME, TRANCHE_NAME, |p, lock| {
            (*p).lock = lock;
        });
        SHARED = p;
    }
}

/// The lease state; None when the library was not preloaded.
pub fn shared() -> Option<&'static LeaseShared> {
    // SAFETY: SHARED is set once at startup (inherited by every process) and points into
    // shared memory that lives as long as the server.
    unsafe { SHARED.as_ref() }
}

impl LeaseShared {
    /// Publishes the leased id and its validity (the worker only).
    pub fn publish(&self, worker: Option<i64>, valid_until_ms: u64) {
        self.word.store(pack(worker, valid_until_ms), Ordering::Release);
    }

    /// Ends the local validity at once, keeping the id (the worker only).
    pub fn invalidate(&self) {
        let (id, _) = unpack(self.word.load(Ordering::Acquire));
        self.publish(id, 0);
        // The release's bound is read next (the generator's reservation): no load may move
        // before this store. A backend stores its reservation under the generator's LWLock,
        // whose release is a full barrier, before it loads the word in the fence; so either it
        // sees the word invalid, or the bound read after this fence covers its reservation.
        std::sync::atomic::fence(Ordering::SeqCst);
    }

    pub fn state(&self) -> State {
        State::from_u32(self.state.load(Ordering::Relaxed))
    }

    /// Sets the state and its text (the worker only).
    pub fn set(&self, state: State, info: &str) {
        let _guard = LockGuard::acquire(self.lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        let bytes = info.as_bytes();
        let mut n = bytes.len().min(INFO_LEN - 1);
        while !info.is_char_boundary(n) {
            n -= 1;
        }
        // SAFETY: `info` is only accessed under `lock`, held exclusively here.
        unsafe {
            let dst = self.info.get().cast::<u8>();
            std::ptr::write_bytes(dst, 0, INFO_LEN);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, n);
        }
        self.state.store(state as u32, Ordering::Relaxed);
    }

    /// The state and its text, read together.
    pub fn read(&self) -> (State, String) {
        let _guard = LockGuard::acquire(self.lock, pg_sys::LWLockMode::LW_SHARED);
        // SAFETY: `info` is only written under `lock` held exclusively; we hold it shared.
        let bytes = unsafe { &*self.info.get() };
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(INFO_LEN);
        (self.state(), String::from_utf8_lossy(&bytes[..end]).into_owned())
    }
}
