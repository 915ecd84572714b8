//! The catalog of layouts: resolving a layout name (the server's, a built-in one, or a custom one
//! from `pg_idgen_layouts`), `uid_layout_register`, `uid_layout_drop`, `uid_layouts`, and the
//! warning about objects computed with a previous server layout. Works without preloading.
//!
//! Custom layouts are read from the catalog table with SPI once per backend and cached; a
//! statement trigger on the table sends a relcache invalidation for it on every change, and the
//! relcache callback (`catalog`) empties the cache in every backend. The DDL is in
//! `sql/layouts.sql`.

use std::cell::RefCell;
use std::collections::HashMap;

use pg_idgen_core::{FieldOrder, Layout, LayoutError, NAMED_LAYOUTS};
use pgrx::prelude::*;

use crate::catalog::{extension_schema, prevent_during_recovery, PinnedSearchPath};
use crate::clock::{ms_to_timestamptz, timestamptz_to_ms};
use crate::errors::{self, raise, required, Code};
use crate::gucs;
use crate::tables;

thread_local! {
    /// Custom layouts of the current database read so far, by name, and whether each was read
    /// with a fresh snapshot (false: read in a parallel operation with the statement's snapshot,
    /// used only until it ends, see `tables`).
    static CUSTOM: RefCell<HashMap<String, (Layout, bool)>> = RefCell::new(HashMap::new());
}

/// Drops the cached custom layouts (on any relcache invalidation, see `catalog`).
pub fn invalidate() {
    let _ = CUSTOM.try_with(|c| c.borrow_mut().clear());
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
    let fresh = tables::fresh();
    if let Some((l, _)) = CUSTOM.with(|c| c.borrow().get(&key).filter(|(_, f)| *f || !fresh).cloned()) {
        return l;
    }
    let l = load_custom(&key).unwrap_or_else(|| {
        raise(
            Code::ERRCODE_UNDEFINED_OBJECT,
            format!("layout \"{name}\" does not exist"),
            Some("Use one of the named layouts (SELECT name FROM uid_layouts()) or register one with uid_layout_register()."),
        )
    });
    CUSTOM.with(|c| c.borrow_mut().insert(key, (l.clone(), fresh)));
    l
}

fn load_custom(name: &str) -> Option<Layout> {
    // Read by OID with a fresh snapshot (see `tables`): a REPEATABLE READ session must not cache
    // a layout dropped or re-registered after it began.
    let mut found = None;
    tables::scan_extension_table(c"pg_idgen_layouts", |r| {
        if found.is_none() && r.text("name").as_deref() == Some(name) {
            let bits = |c: &str| r.i64(c).and_then(|b| i32::try_from(b).ok());
            found = Some((
                r.get::<TimestampWithTimeZone>("epoch"),
                r.i64("unit_ms"),
                [bits("time_bits"), bits("worker_bits"), bits("sequence_bits")],
                r.text("field_order"),
                bits("worker_low_bits"),
            ));
        }
    });
    let row = found?;
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

/// After an accepted layout change: warns about every object of this database whose stored
/// expression calls a function that decodes or composes with the server's layout (expression
/// indexes, generated columns, defaults, constraints, views): they were computed with the old
/// layout. Partition bounds are stored as constants and are not found this way.
pub fn warn_dependents_of_server_layout() {
    // The three functions are found as members of the extension with their argument counts: no
    // schema name in the statement.
    let Some((_, ext)) = crate::catalog::extension_namespace_and_oid() else { return };
    let sql = format!(
        "SELECT pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid) \
         FROM pg_catalog.pg_depend d \
         WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass \
           AND d.deptype OPERATOR(pg_catalog.=) 'n' \
           AND d.refobjid IN ( \
               SELECT p.oid FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_depend e \
                 ON e.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_proc'::pg_catalog.regclass \
                AND e.objid OPERATOR(pg_catalog.=) p.oid AND e.deptype OPERATOR(pg_catalog.=) 'e' \
                AND e.refobjid OPERATOR(pg_catalog.=) {ext}::pg_catalog.oid \
               WHERE (p.proname OPERATOR(pg_catalog.=) 'uid_decode' AND p.pronargs OPERATOR(pg_catalog.=) 1) \
                  OR (p.proname OPERATOR(pg_catalog.=) 'snowflake_at' AND p.pronargs OPERATOR(pg_catalog.=) 2) \
                  OR (p.proname OPERATOR(pg_catalog.=) 'uid_compose' AND p.pronargs OPERATOR(pg_catalog.=) 3)) \
         ORDER BY 1",
        ext = u32::from(ext)
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

/// Registers a custom layout for decoding ids of another system (superuser by default; GRANT
/// EXECUTE and INSERT on pg_idgen_layouts to delegate). Widths add up to at most 63 (or 64, the
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
    let mut custom = Vec::new();
    tables::scan_extension_table(c"pg_idgen_layouts", |r| custom.extend(r.text("name")));
    custom.sort();
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
