//! Decoding and composing ids: `uid_decode`, `snowflake_at`, `uid_compose` (with the server's
//! layout or a named one) and `snowflake_layout()`. None of this needs shared memory: it works
//! without preloading.

use pg_idgen_core::{Layout, Parts};
use pgrx::prelude::*;

use crate::clock::{fmt_ms, ms_to_timestamptz, timestamptz_to_ms};
use crate::errors::{self, raise, Code};
use crate::gucs;
use crate::layouts::resolve;

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

fn decode_with(layout: &Layout, id: i64) -> (TimestampWithTimeZone, i32, i32, Parts) {
    let p = layout.decode(id).unwrap_or_else(|e| {
        let what = format!("{e} (layout \"{}\")", layout.name);
        match e {
            pg_idgen_core::IdError::Negative(_) | pg_idgen_core::IdError::TooWide(_) => {
                raise(Code::ERRCODE_INVALID_PARAMETER_VALUE, what, None)
            }
            _ => raise(Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, what, None),
        }
    });
    // A custom layout with a long unit can reach past what a timestamptz holds: never truncate.
    let ms = i64::try_from(layout.tick_to_unix_ms(p.time)).unwrap_or_else(|_| {
        raise(
            Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
            format!("the time of id {id} in layout \"{}\" is out of range for timestamptz", layout.name),
            None,
        )
    });
    (ms_to_timestamptz(ms), p.worker as i32, p.sequence as i32, p)
}

/// Splits an id of the server's layout into its time (ms precision), worker id and sequence.
/// IMMUTABLE although it reads `pg_idgen.layout`: that setting is fixed while the server runs
/// and a change is refused until `snowflake_accept_layout()`, which warns about every index that
/// depends on these functions (see README, "Volatility").
#[pg_extern(immutable, parallel_safe, strict)]
fn uid_decode(
    id: i64,
) -> TableIterator<'static, (name!(ts, TimestampWithTimeZone), name!(worker_id, i32), name!(sequence, i32))> {
    let (ts, worker, sequence, _) = decode_with(gucs::layout(), id);
    TableIterator::once((ts, worker, sequence))
}

/// Splits an id of any layout: a named one (`twitter`, `discord`, `sonyflake`, ...), a custom
/// one from `pg_idgen_layouts`, or `server`. `worker_high`/`worker_low` are the two halves of a
/// split machine field (Twitter datacenter/worker, Discord worker/process), else NULL.
#[pg_extern(stable, parallel_safe, strict, name = "uid_decode")]
#[allow(clippy::type_complexity)]
fn uid_decode_layout(
    id: i64,
    layout: &str,
) -> TableIterator<
    'static,
    (
        name!(ts, TimestampWithTimeZone),
        name!(worker_id, i32),
        name!(sequence, i32),
        name!(worker_high, Option<i32>),
        name!(worker_low, Option<i32>),
    ),
> {
    let layout = resolve(layout);
    let (ts, worker, sequence, p) = decode_with(&layout, id);
    let split = layout.split_worker(p.worker);
    TableIterator::once((ts, worker, sequence, split.map(|s| s.0 as i32), split.map(|s| s.1 as i32)))
}

/// The smallest id of the server's layout whose time is `ts` (and whose worker is `worker_id`,
/// 0 if omitted): a bound for range scans, `WHERE id >= snowflake_at(now() - interval '1 day')`.
/// A NULL `worker_id` means 0. IMMUTABLE, as `uid_decode(id)`: constant-folded at planning,
/// so partition pruning and postgres_fdw see the bounds.
#[pg_extern(immutable, parallel_safe)]
fn snowflake_at(ts: Option<TimestampWithTimeZone>, worker_id: default!(Option<i32>, "NULL")) -> Option<i64> {
    Some(at_with(gucs::layout(), ts?, worker_id))
}

/// `snowflake_at` for ids of any layout (see `uid_decode(id, layout)`).
#[pg_extern(stable, parallel_safe, name = "snowflake_at")]
fn snowflake_at_layout(
    ts: Option<TimestampWithTimeZone>,
    worker_id: Option<i32>,
    layout: Option<&str>,
) -> Option<i64> {
    let (ts, layout) = (ts?, layout?);
    Some(at_with(&resolve(layout), ts, worker_id))
}

fn at_with(layout: &Layout, ts: TimestampWithTimeZone, worker_id: Option<i32>) -> i64 {
    let parts = Parts { time: tick_of(layout, ts), worker: worker_arg(layout, worker_id), sequence: 0 };
    layout.encode(parts).unwrap_or_else(|e| errors::id_error(e))
}

/// Composes an id of the server's layout from its parts; the inverse of `uid_decode`.
/// IMMUTABLE, as `uid_decode(id)`.
#[pg_extern(immutable, parallel_safe, strict)]
fn uid_compose(ts: TimestampWithTimeZone, worker_id: i32, sequence: i32) -> i64 {
    compose_with(gucs::layout(), ts, worker_id, sequence)
}

/// Composes an id of any layout; the inverse of `uid_decode(id, layout)`.
#[pg_extern(stable, parallel_safe, strict, name = "uid_compose")]
fn uid_compose_layout(ts: TimestampWithTimeZone, worker_id: i32, sequence: i32, layout: &str) -> i64 {
    compose_with(&resolve(layout), ts, worker_id, sequence)
}

fn compose_with(layout: &Layout, ts: TimestampWithTimeZone, worker_id: i32, sequence: i32) -> i64 {
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
