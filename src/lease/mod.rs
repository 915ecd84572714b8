//! Worker id leases: a node generates only while it holds a lease of its worker id in
//! a registry database, so that two live nodes can never generate with the same worker id.
//!
//! * [`worker`] — the background worker that claims, renews and releases the lease;
//! * [`registry`] — its client of the registry database (claim/renew in one statement);
//! * [`conninfo`] — `pg_idgen.registry` checked and made per-host settings, the password file;
//! * [`tls`] — TLS to the registry (rustls), libpq's `sslmode` checks;
//! * [`shmem`] — the shared word the hot path checks, and the worker's state for messages;
//! * [`slots`] — the segment slots this node holds through the registry (`registry => true`);
//! * [`marks`] — the keyed spaces' registry marks (`keyed_create(..., registry => true)`).
//!
//! This module is what backends call: [`generation_worker`] on the hot path (one atomic load and
//! a `CLOCK_BOOTTIME` read, nothing about the registry), and `snowflake_lease()`.
//! `pg_idgen.lease_mode = fixed` leases `pg_idgen.worker_id` (postgresql.conf); `auto` leases a
//! free id of `pg_idgen.lease_range`, which sessions use when they configure none. Either way an
//! id a session configured (setting or `pg_idgen_worker` row) is verified against the lease, never
//! silently replaced.

pub mod conninfo;
mod marks;
pub mod registry;
pub mod shmem;
pub mod slots;
mod term;
pub mod tls;
pub mod worker;

use std::sync::atomic::Ordering;

use pgrx::prelude::*;

use crate::clock::{boottime_ms, ms_to_timestamptz};
use crate::errors::{raise_full, Code};
use crate::gucs::{self, LeaseMode};
use shmem::State;

/// From `_PG_init` while preloading: the token, and the worker when leases are on.
pub fn init() {
    let mut buf = [0u8; 8];
    // SAFETY: getrandom writes at most buf.len() bytes into buf.
    let n = unsafe { libc::getrandom(buf.as_mut_ptr().cast(), buf.len(), 0) };
    let mut t = i64::from_ne_bytes(buf);
    if n != 8 || t == 0 {
        // Not expected on Linux; the pid and the clock still tell two postmasters apart.
        t = (std::process::id() as i64) << 32 ^ crate::clock::now_unix_ms() ^ boottime_ms() << 20;
    }
    worker::set_token(t);
    if gucs::lease_mode() != LeaseMode::Off {
        worker::register();
    }
}

fn mode_name(mode: LeaseMode) -> &'static str {
    match mode {
        LeaseMode::Off => "off",
        LeaseMode::Fixed => "fixed",
        LeaseMode::Auto => "auto",
    }
}

/// The worker id `snowflake_next()` generates with, given the id the session configured
/// (`worker::configured()`: the setting, else the table row, else None). Without leases: that
/// id, or 55000 "not configured". With leases: the leased id, if its lease is valid now and the
/// session configured the same id or (auto mode) none; otherwise 55000 naming the reason and the
/// holder. (The caller resolves the configured id, so that this module does not depend on
/// `worker`, which asks it for the lease's state.)
#[inline]
pub fn generation_worker(configured: Option<i64>) -> i64 {
    let mode = gucs::lease_mode();
    if mode == LeaseMode::Off {
        return configured.unwrap_or_else(|| crate::errors::worker_id_not_configured());
    }
    let Some(sh) = shmem::shared() else { crate::errors::not_preloaded() };
    let (id, until) = shmem::unpack(sh.word.load(Ordering::Acquire));
    if let Some(id) = id {
        let agrees = match (mode, configured) {
            (_, Some(c)) => c == id,
            (LeaseMode::Auto, None) => true,
            _ => false,
        };
        if agrees && (boottime_ms() as u64) < until {
            return id; // = pg_idgen_core::lease::valid_for(word, id, now), unpacked once
        }
    }
    refuse(sh, mode, configured, id, until)
}

/// The fence of `snowflake_next()`: whether `worker`'s lease is still valid now, asked after the
/// id's time was read and immediately before it is issued (`pg_idgen_core::next_id_fenced`).
/// `generation_worker()` checked it before the call could block; this check closes the window
/// in which the lease could end (and the worker hand the id over) while the call waited.
/// The id's time must also lie below the lease's bound (`limit_ms`, the registry's `hwm_ms`):
/// a new holder continues above that bound, so an id at or past it (a logical clock running
/// ahead) could collide.
#[inline]
pub fn still_valid(worker: i64, tick: u64) -> bool {
    if gucs::lease_mode() == LeaseMode::Off {
        return true;
    }
    let Some(sh) = shmem::shared() else { return false };
    let word = sh.word.load(Ordering::Acquire);
    pg_idgen_core::lease::valid_for(word, worker, boottime_ms() as u64)
        && gucs::layout().tick_to_unix_ms(tick) < sh.limit_ms.load(Ordering::Acquire) as i128
}

/// The lease of `worker` ended between the check of `generation_worker()` and the moment the id
/// would have been issued: 55000, nothing issued.
#[cold]
pub fn lost_while_generating(worker: i64, tick: u64) -> ! {
    if let Some(sh) = shmem::shared() {
        let word = sh.word.load(Ordering::Acquire);
        let limit = sh.limit_ms.load(Ordering::Acquire);
        if pg_idgen_core::lease::valid_for(word, worker, boottime_ms() as u64) {
            sh.refusals.fetch_add(1, Ordering::Relaxed);
            raise_full(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("pg_idgen cannot generate: the next id of worker id {worker} would be at or after the bound of its lease"),
                Some(format!(
                    "The id's time is {} ms since 1970, the lease covers ids before {limit} (this node's clock + lease validity + pg_idgen.max_drift_ms at the last renewal).",
                    gucs::layout().tick_to_unix_ms(tick)
                )),
                Some("The generator's clock runs ahead of the system clock; the next renewal raises the bound."),
            );
        }
    }
    let detail = shmem::shared().map(|sh| {
        let (state, info) = sh.read();
        if info.is_empty() {
            format!("Lease worker: {}.", state.name())
        } else {
            format!("Lease worker: {}: {info}.", state.name())
        }
    });
    if let Some(sh) = shmem::shared() {
        sh.refusals.fetch_add(1, Ordering::Relaxed);
    }
    raise_full(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("pg_idgen cannot generate: the lease of worker id {worker} ended while this call was generating; no id was issued"),
        detail,
        Some("The call waited (for a reservation, a lock or the clock) past the end of the lease. See SELECT * FROM snowflake_lease() and the server log."),
    )
}

/// `set_worker_id()`: in fixed mode the leased id is `pg_idgen.worker_id` of postgresql.conf,
/// which takes precedence over a stored id; storing another id would be silently unused, so it
/// is refused (55000) once this node's lease names its id. In auto mode a stored id is checked
/// against the lease when a session generates with it (`generation_worker`).
pub fn check_stored_worker_id(worker: i64) {
    if gucs::lease_mode() != LeaseMode::Fixed {
        return;
    }
    let Some(sh) = shmem::shared() else { return };
    if let (Some(id), _) = shmem::unpack(sh.word.load(Ordering::Acquire)) {
        if id != worker {
            raise_full(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("pg_idgen worker id {worker} is not leased by this node: its lease is for worker id {id}"),
                Some("pg_idgen.lease_mode is fixed: the leased worker id is pg_idgen.worker_id of postgresql.conf, which takes precedence over a stored worker id.".to_string()),
                Some("Change pg_idgen.worker_id in postgresql.conf and restart, or leave the stored worker id alone."),
            );
        }
    }
}

#[cold]
fn refuse(
    sh: &shmem::LeaseShared,
    mode: LeaseMode,
    configured: Option<i64>,
    id: Option<i64>,
    until: u64,
) -> ! {
    sh.refusals.fetch_add(1, Ordering::Relaxed);
    let (state, info) = sh.read();
    let valid = until > boottime_ms() as u64;
    if mode == LeaseMode::Fixed && configured.is_none() {
        crate::errors::worker_id_not_configured();
    }
    if let (Some(c), Some(id), true) = (configured, id, valid) {
        if c != id {
            raise_full(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("pg_idgen worker id {c} is not leased by this node: its lease is for worker id {id}"),
                Some(format!("pg_idgen.lease_mode is {}.", mode_name(mode))),
                Some("Every session generates with the leased worker id: remove the differing pg_idgen.worker_id setting (ALTER DATABASE/ROLE ... RESET) or pg_idgen_worker row (clear_worker_id())."),
            );
        }
    }
    let (message, hint) = match state {
        State::Taken => (
            format!("pg_idgen cannot generate: {info}"),
            "Two nodes must never generate with one worker id. This node generates again once that lease is released or has expired; check which node should have this worker id.",
        ),
        State::Unreachable => (
            match id {
                Some(id) => format!("pg_idgen cannot generate: the lease of worker id {id} has run out and the registry cannot be reached"),
                None => "pg_idgen cannot generate: no worker id lease, and the registry cannot be reached".to_string(),
            },
            "Generation resumes as soon as the lease worker reaches the registry (pg_idgen.registry) and renews the lease.",
        ),
        State::LockWait => (
            match id {
                Some(id) => format!("pg_idgen cannot generate: the lease of worker id {id} has run out: its renewal waited for a lock in the registry until the registry's lock_timeout"),
                None => "pg_idgen cannot generate: no worker id lease: the claim waited for a lock in the registry until the registry's lock_timeout".to_string(),
            },
            "The registry answered; another session of the registry database held the lease row's lock. Find it in the registry's pg_locks and pg_stat_activity (a transaction left open). Generation resumes once the lease worker renews the lease.",
        ),
        State::Starting => (
            "pg_idgen cannot generate yet: the lease worker has not been granted a worker id lease".to_string(),
            "Retry in a moment; see SELECT * FROM snowflake_lease() and the server log. If this lasts, the lease worker may not be running: the server log says so at start (\"too many background workers\": raise max_worker_processes).",
        ),
        State::Held => (
            match id {
                Some(id) => format!("pg_idgen cannot generate: the lease of worker id {id} was not renewed in time"),
                None => "pg_idgen cannot generate: no worker id lease".to_string(),
            },
            "See SELECT * FROM snowflake_lease() and the server log.",
        ),
        State::Standby => (
            "pg_idgen cannot generate: this node has not claimed a lease since its promotion yet".to_string(),
            "Retry in a moment.",
        ),
        State::Released => (
            "pg_idgen cannot generate: the worker id lease was released (the server is shutting down)".to_string(),
            "",
        ),
        State::Misconfigured | State::Exhausted => (
            format!("pg_idgen cannot generate: {info}"),
            "Fix the pg_idgen lease settings (documentation: docs/worker-ids.md, \"Leased worker ids\") and reload.",
        ),
    };
    let detail = (!info.is_empty()
        && !matches!(state, State::Taken | State::Misconfigured | State::Exhausted))
    .then(|| format!("Lease worker: {}: {info}.", state.name()));
    raise_full(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        message,
        detail,
        (!hint.is_empty()).then_some(hint),
    )
}

/// For `snowflake_worker()`: the leased id (if any) and the lease state in one short text, or
/// None when leases are off.
pub fn summary() -> Option<(Option<i64>, String)> {
    let mode = gucs::lease_mode();
    if mode == LeaseMode::Off {
        return None;
    }
    let sh = shmem::shared()?;
    let (id, until) = shmem::unpack(sh.word.load(Ordering::Acquire));
    let left = until as i64 - boottime_ms();
    let state = sh.state();
    let text = if left > 0 {
        format!(
            "{} ({mode} mode, valid {:.1} s more)",
            state.name(),
            left as f64 / 1000.0,
            mode = mode_name(mode)
        )
    } else {
        format!("{} ({mode} mode, not valid)", state.name(), mode = mode_name(mode))
    };
    Some((id, text))
}

/// The lease of this node: mode, leased worker id, the worker's state, how long the lease is
/// valid locally, since when the registry granted it, the worker's detail (the other holder, the
/// last registry error), and counters since start: successful claims and renewals, registry
/// failures, claims refused because another node held the id, generation calls refused.
#[pg_extern(volatile, parallel_safe)]
#[allow(clippy::type_complexity)]
fn snowflake_lease() -> TableIterator<
    'static,
    (
        name!(mode, String),
        name!(worker_id, Option<i32>),
        name!(state, Option<String>),
        name!(valid_for_ms, Option<i64>),
        name!(since, Option<TimestampWithTimeZone>),
        name!(detail, Option<String>),
        name!(renewals, Option<i64>),
        name!(failures, Option<i64>),
        name!(conflicts, Option<i64>),
        name!(refusals, Option<i64>),
    ),
> {
    let mode = gucs::lease_mode();
    let Some(sh) = shmem::shared().filter(|_| mode != LeaseMode::Off) else {
        return TableIterator::once((
            mode_name(mode).to_string(),
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
        ));
    };
    let (id, until) = shmem::unpack(sh.word.load(Ordering::Acquire));
    let (state, info) = sh.read();
    let left = until as i64 - boottime_ms();
    let since = sh.since_ms.load(Ordering::Relaxed);
    TableIterator::once((
        mode_name(mode).to_string(),
        id.and_then(|i| i32::try_from(i).ok()),
        Some(state.name().to_string()),
        Some(left.max(0)),
        (since > 0 && state == State::Held).then(|| ms_to_timestamptz(since)),
        (!info.is_empty()).then_some(info),
        Some(sh.renewals.load(Ordering::Relaxed) as i64),
        Some(sh.failures.load(Ordering::Relaxed) as i64),
        Some(sh.conflicts.load(Ordering::Relaxed) as i64),
        Some(sh.refusals.load(Ordering::Relaxed) as i64),
    ))
}
