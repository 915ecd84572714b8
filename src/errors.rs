//! Every error the extension raises goes through here: a real SQLSTATE, a message that says
//! what is wrong, and where useful a HINT that says what to do. No Rust panic text reaches users.

use pg_idgen_core::{GenError, IdError};
use pgrx::pg_sys::panic::ErrorReport;
use pgrx::prelude::*;

pub use pgrx::PgSqlErrorCode as Code;

/// No Rust backtrace in any error, whatever `RUST_BACKTRACE` says (it is common in containers).
/// pgrx's panic hook captures `std::backtrace::Backtrace::capture()` for every panic, including
/// the ones that carry a PostgreSQL ERROR raised inside a call from Rust (SPI, a trigger, a
/// lock), and appends a captured backtrace to the error's DETAIL. `Backtrace::capture` reads
/// `RUST_LIB_BACKTRACE` (then `RUST_BACKTRACE`) once per process and caches the answer: one capture
/// here, with `RUST_LIB_BACKTRACE=0` set for that moment, caches "disabled" for this process and for
/// every backend forked from it (the postmaster, when preloaded), and the environment is put back
/// as it was (programs the server starts see what the administrator set). Called first in
/// `_PG_init`, before anything can panic.
pub fn init() {
    const VAR: &str = "RUST_LIB_BACKTRACE";
    let saved = std::env::var_os(VAR);
    // SAFETY: _PG_init runs on the process's only thread (the postmaster while it preloads, or a
    // backend loading the library): nothing reads the environment concurrently.
    unsafe { std::env::set_var(VAR, "0") };
    let probe = std::backtrace::Backtrace::capture();
    debug_assert_eq!(probe.status(), std::backtrace::BacktraceStatus::Disabled);
    // SAFETY: as above.
    unsafe {
        match saved {
            Some(v) => std::env::set_var(VAR, v),
            None => std::env::remove_var(VAR),
        }
    }
}

/// Raises an ERROR; never returns.
#[track_caller]
pub fn raise(code: Code, message: impl Into<String>, hint: Option<&str>) -> ! {
    raise_full(code, message, None, hint)
}

/// Raises an ERROR with a DETAIL and an optional HINT; never returns.
#[track_caller]
pub fn raise_full(code: Code, message: impl Into<String>, detail: Option<String>, hint: Option<&str>) -> ! {
    let mut report = ErrorReport::new(code, message.into(), "pg_idgen");
    if let Some(d) = detail {
        report = report.set_detail(d);
    }
    if let Some(h) = hint {
        report = report.set_hint(h);
    }
    report.report(PgLogLevel::ERROR);
    unreachable!("ereport(ERROR) returned")
}

/// The value of an argument that must not be NULL; raises 22004 naming it otherwise. For the
/// functions that are not STRICT because some of their arguments may be NULL.
#[track_caller]
pub fn required<T>(value: Option<T>, argument: &str) -> T {
    value.unwrap_or_else(|| {
        raise(Code::ERRCODE_NULL_VALUE_NOT_ALLOWED, format!("argument \"{argument}\" must not be NULL"), None)
    })
}

/// Raises at `level` (ERROR, FATAL or PANIC); never returns.
#[track_caller]
pub fn raise_at(level: PgLogLevel, code: Code, message: impl Into<String>) -> ! {
    ErrorReport::new(code, message.into(), "pg_idgen").report(level);
    unreachable!("ereport({level:?}) returned")
}

/// Writes a LOG message with a HINT to the server log (returns).
pub fn log_with_hint(message: &str, hint: &str) {
    ErrorReport::new(Code::ERRCODE_SUCCESSFUL_COMPLETION, message.to_string(), "pg_idgen")
        .set_hint(hint.to_string())
        .report(PgLogLevel::LOG);
}

/// Emits a WARNING (returns).
pub fn warn(message: impl Into<String>, hint: Option<&str>) {
    let mut report = ErrorReport::new(Code::ERRCODE_WARNING, message.into(), "pg_idgen");
    if let Some(h) = hint {
        report = report.set_hint(h);
    }
    report.report(PgLogLevel::WARNING);
}

/// The extension must be in shared_preload_libraries for anything that uses shared memory.
#[track_caller]
pub fn not_preloaded() -> ! {
    raise(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        "pg_idgen must be loaded via shared_preload_libraries to generate ids",
        Some("Add pg_idgen to shared_preload_libraries in postgresql.conf and restart the server."),
    )
}

/// No worker id: neither `pg_idgen.worker_id` nor this database's `pg_idgen_worker` row (and no
/// automatic lease). There is no silent default.
#[cold]
pub fn worker_id_not_configured() -> ! {
    // Where Citus is loaded, ALTER DATABASE ... SET reaches every node (and is refused), and the
    // nodes of one cluster are told apart by their Citus group: point there instead.
    let hint = if crate::citus::preloaded() {
        "This server runs Citus: set pg_idgen.worker_id_source = citus in postgresql.conf of every node of the cluster (coordinator and workers) and restart them; each node then uses its own Citus group id as worker id."
    } else {
        "Set pg_idgen.worker_id in postgresql.conf (or ALTER DATABASE ... SET pg_idgen.worker_id), or run SELECT set_worker_id(n) in this database, with a value unique across every node generating ids."
    };
    raise(Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, "pg_idgen worker id is not configured", Some(hint))
}

/// Errors of encoding or decoding one id: the input was out of range.
#[track_caller]
pub fn id_error(e: IdError) -> ! {
    let code = match e {
        IdError::Negative(_) | IdError::TooWide(_) => Code::ERRCODE_INVALID_PARAMETER_VALUE,
        _ => Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
    };
    raise(code, e.to_string(), None)
}

/// Errors of the clock policy.
#[track_caller]
pub fn gen_error(e: GenError) -> ! {
    match e {
        GenError::ClockBeforeEpoch { .. } => raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("cannot generate an id: {e}"),
            Some("Check the server's system clock (NTP) and the epoch of pg_idgen.layout."),
        ),
        GenError::TimeOverflow { .. } => raise(
            Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            format!("cannot generate an id: {e}"),
            Some("Move to a layout with a later epoch or more time bits (pg_idgen.layout); ids are never wrapped or truncated."),
        ),
        GenError::Fenced { .. } => raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("cannot generate an id: {e}"),
            Some("See SELECT * FROM snowflake_lease()."),
        ),
        GenError::TooFarAhead { .. } => raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("cannot generate an id: {e}"),
            Some("The system clock stepped back, or the server restarted with its clock behind the ids it issued before. Retry when the clock has caught up, or raise pg_idgen.max_drift_ms."),
        ),
    }
}
