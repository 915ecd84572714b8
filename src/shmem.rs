//! Shared state of the snowflake generators, and its durable copy on disk. The shared-memory
//! hooks here also request and attach the segment table (`segment`), which has its own locks.
//!
//! Locking protocol (read this before touching anything below):
//!
//! * One [`Slot`] per worker id, in a fixed-capacity array in shared memory, created at
//!   postmaster start (and again after a crash restart) from the state file. Only worker ids
//!   whose reservation is still ahead of the clock get a slot back at start; the others are
//!   folded into `floor_ms`, where every newly claimed slot starts.
//! * `Slot::worker_id` is written only while holding `lock` exclusively, when a slot is claimed
//!   for a worker id; a claimed slot never changes owner while the server runs. Readers find
//!   slots without the lock (Acquire loads) and cache the slot per backend.
//! * `WorkerState::state`, the last issued `(tick, sequence)`, is only ever changed by a
//!   compare-and-swap in `pg_idgen_core::next_id`: the hot path takes no lock at all.
//! * `WorkerState::reserved` (ticks below it are covered by the state file) is only raised while
//!   holding `lock` exclusively, and only after the state file carrying the new value has been
//!   written, fsync'd and durably renamed. Hence no id is ever issued from a tick the file does
//!   not cover, and after a crash generation restarts above every id issued before.
//! * Before `reserved` is raised, the new reservation is also WAL-logged and flushed (`wal`);
//!   redo (crash recovery, a standby's replay) writes the state file first (PANIC on failure),
//!   then raises `state` and `reserved` under `lock`.
//! * With synchronous standbys named, a new reservation is first only *pending*
//!   (`Slot::pending_end`, `Slot::pending_lsn`, set under `lock` once its WAL record is flushed and
//!   the state file written — the file always carries `max(reserved, pending_end)`); `reserved` is
//!   raised to it (under `lock`) only after the synchronous standbys confirmed that WAL, waited for
//!   with `lock` released (`syncrep::wait`). Others needing the same reservation wait for the same
//!   LSN instead of writing another record.
//! * `floor_ms` is only raised, under `lock`, after the state file carrying it was written.
//! * `recovery_floor_ms`, `recovery_wait_until_ms`, `recovery_observed_lead_ms`,
//!   `replayed_max_drift_ms` and `sender_lead` are in memory only: the end-of-recovery floor
//!   (`apply_recovery_floor`, startup process, under `lock`) raises `state` only, never
//!   `reserved`, so the first id above it makes a reservation (WAL and state file) as any other;
//!   the largest max_drift_ms replayed, and the primary's clock lead the WAL receiver saw
//!   (`sender_lead`, written by the startup process only), are raised by redo under `lock`.
//! * The state file is written only with `lock` held exclusively, or by the postmaster at a
//!   clean exit (no backend runs then; never after a crash, when memory is not trusted). Nothing else is done while holding `lock`: no SPI, no catalog
//!   access; an ERROR while it is held (disk full) releases it as part of abort.
//! * Statistics counters are relaxed atomics: exact counts, no ordering promised between them.
//!   `WorkerState::issued` is added to by each backend once per tick it issues ids in, at the end
//!   of each transaction and before it reads the statistics (`snowflake::count_issued`): exact
//!   for every transaction that has ended; a running one's ids of its current tick are still
//!   counted in its backend.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

use pg_idgen_core::generator::{reservation_end, state_before_tick, state_tick};
use pg_idgen_core::{Layout, StateFile, WorkerState};
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::errors::{raise, Code};
use crate::gucs;
use crate::lock::LockGuard;
use crate::state_file;

/// How many distinct worker ids one instance can generate for between two restarts (logical
/// shards on one server). A restart frees every slot whose reservation has passed.
pub const MAX_WORKER_SLOTS: usize = 256;
const SHMEM_NAME: &std::ffi::CStr = c"pg_idgen snowflake state";
const TRANCHE_NAME: &std::ffi::CStr = c"pg_idgen";

#[repr(C, align(128))]
#[derive(Default)]
pub struct Slot {
    /// Worker id owning this slot, -1 while free.
    pub worker_id: AtomicI64,
    pub ws: WorkerState,
    /// A reservation end written to WAL and the state file but not yet confirmed by the
    /// synchronous standbys (0: none); raised under `lock`.
    pub pending_end: AtomicU64,
    /// The end of its WAL record.
    pub pending_lsn: AtomicU64,
}

#[repr(C)]
pub struct Shared {
    pub(crate) lock: *mut pg_sys::LWLock,
    /// The state file was written with another layout than the server's: generation refused
    /// until `snowflake_accept_layout()`.
    pub layout_mismatch: AtomicBool,
    /// Unix ms below which ids of worker ids without a slot may have been issued: reservations
    /// of worker ids that were folded out of the slots at start (their time had passed). A newly
    /// claimed slot starts here. Raised only under `lock`.
    pub(crate) floor_ms: AtomicI64,
    /// Unix ms at or above which ids continue after the last recovery (0: none yet); newly
    /// claimed slots start there too. In memory only (see the protocol).
    pub(crate) recovery_floor_ms: AtomicI64,
    /// Until this clock reading (Unix ms), calls wait before generating: the recovery floor less
    /// max_drift_ms, so that the first ids after recovery stay within max_drift_ms of the clock
    /// (0: no wait). Cleared by the first call that finds it passed.
    pub recovery_wait_until_ms: AtomicI64,
    /// The largest pg_idgen.max_drift_ms replayed from the primary's reservation records.
    pub(crate) replayed_max_drift_ms: AtomicI64,
    /// How far the primary's clock was ahead of this server's, as the WAL receiver saw it
    /// (`pg_idgen_core::generator::SenderLead`, its three fields; `i64::MIN`: none). Sampled by
    /// the startup process (redo of a reservation, the end of recovery) under `lock`.
    sender_lead: [AtomicI64; 3],
    /// The part of the last recovery floor that is the old primary's observed lead (ms, 0:
    /// none): the refusals after a promotion say so. Set by `apply_recovery_floor` under `lock`.
    pub recovery_observed_lead_ms: AtomicI64,
    /// The largest floor `pg_idgen_state_import` raised ahead of the clock since start (Unix ms,
    /// 0: none): a refusal while the clock is still behind it says the import is the cause.
    pub import_floor_ms: AtomicI64,
    /// Canonical text of the layout the state file was written with (NUL-padded). Written only
    /// at startup (no other process yet) and under `lock` by `accept_layout`.
    persisted_layout: UnsafeCell<[u8; 256]>,
    pub slots: [Slot; MAX_WORKER_SLOTS],
}

pub(crate) static mut SHARED: *mut Shared = std::ptr::null_mut();

/// The layout recorded in the state file that a cluster started by pg_upgrade (binary upgrade
/// mode) writes when it has none: the old cluster's file is still to be copied (`load_from_disk`).
pub const UPGRADE_WITHOUT_STATE: &str = "pg_upgrade:the-old-cluster's-state-file-was-not-copied";

/// From the shared-memory request hook: space for the generator state and its lock.
pub unsafe fn request_shmem() {
    // SAFETY: called from the request hook in the postmaster.
    unsafe { crate::shmem_struct::request::<Shared>(TRANCHE_NAME) }
}

/// From the startup hook, with AddinShmemInitLock held: creates or attaches the generator
/// state; true when it was created (then the caller loads the state file).
pub unsafe fn attach_shmem() -> bool {
    // SAFETY: zeroed memory is a valid `Shared` except for the free markers and the lock set here;
    // the structure is created once, under AddinShmemInitLock.
    unsafe {
        let (shared, created) =
            crate::shmem_struct::attach::<Shared>(SHMEM_NAME, TRANCHE_NAME, |shared, lock| {
                (*shared).lock = lock;
                for slot in (*shared).slots.iter() {
                    slot.worker_id.store(-1, Ordering::Relaxed);
                }
                (*shared).replayed_max_drift_ms.store(-1, Ordering::Relaxed);
                for f in (*shared).sender_lead.iter() {
                    f.store(i64::MIN, Ordering::Relaxed);
                }
            });
        SHARED = shared;
        created
    }
}

/// The shared state; raises 55000 when the library was not preloaded.
#[inline]
pub fn shared() -> &'static Shared {
    // SAFETY: SHARED is set once at startup (in the postmaster, inherited by every backend) and
    // points into shared memory that lives as long as the server.
    unsafe {
        let p = SHARED;
        if p.is_null() {
            crate::errors::not_preloaded();
        }
        &*p
    }
}

/// The tick at or after `unix_ms`, rounded up, within the layout's range.
pub(crate) fn tick_at_or_after(layout: &Layout, unix_ms: i64) -> u64 {
    let tick = layout.unix_ms_to_tick(unix_ms.saturating_add(layout.unit_ms - 1)).max(0) as u64;
    tick.min(layout.max_time() + 1)
}

pub(crate) fn set_persisted_layout(sh: &Shared, text: &str) {
    let bytes = text.as_bytes();
    let n = bytes.len().min(255);
    // SAFETY: written only at startup (no other process yet) and under `lock` by accept_layout;
    // readers read it under `lock` or after startup.
    unsafe {
        let dst = sh.persisted_layout.get().cast::<u8>();
        std::ptr::write_bytes(dst, 0, 256);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, n);
    }
}

pub fn persisted_layout(sh: &Shared) -> String {
    // SAFETY: see `set_persisted_layout`.
    let bytes = unsafe { &*sh.persisted_layout.get() };
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(256);
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// Finds or claims the slot of `worker`. Caller holds `lock` exclusively (or is the only process).
/// A newly claimed slot starts at the floor.
pub(crate) fn claim_slot_locked(sh: &Shared, worker: i64) -> Option<&Slot> {
    if let Some(s) = sh.slots.iter().find(|s| s.worker_id.load(Ordering::Acquire) == worker) {
        return Some(s);
    }
    let free = sh.slots.iter().find(|s| s.worker_id.load(Ordering::Acquire) == -1)?;
    let layout = gucs::layout();
    let floor_ms = sh.floor_ms.load(Ordering::Acquire).max(sh.recovery_floor_ms.load(Ordering::Acquire));
    let floor = tick_at_or_after(layout, floor_ms);
    free.pending_end.store(0, Ordering::Relaxed);
    free.ws.state.store(state_before_tick(floor, layout.sequence_bits), Ordering::Relaxed);
    free.ws.reserved.store(floor, Ordering::Relaxed);
    free.worker_id.store(worker, Ordering::Release);
    Some(free)
}

/// The worker id whose slot this backend used last, and the slot's index (-1: none yet). A plain
/// static: the backend is single-threaded (no thread-local lookup on the hot path).
static mut SLOT_CACHE: (i64, usize) = (-1, 0);

/// The shared state, or `None` when the library was not preloaded (never raises).
#[inline]
pub fn shared_if_attached() -> Option<&'static Shared> {
    // SAFETY: as in `shared`.
    unsafe { SHARED.as_ref() }
}

/// The slot of `worker` when it is the one this backend used last (never raises, claims nothing).
#[inline]
pub fn cached_slot(worker: i64) -> Option<&'static Slot> {
    // SAFETY: as in `slot_for`.
    let (cached_worker, idx) = unsafe { SLOT_CACHE };
    if cached_worker != worker {
        return None;
    }
    Some(&shared_if_attached()?.slots[idx])
}

/// The slot of `worker`, claimed on first use.
#[inline]
pub fn slot_for(worker: i64) -> &'static Slot {
    let sh = shared();
    // SAFETY: single-threaded backend; only this function reads or writes it.
    let (cached_worker, idx) = unsafe { SLOT_CACHE };
    if cached_worker == worker {
        return &sh.slots[idx];
    }
    slot_for_uncached(sh, worker)
}

#[cold]
#[inline(never)]
fn slot_for_uncached(sh: &'static Shared, worker: i64) -> &'static Slot {
    let found = sh.slots.iter().position(|s| s.worker_id.load(Ordering::Acquire) == worker);
    let idx = match found {
        Some(i) => i,
        None => {
            let _guard = LockGuard::acquire(sh.lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
            match claim_slot_locked(sh, worker) {
                Some(s) => sh.slots.iter().position(|x| std::ptr::eq(x, s)).unwrap_or(0),
                None => raise(
                    Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
                    format!("pg_idgen can generate for at most {MAX_WORKER_SLOTS} distinct worker ids between two restarts of the server"),
                    Some("Use fewer logical shards per server, or restart the server: a restart frees the slots of worker ids whose reservation has passed."),
                ),
            }
        }
    };
    // SAFETY: as in `slot_for`.
    unsafe { SLOT_CACHE = (worker, idx) };
    &sh.slots[idx]
}

/// Extends the reservation of `slot` so that it covers `tick`. With `wait == false` it gives up
/// if another backend holds the lock (that backend is extending already), and does not wait for
/// synchronous standbys: the reservation stays pending until a caller that needs it waits.
pub fn extend_reservation(slot: &Slot, layout: &Layout, tick: u64, now_ms: i64, wait: bool) {
    let sh = shared();
    if !wait && slot.pending_end.load(Ordering::Acquire) > slot.ws.reserved.load(Ordering::Acquire) {
        // The early extension is written and waits for the synchronous standbys: until they
        // confirmed it, every call of the half-window lands here — no lock, two atomic reads.
        // Once confirmed, raise `reserved` (which ends the early extension calls).
        if crate::syncrep::reached(slot.pending_lsn.load(Ordering::Acquire)) {
            if let Some(_guard) = LockGuard::try_exclusive(sh.lock) {
                let pending = slot.pending_end.load(Ordering::Acquire);
                if crate::syncrep::reached(slot.pending_lsn.load(Ordering::Acquire)) {
                    slot.ws.reserved.fetch_max(pending, Ordering::AcqRel);
                }
            }
        }
        return;
    }
    let (end, lsn) = {
        let _guard = if wait {
            LockGuard::acquire(sh.lock, pg_sys::LWLockMode::LW_EXCLUSIVE)
        } else {
            match LockGuard::try_exclusive(sh.lock) {
                Some(g) => g,
                None => return,
            }
        };
        let current = slot.ws.reserved.load(Ordering::Acquire);
        let pending = slot.pending_end.load(Ordering::Acquire);
        let window = gucs::reserve_window_ms();
        let covered = current.max(pending);
        // Re-check under the lock: another backend may have extended it meanwhile.
        let needed = if wait {
            current <= tick
        } else {
            // A reservation that reaches the end of the time field cannot grow: nothing to write.
            covered <= layout.max_time()
                && covered.saturating_sub(tick).saturating_mul(layout.unit_ms as u64 * 2) <= window as u64
        };
        if !needed {
            return;
        }
        if wait && pending > tick {
            // Written already, waiting for the synchronous standbys: wait for the same record.
            (pending, slot.pending_lsn.load(Ordering::Acquire))
        } else {
            let end = reservation_end(layout, tick.max(covered), now_ms, window);
            // WAL first (crash recovery and standbys replay it), then the state file (which
            // outlives the WAL recycled after checkpoints), then the ids may be issued.
            let until_ms = layout.tick_to_unix_ms(end).min(i64::MAX as i128) as i64;
            let lsn = crate::wal::log_reservation(slot.worker_id.load(Ordering::Acquire), until_ms);
            persist(sh, layout, Override::Slot(slot, end), pgrx::PgLogLevel::ERROR);
            if crate::syncrep::reached(lsn) {
                slot.ws.reserved.store(end, Ordering::Release);
                return; // no synchronous standby named: as durable as it gets
            }
            slot.pending_lsn.store(lsn, Ordering::Release);
            slot.pending_end.store(end, Ordering::Release);
            if !wait {
                return; // raised by the next caller that needs it, once confirmed
            }
            (end, lsn)
        }
    };
    // With the lock released: others keep issuing ids below `reserved`.
    crate::syncrep::wait(
        lsn,
        "a snowflake time reservation",
        "No id of the reservation was handed out; the next call waits again.",
    );
    let _guard = LockGuard::acquire(sh.lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
    slot.ws.reserved.fetch_max(end, Ordering::AcqRel);
}

fn sender_lead(sh: &Shared) -> pg_idgen_core::generator::SenderLead {
    let f = &sh.sender_lead;
    pg_idgen_core::generator::SenderLead {
        current_ms: f[0].load(Ordering::Acquire),
        previous_ms: f[1].load(Ordering::Acquire),
        period_start_ms: f[2].load(Ordering::Acquire),
    }
}

/// Startup process, `lock` held: adds the WAL receiver's last observation of the primary's clock
/// (`clock::walreceiver_sender_lead`) to `sender_lead`. Sampled at each replayed reservation
/// (while the primary hands out ids it writes one every half `reserve_ms`) and at the end of
/// recovery; kept in memory, so it survives the WAL receiver's restarts but not the server's.
fn sample_sender_lead_locked(sh: &Shared) {
    let Some((lead, at_ms)) = crate::clock::walreceiver_sender_lead() else { return };
    let mut l = sender_lead(sh);
    l.observe(lead, at_ms);
    sh.sender_lead[0].store(l.current_ms, Ordering::Release);
    sh.sender_lead[1].store(l.previous_ms, Ordering::Release);
    sh.sender_lead[2].store(l.period_start_ms, Ordering::Release);
}

/// WAL redo of a reservation (startup process: crash recovery, or a standby's replay): raise the
/// worker's reservation and its state to at least `until_ms`, and persist it in the state file
/// so that a restart from a later checkpoint or restartpoint still knows it. The file is written
/// first, at PANIC on failure as core redo routines fail, then shared memory is raised: the
/// invariant "nothing in memory the file does not cover" holds at every instant.
pub fn replay_reservation(worker: i64, until_ms: i64, max_drift_ms: i64) {
    let sh = shared();
    let layout = gucs::layout();
    let tick = tick_at_or_after(layout, until_ms);
    let _guard = LockGuard::acquire(sh.lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
    sh.replayed_max_drift_ms.fetch_max(max_drift_ms, Ordering::AcqRel);
    sample_sender_lead_locked(sh);
    let Some(slot) = claim_slot_locked(sh, worker) else {
        // No free slot: keep the reservation as the floor of every worker id without a slot.
        if until_ms > sh.floor_ms.load(Ordering::Acquire) {
            persist(sh, layout, Override::Floor(until_ms), pgrx::PgLogLevel::PANIC);
            sh.floor_ms.store(until_ms, Ordering::Release);
        }
        return;
    };
    if tick <= slot.ws.reserved.load(Ordering::Acquire) {
        return;
    }
    persist(sh, layout, Override::Slot(slot, tick), pgrx::PgLogLevel::PANIC);
    slot.ws.state.fetch_max(state_before_tick(tick, layout.sequence_bits), Ordering::AcqRel);
    slot.ws.reserved.store(tick, Ordering::Release);
}

/// End of recovery (startup process, `wal::cleanup`): the WAL replayed may lack the old
/// primary's last reservations (an asynchronous standby that lagged), so every generator, and
/// every slot claimed later, continues at or above
/// `pg_idgen_core::generator::recovery_floor_observed_ms`: the clock + how far the old primary's
/// clock was observed ahead of this one through streaming replication (when it was: a standby
/// whose clock is behind) + the largest lead the old primary may have had (the larger of this
/// server's pg_idgen.max_drift_ms and the largest one its records carried) +
/// pg_idgen.clock_skew_ms. Only `state` is raised (see the protocol). The first calls wait until
/// the clock is within max_drift_ms of the floor without the observed lead (at most about
/// clock_skew_ms); the observed lead is not waited out here: the generator's own drift check
/// waits up to pg_idgen.max_wait_ms and refuses (55000) beyond, until the clock has caught up.
/// Says so in one LOG line.
pub fn apply_recovery_floor() {
    let sh = shared();
    let layout = gucs::layout();
    let local = gucs::max_drift_ms();
    let replayed = sh.replayed_max_drift_ms.load(Ordering::Acquire);
    let lead = local.max(replayed);
    let skew = gucs::clock_skew_ms();
    let (mut workers, mut above) = (0, 0);
    let mut highest = sh.floor_ms.load(Ordering::Acquire) as i128;
    let (now, floor_ms, until, observed) = {
        let _guard = LockGuard::acquire(sh.lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        sample_sender_lead_locked(sh);
        let observed = sender_lead(sh);
        let now = crate::clock::now_unix_ms();
        let floor_ms =
            pg_idgen_core::generator::recovery_floor_observed_ms(now, lead, skew, observed.lead_ms());
        let tick = tick_at_or_after(layout, floor_ms);
        sh.recovery_floor_ms.fetch_max(floor_ms, Ordering::AcqRel);
        sh.recovery_observed_lead_ms.store(observed.lead_ms().unwrap_or(0).max(0), Ordering::Release);
        for slot in sh.slots.iter().filter(|s| s.worker_id.load(Ordering::Acquire) >= 0) {
            workers += 1;
            let reserved = slot.ws.reserved.load(Ordering::Acquire);
            highest = highest.max(layout.tick_to_unix_ms(reserved));
            if reserved > tick {
                above += 1;
            }
            slot.ws.state.fetch_max(state_before_tick(tick, layout.sequence_bits), Ordering::AcqRel);
        }
        let without_observed = pg_idgen_core::generator::recovery_floor_ms(now, lead, skew);
        let until = pg_idgen_core::generator::recovery_wait_until_ms(without_observed, local);
        sh.recovery_wait_until_ms.fetch_max(until, Ordering::AcqRel);
        (now, floor_ms, until, observed)
    };
    let fmt = |ms: i128| pg_idgen_core::layout::format_unix_ms(ms);
    let old = if replayed >= 0 { format!("{replayed} ms") } else { "none replayed".to_string() };
    let seen = match observed.lead_ms() {
        Some(ms) if ms > 0 => format!(
            "{ms} ms the old primary's clock was ahead of this one (the largest lead the WAL receiver saw recently)"
        ),
        Some(0) => "0 ms (the WAL receiver saw the old primary's clock within a millisecond of this one)".to_string(),
        Some(ms) => format!("0 ms (the WAL receiver saw the old primary's clock {} ms behind this one)", -ms),
        None => "0 ms (no clock of a primary seen by a WAL receiver since the start)".to_string(),
    };
    pgrx::log!(
        "pg_idgen: end of recovery: snowflake ids continue above {} = the clock {} + {} + {} ms, the largest lead the old primary may have had (pg_idgen.max_drift_ms: {} ms here, the old primary's: {}) + {} ms allowed clock skew (pg_idgen.clock_skew_ms), unless a replayed reservation reaches further (highest replayed: {}; {} of {} worker id(s) above the floor); the first ids wait until {}{}",
        fmt(floor_ms as i128),
        fmt(now as i128),
        seen,
        lead,
        local,
        old,
        skew,
        fmt(highest),
        above,
        workers,
        fmt(until as i128),
        if floor_ms.saturating_sub(local) > until {
            format!(", and are refused (55000) until {}", fmt(floor_ms.saturating_sub(local) as i128))
        } else {
            String::new()
        }
    );
}

/// Leases (`lease::worker`): the worker id was taken over from another holder whose ids all lie
/// below `until_ms` (the registry's high-water mark): this server continues at or above it. As a
/// reservation is made: WAL-logged and written to the state file first, then `reserved` and the
/// state are raised under `lock` (the state too when the reservation already covers the floor,
/// so that no id below it is issued). Called by the lease worker before it publishes the lease.
pub fn raise_floor(worker: i64, until_ms: i64) {
    let sh = shared();
    let layout = gucs::layout();
    let tick = tick_at_or_after(layout, until_ms);
    let _guard = LockGuard::acquire(sh.lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
    let Some(slot) = claim_slot_locked(sh, worker) else {
        raise(
            Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
            format!("pg_idgen can generate for at most {MAX_WORKER_SLOTS} distinct worker ids between two restarts of the server"),
            Some("Restart the server: a restart frees the slots of worker ids whose reservation has passed."),
        );
    };
    if tick > slot.ws.reserved.load(Ordering::Acquire) {
        let until = layout.tick_to_unix_ms(tick).min(i64::MAX as i128) as i64;
        crate::wal::log_reservation(worker, until);
        persist(sh, layout, Override::Slot(slot, tick), pgrx::PgLogLevel::ERROR);
        slot.ws.reserved.store(tick, Ordering::Release);
    }
    slot.ws.state.fetch_max(state_before_tick(tick, layout.sequence_bits), Ordering::AcqRel);
}

/// Leases: Unix ms below which every id of `worker` this server ever issued lies: its slot's
/// reservation end, or without a slot the floor. A worker id without a slot may still have ids:
/// at a (crash) restart a reservation that has passed is folded into the floor (`load_from_disk`),
/// and WAL redo from a checkpoint after it does not bring the slot back.
pub fn reserved_until_ms(worker: i64) -> i64 {
    let sh = shared();
    let layout = gucs::layout();
    sh.slots
        .iter()
        .find(|s| s.worker_id.load(Ordering::Acquire) == worker)
        .map(|s| layout.tick_to_unix_ms(s.ws.reserved.load(Ordering::Acquire)).min(i64::MAX as i128) as i64)
        .unwrap_or_else(|| sh.floor_ms.load(Ordering::Acquire))
}

/// The cut-over to a new cluster (`pg_idgen_state_export`): per worker id with a slot, the Unix
/// ms below which every id of it this server issued lies (its reservation, or the reservation
/// written and waiting for synchronous standbys if further), and the floor (`None`): the bound of
/// the worker ids without a slot. Read without `lock`: each value only grows, and a value read
/// covers every id issued before the read.
pub fn marks() -> Vec<(Option<i64>, i64)> {
    let sh = shared();
    let layout = gucs::layout();
    let mut out: Vec<(Option<i64>, i64)> = sh
        .slots
        .iter()
        .filter_map(|s| {
            let w = s.worker_id.load(Ordering::Acquire);
            (w >= 0).then(|| {
                let tick = s.ws.reserved.load(Ordering::Acquire).max(s.pending_end.load(Ordering::Acquire));
                (Some(w), layout.tick_to_unix_ms(tick).clamp(0, i64::MAX as i128) as i64)
            })
        })
        .collect();
    out.sort();
    out.push((None, sh.floor_ms.load(Ordering::Acquire)));
    out
}

/// The cut-over to a new cluster (`pg_idgen_state_import`): ids of worker ids this server has no
/// slot for may lie below `until_ms` (the old cluster's floor). Raises the floor every newly
/// claimed slot starts at (the state file first, under `lock`), then every claimed slot as
/// `raise_floor` does (WAL, state file, memory).
pub fn raise_floor_all(until_ms: i64) {
    let sh = shared();
    let layout = gucs::layout();
    let claimed: Vec<i64> = {
        let _guard = LockGuard::acquire(sh.lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        if until_ms > sh.floor_ms.load(Ordering::Acquire) {
            persist(sh, layout, Override::Floor(until_ms), pgrx::PgLogLevel::ERROR);
            sh.floor_ms.store(until_ms, Ordering::Release);
        }
        sh.slots.iter().map(|s| s.worker_id.load(Ordering::Acquire)).filter(|&w| w >= 0).collect()
    };
    for w in claimed {
        raise_floor(w, until_ms);
    }
}

/// The cut-over to a new cluster (`pg_idgen_state_import`, before it raises any floor): a slot
/// for every worker id of `workers` that has none here, all or none, under `lock`. Ok: how many
/// were claimed. Err((needed, free)): fewer slots are free than worker ids need one, and nothing
/// was claimed (a slot once claimed is only freed by a restart).
pub fn claim_slots(workers: &[i64]) -> Result<usize, (usize, usize)> {
    let sh = shared();
    let _guard = LockGuard::acquire(sh.lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
    let mut missing: Vec<i64> = workers
        .iter()
        .copied()
        .filter(|&w| !sh.slots.iter().any(|s| s.worker_id.load(Ordering::Acquire) == w))
        .collect();
    missing.sort_unstable();
    missing.dedup();
    let free = sh.slots.iter().filter(|s| s.worker_id.load(Ordering::Acquire) == -1).count();
    if missing.len() > free {
        return Err((missing.len(), free));
    }
    for &w in &missing {
        claim_slot_locked(sh, w);
    }
    Ok(missing.len())
}

/// Confirms the server's layout after a layout change: rewrites the state file with it.
pub fn accept_layout() -> bool {
    let sh = shared();
    let layout = gucs::layout();
    let _guard = LockGuard::acquire(sh.lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
    let was = sh.layout_mismatch.load(Ordering::Relaxed);
    set_persisted_layout(sh, &layout.canonical());
    persist(sh, layout, Override::None, pgrx::PgLogLevel::ERROR);
    sh.layout_mismatch.store(false, Ordering::Relaxed);
    was
}

/// Fills freshly created shared memory from the state file (postmaster, before any backend), and
/// registers the write at a clean shutdown.
pub(crate) fn load_from_disk(sh: &Shared) {
    let layout = gucs::layout();
    let Some(state) = state_file::read() else {
        // SAFETY: a flag the postmaster set from its options (-b) before preloading libraries.
        if unsafe { pg_sys::IsBinaryUpgrade } {
            // pg_upgrade starts the new cluster with -b before its first real start; without a
            // state file this is the new cluster, and the old cluster's state (pg_upgrade copies
            // relations, not pg_idgen/) is still to be copied. The file written now says so: a
            // normal start refuses snowflake ids until the old file replaces it (or the operator
            // accepts going without it, snowflake_accept_layout()).
            set_persisted_layout(sh, UPGRADE_WITHOUT_STATE);
            sh.layout_mismatch.store(true, Ordering::Relaxed);
            pgrx::log!(
                "pg_idgen: started by pg_upgrade without a generator state file: snowflake ids will be refused on this cluster until pg_idgen/snowflake.state of the old cluster is copied here"
            );
        } else {
            set_persisted_layout(sh, &layout.canonical());
        }
        persist(sh, layout, Override::None, pgrx::PgLogLevel::ERROR);
        register_exit_write();
        return;
    };
    set_persisted_layout(sh, &state.layout);
    if state.layout != layout.canonical() {
        sh.layout_mismatch.store(true, Ordering::Relaxed);
        pgrx::log!(
            "pg_idgen: state file was written with layout \"{}\", server runs \"{}\"; snowflake_next() is refused until snowflake_accept_layout()",
            state.layout,
            layout.canonical()
        );
    }
    // Worker ids whose reservation has passed need no slot: their ids are all in the past, so
    // the floor (the latest of those reservations) keeps any later id above them. Only worker
    // ids with a reservation still ahead of the clock get a slot back.
    let now = crate::clock::now_unix_ms();
    let mut floor = state.floor_ms;
    let mut kept = 0;
    for &(worker, until_ms) in &state.workers {
        let slot = (until_ms > now).then(|| claim_slot_locked(sh, worker)).flatten();
        match slot {
            Some(slot) => {
                let tick = tick_at_or_after(layout, until_ms);
                slot.ws.state.store(state_before_tick(tick, layout.sequence_bits), Ordering::Relaxed);
                slot.ws.reserved.store(tick, Ordering::Relaxed);
                kept += 1;
            }
            None => floor = floor.max(until_ms),
        }
    }
    sh.floor_ms.store(floor, Ordering::Relaxed);
    pgrx::log!(
        "pg_idgen: generator state loaded: {} worker id(s) with a reservation ahead, {} folded into the floor {}",
        kept,
        state.workers.len() - kept,
        pg_idgen_core::layout::format_unix_ms(floor as i128)
    );
    register_exit_write();
}

/// A value the state file must carry that shared memory does not hold yet.
enum Override<'a> {
    None,
    Slot(&'a Slot, u64),
    Floor(i64),
}

/// Writes the state file from shared memory (plus `over`): for each worker, the Unix ms below
/// which its ids may have been issued, and the floor. See `state_file::write` for `elevel`.
fn persist(sh: &Shared, layout: &Layout, over: Override<'_>, elevel: pgrx::PgLogLevel) -> bool {
    let mut state = StateFile {
        layout: persisted_layout(sh),
        floor_ms: sh.floor_ms.load(Ordering::Acquire),
        workers: Vec::new(),
    };
    for slot in sh.slots.iter() {
        let w = slot.worker_id.load(Ordering::Acquire);
        if w < 0 {
            continue;
        }
        let tick = match over {
            Override::Slot(s, end) if std::ptr::eq(s, slot) => end,
            _ => slot.ws.reserved.load(Ordering::Acquire),
        }
        .max(slot.pending_end.load(Ordering::Acquire));
        state
            .workers
            .push((w, layout.tick_to_unix_ms(tick).clamp(i64::MIN as i128, i64::MAX as i128) as i64));
    }
    if let Override::Floor(ms) = over {
        state.floor_ms = state.floor_ms.max(ms);
    }
    state_file::write(&state, elevel)
}

/// At a clean postmaster shutdown no backend runs: record for each worker the tick just after
/// its last issued id, so a restart does not jump ahead by the reservation. Not after a crash
/// (`code != 0`, the crash-restart cycle): shared memory is then not trusted, as
/// pg_stat_statements refuses to dump it; the file already covers every id issued.
#[pg_guard]
unsafe extern "C-unwind" fn persist_at_exit(code: i32, _arg: pg_sys::Datum) {
    // SAFETY: runs in the postmaster (IsUnderPostmaster is false) with no backend left.
    unsafe {
        if code != 0 || pg_sys::IsUnderPostmaster || SHARED.is_null() {
            return;
        }
        let sh = &*SHARED;
        let layout = gucs::layout();
        let any = sh.slots.iter().any(|s| s.worker_id.load(Ordering::Acquire) >= 0);
        if !any || sh.layout_mismatch.load(Ordering::Relaxed) {
            return; // nothing to record, or keep the file as the operator must see it
        }
        // The end-of-recovery floor raised `state` only: a restart right after a promotion
        // must keep it, ids issued or not (the old primary's may lie up to there).
        let recovery_floor = tick_at_or_after(layout, sh.recovery_floor_ms.load(Ordering::Acquire));
        for slot in sh.slots.iter().filter(|s| s.worker_id.load(Ordering::Acquire) >= 0) {
            let last = state_tick(slot.ws.state.load(Ordering::Acquire), layout.sequence_bits);
            let reserved = slot.ws.reserved.load(Ordering::Acquire);
            let end = (last + 1).min(reserved).max(recovery_floor.min(last + 1));
            slot.ws.reserved.store(end, Ordering::Release);
            slot.pending_end.store(0, Ordering::Relaxed);
        }
        // Unused slots claimed after recovery start at the floor too.
        if sh.recovery_floor_ms.load(Ordering::Acquire) > sh.floor_ms.load(Ordering::Acquire) {
            sh.floor_ms.store(sh.recovery_floor_ms.load(Ordering::Acquire), Ordering::Release);
        }
        persist(sh, layout, Override::None, pgrx::PgLogLevel::LOG);
        SHARED = std::ptr::null_mut();
    }
}

/// Registers the clean-shutdown write (`persist_at_exit`) in the postmaster.
fn register_exit_write() {
    // SAFETY: called once in the postmaster when shared memory is created.
    unsafe { pg_sys::on_shmem_exit(Some(persist_at_exit), pg_sys::Datum::from(0)) };
}
