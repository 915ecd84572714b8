//! The SQL surface of layouts and decoding: `uid_decode`, `snowflake_at`, `uid_compose`,
//! `snowflake_layout`, and the catalog of custom layouts (`pg_idgen_layouts`,
//! `uid_layout_register`, `uid_layout_drop`, `uid_layouts`). None of this needs shared memory:
//! it works without preloading.
//!
//! Custom layouts are read from the catalog table with SPI once per backend and cached; a
//! statement trigger on the table sends a relcache invalidation for it on every change, and the
//! relcache callback registered in `_PG_init` empties the cache in every backend.

use std::cell::RefCell;
use std::collections::HashMap;

use pg_idgen_core::{FieldOrder, Layout, LayoutError, Parts, NAMED_LAYOUTS};
use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::catalog::{extension_schema, prevent_during_recovery, PinnedSearchPath};
use crate::errors::{self, raise, required, Code};
use crate::gucs;

thread_local! {
    /// Custom layouts of the current database read so far, by name.
    static CUSTOM: RefCell<HashMap<String, Layout>> = RefCell::new(HashMap::new());
}

/// Relcache callback: an invalidation of one of our catalog tables (or a full reset) empties
/// the per-backend caches of custom layouts and of the stored worker id.
#[pg_guard]
unsafe extern "C-unwind" fn on_relcache_invalidation(_arg: pg_sys::Datum, _relid: pg_sys::Oid) {
    // The tables' oids are not known without a catalog lookup, which a callback must not do;
    // both caches are tiny and cheap to refill, so any invalidation drops them.
    let _ = CUSTOM.try_with(|c| c.borrow_mut().clear());
    crate::catalog::invalidate();
    crate::worker::invalidate();
}

pub fn init() {
    // SAFETY: registered once per backend from _PG_init; the callback only clears caches.
    unsafe { pg_sys::CacheRegisterRelcacheCallback(Some(on_relcache_invalidation), pg_sys::Datum::from(0)) };
}

/// A layout by name: the server's (`server`), a named one, or a custom one from the catalog.
pub fn resolve(name: &str) -> Layout {
    let key = name.trim().to_ascii_lowercase();
    if key == "server" {
        return gucs::layout().clone();
    }
    if let Some(l) = Layout::by_name(&key) {
        return l;
    }
    if let Some(l) = CUSTOM.with(|c| c.borrow().get(&key).cloned()) {
        return l;
    }
    let l = load_custom(&key).unwrap_or_else(|| {
        raise(
            Code::ERRCODE_UNDEFINED_OBJECT,
            format!("layout \"{name}\" does not exist"),
            Some("Use one of the named layouts (SELECT name FROM uid_layouts()) or register one with uid_layout_register()."),
        )
    });
    CUSTOM.with(|c| c.borrow_mut().insert(key, l.clone()));
    l
}

fn load_custom(name: &str) -> Option<Layout> {
    let query = format!(
        "SELECT epoch, unit_ms::pg_catalog.int8, time_bits, worker_bits, sequence_bits, field_order, \
         worker_low_bits FROM {}.pg_idgen_layouts WHERE name OPERATOR(pg_catalog.=) $1",
        extension_schema()
    );
    let _path = PinnedSearchPath::new();
    let row = Spi::connect(|client| {
        let table = client.select(query.as_str(), Some(1), &[name.into()])?;
        if table.is_empty() {
            return Ok::<_, pgrx::spi::Error>(None);
        }
        let row = table.first();
        Ok(Some((
            row.get::<TimestampWithTimeZone>(1)?,
            row.get::<i64>(2)?,
            [row.get::<i32>(3)?, row.get::<i32>(4)?, row.get::<i32>(5)?],
            row.get::<String>(6)?,
            row.get::<i32>(7)?,
        )))
    })
    .unwrap_or_else(|e| {
        raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not read pg_idgen_layouts: {e}"), None)
    })?;
    let (Some(epoch), Some(unit_ms), [Some(t), Some(w), Some(q)], Some(order), low) = row else {
        corrupt_layout(name, "a required column is NULL")
    };
    let order = match order.as_str() {
        "sequence_worker" => FieldOrder::SequenceAboveWorker,
        "worker_sequence" => FieldOrder::WorkerAboveSequence,
        other => corrupt_layout(name, &format!("field_order \"{other}\"")),
    };
    let bits = |b: i32| u32::try_from(b).unwrap_or(u32::MAX);
    let layout = Layout::registered(
        name,
        timestamptz_to_ms(epoch),
        unit_ms,
        bits(t),
        bits(w),
        bits(q),
        order,
        low.map(bits),
    )
    .unwrap_or_else(|e| corrupt_layout(name, &e.to_string()));
    Some(layout)
}

/// A row of pg_idgen_layouts that uid_layout_register would not have written (edited by hand).
fn corrupt_layout(name: &str, what: &str) -> ! {
    raise(
        Code::ERRCODE_DATA_CORRUPTED,
        format!("custom layout \"{name}\" in pg_idgen_layouts is invalid: {what}"),
        Some("Drop it with uid_layout_drop() and register it again with uid_layout_register()."),
    )
}

/// Unix milliseconds of PostgreSQL's epoch, 2000-01-01T00:00:00Z.
const PG_EPOCH_UNIX_MS: i64 = 946_684_800_000;

/// The system clock (`CLOCK_REALTIME`) in Unix milliseconds. Called once per generated id, so
/// it goes to `clock_gettime` directly: `SystemTime::now()` and its `Duration` arithmetic cost a
/// third more here (and libfaketime intercepts both alike).
#[inline]
pub fn now_unix_ms() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: CLOCK_REALTIME cannot fail with a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1000 + ts.tv_nsec / 1_000_000
}

/// A monotonic clock in milliseconds (`CLOCK_MONOTONIC`), for deadlines: a step of the system
/// clock must not stretch or shorten a wait.
#[inline]
pub fn monotonic_ms() -> i64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: CLOCK_MONOTONIC cannot fail with a valid pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
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

/// After an accepted layout change: warns about every object of this database whose stored
/// expression calls a function that decodes or composes with the server's layout (expression
/// indexes, generated columns, defaults, constraints, views): they were computed with the old
/// layout. Partition bounds are stored as constants and are not found this way.
pub fn warn_dependents_of_server_layout() {
    let schema = extension_schema();
    let sql = format!(
        "SELECT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid) \
         FROM pg_catalog.pg_depend d \
         WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass \
           AND d.deptype OPERATOR(pg_catalog.=) 'n' \
           AND d.refobjid OPERATOR(pg_catalog.=) ANY (ARRAY[ \
               '{schema}.uid_decode(bigint)'::pg_catalog.regprocedure, \
               '{schema}.snowflake_at(timestamptz, integer)'::pg_catalog.regprocedure, \
               '{schema}.uid_compose(timestamptz, integer, integer)'::pg_catalog.regprocedure]::pg_catalog.oid[]) \
         ORDER BY 1"
    );
    let _path = PinnedSearchPath::new();
    let objects: Vec<String> = Spi::connect(|c| {
        let mut v = Vec::new();
        for row in c.select(&sql, None, &[])? {
            v.extend(row.get::<String>(1)?);
        }
        Ok::<_, pgrx::spi::Error>(v)
    })
    .unwrap_or_else(|e| {
        raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not list dependent objects: {e}"), None)
    });
    if !objects.is_empty() {
        errors::warn(
            format!(
                "these objects of this database were computed with the previous pg_idgen.layout: {}",
                objects.join(", ")
            ),
            Some("REINDEX the indexes and recompute the stored values; check other databases and partition bounds made with snowflake_at() too."),
        );
    }
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

extension_sql!(
    r#"
CREATE TABLE pg_idgen_layouts (
    name            text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9_]{0,62}$'),
    epoch           timestamptz NOT NULL,
    unit_ms         integer NOT NULL,
    time_bits       integer NOT NULL,
    worker_bits     integer NOT NULL,
    sequence_bits   integer NOT NULL,
    field_order     text NOT NULL DEFAULT 'worker_sequence'
                    CHECK (field_order IN ('worker_sequence', 'sequence_worker')),
    worker_low_bits integer,
    created_at      timestamptz NOT NULL DEFAULT now(),
    created_by      name NOT NULL DEFAULT current_user
);
COMMENT ON TABLE pg_idgen_layouts IS 'custom id layouts for uid_decode/uid_compose/snowflake_at (pg_idgen); change with uid_layout_register/uid_layout_drop';
SELECT pg_catalog.pg_extension_config_dump('pg_idgen_layouts', '');
GRANT SELECT ON pg_idgen_layouts TO PUBLIC;
"#,
    name = "layouts_table",
);

/// Registers a custom layout for decoding ids of another system (superuser by default; GRANT
/// EXECUTE and INSERT on pg_idgen_layouts to delegate). Widths must add up to 63 (or 64, the
/// top time bit being the sign bit); `field_order` is `worker_sequence` or `sequence_worker`;
/// `worker_low_bits` splits the worker field into `worker_high`/`worker_low`.
#[pg_extern(volatile, parallel_unsafe)]
#[allow(clippy::too_many_arguments)]
fn uid_layout_register(
    name: Option<&str>,
    epoch: Option<TimestampWithTimeZone>,
    time_bits: Option<i32>,
    worker_bits: Option<i32>,
    sequence_bits: Option<i32>,
    unit_ms: default!(Option<i32>, 1),
    field_order: default!(Option<&str>, "'worker_sequence'"),
    worker_low_bits: default!(Option<i32>, "NULL"),
) {
    // Only worker_low_bits may be NULL (no split of the worker field).
    let name = required(name, "name");
    let epoch = required(epoch, "epoch");
    let time_bits = required(time_bits, "time_bits");
    let worker_bits = required(worker_bits, "worker_bits");
    let sequence_bits = required(sequence_bits, "sequence_bits");
    let unit_ms = required(unit_ms, "unit_ms");
    let field_order = required(field_order, "field_order");
    prevent_during_recovery(c"uid_layout_register()");
    let key = name.to_ascii_lowercase();
    if key == "server" || NAMED_LAYOUTS.contains(&key.as_str()) {
        raise(
            Code::ERRCODE_DUPLICATE_OBJECT,
            format!("layout \"{name}\" is a built-in layout"),
            Some("Choose another name."),
        );
    }
    if !(1..=63).contains(&key.len())
        || !key.starts_with(|c: char| c.is_ascii_lowercase())
        || !key.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        raise(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("invalid layout name \"{name}\""),
            Some("A layout name is 1 to 63 characters: a letter, then letters, digits or underscores."),
        );
    }
    let order = match field_order {
        "worker_sequence" => FieldOrder::WorkerAboveSequence,
        "sequence_worker" => FieldOrder::SequenceAboveWorker,
        other => raise(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("invalid field_order \"{other}\""),
            Some("Use worker_sequence (time | worker | sequence) or sequence_worker (time | sequence | worker, as Sonyflake)."),
        ),
    };
    for (what, v) in
        [("time_bits", time_bits), ("worker_bits", worker_bits), ("sequence_bits", sequence_bits)]
            .into_iter()
            .chain(worker_low_bits.map(|b| ("worker_low_bits", b)))
    {
        if !(0..=64).contains(&v) {
            raise(
                Code::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("invalid layout \"{name}\": {what} must be between 0 and 64, got {v}"),
                None,
            );
        }
    }
    let bits = |v: i32| v as u32;
    let low = worker_low_bits.map(bits);
    let epoch_ms = timestamptz_to_ms(epoch);
    if let Err(e) = Layout::registered(
        &key,
        epoch_ms,
        unit_ms as i64,
        bits(time_bits),
        bits(worker_bits),
        bits(sequence_bits),
        order,
        low,
    ) {
        let hint = match e {
            LayoutError::Widths { .. } => "For example a Baidu uid-generator with 29/21/13 bits: time_bits => 29, worker_bits => 21, sequence_bits => 13, unit_ms => 1000.",
            _ => "See SELECT * FROM uid_layouts() for examples.",
        };
        raise(Code::ERRCODE_INVALID_PARAMETER_VALUE, format!("invalid layout \"{name}\": {e}"), Some(hint));
    }
    let insert = format!(
        "INSERT INTO {}.pg_idgen_layouts (name, epoch, unit_ms, time_bits, worker_bits, sequence_bits, field_order, worker_low_bits) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (name) DO NOTHING",
        extension_schema()
    );
    let _path = PinnedSearchPath::new();
    let inserted = Spi::connect_mut(|client| {
        client
            .update(
                insert.as_str(),
                None,
                &[
                    key.as_str().into(),
                    epoch.into(),
                    unit_ms.into(),
                    time_bits.into(),
                    worker_bits.into(),
                    sequence_bits.into(),
                    field_order.into(),
                    worker_low_bits.into(),
                ],
            )
            .map(|t| t.len())
    })
    .unwrap_or_else(|e| raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not register layout: {e}"), None));
    if inserted == 0 {
        raise(
            Code::ERRCODE_DUPLICATE_OBJECT,
            format!("layout \"{name}\" already exists"),
            Some("Drop it first with uid_layout_drop() (ids decoded with it will decode differently)."),
        );
    }
}

/// Removes a custom layout.
#[pg_extern(volatile, parallel_unsafe, strict)]
fn uid_layout_drop(name: &str) {
    prevent_during_recovery(c"uid_layout_drop()");
    let delete =
        format!("DELETE FROM {}.pg_idgen_layouts WHERE name OPERATOR(pg_catalog.=) $1", extension_schema());
    let _path = PinnedSearchPath::new();
    let deleted = Spi::connect_mut(|client| {
        client.update(delete.as_str(), None, &[name.to_ascii_lowercase().as_str().into()]).map(|t| t.len())
    })
    .unwrap_or_else(|e| raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not drop layout: {e}"), None));
    if deleted == 0 {
        let builtin = NAMED_LAYOUTS.contains(&name.to_ascii_lowercase().as_str());
        raise(
            if builtin { Code::ERRCODE_INSUFFICIENT_PRIVILEGE } else { Code::ERRCODE_UNDEFINED_OBJECT },
            if builtin {
                format!("layout \"{name}\" is built in and cannot be dropped")
            } else {
                format!("layout \"{name}\" does not exist")
            },
            None,
        );
    }
}

/// Every layout `uid_decode(id, layout)` knows: the built-in ones and this database's custom ones.
#[pg_extern(stable, parallel_safe)]
#[allow(clippy::type_complexity)]
fn uid_layouts() -> TableIterator<
    'static,
    (
        name!(name, String),
        name!(builtin, bool),
        name!(epoch, TimestampWithTimeZone),
        name!(unit_ms, i64),
        name!(time_bits, i32),
        name!(worker_bits, i32),
        name!(sequence_bits, i32),
        name!(field_order, String),
        name!(worker_split, Option<String>),
        name!(can_generate, bool),
    ),
> {
    let mut names: Vec<(String, bool)> = NAMED_LAYOUTS.iter().map(|n| (n.to_string(), true)).collect();
    let query = format!("SELECT name FROM {}.pg_idgen_layouts ORDER BY name", extension_schema());
    let custom: Vec<String> = {
        let _path = PinnedSearchPath::new();
        Spi::connect(|client| {
            let mut names = Vec::new();
            for row in client.select(query.as_str(), None, &[])? {
                names.extend(row.get::<String>(1)?);
            }
            Ok::<_, pgrx::spi::Error>(names)
        })
        .unwrap_or_else(|e| {
            raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not read pg_idgen_layouts: {e}"), None)
        })
    };
    names.extend(custom.into_iter().map(|n| (n, false)));
    let rows: Vec<_> = names
        .into_iter()
        .map(|(n, builtin)| {
            let l = resolve(&n);
            (
                n,
                builtin,
                ms_to_timestamptz(l.epoch_ms),
                l.unit_ms,
                l.time_bits as i32,
                l.worker_bits as i32,
                l.sequence_bits as i32,
                match l.order {
                    FieldOrder::WorkerAboveSequence => "worker_sequence".to_string(),
                    FieldOrder::SequenceAboveWorker => "sequence_worker".to_string(),
                },
                l.split.map(|s| {
                    format!(
                        "{} {} bits, {} {} bits",
                        s.high_name,
                        l.worker_bits - s.low_bits,
                        s.low_name,
                        s.low_bits
                    )
                }),
                l.validate().is_ok(),
            )
        })
        .collect();
    TableIterator::new(rows)
}

#[unsafe(no_mangle)]
#[doc(hidden)]
pub extern "C" fn pg_finfo_pg_idgen_catalog_changed() -> &'static pg_sys::Pg_finfo_record {
    const V1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
    &V1
}

/// Statement trigger on pg_idgen's catalog tables: every backend drops its cached copies at
/// commit, whoever changed the table and however (functions, DML, pg_restore). A plain V1
/// function (declared in the SQL below) so that a direct call gets the proper 39P01, not a
/// wrapper's internal error; EXECUTE is revoked from PUBLIC (triggers fire regardless).
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn pg_idgen_catalog_changed(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // SAFETY: `fcinfo` is PostgreSQL's call frame; `context` is a TriggerData node exactly when
    // the function is called by the trigger manager (CALLED_AS_TRIGGER).
    unsafe {
        let context = (*fcinfo).context;
        if context.is_null() || (*context).type_ != pg_sys::NodeTag::T_TriggerData {
            raise(
                Code::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
                "pg_idgen_catalog_changed() can only be called as a trigger",
                None,
            );
        }
        let data = context.cast::<pg_sys::TriggerData>();
        pg_sys::CacheInvalidateRelcacheByRelid((*(*data).tg_relation).rd_id);
        // A statement trigger returns a NULL pointer (not an SQL NULL: that is an error).
        pg_sys::Datum::from(0)
    }
}

extension_sql!(
    r#"
CREATE FUNCTION pg_idgen_catalog_changed() RETURNS trigger
    LANGUAGE c AS 'MODULE_PATHNAME', 'pg_idgen_catalog_changed';
REVOKE ALL ON FUNCTION pg_idgen_catalog_changed() FROM PUBLIC;
CREATE TRIGGER pg_idgen_layouts_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON pg_idgen_layouts
    FOR EACH STATEMENT EXECUTE FUNCTION pg_idgen_catalog_changed();
REVOKE ALL ON FUNCTION uid_layout_register(text, timestamptz, integer, integer, integer, integer, text, integer) FROM PUBLIC;
REVOKE ALL ON FUNCTION uid_layout_drop(text) FROM PUBLIC;
"#,
    name = "layouts_trigger",
    requires = ["layouts_table", uid_layout_register, uid_layout_drop],
);
