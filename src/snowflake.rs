//! `snowflake_next()` and its statistics: the server side of `pg_idgen_core::next_id`.

use std::cell::RefCell;
use std::sync::atomic::Ordering;

use pg_idgen_core::generator::state_tick;
use pg_idgen_core::{next_id_fenced, Clock, LocalState};
use pgrx::prelude::*;

use crate::clock::{monotonic_ms, ms_to_timestamptz, now_unix_ms};
use crate::errors::{self, raise, Code};
use crate::{gucs, shmem};
use pgrx::pg_sys;

/// The system clock (`CLOCK_REALTIME`, which is what libfaketime shifts in the tests).
struct PgClock;

impl Clock for PgClock {
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

thread_local! {
    static LOCAL: RefCell<LocalState> = RefCell::new(LocalState::new(
        (std::process::id() as u64) << 32 ^ now_unix_ms() as u64,
    ));
}

fn check_layout_confirmed(sh: &shmem::Shared) {
    if sh.layout_mismatch.load(Ordering::Relaxed)
        && shmem::persisted_layout(sh) == shmem::UPGRADE_WITHOUT_STATE
    {
        raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "cannot generate snowflake ids: pg_upgrade made this cluster, and the old cluster's generator state (pg_idgen/snowflake.state) has not been copied here",
            Some("Ids could repeat the old cluster's. Stop this server, copy pg_idgen/snowflake.state from the old cluster's data directory into this one's pg_idgen/ directory, and start it again (docs/operations.md, \"Upgrading PostgreSQL\"). Only if the old data directory is lost: once this server's clock is past the old cluster's last id (plus pg_idgen.max_drift_ms), SELECT snowflake_accept_layout() as a superuser."),
        );
    }
    if sh.layout_mismatch.load(Ordering::Relaxed) {
        raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "pg_idgen.layout changed: the persisted generator state was made with layout \"{}\", the server now runs \"{}\"",
                shmem::persisted_layout(sh),
                gucs::layout().canonical()
            ),
            Some("Ids of two layouts can collide. Restore the old pg_idgen.layout, or, if no ids of the old layout can collide with new ones, run SELECT snowflake_accept_layout() as a superuser."),
        );
    }
}

/// After recovery the generators continue at the recovery floor, up to max_drift_ms +
/// clock_skew_ms ahead of the clock (`shmem::apply_recovery_floor`): the first calls wait until
/// that lead is within max_drift_ms again, so that ids of this server keep the bound a later
/// promotion of another server relies on. Interruptible; one atomic load once it has passed.
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

/// A call refused because the generator is too far ahead of the clock: when that is because this
/// server was promoted with its clock behind the old primary's (the lead the WAL receiver saw,
/// `shmem::apply_recovery_floor`), says so and until when; otherwise the general refusal.
fn refuse_behind_old_primary(sh: &shmem::Shared, e: pg_idgen_core::GenError) -> ! {
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

/// The next snowflake id of this session's worker id.
#[pg_extern(volatile, parallel_unsafe)]
fn snowflake_next() -> i64 {
    let sh = shmem::shared();
    if unsafe { pgrx::pg_sys::RecoveryInProgress() } {
        raise(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            "cannot generate snowflake ids during recovery",
            Some("Ids are generated on the primary. A promoted standby continues above every id the primary reserved, as received through WAL."),
        );
    }
    check_layout_confirmed(sh);
    wait_for_recovery_floor(sh);
    // The configured worker id, or with leases the leased one while its lease is valid.
    let worker = crate::lease::generation_worker(crate::worker::configured());
    let layout = gucs::layout();
    let slot = shmem::slot_for(worker);
    let issued = LOCAL.with(|local| {
        let mut local = local.borrow_mut();
        next_id_fenced(
            &slot.ws,
            layout,
            worker as u64,
            gucs::policy(),
            &PgClock,
            &mut local,
            |tick| shmem::extend_reservation(slot, layout, tick, now_unix_ms(), true),
            // With a lease, checked again after the id's time is fixed: the call may have waited
            // (reservation, lock queue, the clock) since generation_worker() checked it.
            |tick| crate::lease::still_valid(worker, tick),
        )
    });
    let issued = issued.unwrap_or_else(|e| match e {
        pg_idgen_core::GenError::Fenced { tick } => crate::lease::lost_while_generating(worker, tick),
        pg_idgen_core::GenError::TooFarAhead { .. } => refuse_behind_old_primary(sh, e),
        e => errors::gen_error(e),
    });
    if let Some(back) = issued.step_back_ms {
        errors::warn(
            format!("pg_idgen: the system clock stepped back by {back} ms; ids continue from the generator's own clock"),
            Some("Check NTP on this server. Ids stay unique and increasing while the step back is within pg_idgen.max_drift_ms."),
        );
    }
    if issued.reserve_soon {
        shmem::extend_reservation(slot, layout, issued.parts.time, now_unix_ms(), false);
    }
    issued.id
}

/// `snowflake_next()` as decimal text: for JSON payloads and APIs whose clients read numbers as
/// IEEE 754 doubles (JavaScript), which round integers above 2^53 − 1. The same id, the same
/// errors; `'…'::bigint` reads it back.
#[pg_extern(volatile, parallel_unsafe)]
fn snowflake_next_text() -> String {
    snowflake_next().to_string()
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
    until_ms > now
}

/// How far ahead of this server's clock `pg_idgen_snowflake_raise_floor` accepts a floor.
const MAX_FLOOR_AHEAD_MS: i64 = 3_600_000;
