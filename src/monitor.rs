//! The monitor: warnings ahead of time in the server log, from a background worker of its own
//! (`pg_idgen monitor`, registered at preload whatever the other settings), never from the hot
//! path. At start, then every `pg_idgen.monitor_interval` (one day; at least every hour once the
//! time field ends within 30 days), and at once after a reload, it checks
//!
//! * the layout's time field: a WARNING when it ends within `pg_idgen.warn_horizon` (one year),
//!   an urgent one (`pg_idgen: URGENT: …`) within 30 days or once it has ended;
//! * the instance's worker-id slots (`shmem`): a WARNING when 90 % or more are in use;
//! * the segment tags of one database, `pg_idgen.monitor_database` (`postgres`): a WARNING for a
//!   tag that reaches the largest bigint within the horizon at its rate since the server started
//!   (values handed out by this instance over its uptime). Tags belong to a database and a
//!   background worker connects to one database for good, so this part runs in a short-lived
//!   dynamic worker (`pg_idgen monitor tags`) connected to that database: a database that does
//!   not exist costs one FATAL line per round, not the instance checks. Tags of other databases
//!   are not checked here; their metrics are in `pg_idgen_metrics` of each database.
//!
//! The instance checks read shared memory with atomic loads only (no lock); the tag check runs
//! SQL (`segment_status`) in its own transaction with no LWLock held. Both run with
//! `pg_idgen.warn_horizon` = 0 too, and then say nothing.
//!
//! Also here: `pg_idgen_worker_slots()`, the slot count the `pg_idgen_metrics` view shows.

use std::sync::atomic::Ordering;
use std::time::Duration;

use pg_idgen_core::layout::format_unix_ms;
use pg_idgen_core::monitor::{describe_ms, runs_out_in_ms, slots_nearly_full, urgency, Urgency};
use pgrx::bgworkers::{
    BackgroundWorker, BackgroundWorkerBuilder, BgWorkerStartTime, DynamicBackgroundWorker, SignalWakeFlags,
};
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::clock::{boottime_ms, now_unix_ms};
use crate::gucs;
use crate::shmem::{self, MAX_WORKER_SLOTS};

const HOUR_MS: i64 = 3_600_000;

/// Registers the monitor worker (from `_PG_init`, while preloading).
pub fn register() {
    BackgroundWorkerBuilder::new("pg_idgen monitor")
        .set_type("pg_idgen monitor")
        .set_library("pg_idgen")
        .set_function("pg_idgen_monitor_main")
        .enable_shmem_access(None)
        // Connected to no database (shown in pg_stat_activity); the tag check has its own worker.
        .enable_spi_access()
        .set_start_time(BgWorkerStartTime::ConsistentState)
        .set_restart_time(Some(Duration::from_secs(60)))
        .load();
}

fn horizon_ms() -> i64 {
    gucs::int_setting(&gucs::WARN_HORIZON) as i64 * 1000
}

/// The time field and the worker-id slots; returns whether the time field's end is urgent.
fn check_instance() -> bool {
    let horizon = horizon_ms();
    let layout = gucs::layout();
    let end = layout.tick_to_unix_ms(layout.max_time() + 1).clamp(i64::MIN as i128, i64::MAX as i128) as i64;
    let now = now_unix_ms();
    let level = urgency(end, now, horizon);
    let what = format!(
        "the {}-bit time field of pg_idgen.layout \"{}\" ({})",
        layout.time_bits,
        layout.name,
        layout.canonical()
    );
    let hint = "snowflake_next() fails from then on. Choose a layout whose time field ends later (a later epoch, more time bits or a longer unit; SELECT * FROM snowflake_layout() shows the end), check that its ids stay above every id issued so far, and change pg_idgen.layout before then (docs/snowflake-ids.md, \"Bit layout\"; docs/monitoring.md).";
    match level {
        Urgency::None => {}
        Urgency::Warn => crate::errors::warn(
            format!(
                "pg_idgen: {what} ends in {} (at {})",
                describe_ms(end - now),
                format_unix_ms(end as i128)
            ),
            Some(hint),
        ),
        Urgency::Urgent if end <= now => crate::errors::warn(
            format!(
                "pg_idgen: URGENT: {what} ended at {}: no id can be generated",
                format_unix_ms(end as i128)
            ),
            Some(hint),
        ),
        Urgency::Urgent => crate::errors::warn(
            format!(
                "pg_idgen: URGENT: {what} ends in {} (at {})",
                describe_ms(end - now),
                format_unix_ms(end as i128)
            ),
            Some(hint),
        ),
    }
    let used = shmem::shared().slots.iter().filter(|s| s.worker_id.load(Ordering::Acquire) >= 0).count();
    if horizon > 0 && slots_nearly_full(used as u64, MAX_WORKER_SLOTS as u64) {
        crate::errors::warn(
            format!("pg_idgen: {used} of the {MAX_WORKER_SLOTS} worker-id slots of this instance are in use"),
            Some("Once all are used, snowflake_next() with a new worker id fails (54000) until a restart. Restart the server at a quiet time (a restart frees the slots of worker ids whose reservation has passed), or generate with fewer distinct worker ids per server."),
        );
    }
    // One line per round (a day by default): what was checked, for the operator and the tests.
    pgrx::log!(
        "pg_idgen monitor: checked: the time field ends in {} (warning horizon {}), {used} of {MAX_WORKER_SLOTS} worker-id slots in use",
        describe_ms(end - now),
        if horizon > 0 { describe_ms(horizon) } else { "0: warnings off".to_string() }
    );
    level == Urgency::Urgent
}

/// Starts the tag check in `pg_idgen.monitor_database`, unless it is '' or the previous one
/// still runs.
fn launch_tag_check(previous: &mut Option<DynamicBackgroundWorker>) {
    if gucs::string_setting(&gucs::MONITOR_DATABASE).trim().is_empty() || horizon_ms() <= 0 {
        return;
    }
    if previous.as_ref().is_some_and(|w| w.pid().is_ok()) {
        return;
    }
    let started = BackgroundWorkerBuilder::new("pg_idgen monitor tags")
        .set_type("pg_idgen monitor")
        .set_library("pg_idgen")
        .set_function("pg_idgen_monitor_tags_main")
        .enable_shmem_access(None)
        .enable_spi_access()
        .set_start_time(BgWorkerStartTime::ConsistentState)
        .set_restart_time(None)
        .load_dynamic();
    match started {
        Ok(w) => *previous = Some(w),
        Err(_) => pgrx::log!(
            "pg_idgen monitor: could not start the segment tag check (no free background worker slot: max_worker_processes); it is tried again at the next check"
        ),
    }
}

#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn pg_idgen_monitor_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    BackgroundWorker::connect_worker_to_spi(None, None);
    let mut next_check = 0i64;
    let mut tags: Option<DynamicBackgroundWorker> = None;
    loop {
        if BackgroundWorker::sighup_received() {
            // SAFETY: on the worker's main thread, outside any transaction, as PostgreSQL's own
            // background workers reload their configuration.
            unsafe { pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP) };
            next_check = 0; // a reload checks at once
        }
        let now = boottime_ms();
        if now >= next_check {
            let urgent = check_instance();
            launch_tag_check(&mut tags);
            let every = gucs::int_setting(&gucs::MONITOR_INTERVAL).max(1) as i64 * 1000;
            next_check = now + if urgent { every.min(HOUR_MS) } else { every };
        }
        let wait = (next_check - boottime_ms()).clamp(10, 60_000) as u64;
        if !BackgroundWorker::wait_latch(Some(Duration::from_millis(wait))) {
            break;
        }
    }
    // SAFETY: ends the worker; exit code 1 lets the postmaster restart it after a
    // pg_terminate_backend() (nothing is restarted during a shutdown).
    unsafe { pg_sys::proc_exit(1) };
}

/// The segment tags of this database that reach the largest bigint within the horizon.
#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn pg_idgen_monitor_tags_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGTERM);
    let db = gucs::string_setting(&gucs::MONITOR_DATABASE);
    BackgroundWorker::connect_worker_to_spi(Some(db.trim()), None);
    BackgroundWorker::transaction(|| check_tags(db.trim()));
}

fn check_tags(db: &str) {
    if crate::catalog::extension_namespace_and_oid().is_none() {
        return; // no pg_idgen in this database: no tags
    }
    let horizon = horizon_ms();
    let query = format!(
        "SELECT s.tag, (9223372036854775807::pg_catalog.numeric OPERATOR(pg_catalog.-) \
                COALESCE(s.persisted_hwm, 0))::pg_catalog.text, s.values_issued, \
                (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) \
                 pg_catalog.pg_postmaster_start_time()) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8 \
         FROM {}.segment_status s ORDER BY s.tag",
        crate::catalog::extension_schema()
    );
    let _path = crate::catalog::PinnedSearchPath::new();
    let rows: Vec<(String, i128, i64, i64)> = Spi::connect(|client| {
        let table = client.select(query.as_str(), None, &[])?;
        let mut rows = Vec::new();
        for row in table {
            let tag = row.get::<String>(1)?.unwrap_or_default();
            let headroom = row.get::<String>(2)?.and_then(|t| t.parse::<i128>().ok()).unwrap_or(i128::MAX);
            let issued = row.get::<i64>(3)?.unwrap_or(0);
            let uptime = row.get::<i64>(4)?.unwrap_or(0);
            rows.push((tag, headroom, issued, uptime));
        }
        Ok::<_, pgrx::spi::SpiError>(rows)
    })
    .unwrap_or_else(|e| {
        pgrx::log!("pg_idgen monitor: could not read segment_status in database \"{db}\": {e}");
        Vec::new()
    });
    let n = rows.len();
    for (tag, headroom, issued, uptime) in rows {
        let Some(left) = runs_out_in_ms(headroom, issued, uptime) else { continue };
        let level = urgency(now_unix_ms().saturating_add(left), now_unix_ms(), horizon);
        if level == Urgency::None {
            continue;
        }
        let loud = if level == Urgency::Urgent { "URGENT: " } else { "" };
        let rate = issued as f64 * 1000.0 / uptime.max(1) as f64;
        crate::errors::warn(
            format!(
                "pg_idgen: {loud}segment tag \"{tag}\" of database \"{db}\" reaches the largest bigint value in about {} at its rate since the server started ({rate:.1} values/s; {headroom} values left)",
                describe_ms(left)
            ),
            Some(&format!(
                "segment_next('{tag}') then fails (2200H). Plan the change of its consumers (a new tag, or a wider key) before then; see docs/monitoring.md."
            )),
        );
    }
    pgrx::log!("pg_idgen monitor: checked {n} segment tag(s) of database \"{db}\"");
}

/// Worker-id slots of this instance: how many are used (generated with since the start, or
/// carried over from the state file) and how many there are. Superusers and members of
/// pg_read_all_stats (pg_monitor) see the instance's count; other roles count only the slot of
/// the worker id their own session generates with, as `snowflake_stats()` shows them only that.
#[pg_extern(volatile, parallel_safe)]
fn pg_idgen_worker_slots() -> TableIterator<'static, (name!(used, i64), name!(capacity, i32))> {
    let sh = shmem::shared();
    let visible: Option<i64> = if crate::catalog::can_read_all_stats() {
        None
    } else {
        Some(crate::worker::resolve_quietly().unwrap_or(-1))
    };
    let used = sh
        .slots
        .iter()
        .map(|s| s.worker_id.load(Ordering::Acquire))
        .filter(|&w| w >= 0 && visible.is_none_or(|v| v == w))
        .count();
    TableIterator::once((used as i64, MAX_WORKER_SLOTS as i32))
}
