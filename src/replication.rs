//! What must not replicate: pg_idgen's tables hold this node's own state (its worker id, its
//! segment tags and the slots it serves, its keyed spaces and their durable bounds, the leases and
//! slot owners of a registry, its mask keys and custom layouts), and a logical replication
//! subscriber must never apply another node's rows to them. `sql/replication.sql` puts
//! [`pg_idgen_replica_guard`] on every table of the extension as `ENABLE REPLICA` triggers (they
//! fire only under `session_replication_role = replica`, the role of every apply worker); the
//! publisher side (an event trigger refusing a publication that names one of the tables, warning
//! when FOR ALL TABLES or TABLES IN SCHEMA covers them) is SQL in the same file.
//!
//! A row change applied from another node is skipped (the trigger returns NULL): the
//! subscription keeps running and every other table's changes of the same transaction apply. One
//! WARNING per table and transaction goes to the subscriber's log. A TRUNCATE cannot be skipped
//! by a trigger (it is not per row): applying one is refused (0A000), which stops the
//! subscription until the operator skips that transaction (`ALTER SUBSCRIPTION … SKIP`).

use crate::catalog::trigger_data;
use crate::errors::{raise_full, Code};
use pgrx::pg_sys;
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;
use std::cell::RefCell;

thread_local! {
    /// The local transaction that last skipped a change, and the tables it warned about.
    static WARNED: RefCell<(pg_sys::LocalTransactionId, Vec<pg_sys::Oid>)> =
        const { RefCell::new((0, Vec::new())) };
}

/// This backend's local transaction id (never reused within a backend's life, unlike an xid that a
/// transaction skipping every row never gets).
fn local_xid() -> pg_sys::LocalTransactionId {
    // SAFETY: MyProc is this backend's PGPROC, set before any trigger can fire.
    unsafe {
        #[cfg(any(feature = "pg15", feature = "pg16"))]
        {
            (*pg_sys::MyProc).lxid
        }
        #[cfg(not(any(feature = "pg15", feature = "pg16")))]
        {
            (*pg_sys::MyProc).vxid.lxid
        }
    }
}

/// Whether this session applies changes made on another node: a logical replication worker
/// (apply, table synchronization, parallel apply) or any session that set up a replication
/// origin (as third-party replication does). A session that only set `session_replication_role =
/// replica` by hand is neither: its changes are its own.
fn applies_from_another_node() -> bool {
    // SAFETY: IsLogicalWorker only reads the backend-local MyLogicalRepWorker.
    let logical_worker = unsafe { pg_sys::IsLogicalWorker() };
    logical_worker || crate::majors::session_replication_origin() != 0
}

/// Whether `session_replication_role` is `replica`: the role of every logical replication worker,
/// and the only one under which `pg_idgen_replica_guard` (an `ENABLE REPLICA` trigger) fires. A
/// name read as OID 0 must be one whose row the guard skips: a session with a replication origin
/// that applies as itself (role `origin`) would otherwise store a row naming no sequence.
fn replica_role() -> bool {
    // SAFETY: a plain read of a backend-local GUC variable.
    unsafe { pg_sys::SessionReplicationRole == pg_sys::SESSION_REPLICATION_ROLE_REPLICA as std::ffi::c_int }
}

fn relation_name(rel: pg_sys::Relation) -> String {
    // SAFETY: `rel` is the trigger's open relation; its rd_rel and name stay valid during the call.
    unsafe {
        let name = (*(*rel).rd_rel).relname.data.as_ptr();
        std::ffi::CStr::from_ptr(name).to_string_lossy().into_owned()
    }
}

crate::fmgr::pg_function_info_v1!(pg_finfo_pg_idgen_replica_guard);

/// `ENABLE REPLICA` trigger of every pg_idgen table: a row change applied from another node is
/// skipped (one WARNING per table and transaction); an applied TRUNCATE is refused (0A000). Other
/// sessions with `session_replication_role = replica` pass through. A plain V1 function so that a
/// direct call gets 39P01; EXECUTE is revoked from PUBLIC (triggers fire regardless).
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn pg_idgen_replica_guard(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // SAFETY: `fcinfo` is PostgreSQL's call frame; trigger_data checks it is a trigger call.
    let data = unsafe { trigger_data(fcinfo, "pg_idgen_replica_guard") };
    // SAFETY: `data` is the trigger manager's TriggerData for this call.
    let (event, rel, old, new) =
        unsafe { ((*data).tg_event, (*data).tg_relation, (*data).tg_trigtuple, (*data).tg_newtuple) };
    let op = event & pg_sys::TRIGGER_EVENT_OPMASK;
    let row = event & pg_sys::TRIGGER_EVENT_ROW != 0;
    // What the trigger returns to let the row through: NEW for an UPDATE, the row otherwise; a
    // statement trigger returns a NULL pointer.
    let pass = || {
        if !row {
            pg_sys::Datum::from(0)
        } else if op == pg_sys::TRIGGER_EVENT_UPDATE {
            pg_sys::Datum::from(new)
        } else {
            pg_sys::Datum::from(old)
        }
    };
    if !applies_from_another_node() {
        return pass();
    }
    let table = relation_name(rel);
    if op == pg_sys::TRIGGER_EVENT_TRUNCATE {
        raise_full(
            Code::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("pg_idgen's table \"{table}\" takes no TRUNCATE from another node"),
            Some(
                "pg_idgen's tables hold this node's own state; a replicated row change of them is skipped, \
                 a TRUNCATE cannot be."
                    .to_string(),
            ),
            Some(
                "Skip this transaction with ALTER SUBSCRIPTION ... SKIP (lsn = the transaction's finish LSN \
                 in this error's CONTEXT), and publish the application's tables by name or schema, not pg_idgen's.",
            ),
        );
    }
    if !row {
        return pg_sys::Datum::from(0);
    }
    // SAFETY: `rel` is the trigger's open relation.
    let relid = unsafe { (*rel).rd_id };
    let lxid = local_xid();
    let first = WARNED.with(|w| {
        let mut w = w.borrow_mut();
        if w.0 != lxid {
            *w = (lxid, Vec::new());
        }
        if w.1.contains(&relid) {
            false
        } else {
            w.1.push(relid);
            true
        }
    });
    if first {
        let what = match op {
            pg_sys::TRIGGER_EVENT_INSERT => "an INSERT",
            pg_sys::TRIGGER_EVENT_UPDATE => "an UPDATE",
            _ => "a DELETE",
        };
        ErrorReport::new(
            Code::ERRCODE_WARNING,
            format!("skipped {what} of pg_idgen's table \"{table}\" applied from another node"),
            "pg_idgen",
        )
        .set_detail(
            "pg_idgen's tables hold this node's own state (worker id, segment slots, keyed bounds, leases, \
             mask keys, layouts): every change of them from another node is skipped, the rest of the \
             transaction applies. Further skips of this table in this transaction are not reported."
                .to_string(),
        )
        .set_hint(
            "On the publisher, publish the application's tables by name (FOR TABLE) or by a schema that \
             does not hold pg_idgen's tables; FOR ALL TABLES cannot leave them out.",
        )
        .report(PgLogLevel::WARNING);
    }
    // A NULL pointer from a BEFORE ROW trigger skips the row.
    pg_sys::Datum::from(0)
}

crate::fmgr::pg_function_info_v1!(pg_finfo_pg_idgen_regclass_in);

/// Input function of type `pg_idgen_regclass`, the type of the columns of pg_idgen's tables that
/// name a backing sequence (`pg_idgen_segments.seq`, `pg_idgen_segment_slots.seq`,
/// `pg_idgen_keyed_spaces.seq`): `regclass` itself (`regclassin`), except in a session that applies
/// changes from another node (a logical replication apply or table synchronization worker),
/// where a name that does not exist reads as OID 0 instead of failing with 42P01. The guard
/// trigger then skips the row as every row of pg_idgen's tables from another node; without this
/// the conversion, made before any trigger runs, stopped the subscription for every table. The
/// output, send and receive functions are regclass's (`regclassout`, `oidsend`, `oidrecv`): dumps
/// name the sequence, and pg_restore resolves the name again.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn pg_idgen_regclass_in(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // SAFETY: `fcinfo` is PostgreSQL's call frame of a STRICT one-argument function: argument 0
    // is a non-NULL cstring.
    let arg = unsafe { (*fcinfo).args.as_slice(1)[0].value };
    let oid = if applies_from_another_node() && replica_role() {
        // SAFETY: a NUL-terminated cstring from the caller; to_regclass takes text and returns
        // NULL (None) for a name that does not exist, the OID otherwise.
        unsafe {
            let name = std::ffi::CStr::from_ptr(arg.cast_mut_ptr::<std::ffi::c_char>());
            let digits = !name.to_bytes().is_empty() && name.to_bytes().iter().all(u8::is_ascii_digit);
            if digits || name.to_bytes() == b"-" {
                pgrx::direct_function_call::<pg_sys::Oid>(pg_sys::regclassin, &[Some(arg)])
            } else {
                let text = name.to_string_lossy().into_owned();
                pgrx::direct_function_call::<pg_sys::Oid>(pg_sys::to_regclass, &[text.as_str().into_datum()])
            }
        }
        .unwrap_or(pg_sys::InvalidOid)
    } else {
        // SAFETY: regclassin is a V1 function taking the same cstring; it raises what regclass
        // input raises (42P01 for a missing relation).
        unsafe { pgrx::direct_function_call::<pg_sys::Oid>(pg_sys::regclassin, &[Some(arg)]) }
            .unwrap_or(pg_sys::InvalidOid)
    };
    pg_sys::Datum::from(oid)
}
