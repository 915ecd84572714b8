//! Shared state of the snowflake generators, and its durable copy on disk. The shared-memory
//! hooks here also request and attach the segment table (`segment`), which has its own locks.
//!
//! Locking protocol (read this before touching anything below):
//!
//! * One [`Slot`] per worker id, in a fixed-capacity array in shared memory, created at
//!   postmaster start (and again after a crash restart) from the state file.
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
//!   redo (crash recovery, a standby's replay) raises `state` and `reserved` under `lock`.
//! * The state file is written only with `lock` held exclusively, or by the postmaster at exit
//!   (no backend runs then). Nothing else is done while holding `lock`: no SPI, no catalog
//!   access; an ERROR while it is held (disk full) releases it as part of abort.
//! * Statistics counters are relaxed atomics: exact counts, no ordering promised between them.

use std::cell::Cell;
use std::ffi::CString;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use pg_idgen_core::generator::{reservation_end, state_before_tick, state_tick};
use pg_idgen_core::{Layout, WorkerState};
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::errors::{raise, Code};
use crate::gucs;

/// How many distinct worker ids one instance can generate for (logical shards on one server).
pub const MAX_WORKER_SLOTS: usize = 256;
const SHMEM_NAME: &std::ffi::CStr = c"pg_idgen snowflake state";
const TRANCHE_NAME: &std::ffi::CStr = c"pg_idgen";
/// Directory under the data directory holding pg_idgen's files.
pub const STATE_DIR: &str = "pg_idgen";
const STATE_FILE: &str = "pg_idgen/snowflake.state";
const STATE_TMP: &str = "pg_idgen/snowflake.state.tmp";
const STATE_HEADER: &str = "pg_idgen snowflake state 1";

#[repr(C, align(128))]
#[derive(Default)]
pub struct Slot {
    /// Worker id owning this slot, -1 while free.
    pub worker_id: AtomicI64,
    pub ws: WorkerState,
}

#[repr(C)]
pub struct Shared {
    lock: *mut pg_sys::LWLock,
    /// The state file was written with another layout than the server's: generation refused
    /// until `snowflake_accept_layout()`.
    pub layout_mismatch: AtomicBool,
    /// Canonical text of the layout the state file was written with (NUL-padded).
    persisted_layout: [u8; 256],
    pub slots: [Slot; MAX_WORKER_SLOTS],
}

static mut SHARED: *mut Shared = std::ptr::null_mut();
static mut PREV_SHMEM_REQUEST_HOOK: pg_sys::shmem_request_hook_type = None;
static mut PREV_SHMEM_STARTUP_HOOK: pg_sys::shmem_startup_hook_type = None;

/// Set in `_PG_init` when loaded by shared_preload_libraries.
pub static PRELOADED: AtomicBool = AtomicBool::new(false);

pub fn init() {
    PRELOADED.store(true, Ordering::Relaxed);
    unsafe {
        PREV_SHMEM_REQUEST_HOOK = pg_sys::shmem_request_hook;
        pg_sys::shmem_request_hook = Some(shmem_request);
        PREV_SHMEM_STARTUP_HOOK = pg_sys::shmem_startup_hook;
        pg_sys::shmem_startup_hook = Some(shmem_startup);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn shmem_request() {
    unsafe {
        if let Some(prev) = PREV_SHMEM_REQUEST_HOOK {
            prev();
        }
        pg_sys::RequestAddinShmemSpace(std::mem::size_of::<Shared>());
        pg_sys::RequestNamedLWLockTranche(TRANCHE_NAME.as_ptr(), 1);
        crate::segment::request_shmem();
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn shmem_startup() {
    unsafe {
        if let Some(prev) = PREV_SHMEM_STARTUP_HOOK {
            prev();
        }
        let init_lock = &raw mut (*pg_sys::MainLWLockArray.add(21)).lock; // AddinShmemInitLock
        pg_sys::LWLockAcquire(init_lock, pg_sys::LWLockMode::LW_EXCLUSIVE);
        let mut found = false;
        let shared = pg_sys::ShmemInitStruct(SHMEM_NAME.as_ptr(), std::mem::size_of::<Shared>(), &mut found)
            .cast::<Shared>();
        if !found {
            // Zeroed memory is a valid `Shared` except for the free markers and the lock.
            std::ptr::write_bytes(shared.cast::<u8>(), 0, std::mem::size_of::<Shared>());
            (*shared).lock = &raw mut (*pg_sys::GetNamedLWLockTranche(TRANCHE_NAME.as_ptr())).lock;
            for slot in (*shared).slots.iter() {
                slot.worker_id.store(-1, Ordering::Relaxed);
            }
        }
        SHARED = shared;
        crate::segment::attach_shmem();
        pg_sys::LWLockRelease(init_lock);
        if !found {
            load_state_file(&*shared);
            // Persist the exact state when the postmaster exits or reinitializes after a crash.
            pg_sys::on_shmem_exit(Some(persist_at_exit), pg_sys::Datum::from(0));
        }
    }
}

/// The shared state; raises 55000 when the library was not preloaded.
pub fn shared() -> &'static Shared {
    unsafe {
        let p = SHARED;
        if p.is_null() {
            crate::errors::not_preloaded();
        }
        &*p
    }
}

fn data_dir() -> String {
    unsafe { std::ffi::CStr::from_ptr(pg_sys::DataDir).to_string_lossy().into_owned() }
}

/// A line of the state file: a worker id and the Unix ms below which its ids may have been issued.
fn parse_state(text: &str) -> Result<(String, Vec<(i64, i64)>), String> {
    let mut lines = text.lines();
    if lines.next() != Some(STATE_HEADER) {
        return Err("unknown header".into());
    }
    let layout =
        lines.next().and_then(|l| l.strip_prefix("layout ")).ok_or("missing layout line")?.to_string();
    let mut workers = Vec::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let mut f = line.split_whitespace();
        match (f.next(), f.next().map(str::parse::<i64>), f.next().map(str::parse::<i64>), f.next()) {
            (Some("worker"), Some(Ok(w)), Some(Ok(ms)), None) if w >= 0 => workers.push((w, ms)),
            _ => return Err(format!("bad line \"{line}\"")),
        }
    }
    Ok((layout, workers))
}

unsafe fn load_state_file(sh: &Shared) {
    let layout = gucs::layout();
    let path = format!("{}/{STATE_FILE}", data_dir());
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            set_persisted_layout(sh, &layout.canonical());
            return;
        }
        // Refusing to start is the only safe answer: without the file, ids could repeat.
        Err(e) => {
            raise(Code::ERRCODE_IO_ERROR, format!("could not read pg_idgen state file \"{path}\": {e}"), None)
        }
    };
    let (file_layout, workers) = parse_state(&text).unwrap_or_else(|e| {
        raise(
            Code::ERRCODE_DATA_CORRUPTED,
            format!("pg_idgen state file \"{path}\" is corrupt: {e}"),
            Some("Restore it from a backup. Deleting it lets ids restart from the current clock, which is only safe if the clock is later than every id issued."),
        )
    });
    set_persisted_layout(sh, &file_layout);
    if file_layout != layout.canonical() {
        sh.layout_mismatch.store(true, Ordering::Relaxed);
        pgrx::log!(
            "pg_idgen: state file was written with layout \"{file_layout}\", server runs \"{}\"; snowflake_next() is refused until snowflake_accept_layout()",
            layout.canonical()
        );
    }
    for (worker, until_ms) in workers {
        let Some(slot) = claim_slot_locked(sh, worker) else { break };
        // Round up to the server layout's tick: ids restart at or after that instant.
        let tick = layout.unix_ms_to_tick(until_ms.saturating_add(layout.unit_ms - 1)).max(0) as u64;
        let tick = tick.min(layout.max_time() + 1);
        slot.ws.state.store(state_before_tick(tick, layout.sequence_bits), Ordering::Relaxed);
        slot.ws.reserved.store(tick, Ordering::Relaxed);
    }
}

fn set_persisted_layout(sh: &Shared, text: &str) {
    let bytes = text.as_bytes();
    let n = bytes.len().min(255);
    // Only written at startup (no other process yet) and under `lock` by accept_layout.
    unsafe {
        let dst = (&raw const sh.persisted_layout).cast_mut().cast::<u8>();
        std::ptr::write_bytes(dst, 0, 256);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, n);
    }
}

pub fn persisted_layout(sh: &Shared) -> String {
    let end = sh.persisted_layout.iter().position(|&b| b == 0).unwrap_or(256);
    String::from_utf8_lossy(&sh.persisted_layout[..end]).into_owned()
}

/// Finds or claims the slot of `worker`. Caller holds `lock` exclusively (or is the only process).
fn claim_slot_locked(sh: &Shared, worker: i64) -> Option<&Slot> {
    if let Some(s) = sh.slots.iter().find(|s| s.worker_id.load(Ordering::Acquire) == worker) {
        return Some(s);
    }
    let free = sh.slots.iter().find(|s| s.worker_id.load(Ordering::Acquire) == -1)?;
    free.worker_id.store(worker, Ordering::Release);
    Some(free)
}

thread_local! {
    static SLOT_CACHE: Cell<(i64, usize)> = const { Cell::new((-1, 0)) };
}

/// The slot of `worker`, claimed on first use.
pub fn slot_for(worker: i64) -> &'static Slot {
    let sh = shared();
    let (cached_worker, idx) = SLOT_CACHE.with(|c| c.get());
    if cached_worker == worker {
        return &sh.slots[idx];
    }
    let found = sh.slots.iter().position(|s| s.worker_id.load(Ordering::Acquire) == worker);
    let idx = match found {
        Some(i) => i,
        None => {
            let _guard = LockGuard::exclusive(sh);
            match claim_slot_locked(sh, worker) {
                Some(s) => sh.slots.iter().position(|x| std::ptr::eq(x, s)).unwrap(),
                None => raise(
                    Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
                    format!("pg_idgen can generate for at most {MAX_WORKER_SLOTS} distinct worker ids per server"),
                    Some("Fewer logical shards per server, or restart the server to forget worker ids no longer used."),
                ),
            }
        }
    };
    SLOT_CACHE.with(|c| c.set((worker, idx)));
    &sh.slots[idx]
}

/// Holds an LWLock; released on drop, including while an ERROR unwinds. Used for the generator
/// lock here and for the segment table's locks.
pub struct LockGuard(*mut pg_sys::LWLock);

impl LockGuard {
    /// Waits for `lock` in `mode`.
    pub fn acquire(lock: *mut pg_sys::LWLock, mode: pg_sys::LWLockMode::Type) -> LockGuard {
        unsafe { pg_sys::LWLockAcquire(lock, mode) };
        LockGuard(lock)
    }
    pub fn exclusive(sh: &Shared) -> LockGuard {
        LockGuard::acquire(sh.lock, pg_sys::LWLockMode::LW_EXCLUSIVE)
    }
    pub fn try_exclusive(sh: &Shared) -> Option<LockGuard> {
        unsafe { pg_sys::LWLockConditionalAcquire(sh.lock, pg_sys::LWLockMode::LW_EXCLUSIVE) }
            .then(|| LockGuard(sh.lock))
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // After an ERROR, abort processing may already have released every LWLock.
        unsafe {
            if pg_sys::LWLockHeldByMe(self.0) {
                pg_sys::LWLockRelease(self.0);
            }
        }
    }
}

/// Extends the reservation of `slot` so that it covers `tick`. With `wait == false` it gives up
/// if another backend holds the lock (that backend is extending already).
pub fn extend_reservation(slot: &Slot, layout: &Layout, tick: u64, now_ms: i64, wait: bool) {
    let sh = shared();
    let _guard = if wait {
        LockGuard::exclusive(sh)
    } else {
        match LockGuard::try_exclusive(sh) {
            Some(g) => g,
            None => return,
        }
    };
    let current = slot.ws.reserved.load(Ordering::Acquire);
    let window = gucs::RESERVE_MS.get() as i64;
    // Re-check under the lock: another backend may have extended it meanwhile.
    let needed = if wait {
        current <= tick
    } else {
        current.saturating_sub(tick).saturating_mul(layout.unit_ms as u64 * 2) <= window as u64
    };
    if !needed {
        return;
    }
    let end = reservation_end(layout, tick.max(current), now_ms, window);
    // WAL first (crash recovery and standbys replay it), then the state file (which outlives
    // the WAL recycled after checkpoints), then the ids may be issued.
    let until_ms = layout.tick_to_unix_ms(end).min(i64::MAX as i128) as i64;
    crate::wal::log_reservation(slot.worker_id.load(Ordering::Acquire), until_ms);
    write_state_file(sh, layout, Some((slot, end)), pgrx::PgLogLevel::ERROR);
    slot.ws.reserved.store(end, Ordering::Release);
}

/// WAL redo of a reservation (startup process: crash recovery, or a standby's replay): raise the
/// worker's reservation and its state to at least `until_ms`, and persist it in the state file
/// so that a restart from a later checkpoint or restartpoint still knows it.
pub fn replay_reservation(worker: i64, until_ms: i64) {
    let sh = shared();
    let layout = gucs::layout();
    let tick = layout.unix_ms_to_tick(until_ms.saturating_add(layout.unit_ms - 1)).max(0) as u64;
    let tick = tick.min(layout.max_time() + 1);
    let _guard = LockGuard::exclusive(sh);
    let Some(slot) = claim_slot_locked(sh, worker) else {
        pgrx::warning!("pg_idgen: no free slot to replay the reservation of worker id {worker}");
        return;
    };
    if tick <= slot.ws.reserved.load(Ordering::Acquire) {
        return;
    }
    slot.ws.state.fetch_max(state_before_tick(tick, layout.sequence_bits), Ordering::AcqRel);
    slot.ws.reserved.store(tick, Ordering::Release);
    write_state_file(sh, layout, None, pgrx::PgLogLevel::WARNING);
}

/// Writes the state file: for each worker, the Unix ms below which ids may have been issued.
/// `override_slot` replaces one slot's reservation with a new, larger one. At ERROR level a
/// failure aborts the caller; at LOG level (postmaster exit) it is only logged.
fn write_state_file(
    sh: &Shared,
    layout: &Layout,
    override_slot: Option<(&Slot, u64)>,
    elevel: pgrx::PgLogLevel,
) -> bool {
    let mut text = format!("{STATE_HEADER}\nlayout {}\n", persisted_layout(sh));
    for slot in sh.slots.iter() {
        let w = slot.worker_id.load(Ordering::Acquire);
        if w < 0 {
            continue;
        }
        let tick = match override_slot {
            Some((s, end)) if std::ptr::eq(s, slot) => end,
            _ => slot.ws.reserved.load(Ordering::Acquire),
        };
        text.push_str(&format!("worker {w} {}\n", layout.tick_to_unix_ms(tick)));
    }
    let dir = format!("{}/{STATE_DIR}", data_dir());
    let tmp = format!("{}/{STATE_TMP}", data_dir());
    let path = format!("{}/{STATE_FILE}", data_dir());
    let result = std::fs::create_dir_all(&dir).and_then(|_| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()
    });
    if let Err(e) = result {
        let msg = format!("could not write pg_idgen state file \"{tmp}\": {e}");
        if elevel == pgrx::PgLogLevel::ERROR {
            raise(Code::ERRCODE_IO_ERROR, msg, None);
        }
        pgrx::log!("{msg}");
        return false;
    }
    let (ctmp, cpath) = (CString::new(tmp).unwrap(), CString::new(path).unwrap());
    // durable_rename fsyncs the file and its directory: the reservation survives a crash.
    unsafe { pg_sys::durable_rename(ctmp.as_ptr(), cpath.as_ptr(), elevel as i32) == 0 }
}

/// At postmaster exit or crash reinitialization no backend runs: record for each worker the
/// tick just after its last issued id, so a restart does not jump ahead by the reservation.
#[pg_guard]
unsafe extern "C-unwind" fn persist_at_exit(_code: i32, _arg: pg_sys::Datum) {
    unsafe {
        if pg_sys::IsUnderPostmaster || SHARED.is_null() {
            return;
        }
        let sh = &*SHARED;
        let layout = gucs::layout();
        let any = sh.slots.iter().any(|s| s.worker_id.load(Ordering::Acquire) >= 0);
        if !any || sh.layout_mismatch.load(Ordering::Relaxed) {
            return; // nothing to record, or keep the file as the operator must see it
        }
        for slot in sh.slots.iter().filter(|s| s.worker_id.load(Ordering::Acquire) >= 0) {
            let last = state_tick(slot.ws.state.load(Ordering::Acquire), layout.sequence_bits);
            let reserved = slot.ws.reserved.load(Ordering::Acquire);
            slot.ws.reserved.store((last + 1).min(reserved), Ordering::Release);
        }
        write_state_file(sh, layout, None, pgrx::PgLogLevel::LOG);
        SHARED = std::ptr::null_mut();
    }
}

/// Confirms the server's layout after a layout change: rewrites the state file with it.
pub fn accept_layout() -> bool {
    let sh = shared();
    let layout = gucs::layout();
    let _guard = LockGuard::exclusive(sh);
    let was = sh.layout_mismatch.load(Ordering::Relaxed);
    set_persisted_layout(sh, &layout.canonical());
    write_state_file(sh, layout, None, pgrx::PgLogLevel::ERROR);
    sh.layout_mismatch.store(false, Ordering::Relaxed);
    was
}
