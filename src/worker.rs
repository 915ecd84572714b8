//! The worker id: `pg_idgen.worker_id` if set, else this database's row in the
//! extension table `pg_idgen_worker`, else an error — never a silent 0.
//!
//! The row records the cluster's `system_identifier`: a database restored or copied onto another
//! cluster (a different identifier) refuses to generate until `set_worker_id()` confirms the id
//! there, since two clusters generating with one worker id would produce the same ids.
//!
//! The row is read with SPI once and cached per backend; the catalog trigger's relcache
//! invalidation (see `layouts`) drops the cache in every backend when the table changes. The
//! setting is read on every call, so `SET`, `ALTER DATABASE … SET` and reloads apply at once.
//!
//! With `pg_idgen.worker_id_source = citus` neither is used: the worker id is this node's Citus
//! group id (`pg_dist_local_group`: 0 on the coordinator, a number of its own on every worker,
//! never given to another node by Citus) plus `pg_idgen.citus_worker_id_base`, once the group is
//! in `pg_dist_node` (a worker not added yet still says group 0, the coordinator's).

use std::cell::Cell;

use pgrx::prelude::*;

use crate::catalog::{extension_schema, prevent_during_recovery, PinnedSearchPath};
use crate::errors::{raise, Code};
use crate::gucs;
use crate::tables;

/// What the table says: the worker id and the system identifier it was set on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stored {
    worker_id: i32,
    system_identifier: u64,
}

thread_local! {
    /// `None`: not read yet (or invalidated); `Some(None)`: no row.
    static CACHE: Cell<Option<Option<Stored>>> = const { Cell::new(None) };
    /// The Citus group id of this node, once it was found in `pg_dist_node` (it never changes
    /// then: a node removed and added again gets a new group, and the old one is retired).
    static CITUS_GROUP: Cell<Option<i64>> = const { Cell::new(None) };
}

/// Why the Citus group cannot give a worker id.
enum CitusGroup {
    Found(i64),
    NoCitus,
    NotInMetadata(i64),
}

fn citus_group() -> CitusGroup {
    if let Some(g) = CITUS_GROUP.with(|c| c.get()) {
        return CitusGroup::Found(g);
    }
    // Citus's own tables in pg_catalog (only a superuser creates relations there), read by OID
    // like the extension's tables: no SQL, so nothing for Citus's planner to route.
    // SAFETY: name lookups within pg_catalog, given by OID.
    let (local, nodes) = unsafe {
        (
            pg_sys::get_relname_relid(c"pg_dist_local_group".as_ptr(), pg_sys::PG_CATALOG_NAMESPACE.into()),
            pg_sys::get_relname_relid(c"pg_dist_node".as_ptr(), pg_sys::PG_CATALOG_NAMESPACE.into()),
        )
    };
    if local == pg_sys::InvalidOid || nodes == pg_sys::InvalidOid {
        return CitusGroup::NoCitus;
    }
    let mut group = None;
    if !tables::scan(local, |r| group = group.or(r.i64("groupid"))) {
        return CitusGroup::NoCitus;
    }
    let Some(group) = group else { return CitusGroup::NoCitus };
    let mut listed = false;
    tables::scan(nodes, |r| listed |= r.i64("groupid") == Some(group));
    if !listed {
        return CitusGroup::NotInMetadata(group);
    }
    if tables::fresh() {
        CITUS_GROUP.with(|c| c.set(Some(group)));
    }
    CitusGroup::Found(group)
}

/// The worker id of `pg_idgen.worker_id_source = citus`, or why there is none (SQLSTATE, message,
/// hint).
fn citus_worker_id() -> Result<i64, (Code, String, String)> {
    if let Some(w) = gucs::worker_id_setting() {
        return Err((
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("pg_idgen.worker_id is {w}, but pg_idgen.worker_id_source = citus takes the worker id from this node's Citus group"),
            "Remove pg_idgen.worker_id from postgresql.conf (and any SET of it): with worker_id_source = citus every node's worker id is its Citus group id.".into(),
        ));
    }
    let group = match citus_group() {
        CitusGroup::Found(g) => g,
        CitusGroup::NoCitus => {
            return Err((
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "pg_idgen.worker_id_source = citus, but the citus extension is not installed in this database".into(),
                "Generate ids in the database of the Citus cluster (CREATE EXTENSION citus there), or set pg_idgen.worker_id_source = default with a worker id of its own.".into(),
            ))
        }
        CitusGroup::NotInMetadata(g) => {
            return Err((
                Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("pg_idgen.worker_id_source = citus, but this node's Citus group {g} is not in pg_dist_node: the node is not part of a Citus cluster yet"),
                "On the coordinator: SELECT citus_set_coordinator_host('<host>', <port>); a worker: add it from the coordinator with citus_add_node() (its metadata then names its group).".into(),
            ))
        }
    };
    let w = gucs::citus_worker_id_base() + group;
    let layout = gucs::layout();
    if w as u64 > layout.max_worker() {
        return Err((
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!(
                "worker id {w} (Citus group {group} + pg_idgen.citus_worker_id_base {}) does not fit the {} worker bits of pg_idgen.layout (0 .. {})",
                gucs::citus_worker_id_base(),
                layout.worker_bits,
                layout.max_worker()
            ),
            "Choose a layout with more worker bits, or a smaller pg_idgen.citus_worker_id_base.".into(),
        ));
    }
    Ok(w)
}

fn citus_mode() -> bool {
    gucs::worker_id_source() == gucs::WorkerIdSource::Citus
}

pub fn invalidate() {
    let _ = CACHE.try_with(|c| c.set(None));
}

fn system_identifier() -> u64 {
    // SAFETY: reads the control file's identifier, set at startup.
    unsafe { pg_sys::GetSystemIdentifier() }
}

fn stored() -> Option<Stored> {
    if let Some(s) = CACHE.with(|c| c.get()) {
        return s;
    }
    // Read by OID with a fresh snapshot (see `tables`): a REPEATABLE READ session that began
    // before set_worker_id() must not cache, and generate with, the previous worker id.
    let mut row = None;
    tables::scan_extension_table(c"pg_idgen_worker", |r| {
        let sysid = r.get::<pgrx::AnyNumeric>("system_identifier").map(|n| n.to_string());
        row = Some((r.i64("worker_id").and_then(|w| i32::try_from(w).ok()), sysid));
    });
    // The table's NOT NULL and CHECK constraints make a row without both values impossible
    // unless it was edited by hand: say so rather than "not configured".
    let s = row.map(|(worker_id, sysid)| match (worker_id, sysid.as_deref().map(str::parse::<u64>)) {
        (Some(worker_id), Some(Ok(system_identifier))) => Stored { worker_id, system_identifier },
        _ => raise(
            Code::ERRCODE_DATA_CORRUPTED,
            "the row of pg_idgen_worker is invalid",
            Some("Store the worker id again with set_worker_id()."),
        ),
    });
    if tables::fresh() {
        CACHE.with(|c| c.set(Some(s)));
    }
    s
}

/// This session's worker id if one is configured and usable, without raising (with an
/// automatic lease and nothing configured: the leased id).
pub fn resolve_quietly() -> Option<i64> {
    if citus_mode() {
        return citus_worker_id().ok();
    }
    if let Some(w) = gucs::worker_id_setting() {
        return Some(w as i64);
    }
    stored()
        .filter(|s| {
            s.system_identifier == system_identifier() && s.worker_id as u64 <= gucs::layout().max_worker()
        })
        .map(|s| s.worker_id as i64)
        .or_else(|| crate::lease::summary().and_then(|(id, _)| id))
}

/// The worker id this session configured (setting, else table row), None when neither; raises
/// when the stored one was made on another cluster or does not fit the layout.
pub fn configured() -> Option<i64> {
    if citus_mode() {
        return match citus_worker_id() {
            Ok(w) => Some(w),
            Err((code, message, hint)) => raise(code, message, Some(&hint)),
        };
    }
    if let Some(w) = gucs::worker_id_setting() {
        return Some(w as i64);
    }
    let s = stored()?;
    let here = system_identifier();
    if s.system_identifier != here {
        raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "pg_idgen worker id {} of this database was set on another cluster (system identifier {}; this cluster is {})",
                s.worker_id, s.system_identifier, here
            ),
            Some(&format!(
                "This database was restored or copied from another cluster. If that cluster no longer generates ids with worker id {}, confirm it with SELECT set_worker_id({}); otherwise choose an unused worker id.",
                s.worker_id, s.worker_id
            )),
        );
    }
    let layout = gucs::layout();
    if s.worker_id as u64 > layout.max_worker() {
        raise(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!(
                "stored worker id {} does not fit the {} worker bits of pg_idgen.layout (0 .. {})",
                s.worker_id,
                layout.worker_bits,
                layout.max_worker()
            ),
            Some("Store a smaller one with set_worker_id()."),
        );
    }
    Some(s.worker_id as i64)
}

/// Stores this database's worker id, for sessions where `pg_idgen.worker_id` is not set, with
/// this cluster's system identifier; on a restored or copied database it confirms the id.
#[pg_extern(volatile, parallel_unsafe, strict)]
fn set_worker_id(worker_id: i32) {
    prevent_during_recovery(c"set_worker_id()");
    if citus_mode() {
        raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "set_worker_id() is not used with pg_idgen.worker_id_source = citus: the worker id is this node's Citus group id",
            None,
        );
    }
    let layout = gucs::layout();
    if worker_id < 0 || worker_id as u64 > layout.max_worker() {
        raise(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!(
                "worker id {worker_id} does not fit the {} worker bits of pg_idgen.layout (0 .. {})",
                layout.worker_bits,
                layout.max_worker()
            ),
            None,
        );
    }
    crate::lease::check_stored_worker_id(worker_id as i64);
    let upsert = format!(
        "INSERT INTO {}.pg_idgen_worker (worker_id, system_identifier) VALUES ($1, $2::pg_catalog.numeric) \
         ON CONFLICT (singleton) DO UPDATE SET worker_id = EXCLUDED.worker_id, \
         system_identifier = EXCLUDED.system_identifier, set_at = pg_catalog.now(), set_by = current_user",
        extension_schema()
    );
    let sysid = system_identifier().to_string();
    let _path = PinnedSearchPath::new();
    Spi::connect_mut(|client| {
        client.update(upsert.as_str(), None, &[worker_id.into(), sysid.as_str().into()]).map(|_| ())
    })
    .unwrap_or_else(|e| {
        raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not store the worker id: {e}"), None)
    });
}

/// Removes this database's stored worker id.
#[pg_extern(volatile, parallel_unsafe)]
fn clear_worker_id() -> bool {
    prevent_during_recovery(c"clear_worker_id()");
    let delete = format!("DELETE FROM {}.pg_idgen_worker", extension_schema());
    let _path = PinnedSearchPath::new();
    Spi::connect_mut(|client| client.update(delete.as_str(), None, &[]).map(|t| !t.is_empty()))
        .unwrap_or_else(|e| {
            raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not clear the worker id: {e}"), None)
        })
}

/// Where this session's worker id comes from: `setting` (pg_idgen.worker_id), `table`
/// (set_worker_id) or `lease` (pg_idgen.lease_mode = auto, nothing configured), for a stored one
/// the system identifier it was set on and whether that is this cluster, and with leases on the
/// lease's state (`off` without). (Symbol `snowflake_worker_with_lease_wrapper`: the four-column
/// form of 0.1.0 and 0.2.0 had `snowflake_worker_wrapper`, kept in `compat`.)
#[pg_extern(volatile, parallel_restricted, name = "snowflake_worker")]
#[allow(clippy::type_complexity)]
fn snowflake_worker_with_lease() -> TableIterator<
    'static,
    (
        name!(worker_id, Option<i32>),
        name!(source, Option<String>),
        name!(system_identifier, Option<String>),
        name!(confirmed, Option<bool>),
        name!(lease, String),
    ),
> {
    let lease = crate::lease::summary();
    let lease_text = lease.as_ref().map_or_else(|| "off".to_string(), |(_, t)| t.clone());
    if citus_mode() {
        let w = citus_worker_id().ok().and_then(|w| i32::try_from(w).ok());
        return TableIterator::once((w, Some("citus".to_string()), None, None, lease_text));
    }
    let row = match (gucs::worker_id_setting(), stored()) {
        (Some(w), _) => (Some(w), Some("setting".to_string()), None, None, lease_text),
        (None, Some(s)) => (
            Some(s.worker_id),
            Some("table".to_string()),
            Some(s.system_identifier.to_string()),
            Some(s.system_identifier == system_identifier()),
            lease_text,
        ),
        (None, None) => match lease {
            Some((Some(id), text)) if gucs::lease_mode() == gucs::LeaseMode::Auto => {
                (i32::try_from(id).ok(), Some("lease".to_string()), None, None, text)
            }
            _ => (None, None, None, None, lease_text),
        },
    };
    TableIterator::once(row)
}
