//! C symbols that the SQL of released versions names and this version no longer defines itself.
//!
//! A database keeps the SQL objects of the version it was created or last updated with until
//! `ALTER EXTENSION pg_idgen UPDATE`, and `pg_upgrade` re-creates them (checking that every C
//! function's symbol exists in the new library) before anyone can run that update. So a symbol
//! that a released version's SQL declares must stay, with the same calling convention: here, as
//! a shim. (Functions that read the extension's tables refuse to work with an older version's
//! objects anyway: `catalog::check_sql_version`.) The rule for releases is in the README,
//! "Releasing". Kept elsewhere, next to their successors because they share their code: 0.1.0's
//! set-returning `uid_decode` forms (`decode.rs`, `sql = false`: symbols `uid_decode_wrapper`
//! and `uid_decode_layout_wrapper`).

use pgrx::pg_sys;
use pgrx::prelude::*;

// 0.1.0: the catalog trigger function was a pgrx wrapper, `pg_idgen_catalog_changed_wrapper`.
crate::pg_function_info_v1!(pg_finfo_pg_idgen_catalog_changed_wrapper);

/// Same trigger, same behaviour (see `catalog::pg_idgen_catalog_changed`).
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn pg_idgen_catalog_changed_wrapper(
    fcinfo: pg_sys::FunctionCallInfo,
) -> pg_sys::Datum {
    // SAFETY: the same call frame, passed on unchanged.
    unsafe { crate::catalog::pg_idgen_catalog_changed(fcinfo) }
}
