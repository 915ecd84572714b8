//! The statements `uid_migrate_key` (sql/migrate.sql) runs on a table, run as that table's
//! owner.
//!
//! Converting a column to bigint rewrites the table and its indexes: its CHECK constraints,
//! index expressions and predicates run again, with the rights of whoever runs the ALTER TABLE.
//! A superuser converting its own table also converts the referencing columns of other roles'
//! tables, and may convert a table a role asked it to: run as the caller, that code would run as
//! the superuser. So every statement on a table runs here as the table's owner, as a
//! security-restricted operation (no SET ROLE, no RESET of the user, no temporary objects),
//! with `search_path = pg_catalog, pg_temp` and `row_security = off` in a GUC nest level of
//! its own — what VACUUM, REINDEX and REFRESH MATERIALIZED VIEW do for table code. A table's
//! code therefore never runs with more rights than its owner's. Restored when the statement
//! ends, or by (sub)transaction abort when it fails.
//!
//! The caller must have the privileges of the owner and be able to `SET ROLE` to it (be it, a
//! member of it with the SET option, or a superuser): running as the owner then gives the caller
//! nothing it could not have — not even role attributes (SUPERUSER, CREATEROLE, ...) a member
//! without the SET option does not inherit — and the security-restricted context takes some
//! away. The statements that do not touch a table (`segment_create`, `segment_set`,
//! `DROP SEQUENCE`) run as the caller.

use pgrx::prelude::*;

use crate::catalog::{qualified_relation_name, LocalSetting, PinnedSearchPath, RunAs};
use crate::errors::{raise, required, Code};

/// Whether the current user has `role`'s privileges and may SET ROLE to it (a superuser may).
fn can_act_as(role: pg_sys::Oid) -> bool {
    // SAFETY: plain privilege checks of the current user.
    unsafe {
        let me = pg_sys::GetUserId();
        if pg_sys::superuser_arg(me) {
            return true;
        }
        #[cfg(feature = "pg15")]
        let can_set = pg_sys::is_member_of_role(me, role); // before 16, every member may SET ROLE
        #[cfg(not(feature = "pg15"))]
        let can_set = pg_sys::member_can_set_role(me, role);
        pg_sys::has_privs_of_role(me, role) && can_set
    }
}

/// Runs `stmt` as the owner of `tbl` (see the module comment); returns the first column of its
/// first row as bigint for a query (`SELECT max(col)::bigint ...`), NULL otherwise.
#[pg_extern(sql = false, volatile, parallel_unsafe)]
fn pg_idgen_migrate_as_owner(tbl: Option<pg_sys::Oid>, stmt: Option<&str>) -> Option<i64> {
    let tbl = required(tbl, "tbl");
    let stmt = required(stmt, "stmt");
    let owner = {
        let _path = PinnedSearchPath::new();
        Spi::get_one_with_args::<pg_sys::Oid>(
            "SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1",
            &[tbl.into()],
        )
        .unwrap_or(None)
    }
    .unwrap_or_else(|| {
        raise(
            Code::ERRCODE_UNDEFINED_TABLE,
            format!("relation with OID {} does not exist", u32::from(tbl)),
            None,
        )
    });
    if !can_act_as(owner) {
        raise(
            Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "must be owner of table {}",
                qualified_relation_name(tbl).unwrap_or_else(|| u32::from(tbl).to_string())
            ),
            Some("Its statements run as the table's owner: the caller must have the owner's privileges and be able to SET ROLE to it."),
        );
    }
    let _owner = RunAs::role(owner, true);
    let _rls = LocalSetting::set(c"row_security", c"off");
    Spi::connect_mut(|client| {
        let rows = client.update(stmt, None, &[])?;
        if rows.is_empty() {
            return Ok(None); // a statement without rows (ALTER TABLE), or a query of none
        }
        // uid_migrate_key reads one bigint (`SELECT max(col)::bigint`): the first column of
        // the first row, of an integer type. Anything else is the caller's mistake, said as
        // such rather than as an internal error.
        let columns = rows.columns()?;
        let integer = columns >= 1
            && matches!(
                rows.column_type_oid(1)?.value(),
                pg_sys::INT8OID | pg_sys::INT4OID | pg_sys::INT2OID
            );
        if !integer {
            raise(
                Code::ERRCODE_DATATYPE_MISMATCH,
                "pg_idgen_migrate_as_owner: a query must return a bigint in its first column",
                Some("It runs the statements of uid_migrate_key; its one query is SELECT max(col)::bigint."),
            );
        }
        rows.first().get::<i64>(1)
    })
    .unwrap_or_else(|e: pgrx::spi::Error| spi_refusal(e))
}

/// The SQLSTATE of a statement SPI refuses to run (it never gets to the executor): transaction
/// control and COPY to or from the client, as PL/pgSQL's EXECUTE refuses them.
fn spi_refusal(e: pgrx::spi::Error) -> ! {
    use pgrx::spi::{Error, SpiErrorCodes};
    match e {
        Error::SpiError(SpiErrorCodes::Transaction) => raise(
            Code::ERRCODE_FEATURE_NOT_SUPPORTED,
            "pg_idgen_migrate_as_owner cannot run transaction control statements",
            Some("It runs one statement of uid_migrate_key in the caller's transaction."),
        ),
        Error::SpiError(SpiErrorCodes::Copy) => raise(
            Code::ERRCODE_FEATURE_NOT_SUPPORTED,
            "pg_idgen_migrate_as_owner cannot run COPY to or from the client",
            None,
        ),
        e => raise(
            Code::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("pg_idgen_migrate_as_owner cannot run this statement ({e})"),
            Some("It runs the statements of uid_migrate_key: ALTER TABLE and SELECT max(col)::bigint."),
        ),
    }
}
