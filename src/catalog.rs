//! Catalog helpers shared by every module: where the extension's tables are, how the extension's
//! own SQL runs, and the recovery checks of catalog writers.
//!
//! Security rules for every statement the extension runs (see docs/security.md):
//!
//! * The extension's schema is found by OID in Rust ([`extension_schema`]): a scan of
//!   `pg_extension` through its OID index and `get_namespace_name`, quoted with
//!   `quote_identifier`. No SQL text is ever computed in the caller's context.
//! * Every SPI statement runs under [`PinnedSearchPath`] (`search_path = pg_catalog, pg_temp`),
//!   or under [`RunAs`], which pins the same path: a caller's schema of shadowing functions,
//!   operators or types is never searched. The statements also spell out `OPERATOR(pg_catalog.=)`
//!   and `pg_catalog.` functions, so that a mistake in one of the two defences is not enough.
//! * Restoring the saved user and GUC nest level is left to transaction (or subtransaction)
//!   abort while an ERROR unwinds (`std::thread::panicking()`): abort restores both, and doing
//!   database work in a `Drop` during unwinding is not allowed.

use std::ffi::CStr;

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::errors::{raise, Code};

/// The per-backend caches of the other modules, dropped on every relcache invalidation. Set once
/// by [`init`]. (The extension's schema name is never cached: a schema can be renamed, which
/// sends no relcache invalidation, and a stale name would send statements to another schema.)
static mut INVALIDATORS: &[fn()] = &[];

/// Registers the relcache callback that drops the caches of catalog contents:
/// `invalidators` (custom layouts, the stored worker id). Called from `_PG_init` in every backend.
pub fn init(invalidators: &'static [fn()]) {
    // SAFETY: _PG_init runs once per process before any SQL; the callback only clears caches.
    unsafe {
        INVALIDATORS = invalidators;
        pg_sys::CacheRegisterRelcacheCallback(Some(on_relcache_invalidation), pg_sys::Datum::from(0));
    }
}

/// Relcache callback: an invalidation of one of the extension's tables (or a full reset) empties
/// every per-backend cache of their contents. The tables' OIDs are not known without a catalog
/// lookup, which a callback must not do; the caches are tiny and cheap to refill, so any
/// invalidation drops them.
#[pg_guard]
unsafe extern "C-unwind" fn on_relcache_invalidation(_arg: pg_sys::Datum, _relid: pg_sys::Oid) {
    // SAFETY: INVALIDATORS is written once in `init`, before this callback can run.
    for invalidate in unsafe { INVALIDATORS } {
        invalidate();
    }
}

/// The OIDs of the namespace pg_idgen is installed in and of the extension, or `None` when it is
/// not installed in this database. A scan of `pg_extension` by OID through its index: no SQL.
pub fn extension_namespace_and_oid() -> Option<(pg_sys::Oid, pg_sys::Oid)> {
    // SAFETY: plain catalog access from a backend inside a transaction (every caller is a SQL
    // function); the scan, the tuple and the relation are released before returning, and an
    // ERROR in between is cleaned up by transaction abort (resource owner).
    unsafe {
        let ext = pg_sys::get_extension_oid(c"pg_idgen".as_ptr(), true);
        if ext == pg_sys::InvalidOid {
            return None;
        }
        let rel = pg_sys::table_open(pg_sys::ExtensionRelationId, pg_sys::AccessShareLock as i32);
        let mut key = std::mem::MaybeUninit::<pg_sys::ScanKeyData>::zeroed();
        pg_sys::ScanKeyInit(
            key.as_mut_ptr(),
            pg_sys::Anum_pg_extension_oid as i16,
            pg_sys::BTEqualStrategyNumber as u16,
            pg_sys::Oid::from(pg_sys::F_OIDEQ),
            pg_sys::Datum::from(ext),
        );
        let scan = pg_sys::systable_beginscan(
            rel,
            pg_sys::Oid::from(pg_sys::ExtensionOidIndexId),
            true,
            std::ptr::null_mut(),
            1,
            key.as_mut_ptr(),
        );
        let tuple = pg_sys::systable_getnext(scan);
        let nsp = pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_extension>(tuple)
            .as_ref()
            .map(|form| (form.extnamespace, ext));
        let sql_version = if tuple.is_null() {
            None
        } else {
            let mut isnull = false;
            let d = pg_sys::heap_getattr(
                tuple,
                pg_sys::Anum_pg_extension_extversion as i32,
                (*rel).rd_att,
                &mut isnull,
            );
            (!isnull).then(|| pgrx::text_to_rust_str(d.cast_mut_ptr()).unwrap_or("?").to_owned())
        };
        pg_sys::systable_endscan(scan);
        pg_sys::table_close(rel, pg_sys::AccessShareLock as i32);
        if let Some(v) = sql_version {
            check_sql_version(ext, &v);
        }
        nsp
    }
}

/// The version of the library (the one `default_version` in the control file names).
pub const LIBRARY_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The library only works on the SQL objects of its own version: after a package upgrade, a
/// database still at an older version (before `ALTER EXTENSION pg_idgen UPDATE`) gets this
/// error from every function that reads the extension's tables, instead of acting on tables
/// and functions whose shape it does not know. The upgrade scripts themselves run while
/// `pg_extension` says the version they upgrade to, or an intermediate one: allowed while this
/// extension is being created or updated.
fn check_sql_version(ext: pg_sys::Oid, sql_version: &str) {
    if sql_version == LIBRARY_VERSION {
        return;
    }
    // SAFETY: plain reads of two backend globals set by CREATE/ALTER EXTENSION.
    if unsafe { pg_sys::creating_extension && pg_sys::CurrentExtensionObject == ext } {
        return;
    }
    version_mismatch(sql_version)
}

/// Raises 55000: the installed SQL objects are of another version than the loaded library.
pub fn version_mismatch(sql_version: &str) -> ! {
    crate::errors::raise_full(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!(
            "pg_idgen {sql_version} is installed in this database, but the loaded library is {LIBRARY_VERSION}"
        ),
        Some(
            "The extension's SQL objects and the library must be of the same version: the package was upgraded and this database was not."
                .to_string(),
        ),
        Some(&format!("Run ALTER EXTENSION pg_idgen UPDATE TO '{LIBRARY_VERSION}' in this database.")),
    )
}

/// Raises 55000: the extension is not installed in this database.
pub fn not_installed() -> ! {
    raise(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        "extension \"pg_idgen\" is not installed in this database",
        Some("Run CREATE EXTENSION pg_idgen."),
    )
}

/// The quoted name of the extension's schema, looked up by OID at every call (never cached; see
/// `INVALIDATORS`). Only the administration functions, which only superusers run, build
/// statements with it; reads go through `tables`, by OID.
pub fn extension_schema() -> String {
    let Some((nsp, _)) = extension_namespace_and_oid() else { not_installed() };
    // SAFETY: get_namespace_name returns a palloc'd copy or NULL (namespace dropped meanwhile);
    // quote_identifier returns its argument or a palloc'd quoted copy; both are read at once.
    unsafe {
        let name = pg_sys::get_namespace_name(nsp);
        if name.is_null() {
            not_installed();
        }
        CStr::from_ptr(pg_sys::quote_identifier(name)).to_string_lossy().into_owned()
    }
}

/// `schema.relation` of a relation given by OID, both parts quoted, built in Rust from the
/// catalog (for statements about a sequence we created). None if the relation does not exist.
pub fn qualified_relation_name(relid: pg_sys::Oid) -> Option<String> {
    // SAFETY: lsyscache lookups return palloc'd copies or NULL; quote_qualified_identifier
    // returns a palloc'd string. Read at once.
    unsafe {
        let name = pg_sys::get_rel_name(relid);
        if name.is_null() {
            return None;
        }
        let nsp = pg_sys::get_namespace_name(pg_sys::get_rel_namespace(relid));
        if nsp.is_null() {
            return None;
        }
        Some(CStr::from_ptr(pg_sys::quote_qualified_identifier(nsp, name)).to_string_lossy().into_owned())
    }
}

/// Raises 25006 on a hot standby before a function that writes the catalog tables.
pub fn prevent_during_recovery(what: &CStr) {
    // SAFETY: `what` is a NUL-terminated string that outlives the call.
    unsafe { pg_sys::PreventCommandDuringRecovery(what.as_ptr()) };
}

/// A setting changed for a while, in a GUC nest level of its own: restored on drop, or by
/// (sub)transaction abort (which pops every nest level above its own) while an ERROR unwinds.
pub struct LocalSetting(i32);

impl LocalSetting {
    pub fn set(name: &CStr, value: &CStr) -> LocalSetting {
        // SAFETY: called from a backend in a transaction; the nest level is closed by Drop or by
        // abort.
        unsafe {
            let nest = pg_sys::NewGUCNestLevel();
            pg_sys::set_config_option(
                name.as_ptr(),
                value.as_ptr(),
                pg_sys::GucContext::PGC_USERSET,
                pg_sys::GucSource::PGC_S_SESSION,
                pg_sys::GucAction::GUC_ACTION_SAVE,
                true,
                0,
                false,
            );
            LocalSetting(nest)
        }
    }
}

impl Drop for LocalSetting {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return; // an ERROR is unwinding: abort pops the nest level
        }
        // SAFETY: pops the nest level opened in `set`, on the same backend.
        unsafe { pg_sys::AtEOXact_GUC(true, self.0) };
    }
}

/// `search_path = pg_catalog, pg_temp`, pinned for the statements the extension runs.
pub struct PinnedSearchPath(#[allow(dead_code)] LocalSetting);

impl PinnedSearchPath {
    pub fn new() -> PinnedSearchPath {
        PinnedSearchPath(LocalSetting::set(c"search_path", c"pg_catalog, pg_temp"))
    }
}

/// Runs as another role — the bootstrap superuser, or (`role`) a table's owner as a
/// security-restricted operation — with the search path pinned (see [`PinnedSearchPath`]):
/// reading pg_idgen_segments and calling nextval on a tag's sequence are the extension's
/// business, not something every caller of segment_next needs privileges for. Restored on drop,
/// or by (sub)transaction abort while an ERROR unwinds.
pub struct RunAs {
    user: pg_sys::Oid,
    context: i32,
    _path: PinnedSearchPath,
}

impl RunAs {
    pub fn superuser() -> RunAs {
        RunAs::role(pg_sys::Oid::from(pg_sys::BOOTSTRAP_SUPERUSERID), false)
    }

    /// As `role`; `restricted` adds SECURITY_RESTRICTED_OPERATION (what a SECURITY DEFINER
    /// function's owner switch for maintenance commands does).
    pub fn role(role: pg_sys::Oid, restricted: bool) -> RunAs {
        let (mut user, mut context) = (pg_sys::Oid::INVALID, 0);
        // SAFETY: reads and sets the backend's current user; `SECURITY_LOCAL_USERID_CHANGE`
        // marks the change as local, as SECURITY DEFINER functions do.
        unsafe {
            pg_sys::GetUserIdAndSecContext(&mut user, &mut context);
            let path = PinnedSearchPath::new();
            let mut flags = pg_sys::SECURITY_LOCAL_USERID_CHANGE as i32;
            if restricted {
                flags |= pg_sys::SECURITY_RESTRICTED_OPERATION as i32;
            }
            pg_sys::SetUserIdAndSecContext(role, context | flags);
            RunAs { user, context, _path: path }
        }
    }
}

impl Drop for RunAs {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return; // abort restores the user id and security context
        }
        // SAFETY: restores what `role` saved, on the same backend.
        unsafe { pg_sys::SetUserIdAndSecContext(self.user, self.context) };
    }
}

/// Whether a relation exists, as of now (after taking `lock` on it, which waits for a
/// transaction that is dropping it, and processing the invalidations that brings).
pub fn relation_exists_locked(relid: pg_sys::Oid, lock: u32) -> bool {
    // SAFETY: LockRelationOid on an OID that may no longer exist is allowed (it only locks the
    // tag) and accepts invalidation messages; the syscache probe copies nothing.
    unsafe {
        pg_sys::LockRelationOid(relid, lock as i32);
        let exists = !pg_sys::get_rel_name(relid).is_null();
        pg_sys::UnlockRelationOid(relid, lock as i32);
        exists
    }
}

/// Whether the role running the query may see every row of the extension's statistics: a
/// superuser or a member of `pg_read_all_stats`, as for pg_stat_statements.
pub fn can_read_all_stats() -> bool {
    // SAFETY: plain privilege checks on the current user.
    unsafe {
        let me = pg_sys::GetUserId();
        pg_sys::superuser()
            || pg_sys::has_privs_of_role(me, pg_sys::Oid::from(pg_sys::ROLE_PG_READ_ALL_STATS))
    }
}

/// The trigger manager's data of a call of the plain V1 trigger function `function`; 39P01 when
/// it is called any other way (CALLED_AS_TRIGGER).
///
/// # Safety
/// `fcinfo` is the call frame PostgreSQL passed to `function`.
pub unsafe fn trigger_data(fcinfo: pg_sys::FunctionCallInfo, function: &str) -> *mut pg_sys::TriggerData {
    // SAFETY: `fcinfo` is PostgreSQL's call frame (the caller's contract); `context` is a
    // TriggerData node exactly when the trigger manager made the call.
    unsafe {
        let context = (*fcinfo).context;
        if context.is_null() || (*context).type_ != pg_sys::NodeTag::T_TriggerData {
            raise(
                Code::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
                format!("{function}() can only be called as a trigger"),
                None,
            );
        }
        context.cast::<pg_sys::TriggerData>()
    }
}

/// An SPI call failed: say which, with PostgreSQL's message (never another meaning).
pub fn spi_failed(what: &str, e: pgrx::spi::Error) -> ! {
    raise(Code::ERRCODE_INTERNAL_ERROR, format!("pg_idgen could not {what}: {e}"), None)
}

/// The first `{schema}.{prefix}<n>`, for `n` in `from ..= from + tries`, that names no relation
/// (a backing sequence's name is generated, never derived from what the user named).
pub fn free_relation_name(schema: &str, prefix: &str, from: i64, tries: i64) -> Option<String> {
    for n in from..=from.saturating_add(tries) {
        let name = format!("{schema}.{prefix}{n}");
        let taken: Option<bool> = pgrx::spi::Spi::get_one_with_args(
            "SELECT pg_catalog.to_regclass($1) IS NOT NULL",
            &[name.as_str().into()],
        )
        .unwrap_or_else(|e| spi_failed("name the backing sequence", e));
        if taken == Some(false) {
            return Some(name);
        }
    }
    None
}

/// The new row of a call of `function`, a row trigger AFTER INSERT OR UPDATE on one of the
/// tables that name a backing sequence in their `seq` column (tags, slots, keyed spaces).
pub struct BackingRow {
    /// The table the trigger fired on, and its owner.
    pub table: pg_sys::Oid,
    pub table_owner: pg_sys::Oid,
    /// The attribute number of its `seq` column.
    pub seq_attnum: i16,
    /// The row's sequence (None if NULL).
    pub seq: Option<pg_sys::Oid>,
    /// The row's value of `name_column` ("" if NULL, or if the table has no such column).
    pub name: String,
}

/// The row a backing-sequence trigger fires for; 39P01 unless the trigger manager called
/// `function` as a row trigger on INSERT or UPDATE of a table with a `seq` column.
///
/// # Safety
/// `fcinfo` is the call frame PostgreSQL passed to `function`.
pub unsafe fn backing_row(
    fcinfo: pg_sys::FunctionCallInfo,
    function: &str,
    name_column: &CStr,
) -> BackingRow {
    // SAFETY: `trigger_data` checked that `context` is a TriggerData node; its row (the new one
    // for an UPDATE) and its relation's descriptor are valid for the duration of the call.
    unsafe {
        let data = trigger_data(fcinfo, function);
        let event = (*data).tg_event;
        let op = event & pg_sys::TRIGGER_EVENT_OPMASK;
        if event & pg_sys::TRIGGER_EVENT_ROW == 0
            || !(op == pg_sys::TRIGGER_EVENT_INSERT || op == pg_sys::TRIGGER_EVENT_UPDATE)
        {
            raise(
                Code::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
                format!("{function}() must be a row trigger on INSERT or UPDATE"),
                None,
            );
        }
        let row = if op == pg_sys::TRIGGER_EVENT_UPDATE { (*data).tg_newtuple } else { (*data).tg_trigtuple };
        let rel = (*data).tg_relation;
        let table = (*rel).rd_id;
        let seq_attnum = pg_sys::get_attnum(table, c"seq".as_ptr());
        if seq_attnum <= 0 {
            raise(
                Code::ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED,
                format!("{function}() fires on a table without a \"seq\" column"),
                None,
            );
        }
        let mut seq_null = false;
        let seq = pg_sys::heap_getattr(row, seq_attnum as i32, (*rel).rd_att, &mut seq_null);
        let name_attnum = pg_sys::get_attnum(table, name_column.as_ptr());
        let mut name_null = true;
        let name = if name_attnum > 0 {
            pg_sys::heap_getattr(row, name_attnum as i32, (*rel).rd_att, &mut name_null)
        } else {
            pg_sys::Datum::from(0)
        };
        BackingRow {
            table,
            table_owner: (*(*rel).rd_rel).relowner,
            seq_attnum,
            seq: (!seq_null).then(|| pg_sys::Oid::from(seq.value() as u32)),
            name: if name_null {
                String::new()
            } else {
                pgrx::text_to_rust_str(name.cast_mut_ptr()).unwrap_or("?").to_owned()
            },
        }
    }
}

/// Deletes the rows of the extension's table `table` whose `column` is `key` (SPI, as the
/// current user), returning their `seq` column: the backing sequences to drop.
pub fn delete_returning_seqs(
    schema: &str,
    table: &str,
    column: &str,
    key: &str,
) -> Result<Vec<pg_sys::Oid>, pgrx::spi::Error> {
    pgrx::spi::Spi::connect_mut(|c| {
        let t = c.update(
            &format!(
                "DELETE FROM {schema}.{table} WHERE {column} OPERATOR(pg_catalog.=) $1 RETURNING seq::pg_catalog.oid"
            ),
            None,
            &[key.into()],
        )?;
        t.into_iter().map(|r| r.get::<pg_sys::Oid>(1).map(|o| o.unwrap_or(pg_sys::InvalidOid))).collect()
    })
}

crate::fmgr::pg_function_info_v1!(pg_finfo_pg_idgen_catalog_changed);

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
        let data = trigger_data(fcinfo, "pg_idgen_catalog_changed");
        pg_sys::CacheInvalidateRelcacheByRelid((*(*data).tg_relation).rd_id);
        // A statement trigger returns a NULL pointer (not an SQL NULL: that is an error).
        pg_sys::Datum::from(0)
    }
}
