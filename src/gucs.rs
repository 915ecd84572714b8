//! Configuration: every `pg_idgen.*` setting, its validation, and typed accessors.
//!
//! | setting | type | default | context |
//! |---|---|---|---|
//! | `pg_idgen.layout` | string | `default` | postmaster |
//! | `pg_idgen.worker_id` | int, -1 = unset | -1 | superuser |
//! | `pg_idgen.worker_id_source` | enum default/citus | default | postmaster |
//! | `pg_idgen.citus_worker_id_base` | int, 0–16777215 | 0 | postmaster |
//! | `pg_idgen.max_drift_ms` | int ms | 1000 | sighup |
//! | `pg_idgen.max_wait_ms` | int ms | 100 | user |
//! | `pg_idgen.reserve_ms` | int ms | 1000 | sighup |
//! | `pg_idgen.clock_skew_ms` | int ms, 0–600000 | 250 | sighup |
//! | `pg_idgen.sequence_start` | enum | `vibrate` | user |
//! | `pg_idgen.max_segments` | int | 256 | postmaster |
//! | `pg_idgen.keyed_cache_size` | int | 100000 | postmaster |
//! | `pg_idgen.lease_mode` | enum off/fixed/auto | off | postmaster |
//! | `pg_idgen.registry` | string (conninfo), no password (refused) | empty | sighup |
//! | `pg_idgen.lease_range` | string `lo-hi` | `0-1023` | postmaster |
//! | `pg_idgen.node_name` | string | empty | postmaster |
//! | `pg_idgen.lease_ttl` | int s | 30 | sighup |
//! | `pg_idgen.lease_margin` | int s | 5 | sighup |
//! | `pg_idgen.lease_retire` | int s | 604800 (7 days) | sighup |
//!
//! Values are validated by check hooks, so a bad value is refused at `SET`, at reload and at
//! start. A bad value in postgresql.conf at start would only be a WARNING for a custom setting,
//! so `init` re-raises it as an ERROR: the server refuses to start with an invalid layout or a
//! worker id the layout cannot hold.

use std::cell::RefCell;
use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::OnceLock;

use pg_idgen_core::{Layout, SequenceStart};
use pgrx::guc::{GucContext, GucEnum, GucFlags, GucRegistry, GucSetting};
use pgrx::prelude::*;
use pgrx::{pg_sys, PostgresGucEnum};

use crate::errors::{raise, Code};

pub static LAYOUT: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"default"));
pub static WORKER_ID: GucSetting<i32> = GucSetting::<i32>::new(-1);
pub static WORKER_ID_SOURCE: GucSetting<WorkerIdSource> =
    GucSetting::<WorkerIdSource>::new(WorkerIdSource::Default);
/// Added to the Citus group id in `pg_idgen.worker_id_source = citus`: several Citus clusters whose
/// rows meet each get a range of their own.
pub static CITUS_WORKER_ID_BASE: GucSetting<i32> = GucSetting::<i32>::new(0);
pub static MAX_DRIFT_MS: GucSetting<i32> = GucSetting::<i32>::new(1000);
pub static MAX_WAIT_MS: GucSetting<i32> = GucSetting::<i32>::new(100);
pub static RESERVE_MS: GucSetting<i32> = GucSetting::<i32>::new(1000);
pub static CLOCK_SKEW_MS: GucSetting<i32> = GucSetting::<i32>::new(250);
pub static MAX_SEGMENTS: GucSetting<i32> = GucSetting::<i32>::new(256);
pub const MAX_SEGMENTS_LIMIT: i32 = 1_000_000;
pub static KEYED_CACHE_SIZE: GucSetting<i32> = GucSetting::<i32>::new(100_000);
pub const KEYED_CACHE_MIN: i32 = 1_000;
pub const KEYED_CACHE_MAX: i32 = 100_000_000;
pub static SEQUENCE_START: GucSetting<StartSetting> = GucSetting::<StartSetting>::new(StartSetting::Vibrate);
pub static LEASE_MODE: GucSetting<LeaseMode> = GucSetting::<LeaseMode>::new(LeaseMode::Off);
pub static REGISTRY: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
pub static LEASE_RANGE: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"0-1023"));
pub static NODE_NAME: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
pub static LEASE_TTL: GucSetting<i32> = GucSetting::<i32>::new(30);
pub static LEASE_MARGIN: GucSetting<i32> = GucSetting::<i32>::new(5);
pub static LEASE_RETIRE: GucSetting<i32> = GucSetting::<i32>::new(604_800);
pub static WARN_HORIZON: GucSetting<i32> = GucSetting::<i32>::new(31_536_000);
/// The database whose backends serve this node's registry-owned segment slots (unset: the first
/// database to use them after a start).
pub static REGISTRY_DATABASE: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
pub static MONITOR_DATABASE: GucSetting<Option<CString>> =
    GucSetting::<Option<CString>>::new(Some(c"postgres"));
pub static MONITOR_INTERVAL: GucSetting<i32> = GucSetting::<i32>::new(86_400);
/// Highest worker id a lease can hold: the id shares one 64-bit shared word with the lease's
/// end (`lease::shmem`), in 24 bits.
pub const LEASE_MAX_WORKER: i64 = pg_idgen_core::lease::MAX_WORKER;

/// `pg_idgen.lease_mode`: whether worker ids are leased from a registry (`lease`).
#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum LeaseMode {
    #[name = c"off"]
    Off,
    #[name = c"fixed"]
    Fixed,
    #[name = c"auto"]
    Auto,
}

/// `pg_idgen.worker_id_source`: `default` (the setting, else the database's row, else a lease) or
/// `citus` (this node's Citus group id, from `pg_dist_local_group`, plus
/// `pg_idgen.citus_worker_id_base`).
#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum WorkerIdSource {
    #[name = c"default"]
    Default,
    #[name = c"citus"]
    Citus,
}

#[derive(PostgresGucEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum StartSetting {
    #[name = c"zero"]
    Zero,
    #[name = c"vibrate"]
    Vibrate,
    #[name = c"random"]
    Random,
}

/// The layout in force, parsed once (the setting cannot change while the server runs).
static PARSED_LAYOUT: OnceLock<Layout> = OnceLock::new();

thread_local! {
    /// A value refused while postgresql.conf was first applied: raised by `init`.
    static STARTUP_REJECTION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// `pg_idgen.layout` as read when the library was not preloaded (a postmaster setting cannot be
/// defined after startup, so it stays a placeholder read with `GetConfigOption`).
static UNREGISTERED_LAYOUT: OnceLock<String> = OnceLock::new();

/// The generation layout of this server.
pub fn layout() -> &'static Layout {
    PARSED_LAYOUT.get_or_init(|| {
        let spec = match UNREGISTERED_LAYOUT.get() {
            Some(s) => s.clone(),
            None => LAYOUT.get().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
        };
        Layout::parse(&spec).unwrap_or_else(|e| {
            raise(Code::ERRCODE_INVALID_PARAMETER_VALUE, format!("invalid pg_idgen.layout: {e}"), None)
        })
    })
}

/// Whether `pg_idgen.lease_mode` is off, without the conversion that panics on an unknown value
/// (never raises: for `snowflake_next`'s path outside the error guard).
#[inline]
pub fn lease_mode_is_off() -> bool {
    // SAFETY: as in `read_int`.
    unsafe { *LEASE_MODE.as_ptr() == LeaseMode::Off.to_ordinal() }
}

/// `policy()` without the conversion that panics on an unknown value: `None` for one (never
/// raises: for `snowflake_next`'s path outside the error guard).
#[inline]
pub fn policy_if_known() -> Option<pg_idgen_core::Policy> {
    // SAFETY: as in `read_int`.
    let ordinal = unsafe { *SEQUENCE_START.as_ptr() };
    let start = if ordinal == StartSetting::Vibrate.to_ordinal() {
        SequenceStart::Vibrate
    } else if ordinal == StartSetting::Zero.to_ordinal() {
        SequenceStart::Zero
    } else if ordinal == StartSetting::Random.to_ordinal() {
        SequenceStart::Random
    } else {
        return None;
    };
    Some(pg_idgen_core::Policy {
        max_drift_ms: read_int(&MAX_DRIFT_MS) as i64,
        max_wait_ms: read_int(&MAX_WAIT_MS) as i64,
        start,
        reserve_window_ms: reserve_window_ms(),
    })
}

/// The layout in force when it was parsed already (never raises; `layout` parses it).
#[inline]
pub fn layout_if_parsed() -> Option<&'static Layout> {
    PARSED_LAYOUT.get()
}

/// Reads an int setting on the hot path. `GucSetting::get` also checks that it runs on the
/// backend's main thread; `snowflake_next` is only ever called there, so the check is skipped.
#[inline]
fn read_int(setting: &'static GucSetting<i32>) -> i32 {
    // SAFETY: the variable is only written by guc.c, on this same (only) backend thread.
    unsafe { *setting.as_ptr() }
}

/// The worker id from `pg_idgen.worker_id`, if set.
pub fn worker_id_setting() -> Option<i32> {
    let w = read_int(&WORKER_ID);
    (w >= 0).then_some(w)
}

/// `pg_idgen.worker_id_source` (fixed at start; `default` when the library was not preloaded).
pub fn worker_id_source() -> WorkerIdSource {
    // SAFETY: as in `read_int`; guc.c only stores ordinals of WorkerIdSource's values.
    WorkerIdSource::from_ordinal(unsafe { *WORKER_ID_SOURCE.as_ptr() })
}

/// `pg_idgen.citus_worker_id_base`.
pub fn citus_worker_id_base() -> i64 {
    read_int(&CITUS_WORKER_ID_BASE) as i64
}

/// `pg_idgen.lease_mode` (fixed at start).
pub fn lease_mode() -> LeaseMode {
    // SAFETY: as in `read_int`; guc.c only stores ordinals of LeaseMode's values.
    LeaseMode::from_ordinal(unsafe { *LEASE_MODE.as_ptr() })
}

/// A string setting as Rust text ("" when unset).
pub fn string_setting(setting: &'static GucSetting<Option<CString>>) -> String {
    setting.get().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// An int setting (read on the backend's or worker's main thread).
pub fn int_setting(setting: &'static GucSetting<i32>) -> i32 {
    read_int(setting)
}

/// Parses `pg_idgen.lease_range`: `lo-hi`, both within 0 .. max.
pub fn parse_lease_range(text: &str, max: i64) -> Result<(i64, i64), String> {
    pg_idgen_core::lease::parse_range(text, max)
}

/// `pg_idgen.lease_range` as numbers (validated at start).
pub fn lease_range() -> (i64, i64) {
    parse_lease_range(&string_setting(&LEASE_RANGE), lease_max_worker()).unwrap_or((0, 0))
}

/// The largest worker id a lease can hold with this server's layout.
pub fn lease_max_worker() -> i64 {
    (layout().max_worker() as i64).min(LEASE_MAX_WORKER)
}

/// The reservation window actually used: `pg_idgen.reserve_ms`, but at most
/// `pg_idgen.max_drift_ms + 1000`. After a crash, generation restarts at the end of the last
/// reservation; ids may run at most `max_drift_ms` ahead of the clock, so a longer reservation
/// would make the restarted server refuse ids until the clock catches up. The bound keeps that
/// wait under a second whatever the two settings are.
pub fn reserve_window_ms() -> i64 {
    (read_int(&RESERVE_MS) as i64).min(read_int(&MAX_DRIFT_MS) as i64 + 1000)
}

/// `pg_idgen.max_drift_ms`.
pub fn max_drift_ms() -> i64 {
    read_int(&MAX_DRIFT_MS) as i64
}

/// `pg_idgen.clock_skew_ms`: the largest difference between the system clocks of the servers
/// of one replication group that the promotion floor allows for, on top of the difference a
/// standby's WAL receiver saw.
pub fn clock_skew_ms() -> i64 {
    read_int(&CLOCK_SKEW_MS) as i64
}

pub fn policy() -> pg_idgen_core::Policy {
    // SAFETY: as in `read_int`; guc.c only stores ordinals of StartSetting's values.
    let start = match StartSetting::from_ordinal(unsafe { *SEQUENCE_START.as_ptr() }) {
        StartSetting::Zero => SequenceStart::Zero,
        StartSetting::Vibrate => SequenceStart::Vibrate,
        StartSetting::Random => SequenceStart::Random,
    };
    pg_idgen_core::Policy {
        max_drift_ms: read_int(&MAX_DRIFT_MS) as i64,
        max_wait_ms: read_int(&MAX_WAIT_MS) as i64,
        start,
        reserve_window_ms: reserve_window_ms(),
    }
}

unsafe fn set_check_detail(msg: &str) {
    let c = CString::new(msg.replace('\0', "")).unwrap_or_default();
    // GUC_check_errdetail_string must be palloc'd; guc.c frees it with the error.
    // SAFETY: GUC_check_errdetail_string must be palloc'd; guc.c frees it with the error.
    unsafe { pg_sys::GUC_check_errdetail_string = pg_sys::pstrdup(c.as_ptr()) };
}

fn record_startup_rejection(name: &str, msg: &str) {
    // While the postmaster loads the library, a refused postgresql.conf value is only a
    // WARNING; remember it so `init` can refuse to start.
    if unsafe { pg_sys::process_shared_preload_libraries_in_progress } {
        STARTUP_REJECTION.with(|r| *r.borrow_mut() = Some(format!("invalid value for {name}: {msg}")));
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn check_layout(
    newval: *mut *mut c_char,
    _extra: *mut *mut c_void,
    _source: pg_sys::GucSource::Type,
) -> bool {
    // SAFETY: guc.c passes a valid pointer to a NUL-terminated string or NULL.
    let spec = unsafe {
        if newval.is_null() || (*newval).is_null() {
            return true;
        }
        CStr::from_ptr(*newval).to_string_lossy().into_owned()
    };
    match Layout::parse(&spec).and_then(|l| l.validate().map(|_| l)) {
        Ok(l) => {
            // The worker id may have been set before the layout (at start, settings are applied
            // in file order): check it against the new layout too.
            if let Some(w) = worker_id_setting() {
                if w as u64 > l.max_worker() {
                    let msg = format!(
                        "pg_idgen.worker_id {w} does not fit the {} worker bits of this layout (0 .. {})",
                        l.worker_bits,
                        l.max_worker()
                    );
                    record_startup_rejection("pg_idgen.layout", &msg);
                    unsafe { set_check_detail(&msg) };
                    return false;
                }
            }
            true
        }
        Err(e) => {
            record_startup_rejection("pg_idgen.layout", &e.to_string());
            unsafe { set_check_detail(&e.to_string()) };
            false
        }
    }
}

/// What a worker id from `source` meets where Citus is preloaded. With Citus the worker id comes
/// only from the node's own postgresql.conf (or the command line, `ALTER SYSTEM`) or from its
/// Citus group (`pg_idgen.worker_id_source = citus`): Citus carries settings made on one node to
/// the others, where they would override each node's own worker id with one for all.
enum WhereCitus {
    /// Not a setting Citus can carry: the node's own files and command line, or no Citus.
    Allowed,
    /// A session's `SET` / `SET LOCAL` / `set_config()` (`PGC_S_SESSION`), or a client's
    /// connection options (`PGC_S_CLIENT`): Citus sends `SET` and `SET LOCAL` to the nodes a
    /// transaction reaches (`citus.propagate_set_commands = 'local'`), so a session's worker id
    /// would generate on every worker at once. Refused (an ERROR).
    Session,
    /// The validation of `ALTER DATABASE / ALTER ROLE [ALL] [IN DATABASE] ... SET`
    /// (`PGC_S_TEST`) while Citus propagates DDL from this session: refused (an ERROR).
    Propagated,
    /// The same statement with `citus.enable_ddl_propagation` off, as Citus sends it when it
    /// replays the coordinator's stored settings on a node it adds or activates: the value is
    /// stored on this node only, and never applied here (`Stored`); refusing it would fail
    /// `citus_add_node` / `citus_activate_node`. Accepted with a WARNING.
    Replayed,
    /// A value stored in pg_db_role_setting applied at connection: `ALTER ROLE ALL ... SET`
    /// (`PGC_S_GLOBAL`), database, role, role in database (stored before Citus was loaded, or
    /// replayed by Citus). Not applied: guc.c makes the refusal a WARNING at connection and the
    /// node keeps its own worker id.
    Stored,
}

fn where_citus(source: pg_sys::GucSource::Type) -> WhereCitus {
    use pg_sys::GucSource::*;
    let carried = matches!(
        source,
        PGC_S_SESSION | PGC_S_CLIENT | PGC_S_TEST | PGC_S_GLOBAL | PGC_S_DATABASE | PGC_S_USER | PGC_S_DATABASE_USER
    );
    if !carried || !crate::citus::preloaded() {
        return WhereCitus::Allowed;
    }
    match source {
        PGC_S_SESSION | PGC_S_CLIENT => WhereCitus::Session,
        PGC_S_TEST if crate::citus::ddl_propagation_off() => WhereCitus::Replayed,
        PGC_S_TEST => WhereCitus::Propagated,
        _ => WhereCitus::Stored,
    }
}

const WHERE_CITUS_HINT: &str = "With Citus a node's worker id comes only from its own postgresql.conf (pg_idgen.worker_id) or from its Citus group: set pg_idgen.worker_id_source = citus in postgresql.conf of every node (each node's worker id is then its Citus group id).";
const RESET_HINT: &str = "This node keeps its own worker id. Remove the stored value (pg_db_role_setting lists them): ALTER DATABASE name RESET pg_idgen.worker_id; ALTER ROLE name [IN DATABASE name] RESET pg_idgen.worker_id; ALTER ROLE ALL [IN DATABASE name] RESET pg_idgen.worker_id.";

/// Refuses the value in a check hook with pg_idgen's message and hint (guc.c reports them with
/// SQLSTATE 22023: an ERROR, or at connection a WARNING).
unsafe fn refuse_with(message: &str, hint: &str) -> bool {
    let message = CString::new(message).unwrap_or_default();
    let hint = CString::new(hint).unwrap_or_default();
    // SAFETY: inside a GUC check hook; guc.c reports and frees these palloc'd strings.
    unsafe {
        pg_sys::GUC_check_errmsg_string = pg_sys::pstrdup(message.as_ptr());
        pg_sys::GUC_check_errhint_string = pg_sys::pstrdup(hint.as_ptr());
    }
    false
}

#[pg_guard]
unsafe extern "C-unwind" fn check_worker_id(
    newval: *mut i32,
    _extra: *mut *mut c_void,
    source: pg_sys::GucSource::Type,
) -> bool {
    // SAFETY: guc.c passes a valid pointer to the proposed value.
    let w = unsafe { *newval };
    if w < 0 {
        if w != -1 {
            unsafe { set_check_detail("use -1 for \"not set\"") };
            return false;
        }
        return true;
    }
    match where_citus(source) {
        WhereCitus::Allowed => {}
        WhereCitus::Session => {
            // SAFETY: inside this GUC check hook.
            return unsafe {
                refuse_with(
                    "pg_idgen.worker_id cannot be set in a session where Citus is loaded: Citus can send the SET to every node the transaction reaches (citus.propagate_set_commands), which would then generate with the same worker id",
                    WHERE_CITUS_HINT,
                )
            };
        }
        WhereCitus::Propagated => {
            // SAFETY: inside this GUC check hook.
            return unsafe {
                refuse_with(
                    "pg_idgen.worker_id cannot be set for a database or a role where Citus is loaded: Citus propagates the setting to every node, which would then generate with the same worker id",
                    WHERE_CITUS_HINT,
                )
            };
        }
        WhereCitus::Stored => {
            // SAFETY: inside this GUC check hook.
            return unsafe {
                refuse_with(
                    "pg_idgen.worker_id cannot be set for a database or a role where Citus is loaded: the stored value is not applied, Citus would carry it to every node",
                    RESET_HINT,
                )
            };
        }
        WhereCitus::Replayed => {
            crate::errors::warn(
                format!("pg_idgen.worker_id {w} for a database or a role is stored on this node only (citus.enable_ddl_propagation is off) and not applied where Citus is loaded"),
                Some(RESET_HINT),
            );
            return true;
        }
    }
    let spec = match UNREGISTERED_LAYOUT.get() {
        Some(s) => s.clone(),
        None => match LAYOUT.get() {
            Some(s) => s.to_string_lossy().into_owned(),
            None => return true,
        },
    };
    let Ok(l) = Layout::parse(&spec) else { return true };
    if w as u64 > l.max_worker() {
        let msg = format!(
            "worker id {w} does not fit the {} worker bits of pg_idgen.layout (0 .. {})",
            l.worker_bits,
            l.max_worker()
        );
        record_startup_rejection("pg_idgen.worker_id", &msg);
        unsafe { set_check_detail(&msg) };
        return false;
    }
    true
}

#[pg_guard]
unsafe extern "C-unwind" fn check_lease_range(
    newval: *mut *mut c_char,
    _extra: *mut *mut c_void,
    _source: pg_sys::GucSource::Type,
) -> bool {
    // SAFETY: guc.c passes a valid pointer to a NUL-terminated string or NULL.
    let text = unsafe {
        if newval.is_null() || (*newval).is_null() {
            return true;
        }
        CStr::from_ptr(*newval).to_string_lossy().into_owned()
    };
    // Syntax only: the layout may not be applied yet when this runs (the built-in default is
    // checked before postgresql.conf's layout), and the range matters only with leases on.
    // `init` checks it against the layout once every setting is in, when lease_mode is auto.
    match parse_lease_range(&text, LEASE_MAX_WORKER) {
        Ok(_) => true,
        Err(e) => {
            record_startup_rejection("pg_idgen.lease_range", &e);
            // SAFETY: inside a GUC check hook.
            unsafe { set_check_detail(&e) };
            false
        }
    }
}

/// `pg_idgen.registry`: refuses a string holding a password, or one that does not parse
/// (`lease::conninfo::setting_refusal`). The message replaces guc.c's "invalid value for
/// parameter ...: <value>", which would put the string into the server log and the client's
/// error.
#[pg_guard]
unsafe extern "C-unwind" fn check_registry(
    newval: *mut *mut c_char,
    _extra: *mut *mut c_void,
    _source: pg_sys::GucSource::Type,
) -> bool {
    // SAFETY: guc.c passes a valid pointer to the proposed value (NULL: unset).
    let text = unsafe {
        if (*newval).is_null() {
            return true;
        }
        CStr::from_ptr(*newval).to_string_lossy().into_owned()
    };
    let Some(reason) = crate::lease::conninfo::setting_refusal(&text) else {
        return true;
    };
    record_startup_rejection("pg_idgen.registry", &reason);
    let message = CString::new(format!("invalid value for parameter \"pg_idgen.registry\": {reason}"))
        .unwrap_or_default();
    let hint = CString::new(
        "Put the password into a password file (passfile=, libpq's .pgpass format, mode 0600) or authenticate with a client certificate (sslcert=, sslkey=); the value is not shown.",
    )
    .unwrap_or_default();
    // SAFETY: inside a GUC check hook; guc.c reports and frees these palloc'd strings.
    unsafe {
        pg_sys::GUC_check_errmsg_string = pg_sys::pstrdup(message.as_ptr());
        pg_sys::GUC_check_errhint_string = pg_sys::pstrdup(hint.as_ptr());
    }
    false
}

/// The lease settings (`lease`); only when preloaded (the lease worker is registered at start).
fn define_lease_settings() {
    // SAFETY: the GucSetting statics live forever; the hook is a guarded C-unwind function.
    unsafe {
        GucRegistry::define_string_guc_with_hooks(
            c"pg_idgen.lease_range",
            c"Worker ids pg_idgen.lease_mode = auto may take, as \"lo-hi\".",
            c"Every node of a fleet using one registry should use the same range. Fixed at server start.",
            &LEASE_RANGE,
            GucContext::Postmaster,
            GucFlags::default(),
            Some(check_lease_range),
            None,
            None,
        );
    }
    GucRegistry::define_enum_guc(
        c"pg_idgen.lease_mode",
        c"Whether the worker id is leased from a registry: off, fixed (lease pg_idgen.worker_id) or auto (lease a free id of pg_idgen.lease_range).",
        c"With a lease, snowflake_next() refuses to generate unless this node holds a valid lease of its worker id. Fixed at server start.",
        &LEASE_MODE,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    // SAFETY: as above.
    unsafe {
        GucRegistry::define_string_guc_with_hooks(
            c"pg_idgen.registry",
            c"Connection string of the worker-id registry (a database with the pg_idgen extension).",
            c"Read by the lease worker. Holds no password (refused): members of pg_read_all_settings can read it. Use a password file (passfile=) or a client certificate.",
            &REGISTRY,
            GucContext::Sighup,
            GucFlags::SUPERUSER_ONLY,
            Some(check_registry),
            None,
            None,
        );
    }
    GucRegistry::define_string_guc(
        c"pg_idgen.node_name",
        c"This node's name in the registry; with the system identifier, it makes an automatically leased worker id sticky.",
        c"Fixed at server start.",
        &NODE_NAME,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"pg_idgen.lease_ttl",
        c"Length of a worker id lease, in seconds, as the registry's clock counts it.",
        c"The lease worker renews it three times per lease; a node that cannot renew stops generating before it runs out.",
        &LEASE_TTL,
        2,
        86_400,
        GucContext::Sighup,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"pg_idgen.lease_margin",
        c"How long before the lease runs out (by the registry's clock) this node stops generating, in seconds.",
        c"Covers the drift of this node's clock rate against the registry's over one lease; at most half of pg_idgen.lease_ttl is used.",
        &LEASE_MARGIN,
        1,
        43_200,
        GucContext::Sighup,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"pg_idgen.lease_retire",
        c"How long an automatically leased worker id stays reserved for its node after its lease ended, in seconds.",
        c"Only then can pg_idgen.lease_mode = auto give it to another node.",
        &LEASE_RETIRE,
        0,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::UNIT_S,
    );
}

/// `pg_idgen.keyed_cache_size` (postmaster): how many keys' current values (and sections'
/// floors) the keyed sequences' shared cache holds.
fn define_keyed_cache_size() {
    // As for max_segments: a value out of range refuses the start (not a WARNING and the default).
    // SAFETY: GetConfigOption returns NULL or a string owned by guc.c, copied at once.
    let raw = unsafe { pg_sys::GetConfigOption(c"pg_idgen.keyed_cache_size".as_ptr(), true, false) };
    if !raw.is_null() {
        let text = unsafe { CStr::from_ptr(raw) }.to_string_lossy().into_owned();
        if !matches!(text.trim().parse::<i64>(), Ok(v) if (KEYED_CACHE_MIN as i64..=KEYED_CACHE_MAX as i64).contains(&v))
        {
            raise(
                Code::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("invalid value for pg_idgen.keyed_cache_size: \"{text}\""),
                Some("pg_idgen.keyed_cache_size must be an integer between 1000 and 100000000; the server does not start with it."),
            );
        }
    }
    GucRegistry::define_int_guc(
        c"pg_idgen.keyed_cache_size",
        c"Capacity of the keyed sequences' shared cache: keys' current values and sections' floors.",
        c"About 48 bytes an entry. Keys not cached continue from their section's floor, so only speed depends on it. Fixed at server start.",
        &KEYED_CACHE_SIZE,
        KEYED_CACHE_MIN,
        KEYED_CACHE_MAX,
        GucContext::Postmaster,
        GucFlags::default(),
    );
}

/// The monitor's settings (`monitor`); only when preloaded (its worker is registered at start).
fn define_monitor_settings() {
    GucRegistry::define_int_guc(
        c"pg_idgen.warn_horizon",
        c"How far ahead the monitor warns in the server log, in seconds (0 = no warnings).",
        c"A WARNING when the layout's time field ends, or a segment tag reaches the largest bigint at its rate, within this horizon (louder within 30 days); see docs/monitoring.md.",
        &WARN_HORIZON,
        0,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_string_guc(
        c"pg_idgen.registry_database",
        c"Database whose backends serve this node's registry-owned segment slots ('' = the first to use them after a start).",
        c"Other databases of the node get 55000 for a registry-owned tag. Set it on every node that has such tags, so that no database another role created (a clone of a template with the tag) can take the node's slots first.",
        &REGISTRY_DATABASE,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_string_guc(
        c"pg_idgen.monitor_database",
        c"Database whose segment tags the monitor checks ('' = none).",
        c"Segment tags belong to one database; tags of other databases are not checked (their metrics are in pg_idgen_metrics of each database).",
        &MONITOR_DATABASE,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"pg_idgen.monitor_interval",
        c"How often the monitor checks, in seconds (a reload checks at once).",
        c"Within 30 days of the end of the time field it checks at least every hour.",
        &MONITOR_INTERVAL,
        1,
        i32::MAX,
        GucContext::Sighup,
        GucFlags::UNIT_S,
    );
}

/// `pg_idgen.worker_id_source` and `pg_idgen.citus_worker_id_base` (postmaster).
fn define_worker_id_source() {
    GucRegistry::define_enum_guc(
        c"pg_idgen.worker_id_source",
        c"Where the worker id comes from: default (pg_idgen.worker_id, else set_worker_id(), else a lease) or citus (this node's Citus group id plus pg_idgen.citus_worker_id_base).",
        c"citus: every node of a Citus cluster (coordinator 0, each worker its group id from pg_dist_local_group) gets a worker id of its own, nodes added later included; pg_idgen.worker_id must then stay unset. Fixed at server start.",
        &WORKER_ID_SOURCE,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"pg_idgen.citus_worker_id_base",
        c"Added to the Citus group id when pg_idgen.worker_id_source = citus.",
        c"The same on every node of one Citus cluster; give Citus clusters whose rows meet ranges that do not overlap. Fixed at server start.",
        &CITUS_WORKER_ID_BASE,
        0,
        LEASE_MAX_WORKER as i32,
        GucContext::Postmaster,
        GucFlags::default(),
    );
}

/// `pg_idgen.max_segments` (postmaster): capacity of the shared segment table.
fn define_max_segments() {
    // An out-of-range value of a custom setting at start is only a WARNING (and the default
    // would silently be used): refuse to start instead, as for the other postmaster settings.
    // SAFETY: GetConfigOption returns NULL or a string owned by guc.c, copied at once.
    let raw = unsafe { pg_sys::GetConfigOption(c"pg_idgen.max_segments".as_ptr(), true, false) };
    if !raw.is_null() {
        let text = unsafe { CStr::from_ptr(raw) }.to_string_lossy().into_owned();
        if !matches!(text.trim().parse::<i64>(), Ok(v) if (1..=MAX_SEGMENTS_LIMIT as i64).contains(&v)) {
            raise(
                Code::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("invalid value for pg_idgen.max_segments: \"{text}\""),
                Some("pg_idgen.max_segments must be an integer between 1 and 1000000; the server does not start with it."),
            );
        }
    }
    GucRegistry::define_int_guc(
        c"pg_idgen.max_segments",
        c"Capacity of the shared segment table: how many (database, tag) pairs can be in use at once.",
        c"Each entry holds one tag's cursor and reserved segments (about 300 bytes). Fixed at server start.",
        &MAX_SEGMENTS,
        1,
        MAX_SEGMENTS_LIMIT,
        GucContext::Postmaster,
        GucFlags::default(),
    );
}

pub fn init(preloading: bool) {
    if !preloading {
        // Loaded into one backend: PGC_POSTMASTER settings can no longer be defined.
        // SAFETY: as above.
        let placeholder = unsafe { pg_sys::GetConfigOption(c"pg_idgen.layout".as_ptr(), true, false) };
        let spec = if placeholder.is_null() {
            "default".to_string()
        } else {
            unsafe { CStr::from_ptr(placeholder) }.to_string_lossy().into_owned()
        };
        let _ = UNREGISTERED_LAYOUT.set(spec);
    }
    // SAFETY: the GucSetting statics live forever; the hooks are guarded C-unwind functions.
    unsafe {
        if preloading {
            GucRegistry::define_string_guc_with_hooks(
            c"pg_idgen.layout",
            c"Bit layout of generated ids: a named layout or a custom spec.",
            c"default, twitter, instagram, sonyflake, sonyflake_v2, baidu, shardingsphere, pgedge, js53 (JavaScript-safe: ids below 2^53), or \"time=41,worker=10,sequence=12,unit_ms=1,epoch=2026-01-01\" (at most 63 bits). Fixed at server start.",
                &LAYOUT,
                GucContext::Postmaster,
                GucFlags::default(),
                Some(check_layout),
                None,
                None,
            );
        }
        GucRegistry::define_int_guc_with_hooks(
            c"pg_idgen.worker_id",
            c"Worker id embedded in generated snowflake ids (-1 = not set).",
            c"Must be unique across every node generating ids with the same layout. Superuser only, so ALTER DATABASE ... SET gives logical shards their own ids. Where Citus is loaded only postgresql.conf (or the command line, ALTER SYSTEM) sets it: Citus would carry a SET, SET LOCAL or ALTER DATABASE/ROLE ... SET to every node.",
            &WORKER_ID,
            -1,
            i32::MAX,
            GucContext::Suset,
            GucFlags::default(),
            Some(check_worker_id),
            None,
            None,
        );
    }
    GucRegistry::define_int_guc(
        c"pg_idgen.max_drift_ms",
        c"How far the id clock may run ahead of the system clock, in milliseconds.",
        c"After a clock step back or a burst that exhausts the sequence, ids carry a time up to this far in the future; beyond it, calls wait (pg_idgen.max_wait_ms) or fail.",
        &MAX_DRIFT_MS,
        0,
        3_600_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"pg_idgen.max_wait_ms",
        c"Longest a call waits for the system clock before failing, in milliseconds.",
        c"",
        &MAX_WAIT_MS,
        0,
        60_000,
        GucContext::Userset,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"pg_idgen.reserve_ms",
        c"How far ahead each durable time reservation reaches, in milliseconds.",
        c"Ids are only issued inside a time window persisted (fsync'd) beforehand, so that after a crash or a restart with the clock set back no id is issued twice. Larger values mean fewer writes.",
        &RESERVE_MS,
        10,
        600_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"pg_idgen.clock_skew_ms",
        c"Largest difference between the system clocks of the primary and its standbys, in milliseconds.",
        c"After recovery (a promotion, crash recovery) snowflake ids continue above the clock plus how far the old primary's clock was seen ahead by the WAL receiver plus the largest lead the old primary may have had plus this allowance; the first ids wait up to this long for the clock.",
        &CLOCK_SKEW_MS,
        0,
        600_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_enum_guc(
        c"pg_idgen.sequence_start",
        c"Where the sequence starts in each new millisecond: zero, vibrate or random.",
        c"vibrate and random spread low-rate ids over their low bits so id % 2^n sharding stays balanced.",
        &SEQUENCE_START,
        GucContext::Userset,
        GucFlags::default(),
    );
    if preloading {
        define_worker_id_source();
        define_max_segments();
        define_keyed_cache_size();
        define_lease_settings();
        define_monitor_settings();
        // Reserving the prefix later would drop the pg_idgen.layout placeholder read above.
        unsafe { pg_sys::MarkGUCPrefixReserved(c"pg_idgen".as_ptr()) };
    }

    if preloading && worker_id_source() == WorkerIdSource::Citus && lease_mode() != LeaseMode::Off {
        record_startup_rejection(
            "pg_idgen.worker_id_source",
            "citus takes the worker id from the node's Citus group; pg_idgen.lease_mode must then be off",
        );
    }
    let rejected = STARTUP_REJECTION.with(|r| r.borrow().is_some());
    if preloading && !rejected && lease_mode() == LeaseMode::Auto {
        // Every setting of postgresql.conf is applied now: the range auto mode leases from must
        // fit the layout (off and fixed never read it).
        if let Err(e) = parse_lease_range(&string_setting(&LEASE_RANGE), lease_max_worker()) {
            record_startup_rejection("pg_idgen.lease_range", &e);
        }
    }
    if let Some(msg) = STARTUP_REJECTION.with(|r| r.borrow_mut().take()) {
        raise(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            msg,
            Some("Fix the pg_idgen settings in postgresql.conf; the server does not start with them."),
        );
    }
    // Parse now so a broken layout can never be half-used.
    let _ = layout();
}
