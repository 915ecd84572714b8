//! Administration, at the top: `segment_create`, `segment_drop`, `segment_set` (superuser only).
//! Checks the arguments, writes `pg_idgen_segments` (and a slotted tag's slot rows, `slot_rows`),
//! creates and moves backing sequences (`durable`) and releases the tag's shared entry
//! (`claim`). Calls down only.

use pg_idgen_core::segment::chunk_at_or_above;
use pgrx::pg_sys;
use pgrx::prelude::*;

use super::claim::release;
use super::config::{read_config, validate_tag};
use super::durable::{create_backing_sequence, flush_wal_and_wait_for_sync_standbys, persisted_hwm};
use super::errors::{bad, check_writable, require_superuser, unknown_tag};
use super::owners;
use super::slot_rows::add_slot;
use super::table::{my_db, MAX_MULTIPLE, MAX_NODES, MAX_SLOTS, MAX_STEP};
use crate::catalog::{extension_schema, qualified_relation_name, spi_failed, RunAs};
use crate::errors::{raise, raise_full, required, Code};
use crate::tables;

/// Creates a segment tag backed by its own sequence (superuser only); with `slots`, a tag of
/// `slots` stride slots of which this node owns `owned` (all by default), each slot backed by a
/// sequence of its own (`slot_rows.rs`). With `registry_marks`, every reservation raises the
/// slot's mark in the lease registry before its values are handed out, and a first use after a
/// start or a promotion continues above the registry's marks (`marks.rs`).
#[pg_extern(name = "segment_create", volatile, parallel_unsafe)]
#[allow(clippy::too_many_arguments)]
pub(super) fn segment_create_slotted(
    tag: Option<&str>,
    step: default!(Option<i32>, 1000),
    start: default!(Option<i64>, 1),
    nodes: default!(Option<i32>, 1),
    node_index: default!(Option<i32>, 0),
    min_step: default!(Option<i32>, "NULL"),
    max_step: default!(Option<i32>, "NULL"),
    target_interval: default!(Option<pgrx::datum::Interval>, "NULL"),
    slots: default!(Option<i32>, "NULL"),
    owned: default!(Option<Vec<Option<i32>>>, "NULL"),
    registry: default!(Option<bool>, false),
    registry_marks: default!(Option<bool>, false),
) {
    // NULL is only meaningful for the adaptive-step arguments (no adaptive step).
    let tag = required(tag, "tag");
    let step = required(step, "step");
    let start = required(start, "start");
    let nodes = required(nodes, "nodes");
    let node_index = required(node_index, "node_index");
    require_superuser("create a segment tag");
    check_writable("create a segment tag");
    validate_tag(tag);
    let registry = required(registry, "registry");
    let registry_marks = required(registry_marks, "registry_marks");
    if registry_marks {
        registry_marks_arguments(registry, start);
    }
    if registry {
        registry_arguments(slots, owned.is_some());
    }
    let owned =
        if registry { Vec::new() } else { slot_arguments(slots, owned.as_deref(), nodes, node_index) };
    if registry {
        slot_arguments(slots, Some(&[][..]), nodes, node_index);
    }
    let slotted = slots.is_some();
    let (nodes, node_index) = if let Some(s) = slots { (s, 0) } else { (nodes, node_index) };
    if step <= 0 || step > MAX_STEP {
        bad(format!("step must be between 1 and {MAX_STEP}, got {step}"), None);
    }
    if !(1..=MAX_NODES).contains(&nodes) {
        bad(format!("nodes must be between 1 and {MAX_NODES}, got {nodes}"), None);
    }
    if node_index < 0 || node_index >= nodes {
        bad(
            format!("node_index must be between 0 and nodes - 1 ({}), got {node_index}", nodes - 1),
            Some("Give each of the N instances sharing a tag its own node_index 0 .. N-1."),
        );
    }
    let adaptive = min_step.is_some() || max_step.is_some() || target_interval.is_some();
    let unit = min_step.unwrap_or(step);
    let maxs = max_step.unwrap_or(step);
    if adaptive {
        if target_interval.is_none() {
            bad(
                "an adaptive step needs target_interval",
                Some("Pass target_interval => '15 minutes' (Leaf's default) with min_step/max_step."),
            );
        }
        if unit <= 0 || maxs <= 0 || maxs > MAX_STEP {
            bad(format!("min_step and max_step must be between 1 and {MAX_STEP}"), None);
        }
        if !(unit <= step && step <= maxs) {
            bad(format!("step must lie within [min_step, max_step] = [{unit}, {maxs}], got {step}"), None);
        }
        if step % unit != 0 || maxs % unit != 0 {
            bad(
                "step and max_step must be multiples of min_step",
                Some(
                    "min_step is the fixed stride unit that keeps nodes disjoint; steps are multiples of it.",
                ),
            );
        }
        if (maxs / unit) as i64 > MAX_MULTIPLE {
            bad(format!("max_step may be at most {MAX_MULTIPLE} times min_step"), None);
        }
    }
    let origin = start.checked_add(node_index as i64 * unit as i64);
    let stride = nodes as i64 * unit as i64;
    if origin.and_then(|o| o.checked_add(stride)).is_none() {
        raise(Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, "start is too close to the largest bigint", None);
    }
    let origin = origin.unwrap();
    let schema = extension_schema();
    let _su = RunAs::superuser();
    if let Some(interval) = target_interval {
        let ms: Option<f64> = Spi::get_one_with_args(
            "SELECT pg_catalog.date_part('epoch', $1) OPERATOR(pg_catalog.*) 1000",
            &[interval.into()],
        )
        .unwrap_or_else(|e| spi_failed("read target_interval", e));
        if !ms.is_some_and(|ms| (1.0..=i64::MAX as f64).contains(&ms)) {
            bad("target_interval must be positive", None);
        }
    }
    // One segment_create at a time per database (until commit): the name of the backing
    // sequence is chosen from what is visible, and two concurrent creates would pick the same.
    // SAFETY: locks a relation by OID; released at transaction end.
    unsafe {
        pg_sys::LockRelationOid(
            tables::extension_table(c"pg_idgen_segments"),
            pg_sys::ShareRowExclusiveLock as i32,
        )
    };
    let mut exists = false;
    let mut count = 0i64;
    tables::scan_extension_table(c"pg_idgen_segments", |row| {
        count += 1;
        exists |= row.text("tag").as_deref() == Some(tag);
    });
    if exists {
        raise(
            Code::ERRCODE_DUPLICATE_OBJECT,
            format!("segment tag \"{tag}\" already exists"),
            Some("Use another tag, or segment_drop() it first (its values may then be handed out again)."),
        );
    }
    let seqname = create_backing_sequence(&schema, count + 1, stride, origin);
    Spi::run_with_args(
        &format!(
            "INSERT INTO {schema}.pg_idgen_segments (tag, seq, step, unit, start, nodes, node_index, min_step, max_step, target_interval, slotted, registry, registry_marks) \
             VALUES ($1, $2::pg_catalog.regclass, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
        ),
        &[
            tag.into(),
            seqname.as_str().into(),
            step.into(),
            unit.into(),
            start.into(),
            nodes.into(),
            node_index.into(),
            min_step.filter(|_| adaptive).or(adaptive.then_some(unit)).into(),
            max_step.filter(|_| adaptive).or(adaptive.then_some(maxs)).into(),
            target_interval.into(),
            slotted.into(),
            registry.into(),
            registry_marks.into(),
        ],
    )
    .unwrap_or_else(|e| raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not record the segment tag: {e}"), None));
    for slot in owned {
        let origin = start + slot as i64 * unit as i64; // below start + stride: checked above
        add_slot(&schema, tag, slot, stride, origin, origin, true);
    }
    if registry {
        // Every slot has its sequence from the start, not owned locally: the registry decides
        // which ones this node serves, and a slot moved here only moves its sequence up
        // (setval, not transactional), never creates one in the middle of a reservation.
        for slot in 0..nodes {
            let origin = start + slot as i64 * unit as i64;
            add_slot(&schema, tag, slot, stride, origin, origin, false);
        }
        // A tag of this name dropped before may have handed out values of the slots this node
        // holds: continue above their ceilings.
        owners::restart_at_ceilings(tag);
    }
    // A tag of the same name dropped earlier may still sit in shared memory; and if this
    // transaction aborts, an entry claimed for the new tag meanwhile must go too.
    let db = my_db();
    release(db, tag);
    let t = tag.to_string();
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Abort, move || release(db, &t));
}

/// Checks `registry => true` of segment_create: a slotted tag, no `owned` (the registry assigns
/// the slots), and a lease registry to own them (55000 without one).
fn registry_arguments(slots: Option<i32>, owned: bool) {
    if slots.is_none() {
        bad(
            "registry needs slots",
            Some("Pass slots => S: the registry owns a tag's stride slots (docs/segment-slots.md)."),
        );
    }
    if owned {
        bad(
            "owned cannot be combined with registry",
            Some("With registry => true the registry assigns the slots: segment_registry_assign(tag, slots, worker_ids) on the registry database."),
        );
    }
    if crate::gucs::lease_mode() == crate::gucs::LeaseMode::Off
        || crate::gucs::string_setting(&crate::gucs::REGISTRY).trim().is_empty()
    {
        raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "registry => true needs a lease registry: pg_idgen.lease_mode is off or pg_idgen.registry is not set",
            Some("Slot ownership through the registry is renewed with the node's worker id lease (docs/worker-ids.md, \"Leased worker ids\"); without one, use explicit hand-over (segment_slot_release/segment_slot_adopt)."),
        );
    }
}

/// Checks `registry_marks => true` of segment_create: not with registry-owned slots (their
/// ceilings are in the registry already), values from 1 on (a mark of 0 means none), and a lease
/// worker to raise the marks (55000 without one).
fn registry_marks_arguments(registry: bool, start: i64) {
    if registry {
        bad(
            "registry_marks cannot be combined with registry",
            Some("The slots of a tag created with registry => true already keep their ceilings in the registry: a promoted standby of the same system identifier takes them above the ceilings (docs/segment-slots.md)."),
        );
    }
    if start < 1 {
        bad(
            format!("registry_marks needs start >= 1, got {start}"),
            Some("The registry's marks are positive values: start the tag at 1 or above."),
        );
    }
    if crate::gucs::lease_mode() == crate::gucs::LeaseMode::Off
        || crate::gucs::string_setting(&crate::gucs::REGISTRY).trim().is_empty()
    {
        raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "registry_marks => true needs a lease registry: pg_idgen.lease_mode is off or pg_idgen.registry is not set",
            Some("The marks are raised through the lease worker's registry connection: set pg_idgen.lease_mode (fixed or auto) and pg_idgen.registry (docs/worker-ids.md, \"Leased worker ids\"), and restart."),
        );
    }
}

/// Checks `slots` and `owned` of segment_create: the slots this node owns (none for a plain tag).
fn slot_arguments(
    slots: Option<i32>,
    owned: Option<&[Option<i32>]>,
    nodes: i32,
    node_index: i32,
) -> Vec<i32> {
    let Some(s) = slots else {
        if owned.is_some() {
            bad("owned needs slots", Some("Pass slots => S (the number of stride slots) with owned."));
        }
        return Vec::new();
    };
    if !(1..=MAX_SLOTS as i32).contains(&s) {
        bad(format!("slots must be between 1 and {MAX_SLOTS}, got {s}"), None);
    }
    if nodes != 1 || node_index != 0 {
        bad(
            "slots cannot be combined with nodes or node_index",
            Some("With slots, each node owns a set of slots (owned => ARRAY[...]); nodes => N, node_index => k is the same layout as slots => N, owned => ARRAY[k]."),
        );
    }
    let owned: Vec<i32> = match owned {
        None => (0..s).collect(),
        Some(list) => {
            list.iter().map(|o| o.unwrap_or_else(|| bad("owned must not contain NULL", None))).collect()
        }
    };
    for (i, &o) in owned.iter().enumerate() {
        if !(0..s).contains(&o) {
            bad(format!("owned slot {o} is outside 0 .. slots - 1 ({})", s - 1), None);
        }
        if owned[..i].contains(&o) {
            bad(format!("owned slot {o} is given twice"), None);
        }
    }
    owned
}

/// Drops a segment tag and its sequence (superuser only).
#[pg_extern(volatile, parallel_unsafe, strict)]
pub(super) fn segment_drop(tag: &str) {
    require_superuser("drop a segment tag");
    check_writable("drop a segment tag");
    let schema = extension_schema();
    let _su = RunAs::superuser();
    let seq = crate::catalog::delete_returning_seqs(&schema, "pg_idgen_segments", "tag", tag)
        .map(|seqs| seqs.first().copied())
        .unwrap_or_else(|e| spi_failed("delete the tag", e));
    let Some(seq) = seq else { unknown_tag(tag) };
    let slot_seqs = crate::catalog::delete_returning_seqs(&schema, "pg_idgen_segment_slots", "tag", tag)
        .unwrap_or_else(|e| spi_failed("delete the tag's slots", e));
    for s in slot_seqs {
        if let Some(name) = qualified_relation_name(s) {
            Spi::run(&format!("DROP SEQUENCE {name}"))
                .unwrap_or_else(|e| spi_failed("drop a slot's sequence", e));
        }
    }
    // The name is built in Rust from the catalog, by OID.
    if let Some(name) = qualified_relation_name(seq) {
        Spi::run(&format!("DROP SEQUENCE {name}"))
            .unwrap_or_else(|e| spi_failed("drop the backing sequence", e));
    }
    let db = my_db();
    release(db, tag);
    // A backend may have re-read the row before this transaction commits: release again then.
    let t = tag.to_string();
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, move || release(db, &t));
}

/// Moves a tag forward: values handed out from now on are >= `next` (superuser only). Values
/// already reserved and cached are discarded (a gap). Like setval, not undone by ROLLBACK.
#[pg_extern(volatile, parallel_unsafe, strict)]
pub(super) fn segment_set(tag: &str, next: i64) -> i64 {
    require_superuser("set a segment tag");
    check_writable("set a segment tag");
    let _su = RunAs::superuser();
    let Some(cfg) = read_config(tag) else { unknown_tag(tag) };
    if cfg.slotted {
        raise(
            Code::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("segment_set cannot move tag \"{tag}\": it has stride slots"),
            Some("Each slot moves on its own: segment_slot_adopt(tag, slot, mark) continues a slot above mark."),
        );
    }
    let (seqoid, unit, stride, origin) = (cfg.seqoid, cfg.unit, cfg.stride, cfg.origin);
    // Block concurrent reservations (nextval takes RowExclusiveLock) until this transaction
    // ends, then read what has been reserved: nothing can be reserved between the read and
    // the setval below.
    // SAFETY: locks a relation by OID; released at transaction end.
    unsafe { pg_sys::LockRelationOid(seqoid, pg_sys::ShareRowExclusiveLock as i32) };
    if let Some(h) = persisted_hwm(seqoid, unit, origin) {
        if next <= h {
            raise_full(
                Code::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("segment_set can only move tag \"{tag}\" forward: values up to {h} may have been handed out"),
                Some(format!("Requested next value: {next}.")),
                Some("Pass a value above the persisted high-water mark shown by segment_status."),
            );
        }
    }
    let Some(chunk) = chunk_at_or_above(origin, stride, next).filter(|c| c.checked_add(unit).is_some())
    else {
        raise(
            Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            format!("{next} is too close to the largest bigint"),
            None,
        )
    };
    Spi::run_with_args(
        "SELECT pg_catalog.setval($1::pg_catalog.oid::pg_catalog.regclass, $2, false)",
        &[seqoid.into(), chunk.into()],
    )
    .unwrap_or_else(|e| spi_failed("move the backing sequence", e));
    flush_wal_and_wait_for_sync_standbys();
    release(my_db(), tag);
    chunk
}
