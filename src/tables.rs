//! Reading the extension's tables (and a tag's backing sequence) by OID, without SQL.
//!
//! The tables are found by name *inside the extension's namespace, given by OID*, and must be
//! members of the extension: no schema or table name is ever parsed, so renaming schemas (the
//! owner of the extension's schema can) or shadowing objects cannot redirect a read. Rows are
//! read with the latest committed state plus this transaction's own changes (a fresh snapshot,
//! as catalog reads are), not the caller's snapshot: a REPEATABLE READ transaction that began
//! before `set_worker_id()`, `segment_drop()` or `uid_layout_drop()` must not act on, or cache,
//! what those changed.
//!
//! In a parallel operation (a parallel worker, or the leader while a Gather runs) PostgreSQL
//! forbids taking a new snapshot; there rows are read with the statement's snapshot (the active
//! one, which the leader hands to its workers), and [`fresh`] says so: a cache filled from such a
//! read is good for the rest of the parallel operation only, and is read again after it.

use std::ffi::CStr;

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::catalog::{extension_namespace_and_oid, not_installed};
use crate::errors::{raise, Code};

/// One row of a scan: columns by name, converted on demand.
pub struct Row {
    tuple: pg_sys::HeapTuple,
    desc: pg_sys::TupleDesc,
}

impl Row {
    fn datum(&self, column: &str) -> Option<(pg_sys::Datum, pg_sys::Oid)> {
        // SAFETY: `desc` describes `tuple` (both from the open relation during the scan); the
        // descriptor is borrowed, not reference-counted (`from_pg_unchecked`). pgrx's accessor
        // hides how each major lays the attributes out (PostgreSQL 18 changed it).
        unsafe {
            let desc = pgrx::PgTupleDesc::from_pg_unchecked(self.desc);
            let (i, typ) = (0..desc.len()).find_map(|i| {
                let a = desc.get(i)?;
                (!a.attisdropped && a.name() == column).then_some((i, a.atttypid))
            })?;
            let mut isnull = false;
            let d = pg_sys::heap_getattr(self.tuple, i as i32 + 1, self.desc, &mut isnull);
            (!isnull).then_some((d, typ))
        }
    }

    /// An integer column (smallint, integer, bigint) as i64.
    pub fn i64(&self, column: &str) -> Option<i64> {
        let (d, typ) = self.datum(column)?;
        Some(match typ {
            pg_sys::INT2OID => d.value() as i16 as i64,
            pg_sys::INT4OID => d.value() as i32 as i64,
            _ => d.value() as i64,
        })
    }

    /// An oid-like column (oid, regclass).
    pub fn oid(&self, column: &str) -> Option<pg_sys::Oid> {
        self.datum(column).map(|(d, _)| pg_sys::Oid::from(d.value() as u32))
    }

    pub fn bool(&self, column: &str) -> Option<bool> {
        self.datum(column).map(|(d, _)| d.value() != 0)
    }

    /// A text column; text that is not valid UTF-8 (a SQL_ASCII database) is decoded lossily.
    pub fn text(&self, column: &str) -> Option<String> {
        let (d, _) = self.datum(column)?;
        // SAFETY: a non-NULL text datum of the row; detoasted into the current memory context.
        unsafe {
            let v = pg_sys::pg_detoast_datum_packed(d.cast_mut_ptr());
            Some(String::from_utf8_lossy(pgrx::varlena::varlena_to_byte_slice(v)).into_owned())
        }
    }

    /// A column of any type pgrx can convert (timestamptz, interval, numeric).
    pub fn get<T: FromDatum>(&self, column: &str) -> Option<T> {
        let (d, typ) = self.datum(column)?;
        // SAFETY: a non-NULL datum of type `typ`, converted by the type's own FromDatum.
        unsafe { T::from_polymorphic_datum(d, false, typ) }
    }

    /// Whether this transaction (or one of its subtransactions) wrote this row version.
    pub fn written_by_this_transaction(&self) -> bool {
        // SAFETY: the tuple header of a row returned by the scan.
        unsafe {
            // The raw xmin (HeapTupleHeaderGetRawXmin): a frozen row keeps an old transaction's
            // id there, which is never the current one.
            let xmin = (*(*self.tuple).t_data).t_choice.t_heap.t_xmin;
            pg_sys::TransactionIdIsCurrentTransactionId(xmin)
        }
    }
}

/// The OID of the extension's table `name`, checked to be a member of the extension.
pub fn extension_table(name: &CStr) -> pg_sys::Oid {
    let Some((nsp, ext)) = extension_namespace_and_oid() else { not_installed() };
    // SAFETY: lookups by name within a namespace given by OID, and in pg_depend; no SQL.
    unsafe {
        let relid = pg_sys::get_relname_relid(name.as_ptr(), nsp);
        if relid == pg_sys::InvalidOid
            || pg_sys::getExtensionOfObject(pg_sys::RelationRelationId, relid) != ext
        {
            raise(
                Code::ERRCODE_UNDEFINED_TABLE,
                format!("the table {} of extension pg_idgen is missing", name.to_string_lossy()),
                Some("Reinstall the extension (DROP EXTENSION pg_idgen; CREATE EXTENSION pg_idgen)."),
            );
        }
        relid
    }
}

/// Calls `f` for every row of relation `relid` visible to a fresh snapshot (committed rows and
/// this transaction's own), holding AccessShareLock on it during the scan. False if the
/// relation does not exist (any more: its OID was looked up without a lock, and a DROP — of the
/// extension, say — may have committed while this waited for the lock).
pub fn scan(relid: pg_sys::Oid, mut f: impl FnMut(&Row)) -> bool {
    // SAFETY: the relation is opened and locked for the scan (try_table_open: NULL if it is gone
    // once the lock is granted); the snapshot is registered for the scan's duration; rows are
    // only used inside `f`. An ERROR in between is cleaned up by abort (resource owner:
    // relation, snapshot, scan).
    unsafe {
        let rel = pg_sys::try_table_open(relid, pg_sys::AccessShareLock as i32);
        if rel.is_null() {
            return false;
        }
        let snapshot = pg_sys::RegisterSnapshot(read_snapshot());
        let scan =
            pg_sys::systable_beginscan(rel, pg_sys::InvalidOid, false, snapshot, 0, std::ptr::null_mut());
        loop {
            let tuple = pg_sys::systable_getnext(scan);
            if tuple.is_null() {
                break;
            }
            f(&Row { tuple, desc: (*rel).rd_att });
        }
        pg_sys::systable_endscan(scan);
        pg_sys::UnregisterSnapshot(snapshot);
        pg_sys::table_close(rel, pg_sys::AccessShareLock as i32);
    }
    true
}

/// Whether a read now sees the latest committed state (false in a parallel operation, where the
/// statement's snapshot is used: see the module comment).
pub fn fresh() -> bool {
    // SAFETY: reads a backend-local flag.
    unsafe { !pg_sys::IsInParallelMode() }
}

/// The snapshot of a read: the latest outside a parallel operation, the statement's inside one.
fn read_snapshot() -> pg_sys::Snapshot {
    // SAFETY: snapshot functions of a backend inside a transaction (every caller is a SQL
    // function); GetLatestSnapshot is only called outside a parallel operation, where it is
    // allowed, and GetActiveSnapshot only when one is set. The caller registers the result.
    unsafe {
        if fresh() {
            return pg_sys::GetLatestSnapshot();
        }
        if !pg_sys::ActiveSnapshotSet() {
            raise(
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "pg_idgen cannot read its tables in this parallel operation (no statement snapshot)",
                None,
            );
        }
        pg_sys::GetActiveSnapshot()
    }
}

/// Rows of the extension's table `name`.
pub fn scan_extension_table(name: &CStr, f: impl FnMut(&Row)) {
    if !scan(extension_table(name), f) {
        raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "extension \"pg_idgen\" was dropped by a concurrent transaction",
            Some("Run CREATE EXTENSION pg_idgen (or wait for the restore that dropped it to finish), then retry."),
        );
    }
}

/// A sequence's `last_value` and `is_called`, read from the sequence relation itself (its one
/// row, as `SELECT last_value, is_called FROM seq` reads it) by OID. None if it does not exist.
pub fn sequence_state(seqoid: pg_sys::Oid) -> Option<(i64, bool)> {
    // SAFETY: a syscache probe; the relation is only scanned if it exists and is a sequence.
    let is_sequence =
        unsafe { pg_sys::get_rel_relkind(seqoid) } == pg_sys::RELKIND_SEQUENCE as std::ffi::c_char;
    if !is_sequence {
        return None;
    }
    let mut state = None;
    if !scan(seqoid, |row| state = row.i64("last_value").zip(row.bool("is_called"))) {
        return None; // dropped while this waited for its lock
    }
    state
}
