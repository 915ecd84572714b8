//! The SQL surface of layouts and decoding: `uid_decode`, `snowflake_at`, `uid_compose`,
//! `snowflake_layout`. These need no shared memory and work without preloading.

use pg_idgen_core::{Layout, Parts};
use pgrx::prelude::*;

use crate::errors::{self, raise, Code};
use crate::gucs;

/// Unix milliseconds of PostgreSQL's epoch, 2000-01-01T00:00:00Z.
const PG_EPOCH_UNIX_MS: i64 = 946_684_800_000;

/// The system clock (`CLOCK_REALTIME`) in Unix milliseconds. Called once per generated id, so
/// it goes to `clock_gettime` directly: `SystemTime::now()` and its `Duration` arithmetic cost a
/// third more here (and libfaketime intercepts both alike).
#[inline]
pub fn now_unix_ms() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // CLOCK_REALTIME cannot fail with a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

pub fn ms_to_timestamptz(unix_ms: i64) -> TimestampWithTimeZone {
    let us = (unix_ms as i128 - PG_EPOCH_UNIX_MS as i128) * 1000;
    i64::try_from(us).ok().and_then(|us| TimestampWithTimeZone::try_from(us).ok()).unwrap_or_else(|| {
        raise(
            Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
            format!("{unix_ms} ms since 1970 is out of range for timestamptz"),
            None,
        )
    })
}

pub fn timestamptz_to_ms(ts: TimestampWithTimeZone) -> i64 {
    if !ts.is_finite() {
        raise(Code::ERRCODE_DATETIME_FIELD_OVERFLOW, "timestamp must be finite", None);
    }
    let us: i64 = ts.into();
    us.div_euclid(1000) + PG_EPOCH_UNIX_MS
}

fn tick_of(layout: &Layout, ts: TimestampWithTimeZone) -> u64 {
    layout.checked_tick(timestamptz_to_ms(ts)).unwrap_or_else(|_| {
        raise(
            Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            format!(
                "timestamp is outside the time range of layout \"{}\" ({} .. {})",
                layout.name,
                fmt_ms(layout.epoch_ms as i128),
                fmt_ms(layout.tick_to_unix_ms(layout.max_time() + 1))
            ),
            None,
        )
    })
}

fn fmt_ms(ms: i128) -> String {
    pg_idgen_core::layout::format_unix_ms(ms)
}

fn worker_arg(layout: &Layout, worker: Option<i32>) -> u64 {
    match worker {
        None => 0,
        Some(w) if w >= 0 && w as u64 <= layout.max_worker() => w as u64,
        Some(w) => raise(
            Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            format!(
                "worker id {w} is out of range for layout \"{}\" (0 .. {})",
                layout.name,
                layout.max_worker()
            ),
            None,
        ),
    }
}

/// Splits an id of the server's layout into its time (ms precision), worker id and sequence.
#[pg_extern(immutable, parallel_safe, strict)]
fn uid_decode(
    id: i64,
) -> TableIterator<'static, (name!(ts, TimestampWithTimeZone), name!(worker_id, i32), name!(sequence, i32))> {
    let layout = gucs::layout();
    let p = layout.decode(id).unwrap_or_else(|e| errors::id_error(e));
    let ms = layout.tick_to_unix_ms(p.time) as i64;
    TableIterator::once((ms_to_timestamptz(ms), p.worker as i32, p.sequence as i32))
}

/// The smallest id of the server's layout whose time is `ts` (and whose worker is `worker_id`,
/// 0 if omitted): a bound for range scans, `WHERE id >= snowflake_at(now() - interval '1 day')`.
#[pg_extern(immutable, parallel_safe)]
fn snowflake_at(ts: Option<TimestampWithTimeZone>, worker_id: default!(Option<i32>, "NULL")) -> Option<i64> {
    let ts = ts?;
    let layout = gucs::layout();
    let parts = Parts { time: tick_of(layout, ts), worker: worker_arg(layout, worker_id), sequence: 0 };
    Some(layout.encode(parts).unwrap_or_else(|e| errors::id_error(e)))
}

/// Composes an id of the server's layout from its parts; the inverse of `uid_decode`.
#[pg_extern(immutable, parallel_safe, strict)]
fn uid_compose(ts: TimestampWithTimeZone, worker_id: i32, sequence: i32) -> i64 {
    let layout = gucs::layout();
    if sequence < 0 {
        errors::id_error(pg_idgen_core::IdError::SequenceOutOfRange {
            sequence: sequence as i64,
            max: layout.max_sequence(),
        });
    }
    let parts = Parts {
        time: tick_of(layout, ts),
        worker: worker_arg(layout, Some(worker_id)),
        sequence: sequence as u64,
    };
    layout.encode(parts).unwrap_or_else(|e| errors::id_error(e))
}

/// The server's generation layout.
#[pg_extern(stable, parallel_safe)]
#[allow(clippy::type_complexity)]
fn snowflake_layout() -> TableIterator<
    'static,
    (
        name!(name, String),
        name!(spec, String),
        name!(epoch, TimestampWithTimeZone),
        name!(unit_ms, i64),
        name!(time_bits, i32),
        name!(worker_bits, i32),
        name!(sequence_bits, i32),
        name!(max_worker_id, i64),
        name!(max_sequence, i64),
        name!(time_field_ends, TimestampWithTimeZone),
    ),
> {
    let l = gucs::layout();
    let ends = l.tick_to_unix_ms(l.max_time() + 1).min(i64::MAX as i128 / 2) as i64;
    TableIterator::once((
        l.name.clone(),
        l.canonical(),
        ms_to_timestamptz(l.epoch_ms),
        l.unit_ms,
        l.time_bits as i32,
        l.worker_bits as i32,
        l.sequence_bits as i32,
        l.max_worker() as i64,
        l.max_sequence() as i64,
        ms_to_timestamptz(ends),
    ))
}
