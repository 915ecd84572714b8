//! `snowflake_next()` and its statistics: the server side of `pg_idgen_core::next_id`.

use std::sync::atomic::Ordering;

use pg_idgen_core::generator::{next_id_fast, next_id_uncounted, state_tick};
use pg_idgen_core::{Clock, LocalState};
use pgrx::prelude::*;

use crate::clock::{monotonic_ms, ms_to_timestamptz, now_unix_ms};
use crate::errors::{self, raise, Code};
use crate::{gucs, shmem};
use pgrx::pg_sys;

/// The system clock (`CLOCK_REALTIME`, which is what libfaketime shifts in the tests).
struct PgClock;

impl Clock for PgClock {
    #[inline(always)]
    fn now_ms(&self) -> i64 {
        now_unix_ms()
    }

    fn wait_until(&self, target_ms: i64, max_ms: i64) {
        // The deadline is on the monotonic clock: a step of the system clock during the wait
        // cannot stretch it past pg_idgen.max_wait_ms.
        let deadline = monotonic_ms() + max_ms;
        loop {
            let now = self.now_ms();
            let left = (target_ms - now).min(deadline - monotonic_ms());
            if left <= 0 {
                return;
            }
            if left > 1 {
                // Sleep on the latch: interruptible, ends on postmaster death, and shown in
                // pg_stat_activity as an Extension wait. Nothing is held here.
                // SAFETY: MyLatch is the backend's own latch.
                unsafe {
                    pg_sys::WaitLatch(
                        pg_sys::MyLatch,
                        (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
                        left - 1,
                        pg_sys::PG_WAIT_EXTENSION,
                    );
                    pg_sys::ResetLatch(pg_sys::MyLatch);
                }
                pgrx::check_for_interrupts!();
            } else {
                std::hint::spin_loop();
            }
        }
    }
}

/// What a backend keeps between calls of `snowflake_next()`. A backend is single-threaded and
/// only the generator's calls touch it (none of them re-enters another), so it is a plain static:
/// no thread-local lookup and no borrow flag on the hot path.
struct Hot {
    /// `RecoveryInProgress()` returned false once: it never returns true again in this process
    /// (a backend started during recovery sees it end once; a new recovery restarts every backend).
    recovery_done: bool,
    /// The random start values' xorshift state (0 until the first call seeds it).
    local: LocalState,
    /// Ids issued by this backend not yet added to `pending_slot`'s `ids_issued` counter: added
    /// by the call that issues the first id of a tick, at the end of each transaction
    /// (`flush_at_xact_end`), before this backend reads the statistics, and when the backend
    /// generates for another worker id. One atomic add per tick instead of one per id.
    pending: u64,
    pending_slot: *const shmem::Slot,
    /// `flush_at_xact_end` is registered (once per backend).
    xact_callback: bool,
}

static mut HOT: Hot = Hot {
    recovery_done: false,
    local: LocalState { rng: 0 },
    pending: 0,
    pending_slot: std::ptr::null(),
    xact_callback: false,
};

/// Adds the ids this backend counted to their slot's `issued` counter.
#[inline]
fn flush_issued(hot: &mut Hot) {
    if hot.pending > 0 {
        // SAFETY: `pending` > 0 only after `pending_slot` was set to a slot in shared memory,
        // which lives as long as the server (a crash restart ends this backend first).
        unsafe { (*hot.pending_slot).ws.issued.fetch_add(hot.pending, Ordering::Relaxed) };
        hot.pending = 0;
    }
}

/// Before this backend reads `ids_issued` (`snowflake_stats()`): its own ids are counted.
pub(crate) fn flush_own_issued() {
    flush_issued(hot());
}

/// At the end of every transaction (commit, abort, prepare): this backend's ids are counted, so
/// that other sessions see every id of the transactions that have ended.
#[pg_guard]
unsafe extern "C-unwind" fn flush_at_xact_end(_event: pg_sys::XactEvent::Type, _arg: *mut std::ffi::c_void) {
    flush_issued(hot());
}

/// Counts an id of `slot` in this backend; adds the count to the slot when the id is the first of
/// its tick.
#[inline]
fn count_issued(hot: &mut Hot, slot: &shmem::Slot, new_tick: bool) {
    if !std::ptr::eq(hot.pending_slot, slot) {
        new_counting_slot(hot, slot);
    }
    hot.pending += 1;
    if new_tick {
        flush_issued(hot);
    }
}

#[cold]
#[inline(never)]
fn new_counting_slot(hot: &mut Hot, slot: &shmem::Slot) {
    flush_issued(hot);
    hot.pending_slot = slot;
    if !hot.xact_callback {
        // SAFETY: registered once per backend, in TopMemoryContext's list (xact.c).
        unsafe { pg_sys::RegisterXactCallback(Some(flush_at_xact_end), std::ptr::null_mut()) };
        hot.xact_callback = true;
    }
}

/// The backend's `Hot`.
#[inline(always)]
fn hot() -> &'static mut Hot {
    let hot = &raw mut HOT;
    // SAFETY: the backend is single-threaded, and the reference does not outlive one call of
    // `next_id`, which does not re-enter itself (nothing it calls generates an id).
    unsafe { &mut *hot }
}

/// `RecoveryInProgress` without pgrx's FFI guard (a sigsetjmp per call): it reads two flags and
/// raises no error.
mod raw {
    unsafe extern "C" {
        #[link_name = "RecoveryInProgress"]
        pub fn recovery_in_progress() -> bool;
    }
}

#[cold]
#[inline(never)]
fn refuse_in_recovery() -> ! {
    raise(
        Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
        "cannot generate snowflake ids during recovery",
        Some("Ids are generated on the primary. A promoted standby continues above every id the primary reserved, as received through WAL."),
    )
}

#[cold]
#[inline(never)]
fn refuse_unconfirmed_layout(sh: &shmem::Shared) -> ! {
    if shmem::persisted_layout(sh) == shmem::UPGRADE_WITHOUT_STATE {
        raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "cannot generate snowflake ids: pg_upgrade made this cluster, and the old cluster's generator state (pg_idgen/snowflake.state) has not been copied here",
            Some("Ids could repeat the old cluster's. Stop this server, copy pg_idgen/snowflake.state from the old cluster's data directory into this one's pg_idgen/ directory, and start it again (docs/operations.md, \"Upgrading PostgreSQL\"). Only if the old data directory is lost: once this server's clock is past the old cluster's last id (plus pg_idgen.max_drift_ms), SELECT snowflake_accept_layout() as a superuser."),
        );
    }
    raise(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!(
            "pg_idgen.layout changed: the persisted generator state was made with layout \"{}\", the server now runs \"{}\"",
            shmem::persisted_layout(sh),
            gucs::layout().canonical()
        ),
        Some("Ids of two layouts can collide. Restore the old pg_idgen.layout, or, if no ids of the old layout can collide with new ones, run SELECT snowflake_accept_layout() as a superuser."),
    )
}

/// After recovery the generators continue at the recovery floor, up to max_drift_ms +
/// clock_skew_ms ahead of the clock (`shmem::apply_recovery_floor`): the first calls wait until
/// that lead is within max_drift_ms again, so that ids of this server keep the bound a later
/// promotion of another server relies on. Interruptible; once it has passed, `next_id` sees the
/// word 0 and does not call this.
#[cold]
#[inline(never)]
fn wait_for_recovery_floor(sh: &shmem::Shared) {
    let until = sh.recovery_wait_until_ms.load(Ordering::Acquire);
    if until == 0 {
        return;
    }
    let now = now_unix_ms();
    if now >= until {
        let _ = sh.recovery_wait_until_ms.compare_exchange(until, 0, Ordering::AcqRel, Ordering::Relaxed);
        return;
    }
    PgClock.wait_until(until, until - now);
}

/// A call refused because the generator is too far ahead of the clock: when that is because
/// `pg_idgen_state_import` raised the floor ahead of this server's clock, or because this server
/// was promoted with its clock behind the old primary's (the lead the WAL receiver saw,
/// `shmem::apply_recovery_floor`), says so and until when; otherwise the general refusal.
fn refuse_behind_old_primary(sh: &shmem::Shared, e: pg_idgen_core::GenError) -> ! {
    let imported = sh.import_floor_ms.load(Ordering::Acquire);
    if imported > 0 {
        let until = floor_usable_at_ms(imported);
        if now_unix_ms() < until {
            raise(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!(
                    "cannot generate an id: {e}: pg_idgen_state_import() moved this server's generator above the old cluster's reservation, which ends at {}; ids are refused until this server's clock reads {}",
                    crate::clock::fmt_ms(imported as i128),
                    crate::clock::fmt_ms(until as i128)
                ),
                Some("Retry later: ids resume by themselves, above every id of the old cluster. The import waits for this before it returns (up to 10 s): move the writers once it has returned; a floor further ahead means the old cluster's clock is ahead of this one's (check NTP on both)."),
            );
        }
    }
    let observed = sh.recovery_observed_lead_ms.load(Ordering::Acquire);
    let until = sh.recovery_floor_ms.load(Ordering::Acquire).saturating_sub(gucs::max_drift_ms());
    if observed > 0 && now_unix_ms() < until {
        raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "cannot generate an id: {e}: this server was promoted with its clock {observed} ms behind the old primary's, whose ids may reach {}; ids are refused until this server's clock reads {}",
                crate::clock::fmt_ms(sh.recovery_floor_ms.load(Ordering::Acquire) as i128),
                crate::clock::fmt_ms(until as i128)
            ),
            Some("Retry later: ids resume by themselves, above every id the old primary may have handed out. Fix the clocks (NTP): the WAL receiver saw the old primary's clock ahead of this one's."),
        );
    }
    errors::gen_error(e)
}

crate::fmgr::pg_function_info_v1!(pg_finfo_pg_idgen_snowflake_next);

/// `snowflake_next() RETURNS bigint`: the next snowflake id of this session's worker id. A plain
/// V1 function (declared in `sql/snowflake.sql`): no pgrx argument or memory-context handling.
/// The common case (`fast_next`) cannot raise an error, so it runs without pgrx's error guard;
/// every other case runs the full path (`next_id`) under it.
#[unsafe(no_mangle)]
pub unsafe extern "C-unwind" fn pg_idgen_snowflake_next(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    match fast_next() {
        Some(id) => pg_sys::Datum::from(id),
        // SAFETY: the same call frame, passed on unchanged.
        None => unsafe { snowflake_next_full(fcinfo) },
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn snowflake_next_full(_fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    pg_sys::Datum::from(next_id())
}

/// The common case of `next_id`, or `None` (nothing issued, nothing changed but the clock
/// watermark) when the call needs the full path: the first call of the backend (it checks
/// recovery, finds the slot, seeds the generator, registers the count's flush), a layout not
/// confirmed, the wait after recovery, leases, a worker id from the table, and everything
/// `pg_idgen_core::generator::next_id_fast` declines (a step back, a wait, a reservation).
/// Calls nothing that can raise an error: two shared loads and the settings, then one clock read
/// and one compare-and-swap on the generator's word.
#[inline(always)]
fn fast_next() -> Option<i64> {
    let hot = hot();
    if !hot.recovery_done || hot.pending_slot.is_null() {
        return None;
    }
    let sh = shmem::shared_if_attached()?;
    if sh.layout_mismatch.load(Ordering::Relaxed) || sh.recovery_wait_until_ms.load(Ordering::Acquire) != 0 {
        return None;
    }
    if !gucs::lease_mode_is_off() {
        return None;
    }
    // the worker id of the setting only: with worker_id_source = citus the full path takes the
    // node's Citus group and refuses a session's SET of pg_idgen.worker_id
    if !matches!(gucs::worker_id_source(), gucs::WorkerIdSource::Default) {
        return None;
    }
    let worker = gucs::worker_id_setting()? as i64;
    let slot = shmem::cached_slot(worker)?;
    if !std::ptr::eq(slot, hot.pending_slot) {
        return None;
    }
    let layout = gucs::layout_if_parsed()?;
    let policy = gucs::policy_if_known()?;
    let issued = next_id_fast(&slot.ws, layout, worker as u64, policy, now_unix_ms(), &mut hot.local)?;
    count_issued(hot, slot, issued.new_tick);
    Some(issued.id)
}

crate::fmgr::pg_function_info_v1!(pg_finfo_pg_idgen_snowflake_next_text);

/// `snowflake_next_text() RETURNS text`: `snowflake_next()` as decimal text, for JSON payloads
/// and APIs whose clients read numbers as IEEE 754 doubles (JavaScript), which round integers
/// above 2^53 − 1. The same id, the same errors; `'…'::bigint` reads it back.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn pg_idgen_snowflake_next_text(
    _fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    let id = next_id();
    // at most 19 digits: ids are never negative
    let mut digits = [0u8; 20];
    let mut n = id as u64;
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // SAFETY: a text datum of the digits, palloc'd in the caller's memory context.
    unsafe { pg_sys::Datum::from(crate::fmgr::text_from_bytes(&digits[at..])) }
}

/// The next snowflake id of this session's worker id, in this order: not in recovery, the
/// layout confirmed, the wait after recovery passed, the worker id (with leases: the leased one
/// while its lease is valid), then `pg_idgen_core::next_id_fenced` (the clock read, the drift
/// bound, the durable reservation ahead, with leases the fence, the compare-and-swap).
/// In the steady state: a clock read, two shared loads besides the generator's own cache line,
/// one compare-and-swap; the id is counted in the backend (`count_issued`).
#[inline(always)]
pub fn next_id() -> i64 {
    let hot = hot();
    if !hot.recovery_done {
        // SAFETY: a plain read of the startup state, callable in any backend.
        if unsafe { raw::recovery_in_progress() } {
            refuse_in_recovery();
        }
        hot.recovery_done = true;
    }
    let sh = shmem::shared();
    if sh.layout_mismatch.load(Ordering::Relaxed) {
        refuse_unconfirmed_layout(sh);
    }
    if sh.recovery_wait_until_ms.load(Ordering::Acquire) != 0 {
        wait_for_recovery_floor(sh);
    }
    // The configured worker id, or with leases the leased one while its lease is valid.
    let leased = gucs::lease_mode() != gucs::LeaseMode::Off;
    // With worker_id_source = citus the worker id is the node's Citus group (`worker::configured`
    // takes it, and refuses a pg_idgen.worker_id set beside it).
    let citus = !matches!(gucs::worker_id_source(), gucs::WorkerIdSource::Default);
    let worker = match gucs::worker_id_setting() {
        Some(w) if !leased && !citus => w as i64,
        _ if citus => crate::lease::generation_worker(crate::worker::configured()),
        setting => {
            crate::lease::generation_worker(setting.map(|w| w as i64).or_else(crate::worker::configured))
        }
    };
    let layout = gucs::layout();
    let slot = shmem::slot_for(worker);
    if hot.local.rng == 0 {
        hot.local = LocalState::new((std::process::id() as u64) << 32 ^ now_unix_ms() as u64);
    }
    let issued = next_id_uncounted(
        &slot.ws,
        layout,
        worker as u64,
        gucs::policy(),
        &PgClock,
        &mut hot.local,
        |tick| shmem::extend_reservation(slot, layout, tick, now_unix_ms(), true),
        // With a lease, checked again after the id's time is fixed: the call may have waited
        // (reservation, lock queue, the clock) since generation_worker() checked it.
        |tick| !leased || crate::lease::still_valid(worker, tick),
    );
    let issued = match issued {
        Ok(i) => i,
        Err(e) => refuse(sh, worker, e),
    };
    count_issued(hot, slot, issued.new_tick);
    if let Some(back) = issued.step_back_ms {
        warn_step_back(back);
    }
    if issued.reserve_soon {
        shmem::extend_reservation(slot, layout, issued.parts.time, now_unix_ms(), false);
    }
    issued.id
}

#[cold]
#[inline(never)]
fn refuse(sh: &shmem::Shared, worker: i64, e: pg_idgen_core::GenError) -> ! {
    match e {
        pg_idgen_core::GenError::Fenced { tick } => crate::lease::lost_while_generating(worker, tick),
        pg_idgen_core::GenError::TooFarAhead { .. } => refuse_behind_old_primary(sh, e),
        e => errors::gen_error(e),
    }
}

#[cold]
#[inline(never)]
fn warn_step_back(back: i64) {
    errors::warn(
        format!("pg_idgen: the system clock stepped back by {back} ms; ids continue from the generator's own clock"),
        Some("Check NTP on this server. Ids stay unique and increasing while the step back is within pg_idgen.max_drift_ms."),
    );
}

/// Per worker id: ids issued since start, the logical clock and its lead over the system clock,
/// the durable reservation, clock steps back seen, sequence exhaustions and waits. Superusers and
/// members of pg_read_all_stats see every worker id of the instance (as pg_stat_statements shows
/// every row to them); other roles see only the worker id their own session generates with.
#[pg_extern(volatile, parallel_restricted)]
#[allow(clippy::type_complexity)]
fn snowflake_stats() -> TableIterator<
    'static,
    (
        name!(worker_id, i64),
        name!(ids_issued, i64),
        name!(logical_time, Option<TimestampWithTimeZone>),
        name!(lead_ms, Option<i64>),
        name!(reserved_until, Option<TimestampWithTimeZone>),
        name!(steps_back, i64),
        name!(exhaustions, i64),
        name!(waits, i64),
    ),
> {
    let sh = shmem::shared();
    flush_own_issued();
    let layout = gucs::layout();
    let now = now_unix_ms();
    let visible: Option<i64> = if crate::catalog::can_read_all_stats() {
        None
    } else {
        Some(crate::worker::resolve_quietly().unwrap_or(-1))
    };
    let mut rows: Vec<_> = sh
        .slots
        .iter()
        .filter_map(|s| {
            let w = s.worker_id.load(Ordering::Acquire);
            (w >= 0 && visible.is_none_or(|v| v == w)).then_some((w, s))
        })
        .map(|(w, s)| {
            let ws = &s.ws;
            let issued = ws.issued.load(Ordering::Relaxed) as i64;
            let tick_ms =
                layout.tick_to_unix_ms(state_tick(ws.state.load(Ordering::Acquire), layout.sequence_bits));
            let reserved_ms = layout.tick_to_unix_ms(ws.reserved.load(Ordering::Acquire));
            let logical = (tick_ms >= layout.epoch_ms as i128).then_some(tick_ms as i64);
            (
                w,
                issued,
                logical.map(ms_to_timestamptz),
                logical.map(|l| l - now),
                Some(ms_to_timestamptz(reserved_ms as i64)),
                ws.steps_back.load(Ordering::Relaxed) as i64,
                ws.exhaustions.load(Ordering::Relaxed) as i64,
                ws.waits.load(Ordering::Relaxed) as i64,
            )
        })
        .collect();
    rows.sort_by_key(|r| r.0);
    TableIterator::new(rows)
}

/// After a change of `pg_idgen.layout`, confirms the new layout (superuser only). Returns
/// whether the persisted state had been made with another layout.
#[pg_extern(volatile, parallel_unsafe)]
fn snowflake_accept_layout() -> bool {
    if !unsafe { pgrx::pg_sys::superuser() } {
        raise(
            Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "permission denied to confirm pg_idgen.layout",
            Some("Only a superuser can run snowflake_accept_layout()."),
        );
    }
    let upgraded = shmem::persisted_layout(shmem::shared()) == shmem::UPGRADE_WITHOUT_STATE;
    let changed = shmem::accept_layout();
    if changed && !upgraded {
        crate::layouts::warn_dependents_of_server_layout();
    }
    changed
}

fn require_superuser_for(what: &str) {
    // SAFETY: reads the current role.
    if !unsafe { pg_sys::superuser() } {
        raise(
            Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("permission denied to {what}"),
            Some("Only a superuser can carry pg_idgen's state between clusters (pg_idgen_state_export, pg_idgen_state_import)."),
        );
    }
}

/// The cut-over to a new cluster (read by `pg_idgen_state_export`, superuser only): per worker id
/// this server generated for since its start, the Unix ms below which all of its ids lie (its
/// durable reservation); and one row with a NULL worker id, the floor: the bound of every other
/// worker id's ids (reservations folded at the last start).
#[pg_extern(volatile, parallel_unsafe)]
fn pg_idgen_snowflake_marks() -> TableIterator<'static, (name!(worker_id, Option<i64>), name!(until_ms, i64))>
{
    require_superuser_for("read the snowflake marks");
    TableIterator::new(shmem::marks())
}

/// The cut-over to a new cluster (called by `pg_idgen_state_import`, superuser only): every id of
/// `worker_id` this server hands out from now on lies at or above `until_ms` (Unix ms), durably
/// (WAL and state file before memory, as a reservation). A NULL worker id raises the floor: every
/// worker id, claimed already or later. Only raises; returns whether `until_ms` was ahead of the
/// clock (the next ids wait or are refused while it is more than pg_idgen.max_drift_ms ahead).
#[pg_extern(volatile, parallel_unsafe)]
fn pg_idgen_snowflake_raise_floor(worker_id: Option<i64>, until_ms: Option<i64>) -> bool {
    let until_ms = crate::errors::required(until_ms, "until_ms");
    require_superuser_for("raise the snowflake floor");
    // SAFETY: a flag of this backend.
    if unsafe { pg_sys::RecoveryInProgress() } {
        raise(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            "cannot raise the snowflake floor during recovery",
            Some("Run it on the primary."),
        );
    }
    // A floor far ahead would stop generation until the clock gets there (or for good, past the
    // layout's time field): nothing an old cluster handed out lies that far ahead of a sane clock.
    let now = now_unix_ms();
    if !(0..=now.saturating_add(MAX_FLOOR_AHEAD_MS)).contains(&until_ms) {
        raise(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            if until_ms < 0 {
                format!("until_ms must not be negative, got {until_ms}")
            } else {
                format!("until_ms {until_ms} lies more than an hour ahead of this server's clock")
            },
            Some("It is the time (Unix ms) below which the old cluster's ids lie, as pg_idgen_state_export() gives it; if the old cluster's clock was that far ahead, fix the clocks first."),
        );
    }
    match worker_id {
        Some(w) => {
            if !(0..=gucs::layout().max_worker() as i64).contains(&w) {
                raise(
                    Code::ERRCODE_INVALID_PARAMETER_VALUE,
                    format!("worker id {w} is out of range for the server's layout"),
                    None,
                );
            }
            shmem::raise_floor(w, until_ms)
        }
        None => shmem::raise_floor_all(until_ms),
    }
    if until_ms > now {
        shmem::shared().import_floor_ms.fetch_max(until_ms, Ordering::AcqRel);
        wait_until_floor_usable(until_ms);
    }
    until_ms > now
}

/// The cut-over to a new cluster (called by `pg_idgen_state_import`, superuser only, before it
/// raises any floor): a worker-id slot for every worker id of `worker_ids` that has none here,
/// all or none: when fewer slots are free, 53400 and no slot is taken (a slot is only freed by a
/// restart). Returns how many slots were claimed.
#[pg_extern(volatile, parallel_unsafe)]
fn pg_idgen_snowflake_claim_slots(worker_ids: Option<Vec<Option<i64>>>) -> i32 {
    let worker_ids = crate::errors::required(worker_ids, "worker_ids");
    require_superuser_for("claim worker-id slots");
    let max = gucs::layout().max_worker() as i64;
    let mut ids = Vec::with_capacity(worker_ids.len());
    for w in worker_ids {
        match w {
            Some(w) if (0..=max).contains(&w) => ids.push(w),
            Some(w) => raise(
                Code::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("worker id {w} is out of range for the server's layout"),
                None,
            ),
            None => raise(Code::ERRCODE_NULL_VALUE_NOT_ALLOWED, "worker_ids must not contain NULL", None),
        }
    }
    match shmem::claim_slots(&ids) {
        Ok(n) => n as i32,
        Err((needed, free)) => raise(
            Code::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
            format!(
                "the state names {needed} worker ids without a worker-id slot here, and only {free} of the {} worker-id slots of this instance are free; no slot was taken",
                shmem::MAX_WORKER_SLOTS
            ),
            Some("A restart frees the slots of worker ids whose reservation has passed; or import into an instance that generated with fewer worker ids."),
        ),
    }
}

/// How far ahead of this server's clock `pg_idgen_snowflake_raise_floor` accepts a floor.
const MAX_FLOOR_AHEAD_MS: i64 = 3_600_000;

/// Longest the import waits for this server's clock to make an imported floor usable. With the
/// same settings on both clusters an old cluster that ran ahead of its clock (a bulk load) leaves
/// its reservation at most about max_drift_ms + reserve_ms past the clock (2 s by default): a
/// floor further ahead means the clocks differ, and the import warns instead of waiting.
const MAX_IMPORT_WAIT_MS: i64 = 10_000;

/// The clock reading (Unix ms) from which ids continuing at the floor `until_ms` are within
/// pg_idgen.max_drift_ms of the clock: issued at once, neither waiting nor refused.
fn floor_usable_at_ms(until_ms: i64) -> i64 {
    let layout = gucs::layout();
    let first = layout.tick_to_unix_ms(shmem::tick_at_or_after(layout, until_ms)).clamp(0, i64::MAX as i128) as i64;
    pg_idgen_core::generator::recovery_wait_until_ms(first, gucs::max_drift_ms())
}

/// The cut-over: the import returns only once its floor is usable, so that no writer moved to
/// this server after it is refused (55000) or made to wait. The old cluster's reservation ends up
/// to max_drift_ms + reserve_ms past its clock after a burst that ran ahead; the first ids here
/// continue at or above it, so until this server's clock is within max_drift_ms of it every call
/// would wait, and beyond max_wait_ms fail. Waits (interruptibly: a cancel or statement_timeout
/// ends it, and the import with it; the floor stays raised) up to `MAX_IMPORT_WAIT_MS`; a floor
/// further ahead is not waited for but warned about.
fn wait_until_floor_usable(until_ms: i64) {
    let usable_at = floor_usable_at_ms(until_ms);
    let wait = usable_at.saturating_sub(now_unix_ms());
    if wait <= 0 {
        return;
    }
    if wait <= MAX_IMPORT_WAIT_MS {
        PgClock.wait_until(usable_at, wait.saturating_add(1000));
    }
    let now = now_unix_ms();
    if now < usable_at {
        errors::warn(
            format!(
                "pg_idgen: the imported snowflake floor {} lies {} ms ahead of this server's clock: snowflake_next() is refused until the clock reads {}",
                crate::clock::fmt_ms(until_ms as i128),
                until_ms.saturating_sub(now),
                crate::clock::fmt_ms(usable_at as i128)
            ),
            Some("The old cluster's clock is ahead of this one's (check NTP on both), or it ran further ahead than pg_idgen.max_drift_ms here allows. The import waits at most 10 s for the clock; ids resume by themselves, above every id of the old cluster."),
        );
    }
}
