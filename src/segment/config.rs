//! A tag's stored configuration (a row of `pg_idgen_segments`), read for the shared table.

use pgrx::pg_sys;

use super::table::{MAX_MULTIPLE, MAX_NODES, MAX_TAG_BYTES};
use crate::errors::{raise, Code};
use crate::tables;

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

/// A tag's row of pg_idgen_segments, as the hot path needs it.
pub(super) struct TagConfig {
    pub(super) seqoid: pg_sys::Oid,
    pub(super) unit: i64,
    pub(super) stride: i64,
    /// The first value of this node: start + node_index * unit.
    pub(super) origin: i64,
    pub(super) mult: i64,
    pub(super) min_m: i64,
    pub(super) max_m: i64,
    pub(super) target_ms: i64,
    /// The tag's first value and its number of stride slots (`nodes`).
    pub(super) start: i64,
    pub(super) slots: i64,
    /// The tag was created with `slots =>`: this node serves the slots it owns in
    /// `pg_idgen_segment_slots`, each from its own sequence (`seqoid` is then only the tag's
    /// identity); otherwise it serves slot `node_index` from `seqoid`.
    pub(super) slotted: bool,
    /// The tag was created with `registry => true`: its slots are served while this node holds
    /// them in the lease registry (`owners`, `leased`), not by `pg_idgen_segment_slots.owned`.
    pub(super) registry: bool,
    /// The tag was created with `registry_marks => true`: every reservation raises its slot's
    /// mark in the lease registry first (`marks`).
    pub(super) registry_marks: bool,
    /// The row was written by this transaction (not committed yet).
    pub(super) uncommitted: bool,
}

/// Reads a tag's row by OID with a fresh snapshot (see `tables`: not the caller's snapshot, which
/// in a REPEATABLE READ transaction may predate a drop and re-create of the tag), and checks it
/// as the hot path needs it: a row edited by hand cannot make it divide by zero or allocate
/// without bound. No SQL: nothing a caller controls is parsed, although this runs for every
/// role (`segment_next`, `segment_status`).
pub(super) fn read_config(tag: &str) -> Option<TagConfig> {
    let mut found = None;
    tables::scan_extension_table(c"pg_idgen_segments", |row| {
        if found.is_none() && row.text("tag").as_deref() == Some(tag) {
            found = Some(config_of(tag, row));
        }
    });
    found
}

/// Every tag of this database with its configuration.
pub(super) fn read_all() -> Vec<(String, TagConfig)> {
    let mut all = Vec::new();
    tables::scan_extension_table(c"pg_idgen_segments", |row| {
        let tag = row.text("tag").unwrap_or_default();
        let cfg = config_of(&tag, row);
        all.push((tag, cfg));
    });
    all
}

fn config_of(tag: &str, row: &tables::Row) -> TagConfig {
    let corrupt = |what: &str| -> ! {
        raise(
            Code::ERRCODE_DATA_CORRUPTED,
            format!("the configuration of segment tag \"{tag}\" in pg_idgen_segments is invalid: {what}"),
            Some("pg_idgen_segments is written by segment_create(); drop the tag and create it again."),
        )
    };
    let (Some(seqoid), Some(unit), Some(nodes), Some(node_index), Some(step), Some(start)) = (
        row.oid("seq"),
        row.i64("unit"),
        row.i64("nodes"),
        row.i64("node_index"),
        row.i64("step"),
        row.i64("start"),
    ) else {
        corrupt("a required column is NULL")
    };
    let min_step = row.i64("min_step").unwrap_or(step);
    let max_step = row.i64("max_step").unwrap_or(step);
    let target_ms = row.get::<pgrx::datum::Interval>("target_interval").map(interval_ms).unwrap_or(0);
    if unit <= 0 || !(1..=MAX_NODES as i64).contains(&nodes) || !(0..nodes).contains(&node_index) {
        corrupt(&format!("unit {unit}, nodes {nodes}, node_index {node_index}"));
    }
    if min_step != unit || step % unit != 0 || max_step % unit != 0 {
        corrupt("step, min_step and max_step must be multiples of the unit (min_step)");
    }
    let slotted = row.bool("slotted").unwrap_or(false);
    let registry = row.bool("registry").unwrap_or(false);
    if registry && !slotted {
        corrupt("registry without slots");
    }
    let registry_marks = row.bool("registry_marks").unwrap_or(false);
    if registry_marks && (registry || start < 1) {
        corrupt("registry_marks with registry, or with a start below 1");
    }
    if slotted && nodes > super::table::MAX_SLOTS as i64 {
        corrupt(&format!("{nodes} slots, more than {}", super::table::MAX_SLOTS));
    }
    let (mult, min_m, max_m) = (step / unit, min_step / unit, max_step / unit);
    if !(1 <= min_m && min_m <= mult && mult <= max_m && max_m <= MAX_MULTIPLE) {
        corrupt(&format!("step {step} outside [{min_step}, {max_step}] or more than {MAX_MULTIPLE} units"));
    }
    let Some(origin) = start.checked_add(node_index * unit) else { corrupt("start") };
    TagConfig {
        seqoid,
        unit,
        stride: nodes * unit,
        origin,
        mult,
        min_m,
        max_m,
        target_ms: target_ms.max(0),
        start,
        slots: nodes,
        slotted,
        registry,
        registry_marks,
        uncommitted: row.written_by_this_transaction(),
    }
}

/// An interval in milliseconds as `date_part('epoch', interval) * 1000` computes it (a month is
/// 30 days, a year 365.25 days), saturating.
fn interval_ms(i: pgrx::datum::Interval) -> i64 {
    let months = i.months() as i128;
    let days = (months / 12) as f64 * 365.25 + ((months % 12) * 30) as f64 + i.days() as f64;
    let ms = days * 86_400_000.0 + i.micros() as f64 / 1000.0;
    ms.clamp(i64::MIN as f64, i64::MAX as f64) as i64
}
