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

/// The row both `uid_decode` forms return: one `uid_parts` composite value (declared in
/// `sql/decode.sql`), not a set — `FROM t, uid_decode(t.id)` is one row per input row, and
/// `(uid_decode(id)).*` works in a select list and in RETURNING.
struct Decoded {
    ts: TimestampWithTimeZone,
    worker: i32,
    sequence: i32,
    /// `(worker_high, worker_low)` of a layout whose machine field is split, else NULL.
    split: Option<(i32, i32)>,
}

fn decoded(layout: &Layout, id: i64) -> Decoded {
    let (ts, worker, sequence, p) = decode_with(layout, id);
    let split = layout.split_worker(p.worker).map(|(h, l)| (h as i32, l as i32));
    Decoded { ts, worker, sequence, split }
}

/// The five attribute types of `uid_parts`, in order.
const PARTS_TYPES: [pg_sys::Oid; 5] =
    [pg_sys::TIMESTAMPTZOID, pg_sys::INT4OID, pg_sys::INT4OID, pg_sys::INT4OID, pg_sys::INT4OID];

/// The result descriptor of the called function (`uid_parts`), blessed and kept in the call
/// site's `fn_extra` for the next calls. Checked against the five columns the functions fill,
/// so that an altered type (a superuser's `ALTER TYPE uid_parts ...`) is an error, never a
/// mismatched tuple.
///
/// # Safety
/// `fcinfo` is PostgreSQL's call frame of a function declared `RETURNS uid_parts`.
unsafe fn parts_desc(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::TupleDesc {
    // SAFETY: fcinfo and its flinfo are valid for the call; fn_extra is ours (a C function's
    // FmgrInfo slot, only ever set here) and lives in fn_mcxt, which outlives the call site.
    unsafe {
        let flinfo = (*fcinfo).flinfo;
        let cached = (*flinfo).fn_extra as pg_sys::TupleDesc;
        if !cached.is_null() {
            return cached;
        }
        let mut desc: pg_sys::TupleDesc = std::ptr::null_mut();
        let class = pg_sys::get_call_result_type(fcinfo, std::ptr::null_mut(), &mut desc);
        let ok = class == pg_sys::TypeFuncClass::TYPEFUNC_COMPOSITE && !desc.is_null() && {
            let d = pgrx::PgTupleDesc::from_pg_unchecked(desc);
            d.len() == PARTS_TYPES.len()
                && PARTS_TYPES
                    .iter()
                    .enumerate()
                    .all(|(i, t)| d.get(i).is_some_and(|a| !a.attisdropped && a.atttypid == *t))
        };
        if !ok {
            raise(
                Code::ERRCODE_DATATYPE_MISMATCH,
                "uid_decode must return uid_parts (ts timestamptz, worker_id int, sequence int, worker_high int, worker_low int)",
                Some("The type uid_parts was altered: ALTER EXTENSION pg_idgen UPDATE, or re-create the extension."),
            );
        }
        let old = pg_sys::MemoryContextSwitchTo((*flinfo).fn_mcxt);
        let kept = pg_sys::BlessTupleDesc(pg_sys::CreateTupleDescCopy(desc));
        pg_sys::MemoryContextSwitchTo(old);
        (*flinfo).fn_extra = kept.cast();
        kept
    }
}

/// Forms the `uid_parts` datum of a decoded id.
///
/// # Safety
/// As [`parts_desc`].
unsafe fn parts_datum(fcinfo: pg_sys::FunctionCallInfo, d: Decoded) -> pg_sys::Datum {
    let (high, low) = d.split.unzip();
    let mut values = [
        d.ts.into_datum().unwrap_or(pg_sys::Datum::from(0)),
        pg_sys::Datum::from(d.worker),
        pg_sys::Datum::from(d.sequence),
        pg_sys::Datum::from(high.unwrap_or(0)),
        pg_sys::Datum::from(low.unwrap_or(0)),
    ];
    let mut nulls = [false, false, false, high.is_none(), low.is_none()];
    // SAFETY: the descriptor has exactly these five by-value attributes (checked by
    // parts_desc); heap_form_tuple copies the values into a tuple in the current (call) memory
    // context, whose header is the composite datum.
    unsafe {
        let desc = parts_desc(fcinfo);
        let tuple = pg_sys::heap_form_tuple(desc, values.as_mut_ptr(), nulls.as_mut_ptr());
        pg_sys::HeapTupleHeaderGetDatum((*tuple).t_data)
    }
}

crate::fmgr::pg_function_info_v1!(pg_finfo_pg_idgen_uid_decode);

/// `uid_decode(id bigint) RETURNS uid_parts`: splits an id of the server's layout into its time
/// (ms precision), worker id and sequence (and the halves of a split worker field).
/// IMMUTABLE although it reads `pg_idgen.layout`: that setting is fixed while the server runs
/// and a change is refused until `snowflake_accept_layout()`, which warns about every index that
/// depends on these functions (see docs/guarantees.md, "Volatility"). Declared in `sql/decode.sql`.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn pg_idgen_uid_decode(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // SAFETY: PostgreSQL's call frame of the STRICT `uid_decode(bigint)`: argument 0 is a
    // non-NULL int8 datum.
    unsafe {
        let id = (*fcinfo).args.as_slice(1)[0].value.value() as i64;
        parts_datum(fcinfo, decoded(gucs::layout(), id))
    }
}

crate::fmgr::pg_function_info_v1!(pg_finfo_pg_idgen_uid_decode_layout);

/// `uid_decode(id bigint, layout text) RETURNS uid_parts`: splits an id of any layout: a named
/// one (`twitter`, `discord`, `sonyflake`, `js53`, ...), a custom one from `pg_idgen_layouts`,
/// or `server`. `worker_high`/`worker_low` are the two halves of a split machine field (Twitter
/// datacenter/worker, Discord worker/process), else NULL. Declared in `sql/decode.sql`.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn pg_idgen_uid_decode_layout(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    // SAFETY: PostgreSQL's call frame of the STRICT `uid_decode(bigint, text)`: argument 0 is a
    // non-NULL int8 datum, argument 1 a non-NULL text datum (detoasted in the call's context).
    unsafe {
        let args = (*fcinfo).args.as_slice(2);
        let id = args[0].value.value() as i64;
        let name = crate::segment::text_bytes(args[1].value);
        let name = std::str::from_utf8(name).unwrap_or_else(|_| {
            raise(Code::ERRCODE_CHARACTER_NOT_IN_REPERTOIRE, "layout name is not valid UTF-8", None)
        });
        parts_datum(fcinfo, decoded(&resolve(name), id))
    }
}

/// The 0.1.0 form of `uid_decode(id bigint)`: a set-returning function of symbol
/// `uid_decode_wrapper`. No SQL is generated for it (`sql = false`); the symbol stays so that a
/// database still on extension version 0.1.0 keeps decoding with this library until
/// `ALTER EXTENSION pg_idgen UPDATE` replaces the function by the `uid_parts` form.
#[pg_extern(sql = false, immutable, parallel_safe, strict)]
fn uid_decode(
    id: i64,
) -> TableIterator<'static, (name!(ts, TimestampWithTimeZone), name!(worker_id, i32), name!(sequence, i32))> {
    let d = decoded(gucs::layout(), id);
    TableIterator::once((d.ts, d.worker, d.sequence))
}

/// The 0.1.0 form of `uid_decode(id bigint, layout text)` (symbol `uid_decode_layout_wrapper`),
/// kept as [`uid_decode`] is.
#[pg_extern(sql = false, stable, parallel_safe, strict)]
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
    let d = decoded(&resolve(layout), id);
    let (high, low) = d.split.unzip();
    TableIterator::once((d.ts, d.worker, d.sequence, high, low))
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
