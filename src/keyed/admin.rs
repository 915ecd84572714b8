//! Administration: `keyed_create`, `keyed_drop` (superuser only), `keyed_grant` and
//! `keyed_revoke` (the privilege to use a space), and the row trigger that links
//! a space's backing sequence to `pg_idgen_keyed_spaces` (as `segment::backing` does for tags:
//! owned by the table, so pg_dump dumps it with its value and DROP EXTENSION drops it).

use pgrx::pg_sys;
use pgrx::prelude::*;

use super::space::{release, unknown_space, validate_name};
use super::table::my_db;
use crate::catalog::{extension_schema, free_relation_name, qualified_relation_name, spi_failed, RunAs};
use crate::errors::{raise, required, Code};
use crate::segment::backing::{link_backing, Backed};
use crate::tables;

const KEYED: Backed = Backed {
    what: "keyed space",
    name_column: "space",
    prefix: "pg_idgen_keyed_",
    create: "keyed_create",
    drop: "keyed_drop",
    hint: "The backing sequence of a keyed space is created by keyed_create: pg_idgen_keyed_<n> in the extension's schema, one per space.",
    taken: "another keyed space uses it",
    the: "the space",
};

fn require_superuser(what: &str) {
    // SAFETY: reads the current role.
    if !unsafe { pg_sys::superuser() } {
        raise(
            Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("permission denied to {what}"),
            Some("Keyed spaces are configured by superusers (EXECUTE on keyed_create and keyed_drop is revoked from PUBLIC)."),
        );
    }
    // SAFETY: a flag of this backend.
    if unsafe { pg_sys::RecoveryInProgress() } {
        raise(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            format!("cannot {what} on a standby server"),
            Some("Run it on the primary."),
        );
    }
}

/// Creates a keyed space: counters per bigint key, their bound raised `step` values at a time,
/// keys grouped `section_size` consecutive keys to a section (superuser only). With `nodes` and
/// `node_index` (fleet mode: this node is `node_index` of `nodes` writable nodes), every value
/// this node hands out is `counter * nodes + node_index`: congruent to `node_index` modulo
/// `nodes`, so no two nodes of the fleet hand out the same value of a key. With `registry`,
/// every raise of a bound is confirmed by the lease registry too, and a first use after a start
/// or a promotion starts above the registry's marks (`marks`).
/// (Symbol `keyed_create_fleet_wrapper`: 0.4.0's three-argument `keyed_create` named
/// `keyed_create_wrapper`, now a shim in `compat`.)
#[pg_extern(name = "keyed_create", volatile, parallel_unsafe)]
fn keyed_create_fleet(
    space: Option<&str>,
    step: default!(Option<i32>, 1000),
    section_size: default!(Option<i32>, 1000),
    nodes: default!(Option<i32>, "NULL"),
    node_index: default!(Option<i32>, "NULL"),
    registry: default!(Option<bool>, false),
) {
    let space = required(space, "space");
    let step = required(step, "step") as i64;
    let section_size = required(section_size, "section_size") as i64;
    let registry = required(registry, "registry");
    require_superuser("create a keyed space");
    validate_name(space.as_bytes());
    if let Err(msg) = pg_idgen_core::keyed::validate_config(step, section_size) {
        raise(Code::ERRCODE_INVALID_PARAMETER_VALUE, msg, None);
    }
    let (nodes, node_index) = (nodes.map(i64::from), node_index.map(i64::from));
    if let Err(msg) = pg_idgen_core::keyed::validate_nodes(nodes, node_index) {
        raise(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            msg,
            Some("Fleet mode: nodes => N (1 to 1024) writable nodes, node_index => k (0 to N - 1) this node's, both fixed for the life of the space; neither for a space of one writable node."),
        );
    }
    if registry && crate::gucs::lease_mode() == crate::gucs::LeaseMode::Off {
        raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "a keyed space with registry => true needs the lease registry",
            Some("Its bounds are raised through the lease worker's registry connection: set pg_idgen.lease_mode (fixed or auto) and pg_idgen.registry (docs/worker-ids.md, \"Leased worker ids\"), and restart."),
        );
    }
    let schema = extension_schema();
    let _su = RunAs::superuser();
    let table = tables::extension_table(c"pg_idgen_keyed_spaces");
    // One keyed_create at a time per database (until commit): the backing sequence's name is
    // chosen from what is visible.
    // SAFETY: locks a relation by OID; released at transaction end.
    unsafe { pg_sys::LockRelationOid(table, pg_sys::ShareRowExclusiveLock as i32) };
    let mut exists = false;
    let mut count = 0i64;
    tables::scan_extension_table(c"pg_idgen_keyed_spaces", |row| {
        count += 1;
        exists |= row.text("space").as_deref() == Some(space);
    });
    if exists {
        raise(
            Code::ERRCODE_DUPLICATE_OBJECT,
            format!("keyed space \"{space}\" already exists"),
            Some("Use another name, or keyed_drop() it first (its values may then be handed out again)."),
        );
    }
    let Some(seqname) = free_relation_name(&schema, "pg_idgen_keyed_", count + 1, 1000) else {
        raise(
            Code::ERRCODE_DUPLICATE_OBJECT,
            "no free name for the backing sequence of a keyed space",
            Some("Relations named pg_idgen_keyed_<n> in the extension's schema that back no space should be renamed."),
        )
    };
    // nextval returns the next bound: step, 2 * step, ...; values are 1 .. bound.
    Spi::run(&format!(
        "CREATE SEQUENCE {seqname} AS bigint INCREMENT BY {step} MINVALUE {step} START WITH {step} CACHE 1 NO CYCLE"
    ))
    .unwrap_or_else(|e| spi_failed("create the backing sequence", e));
    // The space's privileges are its backing sequence's: USAGE is the right to call keyed_next
    // and keyed_last. None for PUBLIC, whatever default privileges the schema has.
    Spi::run(&format!("REVOKE ALL ON SEQUENCE {seqname} FROM PUBLIC"))
        .unwrap_or_else(|e| spi_failed("revoke the backing sequence's privileges from PUBLIC", e));
    Spi::run_with_args(
        &format!(
            "INSERT INTO {schema}.pg_idgen_keyed_spaces (space, seq, step, section_size, nodes, node_index, registry) \
             VALUES ($1, $2::pg_catalog.regclass, $3, $4, $5, $6, $7)"
        ),
        &[
            space.into(),
            seqname.as_str().into(),
            (step as i32).into(),
            (section_size as i32).into(),
            nodes.map(|n| n as i32).into(),
            node_index.map(|k| k as i32).into(),
            registry.into(),
        ],
    )
    .unwrap_or_else(|e| spi_failed("record the keyed space", e));
    // Nothing handed out yet: every bucket's durable bound is 0 (values start at 1).
    Spi::run_with_args(
        &format!(
            "INSERT INTO {schema}.pg_idgen_keyed_bounds (bound, space, bucket) \
             SELECT 0, $1, g FROM pg_catalog.generate_series(0, {}) g",
            pg_idgen_core::keyed::BUCKETS - 1
        ),
        &[space.into()],
    )
    .unwrap_or_else(|e| spi_failed("record the keyed space's bounds", e));
    let db = my_db();
    release(db, space);
    let s = space.to_string();
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Abort, move || release(db, &s));
}

/// Drops a keyed space and its backing sequence (superuser only).
#[pg_extern(volatile, parallel_unsafe)]
fn keyed_drop(space: Option<&str>) {
    let space = required(space, "space");
    require_superuser("drop a keyed space");
    let schema = extension_schema();
    let _su = RunAs::superuser();
    let seq = crate::catalog::delete_returning_seqs(&schema, "pg_idgen_keyed_spaces", "space", space)
        .map(|seqs| seqs.first().copied())
        .unwrap_or_else(|e| spi_failed("delete the keyed space", e));
    let Some(seq) = seq else { unknown_space(space) };
    // The space's lock first (`space::lock_space`): it waits for the claims and raises in flight
    // and makes later ones wait for this transaction's end (then they find the space gone), so
    // no raise meets its bound row being deleted (which it would refuse, 55006).
    super::space::lock_space(seq, pg_sys::AccessExclusiveLock as pg_sys::LOCKMODE);
    if let Some(name) = qualified_relation_name(seq) {
        Spi::run(&format!("DROP SEQUENCE {name}"))
            .unwrap_or_else(|e| spi_failed("drop the backing sequence", e));
    }
    Spi::run_with_args(
        &format!("DELETE FROM {schema}.pg_idgen_keyed_bounds WHERE space OPERATOR(pg_catalog.=) $1"),
        &[space.into()],
    )
    .unwrap_or_else(|e| spi_failed("delete the keyed space's bounds", e));
    let db = my_db();
    release(db, space);
    let s = space.to_string();
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, move || release(db, &s));
}

/// Moves this node of a fleet-mode space to index `node_index` (superuser only), every value it
/// hands out afterwards, for every key, above `above`: each bucket's durable bound is raised (as
/// a counter of the new index) to the first counter whose value exceeds `above`, and the space's
/// shared entry is released, so every key continues from there. `above` must be at least every
/// value the index's previous holder handed out (its `keyed_status.max_value` when it left); the
/// node's own index, with `above`, only raises its values. A plain space has no index (55000):
/// the number of nodes is fixed for the life of a space.
#[pg_extern(volatile, parallel_unsafe)]
fn keyed_set_node(space: Option<&str>, node_index: Option<i32>, above: Option<i64>) {
    let space = required(space, "space");
    let node_index = required(node_index, "node_index") as i64;
    let above = required(above, "above");
    require_superuser("move a keyed space to another node index");
    validate_name(space.as_bytes());
    let schema = extension_schema();
    let _su = RunAs::superuser();
    let Some(cfg) = super::space::read_config(space) else { unknown_space(space) };
    if cfg.stride == pg_idgen_core::keyed::Stride::PLAIN && !fleet_mode(space) {
        raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("keyed space \"{space}\" is not in fleet mode"),
            Some("The number of nodes of a space is fixed when it is created: keyed_create(space, nodes => N, node_index => k)."),
        );
    }
    let nodes = cfg.stride.nodes;
    if let Err(msg) = pg_idgen_core::keyed::validate_nodes(Some(nodes), Some(node_index)) {
        raise(Code::ERRCODE_INVALID_PARAMETER_VALUE, msg, None);
    }
    // Excludes claims and raises of the space (CLAIM_LOCK and RAISE_LOCK conflict with it) until
    // commit: no backend hands out a value of the old index from a bound raised meanwhile, nor
    // claims the space with the configuration this transaction replaces.
    super::space::lock_space(cfg.seqoid, pg_sys::ExclusiveLock as pg_sys::LOCKMODE);
    // SAFETY: a syscache probe by OID.
    if unsafe { pg_sys::get_rel_relkind(cfg.seqoid) } != pg_sys::RELKIND_SEQUENCE as std::ffi::c_char {
        super::space::missing_sequence(space);
    }
    let stride = pg_idgen_core::keyed::Stride::new(Some(nodes), Some(node_index));
    let floor = stride.floor_above(above);
    // Every bucket's bound raised in place to exactly the floor (`moved_bound`: rounding it up to a
    // whole step would skip values, and near the top of the class its last ones), as keyed_next
    // raises them (an UPDATE would leave row versions that in-place raises refuse to write while
    // it is in flight, or after it aborts): not undone if this transaction aborts (a gap, never a value handed out twice), and in the
    // WAL before this transaction's commit record, so durable whenever the new index is.
    for bucket in 0..pg_idgen_core::keyed::BUCKETS {
        pg_sys::check_for_interrupts!();
        if super::bounds::raise_in_place(space, bucket, |old| pg_idgen_core::keyed::moved_bound(old, floor)).is_none() {
            super::space::missing_bounds(space);
        }
    }
    Spi::run_with_args(
        &format!(
            "UPDATE {schema}.pg_idgen_keyed_spaces SET node_index = $2 WHERE space OPERATOR(pg_catalog.=) $1"
        ),
        &[space.into(), (node_index as i32).into()],
    )
    .unwrap_or_else(|e| spi_failed("record the keyed space's node index", e));
    // The shared entry is released now (no backend claims it again before commit: the lock) and
    // at commit, so every key continues from the raised bounds.
    let db = my_db();
    release(db, space);
    let s = space.to_string();
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, move || release(db, &s));
}

/// The cut-over to a new cluster (called by `pg_idgen_state_import`, superuser only): raises the
/// durable bound of each bucket of `space` to the old cluster's bound of that bucket if it is
/// higher (`bounds[b]` for bucket b, 1,024 of them, as `pg_idgen_keyed_bounds` holds them; exactly
/// that bound, `moved_bound`), in place as keyed_next raises them, and releases the space's shared entry, so that every key continues
/// from its own bucket's bound: above every value the old cluster handed out for it, no further
/// than a restart of the old cluster would have jumped. Only raises; returns how many buckets
/// were raised.
#[pg_extern(volatile, parallel_unsafe)]
fn pg_idgen_keyed_raise_bounds(space: Option<&str>, bounds: Option<Vec<Option<i64>>>) -> i32 {
    let space = required(space, "space");
    let bounds = required(bounds, "bounds");
    require_superuser("raise the bounds of a keyed space");
    validate_name(space.as_bytes());
    if bounds.len() != pg_idgen_core::keyed::BUCKETS || bounds.iter().any(|b| b.is_none_or(|b| b < 0)) {
        raise(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("bounds must be {} non-negative bounds, one per bucket", pg_idgen_core::keyed::BUCKETS),
            None,
        );
    }
    let _su = RunAs::superuser();
    let Some(cfg) = super::space::read_config(space) else { unknown_space(space) };
    // Excludes claims and raises of the space until commit (as keyed_set_node).
    super::space::lock_space(cfg.seqoid, pg_sys::ExclusiveLock as pg_sys::LOCKMODE);
    // SAFETY: a syscache probe by OID.
    if unsafe { pg_sys::get_rel_relkind(cfg.seqoid) } != pg_sys::RELKIND_SEQUENCE as std::ffi::c_char {
        super::space::missing_sequence(space);
    }
    let Some(current) = super::bounds::read_all(space) else { super::space::missing_bounds(space) };
    let mut raised = 0;
    for (bucket, want) in bounds.iter().enumerate() {
        pg_sys::check_for_interrupts!();
        let want = want.unwrap_or(0);
        if want <= current[bucket] {
            continue;
        }
        if super::bounds::raise_in_place(space, bucket, |old| pg_idgen_core::keyed::moved_bound(old, want)).is_none() {
            super::space::missing_bounds(space);
        }
        raised += 1;
    }
    if raised > 0 {
        let db = my_db();
        release(db, space);
        let s = space.to_string();
        pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, move || release(db, &s));
    }
    raised
}

/// Whether the space's row has `nodes` set (a fleet of one node is `Stride::PLAIN` too).
fn fleet_mode(space: &str) -> bool {
    let mut nodes = None;
    crate::tables::scan_extension_table(c"pg_idgen_keyed_spaces", |row| {
        if row.text("space").as_deref() == Some(space) {
            nodes = row.i64("nodes");
        }
    });
    nodes.is_some()
}

crate::fmgr::pg_function_info_v1!(pg_finfo_pg_idgen_keyed_link);

/// Row trigger (AFTER INSERT OR UPDATE OF seq) on `pg_idgen_keyed_spaces`: the row's sequence
/// becomes owned by the table's `seq` column (also after a restore, whose dump has no OWNED BY
/// for a sequence of an extension member table); a shared entry of a space of the same name is
/// released (now and at commit).
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn pg_idgen_keyed_link(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // SAFETY: `fcinfo` is PostgreSQL's call frame for this function.
    let row = unsafe { crate::catalog::backing_row(fcinfo, "pg_idgen_keyed_link", c"space") };
    if let Some(seq) = row.seq {
        link_backing(&KEYED, row.table, row.table_owner, row.seq_attnum, seq, &row.name);
    }
    if !row.name.is_empty() {
        let db = my_db();
        let name = row.name;
        release(db, &name);
        pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, move || release(db, &name));
    }
    pg_sys::Datum::from(0)
}

/// GRANT or REVOKE USAGE on a space (on its backing sequence) to or from `role` (a role name, or
/// `public`), run as the calling role: PostgreSQL records it as the grantor. Allowed to
/// superusers, members of the sequence's owner and roles holding USAGE WITH GRANT OPTION.
fn change_usage(space: &str, role: &str, grant: bool, grant_option: bool) {
    validate_name(space.as_bytes());
    // SAFETY: a flag of this backend.
    if unsafe { pg_sys::RecoveryInProgress() } {
        raise(
            Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            "cannot change a keyed space's privileges on a standby server",
            Some("Run it on the primary."),
        );
    }
    let cfg = {
        let _su = RunAs::superuser();
        super::space::read_config(space)
    };
    let Some(cfg) = cfg else { unknown_space(space) };
    let Some(seq) = qualified_relation_name(cfg.seqoid) else { super::space::missing_sequence(space) };
    // Only the exact `public` means PUBLIC, as in GRANT (where the name, unquoted, is folded to
    // it): any other spelling is a role name, taken as stored.
    let grantee = if role == "public" {
        "PUBLIC".to_string()
    } else {
        let c = std::ffi::CString::new(role).unwrap_or_else(|_| {
            raise(Code::ERRCODE_INVALID_PARAMETER_VALUE, "a role name cannot contain a NUL byte", None)
        });
        // SAFETY: a syscache lookup by name (missing_ok); quote_identifier returns its argument or
        // a palloc'd copy, read at once.
        unsafe {
            if pg_sys::get_role_oid(c.as_ptr(), true) == pg_sys::InvalidOid {
                raise(Code::ERRCODE_UNDEFINED_OBJECT, format!("role \"{role}\" does not exist"), None);
            }
            std::ffi::CStr::from_ptr(pg_sys::quote_identifier(c.as_ptr())).to_string_lossy().into_owned()
        }
    };
    // SAFETY: the current user; ACL and membership checks by OID through the syscache.
    let allowed = unsafe {
        let user = pg_sys::GetUserId();
        // the owner, and members of the owner role, hold every grant option (aclmask)
        pg_sys::superuser()
            || pg_sys::pg_class_aclmask(
                cfg.seqoid,
                user,
                // ACL_GRANT_OPTION_FOR(ACL_USAGE): the privilege bit shifted by half the width of
                // AclMode (16 bits on PostgreSQL 15, 32 from 16 on)
                (pg_sys::ACL_USAGE as pg_sys::AclMode) << (std::mem::size_of::<pg_sys::AclMode>() * 4),
                pg_sys::AclMaskHow::ACLMASK_ANY,
            ) != 0
    };
    if !allowed {
        raise(
            Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("permission denied to {} usage on keyed space \"{space}\"", if grant { "grant" } else { "revoke" }),
            Some("Superusers, and roles granted USAGE on the space WITH GRANT OPTION (keyed_grant(space, role, with_grant_option => true)), grant and revoke it."),
        );
    }
    let _path = crate::catalog::PinnedSearchPath::new();
    let sql = if grant {
        format!(
            "GRANT USAGE ON SEQUENCE {seq} TO {grantee}{}",
            if grant_option { " WITH GRANT OPTION" } else { "" }
        )
    } else {
        // CASCADE: what the role granted onward with the grant option goes too.
        format!("REVOKE USAGE ON SEQUENCE {seq} FROM {grantee} CASCADE")
    };
    Spi::run(&sql).unwrap_or_else(|e| spi_failed("change the keyed space's privileges", e));
}

/// Grants USAGE on a keyed space (the right to call keyed_next and keyed_last on it) to `role`
/// (a role name, or `public`); `with_grant_option` lets that role grant it in turn.
#[pg_extern(volatile, parallel_unsafe)]
fn keyed_grant(space: Option<&str>, role: Option<&str>, with_grant_option: default!(Option<bool>, false)) {
    let space = required(space, "space");
    let role = required(role, "role");
    let with_grant_option = required(with_grant_option, "with_grant_option");
    change_usage(space, role, true, with_grant_option);
}

/// Revokes USAGE on a keyed space from `role` (a role name, or `public`), with whatever that role
/// granted onward.
#[pg_extern(volatile, parallel_unsafe)]
fn keyed_revoke(space: Option<&str>, role: Option<&str>) {
    let space = required(space, "space");
    let role = required(role, "role");
    change_usage(space, role, false, false);
}
