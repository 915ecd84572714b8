//! Each tag's backing sequence belongs to the tags table: `OWNED BY pg_idgen_segments.seq`.
//!
//! Why owned, not an extension member: pg_dump must dump the sequence and its value with the
//! database (an extension member's definition is not dumped, and a sequence made at run time
//! cannot be registered with `pg_extension_config_dump`). Owned by a column of an extension
//! table, it is still dumped, and `DROP EXTENSION` drops it with the table (an automatic
//! dependency): nothing of a tag is left behind.
//!
//! pg_dump does not write `OWNED BY` for a sequence whose table is an extension member (it
//! writes no definition of that table), so after pg_restore the link is made again by the row
//! trigger `pg_idgen_segments_link` (sql/segment.sql): restoring the table's rows fires it, as
//! does every insert by `segment_create`, and the 0.1.0 → 0.2.0 upgrade script, which links the
//! sequences of existing tags. (`pg_upgrade` keeps the link: its schema dump writes it.)
//!
//! The trigger only ever links a sequence of the extension's schema named `pg_idgen_seg_<n>`
//! that no other column owns, no other tag uses and that a superuser or the table's owner owns,
//! and only for a superuser (who alone writes the tags table). It also releases any
//! shared-memory entry of a tag of the same name (see `pg_idgen_segment_link`).

use std::ffi::CStr;

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::catalog::{qualified_relation_name, PinnedSearchPath};
use crate::errors::{raise, Code};

crate::fmgr::pg_function_info_v1!(pg_finfo_pg_idgen_segment_link);

/// Row trigger (AFTER INSERT OR UPDATE OF seq) on `pg_idgen_segments`: the row's sequence
/// becomes owned by the table's `seq` column. A plain V1 function, like the catalog trigger,
/// so that a direct call gets 39P01; EXECUTE is revoked from PUBLIC.
#[unsafe(no_mangle)]
#[pg_guard]
pub unsafe extern "C-unwind" fn pg_idgen_segment_link(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    // SAFETY: `fcinfo` is PostgreSQL's call frame for this function.
    let row = unsafe { crate::catalog::backing_row(fcinfo, "pg_idgen_segment_link", c"tag") };
    if let Some(seq) = row.seq {
        link(row.table, row.table_owner, row.seq_attnum, seq, &row.name);
    }
    // A tag (re)appears: an entry of a tag of the same name that no longer exists may still
    // sit in shared memory (after DROP EXTENSION, or pg_restore --clean, which run no
    // segment_drop) — its values came from the dropped sequence and must not be served for
    // this one. Released now, and again at commit (a backend may find the stale entry
    // before this row is visible to it). segment_create's own insert lands here too.
    if !row.name.is_empty() {
        let db = super::table::my_db();
        let tag = row.name;
        super::claim::release(db, &tag);
        pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, move || {
            super::claim::release(db, &tag)
        });
    }
    pg_sys::Datum::from(0)
}

/// Makes `seq` owned by column `attnum` of `table` (whose owner is `table_owner`), giving it
/// the table's owner first (`OWNED BY` requires one owner). A sequence that does not exist is
/// not an error here: a dump of a database whose tag lost its sequence (the owner of the
/// extension's schema can drop it) must still restore every other tag; that tag already fails
/// with 55000 at use, and a WARNING names it now.
/// What a backing sequence backs: segment tags, or keyed spaces (`keyed::admin`).
pub(crate) struct Backed {
    /// "segment tag", "keyed space"
    pub what: &'static str,
    /// The column of the owning table that names the object.
    pub name_column: &'static str,
    /// The prefix of every backing sequence's name.
    pub prefix: &'static str,
    /// The function that creates one, and the one that drops one.
    pub create: &'static str,
    pub drop: &'static str,
    /// The HINT of a sequence that cannot back one.
    pub hint: &'static str,
    /// What "another one uses it" says.
    pub taken: &'static str,
    /// "the tag", "the space"
    pub the: &'static str,
}

pub(crate) const SEGMENT: Backed = Backed {
    what: "segment tag",
    name_column: "tag",
    prefix: "pg_idgen_seg_",
    create: "segment_create",
    drop: "segment_drop",
    hint: "The backing sequence of a tag is created by segment_create: pg_idgen_seg_<n> in the extension's schema, one per tag.",
    taken: "another tag uses it",
    the: "the tag",
};

fn link(table: pg_sys::Oid, table_owner: pg_sys::Oid, attnum: i16, seq: pg_sys::Oid, tag: &str) {
    link_backing(&SEGMENT, table, table_owner, attnum, seq, tag)
}

pub(crate) fn link_backing(
    b: &Backed,
    table: pg_sys::Oid,
    table_owner: pg_sys::Oid,
    attnum: i16,
    seq: pg_sys::Oid,
    tag: &str,
) {
    let what = b.what;
    // SAFETY: superuser() reads the current user's role; lsyscache lookups return copies or
    // 0/NULL for a missing relation; sequenceIsOwned only reads pg_depend.
    unsafe {
        if !pg_sys::superuser() {
            raise(
                Code::ERRCODE_INSUFFICIENT_PRIVILEGE,
                format!("permission denied to add {what} \"{tag}\""),
                Some(&format!(
                    "They are made by {} (superusers); their rows are restored by a superuser.",
                    b.create
                )),
            );
        }
        let relkind = pg_sys::get_rel_relkind(seq);
        if relkind == 0 {
            pgrx::warning!(
                "pg_idgen: the backing sequence (OID {}) of {what} \"{tag}\" does not exist; {} cannot be used until it is dropped ({}) and created again above the values it handed out",
                u32::from(seq),
                b.the,
                b.drop
            );
            return;
        }
        let rel_name = qualified_relation_name(seq).unwrap_or_else(|| u32::from(seq).to_string());
        let bad = |why: &str| -> ! {
            raise(
                Code::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("relation {rel_name} cannot back {what} \"{tag}\": {why}"),
                Some(b.hint),
            )
        };
        if relkind != pg_sys::RELKIND_SEQUENCE as std::ffi::c_char {
            bad("it is not a sequence");
        }
        if pg_sys::get_rel_namespace(seq) != pg_sys::get_rel_namespace(table) {
            bad("it is not in the extension's schema");
        }
        let name = pg_sys::get_rel_name(seq);
        if name.is_null() || !CStr::from_ptr(name).to_bytes().starts_with(b.prefix.as_bytes()) {
            bad(&format!("its name does not start with {}", b.prefix));
        }
        // (The scan's fresh snapshot does not show this statement's own row: any row with
        // this sequence and another tag is another tag.)
        let mut other = false;
        crate::tables::scan(table, |row| {
            other |= row.oid("seq") == Some(seq) && row.text(b.name_column).as_deref() != Some(tag)
        });
        if other {
            bad(b.taken);
        }
        let (mut owner_table, mut owner_col) = (pg_sys::InvalidOid, 0i32);
        let owned = pg_sys::sequenceIsOwned(
            seq,
            pg_sys::DependencyType::DEPENDENCY_AUTO as std::ffi::c_char,
            &mut owner_table,
            &mut owner_col,
        );
        if owned && !(owner_table == table && owner_col == attnum as i32) {
            bad("another column owns it");
        }
        let seq_rel = pg_sys::relation_open(seq, pg_sys::AccessShareLock as i32);
        let seq_owner = (*(*seq_rel).rd_rel).relowner;
        pg_sys::relation_close(seq_rel, pg_sys::AccessShareLock as i32);
        // A sequence some other role made (the owner of a shared schema can create one with a
        // pg_idgen_seg_ name) is not adopted: only the table's owner's or a superuser's.
        if seq_owner != table_owner && !pg_sys::superuser_arg(seq_owner) {
            bad("it belongs to a role that is neither a superuser nor the owner of pg_idgen_segments");
        }
        if owned {
            return; // already linked
        }

        // Every name is built in Rust from the catalog, by OID, and quoted.
        let (Some(seq_name), Some(table_name)) =
            (qualified_relation_name(seq), qualified_relation_name(table))
        else {
            bad("it was dropped meanwhile")
        };
        let column = CStr::from_ptr(pg_sys::quote_identifier(pg_sys::get_attname(table, attnum, false)))
            .to_string_lossy()
            .into_owned();
        let _path = PinnedSearchPath::new();
        if seq_owner != table_owner {
            let role =
                CStr::from_ptr(pg_sys::quote_identifier(pg_sys::GetUserNameFromId(table_owner, false)))
                    .to_string_lossy()
                    .into_owned();
            Spi::run(&format!("ALTER SEQUENCE {seq_name} OWNER TO {role}"))
                .unwrap_or_else(|e| link_failed(&seq_name, what, e));
        }
        Spi::run(&format!("ALTER SEQUENCE {seq_name} OWNED BY {table_name}.{column}"))
            .unwrap_or_else(|e| link_failed(&seq_name, what, e));
    }
}

fn link_failed(seq: &str, what: &str, e: pgrx::spi::Error) -> ! {
    raise(Code::ERRCODE_INTERNAL_ERROR, format!("pg_idgen could not link {seq} to its {what}: {e}"), None)
}
