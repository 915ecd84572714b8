//! A tag's stored configuration (a row of `pg_idgen_segments`), read for the shared table.

use pgrx::pg_sys;

use super::table::{MAX_MULTIPLE, MAX_NODES, MAX_TAG_BYTES};
use crate::catalog::{extension_schema, select_latest_i64, AsSuperuser};
use crate::errors::{raise, Code};

pub(super) fn validate_tag(tag: &str) {
    if tag.is_empty() {
        raise(Code::ERRCODE_INVALID_PARAMETER_VALUE, "segment tag must not be empty", None);
    }
    if tag.len() > MAX_TAG_BYTES {
        raise(
            Code::ERRCODE_NAME_TOO_LONG,
            format!("segment tag is too long ({} bytes)", tag.len()),
            Some("A tag can have at most 63 bytes."),
        );
    }
}

pub(super) fn unknown_tag(tag: &str) -> ! {
    raise(
        Code::ERRCODE_UNDEFINED_OBJECT,
        format!("segment tag \"{tag}\" does not exist"),
        Some("Create it with segment_create(tag) (as a superuser); SELECT tag FROM segment_status lists the tags of this database."),
    )
}

/// A tag's row of pg_idgen_segments, as the hot path needs it.
pub(super) struct TagConfig {
    pub(super) seqoid: pg_sys::Oid,
    pub(super) unit: i64,
    pub(super) stride: i64,
    pub(super) mult: i64,
    pub(super) min_m: i64,
    pub(super) max_m: i64,
    pub(super) target_ms: i64,
}

/// Reads a tag's row with the latest committed state (not the caller's snapshot, which in a
/// REPEATABLE READ transaction may predate a drop and re-create of the tag), and checks it as
/// the hot path needs it: a row edited by hand cannot make it divide by zero or allocate
/// without bound.
pub(super) fn read_config(tag: &str) -> Option<TagConfig> {
    let _su = AsSuperuser::new();
    let sql = std::ffi::CString::new(format!(
        "SELECT seq::pg_catalog.oid::pg_catalog.int8, unit::pg_catalog.int8, \
                nodes::pg_catalog.int8, step::pg_catalog.int8, \
                COALESCE(min_step, step)::pg_catalog.int8, \
                COALESCE(max_step, step)::pg_catalog.int8, \
                COALESCE(pg_catalog.date_part('epoch', target_interval) \
                    OPERATOR(pg_catalog.*) 1000, 0)::pg_catalog.int8 \
         FROM {}.pg_idgen_segments WHERE tag OPERATOR(pg_catalog.=) $1",
        extension_schema()
    ))
    .expect("no NUL in a generated statement");
    let rows = select_latest_i64(&sql, tag);
    let row = rows.into_iter().next()?;
    let v = |i: usize| row.get(i).copied().flatten();
    let corrupt = |what: &str| -> ! {
        raise(
            Code::ERRCODE_DATA_CORRUPTED,
            format!("the configuration of segment tag \"{tag}\" in pg_idgen_segments is invalid: {what}"),
            Some("pg_idgen_segments is written by segment_create(); drop the tag and create it again."),
        )
    };
    let (Some(seq), Some(unit), Some(nodes), Some(step), Some(min_step), Some(max_step), Some(target_ms)) =
        (v(0), v(1), v(2), v(3), v(4), v(5), v(6))
    else {
        corrupt("a required column is NULL")
    };
    if unit <= 0 || !(1..=MAX_NODES as i64).contains(&nodes) {
        corrupt(&format!("unit {unit}, nodes {nodes}"));
    }
    if min_step != unit || step % unit != 0 || max_step % unit != 0 {
        corrupt("step, min_step and max_step must be multiples of the unit (min_step)");
    }
    let (mult, min_m, max_m) = (step / unit, min_step / unit, max_step / unit);
    if !(1 <= min_m && min_m <= mult && mult <= max_m && max_m <= MAX_MULTIPLE) {
        corrupt(&format!("step {step} outside [{min_step}, {max_step}] or more than {MAX_MULTIPLE} units"));
    }
    Some(TagConfig {
        seqoid: pg_sys::Oid::from(u32::try_from(seq).unwrap_or_else(|_| corrupt("seq"))),
        unit,
        stride: nodes * unit,
        mult,
        min_m,
        max_m,
        target_ms: target_ms.max(0),
    })
}
