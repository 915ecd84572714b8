//! Opaque public ids (SPEC §11, issue 15): `uid_mask`/`uid_unmask`, a keyed permutation of the
//! non-negative bigints (FF1-AES-256 over 63 binary digits, `pg_idgen_core::mask`), named and
//! versioned keys that ordinary roles use but cannot read, and short text codes (`uid_to_text`,
//! `uid_from_text`: Crockford base32 and base62, `pg_idgen_core::codes`).
//!
//! Keys live in `pg_idgen_mask_keys` (no privileges for PUBLIC). The mask functions read it once
//! per backend and key name, as the table's owner (user id switched with
//! `SECURITY_RESTRICTED_OPERATION`, `search_path` pinned to `pg_catalog, pg_temp`, every name in
//! the statement schema-qualified, the caller's text only ever a parameter) and keep the expanded
//! AES keys in backend memory. The catalog trigger's relcache invalidation (and a DROP of the
//! table) empties that cache in every backend, so a rotation is seen by the next transaction.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::CStr;
use std::rc::Rc;

use pg_idgen_core::codes::{self, CodeError, Format, FORMATS};
use pg_idgen_core::mask::{self as core_mask, Ff1Error, Mask, MaskError, KEY_LEN};
use pgrx::prelude::*;
use pgrx::{PgTrigger, PgTriggerError};

use crate::catalog::{extension_schema, prevent_during_recovery, RunAs};
use crate::errors::{raise, raise_full, Code};
use crate::tables;

/// Versions are written as one symbol in front of a versioned text code: the version modulo 32.
const TEXT_VERSION_MODULUS: i32 = 32;

/// The kept versions of one key name, oldest first; the last one is the current one.
struct Ring {
    versions: Vec<(i32, Mask)>,
}

impl Ring {
    fn current(&self) -> (i32, &Mask) {
        let (v, m) = self.versions.last().expect("a ring has at least one version");
        (*v, m)
    }
    fn version(&self, v: i32) -> Option<&Mask> {
        self.versions.iter().find(|(x, _)| *x == v).map(|(_, m)| m)
    }
}

thread_local! {
    /// Key rings read so far in this backend, by name.
    static RINGS: RefCell<HashMap<String, Rc<Ring>>> = RefCell::new(HashMap::new());
    /// The key table's oid and owner, once looked up.
    static TABLE: Cell<Option<(pg_sys::Oid, pg_sys::Oid)>> = const { Cell::new(None) };
    /// The last key given to `uid_mask_raw`/`uid_unmask_raw` and its expanded form.
    static RAW: RefCell<Option<(Vec<u8>, Rc<Mask>)>> = const { RefCell::new(None) };
}

/// Relcache callback: a change of the key table (its statement trigger sends an invalidation
/// for it), its DROP, or a full cache reset empties the key cache.
#[pg_guard]
unsafe extern "C-unwind" fn on_relcache_invalidation(_arg: pg_sys::Datum, relid: pg_sys::Oid) {
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
fn key_table() -> (pg_sys::Oid, pg_sys::Oid) {
    if let Some(t) = TABLE.with(|t| t.get()) {
        return t;
    }
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
fn as_key_owner<R>(f: impl FnOnce() -> R) -> R {
    let (_, owner) = key_table();
    let _owner = RunAs::role(owner, true);
    f()
}

fn no_such_key(name: &str) -> ! {
    raise(
        Code::ERRCODE_UNDEFINED_OBJECT,
        format!("mask key \"{name}\" does not exist"),
        Some("Create it with SELECT uid_mask_key_create('name') (privileged); SELECT * FROM uid_mask_keys lists the keys."),
    )
}

fn load_ring(name: &str) -> Option<Ring> {
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
fn ring(name: &str) -> Rc<Ring> {
    if let Some(r) = RINGS.with(|r| r.borrow().get(name).cloned()) {
        return r;
    }
    let r = Rc::new(load_ring(name).unwrap_or_else(|| no_such_key(name)));
    RINGS.with(|c| c.borrow_mut().insert(name.to_string(), r.clone()));
    r
}

fn ring_version<'r>(ring: &'r Ring, name: &str, version: i32) -> &'r Mask {
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

fn mask_error(e: MaskError) -> ! {
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

/// The masked id: a keyed permutation of 0 .. 2^63-1 (FF1-AES-256) with the key's current
/// version. STABLE: a key rotation changes the result.
#[pg_extern(stable, strict, parallel_restricted)]
fn uid_mask(id: i64, key_name: &str) -> i64 {
    let r = ring(key_name);
    r.current().1.mask_i64(id).unwrap_or_else(|e| mask_error(e))
}

/// The masked id with one given version of the key.
#[pg_extern(stable, strict, parallel_restricted, name = "uid_mask")]
fn uid_mask_version(id: i64, key_name: &str, version: i32) -> i64 {
    let r = ring(key_name);
    ring_version(&r, key_name, version).mask_i64(id).unwrap_or_else(|e| mask_error(e))
}

/// The id a masked id stands for, with the key's current version. Every bigint ≥ 0 unmasks to
/// some id: a masked id is not authenticated, the caller checks that the id exists.
#[pg_extern(stable, strict, parallel_restricted)]
fn uid_unmask(masked: i64, key_name: &str) -> i64 {
    let r = ring(key_name);
    r.current().1.unmask_i64(masked).unwrap_or_else(|e| mask_error(e))
}

/// The id a masked id stands for, with one given version of the key.
#[pg_extern(stable, strict, parallel_restricted, name = "uid_unmask")]
fn uid_unmask_version(masked: i64, key_name: &str, version: i32) -> i64 {
    let r = ring(key_name);
    ring_version(&r, key_name, version).unmask_i64(masked).unwrap_or_else(|e| mask_error(e))
}

/// The id a masked id stands for under every kept version of the key, newest first: after a
/// rotation, `WHERE id IN (SELECT id FROM uid_unmask_all($1, 'k'))` finds the row whichever
/// version masked it (another version's candidate is a random bigint, almost surely absent).
#[pg_extern(stable, strict, parallel_restricted)]
fn uid_unmask_all(
    masked: i64,
    key_name: &str,
) -> TableIterator<'static, (name!(version, i32), name!(id, i64))> {
    let r = ring(key_name);
    let rows: Vec<(i32, i64)> = r
        .versions
        .iter()
        .rev()
        .map(|(v, m)| (*v, m.unmask_i64(masked).unwrap_or_else(|e| mask_error(e))))
        .collect();
    TableIterator::new(rows)
}

// ------------------------------------------------------------------------------------------
// Masking with a key given by the caller (IMMUTABLE)

fn raw_mask(key: &[u8]) -> Rc<Mask> {
    if let Some(m) =
        RAW.with(|c| c.borrow().as_ref().filter(|(k, _)| k.as_slice() == key).map(|(_, m)| m.clone()))
    {
        return m;
    }
    let m = Rc::new(Mask::new(key).unwrap_or_else(|e| mask_error(e)));
    RAW.with(|c| *c.borrow_mut() = Some((key.to_vec(), m.clone())));
    m
}

/// `uid_mask` with the 32-byte key given as an argument: IMMUTABLE (usable in an index or a
/// generated column), for keys the application holds. A key written into DDL (a generated column,
/// an index expression, a view) is readable by every role through the catalogs.
#[pg_extern(immutable, strict, parallel_safe)]
fn uid_mask_raw(id: i64, key: &[u8]) -> i64 {
    raw_mask(key).mask_i64(id).unwrap_or_else(|e| mask_error(e))
}

/// The inverse of `uid_mask_raw`.
#[pg_extern(immutable, strict, parallel_safe)]
fn uid_unmask_raw(masked: i64, key: &[u8]) -> i64 {
    raw_mask(key).unmask_i64(masked).unwrap_or_else(|e| mask_error(e))
}

fn ff1_sql(key: &[u8], radix: i32, numerals: Vec<Option<i32>>, tweak: &[u8], decrypt: bool) -> Vec<i32> {
    let ns: Vec<u16> = numerals
        .iter()
        .enumerate()
        .map(|(i, n)| match n {
            None => raise(Code::ERRCODE_NULL_VALUE_NOT_ALLOWED, format!("numeral {} is NULL", i + 1), None),
            Some(n) if (0..radix.max(0)).contains(n) && *n <= u16::MAX as i32 => *n as u16,
            Some(n) => raise(
                Code::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("numeral {} is {n}; numerals of radix {radix} are 0 .. {}", i + 1, radix - 1),
                None,
            ),
        })
        .collect();
    let radix = u32::try_from(radix).unwrap_or(0);
    core_mask::ff1(key, tweak, radix, &ns, decrypt)
        .map(|v| v.into_iter().map(i32::from).collect())
        .unwrap_or_else(|e: Ff1Error| raise(Code::ERRCODE_INVALID_PARAMETER_VALUE, e.to_string(), None))
}

/// FF1 (NIST SP 800-38G) encryption of a numeral string (first numeral most significant) with
/// an AES-128/192/256 key (16/24/32 bytes): the construction behind `uid_mask`, exposed to check
/// it against published test vectors and other implementations. `uid_mask_raw(id, key)` is
/// `uid_ff1_encrypt(key, 2, <the 63 bits of id>)`.
#[pg_extern(immutable, strict, parallel_safe)]
fn uid_ff1_encrypt(
    key: &[u8],
    radix: i32,
    numerals: Vec<Option<i32>>,
    tweak: default!(&[u8], "'\\x'"),
) -> Vec<i32> {
    ff1_sql(key, radix, numerals, tweak, false)
}

/// The inverse of `uid_ff1_encrypt`.
#[pg_extern(immutable, strict, parallel_safe)]
fn uid_ff1_decrypt(
    key: &[u8],
    radix: i32,
    numerals: Vec<Option<i32>>,
    tweak: default!(&[u8], "'\\x'"),
) -> Vec<i32> {
    ff1_sql(key, radix, numerals, tweak, true)
}

// ------------------------------------------------------------------------------------------
// Text codes

fn format_arg(name: &str) -> Format {
    Format::parse(name).unwrap_or_else(|| {
        raise(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("unknown text code format \"{name}\""),
            Some(&format!("Use one of: {}.", FORMATS.join(", "))),
        )
    })
}

fn code_error(e: CodeError, input: &str) -> ! {
    match e {
        CodeError::Overflow { .. } | CodeError::Negative(_) => {
            raise(Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE, e.to_string(), None)
        }
        CodeError::InvalidChar { format: Format::Crockford { .. }, .. } => raise_full(
            Code::ERRCODE_INVALID_TEXT_REPRESENTATION,
            e.to_string(),
            Some(format!("input: \"{input}\"")),
            Some("Crockford base32 symbols are 0-9 and A-Z without I, L, O, U (read as 1, 1, 0; case does not matter; hyphens are ignored)."),
        ),
        CodeError::InvalidChar { .. } => raise_full(
            Code::ERRCODE_INVALID_TEXT_REPRESENTATION,
            e.to_string(),
            Some(format!("input: \"{input}\"")),
            Some("base62 symbols are 0-9, A-Z and a-z (case matters)."),
        ),
        _ => raise_full(
            Code::ERRCODE_INVALID_TEXT_REPRESENTATION,
            e.to_string(),
            Some(format!("input: \"{input}\"")),
            None,
        ),
    }
}

/// The short text code of a non-negative id: `crockford` (base32, default), `crockford_check`
/// (with a check symbol) or `base62`.
#[pg_extern(immutable, strict, parallel_safe)]
fn uid_to_text(id: i64, format: default!(&str, "'crockford'")) -> String {
    codes::encode(id, format_arg(format)).unwrap_or_else(|e| code_error(e, ""))
}

/// The id of a text code; strict: 22P02 with the position of the first bad character, 22003
/// above 2^63-1.
#[pg_extern(immutable, strict, parallel_safe)]
fn uid_from_text(code: &str, format: default!(&str, "'crockford'")) -> i64 {
    codes::decode(code, format_arg(format)).unwrap_or_else(|e| code_error(e, code))
}

/// A masked id as a text code that carries the key version: one symbol (the version modulo 32)
/// followed by the code of `uid_mask(id, key_name)`. `uid_unmask_text` needs no version.
#[pg_extern(stable, strict, parallel_restricted)]
fn uid_mask_text(id: i64, key_name: &str, format: default!(&str, "'crockford'")) -> String {
    let f = format_arg(format);
    let r = ring(key_name);
    let (v, m) = r.current();
    let masked = m.mask_i64(id).unwrap_or_else(|e| mask_error(e));
    let sym = codes::encode(i64::from(v % TEXT_VERSION_MODULUS), plain(f)).expect("a small number");
    sym + &codes::encode(masked, f).expect("non-negative")
}

/// The format without its check symbol (the version symbol is a bare symbol).
fn plain(f: Format) -> Format {
    match f {
        Format::Crockford { .. } => Format::Crockford { check: false },
        other => other,
    }
}

/// The inverse of `uid_mask_text`: reads the version symbol, then unmasks with that version.
#[pg_extern(stable, strict, parallel_restricted)]
fn uid_unmask_text(code: &str, key_name: &str, format: default!(&str, "'crockford'")) -> i64 {
    let f = format_arg(format);
    let trimmed = if matches!(f, Format::Crockford { .. }) { code.trim_start_matches('-') } else { code };
    let mut chars = trimmed.chars();
    let first = chars.next().unwrap_or_else(|| code_error(CodeError::Empty { format: f }, code));
    let skipped = code.chars().count() - trimmed.chars().count();
    let sym = codes::decode(&first.to_string(), plain(f)).unwrap_or_else(|e| match e {
        CodeError::InvalidChar { format, ch, .. } => {
            code_error(CodeError::InvalidChar { format, position: skipped + 1, ch }, code)
        }
        e => code_error(e, code),
    }) as i32;
    let rest: String = chars.collect();
    let masked = codes::decode(&rest, f).unwrap_or_else(|e| {
        let e = match e {
            CodeError::InvalidChar { format, position, ch } => {
                CodeError::InvalidChar { format, position: position + skipped + 1, ch }
            }
            CodeError::CheckMismatch { position, found, expected } => {
                CodeError::CheckMismatch { position: position + skipped + 1, found, expected }
            }
            e => e,
        };
        code_error(e, code)
    });
    let r = ring(key_name);
    let Some((v, m)) = r.versions.iter().rev().find(|(v, _)| v % TEXT_VERSION_MODULUS == sym) else {
        raise_full(
            Code::ERRCODE_UNDEFINED_OBJECT,
            format!("mask key \"{key_name}\" has no kept version for the version symbol of \"{code}\""),
            Some(format!(
                "Versions kept: {}.",
                r.versions.iter().map(|(v, _)| v.to_string()).collect::<Vec<_>>().join(", ")
            )),
            Some("The code was made with a version that was dropped, with another key, or is mistyped."),
        )
    };
    let _ = v;
    m.unmask_i64(masked).unwrap_or_else(|e| mask_error(e))
}

// ------------------------------------------------------------------------------------------
// Key management (privileged: EXECUTE revoked from PUBLIC)

fn check_key_name(name: &str) {
    if !(1..=63).contains(&name.len())
        || !name.starts_with(|c: char| c.is_ascii_lowercase())
        || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        raise(
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("invalid mask key name \"{name}\""),
            Some("A key name is 1 to 63 characters: a lower-case letter, then lower-case letters, digits or underscores."),
        );
    }
}

fn current_user_name() -> String {
    unsafe {
        let p = pg_sys::GetUserNameFromId(pg_sys::GetUserId(), false);
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// Kept (not dropped) versions of a key, with the table locked against other key changes.
fn locked_versions(name: &str) -> (Vec<i32>, i32) {
    let s = extension_schema();
    Spi::connect_mut(|client| {
        client
            .update(
                format!("LOCK TABLE {s}.pg_idgen_mask_keys IN SHARE ROW EXCLUSIVE MODE").as_str(),
                None,
                &[],
            )
            .unwrap_or_else(|e| {
                raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not lock the key table: {e}"), None)
            });
        let t = client
            .select(
                format!(
                    "SELECT version, key IS NOT NULL FROM {s}.pg_idgen_mask_keys \
                     WHERE name OPERATOR(pg_catalog.=) $1 ORDER BY version"
                )
                .as_str(),
                None,
                &[name.into()],
            )
            .unwrap_or_else(|e| {
                raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not read the key table: {e}"), None)
            });
        let mut kept = Vec::new();
        let mut max = 0;
        for r in t {
            let v: i32 = r.get(1).ok().flatten().unwrap_or(0);
            max = max.max(v);
            if r.get::<bool>(2).ok().flatten() == Some(true) {
                kept.push(v);
            }
        }
        (kept, max)
    })
}

/// Inserts a new random key version; `by` is the calling role (the insert runs as the owner).
fn insert_version(name: &str, version: i32, by: &str) {
    let mut key = [0u8; KEY_LEN];
    if !unsafe { pg_sys::pg_strong_random(key.as_mut_ptr().cast(), key.len()) } {
        raise(
            Code::ERRCODE_INTERNAL_ERROR,
            "could not generate a random key (pg_strong_random failed)",
            None,
        );
    }
    let insert = format!(
        "INSERT INTO {}.pg_idgen_mask_keys (name, version, key, created_by) VALUES ($1, $2, $3, $4::pg_catalog.name)",
        extension_schema()
    );
    Spi::connect_mut(|client| {
        client
            .update(insert.as_str(), None, &[name.into(), version.into(), key.as_slice().into(), by.into()])
            .map(|_| ())
    })
    .unwrap_or_else(|e| raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not store the key: {e}"), None));
    key.fill(0);
}

/// Creates a key: 32 bytes from PostgreSQL's strong random source (`pg_strong_random`, the
/// OpenSSL CSPRNG or /dev/urandom), version 1 (or the next number after dropped versions, which
/// are never reused). Returns the version.
#[pg_extern(volatile, strict, parallel_unsafe)]
fn uid_mask_key_create(name: &str) -> i32 {
    prevent_during_recovery(c"uid_mask_key_create()");
    check_key_name(name);
    let by = current_user_name();
    as_key_owner(|| {
        let (kept, max) = locked_versions(name);
        if !kept.is_empty() {
            raise(
                Code::ERRCODE_DUPLICATE_OBJECT,
                format!("mask key \"{name}\" already exists"),
                Some("Rotate it with uid_mask_key_rotate() to make a new version."),
            );
        }
        insert_version(name, max + 1, &by);
        max + 1
    })
}

/// Makes a new version of a key, which `uid_mask` uses from now on; older versions stay
/// usable for unmasking until dropped. Returns the new version.
#[pg_extern(volatile, strict, parallel_unsafe)]
fn uid_mask_key_rotate(name: &str) -> i32 {
    prevent_during_recovery(c"uid_mask_key_rotate()");
    let by = current_user_name();
    as_key_owner(|| {
        let (kept, max) = locked_versions(name);
        if kept.is_empty() {
            no_such_key(name);
        }
        let new = max + 1;
        if kept.contains(&(new - TEXT_VERSION_MODULUS)) {
            raise(
                Code::ERRCODE_OBJECT_IN_USE,
                format!(
                    "cannot make version {new} of mask key \"{name}\" while version {} is kept",
                    new - TEXT_VERSION_MODULUS
                ),
                Some("Text codes from uid_mask_text() carry the version modulo 32; drop the old version first."),
            );
        }
        insert_version(name, new, &by);
        new
    })
}

/// Marks a key version in use (the default) or not; a version in use cannot be dropped.
#[pg_extern(volatile, strict, parallel_unsafe)]
fn uid_mask_key_set_in_use(name: &str, version: i32, in_use: bool) {
    prevent_during_recovery(c"uid_mask_key_set_in_use()");
    let update = format!(
        "UPDATE {}.pg_idgen_mask_keys SET in_use = $3 \
         WHERE name OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2 AND key IS NOT NULL",
        extension_schema()
    );
    let n = as_key_owner(|| {
        Spi::connect_mut(|c| {
            c.update(update.as_str(), None, &[name.into(), version.into(), in_use.into()]).map(|t| t.len())
        })
    })
    .unwrap_or_else(|e| raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not update the key: {e}"), None));
    if n == 0 {
        raise(
            Code::ERRCODE_UNDEFINED_OBJECT,
            format!("mask key \"{name}\" has no kept version {version}"),
            None,
        );
    }
}

/// Drops a key version: its key bytes are erased (the row stays, so the version number is never
/// reused). Refused while the version is marked in use.
#[pg_extern(volatile, strict, parallel_unsafe)]
fn uid_mask_key_drop(name: &str, version: i32) {
    prevent_during_recovery(c"uid_mask_key_drop()");
    let s = extension_schema();
    as_key_owner(|| {
        let (kept, _) = locked_versions(name);
        if !kept.contains(&version) {
            raise(
                Code::ERRCODE_UNDEFINED_OBJECT,
                format!("mask key \"{name}\" has no kept version {version}"),
                None,
            );
        }
        // the guard trigger refuses it while the version is in use
        Spi::connect_mut(|c| {
            c.update(
                format!(
                    "UPDATE {s}.pg_idgen_mask_keys SET key = NULL, dropped_at = pg_catalog.now() \
                     WHERE name OPERATOR(pg_catalog.=) $1 AND version OPERATOR(pg_catalog.=) $2"
                )
                .as_str(),
                None,
                &[name.into(), version.into()],
            )
            .map(|_| ())
        })
        .unwrap_or_else(|e| {
            raise(Code::ERRCODE_INTERNAL_ERROR, format!("could not drop the key: {e}"), None)
        });
    })
}

fn in_use_error(name: &str, version: i32, what: &str) -> ! {
    raise(
        Code::ERRCODE_OBJECT_IN_USE,
        format!("cannot {what} mask key \"{name}\" version {version}: it is marked in use"),
        Some(&format!(
            "Ids masked with it could never be unmasked again. If that is intended: SELECT uid_mask_key_set_in_use('{name}', {version}, false);"
        )),
    )
}

/// Row and TRUNCATE guard on the key table: key bytes are write-once; a version in use cannot
/// be deleted, erased or truncated away (by the functions or by hand).
#[pg_trigger]
fn pg_idgen_mask_keys_guard<'a>(
    trigger: &'a PgTrigger<'a>,
) -> Result<Option<PgHeapTuple<'a, AllocatedByPostgres>>, PgTriggerError> {
    use pgrx::PgTriggerOperation as Op;
    match trigger.op()? {
        Op::Delete => {
            let old = trigger.old().expect("a row DELETE trigger has OLD");
            let name: String = old.get_by_name("name").ok().flatten().unwrap_or_default();
            let version: i32 = old.get_by_name("version").ok().flatten().unwrap_or(0);
            let kept = old.get_by_name::<&[u8]>("key").ok().flatten().is_some();
            if kept && old.get_by_name::<bool>("in_use").ok().flatten() != Some(false) {
                in_use_error(&name, version, "delete");
            }
            Ok(Some(old))
        }
        Op::Update => {
            let old = trigger.old().expect("a row UPDATE trigger has OLD");
            let new = trigger.new().expect("a row UPDATE trigger has NEW");
            let name: String = old.get_by_name("name").ok().flatten().unwrap_or_default();
            let version: i32 = old.get_by_name("version").ok().flatten().unwrap_or(0);
            let new_name: Option<String> = new.get_by_name("name").ok().flatten();
            let new_version: Option<i32> = new.get_by_name("version").ok().flatten();
            let old_key: Option<&[u8]> = old.get_by_name("key").ok().flatten();
            let new_key: Option<&[u8]> = new.get_by_name("key").ok().flatten();
            if new_name.as_deref() != Some(name.as_str()) || new_version != Some(version) {
                raise(
                    Code::ERRCODE_INVALID_PARAMETER_VALUE,
                    format!("the name and version of mask key \"{name}\" version {version} cannot change"),
                    None,
                );
            }
            match (&old_key, &new_key) {
                (Some(a), Some(b)) if a != b => raise(
                    Code::ERRCODE_INVALID_PARAMETER_VALUE,
                    format!("the key bytes of mask key \"{name}\" version {version} cannot change"),
                    Some("Make a new version with uid_mask_key_rotate()."),
                ),
                (None, Some(_)) => raise(
                    Code::ERRCODE_INVALID_PARAMETER_VALUE,
                    format!("mask key \"{name}\" version {version} was dropped and cannot be brought back"),
                    None,
                ),
                (Some(_), None) if old.get_by_name::<bool>("in_use").ok().flatten() != Some(false) => {
                    in_use_error(&name, version, "drop")
                }
                _ => {}
            }
            Ok(Some(new))
        }
        Op::Truncate => {
            let live = Spi::get_one::<bool>(&format!(
                "SELECT EXISTS (SELECT FROM {}.pg_idgen_mask_keys WHERE in_use AND key IS NOT NULL)",
                extension_schema()
            ))
            .ok()
            .flatten()
            .unwrap_or(true);
            if live {
                raise(
                    Code::ERRCODE_OBJECT_IN_USE,
                    "cannot truncate pg_idgen_mask_keys: some mask keys are marked in use",
                    Some("Mark them not in use with uid_mask_key_set_in_use() first."),
                );
            }
            Ok(None)
        }
        _ => Ok(trigger.new()),
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pg_schema]
mod tests {
    use pgrx::prelude::*;

    /// Runs `sql` and returns its SQLSTATE and message, or "ok".
    fn sqlstate_of(sql: &str) -> String {
        let exists = Spi::get_one::<bool>("SELECT to_regprocedure('pg_temp.sqlstate_of(text)') IS NOT NULL")
            .unwrap()
            .unwrap_or(false);
        if !exists {
            Spi::run(
                "CREATE FUNCTION pg_temp.sqlstate_of(q text) RETURNS text LANGUAGE plpgsql AS $$ \
                 BEGIN EXECUTE q; RETURN 'ok'; EXCEPTION WHEN others THEN RETURN SQLSTATE || ': ' || SQLERRM; END $$",
            )
            .unwrap();
            Spi::run("GRANT EXECUTE ON FUNCTION pg_temp.sqlstate_of(text) TO PUBLIC").unwrap();
        }
        Spi::get_one_with_args::<String>("SELECT pg_temp.sqlstate_of($1)", &[sql.into()]).unwrap().unwrap()
    }

    #[pg_test]
    fn mask_round_trips_and_rotates() {
        assert_eq!(Spi::get_one::<i32>("SELECT uid_mask_key_create('t_orders')").unwrap(), Some(1));
        let ok = Spi::get_one::<bool>(
            "SELECT bool_and(uid_unmask(uid_mask(g, 't_orders'), 't_orders') = g AND uid_mask(g, 't_orders') >= 0) \
             FROM (SELECT g FROM generate_series(0, 20000) g UNION ALL SELECT 9223372036854775807 - g FROM generate_series(0, 1000) g) s",
        )
        .unwrap()
        .unwrap();
        assert!(ok);
        let m1 = Spi::get_one::<i64>("SELECT uid_mask(42, 't_orders')").unwrap().unwrap();
        assert_eq!(Spi::get_one::<i32>("SELECT uid_mask_key_rotate('t_orders')").unwrap(), Some(2));
        let m2 = Spi::get_one::<i64>("SELECT uid_mask(42, 't_orders')").unwrap().unwrap();
        assert_ne!(m1, m2, "the new version masks differently");
        assert_eq!(
            Spi::get_one_with_args::<i64>("SELECT uid_unmask($1, 't_orders', 1)", &[m1.into()]).unwrap(),
            Some(42)
        );
        assert_eq!(
            Spi::get_one_with_args::<i64>("SELECT uid_unmask($1, 't_orders')", &[m2.into()]).unwrap(),
            Some(42)
        );
        let n = Spi::get_one_with_args::<i64>(
            "SELECT count(*) FROM uid_unmask_all($1, 't_orders') WHERE id = 42",
            &[m1.into()],
        )
        .unwrap();
        assert_eq!(n, Some(1));
        // versioned text codes need no version argument
        let ok = Spi::get_one::<bool>(
            "SELECT bool_and(uid_unmask_text(uid_mask_text(g, 't_orders'), 't_orders') = g \
                         AND uid_unmask_text(uid_mask_text(g, 't_orders', 'base62'), 't_orders', 'base62') = g) \
             FROM generate_series(0, 1000) g",
        )
        .unwrap()
        .unwrap();
        assert!(ok);
    }

    #[pg_test]
    fn ff1_vectors_pass_through_sql() {
        // NIST SP 800-38G FF1 sample #1 (AES-128, radix 10, empty tweak) and #2 (tweak 39383736353433323130)
        let s1 = Spi::get_one::<Vec<i32>>(
            "SELECT uid_ff1_encrypt('\\x2B7E151628AED2A6ABF7158809CF4F3C', 10, '{0,1,2,3,4,5,6,7,8,9}')",
        )
        .unwrap()
        .unwrap();
        assert_eq!(s1, vec![2, 4, 3, 3, 4, 7, 7, 4, 8, 4]);
        let s2 = Spi::get_one::<Vec<i32>>(
            "SELECT uid_ff1_encrypt('\\x2B7E151628AED2A6ABF7158809CF4F3C', 10, '{0,1,2,3,4,5,6,7,8,9}', '\\x39383736353433323130')",
        )
        .unwrap()
        .unwrap();
        assert_eq!(s2, vec![6, 1, 2, 4, 2, 0, 0, 7, 7, 3]);
        // the fpe crate's radix-2 case: AES-256 zero key, 32 zero bits
        let b = Spi::get_one::<Vec<i32>>(
            "SELECT uid_ff1_encrypt(decode(repeat('00', 32), 'hex'), 2, array_fill(0, ARRAY[32]))",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            b,
            vec![
                1, 1, 0, 1, 1, 1, 1, 0, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 1, 0, 1, 1, 0, 0,
                0
            ]
        );
        // uid_mask_raw is FF1 over the 63 bits of the id
        let same = Spi::get_one::<bool>(
            "WITH k(key) AS (SELECT decode(repeat('2b', 32), 'hex')), \
                  x(id) AS (VALUES (0::bigint), (1), (123456789), (9223372036854775807)) \
             SELECT bool_and(uid_mask_raw(id, key) = \
                    (SELECT string_agg(d::text, '' ORDER BY o) FROM unnest(uid_ff1_encrypt(key, 2, \
                        (SELECT array_agg(substr(id::bit(64)::text, i, 1)::int ORDER BY i) FROM generate_series(2, 64) i))) \
                        WITH ORDINALITY u(d, o))::bit(63)::bigint \
                  AND uid_unmask_raw(uid_mask_raw(id, key), key) = id) FROM k, x",
        )
        .unwrap()
        .unwrap();
        assert!(same);
    }

    #[pg_test]
    fn text_codes() {
        assert_eq!(Spi::get_one::<String>("SELECT uid_to_text(1234)").unwrap().unwrap(), "16J");
        assert_eq!(
            Spi::get_one::<String>("SELECT uid_to_text(1234, 'crockford_check')").unwrap().unwrap(),
            "16JD"
        );
        assert_eq!(Spi::get_one::<i64>("SELECT uid_from_text('1-6j')").unwrap(), Some(1234));
        assert_eq!(
            Spi::get_one::<i64>("SELECT uid_from_text('AzL8n0Y58m7', 'base62')").unwrap(),
            Some(i64::MAX)
        );
        assert!(sqlstate_of("SELECT uid_from_text('12U4')")
            .starts_with("22P02: invalid character 'U' at position 3"));
        assert!(sqlstate_of("SELECT uid_from_text('16JE', 'crockford_check')")
            .starts_with("22P02: check symbol 'E' at position 4"));
        assert!(sqlstate_of("SELECT uid_from_text('80000000000000')").starts_with("22003"));
        assert!(sqlstate_of("SELECT uid_from_text('')").starts_with("22P02"));
        assert!(sqlstate_of("SELECT uid_to_text(-1)").starts_with("22003"));
        assert!(sqlstate_of("SELECT uid_to_text(1, 'base64')").starts_with("22023"));
    }

    #[pg_test]
    fn nulls_never_raise_internal_errors() {
        Spi::run("SELECT uid_mask_key_create('t_nulls')").unwrap();
        for q in [
            "SELECT uid_mask(NULL, 't_nulls')",
            "SELECT uid_mask(1, NULL)",
            "SELECT uid_mask(1, 't_nulls', NULL)",
            "SELECT uid_unmask(NULL, 't_nulls')",
            "SELECT uid_unmask(1, NULL::text)",
            "SELECT uid_unmask(1, 't_nulls', NULL)",
            "SELECT uid_mask_raw(NULL, NULL)",
            "SELECT uid_unmask_raw(1, NULL)",
            "SELECT uid_to_text(NULL)",
            "SELECT uid_to_text(1, NULL)",
            "SELECT uid_from_text(NULL)",
            "SELECT uid_from_text('1', NULL)",
            "SELECT uid_mask_text(NULL, 't_nulls')",
            "SELECT uid_unmask_text('1', NULL)",
            "SELECT uid_ff1_encrypt(NULL, 10, '{1}')",
            "SELECT uid_ff1_decrypt('\\x00', NULL, '{1}')",
            "SELECT uid_mask_key_create(NULL)",
            "SELECT uid_mask_key_rotate(NULL)",
            "SELECT uid_mask_key_drop('t_nulls', NULL)",
            "SELECT uid_mask_key_set_in_use('t_nulls', 1, NULL)",
        ] {
            let r = Spi::get_one::<bool>(&format!("SELECT ({q}) IS NULL")).unwrap();
            assert_eq!(r, Some(true), "{q}");
        }
        assert!(sqlstate_of(
            "SELECT uid_ff1_encrypt('\\x2B7E151628AED2A6ABF7158809CF4F3C', 10, '{0,1,2,3,NULL,5}')"
        )
        .starts_with("22004"));
    }

    #[pg_test]
    fn wrong_key_version_and_values_are_clear_errors() {
        Spi::run("SELECT uid_mask_key_create('t_err')").unwrap();
        assert!(sqlstate_of("SELECT uid_mask(1, 'no_such_key')")
            .starts_with("42704: mask key \"no_such_key\" does not exist"));
        assert!(sqlstate_of("SELECT uid_unmask(1, 't_err', 9)")
            .starts_with("42704: mask key \"t_err\" has no version 9"));
        assert!(sqlstate_of("SELECT uid_mask(-1, 't_err')").starts_with("22003"));
        assert!(sqlstate_of("SELECT uid_unmask(-5, 't_err')").starts_with("22003"));
        assert!(
            sqlstate_of("SELECT uid_mask_raw(1, '\\x0011')").starts_with("22023: a masking key is 32 bytes")
        );
        assert!(sqlstate_of("SELECT uid_mask_key_create('t_err')").starts_with("42710"));
        assert!(sqlstate_of("SELECT uid_mask_key_create('Bad Name')").starts_with("22023"));
        assert!(sqlstate_of("SELECT uid_mask_key_rotate('nope')").starts_with("42704"));
        // in use: no drop, no delete, no truncate, no change of the key bytes
        assert!(sqlstate_of("SELECT uid_mask_key_drop('t_err', 1)").starts_with("55006"));
        assert!(sqlstate_of("DELETE FROM pg_idgen_mask_keys WHERE name = 't_err'").starts_with("55006"));
        assert!(sqlstate_of("TRUNCATE pg_idgen_mask_keys").starts_with("55006"));
        assert!(sqlstate_of(
            "UPDATE pg_idgen_mask_keys SET key = decode(repeat('00', 32), 'hex') WHERE name = 't_err'"
        )
        .starts_with("22023"));
        // once not in use it can be dropped; its number is not reused
        Spi::run("SELECT uid_mask_key_set_in_use('t_err', 1, false)").unwrap();
        Spi::run("SELECT uid_mask_key_drop('t_err', 1)").unwrap();
        assert!(sqlstate_of("SELECT uid_mask(1, 't_err')").starts_with("42704"));
        assert_eq!(Spi::get_one::<i32>("SELECT uid_mask_key_create('t_err')").unwrap(), Some(2));
        assert!(sqlstate_of("UPDATE pg_idgen_mask_keys SET key = decode(repeat('00', 32), 'hex') WHERE name = 't_err' AND version = 1")
            .starts_with("22023"));
    }

    #[pg_test]
    fn ordinary_roles_use_keys_but_cannot_read_them() {
        Spi::run("SELECT uid_mask_key_create('t_priv')").unwrap();
        Spi::run("ANALYZE pg_idgen_mask_keys").unwrap();
        let as_su = Spi::get_one::<i64>("SELECT uid_mask(7, 't_priv')").unwrap().unwrap();
        Spi::run("CREATE ROLE t_mask_user NOLOGIN").unwrap();
        // empty this backend's key cache (the statement trigger's invalidation), so that the
        // ordinary role reads the key table itself, through the owner switch
        Spi::run("SELECT uid_mask_key_set_in_use('t_priv', 1, true)").unwrap();
        Spi::run("SET ROLE t_mask_user").unwrap();
        assert_eq!(Spi::get_one::<i64>("SELECT uid_mask(7, 't_priv')").unwrap(), Some(as_su));
        assert_eq!(
            Spi::get_one_with_args::<i64>("SELECT uid_unmask($1, 't_priv')", &[as_su.into()]).unwrap(),
            Some(7)
        );
        assert!(sqlstate_of("SELECT key FROM pg_idgen_mask_keys").starts_with("42501"));
        assert!(sqlstate_of("SELECT count(*) FROM pg_idgen_mask_keys").starts_with("42501"));
        assert!(sqlstate_of("COPY pg_idgen_mask_keys TO '/dev/null'").starts_with("42501"));
        assert!(sqlstate_of("SELECT uid_mask_key_create('t_mine')").starts_with("42501"));
        assert!(sqlstate_of("SELECT uid_mask_key_rotate('t_priv')").starts_with("42501"));
        assert!(sqlstate_of("SELECT uid_mask_key_set_in_use('t_priv', 1, false)").starts_with("42501"));
        assert!(sqlstate_of("SELECT uid_mask_key_drop('t_priv', 1)").starts_with("42501"));
        let stats = Spi::get_one::<i64>(
            "SELECT count(*) FROM pg_catalog.pg_stats WHERE tablename = 'pg_idgen_mask_keys'",
        )
        .unwrap();
        assert_eq!(stats, Some(0), "no column statistics (most common values) of the key table");
        assert!(sqlstate_of("SELECT count(*) FROM pg_catalog.pg_statistic").starts_with("42501"));
        // the view shows keys without their bytes
        let cols = Spi::get_one::<String>(
            "SELECT string_agg(attname, ',' ORDER BY attnum) FROM pg_catalog.pg_attribute \
             WHERE attrelid = 'uid_mask_keys'::regclass AND attnum > 0",
        )
        .unwrap()
        .unwrap();
        assert!(!cols.split(',').any(|c| c == "key"), "{cols}");
        assert_eq!(
            Spi::get_one::<bool>("SELECT current FROM uid_mask_keys WHERE name = 't_priv'").unwrap(),
            Some(true)
        );
        // no function returns a key
        let leaky = Spi::get_one::<i64>(
            "SELECT count(*) FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_depend d ON d.objid = p.oid \
             JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'pg_idgen' \
             WHERE p.prorettype = 'bytea'::regtype OR 'bytea'::regtype = ANY (p.proallargtypes)",
        )
        .unwrap();
        assert_eq!(leaky, Some(0));
        // key administration can be delegated with EXECUTE alone; the row records who did it
        Spi::run("RESET ROLE").unwrap();
        Spi::run("GRANT EXECUTE ON FUNCTION uid_mask_key_create(text) TO t_mask_user").unwrap();
        Spi::run("SET ROLE t_mask_user").unwrap();
        assert_eq!(Spi::get_one::<i32>("SELECT uid_mask_key_create('t_delegated')").unwrap(), Some(1));
        assert_eq!(
            Spi::get_one::<String>("SELECT created_by::text FROM uid_mask_keys WHERE name = 't_delegated'")
                .unwrap(),
            Some("t_mask_user".to_string())
        );
        assert!(sqlstate_of("SELECT key FROM pg_idgen_mask_keys").starts_with("42501"));
        // a shadowing schema on the caller's search_path gains nothing
        Spi::run("RESET ROLE").unwrap();
        Spi::run("CREATE SCHEMA t_evil; GRANT ALL ON SCHEMA t_evil TO t_mask_user").unwrap();
        Spi::run("SET ROLE t_mask_user").unwrap();
        Spi::run("CREATE FUNCTION t_evil.length(bytea) RETURNS int LANGUAGE sql AS 'SELECT 32'").unwrap();
        Spi::run("CREATE TABLE t_evil.pg_idgen_mask_keys (name text, version int, key bytea)").unwrap();
        Spi::run("RESET ROLE").unwrap();
        Spi::run("SELECT uid_mask_key_set_in_use('t_priv', 1, true)").unwrap();
        Spi::run("SET ROLE t_mask_user").unwrap();
        Spi::run("SET search_path = t_evil, public").unwrap();
        assert_eq!(Spi::get_one::<i64>("SELECT public.uid_mask(7, 't_priv')").unwrap(), Some(as_su));
        Spi::run("RESET search_path").unwrap();
        Spi::run("RESET ROLE").unwrap();
    }

    #[pg_test]
    fn a_rotation_in_another_transaction_is_seen() {
        Spi::run("SELECT uid_mask_key_create('t_rot')").unwrap();
        let a = Spi::get_one::<i64>("SELECT uid_mask(5, 't_rot')").unwrap().unwrap();
        // direct DML (as pg_restore would do) invalidates the cache through the statement trigger
        Spi::run("SELECT uid_mask_key_rotate('t_rot')").unwrap();
        let b = Spi::get_one::<i64>("SELECT uid_mask(5, 't_rot')").unwrap().unwrap();
        assert_ne!(a, b);
        assert_eq!(
            Spi::get_one::<i32>("SELECT version FROM uid_mask_keys WHERE name = 't_rot' AND current")
                .unwrap(),
            Some(2)
        );
    }
}
