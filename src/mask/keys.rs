//! The key rings: named, versioned keys read from `pg_idgen_mask_keys` by OID, cached per backend
//! (expanded AES keys), dropped when the table changes.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

use pg_idgen_core::mask::{Mask, MaskError};
use pgrx::prelude::*;

use crate::catalog::{PinnedSearchPath, RunAs};
use crate::errors::{raise, raise_full, Code};
use crate::tables;

/// Versions are written as one symbol in front of a versioned text code: the version modulo 32.
pub(super) const TEXT_VERSION_MODULUS: i32 = 32;

/// The kept versions of one key name, oldest first; the last one is the current one.
pub(super) struct Ring {
    pub(super) versions: Vec<(i32, Mask)>,
}

impl Ring {
    pub(super) fn current(&self) -> (i32, &Mask) {
        let (v, m) = self.versions.last().expect("a ring has at least one version");
        (*v, m)
    }
    pub(super) fn version(&self, v: i32) -> Option<&Mask> {
        self.versions.iter().find(|(x, _)| *x == v).map(|(_, m)| m)
    }
}

thread_local! {
    /// Key rings read so far in this backend, by name, and whether each was read with a fresh
    /// snapshot (false: in a parallel operation, used only until it ends, see `tables`).
    static RINGS: RefCell<HashMap<String, (Rc<Ring>, bool)>> = RefCell::new(HashMap::new());
    /// The key table's oid and owner, once looked up.
    static TABLE: Cell<Option<(pg_sys::Oid, pg_sys::Oid)>> = const { Cell::new(None) };
    /// The last key given to `uid_mask_raw`/`uid_unmask_raw` and its expanded form.
    pub(super) static RAW: RefCell<Option<(Vec<u8>, Rc<Mask>)>> = const { RefCell::new(None) };
}

/// Relcache callback: a change of the key table (its statement trigger sends an invalidation
/// for it), its DROP, or a full cache reset empties the key cache.
#[pg_guard]
pub(super) unsafe extern "C-unwind" fn on_relcache_invalidation(_arg: pg_sys::Datum, relid: pg_sys::Oid) {
    let ours = TABLE.try_with(|t| t.get()).ok().flatten().map(|(oid, _)| oid);
    if relid == pg_sys::InvalidOid || Some(relid) == ours || ours.is_none() {
        let _ = RINGS.try_with(|r| r.borrow_mut().clear());
        if relid != pg_sys::InvalidOid && Some(relid) == ours {
            let _ = TABLE.try_with(|t| t.set(None));
        }
    }
}

/// Called from `_PG_init`.
pub fn init() {
    unsafe { pg_sys::CacheRegisterRelcacheCallback(Some(on_relcache_invalidation), pg_sys::Datum::from(0)) };
}

/// The key table's oid and owner, read from catalogs every role can read.
pub(super) fn key_table() -> (pg_sys::Oid, pg_sys::Oid) {
    if let Some(t) = TABLE.with(|t| t.get()) {
        return t;
    }
    // every name is qualified; the pinned path keeps it so should a later edit forget one
    let _path = PinnedSearchPath::new();
    let t = Spi::connect(|client| {
        let row = client
            .select(
                "SELECT c.oid, c.relowner FROM pg_catalog.pg_class c \
                 JOIN pg_catalog.pg_extension e ON e.extnamespace OPERATOR(pg_catalog.=) c.relnamespace \
                 WHERE e.extname OPERATOR(pg_catalog.=) 'pg_idgen' \
                   AND c.relname OPERATOR(pg_catalog.=) 'pg_idgen_mask_keys'",
                Some(1),
                &[],
            )
            .ok()?
            .first();
        Some((row.get::<pg_sys::Oid>(1).ok()??, row.get::<pg_sys::Oid>(2).ok()??))
    })
    .unwrap_or_else(|| {
        raise(
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "extension \"pg_idgen\" is not installed in this database (or its key table is missing)",
            Some("Run CREATE EXTENSION pg_idgen."),
        )
    });
    TABLE.with(|c| c.set(Some(t)));
    t
}

/// Runs `f` as the key table's owner, as a security-restricted operation, with `search_path`
/// pinned to `pg_catalog, pg_temp` — what a SECURITY DEFINER function with `SET search_path`
/// does, but only on the cold path. On an error, transaction (or subtransaction) abort restores
/// the user id and the setting, as it does for SECURITY DEFINER functions.
pub(super) fn as_key_owner<R>(f: impl FnOnce() -> R) -> R {
    let (_, owner) = key_table();
    let _owner = RunAs::role(owner, true);
    f()
}

pub(super) fn no_such_key(name: &str) -> ! {
    raise(
        Code::ERRCODE_UNDEFINED_OBJECT,
        format!("mask key \"{name}\" does not exist"),
        Some("Create it with SELECT uid_mask_key_create('name') (privileged); SELECT * FROM uid_mask_keys lists the keys."),
    )
}

pub(super) fn load_ring(name: &str) -> Option<Ring> {
    // Read by OID without SQL and with a fresh snapshot (see `tables`): no schema or table name is
    // parsed, so neither the caller's search path nor a rename of schemas can redirect the read,
    // and no privilege is needed to read the table this way.
    let mut rows: Vec<(i32, Vec<u8>)> = Vec::new();
    tables::scan_extension_table(c"pg_idgen_mask_keys", |r| {
        if r.text("name").as_deref() == Some(name) {
            if let (Some(v), Some(key)) =
                (r.i64("version").and_then(|v| i32::try_from(v).ok()), r.get::<Vec<u8>>("key"))
            {
                rows.push((v, key));
            }
        }
    });
    rows.sort_by_key(|(v, _)| *v);
    if rows.is_empty() {
        return None;
    }
    let versions = rows
        .into_iter()
        .map(|(v, key)| {
            let m = Mask::new(&key).unwrap_or_else(|e| {
                raise(
                    Code::ERRCODE_DATA_CORRUPTED,
                    format!("mask key \"{name}\" version {v} is unusable: {e}"),
                    None,
                )
            });
            (v, m)
        })
        .collect();
    Some(Ring { versions })
}

/// The key ring of `name`, from the backend cache or the table.
pub(super) fn ring(name: &str) -> Rc<Ring> {
    let fresh = tables::fresh();
    if let Some((r, _)) = RINGS.with(|r| r.borrow().get(name).filter(|(_, f)| *f || !fresh).cloned()) {
        return r;
    }
    let r = Rc::new(load_ring(name).unwrap_or_else(|| no_such_key(name)));
    RINGS.with(|c| c.borrow_mut().insert(name.to_string(), (r.clone(), fresh)));
    r
}

pub(super) fn ring_version<'r>(ring: &'r Ring, name: &str, version: i32) -> &'r Mask {
    ring.version(version).unwrap_or_else(|| {
        let kept: Vec<String> = ring.versions.iter().map(|(v, _)| v.to_string()).collect();
        raise_full(
            Code::ERRCODE_UNDEFINED_OBJECT,
            format!("mask key \"{name}\" has no version {version}"),
            Some(format!("Versions kept: {}.", kept.join(", "))),
            Some("A dropped version cannot be brought back; ids masked with it cannot be unmasked."),
        )
    })
}

pub(super) fn mask_error(e: MaskError) -> ! {
    match e {
        MaskError::OutOfDomain { .. } => raise(
            Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            e.to_string(),
            Some("Masks are a permutation of the non-negative bigints 0 .. 9223372036854775807."),
        ),
        MaskError::KeyLength(_) => raise(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            e.to_string(),
            Some("Use 32 random bytes, e.g. from uid_mask_key_create() or a key management system."),
        ),
        MaskError::DomainBits(_) => raise(Code::ERRCODE_INVALID_PARAMETER_VALUE, e.to_string(), None),
    }
}

// ------------------------------------------------------------------------------------------
// Masking with named keys
