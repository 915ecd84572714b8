//! C symbols that the SQL of released versions names and this version no longer defines itself.
//!
//! A database keeps the SQL objects of the version it was created or last updated with until
//! `ALTER EXTENSION pg_idgen UPDATE`, and `pg_upgrade` re-creates them (checking that every C
//! function's symbol exists in the new library) before anyone can run that update. So a symbol
//! that a released version's SQL declares must stay, with the same calling convention: here, as
//! a shim. (Functions that read the extension's tables refuse to work with an older version's
//! objects anyway: `catalog::check_sql_version`.) The rule for releases is in docs/contributing.md,
//! "Releasing". Kept elsewhere, next to their successors because they share their code: 0.1.0's
//! set-returning `uid_decode` forms (`decode.rs`, `sql = false`: symbols `uid_decode_wrapper`
//! and `uid_decode_layout_wrapper`).
//!
//! | symbol                              | named by      | here                                |
//! |-------------------------------------|---------------|-------------------------------------|
//! | `pg_idgen_catalog_changed_wrapper`  | 0.1.0         | the same trigger                    |
//! | `snowflake_worker_wrapper`          | 0.1.0, 0.2.0  | refuses: update the extension       |
//! | `segment_create_wrapper`            | 0.1.0 - 0.3.0 | refuses: update the extension       |
//! | `keyed_create_wrapper`              | 0.4.0         | refuses: update the extension       |
//! | `snowflake_next_wrapper`            | 0.1.0 - 0.5.0 | the same function                   |
//! | `snowflake_next_text_wrapper`       | 0.2.0 - 0.5.0 | the same function                   |

use pgrx::pg_sys;
use pgrx::prelude::*;

// 0.1.0: the catalog trigger function was a pgrx wrapper, `pg_idgen_catalog_changed_wrapper`.
crate::fmgr::pg_function_info_v1!(pg_finfo_pg_idgen_catalog_changed_wrapper);

/// Same trigger, same behaviour (see `catalog::pg_idgen_catalog_changed`).
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn pg_idgen_catalog_changed_wrapper(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    // SAFETY: the same call frame, passed on unchanged.
    unsafe { crate::catalog::pg_idgen_catalog_changed(fcinfo) }
}

// 0.1.0 and 0.2.0: `snowflake_worker()` had four columns (symbol `snowflake_worker_wrapper`);
// 0.3.0's has a fifth, `lease`, under the symbol `snowflake_worker_with_lease_wrapper`.
crate::fmgr::pg_function_info_v1!(pg_finfo_snowflake_worker_wrapper);

/// Only an older version's SQL names this symbol, and this library cannot fill its row type:
/// it refuses with the version mismatch, as every function that reads the extension's tables does.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn snowflake_worker_wrapper(_fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // In a database at an older version this raises the mismatch, with its hint.
    let _ = crate::catalog::extension_namespace_and_oid();
    // Reached only while the update itself runs (the check lets it through).
    crate::errors::raise(
        crate::errors::Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!(
            "the four-column snowflake_worker() of an older pg_idgen cannot run with library {}",
            crate::catalog::LIBRARY_VERSION
        ),
        Some("Run ALTER EXTENSION pg_idgen UPDATE in this database."),
    )
}

// 0.1.0 to 0.3.0: `segment_create` had eight arguments (symbol `segment_create_wrapper`); 0.4.0's
// has three more, `slots`, `owned` and `registry`, under the symbol `segment_create_slotted_wrapper`.
crate::fmgr::pg_function_info_v1!(pg_finfo_segment_create_wrapper);

/// Only an older version's SQL names this symbol: it refuses with the version mismatch.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn segment_create_wrapper(_fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let _ = crate::catalog::extension_namespace_and_oid();
    crate::errors::raise(
        crate::errors::Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!(
            "the eight-argument segment_create() of an older pg_idgen cannot run with library {}",
            crate::catalog::LIBRARY_VERSION
        ),
        Some("Run ALTER EXTENSION pg_idgen UPDATE in this database."),
    )
}

// 0.4.0: `keyed_create` had three arguments (symbol `keyed_create_wrapper`); 0.5.0's has two more,
// `nodes` and `node_index`, under the symbol `keyed_create_fleet_wrapper`.
crate::fmgr::pg_function_info_v1!(pg_finfo_keyed_create_wrapper);

/// Only an older version's SQL names this symbol: it refuses with the version mismatch.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn keyed_create_wrapper(_fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let _ = crate::catalog::extension_namespace_and_oid();
    crate::errors::raise(
        crate::errors::Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!(
            "the three-argument keyed_create() of an older pg_idgen cannot run with library {}",
            crate::catalog::LIBRARY_VERSION
        ),
        Some("Run ALTER EXTENSION pg_idgen UPDATE in this database."),
    )
}

// 0.1.0 to 0.5.0: `snowflake_next()` and `snowflake_next_text()` were pgrx wrappers
// (`snowflake_next_wrapper`, `snowflake_next_text_wrapper`); 0.6.0's are plain V1 functions,
// `pg_idgen_snowflake_next` and `pg_idgen_snowflake_next_text`. A database not yet updated
// keeps generating, with the same guarantees.
crate::fmgr::pg_function_info_v1!(pg_finfo_snowflake_next_wrapper);

/// Same function, same behaviour (see `snowflake::next_id`).
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn snowflake_next_wrapper(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // SAFETY: the same call frame, passed on unchanged.
    unsafe { crate::snowflake::pg_idgen_snowflake_next(fcinfo) }
}

crate::fmgr::pg_function_info_v1!(pg_finfo_snowflake_next_text_wrapper);

/// Same function, same behaviour (see `snowflake::pg_idgen_snowflake_next_text`).
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn snowflake_next_text_wrapper(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    // SAFETY: the same call frame, passed on unchanged.
    unsafe { crate::snowflake::pg_idgen_snowflake_next_text(fcinfo) }
}
